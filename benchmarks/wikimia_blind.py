"""Blind baseline on WikiMIA and WikiMIA-24: how well do the sets separate without the model?

Runs :func:`mia_core.metrics.blind_baseline.blind_baseline` (TF-IDF word + character n-grams, logistic
regression, stratified 5-fold out-of-fold scores; the language model is never loaded) on
each length split of WikiMIA (Shi et al. 2024) and WikiMIA-24 (Fu et al. 2024), read from
``/work/shared/data/wikimia/WikiMIA{,-24}_length{32,64,128,256}.jsonl`` (fields ``input``
and ``label``, 1 = member), and prints

    split | n members | n non-members | blind AUC [95% CI] | TPR@1% FPR | TPR@5% FPR

plus a second table of model-free cues from :func:`mia_core.data.overlap.overlap_stats` (mean
length per set, KS p-value, share of texts mentioning a year >= the cut-off, 13-gram
overlap). Nothing from the data is copied into the project; ``--json`` writes figures only
(no text).

    python benchmarks/wikimia_blind.py [--data-dir DIR] [--folds 5] [--seed 0] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from mia_core.data.overlap import overlap_stats
from mia_core.metrics.blind_baseline import blind_baseline

DATA_DIR = Path("/work/shared/data/wikimia")
SPLITS = [f"WikiMIA_length{n}" for n in (32, 64, 128, 256)] + [f"WikiMIA-24_length{n}" for n in (32, 64, 128, 256)]


def read_split(path: Path) -> tuple[list[str], list[str]]:
    members, nonmembers = [], []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            (members if int(row["label"]) == 1 else nonmembers).append(row["input"])
    return members, nonmembers


def pct(v) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-bootstrap", type=int, default=1000)
    ap.add_argument("--year-cutoff", type=int, default=2023,
                    help="year cut-off for the date cue (WikiMIA non-members are events of 2023 or later)")
    ap.add_argument("--splits", nargs="*", default=SPLITS)
    ap.add_argument("--json", type=Path, default=None, help="write the figures (no text) to this file")
    args = ap.parse_args(argv)

    rows, cues, results = [], [], {}
    for split in args.splits:
        path = args.data_dir / f"{split}.jsonl"
        if not path.exists():
            print(f"skip {split}: {path} not found", file=sys.stderr)
            continue
        mem, non = read_split(path)
        t0 = time.time()
        b = blind_baseline(mem, non, folds=args.folds, seed=args.seed, n_bootstrap=args.n_bootstrap)
        o = overlap_stats(mem, non, year_cutoff=args.year_cutoff)
        dt = time.time() - t0
        print(f"{split}: AUC {b['auc']:.3f} ({dt:.0f} s)", file=sys.stderr)
        ci = b["auc_ci"]
        t = b["tpr_at_fpr"]
        rows.append([split, str(b["n_members"]), str(b["n_nonmembers"]),
                     f"{b['auc']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]", pct(t["0.01"]), pct(t["0.05"])])
        L, D = o["lengths"], o["dates"]
        cues.append([split, f"{L['members']['mean']:.1f} / {L['nonmembers']['mean']:.1f}",
                     f"{L['ks']['pvalue']:.2g}",
                     f"{pct(D['members']['share_texts_with_year_ge_cutoff'])} / "
                     f"{pct(D['nonmembers']['share_texts_with_year_ge_cutoff'])}",
                     pct(o["ngram_overlap"]["13"]["fraction"]),
                     ", ".join(list(dict.fromkeys(f["ngram"].strip() for f in b["top_features"]["nonmember"]))[:5])])
        results[split] = {
            "n_members": b["n_members"], "n_nonmembers": b["n_nonmembers"],
            "auc": b["auc"], "auc_ci": ci, "tpr_at_fpr": t, "tpr_at_fpr_ci": b["tpr_at_fpr_ci"],
            "folds": b["folds"], "model": b["model"], "seconds": round(dt, 1),
            "lengths": L, "dates": D, "ngram_overlap": o["ngram_overlap"],
            "n_exact_dup": o["duplicates"]["n_exact_pairs"], "n_near_dup": o["duplicates"]["n_near_pairs"],
        }

    def table(header, body):
        w = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
        out = [" | ".join(c.ljust(w[i]) for i, c in enumerate(header)),
               "-|-".join("-" * x for x in w)]
        out += [" | ".join(c.ljust(w[i]) for i, c in enumerate(r)) for r in body]
        return "\n".join(out)

    print(table(["split", "n members", "n non-members", "blind AUC [95% CI]", "TPR@1% FPR", "TPR@5% FPR"], rows))
    print()
    print(table(["split", "mean words (mem / non)", "KS p", f"year >= {args.year_cutoff} (mem / non)",
                 "13-gram overlap", "top non-member cues"], cues))
    if args.json:
        args.json.write_text(json.dumps({"seed": args.seed, "folds": args.folds, "results": results}, indent=2))
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
