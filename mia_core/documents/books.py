"""Step 0 — loading books: whole documents, one per ``.txt`` file, Gutenberg boilerplate stripped.

Meeus et al. (2024, §5.1) audit whole books from Project Gutenberg; the licence header and
footer are the same in every book (members and non-members alike) and are removed before
querying. :func:`load_documents` reads a ``.txt`` file, a folder of ``.txt`` files (searched
recursively), a ``.zip`` of ``.txt`` files, an upload, or a list of those, into
:class:`Document` objects; :func:`strip_gutenberg` keeps the text between the
``*** START OF ...`` and ``*** END OF ...`` lines and reports what it removed. Decoding,
size limits and the zip/folder guards are those of :mod:`mia_core.data.decoding`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..data.decoding import (MAX_BYTES, TEXT_SUFFIXES, _folder_txt_contents, check_path, _is_filelike, _read_bytes, _suffix,
                             _zip_txt_members, check_text_length, decode_bytes)
from ..data.sets import in_both_sets, overlap_key
from ..errors import DataError


@dataclass
class Document:
    """A whole document (book, article) to audit as one unit."""
    name: str
    text: str
    source: str
    strip: dict


_START_RE = re.compile(r"^[ \t]*\*{3}[ \t]*START[ \t]+OF\b[^\n]*$", re.IGNORECASE | re.MULTILINE)
_END_RE = re.compile(r"^[ \t]*\*{3}[ \t]*END[ \t]+OF\b[^\n]*$", re.IGNORECASE | re.MULTILINE)
_END_NOTE_RE = re.compile(r"\n[ \t]*End of (the )?Project Gutenberg[^\n]*(\n[^\n]+)*\s*$", re.IGNORECASE)
_TITLE_RE = re.compile(r"^[ \t]*Title:[ \t]*(\S[^\n]*)((?:\n[ \t]+\S[^\n]*)*)", re.IGNORECASE | re.MULTILINE)


def strip_gutenberg(text: str) -> tuple[str, dict]:
    """Body of a Project Gutenberg file, between its ``*** START OF ...`` and ``*** END OF ...`` lines.

    Tolerates ``***START OF`` (no space), any letter case, a byte-order mark and CRLF newlines
    (newlines are normalised to ``\\n``; counts refer to the normalised text). The
    "End of the Project Gutenberg EBook of ..." note just before the END line is left out
    too. Returns ``(body, report)`` with report keys ``stripped`` (a START or END line was
    found), ``header_chars`` and ``footer_chars`` (characters removed before and after the
    body, surrounding whitespace included) and ``title`` (from a ``Title:`` line of the
    header, continuation lines joined; ``None`` if absent). Without markers the text is
    returned unchanged apart from newline normalisation and trimming.
    """
    t = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    start_m = _START_RE.search(t)
    begin = start_m.end() if start_m else 0
    end_m = _END_RE.search(t, begin)
    end = end_m.start() if end_m else len(t)
    if end_m:
        note = _END_NOTE_RE.search(t[begin:end])
        if note and end - (begin + note.start()) < 1000:
            end = begin + note.start()
    header_region = t[: start_m.start()] if start_m else t[:5000]
    tm = _TITLE_RE.search(header_region)
    title = None
    if tm:
        title = " ".join([tm.group(1).strip()] + [ln.strip() for ln in tm.group(2).split("\n") if ln.strip()])
    raw = t[begin:end]
    lead = len(raw) - len(raw.lstrip())
    body = raw.strip()
    body_start = begin + lead
    body_end = body_start + len(body)
    stripped = bool(start_m or end_m)
    return body, {
        "stripped": stripped,
        "header_chars": body_start,
        "footer_chars": len(t) - body_end,
        "title": title,
    }


def _document(name: str, source: str, data: bytes, strip: bool) -> Document:
    notes: list[str] = []
    text, enc = decode_bytes(data, source, notes)
    if strip:
        body, report = strip_gutenberg(text)
    else:
        body = text.strip()
        report = {"stripped": False, "header_chars": 0, "footer_chars": 0, "title": None}
    report["encoding"] = enc
    report["notes"] = notes
    if not body:
        raise DataError(f"{source} has no text" + (" between its Gutenberg START and END lines." if report["stripped"] else "."))
    check_text_length(body, source, "document")  # scored whole by one tokenizer call: refused here, before any model
    return Document(name=name, text=body, source=source, strip=report)


def load_documents(path_or_paths, *, strip: bool = True, max_bytes: int = MAX_BYTES) -> list[Document]:
    """Documents from a ``.txt`` file, a folder of ``.txt`` files (searched recursively), a
    ``.zip`` of ``.txt`` files, an uploaded file-like object, or a list of those.

    Each document is the whole file; with ``strip=True`` Project Gutenberg headers and footers
    are removed (:func:`strip_gutenberg`), and ``Document.strip`` holds that report plus the
    encoding used. Names are file names without ``.txt``. Raises ``DataError`` for missing,
    empty, binary or oversized inputs, a document longer than ``max_text_chars()`` characters
    (:func:`mia_core.data.decoding.check_text_length`), zips/folders without ``.txt`` files,
    other formats.
    """
    items = list(path_or_paths) if isinstance(path_or_paths, (list, tuple)) else [path_or_paths]
    if not items:
        raise DataError("no documents given.")
    docs: list[Document] = []
    for item in items:
        if not _is_filelike(item):
            p = Path(item).expanduser()
            check_path(p, "document")  # a name longer than the system allows: one line, not an OSError
            if not p.exists():
                raise DataError(f"file not found: {p}")
            if p.is_dir():
                for f, data in _folder_txt_contents(p, max_bytes):
                    docs.append(_document(f.stem, str(f), data, strip))
                continue
        name, data = _read_bytes(item, max_bytes)
        suffix = _suffix(item)
        source = name if _is_filelike(item) else str(Path(item))
        if suffix == ".zip":
            for member, raw in _zip_txt_members(data, name, max_bytes):
                if not raw:
                    raise DataError(f"{name}:{member} is empty.")
                docs.append(_document(Path(member).stem, f"{name}:{member}", raw, strip))
        elif suffix in TEXT_SUFFIXES:
            docs.append(_document(Path(name).stem, source, data, strip))
        else:
            raise DataError(f"{name}: documents must be .txt files, a folder of .txt files or a .zip of .txt files.")
    return docs


def check_document_overlap(members, nonmembers) -> None:
    """Refuse a document given both as a member and as a non-member (the same text after
    stripping, in Unicode NFC with whitespace collapsed: :func:`mia_core.data.sets.overlap_key`):
    ``DataError`` naming up to 5 such pairs by their sources. Cheap; called before any model is
    loaded."""
    first: dict[bytes, Document] = {}
    for d in members:
        first.setdefault(overlap_key(d.text), d)
    both = [(first[h], d) for d in nonmembers if (h := overlap_key(d.text)) in first]
    if both:
        raise in_both_sets(both, "document", (len(first), len({overlap_key(d.text) for d in nonmembers})))


def demo_documents() -> tuple[list[Document], list[Document]]:
    """The Document-audit demo: ``(member_documents, nonmember_documents)``, 20 of each.

    Each document is five demo passages of one novel in reading order (about 250 words,
    ``assets/demo/documents.json``, built by ``assets/demo/make_demo_documents.py``): member
    documents only from ``members.txt``, which the demo target was fine-tuned on, non-member
    documents only from ``nonmembers.txt``. Short documents, not whole books: a target that had
    read whole books would take hours to build and to audit on a CPU, and the steps of Meeus
    et al. (2024) are the same at any length. Raises ``DataError`` when a file is missing.
    """
    import json

    from ..targets.demo import DEMO_DIR, demo_paths

    paths = demo_paths()
    spec_path = DEMO_DIR / "documents.json"
    if not spec_path.exists():
        raise DataError(f"the bundled demo is incomplete, missing: {spec_path}.")
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    out = []
    for role in ("members", "nonmembers"):
        lines = [ln for ln in paths[role].read_text(encoding="utf-8").splitlines() if ln.strip()]
        out.append([Document(name=d["name"], text="\n\n".join(lines[i] for i in d["lines"]),
                             source=f"{paths[role].name} lines {', '.join(str(i + 1) for i in d['lines'])} ({d['book']})",
                             strip={"stripped": False, "header_chars": 0, "footer_chars": 0, "title": None,
                                    "encoding": "utf-8", "notes": []})
                    for d in spec["sets"][role]])
    return out[0], out[1]
