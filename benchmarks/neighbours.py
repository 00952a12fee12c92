"""Cost of neighbours and of the neighbourhood attack on this machine; optional AUC table.

Prints, for the neighbour generator (default: the embedded independent proposer,
``masked-lm:embedded``), on ``--texts`` paragraphs of ``--words`` words, cache off:
0. the machine: CPU, torch threads, and the fp32 matrix-product roof measured in the same run;
1. neighbours/s, with ``n`` neighbours (default 100, m = 1) per text; ``--exact`` also times the
   paper's one-position-per-pass procedure (``spacing 0``) and reports how many of the neighbours
   the packed passes share with it; ``--compare offline`` times the SmolLM2 (offline) generator;
2. time(neighbourhood attack) / time(LOSS alone) on the same texts, split into generation and
   scoring of ``--score-n`` neighbours (default 25): scoring n neighbours plus the text costs
   about n + 1 LOSS passes when each neighbour runs whole; neighbours that share their text's
   first tokens run from where they differ (``mia_core.stats.families._run_families``), and the script
   also times them run whole to show the saving;
3. the Inspect page's path for one paragraph and 25 neighbours: cold (proposer loaded, nothing
   cached) and warm (proposer loaded), up to the table the page draws;
4. with ``--demo``: LOSS, ref, neighbourhood and SMIA AUCs on the bundled demo target.

Usage: python benchmarks/neighbours.py [--texts 40] [--words 100] [--n 100] [--exact] [--compare offline] [--demo]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def roof_gflops() -> float:
    """fp32 matrix products of the size the proposer's layers make, in GFLOP/s."""
    import torch

    a, b = torch.randn(1024, 384), torch.randn(384, 1536)
    for _ in range(3):
        a @ b
    t, k = time.perf_counter(), 0
    while time.perf_counter() - t < 1.0:
        a @ b
        k += 1
    return 2 * 1024 * 384 * 1536 * k / (time.perf_counter() - t) / 1e9


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", type=int, default=40)
    ap.add_argument("--words", type=int, default=100)
    ap.add_argument("--n", type=int, default=100, help="neighbours per text for the throughput figure")
    ap.add_argument("--score-n", type=int, default=25, help="neighbours per text for the cost relative to LOSS")
    ap.add_argument("--generator", default=None, help="generator spec (default: the product's default)")
    ap.add_argument("--exact", action="store_true", help="also time one position per pass (the paper's procedure)")
    ap.add_argument("--compare", default=None, help="also time this generator (e.g. offline)")
    ap.add_argument("--demo", action="store_true", help="also the AUC table on the demo target")
    ap.add_argument("--demo-n", type=int, default=25, help="neighbours per text for the demo table")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from mia_core.attacks.base import scored_tokens
    from mia_core.models import load_causal_lm
    from mia_core.neighbours import DEFAULT_GENERATOR, NeighbourSettings, forget_generators, make_generator
    from mia_core.neighbours.masked_lm import MaskedLMGenerator
    from mia_core.pipeline import RunConfig, run_attacks
    from mia_core.stats import compute_stats

    spec = args.generator or DEFAULT_GENERATOR
    rows = [json.loads(x)["text"] for x in (ROOT / "tests/data/paragraphs.jsonl").read_text().splitlines()]
    texts = [" ".join(r.split()[: args.words]) for r in rows[:: max(1, len(rows) // args.texts)]][: args.texts]
    print(f"{cpu_name()}, torch {torch.__version__}, {torch.get_num_threads()} threads; fp32 matmul roof "
          f"{roof_gflops():.0f} GFLOP/s")
    print(f"{len(texts)} texts of <= {args.words} words; generator {spec}")
    lm = load_causal_lm()
    with tempfile.TemporaryDirectory() as tmp:
        models = Path(os.environ.get("MIA_CACHE_DIR", "")) / "models"
        os.environ["MIA_CACHE_DIR"] = tmp
        if models.is_dir():  # keep the converted embedded model
            os.symlink(models, Path(tmp) / "models")

        def throughput(gen, label):
            t = time.perf_counter()
            nbs = gen.generate(texts, use_cache=False)
            el = time.perf_counter() - t
            k = sum(len(x) for x in nbs)
            print(f"{label}: {k} neighbours in {el:.1f}s = {k / el:.1f} neighbours/s ({k / len(texts):.1f} per text)")
            return nbs

        t = time.perf_counter()
        gen = make_generator(NeighbourSettings(generator=spec, n=args.n, m=1))
        print(f"generator loaded in {time.perf_counter() - t:.1f}s")
        nbs = throughput(gen, f"n = {args.n}")
        if args.exact and isinstance(gen, MaskedLMGenerator):
            exact = MaskedLMGenerator(gen.settings, gen.model_spec, spacing=0)
            ref = throughput(exact, "  one position per pass (paper)")
            same = [len({n.text for n in a} & {n.text for n in b}) / max(1, len(b)) for a, b in zip(nbs, ref)]
            print(f"  packed passes share {sum(same) / len(same):.1%} of the paper procedure's neighbours")
        if args.compare:
            throughput(make_generator(NeighbourSettings(generator=args.compare, n=args.n, m=1)), f"{args.compare}")

        few = [ns[: args.score_n] for ns in nbs]
        t = time.perf_counter()
        make_generator(NeighbourSettings(generator=spec, n=args.score_n, m=1)).generate(texts, use_cache=False)
        t_gen = time.perf_counter() - t
        t = time.perf_counter()
        compute_stats(lm, texts, use_cache=False)
        t_loss = time.perf_counter() - t
        flat = [n.text for ns in few for n in ns]
        t = time.perf_counter()
        compute_stats(lm, flat, use_cache=False)
        t_score = time.perf_counter() - t
        from mia_core import stats as S
        from mia_core.stats import compute as SC
        from mia_core.stats import families as SF
        from mia_core.stats import windows as SW

        fams = SF._families([SW._Job(i, x, S.tokenize(lm, x), S.prefix_token_id(lm.tokenizer), 10**9, 0, False)
                            for i, x in enumerate(flat)])
        run = sum(len(b.seq) + sum(len(j.seq) - p for j, p in m) for b, m in fams)
        in_fam = sum(1 + len(m) for _, m in fams)
        total = sum(len(S.tokenize(lm, x)) + 1 for x in flat)
        run += total - sum(len(b.seq) + sum(len(j.seq) for j, _ in m) for b, m in fams)
        print(f"n = {args.score_n}: LOSS alone {t_loss:.1f}s; generating {t_gen:.1f}s; scoring the neighbours "
              f"{t_score:.1f}s = {t_score / t_loss:.1f}x LOSS; the whole neighbourhood attack costs "
              f"{(t_loss + t_score + t_gen) / t_loss:.1f}x LOSS")
        print(f"  shared prefixes: {in_fam} of {len(flat)} neighbours scored from where they differ from their "
              f"text; {run} of {total} tokens run ({run / total:.0%}; the floor without sharing is about "
              f"{len(flat) / len(texts):.0f}x LOSS)")
        real = SC._run_families
        SC._run_families = lambda *a, **k: []
        t = time.perf_counter()
        compute_stats(lm, flat, use_cache=False)
        t_plain = time.perf_counter() - t
        SC._run_families = real
        print(f"  every neighbour run whole instead: {t_plain:.1f}s = {t_plain / t_loss:.1f}x LOSS "
              f"(sharing prefixes is {t_plain / t_score:.2f}x faster)")

        # the Inspect page's path (dashboard.inspect.inspect_neighbours) for one paragraph
        from mia_core.stats.embeddings import neighbour_similarities

        def inspect_path(text):
            t = time.perf_counter()
            g = make_generator(NeighbourSettings(generator=spec, n=25, m=1))
            ns = g.generate([text], use_cache=False)[0]
            t_first = time.perf_counter() - t
            scored_tokens(compute_stats(lm, [n.text for n in ns], use_cache=False), False)
            neighbour_similarities([text], [ns], use_cache=False)
            return t_first, time.perf_counter() - t

        forget_generators()
        from mia_core.models import masked as masked_models

        masked_models.forget_loaded()
        cold = inspect_path(texts[0])
        warm = inspect_path(texts[1])
        print(f"Inspect page, 25 neighbours of one paragraph: neighbours after {cold[0]:.1f}s, table after {cold[1]:.1f}s "
              f"(cold: proposer loaded); warm {warm[0]:.2f}s / {warm[1]:.1f}s")

        if args.demo:
            from mia_core.targets.demo import demo_dataset, demo_paths

            p = demo_paths()
            target = load_causal_lm(str(p["target"]))
            reference = load_causal_lm(p["reference"])
            nb = {"n": args.demo_n}
            cfg = RunConfig(attacks=("loss", "ref", "neighbourhood", "smia"),
                            params={"neighbourhood": nb, "smia": nb}, split=0.5, split_seed=0, n_bootstrap=500,
                            blind=False)
            t = time.perf_counter()
            res = run_attacks(demo_dataset(), target, reference=reference, config=cfg)
            print(f"demo target, {args.demo_n} neighbours per text, SMIA trained on half, all reported on the "
                  f"other half ({time.perf_counter() - t:.0f}s):")
            print(f"{'attack':<15}{'AUC':>7}  {'95% CI':<15}{'TPR@1%':>8}{'TPR@5%':>8}")
            for k, m in res.metrics.items():
                if k == "blind" or "auc" not in m:
                    continue
                lo, hi = m["auc_ci"]
                print(f"{k:<15}{m['auc']:>7.3f}  [{lo:.3f}, {hi:.3f}]  {m['tpr_at_fpr']['0.01']:>7.1%}"
                      f"{m['tpr_at_fpr']['0.05']:>8.1%}")


if __name__ == "__main__":
    main()
