"""What the verbatim extraction audit (Carlini et al. 2023, Definition 3.1; ``mia_core.extraction``) finds on real
public text with the embedded SmolLM2-135M, whose training data are not published text by text: which kinds of
text a model reproduces that no one can say it was "trained on your copy" of.

Sets (``../shared/data``, these machines only), each cut into texts of at least k + m tokens:

* ``gutenberg-license``: the Project Gutenberg licence's opening, 60 words (the same boilerplate in many books, copied all
  over the web), one text per distinct wording;
* ``gutenberg-opening``: each of the 84 books' first passage after the header (famous first lines);
* ``gutenberg-middle``: one passage from the middle of each book;
* ``wikimia24-old`` / ``wikimia24-new``: WikiMIA-24 (length 128) texts labelled member (older Wikipedia) and
  non-member (events of 2024).

For each: the extractable share with its 95 % Wilson interval, the mean matched length, and the texts that are
extractable (their first words). Prints the CPU and the fp32 matmul roof measured in the same run.

    python benchmarks/extraction.py [--k 32] [--m 32] [--n 84]

Measured (2026-11-28, 2-core AMD EPYC, fp32 roof 131-191 GFLOP/s): SmolLM2-135M reproduces none of the texts of
any set, at k = m = 32 and at k = m = 16 (0 of 75 licence wordings, 0 of 84 in each other set; the 95 % Wilson
upper bound 4.4-4.9 %); the mean matched length is 0.0-1.0 tokens. The bundled demo target (a LoRA fine-tune on its
100 members) reproduces none of its members either at k = m = 16 (0 of 100 against 0 of 100), while its members'
suffix log-likelihood separates them (AUC 0.684 [0.609, 0.754]): verbatim extraction is far rarer than the
membership signal a loss-based score finds, as Carlini et al. 2023 report for small models.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _words(text: str, start: int, n: int) -> str:
    return " ".join(text.split()[start:start + n])


def gutenberg_sets(n: int) -> dict[str, list[str]]:
    from mia_core.documents.books import strip_gutenberg

    books = sorted((SHARED / "gutenberg").glob("pg*.txt"))[:n]
    license_, opening, middle = set(), [], []
    for b in books:
        raw = b.read_text(encoding="utf-8", errors="replace")
        body = strip_gutenberg(raw)[0]
        m = re.search(r"This eBook is for the use of anyone anywhere.*", raw, flags=re.S)
        if m:
            license_.add(_words(m.group(0), 0, 60))  # the licence sentence, before the book's title
        opening.append(_words(body, 0, 90))
        middle.append(_words(body, len(body.split()) // 2, 90))
    return {"gutenberg-license": sorted(license_), "gutenberg-opening": opening, "gutenberg-middle": middle}


def wikimia_sets(n: int) -> dict[str, list[str]]:
    rows = [json.loads(x) for x in (SHARED / "wikimia" / "WikiMIA-24_length128.jsonl").read_text().splitlines()]
    return {"wikimia24-old": [r["input"] for r in rows if r["label"] == 1][:n],
            "wikimia24-new": [r["input"] for r in rows if r["label"] == 0][:n]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--m", type=int, default=32)
    ap.add_argument("--n", type=int, default=84)
    args = ap.parse_args()
    from cache_verify import _cpu, _roof

    print(f"CPU: {_cpu()}, {os.cpu_count()} logical CPUs; fp32 matmul roof {_roof():.0f} GFLOP/s", flush=True)
    import numpy as np

    from mia_core.extraction.audit import share, text_row
    from mia_core.models import load_causal_lm
    from mia_core.stats import StatsSettings, compute_stats

    lm = load_causal_lm("smollm2")
    sets = {**gutenberg_sets(args.n), **wikimia_sets(args.n)}
    print(f"model {lm.name}; k = {args.k} prompt tokens, m = {args.m} tokens to reproduce\n")
    print(f"{'set':<20} {'texts':>5} {'scored':>6}  {'extractable':<28} {'mean matched':>12}  s")
    for name, texts in sets.items():
        t0 = time.time()
        stats = compute_stats(lm, texts, StatsSettings())
        rows = [text_row(s, args.k, args.m) for s in stats]
        kept = [(r, t) for r, t in zip(rows, texts) if r["matched"] == r["matched"]]
        flags = np.array([r["extractable"] for r, _ in kept], dtype=bool)
        sh = share(flags)
        lo, hi = sh["ci"] or (float("nan"), float("nan"))
        mean = np.mean([r["matched"] for r, _ in kept]) if kept else float("nan")
        print(f"{name:<20} {len(texts):>5} {len(kept):>6}  {sh['extractable']:>3} = {sh['rate']:6.1%} "
              f"[{lo:5.1%}, {hi:5.1%}]   {mean:12.1f}  {time.time() - t0:.0f}", flush=True)
        for (r, t) in [(r, t) for r, t in kept if r["extractable"]][:3]:
            print(f"    extractable: {t[:90]!r}")


if __name__ == "__main__":
    main()
