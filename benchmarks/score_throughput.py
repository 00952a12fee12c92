"""Throughput of the one-pass statistics on the embedded model, and the cost of attacks.

Prints:
1. this CPU's matrix-multiply roof (fp32 and bf16 GFLOP/s, measured now) and the scoring
   throughput at fp32 and bf16 in tokens/s and as a fraction of the roof
   (model FLOPs per token = 2 x parameters, the standard estimate);
2. time(LOSS + zlib + Min-K + Min-K++) / time(LOSS) on N texts (goal <= 1.05: one pass serves all);
3. time(--attacks all) / sum of its three necessary passes (target, target lower-cased,
   reference) (goal <= 1.15).

Usage: python benchmarks/score_throughput.py [--texts 200] [--words 60]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def matmul_roof(dtype, n=1024, reps=10):
    import torch

    a = torch.randn(n, n).to(dtype)
    b = torch.randn(n, n).to(dtype)
    a @ b
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.perf_counter() - t) / 1e9


def main():
    import os
    import tempfile

    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", type=int, default=200)
    ap.add_argument("--words", type=int, default=60)
    ap.add_argument("--skip-bf16", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from mia_core.data import texts_from_strings
    from mia_core.models import load_causal_lm
    from mia_core.pipeline import RunConfig, run_attacks
    from mia_core.stats import StatsSettings, compute_stats

    rows = [json.loads(x)["text"] for x in (ROOT / "tests/data/paragraphs.jsonl").read_text().splitlines()]
    texts = [" ".join(r.split()[: args.words]) for r in rows][: args.texts]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {len(texts)} texts of <= {args.words} words")

    for dt in ["fp32"] + ([] if args.skip_bf16 else ["bf16"]):
        roof = matmul_roof(torch.float32 if dt == "fp32" else torch.bfloat16)
        lm = load_causal_lm(dtype=dt)
        sample = texts[:40] if dt == "fp32" else texts[:8]
        t = time.perf_counter()
        st = compute_stats(lm, sample, StatsSettings(batch_tokens=2048), use_cache=False)
        el = time.perf_counter() - t
        ntok = sum(s.n_tokens for s in st)
        gflops = 2 * lm.n_params * ntok / el / 1e9
        print(f"{dt}: matmul roof {roof:.1f} GFLOP/s; scoring {ntok / el:.0f} tokens/s = {gflops:.1f} GFLOP/s "
              f"= {gflops / roof:.0%} of the roof")

    lm = load_causal_lm(dtype="fp32")
    half = len(texts) // 2
    ds = texts_from_strings(texts[:half], texts[half:])
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MIA_CACHE_DIR"] = tmp

        def timed(attacks, reference=None, use_cache=False):
            cfg = RunConfig(attacks=attacks, use_cache=use_cache, n_bootstrap=0, blind=False)
            t = time.perf_counter()
            run_attacks(ds, lm, reference=reference, config=cfg)
            return time.perf_counter() - t

        t_loss = timed(["loss"])
        t_four = timed(["loss", "zlib", "min_k", "min_k_pp"])
        print(f"LOSS alone {t_loss:.1f}s; LOSS+zlib+Min-K+Min-K++ {t_four:.1f}s; ratio {t_four / t_loss:.3f} (goal <= 1.05)")
        ref = load_causal_lm(dtype="fp32", reuse=False)  # a second copy: a separate reference model
        t_all = timed(["loss", "zlib", "lowercase", "ref", "min_k", "min_k_pp"], reference=ref)
        t0 = time.perf_counter()
        compute_stats(lm, ds.texts, use_cache=False)
        compute_stats(lm, [x.lower() for x in ds.texts], use_cache=False)
        compute_stats(ref, ds.texts, use_cache=False)
        t_passes = time.perf_counter() - t0
        print(f"all six baselines {t_all:.1f}s; three passes alone {t_passes:.1f}s; ratio {t_all / t_passes:.3f} (goal <= 1.15)")


if __name__ == "__main__":
    main()
