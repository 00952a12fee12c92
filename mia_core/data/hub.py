"""Hugging Face hub datasets as ``hf:ID[:config][@split]``, read from their parquet conversion.

A text set or a labelled set can be named ``hf:ID[:config][@split]`` wherever a path is taken
(``hf:swj0419/WikiMIA:default@WikiMIA_length32``; ``config`` defaults to ``default``, ``split``
to ``train``): :func:`parse_hub_spec` splits it, :func:`is_hub_spec` tells it from a path (a
file or folder of that name, when one exists, is read as the file). The ``datasets`` package is
not used: the hub serves every dataset as parquet on the revision ``refs/convert/parquet``,
under ``{config}/{split}/*.parquet`` (older conversions: ``{config}/*-{split}.parquet`` or
``{config}/{split}-*.parquet``); :func:`hub_parquet_files` fetches those with
``huggingface_hub.snapshot_download`` (the local Hugging Face cache only when offline:
``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``, read at call time), and :func:`read_hub_dataset`
reads them with pyarrow (nothing unpickled) in file-name order, as one table with the same text,
label and group column rules as a local parquet file.

Every failure is one :class:`~mia_core.errors.DataError` line naming the spec: a malformed spec
(the expected form), a set missing from the cache offline (run once online, or save it with
``datasets``' ``save_to_disk`` / as parquet and pass the path), no such dataset, config or split,
a gated or private dataset, an unreachable hub.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataError, safe_text
from .decoding import _human, _read_bytes
from .records import Record
from .tables import _records_from_table, _table_from_arrow

HUB_PREFIX = "hf:"
PARQUET_REVISION = "refs/convert/parquet"
HUB_FORM = "hf:ID[:config][@split]"
HUB_EXAMPLE = "hf:swj0419/WikiMIA:default@WikiMIA_length32"
_SPEC = re.compile(r"hf:(?P<id>[\w.-]+(?:/[\w.-]+)?)(?::(?P<config>[^/\\:@*?\[\]\s]+))?(?:@(?P<split>[\w.-]+))?")
_TRUE_VALUES = {"1", "ON", "YES", "TRUE"}  # as huggingface_hub reads HF_HUB_OFFLINE
MAX_ID_PART = 96  # huggingface_hub's limit on an owner's or a repository's name
MAX_NAME = 200  # a config or a split: a folder or file name in the cache (the system allows 255 bytes)


@dataclass(frozen=True)
class HubSpec:
    """One split of one config of a hub dataset."""

    repo_id: str
    config: str = "default"
    split: str = "train"

    def __str__(self) -> str:
        return f"{HUB_PREFIX}{self.repo_id}:{self.config}@{self.split}"

    def patterns(self) -> list[str]:
        """Where the parquet conversion keeps this split's files (relative to the revision's root)."""
        c, s = self.config, self.split
        return [f"{c}/{s}/*.parquet", f"{c}/*-{s}.parquet", f"{c}/{s}-*.parquet"]


def is_hub_spec(path) -> bool:
    """Whether ``path`` is a string ``hf:...`` (and no file or folder of that name exists)."""
    return isinstance(path, str) and path.startswith(HUB_PREFIX) and not os.path.lexists(os.path.expanduser(path))


def shown_spec(spec, limit: int = 80) -> str:
    """A spec as messages show it: one line (control characters escaped), at most ``limit`` characters (a
    spec of thousands of characters is cut, the message stays one readable line)."""
    s = safe_text(str(spec))
    return s if len(s) <= limit else s[: limit - 1] + "…"


def parse_hub_spec(spec: str) -> HubSpec:
    """``hf:ID[:config][@split]`` -> :class:`HubSpec`; ``DataError`` (the expected form) when malformed, or
    when a part is longer than the hub allows (each part of the id at most :data:`MAX_ID_PART` characters, the
    config and the split at most :data:`MAX_NAME` each: they become folder and file names in the cache)."""
    m = _SPEC.fullmatch(spec.strip()) if isinstance(spec, str) else None
    if m is None or ".." in m["id"] or "--" in m["id"]:
        raise DataError(f"{shown_spec(spec)!r} is not a hub dataset: expected {HUB_FORM} (e.g. {HUB_EXAMPLE}; "
                        "the config defaults to 'default', the split to 'train').")
    long = [what for what, value, limit in (
        *(("id", part, MAX_ID_PART) for part in m["id"].split("/")),
        ("config", m["config"] or "", MAX_NAME), ("split", m["split"] or "", MAX_NAME)) if len(value) > limit]
    if long:
        raise DataError(f"{shown_spec(spec)!r} ({len(spec)} characters) is not a hub dataset: its {long[0]} is longer "
                        f"than the hub allows (at most {MAX_ID_PART} characters for each part of the id, {MAX_NAME} "
                        f"for the config and the split); expected {HUB_FORM}.")
    return HubSpec(m["id"], m["config"] or "default", m["split"] or "train")


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` (else ``TRANSFORMERS_OFFLINE``) read at call time, the way huggingface_hub parses it."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE")
    return value is not None and value.strip().upper() in _TRUE_VALUES


def _ways_out(spec: HubSpec) -> str:
    return (f"run once online (HF_HUB_OFFLINE=0) to download it, or save the set with datasets' save_to_disk "
            f"(datasets.load_dataset('{spec.repo_id}', '{spec.config}', split='{spec.split}')"
            ".save_to_disk(FOLDER)) or as .parquet and pass that path")


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return safe_text(text.splitlines()[0][:200] if text else type(e).__name__)


def _hub_error(spec: HubSpec, e: Exception, offline: bool) -> DataError:
    """One line for whatever ``snapshot_download`` raised."""
    from huggingface_hub import errors as hub_errors

    name = shown_spec(spec)
    if isinstance(e, hub_errors.GatedRepoError):
        return DataError(f"{name}: the dataset {spec.repo_id!r} is gated: accept its terms on the hub and log in "
                         "(hf auth login, or HF_TOKEN), or save it locally and pass the path.")
    if isinstance(e, hub_errors.RepositoryNotFoundError):
        return DataError(f"{name}: no dataset {spec.repo_id!r} on the hub (or it is private: log in with hf auth "
                         "login, or HF_TOKEN).")
    if isinstance(e, hub_errors.RevisionNotFoundError):
        return DataError(f"{name}: the hub has no parquet conversion of {spec.repo_id!r} (revision "
                         f"{PARQUET_REVISION}); save the set as .parquet or with datasets' save_to_disk and pass "
                         "the path.")
    if isinstance(e, hub_errors.LocalEntryNotFoundError):
        why = ("the hub is offline (HF_HUB_OFFLINE=1)" if offline
               else "the hub could not be reached")
        return DataError(f"{name} is not in the local Hugging Face cache and {why}: {_ways_out(spec)}.")
    return DataError(f"{name}: could not fetch it from the hub: {_first_line(e)}")


def _available(spec: HubSpec, folder: Path) -> list[str]:
    """What the conversion holds, as ``config@split`` (older conversions: their file names): from the cached
    tree listing when there is one, else from the parquet files in ``folder``."""
    paths: list[str] = []
    try:
        from huggingface_hub import get_cached_repo_tree

        paths = [f.path for f in get_cached_repo_tree(spec.repo_id, repo_type="dataset", revision=PARQUET_REVISION)]
    except Exception:  # noqa: BLE001 - no cached listing (or an older huggingface_hub): the folder says
        paths = [p.relative_to(folder).as_posix() for p in folder.rglob("*.parquet")]
    pairs = set()
    for p in paths:
        parts = p.split("/")
        if len(parts) == 3 and parts[2].endswith(".parquet"):
            pairs.add(f"{parts[0]}@{parts[1]}")
        elif len(parts) == 2 and parts[1].endswith(".parquet"):  # older conversions: the file names say the split
            pairs.add(p)
    return sorted(pairs)


def hub_parquet_files(spec: HubSpec) -> list[Path]:
    """The parquet files of ``spec``'s split, in file-name order, fetched into (or, offline, found in) the local
    Hugging Face cache. ``DataError`` when they cannot be had."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        raise DataError(f"{shown_spec(spec)}: reading hub datasets needs huggingface_hub "
                        "(pip install huggingface_hub).") from None
    offline = hub_offline()
    try:
        folder = Path(snapshot_download(repo_id=spec.repo_id, repo_type="dataset", revision=PARQUET_REVISION,
                                        allow_patterns=spec.patterns(), local_files_only=offline))
    except Exception as e:  # noqa: BLE001 - every hub or cache failure is one line naming the spec
        raise _hub_error(spec, e, offline) from None
    try:
        files = sorted({f for pattern in spec.patterns() for f in folder.glob(pattern) if f.is_file()},
                       key=lambda f: f.relative_to(folder).as_posix())
    except OSError as e:  # a name the system cannot hold, a cache that cannot be read
        raise DataError(f"{shown_spec(spec)}: the local Hugging Face cache cannot be read for it "
                        f"({e.strerror or type(e).__name__})") from None
    if files:
        return files
    have = _available(spec, folder)
    holds = f" (it holds {', '.join(map(shown_spec, have[:10]))}{' ...' if len(have) > 10 else ''})" if have else ""
    name = shown_spec(spec)
    if offline:
        raise DataError(f"{name}: the local Hugging Face cache holds no parquet files for config {spec.config!r}, "
                        f"split {spec.split!r} of {spec.repo_id!r}{holds}: {_ways_out(spec)}.")
    raise DataError(f"{name}: {spec.repo_id!r} has no config {spec.config!r} with a split {spec.split!r} in its "
                    f"parquet conversion{holds}; give {HUB_FORM}.")


def read_hub_dataset(path: str, *, text_column, label_column, group_column, max_bytes: int,
                     notes: list[str]) -> list[Record]:
    """Records of ``hf:ID[:config][@split]``: its parquet files read as one table (the text, label and group
    columns as for a local parquet file), the bytes read capped at ``max_bytes`` in all."""
    import pandas as pd

    spec = parse_hub_spec(path)
    name = safe_text(str(spec))
    frames, sources, total = [], [], 0
    for f in hub_parquet_files(spec):
        total += f.stat().st_size
        if total > max_bytes:
            raise DataError(f"{name}: its parquet files total more than the {_human(max_bytes)} limit; take a "
                            "smaller split, or save a part of it as .parquet and pass the path.")
        _, data = _read_bytes(f, max_bytes)
        df, src = _table_from_arrow(data, f"{name}/{f.name}", ".parquet")
        frames.append(df)
        sources += src
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    records = _records_from_table(df, sources, name, text_column, label_column, group_column, notes)
    if not records:
        raise DataError(f"{name} has no usable text.")
    return records
