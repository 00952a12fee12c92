"""What scoring texts with a context the model never saw costs (issue 28), on a target fine-tuned the standard way.

A controlled target: SmolLM2-135M with one LoRA epoch on N AG News texts (``make-target``, which now trains on
the texts as SmolLM2's tokenizer encodes them: nothing in front), N held-out texts as non-members, the base
model as reference. Every attack is scored twice from the same model:

* ``--prefix auto`` (the default): what the model saw in training, i.e. nothing in front; tokens 2..n (MIMIR's);
* ``--prefix always`` (earlier versions' default): <|endoftext|> in front of every text; tokens 2..n.

Prints AUC [95 % CI] and TPR at 1 % FPR per attack and mode, the training and scoring times, the CPU and the
fp32 matmul roof measured in the same run. Needs ``../shared/data/agnews/test.csv`` (these machines only).

    python benchmarks/prefix_cost.py [--n 400] [--epochs 1]
"""
from __future__ import annotations

import argparse
import csv
import os
import random
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AG_NEWS = ROOT.parent / "shared" / "data" / "agnews" / "test.csv"


def _texts(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    with open(AG_NEWS, newline="", encoding="utf-8") as f:
        rows = [f"{r[1].strip()}. {r[2].strip()}".replace("\\", " ") for r in csv.reader(f)]
    rows = list(dict.fromkeys(" ".join(r.split()) for r in rows if len(r) > 80))
    random.Random(seed).shuffle(rows)
    return rows[:n], rows[n:2 * n]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--epochs", type=int, default=1)
    args = ap.parse_args()
    os.environ.setdefault("MIA_CACHE_DIR", tempfile.mkdtemp(prefix="mia-bench-prefix-"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from cache_verify import _cpu, _roof  # the same CPU name and roof as the other benchmarks

    from mia_core.data import texts_from_strings
    from mia_core.targets import make_target
    from mia_core.models import load_causal_lm
    from mia_core.pipeline import RunConfig, run_attacks
    from mia_core.stats import StatsSettings

    mem, non = _texts(args.n)
    out = Path(tempfile.mkdtemp(prefix="mia-prefix-target-")) / "target"
    t0 = time.perf_counter()
    log = make_target(mem, base="smollm2", out_dir=out, epochs=args.epochs, heldout_texts=non, seed=0)
    train_s = time.perf_counter() - t0
    target, ref = load_causal_lm(str(out)), load_causal_lm(None)
    print(f"CPU: {_cpu()}, {os.cpu_count()} logical CPUs; fp32 matmul roof {_roof():.0f} GFLOP/s")
    print(f"target: SmolLM2-135M + LoRA, {args.epochs} epoch(s) on {len(mem)} AG News texts "
          f"(prefix in training: {log['prefix_token_id']}), {train_s:.0f} s; final train loss "
          f"{log['final']['train_loss']:.3f}, held-out {log['final']['heldout_loss']:.3f}")
    ds = texts_from_strings(mem, non)
    rows = {}
    for mode in ("auto", "always"):
        t0 = time.perf_counter()
        res = run_attacks(ds, target, reference=ref, config=RunConfig(
            attacks=["loss", "zlib", "min_k", "min_k_pp", "ref"], stats=StatsSettings(prefix=mode), n_bootstrap=1000,
            blind=False))
        rows[mode] = (res.metrics, time.perf_counter() - t0, res.config["scored_tokens"])
    print(f"\n{len(mem)} members + {len(non)} non-members; AUC [95 % CI], TPR at 1 % FPR")
    print(f"{'attack':10s} {'--prefix auto (default)':>32s} {'--prefix always (before)':>32s}   difference")
    for name in ("loss", "zlib", "min_k", "min_k_pp", "ref"):
        cells = []
        for mode in ("auto", "always"):
            m = rows[mode][0][name]
            lo, hi = m["auc_ci"]
            cells.append(f"{m['auc']:.3f} [{lo:.3f}, {hi:.3f}] {100 * m['tpr_at_fpr']['0.01']:4.1f} %")
        d = rows["auto"][0][name]["auc"] - rows["always"][0][name]["auc"]
        print(f"{name:10s} {cells[0]:>32s} {cells[1]:>32s}   {d:+.3f}")
    for mode in ("auto", "always"):
        print(f"{mode}: scored tokens {rows[mode][2]}, {rows[mode][1]:.0f} s")


if __name__ == "__main__":
    main()
