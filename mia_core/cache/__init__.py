"""The on-disk cache of computed arrays: the runtime cache (:mod:`.store`: ``ArrayCache``, one ``.npz`` entry
per text, verified on every read; ``ArrayCache.lookup`` gives an owner what is cached and what is missing).
Its housekeeping (what ``mia cache`` shows and clears, only what the cache recognises as its own, saved runs
included) is the command's front door, :mod:`mia_core.api.cache`: it sits above the run store it also clears.
"""
from __future__ import annotations

from .store import (  # noqa: F401 - private names: tests read them here
    ENTRY,
    NAMESPACES,
    _NOTES,
    ArrayCache,
    Lookup,
    _log,
    note,
    _write_atomic,
    collect_notes,
    settings_key,
    text_hash,
)

__all__ = ["ENTRY", "NAMESPACES", "ArrayCache", "Lookup", "collect_notes", "note", "settings_key", "text_hash"]
