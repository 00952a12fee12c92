"""WBC beside the reference attack, Min-K%++ and LOSS on the controlled weak fine-tunes (issue 52; the table in
docs/attacks.md, "WBC on weak fine-tunes").

Targets: SmolLM2-135M with one LoRA epoch on 400 AG News texts (``make-target``, seeds 0 and 1; the texts of
``prefix_cost._texts(400, seed)``: 400 members, 400 held-out), the base SmolLM2 as reference; every member and
every held-out text is scored (400 + 400). For each seed:

* AUC and TPR at 0.1 / 1 / 5 % FPR with 95 % bootstrap CIs (1,000 resamples, ``mia_core.metrics.evaluate``);
* WBC with one window size (2 tokens) and the ``mean`` aggregation beside it (the paper's ablations);
* per text, WBC against a direct transcription of the paper's formula (loops over windows) on the same
  per-token losses: Spearman and the largest difference;
* the time: scoring WBC from the statistics against the reference attack's (no model pass of its own);
* with ``--recall``: ReCaLL and Con-ReCall (gamma 0.5 and 1) through ``run_attacks`` with ``split=0.5`` (the member
  prefix: the first 12 members of the training half; the non-member prefix: the first 12 of 200 further AG News
  texts, the population), every figure on the held-out 200 + 200.

Targets are read from ``--work/target_s{seed}`` (``benchmarks/di_control.py``'s) or trained there (about 6 min
each on 2 cores). Needs ``../shared/data`` (these machines only). Prints the CPU and the fp32 matmul roof.

    python benchmarks/wbc.py [--work /tmp/di51] [--seeds 0 1] [--recall]
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
FPRS = ("0.001", "0.01", "0.05")


def _cell(m: dict, f: str) -> str:
    t = m["tpr_at_fpr"][f]
    ci = (m.get("tpr_at_fpr_ci") or {}).get(f)
    return f"{100 * t:.1f} %" + (f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "")


def _transcription(lt, lr, windows) -> float:
    n = len(lt)
    sizes = [w for w in windows if w <= n] or [n]
    per = []
    for w in sizes:
        votes = [1.0 if sum(lt[j:j + w]) < sum(lr[j:j + w]) else 0.0 for j in range(n - w + 1)]
        per.append(sum(votes) / len(votes))
    return sum(per) / len(per)


def one_seed(seed: int, work: Path, base) -> None:
    from scipy.stats import spearmanr

    from mia_core.attacks import REGISTRY
    from mia_core.attacks.wbc import PAPER_WINDOWS
    from mia_core.metrics.evaluation import evaluate
    from mia_core.models import load_causal_lm
    from mia_core.pipeline.stages import text_passes
    from di_control import weak_target

    mem, held, out = weak_target(work, seed)
    target = load_causal_lm(str(out))
    texts, y = mem + held, np.r_[np.ones(len(mem), int), np.zeros(len(held), int)]
    t0 = time.perf_counter()
    inputs = text_passes(texts, target, reference=base)
    print(f"\nseed {seed}: passes (target + reference, cached where computed before) {time.perf_counter() - t0:.0f} s")
    variants = [("LOSS", "loss", {}), ("Min-K%++ (k 0.2)", "min_k_pp", {}), ("ref (difference)", "ref", {}),
                ("**WBC** (2..40, vote)", "wbc", {}), ("WBC, one window (2)", "wbc", {"windows": "2"}),
                ("WBC, mean aggregation", "wbc", {"aggregation": "mean"})]
    print("\n| attack | AUC [95 % CI] | " + " | ".join(f"TPR at {float(f) * 100:g} % FPR [CI]" for f in FPRS)
          + " | score time |\n|---|---|" + "---|" * len(FPRS) + "---|")
    scores = {}
    for label, name, params in variants:
        t1 = time.perf_counter()
        s = np.asarray(REGISTRY[name].score(inputs, **{**REGISTRY[name].params, **params}), float)
        dt = time.perf_counter() - t1
        scores[label] = s
        m = evaluate(y, s, n_bootstrap=1000, seed=seed)
        lo, hi = m["auc_ci"]
        print(f"| {label} | {m['auc']:.3f} [{lo:.3f}, {hi:.3f}] | " + " | ".join(_cell(m, f) for f in FPRS)
              + f" | {dt * 1000:.0f} ms |", flush=True)
    lt = [-s.logprob.astype(float) for s in inputs.scored("target")]
    lr = [-s.logprob.astype(float) for s in inputs.scored("reference")]
    theirs = np.array([_transcription(list(a[~np.isnan(a)]), list(b[~np.isnan(b)]), PAPER_WINDOWS)
                       for a, b in zip(lt, lr)])
    ours = scores["**WBC** (2..40, vote)"]
    print(f"\nper text against the transcription ({len(texts)} texts): Spearman "
          f"{spearmanr(ours, theirs).statistic:.6f}, largest difference {np.max(np.abs(ours - theirs)):.2e}; "
          f"tokens per text {np.median([len(a) for a in lt]):.0f} (median), {min(len(a) for a in lt)} (fewest)")


def recall_table(seed: int, work: Path, base) -> None:
    from mia_core.data import Dataset, texts_from_strings
    from mia_core.models import load_causal_lm
    from mia_core.pipeline import RunConfig, run_attacks
    from prefix_cost import _texts

    mem, held = _texts(400, seed=seed)
    pop = _texts(600, seed=seed)[1][300:500]  # the same shuffle: rows 900-1099, in neither set
    assert not set(pop) & (set(mem) | set(held))
    target = load_causal_lm(str(work / f"target_s{seed}"))
    population = Dataset(texts=pop, labels=[0] * len(pop), ids=[f"p{i}" for i in range(len(pop))])
    print(f"\nseed {seed}: ReCaLL and Con-ReCall, split 0.5 (held-out 200 + 200), 12 shots each")
    print("| attack | AUC [95 % CI] | " + " | ".join(f"TPR at {float(f) * 100:g} % FPR [CI]" for f in FPRS)
          + "|\n|---|---|" + "---|" * len(FPRS))
    t0 = time.perf_counter()
    for label, params in (("ReCaLL", {}), ("Con-ReCall, gamma 0.5", {"con_recall": {"gamma": 0.5}}),
                          ("Con-ReCall, gamma 1", {"con_recall": {"gamma": 1.0}})):
        names = ["loss", "recall"] if not params else ["con_recall"]
        res = run_attacks(texts_from_strings(mem, held), target, reference=base, population=population,
                          config=RunConfig(attacks=names, params=params, split=0.5, split_seed=seed, n_bootstrap=1000,
                                           seed=seed, blind=False))
        for name in names:
            m = res.metrics[name]
            lo, hi = m["auc_ci"]
            print(f"| {label if name != 'loss' else 'LOSS (same half)'} | {m['auc']:.3f} [{lo:.3f}, {hi:.3f}] | "
                  + " | ".join(_cell(m, f) for f in FPRS) + " |", flush=True)
    print(f"({time.perf_counter() - t0:.0f} s)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default=None)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--recall", action="store_true", help="also ReCaLL and Con-ReCall (two conditional passes)")
    ap.add_argument("--no-wbc", dest="wbc", action="store_false", help="skip the WBC table")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(args.work or tempfile.mkdtemp(prefix="mia-wbc-"))
    os.environ.setdefault("MIA_CACHE_DIR", str(work / "cache"))
    sys.path.insert(0, str(ROOT))
    from cache_verify import _cpu, _roof

    from mia_core.models import load_causal_lm

    print(f"CPU: {_cpu()}, {os.cpu_count()} logical CPUs; fp32 matmul roof {_roof():.0f} GFLOP/s", flush=True)
    base = load_causal_lm(None)
    for seed in args.seeds:
        if args.wbc:
            one_seed(seed, work, base)
        if args.recall:
            recall_table(seed, work, base)


if __name__ == "__main__":
    main()
