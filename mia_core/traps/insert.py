"""Planting the inserted traps in copies of the owner's documents (Meeus et al. 2024, ``inject_traps.py``), and
checking from the written files that the plan was followed.

Each inserted trap is placed its number of times, each copy at a word boundary (the start of a run of white space
that follows a word: never inside a word) drawn at random, the copies of one trap in different documents where
there are enough documents (the documents taken round-robin in a random order, so that the load is even), the
places within a document drawn uniformly, so the copies spread through it. A copy is written as one space and the
trap before the white space it was placed at (no added space where the trap begins with one). Held-out traps are never written; a held-out trap found in the
documents (an exact copy, or a 13-word sequence shared with them) is a leak: it is said, logged in the record, and
the test then says its p-value is conservative.

The documents are written into a new folder (the ``--out`` rules: in one rename, never into the input folder),
with ``.mia-traps.json`` beside them: the record's seal and the character spans of every copy (no trap text), which
``mia make-target`` reads so that a training window never cuts a copy in two. It is for the owner's own
experiment; publish the documents, not it.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np

from ..errors import DataError
from .options import NGRAM

SUFFIXES = (".txt", ".md")
SPANS = ".mia-traps.json"
MAX_DOCUMENT_BYTES = 64 * 2**20
_WORD = re.compile(r"\w+", re.UNICODE)


def words_of(text: str) -> list[str]:
    """The words of ``text`` as the 13-gram checks read them (letters and digits, lower case)."""
    return [w.lower() for w in _WORD.findall(text)]


def ngrams(text: str, n: int = NGRAM) -> set:
    """The ``n``-word sequences of ``text`` (as tuples)."""
    w = words_of(text)
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def document_files(paths) -> list[Path]:
    """The ``.txt`` / ``.md`` files of ``paths`` (files, or folders searched recursively, hidden names skipped), in
    order; ``DataError`` in one line for a path that is missing or holds none."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw).expanduser()
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.suffix.lower() in SUFFIXES and f.is_file()
                           and not any(part.startswith(".") for part in f.relative_to(p).parts))
            if not found:
                raise DataError(f"{p}: no .txt or .md document in this folder", options=("documents",))
            out += found
        elif p.is_file():
            if p.suffix.lower() not in SUFFIXES:
                raise DataError(f"{p}: documents are .txt or .md files", options=("documents",))
            out.append(p)
        else:
            raise DataError(f"{p}: not found", options=("documents",))
    if len(set(f.resolve() for f in out)) != len(out):
        raise DataError("a document is given twice", options=("documents",))
    return out


def read_document(path: Path) -> str:
    """A document's text (UTF-8, else as the project's readers decode it); one line for an unreadable one."""
    from ..data.decoding import decode_bytes

    try:
        if path.stat().st_size > MAX_DOCUMENT_BYTES:
            raise DataError(f"{path} is over {MAX_DOCUMENT_BYTES // 2**20} MiB", options=("documents",))
        raw = path.read_bytes()
    except OSError as e:
        raise DataError(f"{path} cannot be read ({e.strerror or type(e).__name__})", options=("documents",)) from None
    return decode_bytes(raw, str(path))[0]


def boundaries(text: str) -> np.ndarray:
    """The word boundaries of ``text``: each position where a run of white space begins right after a visible
    character."""
    arr = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32) if text else np.zeros(0, np.uint32)
    space = np.isin(arr, np.frombuffer(" \t\n\r\f\v\u00a0".encode("utf-32-le"), dtype=np.uint32))
    if len(arr) < 2:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(space[1:] & ~space[:-1]) + 1


def free_boundaries(text: str, keep: list[str]) -> np.ndarray:
    """The word boundaries of ``text`` outside every occurrence of the texts ``keep`` (the traps: a copy placed
    inside one already there would break it)."""
    b = boundaries(text)
    for k in keep:
        at = text.find(k)
        while at >= 0:
            b = b[(b <= at) | (b >= at + len(k))]
            at = text.find(k, at + 1)
    return b


def plan(docs: list[tuple[str, str]], inserted: list[dict], seed: int, keep: list[str] = ()) -> dict:
    """Where each copy goes: ``{document name: sorted [(boundary, trap id), ...]}``, never inside an occurrence of
    ``keep`` (every trap's text); ``DataError`` (nothing written) when the documents have fewer word boundaries than
    the plan has copies."""
    rng = np.random.default_rng(seed)
    free = [free_boundaries(t, list(keep)) for _, t in docs]
    cap = np.array([len(f) for f in free])
    total = sum(int(t["copies"]) for t in inserted)
    if total > int(cap.sum()):
        raise DataError(f"the documents have {int(cap.sum()):,} word boundaries in all and the plan places {total:,} "
                        "copies: give more or longer documents, or fewer traps or repetitions", options=("documents",))
    order = list(rng.permutation(len(docs)))
    load = np.zeros(len(docs), dtype=np.int64)
    wanted: dict[int, list] = {}
    pos = 0
    for t in [inserted[i] for i in rng.permutation(len(inserted))]:
        used: set = set()
        for _ in range(int(t["copies"])):  # the next document with room, another than this trap's where possible
            ring = [order[(pos + j) % len(order)] for j in range(len(order))]
            room = [d for d in ring if load[d] < cap[d]]
            d = next((d for d in room if d not in used), room[0])
            pos = ring.index(d) + pos + 1
            load[d] += 1
            used.add(d)
            wanted.setdefault(d, []).append(t["id"])
    out = {}
    for d, ids in wanted.items():
        spots = np.sort(rng.choice(free[d], size=len(ids), replace=False))
        out[docs[d][0]] = list(zip(spots.tolist(), [ids[i] for i in rng.permutation(len(ids))]))
    return out


def place(text: str, spots: list, texts: dict) -> tuple[str, list]:
    """``text`` with each trap ``texts[id]`` written at its boundary (" " + trap before the white space there), and
    the copies' character spans in the new text."""
    parts, spans, last, shift = [], [], 0, 0
    for b, tid in spots:
        parts.append(text[last:b])
        trap = texts[tid]
        sep = "" if trap[:1].isspace() else " "  # a trap that begins with white space brings its own
        start = b + shift + len(sep)
        parts.append(sep + trap)
        spans.append([start, start + len(trap), tid])
        shift += len(sep) + len(trap)
        last = b
    parts.append(text[last:])
    return "".join(parts), spans


def leaks(docs: list[tuple[str, str]], held_out: list[dict]) -> list[str]:
    """The held-out traps the documents already hold (an exact copy or a shared 13-word sequence)."""
    grams: set = set()
    for _, t in docs:
        grams |= ngrams(t)
    whole = "\n".join(t for _, t in docs)
    return [t["id"] for t in held_out if t["text"] in whole or ngrams(t["text"]) & grams]


def count_copies(texts: list[str], traps: list[dict]) -> dict:
    """Occurrences of each trap's text in ``texts``, summed."""
    return {t["id"]: sum(x.count(t["text"]) for x in texts) for t in traps}


def file_sha256(path: Path) -> str:
    """The SHA-256 of a written file (the insertion log's digests)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def insert_traps(rec: dict, doc_paths, out, *, seed: int | None = None, overwrite: bool = False,
                 progress=None) -> dict:
    """Write copies of the documents with the inserted traps planted (module docstring), verify them from the
    written files, log the insertion in the record. Returns the log entry (with ``out``, ``files``, ``copies``,
    ``leaks``, ``notes``)."""
    import secrets

    from ..runs.outputs import check_output_dir, staged_output
    from .record import append_insertion, by_group

    progress = progress or (lambda m, f: None)
    files = document_files(doc_paths)
    out_p = check_output_dir(out, overwrite=overwrite)
    roots = [Path(p).expanduser().resolve() for p in doc_paths]
    for r in roots:
        top = r if r.is_dir() else r.parent
        if out_p.resolve() == top or top in out_p.resolve().parents:
            raise DataError(f"{{out}} {out} is inside the documents' folder {top}: give a folder outside it",
                            options=("out",))
    base = Path(doc_paths[0]).expanduser() if len(doc_paths) == 1 and Path(doc_paths[0]).expanduser().is_dir() else None
    names = [str(f.relative_to(base)) if base else f.name for f in files]
    if len(set(names)) != len(names):
        raise DataError("two documents have the same file name: give them in one folder", options=("documents",))
    docs = [(n, read_document(f)) for n, f in zip(names, files)]
    inserted, held = by_group(rec, "inserted"), by_group(rec, "held_out")
    seed = secrets.randbits(32) if seed is None else int(seed)
    where = plan(docs, inserted, seed, keep=[t["text"] for t in inserted + held])
    leaked = leaks(docs, held)
    before = count_copies([t for _, t in docs], inserted + held)
    texts = {t["id"]: t["text"] for t in inserted}
    progress(f"traps: placing {sum(len(v) for v in where.values()):,} copies in {len(docs)} documents", 0.3)
    written, spans = {}, {}
    with staged_output(out, overwrite=overwrite) as tmp:
        for name, text in docs:
            new, sp = place(text, where.get(name, []), texts)
            dest = Path(tmp) / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(new, encoding="utf-8")
            spans[name] = [s[:2] for s in sp]
        # the check, from the files as written: every inserted trap its count, no held-out trap at all
        back = [(Path(tmp) / n).read_text(encoding="utf-8") for n, _ in docs]
        after = count_copies(back, inserted + held)
        wrong = [t["id"] for t in inserted if after[t["id"]] - before[t["id"]] != int(t["copies"])]
        wrong += [t["id"] for t in held if after[t["id"]] != before[t["id"]]]
        if wrong:
            raise DataError(f"the written documents do not hold the planned copies of {len(wrong)} trap(s) "
                            f"({', '.join(wrong[:5])}): nothing written", options=("documents",))
        for n, _ in docs:
            written[n] = file_sha256(Path(tmp) / n)
        (Path(tmp) / SPANS).write_text(json.dumps({"seal": rec["seal"], "spans": spans}), encoding="utf-8")
    notes = []
    if leaked:
        notes.append(f"{len(leaked)} held-out trap(s) are already in the documents ({', '.join(leaked[:5])}): a leak; "
                     "the test stays valid but is then conservative")
    entry = {"out": str(Path(out).expanduser().resolve()), "files": written, "seed": seed,
             "copies": int(sum(len(v) for v in where.values())), "documents": len(docs), "leaks": leaked}
    append_insertion(rec, entry)
    progress("traps: inserted and checked", 1.0)
    return {**entry, "notes": notes}


def training_pieces(text: str, spans: list, tokenizer, max_tokens: int) -> list[str]:
    """``text`` cut into pieces of at most ``max_tokens`` tokens at word boundaries, never inside a span (a trap
    copy): what ``mia make-target`` trains on, one window each. A single span longer than ``max_tokens`` is
    refused in one line."""
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    offs = enc["offset_mapping"]
    n = len(offs)
    inside = np.zeros(len(text) + 1, dtype=bool)
    for a, b in spans:
        inside[a:b + 1] = True
    starts = np.array([o[0] for o in offs], dtype=np.int64)
    ok = np.array([(s > 0 and not inside[s] and (text[s - 1].isspace() or text[s].isspace())) for s in starts.tolist()])
    pieces, first = [], 0
    while first < n:
        last = min(first + max_tokens, n)
        if last < n:
            cut = last
            while cut > first and not ok[cut]:
                cut -= 1
            if cut == first:
                raise DataError(f"a stretch of {max_tokens} tokens holds no place to cut outside a trap copy: raise "
                                "{max_length}", options=("max_length",))
            last = cut
        a = int(starts[first]) if first else 0
        b = int(starts[last]) if last < n else len(text)
        pieces.append(text[a:b])
        first = last
    return [p for p in pieces if p.strip()]
