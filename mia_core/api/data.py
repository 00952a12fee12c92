"""Reading the sets a front end audits: the engine's readers (:mod:`mia_core.data`), for the pages and the CLI.

Every reader refuses bad input in one line (``DataError``: nothing uploaded, empty or binary files, a file over the
size limit) before any model loads.
"""
from __future__ import annotations

from ..data import (MAX_BYTES, Dataset, decode_bytes, load_dataset, read_population,  # noqa: F401 - the front door
                    texts_from_strings)
from ..targets.options import SplitOptions


def read_text_upload(upload) -> tuple[str, str]:
    """An uploaded text file (``name`` and ``getvalue()``/``read()``) as ``(text, encoding used)``, read under the
    readers' size limit (:data:`MAX_BYTES`) and decoded as every other reader decodes (``DataError`` in one line for
    a file too large, binary or unreadable)."""
    from ..data.decoding import _read_bytes

    _, raw = _read_bytes(upload, MAX_BYTES)
    return decode_bytes(raw, getattr(upload, "name", "upload"))


def split_corpus(texts: list[str], shares, seed) -> dict[str, list[str]]:
    """A corpus cut at random into a controlled experiment's members, non-members and population
    (:func:`mia_core.data.split_corpus`), each percentage of ``shares`` (members, non-members, population) and the
    seed checked first by their declared domains (:class:`SplitOptions`: one line naming the share)."""
    from ..data import split_corpus as split
    from ..errors import SettingsError

    if not isinstance(shares, (tuple, list)) or len(shares) != 3:
        raise SettingsError(f"the shares must be three percentages (members, non-members, population), got {shares!r}")
    checked = SplitOptions.check_some(strict=False, members_pct=shares[0], nonmembers_pct=shares[1],
                                      population_pct=shares[2], seed=seed)
    return split(texts, (checked["members_pct"], checked["nonmembers_pct"], checked["population_pct"]),
                 checked["seed"])


def read_text_files(paths, *, mode: str = "auto", text_column: str | None = None, notes: list | None = None) -> list[str]:
    """The texts of ``paths`` (files, folders, ``hf:`` specs, as ``mia run`` reads ``--members``), in order; what the
    readers note (a file read as Windows-1252...) appended to ``notes``. ``DataError`` in one line for a missing,
    empty or binary file."""
    from ..data import read_texts

    out: list[str] = []
    for path in paths or []:
        out += [r.text for r in read_texts(path, mode=mode, text_column=text_column,
                                           notes=notes if notes is not None else [])]
    return out


__all__ = ["MAX_BYTES", "SplitOptions", "Dataset", "decode_bytes", "load_dataset", "read_population", "split_corpus",
           "texts_from_strings", "read_text_upload", "read_text_files"]
