"""Copyright traps: placebo validity and power on controlled targets (issue 68). Prints figures; decides nothing.

    python benchmarks/traps.py placebo --traps FOLDER [--seals 200] [--model M]
        The record's traps scored once on a model that never saw them (default: the embedded SmolLM2-135M, the
        loss alone, as `mia traps test --reference none` scores them), then the pre-registered test under
        --seals fresh seals: new random splits of the same batch (mia_core.traps.record.assign with fresh split
        seeds, the record's buckets and levels). Under a valid test the share of p < 0.05 lies in the binomial
        95 % interval around 5 %. Repeat with freshly made batches (`mia traps make`) for the batch-level check.

    python benchmarks/traps.py documents --out DOCS [--books 25] [--words 1200]
        The documents of docs/traps.md's power table: the middle --words words of each of the first --books
        Gutenberg books of ../shared/data/gutenberg (by file name), one .txt each.

    python benchmarks/traps.py power --traps FOLDER --documents DOCS --work DIR [--epochs 3] [--no-traps-target T]
        The whole experiment offline: insert -> make-target (LoRA on the marked documents) -> test, overall and per
        repetition level; and the same documents without traps (a target fine-tuned on them): "not shown" expected.
        --no-traps-target: a target already fine-tuned on DOCS without traps (by an earlier run's make-target with
        the same settings), tested instead of training it again: it depends on the documents, not on the record.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def placebo(args) -> None:
    from scipy.stats import binomtest

    from mia_core.models import load_causal_lm
    from mia_core.traps.audit import score_traps
    from mia_core.traps.options import TrapsOptions
    from mia_core.traps.permutation import stratified_rank_test
    from mia_core.traps.record import assign, read_record

    rec = read_record(args.traps)
    sealed = rec["sealed"]
    traps = sealed["traps"]
    levels = tuple(sealed["parameters"].get("repetitions") or (1,))
    lm = load_causal_lm(args.model, device="cpu")
    t0 = time.time()
    score = -score_traps(lm, [t["text"] for t in traps], TrapsOptions())
    took = time.time() - t0
    buckets = [int(t["bucket"]) for t in traps]
    rng = np.random.default_rng(args.seed)
    ps = []
    for i in range(args.seals):
        group, _ = assign(buckets, levels, int(rng.integers(2**32)))
        ins = np.array(group) == "inserted"
        ps.append(stratified_rank_test(score, ins, np.array(buckets), permutations=args.permutations, seed=i)["p_value"])
    ps = np.array(ps)
    k = int((ps < 0.05).sum())
    ci = binomtest(k, len(ps), 0.05).proportion_ci(0.95)
    lo, hi = (int(x) for x in __import__("scipy.stats", fromlist=["binom"]).binom.ppf([0.025, 0.975], len(ps), 0.05))
    real = stratified_rank_test(score, np.array([t["group"] == "inserted" for t in traps]), np.array(buckets),
                                permutations=args.permutations)["p_value"]
    out = {"cpu": cpu(), "model": lm.name, "traps": len(traps), "seal": rec["seal"], "seals": len(ps),
           "share_below_0.05": k / len(ps), "count_below_0.05": k, "share_ci95": [ci.low, ci.high],
           "binomial_95_range_of_the_count_at_5pct": [lo, hi], "inside": bool(lo <= k <= hi),
           "share_below_0.01": float((ps < 0.01).mean()), "p_of_the_record_own_split": real,
           "score_seconds": round(took, 1)}
    print(json.dumps(out, indent=1))


def _mia(*a) -> None:
    subprocess.run([sys.executable, "-m", "mia_core", *map(str, a)], check=True)


def power(args) -> None:
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    _mia("traps", "insert", "--traps", args.traps, "--documents", args.documents, "--out", work / "marked")
    _mia("make-target", "--members", work / "marked", "--epochs", args.epochs, "--max-length", args.max_length,
         "--out", work / "target")
    _mia("traps", "test", "--traps", args.traps, "--model", work / "target", "--out", work / "result")
    no_traps = Path(args.no_traps_target) if args.no_traps_target else work / "target_no_traps"
    if not args.no_traps_target:
        _mia("make-target", "--members", args.documents, "--epochs", args.epochs, "--max-length", args.max_length,
             "--out", no_traps)
    _mia("traps", "test", "--traps", args.traps, "--model", no_traps, "--out", work / "result_no_traps")
    got = {k: json.loads((work / k / "traps.json").read_text()) for k in ("result", "result_no_traps")}
    print(json.dumps({"cpu": cpu(), "seconds": round(time.time() - t0),
                      **{k: {"p_value": v["p_value"], "verdict": v["verdict"], "auc": v["auc"],
                             "levels": {r: {"p": lv["p_value"], "p_holm": lv["p_holm"],
                                            "auc": lv["metrics"].get("auc")} for r, lv in v["levels"].items()}}
                         for k, v in got.items()}}, indent=1))


def documents(args) -> None:
    books = sorted((ROOT.parent / "shared" / "data" / "gutenberg").glob("pg*.txt"))[:args.books]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for i, b in enumerate(books):
        text = b.read_text(encoding="utf-8", errors="replace")
        a, z = text.find("*** START"), text.find("*** END")
        words = (text[a:z] if a > 0 and z > 0 else text).split()
        mid = len(words) // 2
        (out / f"doc{i:02d}.txt").write_text(" ".join(words[mid:mid + args.words]) + "\n", encoding="utf-8")
    print(f"wrote {len(books)} documents of {args.words} words to {out}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    a = sub.add_parser("placebo")
    a.add_argument("--traps", required=True)
    a.add_argument("--model", default=None)
    a.add_argument("--seals", type=int, default=200)
    a.add_argument("--permutations", type=int, default=9_999)
    a.add_argument("--seed", type=int, default=0)
    b = sub.add_parser("power")
    b.add_argument("--traps", required=True)
    b.add_argument("--documents", required=True)
    b.add_argument("--work", required=True)
    b.add_argument("--epochs", type=int, default=3)
    b.add_argument("--max-length", type=int, default=256)
    b.add_argument("--no-traps-target", default=None)
    c = sub.add_parser("documents")
    c.add_argument("--out", required=True)
    c.add_argument("--books", type=int, default=25)
    c.add_argument("--words", type=int, default=1200)
    args = p.parse_args()
    {"placebo": placebo, "power": power, "documents": documents}[args.what](args)


if __name__ == "__main__":
    main()
