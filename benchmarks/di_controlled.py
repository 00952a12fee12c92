"""Dataset inference on controlled weak targets (issue 38 item 3): p-values at 25 / 50 / 100 / 200 texts, with and
without a reference model, for both combinations, on two targets trained with different seeds; false positives on
held-out halves; a reversed pair; and the audit's time against a calibration run with the same attacks.

Each target: SmolLM2-135M + one LoRA epoch on 400 AG News texts (``make-target``, trained the standard way), the
split and the training seeded by ``--seeds``; its 400 held-out texts are the non-members. Features are computed
once per target (one scoring stage, cached) for 200 members + 400 held-out texts; every p-value below is the
product's ``permutation_test`` on subsets of those features (9,999 permutations; median over 5 random subsets, one
at 200). Needs ``../shared/data`` (these machines only). Prints the CPU and the fp32 matmul roof of the same run.

    python benchmarks/di_controlled.py [--seeds 0 1] [--null-splits 200] [--skip-speed]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
SIZES = (25, 50, 100, 200)


def _features(res):
    sc = res.scores[~res.scores["excluded"]]
    return sc[res.summary["features"]].to_numpy(), sc["set"].to_numpy()


def _median_p(X, y, n, combination, draws=5):
    from mia_core.dataset_inference.significance import permutation_test

    ps = []
    si, vi = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    for d in range(draws if n < min(len(si), len(vi)) else 1):
        r = np.random.default_rng([d, n])
        idx = np.r_[r.choice(si, n, replace=False), r.choice(vi, n, replace=False)]
        ps.append(permutation_test(X[idx], y[idx], n_permutations=9999, seed=d, combination=combination)["p_value"])
    return float(np.median(ps))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--null-splits", type=int, default=200)
    ap.add_argument("--skip-speed", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("MIA_CACHE_DIR", tempfile.mkdtemp(prefix="mia-di-controlled-"))
    sys.path.insert(0, str(ROOT))
    from cache_verify import _cpu, _roof
    from prefix_cost import _texts

    from mia_core.dataset_inference import run_dataset_inference
    from mia_core.dataset_inference.significance import permutation_test
    from mia_core.targets import make_target
    from mia_core.models import load_causal_lm

    print(f"CPU: {_cpu()}, {os.cpu_count()} logical CPUs; fp32 matmul roof {_roof():.0f} GFLOP/s", flush=True)
    base = load_causal_lm(None)
    for seed in args.seeds:
        mem, held = _texts(400, seed=seed)
        out = str(Path(tempfile.mkdtemp(prefix="mia-di-target-")) / "target")
        t0 = time.perf_counter()
        make_target(mem, base="smollm2", out_dir=out, epochs=1, heldout_texts=held, seed=seed)
        target = load_causal_lm(out)
        print(f"\n== target seed {seed}: trained in {time.perf_counter() - t0:.0f} s", flush=True)
        for label, ref in (("no reference", None), ("base SmolLM2 as reference", base)):
            t0 = time.perf_counter()
            res = run_dataset_inference(mem[:200], held[:200], target, reference=ref, n_permutations=9999)
            X, sets = _features(res)
            y = (sets == "suspect").astype(int)
            print(f"  {label}: {len(res.summary['features'])} features, 200 + 200: p = {res.summary['p_value']:.2g}"
                  f"{' (bound)' if res.summary['p_value_is_bound'] else ''}, paper's t-test p = "
                  f"{res.summary['p_value_ttest']:.2g}, texts flagged {res.summary['n_flagged']}, blind AUC "
                  f"{res.summary['blind_auc']:.3f} (p = {res.summary['blind_p_value']:.2f}); {time.perf_counter() - t0:.0f} s",
                  flush=True)
            for comb in ("nonneg", "mean"):
                print(f"    {comb:6s} median p at n = " + ", ".join(f"{n}: {_median_p(X, y, n, comb):.2g}" for n in SIZES),
                      flush=True)
            rev = permutation_test(X, 1 - y, n_permutations=9999)["p_value"]
            print(f"    reversed (held-out texts as the suspect set, 200 + 200): p = {rev:.3f}", flush=True)
        # false positives: random halves of the 400 held-out texts (never trained on), both combinations
        res = run_dataset_inference(held[:200], held[200:400], target, iid_check=False, n_permutations=999)
        X, _ = _features(res)
        for comb in ("nonneg", "mean"):
            ps = []
            for r in range(args.null_splits):
                yy = np.zeros(len(X), int)
                yy[np.random.default_rng([r, 99]).permutation(len(X))[: len(X) // 2]] = 1  # not the folds' stream
                ps.append(permutation_test(X, yy, n_permutations=999, seed=r, combination=comb)["p_value"])
            ps = np.array(ps)
            print(f"  false positives ({comb}, {args.null_splits} random halves of the held-out texts): p <= 0.05 in "
                  f"{(ps <= 0.05).mean():.3f}, <= 0.01 in {(ps <= 0.01).mean():.3f}", flush=True)
    if not args.skip_speed:  # the permutation test alone, and the audit against a calibration run (fresh caches)
        from dataset_inference import _speed

        _speed(args, mem, held, target)


if __name__ == "__main__":
    main()
