"""Tables to records: ``.csv`` / ``.tsv`` / ``.jsonl`` / ``.json`` (a list of objects).

``_table_from_text`` parses the decoded text into a DataFrame with one source per row
(``data.csv:row 3``, the header being row 1; ``data.jsonl:12``; ``data.json:item 3``).
``_records_from_table`` finds the text column (``text``, ``input``, ``content``, ``sentence``
or ``document``, else the only string column; ``text_column`` overrides), the optional label
column (1/0, true/false, member/nonmember: ``_label_of``), group column and ``id`` column,
and returns one :class:`~mia_core.data.records.Record` per non-empty text. The text column must hold
strings (:func:`check_text_column`): numbers, lists or mappings there are refused, never scored as
their printed form.
"""
from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataError
from .records import Record

if TYPE_CHECKING:  # pandas is imported where a table is read: ``mia --help`` stays light
    import pandas as pd

TEXT_COLUMN_NAMES = ("text", "input", "content", "sentence", "document")

_LABEL_VALUES = {
    "1": 1, "0": 0, "1.0": 1, "0.0": 0,
    "true": 1, "false": 0, "t": 1, "f": 0, "yes": 1, "no": 0,
    "member": 1, "members": 1,
    "nonmember": 0, "non-member": 0, "non_member": 0, "non member": 0,
    "nonmembers": 0, "non-members": 0, "non_members": 0,
}


def _table_from_text(text: str, name: str, suffix: str) -> tuple[pd.DataFrame, list[str]]:
    """DataFrame and per-row source strings."""
    import pandas as pd

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
    if isinstance(v, str):
        return not v.strip()
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return True
    import pandas as pd  # here, not at the top: ``mia --help`` does not load pandas

    return v is pd.NA or v is pd.NaT


def value_kind(v) -> str:
    """What a table cell holds, in words, for a refusal ("int", "float", "list"...)."""
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "int"
    if isinstance(v, (float, np.floating)):
        return "float"
    if isinstance(v, (list, tuple, np.ndarray)):
        return "list"
    if isinstance(v, dict):
        return "dict"
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "bytes"
    return type(v).__name__


def check_text_column(values: list, sources: list[str], name: str, column: str) -> None:
    """A text column must hold texts (strings): a column of numbers, true/false, lists, mappings or bytes
    is refused in one line naming the column, the type and the first row (a number would be scored as the
    text "0", a list as its JSON). Empty cells are left to the caller (dropped and counted). In a table
    whose cells are all strings (a .csv or .tsv file), a column whose every value is a number or true/false
    is refused the same way."""
    def where(i: int) -> str:  # the row, without the name the message starts with
        src = sources[i]
        src = src[len(name) + 1:] if src.startswith(f"{name}:") else src
        return f"line {src}" if src.isdigit() else src  # a .jsonl file's sources are its line numbers

    odd = [(i, v) for i, v in enumerate(values) if not _empty(v) and not isinstance(v, str)]
    if odd:
        kinds = "/".join(sorted({value_kind(x) for _, x in odd}))
        rows = f"{len(odd)} rows, the first at {where(odd[0][0])}" if len(odd) > 1 else f"at {where(odd[0][0])}"
        raise DataError(f"{name}: the text column {column!r} holds {kinds} values, not texts ({rows}); give a "
                        "column of strings, or choose it with {text_column}.", options=("text_column",))
    import pandas as pd

    filled = [v for v in values if not _empty(v)]
    if filled and not _is_stringy(pd.Series(filled, dtype=object)):
        i = next(i for i, v in enumerate(values) if not _empty(v))
        raise DataError(f"{name}: the text column {column!r} holds only numbers or true/false values, not texts "
                        f"(e.g. {values[i].strip()[:40]!r} at {where(i)}); give a column of texts, or choose it "
                        "with {text_column}.", options=("text_column",))


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
                                "Name it 'text' or choose it with {text_column}.", options=("text_column",))
    if id_col == txt_col:
        id_col = None

    records, empty, bad_labels, no_group = [], 0, [], []
    texts = df[txt_col].tolist()
    check_text_column(texts, sources, name, txt_col)
    labels = df[lab_col].tolist() if lab_col else None
    groups = df[grp_col].tolist() if grp_col else None
    ids = df[id_col].tolist() if id_col else None
    for i, raw in enumerate(texts):
        src = sources[i]
        if _empty(raw):
            empty += 1
            continue
        text = raw.replace("\r\n", "\n").replace("\r", "\n").strip()
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


# ---------------------------------------------------------------------------- Arrow, Parquet, Hugging Face folders
ARROW_SUFFIXES = (".parquet", ".arrow", ".feather")


def _table_from_arrow(data: bytes, name: str, suffix: str) -> tuple[pd.DataFrame, list[str]]:
    """DataFrame and per-row sources of a Parquet file, an Arrow IPC file (Feather v2) or an Arrow IPC stream
    (what ``datasets.Dataset.save_to_disk`` writes as ``data-*.arrow``). Nothing is unpickled: pyarrow reads
    the columns; extension types that would need Python code are not loaded."""
    import pyarrow as pa

    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(pa.BufferReader(data))
        else:
            import pyarrow.ipc as ipc

            try:
                table = ipc.open_file(pa.BufferReader(data)).read_all()
            except pa.ArrowInvalid:
                table = ipc.open_stream(pa.BufferReader(data)).read_all()
        df = table.to_pandas()
    except (pa.ArrowException, OSError, ValueError, TypeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DataError(f"{name} is not a readable {suffix[1:]} file: {first[:200]}") from None
    return df, [f"{name}:row {i + 1}" for i in range(len(df))]


def hf_dataset_files(folder) -> list:
    """The Arrow files of a folder written by ``datasets.Dataset.save_to_disk`` (``state.json`` lists them), in
    order; a ``DatasetDict`` folder (``dataset_dict.json``) is refused with its splits named: give one split's
    folder. ``DataError`` for a folder that is neither."""
    import json
    from pathlib import Path

    p = Path(folder)
    if (p / "dataset_dict.json").is_file():
        try:
            splits = json.loads((p / "dataset_dict.json").read_text()).get("splits") or []
        except (OSError, ValueError):
            splits = []
        example = f"{p}/{splits[0]}" if splits else f"{p}/train"
        raise DataError(f"{p} holds a Hugging Face DatasetDict ({', '.join(map(str, splits)) or 'splits'}): give one "
                        f"split's folder, e.g. {example}")
    try:
        state = json.loads((p / "state.json").read_text())
        files = [p / str(f["filename"]) for f in state.get("_data_files") or []]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise DataError(f"{p}: not a Hugging Face datasets folder (no readable state.json listing its .arrow "
                        "files)") from None
    bad = [f for f in files if f.parent != p or f.suffix != ".arrow" or not f.is_file() or f.is_symlink()]
    if not files or bad:
        raise DataError(f"{p}: its state.json lists {'no' if not files else 'missing or foreign'} .arrow files"
                        + (f" (e.g. {bad[0].name})" if bad else ""))
    return files


def is_hf_dataset_folder(p) -> bool:
    """Whether ``p`` is a folder saved by Hugging Face ``datasets`` (``save_to_disk``).

    Parameters
    ----------
    p : str or os.PathLike
        The folder.

    Returns
    -------
    bool
        True when it holds a ``state.json`` (one dataset) or a ``dataset_dict.json`` (a dataset dict).
    """
    from pathlib import Path

    p = Path(p)
    return (p / "state.json").is_file() or (p / "dataset_dict.json").is_file()
