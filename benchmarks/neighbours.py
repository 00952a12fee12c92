"""Cost of neighbours and of the neighbourhood attack on this machine; optional AUC table.

Prints:
1. the offline neighbour generator's throughput (neighbours/s) on the embedded SmolLM2, with
   n neighbours (default 25, m = 1) per text, cache off;
2. time(neighbourhood attack) / time(LOSS alone) on the same texts, split into neighbour
   generation and neighbour scoring: scoring n neighbours plus the text costs about n + 1
   LOSS passes, so the floor of the scoring part is about 26x for n = 25;
3. with ``--demo``: LOSS, ref, neighbourhood and SMIA AUCs on the bundled demo target
   (members it was fine-tuned on vs non-members; SMIA trained on one half, every attack
   reported on the other half), with n = ``--demo-n`` neighbours.

Usage: python benchmarks/neighbours.py [--texts 24] [--words 60] [--n 25] [--demo] [--demo-n 8]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", type=int, default=24)
    ap.add_argument("--words", type=int, default=60)
    ap.add_argument("--n", type=int, default=25)
    ap.add_argument("--demo", action="store_true", help="also the AUC table on the demo target")
    ap.add_argument("--demo-n", type=int, default=8, help="neighbours per text for the demo table")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from mia_core.data import texts_from_strings
    from mia_core.models import load_causal_lm
    from mia_core.neighbours import NeighbourSettings, make_generator
    from mia_core.pipeline import RunConfig, run_attacks
    from mia_core.stats import compute_stats

    rows = [json.loads(x)["text"] for x in (ROOT / "tests/data/paragraphs.jsonl").read_text().splitlines()]
    texts = [" ".join(r.split()[: args.words]) for r in rows[:: max(1, len(rows) // args.texts)]][: args.texts]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {len(texts)} texts of <= {args.words} words, "
          f"n = {args.n}")
    lm = load_causal_lm()
    with tempfile.TemporaryDirectory() as tmp:
        models = Path(os.environ.get("MIA_CACHE_DIR", "")) / "models"
        os.environ["MIA_CACHE_DIR"] = tmp
        if models.is_dir():  # keep the converted embedded model
            os.symlink(models, Path(tmp) / "models")
        gen = make_generator(NeighbourSettings(generator="offline", n=args.n, m=1))
        t = time.perf_counter()
        nbs = gen.generate(texts, use_cache=False)
        t_gen = time.perf_counter() - t
        n_nb = sum(len(x) for x in nbs)
        print(f"offline generator: {n_nb} neighbours in {t_gen:.1f}s = {n_nb / t_gen:.1f} neighbours/s "
              f"({n_nb / len(texts):.1f} per text)")

        t = time.perf_counter()
        compute_stats(lm, texts, use_cache=False)
        t_loss = time.perf_counter() - t
        t = time.perf_counter()
        compute_stats(lm, [n.text for ns in nbs for n in ns], use_cache=False)
        t_score = time.perf_counter() - t
        print(f"LOSS alone {t_loss:.1f}s; scoring the neighbours {t_score:.1f}s = {t_score / t_loss:.1f}x LOSS "
              f"(floor about {n_nb / len(texts):.0f}x); with generation the attack costs "
              f"{(t_loss + t_score + t_gen) / t_loss:.1f}x LOSS")

        if args.demo:
            from mia_core.demo import demo_dataset, demo_paths

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
