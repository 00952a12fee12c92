"""The runtime cache: computed arrays on disk, keyed by (model identity, settings, text hash).

Layout: ``<cache root>/<namespace>/<settings key>/<hh>/<text hash>.npz`` where the settings
key is a hash of the JSON settings (model identity incl. dtype and quantisation, window
length, prefix policy, statistics version...). Arrays are stored with ``numpy.savez``
(``allow_pickle=False`` on load: nothing in the cache is ever unpickled).

Every owner of cached arrays (the statistics pass, the gradient pass, neighbours, embeddings, token
frequencies, the masked LM's energies) asks for a list of texts at once with
:meth:`ArrayCache.lookup`: what the cache holds, decoded, and which texts are missing (each distinct
text once, with every position it holds in the list); it computes the missing ones, stores each
with :meth:`ArrayCache.put` and fills its positions with :meth:`Lookup.fill`.

Entries are checked on every read, never trusted (a cache folder may be shared by several
writers, copied, or edited): each entry carries what it is for (``__entry__``: the text hash,
the settings key, the namespace and every array's shape) and is used only when all of these
match the entry being asked for; an owner may add its own check (the statistics cache: the
token ids are the text's and every per-token array is as long). An entry that fails (another
text's entry copied over it, arrays of the wrong length, a missing array, a damaged file, a
folder where the file should be) is recomputed, with a note (:func:`collect_notes`), and never
fatal: a folder in an entry's place is left alone and the new entry is simply not stored.

Sizes, listing and clearing (``mia cache``) are :mod:`mia_core.api.cache`.
"""
from __future__ import annotations

import contextvars
import hashlib
import io
import json
import logging
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import SettingsError
from ..paths import cache_root, cache_subdir, cache_writable

NAMESPACES = ("stats", "neighbours", "embeddings", "mlm", "documents", "blind", "loads")


def text_hash(text: str) -> str:
    """A text's cache key: the first 32 hex digits of the SHA-256 of its UTF-8 bytes (lone surrogates kept)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def settings_key(settings: dict) -> str:
    """The settings folder's name: the first 20 hex digits of the SHA-256 of ``settings`` as sorted JSON
    (values JSON cannot write are written with ``str``).
    """
    blob = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


ENTRY = "__entry__"  # the array in every entry that says what the entry is for

_NOTES: contextvars.ContextVar[list | None] = contextvars.ContextVar("mia_cache_notes", default=None)
_log = logging.getLogger("mia_core.cache")  # the package's logger, as before the split
_LOGGED: set[str] = set()  # the notes sent to the logger (outside a collect_notes block) by this process


@contextmanager
def collect_notes():
    """Collect, for the block (this thread / context), the notes of cache entries that were rejected on
    read or could not be stored: ``with collect_notes() as notes: ...``. Outside such a block the
    notes go to the ``mia_core.cache`` logger."""
    notes: list[str] = []
    token = _NOTES.set(notes)
    try:
        yield notes
    finally:
        _NOTES.reset(token)


def note(message: str) -> None:
    """A note about the cache (an entry not used, not stored): collected by :func:`collect_notes` where a block
    collects them (once each), else sent to the ``mia_core.cache`` logger."""
    notes = _NOTES.get()
    if notes is None:
        if message not in _LOGGED:  # once per process: a read-only cache is met by every store a run opens
            if len(_LOGGED) < 10_000:
                _LOGGED.add(message)
            _log.warning(message)
    elif message not in notes:
        notes.append(message)


@dataclass
class Lookup:
    """What :meth:`ArrayCache.lookup` found for a list of keys (text hashes), in their order.

    ``results[i]``: the decoded entry of ``keys[i]``, or None while it is missing; ``missing``: each key the
    cache lacks (first seen first) and every position it holds in ``keys``, so that a text that comes twice
    is computed once. Once a missing key is computed, :meth:`fill` puts its value at all its positions.
    """

    keys: list[str]
    results: list[Any]
    missing: dict[str, list[int]]

    @property
    def n_cached(self) -> int:
        """How many positions the cache answered."""
        return len(self.keys) - sum(map(len, self.missing.values()))

    def first(self, key: str) -> int:
        """The first position of missing ``key`` (where its text is, for the computation)."""
        return self.missing[key][0]

    def fill(self, key: str, value: Any) -> None:
        """Put ``value`` (the computed result of missing ``key``) at every position ``key`` holds.

        Parameters
        ----------
        key : str
            A key of :attr:`missing`.
        value : Any
            Its result, as the owner returns it (the same object at every position).
        """
        for i in self.missing[key]:
            self.results[i] = value


class ArrayCache:
    """A directory of ``.npz`` files, one per text, for one settings key. Entries are verified on read
    (see the module's notes); ``rejected`` lists (text hash, reason) of the entries not used."""

    def __init__(self, namespace: str, settings: dict, enabled: bool = True):
        self.namespace = namespace
        self.settings = settings
        self.key = settings_key(settings)
        self.enabled = enabled
        self.hits = 0
        self.misses = 0
        self.rejected: list[tuple[str, str]] = []
        self.read_only = False
        if enabled and cache_writable() is not None:
            # a filled cache on a read-only mount (or shared read-only): read it, store nothing new
            self.read_only = True
            self.dir = cache_subdir(namespace, writable=False) / self.key
            note(f"cache: {cache_root(writable=False)} is read-only: cached statistics are read from it, "
                  "new ones are not stored")
        elif enabled:
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

    def get(self, h: str, check: Callable[[dict], str | None] | None = None) -> dict[str, np.ndarray] | None:
        """The entry for text hash ``h``, or None (not there, or rejected: see the module's notes).
        ``check(arrays)``: the owner's own test of an entry; a string it returns is the reason to reject."""
        if not self.enabled:
            return None
        p = self._path(h)
        if not os.path.lexists(p):
            self.misses += 1
            return None
        out, why = self._read(p, h, check)
        if out is None:
            self._reject(h, why)
            return None
        self.hits += 1
        return out

    def lookup(self, keys: Sequence[str], decode: Callable[[dict], Any] | None = None,
               check: Callable[[int, dict], str | None] | None = None) -> Lookup:
        """The cached entries of ``keys`` (text hashes) and the keys still to compute.

        Each position is read with :meth:`get` in order (hits, misses and rejections counted as there),
        except a key already found missing at an earlier position: it is computed once for all.

        Parameters
        ----------
        keys : sequence of str
            One key per text (``text_hash``), duplicates allowed.
        decode : callable, optional
            Turns an entry's arrays into what the owner returns (e.g. ``TokenStats.from_arrays``);
            None keeps the arrays.
        check : callable, optional
            ``check(position, arrays)``: the owner's own test of the entry at that position; a string it
            returns is the reason to reject the entry (see :meth:`get`).

        Returns
        -------
        Lookup
            ``results`` (decoded entries, None where missing) and ``missing`` (key -> positions).
        """
        results: list[Any] = [None] * len(keys)
        missing: dict[str, list[int]] = {}
        for i, h in enumerate(keys):
            got = None if h in missing else self.get(h, None if check is None else (lambda a, i=i: check(i, a)))
            if got is not None:
                results[i] = got if decode is None else decode(got)
            else:
                missing.setdefault(h, []).append(i)
        return Lookup(list(keys), results, missing)

    def _read(self, p: Path, h: str, check) -> tuple[dict | None, str]:
        if not p.is_file():
            return None, "not a file"
        try:
            with np.load(p, allow_pickle=False) as z:
                out = {k: z[k] for k in z.files}
        except Exception as e:  # noqa: BLE001 - a damaged entry is recomputed
            return None, f"unreadable ({type(e).__name__})"
        meta = out.pop(ENTRY, None)
        try:
            meta = json.loads(str(meta[()])) if meta is not None else None
        except (ValueError, TypeError, IndexError):
            meta = None
        if not isinstance(meta, dict):
            return None, "it does not say what it is for (written by an older version, or not by this tool)"
        if meta.get("text") != h:
            return None, "it belongs to another text"
        if meta.get("settings") != self.key or meta.get("namespace") != self.namespace:
            return None, "it belongs to other settings or another model"
        shapes = meta.get("shapes")
        if not isinstance(shapes, dict) or set(shapes) != set(out) or any(
                list(out[k].shape) != list(v) for k, v in shapes.items()):
            return None, "its arrays are not the ones it was written with"
        if check is not None:
            why = check(out)
            if why:
                return None, why
        return out, ""

    def _reject(self, h: str, why: str) -> None:
        self.misses += 1
        self.rejected.append((h, why))
        note(f"cache: an entry in {self.dir} was not used and is recomputed ({why}): text {h[:12]}")

    def put(self, h: str, arrays: dict[str, np.ndarray], suffix: str = ".npz") -> None:
        """Store an entry. A write that fails (a full disk, a folder made read-only) stops the run with
        one line naming the folder and the reason, not a traceback."""
        try:
            self._put(h, arrays, suffix)
        except OSError as e:
            raise SettingsError(f"cannot write to the cache folder {self.dir} ({e.strerror or type(e).__name__}): "
                                "free some space there, set MIA_CACHE_DIR to another folder, or run without the "
                                "cache ({cache})", options=("cache",)) from None

    def _put(self, h: str, arrays: dict[str, np.ndarray], suffix: str) -> None:
        if not self.enabled or self.read_only:
            return
        p = self._path(h, suffix)
        p.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(p) and not p.is_file():  # not ours to replace: the entry is simply not stored
            note(f"cache: {p} is not a file (a folder or a link is in the way): that entry is not stored; "
                  "remove it to cache that text again")
            return
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        meta = {"text": h, "settings": self.key, "namespace": self.namespace,
                "shapes": {k: list(v.shape) for k, v in arrays.items()}}
        buf = io.BytesIO()
        np.savez(buf, **arrays, **{ENTRY: np.array(json.dumps(meta, sort_keys=True))})
        _write_atomic(p, buf.getvalue())

    # partial results of long texts (resumable scoring)
    def get_partial(self, h: str) -> dict[str, np.ndarray] | None:
        """A long text's saved progress (the windows done so far, :meth:`put_partial`), or None when the cache is
        off, there is none, or the entry fails its checks (with a note).
        """
        if not self.enabled:
            return None
        p = self._path(h, ".partial.npz")
        if not os.path.lexists(p):
            return None
        out, why = self._read(p, h, None)
        if out is None:
            note(f"cache: a long text's saved progress in {self.dir} was not used ({why}): text {h[:12]}")
        return out

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
        """Remove a long text's saved progress once its complete entry is stored (only a file: never a folder in
        its place; nothing when the cache is off or read-only).
        """
        if self.enabled and not self.read_only:
            p = self._path(h, ".partial.npz")
            if p.is_file():  # ours (a folder in its place is not)
                p.unlink(missing_ok=True)


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
