"""Text sets: members (label 1), non-members (label 0) and population sets, with set-level checks.

:func:`read_texts` reads one input (a ``.txt`` file, a table, a ``.zip`` or a folder of
``.txt`` files, an upload, a hub dataset ``hf:ID[:config][@split]``: :mod:`.hub`) into
records; :func:`load_dataset` and :func:`texts_from_strings`
build a :class:`Dataset` of members and non-members (short texts and exact duplicates dropped
and reported, empty sets and texts in both sets refused, ids); :func:`read_population` reads a
one-role set (the population of known non-members that sets a threshold, training samples).
Texts longer than ``max_text_chars()`` characters are refused as they are read
(:func:`~mia_core.data.decoding.check_text_length`). The texts-in-both-sets check compares
:func:`overlap_key` (Unicode NFC, whitespace collapsed), so the same text spelled in NFC and in
NFD is caught; the texts are kept and scored exactly as given.
"""
from __future__ import annotations

import hashlib
import os
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DataError, SettingsError, safe_text
from ..formatting import counted
from .decoding import (MAX_BYTES, SUPPORTED_TEXT_SETS, TEXT_SUFFIXES, _display_name, _folder_txt_contents,
                       _is_filelike, _read_bytes, _suffix, _zip_txt_members, check_text_length, decode_bytes)
from .hub import is_hub_spec, read_hub_dataset
from .records import Record, _split_plain
from .tables import (ARROW_SUFFIXES, _records_from_table, _table_from_arrow, _table_from_text, hf_dataset_files,
                     is_hf_dataset_folder)

_MODES = ("auto", "lines", "blank")


@dataclass
class Dataset:
    """Texts with membership labels (1 = member, 0 = non-member), ready for the attacks."""
    texts: list[str]
    labels: np.ndarray
    ids: list[str]
    groups: list[str] | None = None
    sources: list[str] = field(default_factory=list)
    report: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.labels = np.asarray(self.labels, dtype=np.int64).reshape(-1)
        n = len(self.texts)
        if not self.sources:
            self.sources = [f"text {i + 1}" for i in range(n)]
        lengths = {len(self.labels), len(self.ids), len(self.sources)}
        if self.groups is not None:
            lengths.add(len(self.groups))
        if lengths != {n}:
            raise DataError("texts, labels, ids, groups and sources must have the same length.")

    def __len__(self) -> int:
        return len(self.texts)

    def members(self) -> list[str]:
        """The member texts (label 1), in order."""
        return [t for t, y in zip(self.texts, self.labels) if y == 1]

    def nonmembers(self) -> list[str]:
        """The non-member texts (label 0), in order."""
        return [t for t, y in zip(self.texts, self.labels) if y == 0]

    @property
    def n_members(self) -> int:
        """How many texts are members."""
        return int(np.sum(self.labels == 1))

    @property
    def n_nonmembers(self) -> int:
        """How many texts are non-members."""
        return int(np.sum(self.labels == 0))

    def subset(self, idx) -> "Dataset":
        """A new Dataset with the texts at ``idx`` (integer indices or a boolean mask)."""
        arr = np.asarray(idx)
        if arr.dtype == bool:
            if arr.shape[0] != len(self):
                raise DataError(f"boolean mask of length {arr.shape[0]} for {len(self)} texts.")
            sel = np.flatnonzero(arr).tolist()
        else:
            sel = [int(i) for i in arr.reshape(-1)]
        return Dataset(
            texts=[self.texts[i] for i in sel],
            labels=self.labels[sel] if sel else np.zeros(0, dtype=np.int64),
            ids=[self.ids[i] for i in sel],
            groups=None if self.groups is None else [self.groups[i] for i in sel],
            sources=[self.sources[i] for i in sel],
            report=list(self.report),
        )


# --------------------------------------------------------------------------------------
# public readers
# --------------------------------------------------------------------------------------
def _one_text_per_file(files, where: str, label: str, notes: list[str]) -> list[Record]:
    """Records of a folder or a .zip of .txt files: ``files`` yields (name for decoding notes,
    source, bytes); one text per file, empty files skipped."""
    records = []
    for decode_name, source, data in files:
        text, _ = decode_bytes(data, decode_name, notes)
        text = text.strip()
        if text:
            records.append(Record(text, source))
    if not records:
        raise DataError(f"the .txt files in {where} hold no text.")
    notes.append(f"{label}: read {counted(len(records), 'texts')}, one per .txt file.")
    return records


def read_texts(path, *, mode: str = "auto", text_column: str | None = None, label_column: str | None = None,
               group_column: str | None = None, max_bytes: int = MAX_BYTES,
               notes: list[str] | None = None) -> list[Record]:
    """Read one input (path, or an uploaded file-like object with ``name`` and ``getvalue()``).

    Returns one :class:`Record` per text, in file order. Empty texts are dropped (counted in
    ``notes``, a list this function appends human-readable notes to). Set-level checks
    (duplicates, overlap, empty sets) are done by :func:`load_dataset`.
    Raises ``DataError`` when the file is missing, empty, binary, too large, in an unsupported
    format, has no usable text, holds a text longer than ``max_text_chars()`` characters
    (:func:`~mia_core.data.decoding.check_text_length`), or (tables) lacks the text/label/group
    column or holds unknown labels.
    """
    records = _read_texts(path, mode=mode, text_column=text_column, label_column=label_column,
                          group_column=group_column, max_bytes=max_bytes, notes=notes if notes is not None else [])
    for r in records:  # before any tokenizer sees it (a fast tokenizer aborts on a 50 MB text)
        check_text_length(r.text, r.source)
    return records


def is_frame(obj) -> bool:
    """A pandas DataFrame or Series (read by its text column, never iterated as a list of texts)."""
    import pandas as pd

    return isinstance(obj, (pd.DataFrame, pd.Series))


def read_frame(frame, *, name: str | None = None, text_column: str | None = None, label_column: str | None = None,
               group_column: str | None = None, notes: list[str] | None = None) -> list[Record]:
    """Records of a pandas DataFrame (or Series), read like a table file: the text column found as in a .csv
    file (``text``, ``input``, ``content``, ``sentence``, ``document``, else the only column of texts;
    ``text_column`` overrides), optional label / group / ``id`` columns, empty texts dropped and noted, a
    column of numbers, lists or mappings refused (:func:`~mia_core.data.tables.check_text_column`), every text
    checked against ``max_text_chars()``. A Series is one column: its values are the texts. ``name``: how
    messages call it (default "the DataFrame" / "the Series"); sources are ``NAME:row 1``, ``NAME:row 2``..."""
    import pandas as pd

    notes = notes if notes is not None else []
    if isinstance(frame, pd.Series):
        name = name or "the Series"
        col = str(frame.name) if frame.name is not None else "text"
        if text_column is not None and text_column != col:
            raise DataError(f"{name} is one column ({col!r}); {{text_column}} {text_column!r} names another.",
                            options=("text_column",))
        df, text_column = pd.DataFrame({col: frame.tolist()}), col
    elif isinstance(frame, pd.DataFrame):
        name = name or "the DataFrame"
        labels = [str(c) for c in frame.columns]
        if len(set(labels)) != len(labels):
            raise DataError(f"{name} has two columns of the same name ({', '.join(map(repr, labels))}).")
        df = frame.copy(deep=False)  # its columns are renamed to strings below: the caller's frame is untouched
    else:
        raise DataError(f"{name or 'the input'} is not a pandas DataFrame or Series.")
    sources = [f"{name}:row {i + 1}" for i in range(len(df))]
    records = _records_from_table(df, sources, name, text_column, label_column, group_column, notes)
    if not records:
        raise DataError(f"{name} has no usable text.")
    for r in records:
        check_text_length(r.text, r.source)
    return records


def path_exists(p) -> bool:
    """``os.path.exists`` that says False (never raises) for a name the system cannot hold (too long, a NUL)."""
    try:
        return os.path.exists(os.path.expanduser(os.fspath(p)))
    except (OSError, TypeError, ValueError):
        return False


def _shown_path(p, limit: int = 200) -> str:
    """A path as messages show it: one line, at most ``limit`` characters."""
    s = safe_text(os.fspath(p)) if isinstance(p, (str, os.PathLike)) else safe_text(p)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _read_texts(path, *, mode: str, text_column: str | None, label_column: str | None, group_column: str | None,
                max_bytes: int, notes: list[str]) -> list[Record]:
    if mode not in _MODES:
        raise SettingsError(f"mode must be one of {', '.join(_MODES)}; got {mode!r}.")
    if is_frame(path):  # before _is_filelike: a DataFrame with a column named "read" has a .read
        return read_frame(path, text_column=text_column, label_column=label_column, group_column=group_column,
                          notes=notes)
    if is_hub_spec(path):  # hf:ID[:config][@split]: the hub's parquet conversion, one table
        return read_hub_dataset(path, text_column=text_column, label_column=label_column, group_column=group_column,
                                max_bytes=max_bytes, notes=notes)
    if not _is_filelike(path):
        if not isinstance(path, (str, os.PathLike)):
            raise DataError(f"give a file path, not {type(path).__name__}: {_shown_path(path)}")
        p = Path(path).expanduser()
        try:
            p.stat()
        except FileNotFoundError:
            raise DataError(f"file not found: {_shown_path(p)}") from None
        except OSError as e:  # a name longer than the system allows, a component that is a file...
            raise DataError(f"{_shown_path(p)} cannot be read ({e.strerror or type(e).__name__})") from None
        except ValueError:  # a NUL character in the name
            raise DataError(f"{_shown_path(p)} is not a valid file name (it holds a NUL character)") from None
        if p.is_dir() and is_hf_dataset_folder(p):  # datasets.Dataset.save_to_disk: its .arrow files, one table
            frames, sources = [], []
            for f in hf_dataset_files(p):
                fname, data = _read_bytes(f, max_bytes)
                df, src = _table_from_arrow(data, f"{p.name}/{f.name}", ".arrow")
                frames.append(df)
                sources += src
            import pandas as pd

            df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
            records = _records_from_table(df, sources, p.name, text_column, label_column, group_column, notes)
            if not records:
                raise DataError(f"{p.name} has no usable text.")
            return records
        if p.is_dir():
            files = ((str(f.relative_to(p)), f"{p.name}/{f.relative_to(p)}", data)
                     for f, data in _folder_txt_contents(p, max_bytes))
            return _one_text_per_file(files, str(p), p.name, notes)
    name, data = _read_bytes(path, max_bytes)
    suffix = _suffix(path)
    if suffix == ".zip":
        members = ((f"{name}:{member}", f"{name}:{member}", raw)
                   for member, raw in _zip_txt_members(data, name, max_bytes) if raw)
        return _one_text_per_file(members, name, name, notes)
    if suffix in ARROW_SUFFIXES:
        df, sources = _table_from_arrow(data, name, suffix)
        records = _records_from_table(df, sources, name, text_column, label_column, group_column, notes)
        if not records:
            raise DataError(f"{name} has no usable text.")
        return records
    if suffix not in TEXT_SUFFIXES and suffix not in (".csv", ".tsv", ".jsonl", ".ndjson", ".json"):
        raise DataError(f"{name}: unsupported format {suffix!r}; give a {SUPPORTED_TEXT_SETS} file.")
    text, _ = decode_bytes(data, name, notes)
    if not text.strip():
        raise DataError(f"{name} has no usable text (only empty lines or spaces).")
    if suffix in TEXT_SUFFIXES:
        if label_column is not None:
            raise DataError(f"{name} is plain text and has no label column; give a .csv, .tsv, .jsonl or .json "
                            f"file with a {label_column!r} column.")
        records = _split_plain(text, name, mode, notes)
    else:
        df, sources = _table_from_text(text, name, suffix)
        records = _records_from_table(df, sources, name, text_column, label_column, group_column, notes)
    if not records:
        raise DataError(f"{name} has no usable text.")
    return records


def _input_name(path) -> str:
    """How messages name one input: the file's name, the ``hf:...`` spec as given, or "the DataFrame"."""
    if is_frame(path):
        import pandas as pd

        return "the DataFrame" if isinstance(path, pd.DataFrame) else "the Series"
    return _shown_path(path) if is_hub_spec(path) else _display_name(path)


def _read_many(paths, role: str, notes: list[str], **kw) -> list[Record]:
    if paths is None:
        return []
    if isinstance(paths, (list, tuple)):
        out: list[Record] = []
        for p in paths:
            out.extend(read_texts(p, notes=notes, **kw))
        return out
    return read_texts(paths, notes=notes, **kw)


def _build(records: list[Record], notes: list[str], *, min_chars: int = 1, want_groups: bool = False,
           member_src: str = "the members", nonmember_src: str = "the non-members") -> Dataset:
    """Set-level checks: short texts, duplicates, empty sets, overlap; ids and the Dataset."""
    for r in records:
        if r.label not in (0, 1):
            raise DataError(f"{r.source} has no membership label.")
    role = {1: "members", 0: "non-members"}

    if min_chars > 1:
        short = [r for r in records if len(r.text) < min_chars]
        if short:
            records = [r for r in records if len(r.text) >= min_chars]
            for lab in (1, 0):
                n = sum(1 for r in short if r.label == lab)
                if n:
                    notes.append(f"{role[lab]}: dropped {counted(n, 'texts')} shorter than {min_chars} characters "
                                 f"(first: {', '.join([r.source for r in short if r.label == lab][:3])}).")

    first_of: dict[tuple[int, str], Record] = {}
    for lab in (1, 0):
        dups = []
        for r in records:
            if r.label != lab:
                continue
            key = (lab, r.text)
            if key in first_of:
                dups.append((r, first_of[key]))
            else:
                first_of[key] = r
        if dups:
            ex = "; ".join(f"{d.source} repeats {f.source}" for d, f in dups[:5])
            notes.append(f"{role[lab]}: dropped {counted(len(dups), 'exact duplicates')} ({ex}"
                         f"{' ...' if len(dups) > 5 else ''}).")
    kept = [r for r in records if first_of[(r.label, r.text)] is r]

    n_mem = sum(1 for r in kept if r.label == 1)
    n_non = sum(1 for r in kept if r.label == 0)
    if n_mem == 0:
        raise DataError(f"no members given: {member_src} hold no usable text (label 1).")
    if n_non == 0:
        raise DataError(f"no non-members given: {nonmember_src} hold no usable text (label 0).")

    # the same text in both sets, also when it is spelled with other Unicode code points (NFC vs
    # NFD "café") or other whitespace: compared on overlap_key; the texts themselves are scored as given
    member_key: dict[bytes, Record] = {}
    for r in kept:
        if r.label == 1:
            member_key.setdefault(overlap_key(r.text), r)
    both = [(member_key[k], r) for r in kept if r.label == 0 and (k := overlap_key(r.text)) in member_key]
    if both:
        raise in_both_sets(both, "text", (len(member_key), len({overlap_key(r.text) for r in kept if r.label == 0})))

    # ids: from an id column when every text has one and they are unique, else m0001 / n0001
    file_ids = [r.id for r in kept]
    ids: list[str]
    if all(i is not None for i in file_ids) and len(set(file_ids)) == len(file_ids):
        ids = list(file_ids)
    else:
        if any(i is not None for i in file_ids):
            notes.append("the id column is missing for some texts or repeats values; using generated ids "
                         "(m0001 for members, n0001 for non-members).")
        width = max(4, len(str(max(n_mem, n_non))))
        counters = {1: 0, 0: 0}
        ids = []
        for r in kept:
            counters[r.label] += 1
            ids.append(f"{'m' if r.label == 1 else 'n'}{counters[r.label]:0{width}d}")

    groups = None
    if want_groups:
        missing = [r.source for r in kept if r.group is None]
        if missing:
            raise DataError(f"no group given for {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}.")
        groups = [str(r.group) for r in kept]

    return Dataset(texts=[r.text for r in kept], labels=np.array([r.label for r in kept], dtype=np.int64),
                   ids=ids, groups=groups, sources=[r.source for r in kept], report=notes)


def overlap_key(text: str) -> bytes:
    """What two texts must share to count as the same text in both sets: the digest of the text in
    Unicode NFC with every run of whitespace as one space and no whitespace at either end. So
    ``"café"`` (NFC, U+00E9) and ``"cafe\u0301"`` (NFD, e + combining acute) are the same text, and
    so are two texts that differ only in line wrapping or non-breaking spaces. Only the comparison
    uses it: texts are scored exactly as given."""
    key = " ".join(unicodedata.normalize("NFC", text).split())
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def in_both_sets(both, noun: str = "text", sizes: tuple[int, int] | None = None) -> DataError:
    """The one-line error for items found among the members and the non-members:
    ``both`` holds (member, non-member) pairs of objects with a ``.source`` (and a ``.text``:
    pairs that are not identical character for character are said to differ only in Unicode
    normal form or whitespace). ``sizes``: the two sets' numbers of distinct items; when every item of each is in
    the other, the two sets are one and the message says so (the same file given twice)."""
    distinct = len({id(m) for m, _ in both})
    pairs = "; ".join(f"{m.source} and {n.source}" for m, n in both[:5])
    head = f"{noun} appears in both sets" if len(both) == 1 else f"{len(both)} {noun}s appear in both sets"
    more = " ..." if len(both) > 5 else ""
    spelled = any(getattr(m, "text", None) != getattr(n, "text", None) for m, n in both[:5])
    how = " (the same text up to Unicode normal form (NFC/NFD) and whitespace)" if spelled else ""
    if sizes is not None and distinct == sizes[0] == sizes[1]:
        return DataError(f"the members and the non-members are the same {counted(sizes[0], noun + 's')} (the same "
                         f"file or list given twice?): {head}: {pairs}{more}{how}. An audit compares two different "
                         f"sets: give {noun}s known not to be trained on as the non-members.")
    return DataError(f"{head}: {pairs}{more}{how}. A {noun} cannot be both a member and a non-member; "
                     "remove it from one of the sets.")


def check_two_sets(first, second, names: tuple[str, str] = ("members", "nonmembers"),
                   words: tuple[str, str] = ("member", "non-member")) -> None:
    """Before any model loads, for an audit given two lists of texts (``names``: their options): no empty text
    (``DataError`` naming how many and the first), and no text in both sets (compared as :func:`overlap_key`
    compares; identical sets said as such, a partial overlap with its count and the first pairs)."""

    class _At:
        def __init__(self, text, source):
            self.text, self.source = text, source

    for texts, name, word in zip((first, second), names, words):
        empty = [i for i, t in enumerate(texts) if not str(t).strip()]
        if empty:
            raise DataError(f"{{{name}}}: {len(empty)} of the {len(texts)} {word}s "
                            f"{'is' if len(empty) == 1 else 'are'} empty (the first: {word} {empty[0] + 1}): give "
                            "texts with words, or leave the empty ones out", options=(name,))
    seen: dict[bytes, _At] = {}
    for i, t in enumerate(first):
        seen.setdefault(overlap_key(t), _At(t, f"{words[0]} {i + 1}"))
    keys2 = [overlap_key(t) for t in second]
    both = [(seen[k], _At(t, f"{words[1]} {j + 1}")) for j, (k, t) in enumerate(zip(keys2, second)) if k in seen]
    if both:
        e = in_both_sets(both, "text", (len(seen), len(set(keys2))))
        raise DataError(str(e), options=names)


def load_dataset(members=None, nonmembers=None, labelled=None, *, mode: str = "auto",
                 text_column: str | None = None, label_column: str = "label", group_column: str | None = None,
                 min_chars: int = 1, max_bytes: int = MAX_BYTES) -> Dataset:
    """Members and non-members from two inputs (``members=``, ``nonmembers=``; each a path, an
    uploaded file, or a list of those) or from one labelled table (``labelled=``, with
    ``label_column``).

    Checks: both sets non-empty ("no members given" / "no non-members given"); exact duplicates
    within a set dropped and reported; texts shorter than ``min_chars`` dropped and reported;
    a text in both sets raises ``DataError`` naming its locations in each file (up to 5).
    Ids come from an ``id`` column when every text has a unique one, else ``m0001``/``n0001``.
    ``Dataset.report`` lists what was read and dropped.
    """
    notes: list[str] = []
    kw = dict(mode=mode, text_column=text_column, group_column=group_column, max_bytes=max_bytes)
    if labelled is not None:
        if members is not None or nonmembers is not None:
            raise DataError("give either one labelled file or members and non-members files, not both.")
        lab_name = _input_name(labelled) if not isinstance(labelled, (list, tuple)) else "the labelled files"
        for p in (labelled if isinstance(labelled, (list, tuple)) else [labelled]):
            if is_frame(p):
                continue
            if not _is_filelike(p) and path_exists(p) and not is_hf_dataset_folder(p) and (
                    Path(p).is_dir() or _suffix(p) in TEXT_SUFFIXES | {".zip"}):
                raise DataError(f"{_display_name(p)} has no labels: a labelled file must be a table (.csv, .tsv, "
                                f".jsonl, .json, .parquet, .arrow, .feather or a Hugging Face datasets folder) "
                                f"with a {label_column!r} column.")
        records = _read_many(labelled, "labelled", notes, label_column=label_column or "label", **kw)
        return _build(records, notes, min_chars=min_chars, want_groups=group_column is not None,
                      member_src=f"{lab_name} (no row labelled 1/member)",
                      nonmember_src=f"{lab_name} (no row labelled 0/nonmember)")
    if members is None:
        raise DataError("no members given: pass a members file (texts believed to be in the training data).")
    if nonmembers is None:
        raise DataError("no non-members given: pass a non-members file (texts known not to be in the training data).")
    mem = _read_many(members, "members", notes, **kw)
    non = _read_many(nonmembers, "non-members", notes, **kw)
    for r in mem:
        r.label = 1
    for r in non:
        r.label = 0
    return _build(mem + non, notes, min_chars=min_chars, want_groups=group_column is not None)


def texts_from_strings(member_texts, nonmember_texts, groups=None) -> Dataset:
    """A Dataset from strings (the dashboard's paste boxes, tests).

    Each of ``member_texts``/``nonmember_texts`` is a list of texts, or one string that is split
    like a ``.txt`` file (``mode="auto"``: one text per line, or blank-line-separated paragraphs).
    ``groups``, if given, is one group id per input text, members first then non-members
    (only with lists). Same checks as :func:`load_dataset`.
    """
    notes: list[str] = []
    records: list[Record] = []
    if groups is not None and (isinstance(member_texts, str) or isinstance(nonmember_texts, str)):
        raise DataError("groups can only be given with lists of texts, not with pasted blocks.")
    for lab, role, items in ((1, "members", member_texts), (0, "non-members", nonmember_texts)):
        if items is None:
            items = []
        if isinstance(items, str):
            text = items.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
            recs = _split_plain(text, role, "auto", notes) if text.strip() else []
            for r in recs:
                r.label = lab
            records.extend(recs)
        else:
            empty = 0
            for i, t in enumerate(items, 1):
                t = "" if t is None else str(t).replace("\r\n", "\n").replace("\r", "\n").strip()
                if not t:
                    empty += 1
                records.append(Record(t, f"{role}:{i}", lab))
            if empty:
                notes.append(f"{role}: dropped {counted(empty, 'empty texts')}.")
    if groups is not None:
        groups = list(groups)
        if len(groups) != len(records):
            raise DataError(f"got {len(groups)} group ids for {len(records)} texts; give one per text, "
                            "members first then non-members.")
        for r, g in zip(records, groups):
            r.group = None if g is None else str(g)
    records = [r for r in records if r.text]
    for r in records:
        check_text_length(r.text, r.source)
    return _build(records, notes, want_groups=groups is not None, member_src="the member texts",
                  nonmember_src="the non-member texts")


def read_population(paths, *, mode: str = "auto", text_column: str | None = None, group_column: str | None = None,
                    notes: list[str] | None = None, role: str = "population", dedupe: bool = True,
                    as_dataset: bool = False, max_bytes: int = MAX_BYTES) -> list[Record] | Dataset:
    """Texts of one role from one input or a list of inputs (paths or uploads), in file order.

    The population set (texts known not to be in the training data, other than the evaluated
    non-members) sets the threshold that flags a share alpha of it; the masked-LM audit also
    reads its training samples this way (``role="training samples"``).

    With ``group_column``, an input that lacks that column is read without it and noted
    ("population: pop.csv has no 'patient' column; its texts have no group."). With
    ``dedupe``, exact repeats of an earlier text are dropped and counted in ``notes``
    ("population: dropped 2 exact duplicates."). ``notes`` also receives :func:`read_texts`'
    notes. Raises ``DataError`` for unreadable inputs and when no text is left
    ("the population hold no usable text.").

    Returns the records, or with ``as_dataset`` a :class:`Dataset` labelled 0 with ids
    ``p0000``, ``p0001``, ... (no groups, empty report).
    """
    notes = notes if notes is not None else []
    recs: list[Record] = []
    for path in (list(paths) if isinstance(paths, (list, tuple)) else [paths]):
        try:
            got = read_texts(path, mode=mode, text_column=text_column, group_column=group_column, notes=notes,
                             max_bytes=max_bytes)
        except DataError:
            if not group_column:
                raise
            got = read_texts(path, mode=mode, text_column=text_column, notes=notes, max_bytes=max_bytes)
            notes.append(f"{role}: {_input_name(path)} has no {group_column!r} column; its texts have no group.")
        recs.extend(r for r in got if r.text.strip())
    if dedupe:
        seen, kept, dups = set(), [], 0
        for r in recs:
            if r.text in seen:
                dups += 1
                continue
            seen.add(r.text)
            kept.append(r)
        if dups:
            notes.append(f"{role}: dropped {dups} exact duplicate{'s' if dups != 1 else ''}.")
        recs = kept
    if not recs:
        raise DataError(f"the {role} hold no usable text.")
    if not as_dataset:
        return recs
    return Dataset(texts=[r.text for r in recs], labels=np.zeros(len(recs), dtype=int),
                   ids=[f"p{i:04d}" for i in range(len(recs))], groups=None, sources=[r.source for r in recs],
                   report=[])
