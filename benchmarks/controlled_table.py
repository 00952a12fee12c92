"""Every attack on one controlled target trained the standard way (docs/attacks.md, "Every attack on one
controlled target"; issue 28: re-measured with a target trained without the prefix).

The target is ``benchmarks/prefix_cost.py``'s: SmolLM2-135M with one LoRA epoch on 400 AG News texts as
SmolLM2's tokenizer encodes them (nothing in front), 400 held-out texts. Audited here: 200 of its members,
200 of its held-out texts, 200 further AG News texts as the population (100 in the docs' run, which
took texts 900-999 only) (ReCaLL's prefix, RMIA's z, the
10 %-FPR threshold). ``--split 0.5``: SMIA trains on half of each set and every attack is reported on the
same held-out 100 + 100 texts. Reference: base SmolLM2. Neighbours: the embedded proposer, n = 5.

Writes the three text files and runs the CLI (``python -m mia_core run``, default ``--prefix auto``),
then prints the table, the CPU and the fp32 matmul roof measured in the same run. Needs
``../shared/data/agnews/test.csv`` (these machines only).

    python benchmarks/controlled_table.py [--target DIR] [--out DIR] [--attacks ...]

``--target``: a folder ``prefix_cost.py`` trained (otherwise one is trained: about 8 min on 2 cores).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
ATTACKS = "loss,zlib,lowercase,ref,min_k,min_k_pp,neighbourhood,smia,recall,dc_pdd,rmia,gradnorm"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--attacks", default=ATTACKS)
    ap.add_argument("--n", type=int, default=200, help="members and non-members audited (of the 400 each)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    from cache_verify import _cpu, _roof
    from prefix_cost import _texts

    mem, non = _texts(400)
    pop = _texts(600)[1][300:300 + args.n]  # the same shuffle: texts 900.. are in neither set
    assert not set(pop) & (set(mem) | set(non))
    work = Path(args.out or tempfile.mkdtemp(prefix="mia-controlled-"))
    work.mkdir(parents=True, exist_ok=True)
    for name, texts in (("members", mem[:args.n]), ("nonmembers", non[:args.n]), ("population", pop)):
        (work / f"{name}.txt").write_text("\n".join(texts) + "\n")
    target = args.target
    if target is None:
        from mia_core.targets import make_target

        target = str(work / "target")
        make_target(mem, base="smollm2", out_dir=target, epochs=1, heldout_texts=non, seed=0)
    print(f"CPU: {_cpu()}, {os.cpu_count()} logical CPUs; fp32 matmul roof {_roof():.0f} GFLOP/s", flush=True)
    cmd = [sys.executable, "-m", "mia_core", "run", "--members", str(work / "members.txt"), "--nonmembers",
           str(work / "nonmembers.txt"), "--population", str(work / "population.txt"), "--mode", "lines",
           "--model", target, "--reference", "smollm2", "--attacks", args.attacks, "--split", "0.5",
           "--n-neighbours", "5", "--out", str(work / "run"), "--overwrite", "--quiet"]
    print(" ".join(cmd[1:]), flush=True)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    print(f"run: {time.perf_counter() - t0:.0f} s")
    metrics = json.loads((work / "run" / "metrics.json").read_text())
    print("\n| attack | AUC [95 % CI] | TPR at 1 % FPR [CI] | TPR at 10 % FPR [CI] |\n|---|---|---|---|")
    for name, m in metrics.items():
        if not isinstance(m, dict) or "auc" not in m:
            continue
        lo, hi = m["auc_ci"]
        cells = []
        for f in ("0.01", "0.1"):
            t = m["tpr_at_fpr"][f]
            ci = (m.get("tpr_at_fpr_ci") or {}).get(f)
            cells.append(f"{100 * t:.0f} %" + (f" [{100 * ci[0]:.0f}, {100 * ci[1]:.0f}]" if ci else ""))
        print(f"| `{name}` | {m['auc']:.3f} [{lo:.2f}, {hi:.2f}] | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
