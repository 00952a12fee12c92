"""Dataset inference measured (issue 29 item 7 and its speed goals).

1. **Controlled weak target**: ``benchmarks/prefix_cost.py``'s SmolLM2-135M + one LoRA epoch on 400 AG News
   texts (trained the standard way), its 400 held-out texts as validation. p-values (permutation test,
   primary; the paper's split t-test) with and without a reference model (base SmolLM2), and the median
   p over 5 random subsets at 25, 50, 100, 200 suspect (+ as many validation) texts.
2. **False positives**: the same procedure on >= 200 random halves of the 400 held-out (never trained on)
   texts; the share of p <= 0.05 and <= 0.01 (a valid test: at most alpha, up to noise).
3. **The IID guard on WikiMIA** (members: Wikipedia events before 2023, non-members: after; a known
   distribution shift): must be refused, with SmolLM2 (no model pass is made when it is).
4. **Speed**: the permutation test (1,000 permutations x 5 folds, 400 texts x 20 features), and the whole
   audit against a calibration run with the same attacks on the same 400 texts (each with a fresh cache).

Prints the figures, the CPU and the fp32 matmul roof measured in the same run. Needs ``../shared/data``
(these machines only) and a target folder from ``prefix_cost.py`` (``--target``; else one is trained).

    python benchmarks/dataset_inference.py --target DIR [--null-splits 200] [--skip-speed]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
WIKIMIA = ROOT.parent.parent / "shared" / "data" / "wikimia" / "WikiMIA_length64.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=None)
    ap.add_argument("--null-splits", type=int, default=200)
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--only-speed", action="store_true", help="section 4 only (on a quiet machine)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    from cache_verify import _cpu, _roof
    from prefix_cost import _texts

    from mia_core.dataset_inference import iid_guard, run_dataset_inference
    from mia_core.dataset_inference.significance import paper_test, permutation_test, power_curve
    from mia_core.models import load_causal_lm

    print(f"CPU: {_cpu()}, {os.cpu_count()} logical CPUs; fp32 matmul roof {_roof():.0f} GFLOP/s", flush=True)
    mem, held = _texts(400)
    target_dir = args.target
    if target_dir is None:
        from mia_core.targets import make_target

        target_dir = str(Path(tempfile.mkdtemp(prefix="mia-di-target-")) / "target")
        make_target(mem, base="smollm2", out_dir=target_dir, epochs=1, heldout_texts=held, seed=0)
    target, base = load_causal_lm(target_dir), load_causal_lm(None)

    if args.only_speed:
        return _speed(args, mem, held, target)
    # 1. controlled target
    print("\n1. controlled target (200 members vs 200 held-out texts; power: median p over 5 subsets)")
    for label, ref in (("without reference", None), ("with the base as reference", base)):
        t0 = time.perf_counter()
        res = run_dataset_inference(mem[:200], held[:200], target, reference=ref)
        s = res.summary
        curve = {c["n"]: c["median_p"] for c in power_curve(res.scores.loc[~res.scores["excluded"], s["features"]]
                                                            .to_numpy(), (res.scores.loc[~res.scores["excluded"], "set"]
                                                                          == "suspect").to_numpy().astype(int),
                                                            sizes=(25, 50, 100), draws=5, n_permutations=9999)}
        print(f"  {label}: {len(s['features'])} features; permutation p = {s['p_value']:.2g}"
              f"{' (bound)' if s['p_value_is_bound'] else ''}, paper's split t-test p = {s['p_value_ttest']:.2g}, "
              f"self-check p = {s['self_check_p_value']:.2g}, blind AUC {s['blind_auc']:.3f}; {time.perf_counter() - t0:.0f} s")
        print("    median p at n = " + ", ".join(f"{n}: {p:.2g}" for n, p in curve.items()))
        feats = res.scores.loc[~res.scores["excluded"]]
        ys = (feats["set"] == "suspect").to_numpy().astype(int)
        paper = {}
        for n in (25, 50, 100, 200):  # the paper's split t-test on the same kind of subsets (median of 5)
            ps = []
            for d in range(5 if n < 200 else 1):
                r = np.random.default_rng([d, n])
                si = r.choice(np.flatnonzero(ys == 1), n, replace=False)
                vi = r.choice(np.flatnonzero(ys == 0), n, replace=False)
                Xf = feats[s["features"]].to_numpy()
                ps.append(paper_test(Xf[si], Xf[vi], seed=d)["p_value"])
            paper[n] = float(np.median(ps))
        print("    the paper's split t-test, median p at n = " + ", ".join(f"{n}: {p:.2g}" for n, p in paper.items()))
        if ref is None:  # the floor: two features (LOSS, Min-K%++), as first estimated
            two = feats[["loss", "min_k_pp@0.2"]].to_numpy()
            c2 = {c["n"]: c["median_p"] for c in power_curve(two, ys, sizes=(50, 100), draws=5, n_permutations=9999)}
            print("    LOSS + Min-K%++ only (the issue's floor), permutation test, median p at n = "
                  + ", ".join(f"{n}: {p:.2g}" for n, p in c2.items()))

    # 2. false positives on unseen texts
    print(f"\n2. false positives: {args.null_splits} random halves of the 400 held-out texts")
    res = run_dataset_inference(held[:200], held[200:], target, iid_check=False)
    X = res.scores[res.summary["features"]].to_numpy()
    keep = np.isfinite(X).all(1)
    X = X[keep]
    ps = []
    t0 = time.perf_counter()
    for r in range(args.null_splits):
        y = np.zeros(len(X), int)
        y[np.random.default_rng(r).permutation(len(X))[: len(X) // 2]] = 1
        ps.append(permutation_test(X, y, n_permutations=999, seed=r)["p_value"])
    ps = np.array(ps)
    print(f"  share p <= 0.05: {(ps <= 0.05).mean():.3f}, <= 0.01: {(ps <= 0.01).mean():.3f}, "
          f"mean p {ps.mean():.3f} ({len(ps)} splits, {time.perf_counter() - t0:.0f} s)")
    print("  deciles of p: " + ", ".join(f"{q:.2f}" for q in np.quantile(ps, np.linspace(0.1, 0.9, 9))))

    # 3. WikiMIA
    if WIKIMIA.exists():
        rows = [json.loads(line) for line in WIKIMIA.read_text().splitlines() if line.strip()]
        m = [r["input"] for r in rows if r["label"] == 1]
        n = [r["input"] for r in rows if r["label"] == 0]
        t0 = time.perf_counter()
        res = run_dataset_inference(m, n, "smollm2", load=lambda s: load_causal_lm(s))
        print(f"\n3. WikiMIA ({WIKIMIA.name}: {len(m)} members, {len(n)} non-members) with SmolLM2: verdict "
              f"{res.summary['verdict']}, blind AUC {res.summary['blind_auc']:.3f}, p = {res.summary.get('blind_p_value')}; "
              f"{time.perf_counter() - t0:.0f} s, no model pass" if res.summary["verdict"] == "refused" else
              f"\n3. WikiMIA: verdict {res.summary['verdict']} (NOT refused), blind AUC {res.summary['blind_auc']}")
        g = iid_guard(m[:100], n[:100])
        print(f"   the guard on 100 + 100 of them: ok={g['ok']}, AUC {g['blind_auc']:.3f}")

    _speed(args, mem, held, target)


def _speed(args, mem, held, target) -> None:
    """4. the permutation test alone, and the whole audit against a calibration run with the same attacks."""
    from mia_core.dataset_inference import run_dataset_inference
    from mia_core.dataset_inference.significance import permutation_test

    rng = np.random.default_rng(0)
    Xs, ys = rng.normal(size=(400, 20)), np.r_[np.ones(200), np.zeros(200)].astype(int)
    t0 = time.perf_counter()
    permutation_test(Xs, ys, n_permutations=1000)
    t1 = time.perf_counter() - t0
    t0 = time.perf_counter()
    permutation_test(Xs, ys, n_permutations=10_000)
    print(f"\n4. permutation test, 400 texts x 20 features, 5 folds: 1,000 permutations {t1:.2f} s, "
          f"10,000 {time.perf_counter() - t0:.2f} s")
    if not args.skip_speed:
        from mia_core.data import texts_from_strings
        from mia_core.models import load_causal_lm
        from mia_core.pipeline import RunConfig, run_attacks

        base = load_causal_lm(None)  # the target's base: the reference of the calibration run, the audit's control
        attacks = ["loss", "zlib", "min_k", "min_k_pp", "dc_pdd", "ref"]
        times = {}
        for label, run in (
                ("calibration", lambda: run_attacks(texts_from_strings(mem[200:400], held[200:400]), target,
                                                    reference=base, config=RunConfig(attacks=attacks, n_bootstrap=1000))),
                ("audit, control auto (the base)", lambda: run_dataset_inference(mem[200:400], held[200:400], target)),
                ("audit, control none", lambda: run_dataset_inference(mem[200:400], held[200:400], target,
                                                                      control="none"))):
            os.environ["MIA_CACHE_DIR"] = tempfile.mkdtemp(prefix="mia-di-speed-")
            t0 = time.perf_counter()
            run()
            times[label] = time.perf_counter() - t0
        cal = times["calibration"]
        print(f"   calibration run ({', '.join(attacks)}, the base as reference, 1,000 bootstrap) {cal:.0f} s; "
              f"dataset inference (the same attacks as features, the base as its negative control, 10,000 "
              f"permutations, paper test, self-check, power curve, guard) {times['audit, control auto (the base)']:.0f} s"
              f" ({times['audit, control auto (the base)'] / cal:.2f}x); without the control (one pass fewer) "
              f"{times['audit, control none']:.0f} s ({times['audit, control none'] / cal:.2f}x); fresh caches each")

if __name__ == "__main__":
    main()
