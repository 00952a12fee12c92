"""Group the demo passages into short documents for the offline Document-audit demo.

The demo target (``target/``) was fine-tuned on ``members.txt``; a document made only of member
passages is therefore a member document, one made only of non-member passages a non-member.
This script finds each passage's novel and position in the Project Gutenberg source (the five
books of ``make_demo_data.py``, in shared/data/gutenberg), and deals every set's 20 passages
per book, in reading order, into 4 documents of 5 passages: 20 member and 20 non-member
documents of about 250 words, 4 of each per novel. It writes ``documents.json`` (the line
numbers of each document's passages in ``members.txt`` / ``nonmembers.txt``); the texts are
not copied. ``mia_core.documents.demo_documents()`` reads it.

Run from the project root: python mia_core/assets/demo/make_demo_documents.py [GUTENBERG_FOLDER]
"""
import json
import sys
from pathlib import Path

from mia_core.documents import strip_gutenberg

ROOT = Path(__file__).resolve().parents[3]
SRC = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "data" / "gutenberg"
OUT = Path(__file__).resolve().parent
sys.path.insert(0, str(OUT))
from make_demo_data import BOOKS  # noqa: E402

PER_DOCUMENT = 5


def main():
    """Locate every member and non-member passage in its book, group each set's passages per book in reading
    order into documents of ``PER_DOCUMENT`` and write ``documents.json`` (line numbers, not texts).

    Raises
    ------
    SystemExit
        A passage found in no book or in more than one.
    """
    bodies = [" ".join(strip_gutenberg((SRC / b).read_text(encoding="utf-8"))[0].split()) for b in BOOKS]
    out = {"passages_per_document": PER_DOCUMENT, "books": BOOKS, "sets": {}}
    for s in ("members", "nonmembers"):
        lines = [ln for ln in (OUT / f"{s}.txt").read_text(encoding="utf-8").splitlines() if ln.strip()]
        where = []
        for i, ln in enumerate(lines):
            hits = [(b, body.find(ln)) for b, body in enumerate(bodies) if ln in body]
            if len(hits) != 1:
                raise SystemExit(f"{s} line {i + 1} is in {len(hits)} books, expected 1")
            where.append((hits[0][0], hits[0][1], i))
        docs = []
        for b, name in enumerate(BOOKS):
            mine = [i for bb, _, i in sorted(w for w in where if w[0] == b)]  # reading order
            short = name.split("_", 1)[1].removesuffix(".txt")
            for k in range(0, len(mine), PER_DOCUMENT):
                docs.append({"name": f"{short}_{s[:3]}{k // PER_DOCUMENT + 1}", "book": name,
                             "lines": mine[k:k + PER_DOCUMENT]})
        out["sets"][s] = docs
        print(s, len(docs), "documents")
    rows = ",\n".join(f' "{k}": [\n' + ",\n".join("  " + json.dumps(d) for d in v) + "\n ]" for k, v in out["sets"].items())
    head = json.dumps({k: v for k, v in out.items() if k != "sets"})[:-1]
    (OUT / "documents.json").write_text(head + ', "sets": {\n' + rows + "\n}}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
