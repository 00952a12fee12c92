"""Reading and validating the texts to audit.

Two kinds of input:

* **Text sets** (:func:`load_dataset`, :func:`read_texts`, :func:`texts_from_strings`): members
  (texts believed to be in the training data, label 1) and non-members (label 0), either as
  two files or one labelled file. Formats:

  - ``.txt``: one text per line (``mode="lines"``) or blank-line-separated paragraphs
    (``mode="blank"``); ``mode="auto"`` picks paragraphs when the file is made of
    multi-line paragraphs separated by blank lines.
  - ``.csv`` / ``.tsv`` / ``.jsonl`` / ``.json`` (a list of objects): a text column
    (``text``, ``input``, ``content``, ``sentence`` or ``document``, else the only string
    column; ``text_column`` overrides), an optional label column (1/0, true/false,
    member/nonmember), an optional group column and an optional ``id`` column.
  - ``.zip`` of ``.txt`` files, or a folder of ``.txt`` files: one text per file.

* **Documents** (:func:`load_documents`): whole books or articles, one per ``.txt`` file (a file,
  a folder, a ``.zip``, or a list of those), with Project Gutenberg headers and footers
  stripped (:func:`strip_gutenberg`).

Validation raises :class:`~mia_core.errors.DataError` with one clear sentence (never a
traceback): missing, empty, binary or oversized files, zips without ``.txt`` files or that
unpack to too much data, unknown label values, tables without a text column, empty member or
non-member sets, and texts present in both sets. Encodings: UTF-8 (with or without BOM),
UTF-16/32 with a BOM (or BOM-less UTF-16 recognised by its NUL pattern), else Windows-1252,
else Latin-1 (which maps every byte, so nothing is lost); a fallback is noted in the report.
Newlines are normalised to ``\\n`` and each text is trimmed at both ends; nothing else is
changed. Only text formats are read: nothing is ever unpickled.

Source locations (used in messages): ``members.txt:12`` (line 12; for paragraphs, the line
the paragraph starts on), ``data.jsonl:12`` (line), ``data.csv:row 3`` (spreadsheet row,
the header being row 1), ``data.json:item 3`` and ``books.zip:dir/a.txt``.
"""
from __future__ import annotations

import codecs
import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import DataError, SettingsError

MAX_BYTES = 200 * 2**20
SUPPORTED_TEXT_SETS = ".txt, .csv, .tsv, .jsonl, .json or .zip (of .txt files)"
TEXT_SUFFIXES = {".txt", ".text", ".md", ""}
TEXT_COLUMN_NAMES = ("text", "input", "content", "sentence", "document")
MAX_ZIP_MEMBERS = 100_000
_MODES = ("auto", "lines", "blank")

_LABEL_VALUES = {
    "1": 1, "0": 0, "1.0": 1, "0.0": 0,
    "true": 1, "false": 0, "t": 1, "f": 0, "yes": 1, "no": 0,
    "member": 1, "members": 1,
    "nonmember": 0, "non-member": 0, "non_member": 0, "non member": 0,
    "nonmembers": 0, "non-members": 0, "non_members": 0,
}


# --------------------------------------------------------------------------------------
# data classes
# --------------------------------------------------------------------------------------
@dataclass
class Record:
    """One text as read from a file, before the set-level checks of :func:`load_dataset`."""
    text: str
    source: str
    label: int | None = None
    group: str | None = None
    id: str | None = None


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
        return [t for t, y in zip(self.texts, self.labels) if y == 1]

    def nonmembers(self) -> list[str]:
        return [t for t, y in zip(self.texts, self.labels) if y == 0]

    @property
    def n_members(self) -> int:
        return int(np.sum(self.labels == 1))

    @property
    def n_nonmembers(self) -> int:
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


@dataclass
class Document:
    """A whole document (book, article) to audit as one unit."""
    name: str
    text: str
    source: str
    strip: dict


# --------------------------------------------------------------------------------------
# bytes in, text out
# --------------------------------------------------------------------------------------
def _human(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def _is_filelike(obj) -> bool:
    return hasattr(obj, "getvalue") or (hasattr(obj, "read") and not isinstance(obj, (str, Path)))


def _display_name(path) -> str:
    if _is_filelike(path):
        return Path(str(getattr(path, "name", "upload"))).name or "upload"
    return Path(path).name


def _read_bytes(path, max_bytes: int) -> tuple[str, bytes]:
    """(display name, content) of a path or an uploaded file-like object, size-checked."""
    if _is_filelike(path):
        name = _display_name(path)
        size = getattr(path, "size", None)
        if isinstance(size, int) and size > max_bytes:
            raise DataError(f"{name} is {_human(size)}, above the {_human(max_bytes)} limit; split it or raise max_bytes.")
        data = path.getvalue() if hasattr(path, "getvalue") else path.read()
        if isinstance(data, str):
            data = data.encode("utf-8")
        if len(data) > max_bytes:
            raise DataError(f"{name} is {_human(len(data))}, above the {_human(max_bytes)} limit; split it or raise max_bytes.")
        return name, bytes(data)
    p = Path(path).expanduser()
    if not p.exists():
        raise DataError(f"file not found: {p}")
    if p.is_dir():
        raise DataError(f"{p} is a folder, not a file.")
    size = p.stat().st_size
    if size > max_bytes:
        raise DataError(f"{p.name} is {_human(size)}, above the {_human(max_bytes)} limit; split it or raise max_bytes.")
    try:
        return p.name, p.read_bytes()
    except OSError as e:
        raise DataError(f"cannot read {p}: {e.strerror or e}.") from None


def _utf16_without_bom(data: bytes) -> str | None:
    """'utf-16-le'/'utf-16-be' when the NUL bytes follow the pattern of mostly-ASCII UTF-16."""
    if len(data) < 4 or len(data) % 2:
        return None
    even_nul = data[0::2].count(0) / (len(data) / 2)
    odd_nul = data[1::2].count(0) / (len(data) / 2)
    if odd_nul > 0.6 and even_nul < 0.05:
        return "utf-16-le"
    if even_nul > 0.6 and odd_nul < 0.05:
        return "utf-16-be"
    return None


def _control_fraction(data: bytes) -> float:
    sample = data[:65536]
    bad = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13, 27))
    return bad / max(1, len(sample))


def decode_bytes(data: bytes, name: str, notes: list[str] | None = None) -> tuple[str, str]:
    """Decode file content to text with newlines normalised; returns (text, encoding used).

    Order: BOM (UTF-8, UTF-32, UTF-16), BOM-less UTF-16 (NUL pattern), UTF-8, then
    Windows-1252 and finally Latin-1 (noted in ``notes``). Binary content raises ``DataError``.
    """
    if len(data) == 0:
        raise DataError(f"{name} is empty.")
    if data.startswith(b"%PDF"):
        raise DataError(f"{name} is a PDF file, not plain text: convert it to .txt first.")
    if data.startswith(b"PK\x03\x04") and not name.lower().endswith(".zip"):
        raise DataError(f"{name} is a zip archive, not plain text: give it a .zip name to read the .txt files inside.")
    enc = None
    if data.startswith(codecs.BOM_UTF8):
        enc = "utf-8-sig"
    elif data.startswith(codecs.BOM_UTF32_LE) or data.startswith(codecs.BOM_UTF32_BE):
        enc = "utf-32"
    elif data.startswith(codecs.BOM_UTF16_LE) or data.startswith(codecs.BOM_UTF16_BE):
        enc = "utf-16"
    elif b"\x00" in data:
        enc = _utf16_without_bom(data)
        if enc is None:
            raise DataError(f"{name} looks like a binary file (it contains NUL bytes), not text: "
                            f"give a {SUPPORTED_TEXT_SETS} file.")
    if enc is not None:
        try:
            text = data.decode(enc)
        except UnicodeDecodeError:
            raise DataError(f"{name} starts like {enc.upper()} text but cannot be decoded as such; "
                            "save it as UTF-8.") from None
        if enc.startswith("utf-16-") and notes is not None:
            notes.append(f"{name}: no byte-order mark; read as {enc.upper()}.")
    else:
        try:
            text = data.decode("utf-8")
            enc = "utf-8"
        except UnicodeDecodeError:
            if _control_fraction(data) > 0.01:
                raise DataError(f"{name} looks like a binary file, not text: give a {SUPPORTED_TEXT_SETS} file.") from None
            try:
                text = data.decode("cp1252")
                enc = "cp1252"
                label = "Windows-1252 (cp1252)"
            except UnicodeDecodeError:
                text = data.decode("latin-1")
                enc = "latin-1"
                label = "Latin-1 (ISO-8859-1)"
            if notes is not None:
                notes.append(f"{name}: not valid UTF-8; read as {label}, keeping every byte. "
                             "Save it as UTF-8 to be sure of the characters.")
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return text, enc


# --------------------------------------------------------------------------------------
# plain text: lines or paragraphs
# --------------------------------------------------------------------------------------
def _blocks(lines: list[str]) -> list[tuple[int, list[str]]]:
    """Blank-line-separated blocks as (1-based start line, lines)."""
    blocks, cur, start = [], [], 0
    for i, line in enumerate(lines, 1):
        if line.strip():
            if not cur:
                start = i
            cur.append(line)
        elif cur:
            blocks.append((start, cur))
            cur = []
    if cur:
        blocks.append((start, cur))
    return blocks


def _pick_mode(blocks: list[tuple[int, list[str]]]) -> str:
    """'blank' when the file is made of multi-line paragraphs separated by blank lines.

    Rule: at least two blocks of several lines, making up at least a quarter of the blocks,
    and blocks of at most 20 lines on average (a one-text-per-line file with a stray blank
    line gives few, long blocks). The report says which mode was used.
    """
    if len(blocks) < 2:
        return "lines"
    sizes = [len(b) for _, b in blocks]
    multi = sum(1 for n in sizes if n >= 2)
    if multi < 2 or multi < 0.25 * len(blocks):
        return "lines"
    return "blank" if sum(sizes) / len(blocks) <= 20 else "lines"


def _split_plain(text: str, name: str, mode: str, notes: list[str]) -> list[Record]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    blocks = _blocks(lines)
    used = _pick_mode(blocks) if mode == "auto" else mode
    records: list[Record] = []
    if used == "lines":
        empty = 0
        for i, line in enumerate(lines, 1):
            t = line.strip()
            if t:
                records.append(Record(t, f"{name}:{i}"))
            else:
                empty += 1
        how = "one text per line"
        if empty:
            notes.append(f"{name}: dropped {empty} empty line{'s' if empty != 1 else ''}.")
    else:
        for start, blk in blocks:
            records.append(Record("\n".join(blk).strip(), f"{name}:{start}"))
        how = "blank-line-separated paragraphs"
    if records:
        hint = " (pass mode='lines' to read one text per line)" if mode == "auto" and used == "blank" else ""
        notes.append(f"{name}: read {len(records)} text{'s' if len(records) != 1 else ''} as {how}{hint}.")
    return records


# --------------------------------------------------------------------------------------
# tables: csv / tsv / jsonl / json
# --------------------------------------------------------------------------------------
def _table_from_text(text: str, name: str, suffix: str) -> tuple[pd.DataFrame, list[str]]:
    """DataFrame and per-row source strings."""
    if suffix in (".csv", ".tsv"):
        try:
            df = pd.read_csv(io.StringIO(text), sep="\t" if suffix == ".tsv" else ",", dtype=str,
                             keep_default_na=False, skip_blank_lines=True)
        except pd.errors.EmptyDataError:
            raise DataError(f"{name} is empty.") from None
        except (pd.errors.ParserError, ValueError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise DataError(f"{name} is not a valid {suffix[1:].upper()} file: {first}") from None
        return df, [f"{name}:row {i + 2}" for i in range(len(df))]
    if suffix in (".jsonl", ".ndjson"):
        rows, sources = [], []
        for i, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{name}:{i} is not valid JSON ({e.msg}).") from None
            if isinstance(obj, str):
                obj = {"text": obj}
            if not isinstance(obj, dict):
                raise DataError(f"{name}:{i} is not a JSON object: each line of a .jsonl file must be an object "
                                "such as {\"text\": ...}.")
            rows.append(obj)
            sources.append(f"{name}:{i}")
        return pd.DataFrame(rows), sources
    # .json
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(f"{name} is not valid JSON ({e.msg} at line {e.lineno}).") from None
    if isinstance(obj, dict):
        lists = [v for v in obj.values() if isinstance(v, list)]
        if len(lists) != 1:
            raise DataError(f"{name} must hold a list of objects such as [{{\"text\": ...}}, ...].")
        obj = lists[0]
    if not isinstance(obj, list):
        raise DataError(f"{name} must hold a list of objects such as [{{\"text\": ...}}, ...].")
    rows = []
    for i, item in enumerate(obj, 1):
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict):
            raise DataError(f"{name}:item {i} is not an object: a .json file must hold a list of objects "
                            "such as {\"text\": ...}.")
        rows.append(item)
    return pd.DataFrame(rows), [f"{name}:item {i}" for i in range(1, len(rows) + 1)]


def _find_column(df: pd.DataFrame, wanted: str) -> str | None:
    cols = [str(c) for c in df.columns]
    if wanted in cols:
        return wanted
    low = {c.lower(): c for c in cols}
    return low.get(wanted.lower())


def _is_stringy(series: pd.Series) -> bool:
    """True when some non-empty value is neither a number nor a boolean."""
    vals = [v for v in series.tolist() if v is not None and not (isinstance(v, float) and np.isnan(v)) and v != ""]
    if not vals:
        return False
    for v in vals:
        if isinstance(v, (bool, int, float, np.number)):
            continue
        if isinstance(v, str):
            s = v.strip().lower()
            if s in ("true", "false"):
                continue
            try:
                float(s)
                continue
            except ValueError:
                return True
        else:
            return False  # lists / dicts: not a text column
    return False


def _label_of(v) -> int | None:
    if isinstance(v, (bool, np.bool_)):
        return int(bool(v))
    if isinstance(v, (int, np.integer)) and v in (0, 1):
        return int(v)
    if isinstance(v, (float, np.floating)) and v in (0.0, 1.0):
        return int(v)
    if isinstance(v, str):
        return _LABEL_VALUES.get(v.strip().lower())
    return None


def _empty(v) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v)) or (isinstance(v, str) and not v.strip())


def _records_from_table(df: pd.DataFrame, sources: list[str], name: str, text_column, label_column,
                        group_column, notes: list[str]) -> list[Record]:
    if df.shape[0] == 0:
        raise DataError(f"{name} has no rows.")
    cols = [str(c) for c in df.columns]
    df.columns = cols
    listing = ", ".join(repr(c) for c in cols)

    lab_col = grp_col = None
    if label_column is not None:
        lab_col = _find_column(df, label_column)
        if lab_col is None:
            raise DataError(f"{name} has no label column {label_column!r}; its columns are {listing}.")
    if group_column is not None:
        grp_col = _find_column(df, group_column)
        if grp_col is None:
            raise DataError(f"{name} has no group column {group_column!r}; its columns are {listing}.")
    id_col = _find_column(df, "id")

    if text_column is not None:
        txt_col = _find_column(df, text_column)
        if txt_col is None:
            raise DataError(f"{name} has no text column {text_column!r}; its columns are {listing}.")
    else:
        txt_col = next((c for c in (_find_column(df, w) for w in TEXT_COLUMN_NAMES) if c is not None), None)
        if txt_col is None:
            cands = [c for c in cols if c not in (lab_col, grp_col, id_col) and _is_stringy(df[c])]
            if len(cands) == 1:
                txt_col = cands[0]
            else:
                raise DataError(f"{name}: cannot tell which column holds the texts; its columns are {listing}. "
                                "Name it 'text' or choose it with --text-column.")
    if id_col == txt_col:
        id_col = None

    records, empty, bad_labels, no_group = [], 0, [], []
    texts = df[txt_col].tolist()
    labels = df[lab_col].tolist() if lab_col else None
    groups = df[grp_col].tolist() if grp_col else None
    ids = df[id_col].tolist() if id_col else None
    for i, raw in enumerate(texts):
        src = sources[i]
        if _empty(raw):
            empty += 1
            continue
        text = raw if isinstance(raw, str) else (json.dumps(raw) if isinstance(raw, (list, dict)) else str(raw))
        text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
        lab = None
        if labels is not None:
            lab = _label_of(labels[i])
            if lab is None:
                bad_labels.append(f"{labels[i]!r} ({src})")
                continue
        grp = None
        if groups is not None:
            if _empty(groups[i]):
                no_group.append(src)
                continue
            g = groups[i]
            grp = str(int(g)) if isinstance(g, float) and g.is_integer() else str(g).strip()
        rid = None
        if ids is not None and not _empty(ids[i]):
            v = ids[i]
            rid = str(int(v)) if isinstance(v, float) and v.is_integer() else str(v).strip()
        records.append(Record(text, src, lab, grp, rid))
    if bad_labels:
        raise DataError(f"{name}: the label column {lab_col!r} must hold 1/0, true/false or member/nonmember; "
                        f"found {', '.join(bad_labels[:5])}{' ...' if len(bad_labels) > 5 else ''}.")
    if no_group:
        raise DataError(f"{name}: the group column {grp_col!r} is empty at {', '.join(no_group[:5])}"
                        f"{' ...' if len(no_group) > 5 else ''}.")
    if empty:
        notes.append(f"{name}: dropped {empty} row{'s' if empty != 1 else ''} with an empty {txt_col!r} column.")
    if records:
        notes.append(f"{name}: read {len(records)} text{'s' if len(records) != 1 else ''} from column {txt_col!r}"
                     + (f", labels from {lab_col!r}" if lab_col else "")
                     + (f", groups from {grp_col!r}" if grp_col else "") + ".")
    return records


# --------------------------------------------------------------------------------------
# zip and folders of .txt files
# --------------------------------------------------------------------------------------
def _zip_txt_members(data: bytes, name: str, max_bytes: int) -> list[tuple[str, bytes]]:
    """(member name, bytes) of every .txt file in a zip, with a zip-bomb guard.

    The guard refuses archives whose declared *or actual* uncompressed .txt total exceeds
    ``max_bytes`` (reading is streamed and stops at the limit, so lying headers do not help).
    """
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise DataError(f"{name} is not a valid zip archive.") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > MAX_ZIP_MEMBERS:
            raise DataError(f"{name} holds {len(infos):,} files, more than the {MAX_ZIP_MEMBERS:,} allowed.")
        txt = [i for i in infos if i.filename.lower().endswith(".txt")
               and not Path(i.filename).name.startswith("._") and "__MACOSX/" not in i.filename]
        if not txt:
            shown = ", ".join(i.filename for i in infos[:5]) or "nothing"
            raise DataError(f"{name} holds no .txt file (it contains {shown}{' ...' if len(infos) > 5 else ''}).")
        declared = sum(i.file_size for i in txt)
        if declared > max_bytes:
            raise DataError(f"{name} unpacks to {_human(declared)} of text, above the {_human(max_bytes)} limit.")
        out, total = [], 0
        for info in sorted(txt, key=lambda i: i.filename):
            try:
                with zf.open(info) as fh:
                    chunk = fh.read(max_bytes - total + 1)
            except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError) as e:
                raise DataError(f"cannot read {info.filename} in {name}: {e}.") from None
            total += len(chunk)
            if total > max_bytes:
                raise DataError(f"{name} unpacks to more than the {_human(max_bytes)} limit.")
            out.append((info.filename, chunk))
        return out


def _folder_txt_files(p: Path, max_bytes: int) -> list[Path]:
    files = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() == ".txt" and not f.name.startswith("."))
    if not files:
        raise DataError(f"the folder {p} holds no .txt file.")
    total = sum(f.stat().st_size for f in files)
    if total > max_bytes:
        raise DataError(f"the .txt files in {p} total {_human(total)}, above the {_human(max_bytes)} limit.")
    return files


def _suffix(path) -> str:
    name = _display_name(path)
    return Path(name).suffix.lower()


# --------------------------------------------------------------------------------------
# public readers
# --------------------------------------------------------------------------------------
def read_texts(path, *, mode: str = "auto", text_column: str | None = None, label_column: str | None = None,
               group_column: str | None = None, max_bytes: int = MAX_BYTES,
               notes: list[str] | None = None) -> list[Record]:
    """Read one input (path, or an uploaded file-like object with ``name`` and ``getvalue()``).

    Returns one :class:`Record` per text, in file order. Empty texts are dropped (counted in
    ``notes``, a list this function appends human-readable notes to). Set-level checks
    (duplicates, overlap, empty sets) are done by :func:`load_dataset`.
    Raises ``DataError`` when the file is missing, empty, binary, too large, in an unsupported
    format, has no usable text, or (tables) lacks the text/label/group column or holds
    unknown labels.
    """
    if mode not in _MODES:
        raise SettingsError(f"mode must be one of {', '.join(_MODES)}; got {mode!r}.")
    notes = notes if notes is not None else []
    if not _is_filelike(path):
        p = Path(path).expanduser()
        if not p.exists():
            raise DataError(f"file not found: {p}")
        if p.is_dir():
            records = []
            for f in _folder_txt_files(p, max_bytes):
                name, data = _read_bytes(f, max_bytes)
                text, _ = decode_bytes(data, str(f.relative_to(p)), notes)
                text = text.strip()
                if text:
                    records.append(Record(text, f"{p.name}/{f.relative_to(p)}"))
            if not records:
                raise DataError(f"the .txt files in {p} hold no text.")
            notes.append(f"{p.name}: read {len(records)} texts, one per .txt file.")
            return records
    name, data = _read_bytes(path, max_bytes)
    suffix = _suffix(path)
    if suffix == ".zip":
        records = []
        for member, raw in _zip_txt_members(data, name, max_bytes):
            if not raw:
                continue
            text, _ = decode_bytes(raw, f"{name}:{member}", notes)
            text = text.strip()
            if text:
                records.append(Record(text, f"{name}:{member}"))
        if not records:
            raise DataError(f"the .txt files in {name} hold no text.")
        notes.append(f"{name}: read {len(records)} texts, one per .txt file.")
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


def _read_many(paths, role: str, notes: list[str], **kw) -> list[Record]:
    if paths is None:
        return []
    if isinstance(paths, (list, tuple)):
        out: list[Record] = []
        for p in paths:
            out.extend(read_texts(p, notes=notes, **kw))
        return out
    return read_texts(paths, notes=notes, **kw)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


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
                    notes.append(f"{role[lab]}: dropped {_plural(n, 'text')} shorter than {min_chars} characters "
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
            notes.append(f"{role[lab]}: dropped {_plural(len(dups), 'exact duplicate')} ({ex}"
                         f"{' ...' if len(dups) > 5 else ''}).")
    kept = [r for r in records if first_of[(r.label, r.text)] is r]

    n_mem = sum(1 for r in kept if r.label == 1)
    n_non = sum(1 for r in kept if r.label == 0)
    if n_mem == 0:
        raise DataError(f"no members given: {member_src} hold no usable text (label 1).")
    if n_non == 0:
        raise DataError(f"no non-members given: {nonmember_src} hold no usable text (label 0).")

    both = [(first_of[(1, r.text)], r) for r in kept if r.label == 0 and (1, r.text) in first_of]
    if both:
        pairs = "; ".join(f"{m.source} and {n.source}" for m, n in both[:5])
        head = "text appears in both sets" if len(both) == 1 else f"{len(both)} texts appear in both sets"
        more = " ..." if len(both) > 5 else ""
        raise DataError(f"{head}: {pairs}{more}. A text cannot be both a member and a non-member; "
                        "remove it from one of the sets.")

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
        lab_name = _display_name(labelled) if not isinstance(labelled, (list, tuple)) else "the labelled files"
        for p in (labelled if isinstance(labelled, (list, tuple)) else [labelled]):
            if not _is_filelike(p) and Path(p).exists() and (Path(p).is_dir() or _suffix(p) in TEXT_SUFFIXES | {".zip"}):
                raise DataError(f"{_display_name(p)} has no labels: a labelled file must be a .csv, .tsv, .jsonl or "
                                f".json table with a {label_column!r} column.")
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
                notes.append(f"{role}: dropped {_plural(empty, 'empty text')}.")
    if groups is not None:
        groups = list(groups)
        if len(groups) != len(records):
            raise DataError(f"got {len(groups)} group ids for {len(records)} texts; give one per text, "
                            "members first then non-members.")
        for r, g in zip(records, groups):
            r.group = None if g is None else str(g)
    records = [r for r in records if r.text]
    return _build(records, notes, want_groups=groups is not None, member_src="the member texts",
                  nonmember_src="the non-member texts")


# --------------------------------------------------------------------------------------
# documents and Project Gutenberg boilerplate
# --------------------------------------------------------------------------------------
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
    return Document(name=name, text=body, source=source, strip=report)


def load_documents(path_or_paths, *, strip: bool = True, max_bytes: int = MAX_BYTES) -> list[Document]:
    """Documents from a ``.txt`` file, a folder of ``.txt`` files (searched recursively), a
    ``.zip`` of ``.txt`` files, an uploaded file-like object, or a list of those.

    Each document is the whole file; with ``strip=True`` Project Gutenberg headers and footers
    are removed (:func:`strip_gutenberg`), and ``Document.strip`` holds that report plus the
    encoding used. Names are file names without ``.txt``. Raises ``DataError`` for missing,
    empty, binary or oversized inputs, zips/folders without ``.txt`` files, other formats.
    """
    items = list(path_or_paths) if isinstance(path_or_paths, (list, tuple)) else [path_or_paths]
    if not items:
        raise DataError("no documents given.")
    docs: list[Document] = []
    for item in items:
        if not _is_filelike(item):
            p = Path(item).expanduser()
            if not p.exists():
                raise DataError(f"file not found: {p}")
            if p.is_dir():
                for f in _folder_txt_files(p, max_bytes):
                    _, data = _read_bytes(f, max_bytes)
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
