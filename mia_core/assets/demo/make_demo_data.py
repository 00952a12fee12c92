"""Rebuild the demo text sets in mia_core/assets/demo from the public-domain Gutenberg books.

Source: the Project Gutenberg files in shared/data/gutenberg (see shared/data/PROVENANCE.md;
public domain in the USA). Five lesser-known novels (chosen so that the embedded SmolLM2 is
unlikely to have memorised them verbatim); from each, every paragraph of 40-60 words that
is plain narrative (no chapter headings, all-caps lines, brackets or _italics_ markers) is
a candidate; 60 are drawn per book at random (seed 0) and dealt 20/20/20 into
members.txt, nonmembers.txt and population.txt, so every set draws equally from every book
(distribution-matched by construction). One passage per line, whitespace collapsed.

Run from the project root (with mia_core installed, ``pip install -e .``):
python mia_core/assets/demo/make_demo_data.py [GUTENBERG_FOLDER]
"""
import random
import re
import sys
from pathlib import Path

from mia_core.documents import strip_gutenberg

ROOT = Path(__file__).resolve().parents[3]

SRC = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "data" / "gutenberg"
OUT = Path(__file__).resolve().parent
BOOKS = [
    "pg21930_jacobs_salthaven.txt",
    "pg26417_mann_sheaf_of_corn.txt",
    "pg31471_jordan_girl_in_the_mirror.txt",
    "pg40659_cambridge_materfamilias.txt",
    "pg41137_gallon_dead_mans_love.txt",
]
PER_BOOK = 60
SETS = ("members", "nonmembers", "population")
MIN_WORDS, MAX_WORDS = 40, 60


def passages(name: str) -> list[str]:
    """The candidate passages of one book of ``SRC``: its plain-narrative paragraphs of ``MIN_WORDS`` to
    ``MAX_WORDS`` words (no all-caps lines, chapter headings, ``_italics_``, brackets or Gutenberg mentions),
    whitespace collapsed, repeats dropped, in book order.
    """
    body, _ = strip_gutenberg((SRC / name).read_text(encoding="utf-8"))
    out = []
    for p in re.split(r"\n\s*\n", body):
        p = " ".join(p.split())
        n = len(p.split())
        if not (MIN_WORDS <= n <= MAX_WORDS):
            continue
        if p.isupper() or "CHAPTER" in p or "_" in p or "[" in p or "gutenberg" in p.lower():
            continue
        out.append(p)
    return sorted(set(out), key=out.index)  # unique, in book order


def main():
    """Draw ``PER_BOOK`` passages per book (seed 0), deal them equally into the three sets, shuffle each and
    write ``members.txt``, ``nonmembers.txt`` and ``population.txt`` (one passage per line).
    """
    rng = random.Random(0)
    sets = {s: [] for s in SETS}
    for name in BOOKS:
        ps = passages(name)
        chosen = rng.sample(ps, PER_BOOK)
        k = PER_BOOK // len(SETS)
        for j, s in enumerate(SETS):
            sets[s].extend(chosen[j * k:(j + 1) * k])
    for s in SETS:
        rng.shuffle(sets[s])
        (OUT / f"{s}.txt").write_text("\n".join(sets[s]) + "\n", encoding="utf-8")
        print(s, len(sets[s]), "passages")


if __name__ == "__main__":
    main()
