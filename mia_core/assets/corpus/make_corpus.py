"""Rebuild the bundled reference corpus in mia_core/assets/corpus (DC-PDD's default token
frequencies, ``mia_core.stats.token_frequency``) from public-domain Project Gutenberg books.

Source: the Project Gutenberg files in shared/data/gutenberg (see shared/data/PROVENANCE.md;
public domain in the USA). Eight novels from 1791 to 1922, British and American, none of
them a source of the demo (mia_core/assets/demo) or of the test paragraphs (tests/data), so
the frequency table never counts an audited demo text. Each book: the Gutenberg header and
footer (licence boilerplate) stripped, paragraphs (blank-line separated) unwrapped to one line
with whitespace collapsed, paragraphs separated by a blank line; saved UTF-8, gzip-compressed
with a zero timestamp (the same bytes on every rebuild).

Run from the project root (with mia_core installed, ``pip install -e .``):
python mia_core/assets/corpus/make_corpus.py [GUTENBERG_FOLDER]
"""
import gzip
import re
import sys
from pathlib import Path

from mia_core.documents import strip_gutenberg

ROOT = Path(__file__).resolve().parents[3]
SRC = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "data" / "gutenberg"
OUT = Path(__file__).resolve().parent
BOOKS = [
    "pg22002_inchbald_a_simple_story.txt",
    "pg51060_poe_arthur_gordon_pym.txt",
    "pg2522_gaskell_dark_nights_work.txt",
    "pg45506_abbott_flatland.txt",
    "pg13944_jefferies_after_london.txt",
    "pg10743_falkner_moonfleet.txt",
    "pg12441_nicholson_house_of_a_thousand_candles.txt",
    "pg19307_mundy_lion_of_petra.txt",
]


def clean(name: str) -> str:
    """One book of ``SRC`` as the corpus stores it: the Gutenberg header and footer stripped, each paragraph on
    one line with its whitespace collapsed, paragraphs separated by a blank line, a final newline.
    """
    body, _ = strip_gutenberg((SRC / name).read_text(encoding="utf-8"))
    paras = (" ".join(p.split()) for p in re.split(r"\n\s*\n", body))
    return "\n\n".join(p for p in paras if p) + "\n"


if __name__ == "__main__":
    for old in OUT.glob("*.txt.gz"):
        old.unlink()
    for name in BOOKS:
        text = clean(name)
        data = gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)
        (OUT / (Path(name).stem + ".txt.gz")).write_bytes(data)
        print(f"{name}: {len(text):,} characters, {len(data):,} bytes gzipped")
