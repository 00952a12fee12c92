"""On-disk cache of computed statistics, keyed by (model identity, settings, text hash).

Layout: ``<cache root>/<namespace>/<settings key>/<hh>/<text hash>.npz`` where the settings
key is a hash of the JSON settings (model identity incl. dtype and quantisation, window
length, prefix policy, statistics version...). Arrays are stored with ``numpy.savez``
(``allow_pickle=False`` on load: nothing in the cache is ever unpickled).

``clear_cache()`` removes everything; ``cache_info()`` reports sizes. An unusable cache folder
(``MIA_CACHE_DIR`` a file, not writable, ...) is a one-line ``SettingsError`` from either.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from .errors import SettingsError
from .paths import cache_root, cache_subdir

NAMESPACES = ("stats", "neighbours", "embeddings", "mlm", "documents")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def settings_key(settings: dict) -> str:
    blob = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


class ArrayCache:
    """A directory of ``.npz`` files, one per text, for one settings key."""

    def __init__(self, namespace: str, settings: dict, enabled: bool = True):
        self.namespace = namespace
        self.settings = settings
        self.key = settings_key(settings)
        self.enabled = enabled
        self.hits = 0
        self.misses = 0
        if enabled:
            self.dir = cache_subdir(namespace) / self.key
            try:
                self.dir.mkdir(parents=True, exist_ok=True)
                meta = self.dir / "settings.json"
                if not meta.exists():  # several processes (Ray drivers on a shared folder) may race here
                    _write_atomic(meta, json.dumps(settings, indent=2, sort_keys=True, default=str).encode())
            except OSError as e:
                raise SettingsError(f"the cache folder {self.dir} is not usable ({e.strerror or type(e).__name__}): "
                                    "fix it, or set MIA_CACHE_DIR to another folder") from None
        else:
            self.dir = None

    def _path(self, h: str, suffix: str = ".npz") -> Path:
        assert self.dir is not None
        return self.dir / h[:2] / f"{h}{suffix}"

    def get(self, h: str) -> dict[str, np.ndarray] | None:
        if not self.enabled:
            return None
        p = self._path(h)
        if not p.exists():
            self.misses += 1
            return None
        try:
            with np.load(p, allow_pickle=False) as z:
                out = {k: z[k] for k in z.files}
        except Exception:  # noqa: BLE001 - a corrupt entry is recomputed
            p.unlink(missing_ok=True)
            self.misses += 1
            return None
        self.hits += 1
        return out

    def put(self, h: str, arrays: dict[str, np.ndarray], suffix: str = ".npz") -> None:
        """Store an entry. A write that fails (a full disk, a folder made read-only) stops the run with
        one line naming the folder and the reason, not a traceback."""
        try:
            self._put(h, arrays, suffix)
        except OSError as e:
            raise SettingsError(f"cannot write to the cache folder {self.dir} ({e.strerror or type(e).__name__}): "
                                "free some space there, set MIA_CACHE_DIR to another folder, or run without the "
                                "cache (--no-cache)") from None

    def _put(self, h: str, arrays: dict[str, np.ndarray], suffix: str) -> None:
        if not self.enabled:
            return
        p = self._path(h, suffix)
        p.parent.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        _write_atomic(p, buf.getvalue())

    # partial results of long texts (resumable scoring)
    def get_partial(self, h: str) -> dict[str, np.ndarray] | None:
        if not self.enabled:
            return None
        p = self._path(h, ".partial.npz")
        if not p.exists():
            return None
        try:
            with np.load(p, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        except Exception:  # noqa: BLE001
            return None

    def put_partial(self, h: str, arrays: dict[str, np.ndarray]) -> bool:
        """Keep a long text's windows done so far; False when that cannot be written. Best effort: it
        only saves time on a re-run, and it is also written while a run stops on another error (an
        interrupt, a failed worker), which a failed write here must not replace. The text's complete
        entry, when it comes, goes through :meth:`put` and says why a write fails."""
        try:
            self._put(h, arrays, ".partial.npz")
        except OSError:
            return False
        return True

    def drop_partial(self, h: str) -> None:
        if self.enabled:
            self._path(h, ".partial.npz").unlink(missing_ok=True)


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``path`` so that no reader ever sees half of it: a private temporary file in the same
    folder, then one ``os.replace``. A crash leaves no half-written entry, and concurrent writers of
    one entry (two machines on a shared cache folder) each replace it whole: the last one wins, and
    every one of them wrote the same statistics."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def cache_info() -> dict:
    """The cache root and, per kind of entry, how many files and MB it holds.

    ``SettingsError`` (one line, naming the folder) when the cache cannot be used or read.
    """
    root = cache_root()
    out = {"root": str(root), "namespaces": {}}
    try:
        for ns in sorted(p.name for p in root.iterdir() if p.is_dir()):
            files = [p for p in (root / ns).rglob("*") if p.is_file()]
            out["namespaces"][ns] = {"files": len(files),
                                     "mb": round(sum(p.stat().st_size for p in files) / 2**20, 1)}
    except OSError as e:
        raise SettingsError(f"cannot read the cache folder {root} ({e.strerror or type(e).__name__}"
                            f"{': ' + str(e.filename) if e.filename else ''})") from None
    return out


def clear_cache(include_models: bool = False) -> list[str]:
    """Remove cached statistics (and, if asked, converted model copies). Returns what was removed."""
    root = cache_root()
    removed, failed = [], []
    try:
        entries = sorted(root.iterdir())
    except OSError as e:
        raise SettingsError(f"cannot read the cache folder {root} ({e.strerror or type(e).__name__})") from None
    for p in entries:
        if p.is_dir() and (include_models or p.name != "models"):
            shutil.rmtree(p, ignore_errors=True)
            (failed if p.exists() else removed).append(p.name)
    if failed:
        raise SettingsError(f"could not remove {', '.join(failed)} from the cache folder {root} "
                            f"(removed: {', '.join(removed) or 'nothing'}); check its permissions")
    return removed
