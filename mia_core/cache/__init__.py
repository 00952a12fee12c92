"""The on-disk cache of computed arrays: the runtime cache (:mod:`.store`: ``ArrayCache``, one ``.npz`` entry
per text, verified on every read; ``ArrayCache.lookup`` gives an owner what is cached and what is missing) and
its housekeeping (:mod:`.housekeeping`: what ``mia cache`` shows and clears, only what the cache recognises as
its own).

Every name that ``mia_core.cache`` offered as one module is here, so imports keep working.
"""
from __future__ import annotations

from .housekeeping import (  # noqa: F401 - private names: tests and the CLI read them here
    ROOT_FILES,
    STAT_NAMESPACES,
    ClearPlan,
    _ENTRY_RE,
    _KEY_RE,
    _SHARD_RE,
    _TMP_RE,
    _plan_namespace,
    _plan_runs,
    _real_dir,
    _real_file,
    _size,
    _tree_size,
    cache_info,
    clear_cache,
    plan_clear,
)
from .store import (  # noqa: F401 - private names: tests read them here
    ENTRY,
    NAMESPACES,
    _NOTES,
    ArrayCache,
    Lookup,
    _log,
    _note,
    _write_atomic,
    collect_notes,
    settings_key,
    text_hash,
)

__all__ = ["ENTRY", "NAMESPACES", "ROOT_FILES", "STAT_NAMESPACES", "ArrayCache", "ClearPlan", "Lookup", "cache_info",
           "clear_cache", "collect_notes", "plan_clear", "settings_key", "text_hash"]
