"""On-disk cache of computed statistics, keyed by (model identity, settings, text hash).

Layout: ``<cache root>/<namespace>/<settings key>/<hh>/<text hash>.npz`` where the settings
key is a hash of the JSON settings (model identity incl. dtype and quantisation, window
length, prefix policy, statistics version...). Arrays are stored with ``numpy.savez``
(``allow_pickle=False`` on load: nothing in the cache is ever unpickled).

``clear_cache()`` removes what the cache wrote and nothing else (:func:`plan_clear` lists it first); ``cache_info()`` reports sizes. An unusable cache folder
(``MIA_CACHE_DIR`` a file, not writable, ...) is a one-line ``SettingsError`` from either.

Entries are checked on every read, never trusted (a cache folder may be shared by several
writers, copied, or edited): each entry carries what it is for (``__entry__``: the text hash,
the settings key, the namespace and every array's shape) and is used only when all of these
match the entry being asked for; an owner may add its own check (the statistics cache: the
token ids are the text's and every per-token array is as long). An entry that fails (another
text's entry copied over it, arrays of the wrong length, a missing array, a damaged file, a
folder where the file should be) is recomputed, with a note (:func:`collect_notes`), and never
fatal: a folder in an entry's place is left alone and the new entry is simply not stored.
"""
from __future__ import annotations

import contextvars
import hashlib
import io
import json
import logging
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .errors import SettingsError
from .paths import cache_root, cache_subdir, cache_writable

NAMESPACES = ("stats", "neighbours", "embeddings", "mlm", "documents")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def settings_key(settings: dict) -> str:
    blob = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


ENTRY = "__entry__"  # the array in every entry that says what the entry is for

_NOTES: contextvars.ContextVar[list | None] = contextvars.ContextVar("mia_cache_notes", default=None)
_log = logging.getLogger(__name__)


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


def _note(message: str) -> None:
    notes = _NOTES.get()
    if notes is None:
        _log.warning(message)
    elif message not in notes:
        notes.append(message)


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
            _note(f"cache: {cache_root(writable=False)} is read-only: cached statistics are read from it, "
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
        _note(f"cache: an entry in {self.dir} was not used and is recomputed ({why}): text {h[:12]}")

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
            _note(f"cache: {p} is not a file (a folder or a link is in the way): that entry is not stored; "
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
        if not self.enabled:
            return None
        p = self._path(h, ".partial.npz")
        if not os.path.lexists(p):
            return None
        out, why = self._read(p, h, None)
        if out is None:
            _note(f"cache: a long text's saved progress in {self.dir} was not used ({why}): text {h[:12]}")
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


def cache_info() -> dict:
    """The cache root and, per kind of entry, how many files and MB it holds.

    ``SettingsError`` (one line, naming the folder) when the cache cannot be used or read.
    """
    root = cache_root(writable=False)
    out = {"root": str(root), "namespaces": {}}
    why = cache_writable()
    if why:
        out["read_only"] = why
    try:
        for ns in sorted(p.name for p in root.iterdir() if p.is_dir()):
            files = [p for p in (root / ns).rglob("*") if p.is_file()]
            out["namespaces"][ns] = {"files": len(files),
                                     "mb": round(sum(p.stat().st_size for p in files) / 2**20, 1)}
    except OSError as e:
        raise SettingsError(f"cannot read the cache folder {root} ({e.strerror or type(e).__name__}"
                            f"{': ' + str(e.filename) if e.filename else ''})") from None
    return out


# --------------------------------------------------------------------------- what `cache clear` may remove
# Only what this tool wrote and can recognise as its own, file by file: an entry
# ``<namespace>/<20-hex settings key>/<2 hex>/<32-hex text hash>[.partial].npz`` (or the temporary file
# ``_write_atomic`` leaves while writing one) under a settings folder that holds its ``settings.json``; a
# converted model copy that carries its marker; a saved run (only when asked). Anything else in the folder
# (another tool's folders when MIA_CACHE_DIR is shared, a user's notes, a file dropped into a settings
# folder) is left alone and listed, and a folder holding nothing of ours is refused.
STAT_NAMESPACES = NAMESPACES + ("token_frequency", "gradients")
_KEY_RE = re.compile(r"^[0-9a-f]{20}$")
_SHARD_RE = re.compile(r"^[0-9a-f]{2}$")
_ENTRY_RE = re.compile(r"^[0-9a-f]{32}(\.partial)?\.npz$")
_TMP_RE = re.compile(r"^\.(?:[0-9a-f]{32}(?:\.partial)?\.npz|settings\.json)\..+\.tmp$")
ROOT_FILES = ("throughput.json",)  # written by mia_core.estimate


@dataclass
class ClearPlan:
    """What :func:`clear_cache` would remove from ``root`` and what it leaves (see the notes above)."""

    root: Path
    files: list[Path] = field(default_factory=list)  # our files, removed
    folders: list[Path] = field(default_factory=list)  # our folders, removed if empty once the files are gone
    trees: list[Path] = field(default_factory=list)  # converted model copies (carry their marker), removed whole
    runs: list[str] = field(default_factory=list)  # saved run ids, removed (only when asked)
    removed_by_kind: dict = field(default_factory=dict)  # kind -> [count, bytes]
    kept: dict = field(default_factory=dict)  # kind kept unless asked -> [count, bytes]
    strays: list[Path] = field(default_factory=list)  # inside our folders but not ours: left alone
    foreign: list[str] = field(default_factory=list)  # top-level names that are not the cache's: left alone

    def add(self, kind: str, n: int, size: int, where: dict | None = None) -> None:
        c = (self.removed_by_kind if where is None else where).setdefault(kind, [0, 0])
        c[0] += n
        c[1] += size

    @property
    def empty(self) -> bool:
        return not (self.files or self.trees or self.runs or self.folders)

    def lines(self) -> list[str]:
        """What a person reads before anything is removed."""
        mb = lambda b: f"{b / 2**20:.1f} MB"  # noqa: E731
        out = [f"cache folder {self.root}"]
        if self.removed_by_kind:
            out.append("will remove: " + "; ".join(f"{k} ({n} file{'s' if n != 1 else ''}, {mb(b)})"
                                                  for k, (n, b) in sorted(self.removed_by_kind.items())))
        else:
            out.append("will remove: nothing (no cached statistics)")
        hints = {"models": "add --models to remove them", "runs": "add --runs to remove them"}
        for k, (n, b) in sorted(self.kept.items()):
            what = ("converted model cop" + ("y" if n == 1 else "ies")) if k == "models" else \
                ("saved run" + ("" if n == 1 else "s"))
            out.append(f"kept: {n} {what} ({mb(b)}); {hints[k]}")
        if self.strays:
            shown = ", ".join(str(p.relative_to(self.root)) for p in self.strays[:3])
            out.append(f"left alone inside the cache's folders (not written by mia): {shown}"
                       + (f" and {len(self.strays) - 3} more" if len(self.strays) > 3 else ""))
        if self.foreign:
            shown = ", ".join(self.foreign[:6]) + (f" and {len(self.foreign) - 6} more" if len(self.foreign) > 6 else "")
            out.append(f"left alone (not the cache's): {shown}")
        return out


def _size(p: Path) -> int:
    try:
        return p.lstat().st_size
    except OSError:
        return 0


def _tree_size(p: Path) -> tuple[int, int]:
    n = b = 0
    for f in p.rglob("*"):
        if f.is_file() and not f.is_symlink():
            n += 1
            b += _size(f)
    return n, b


def _real_dir(p: Path) -> bool:
    return p.is_dir() and not p.is_symlink()


def _real_file(p: Path) -> bool:
    return p.is_file() and not p.is_symlink()


def _plan_namespace(plan: ClearPlan, ns: Path) -> None:
    for key in sorted(ns.iterdir()):
        if not (_real_dir(key) and _KEY_RE.match(key.name) and _real_file(key / "settings.json")):
            plan.strays.append(key)
            continue
        for x in sorted(key.iterdir()):
            if x.name == "settings.json" or (_TMP_RE.match(x.name) and _real_file(x)):
                plan.files.append(x)
            elif _real_dir(x) and _SHARD_RE.match(x.name):
                for f in sorted(x.iterdir()):
                    if _real_file(f) and (_ENTRY_RE.match(f.name) or _TMP_RE.match(f.name)):
                        plan.files.append(f)
                        plan.add(ns.name, 1, _size(f))
                    else:
                        plan.strays.append(f)
                plan.folders.append(x)
            else:
                plan.strays.append(x)
        plan.folders.append(key)
    plan.folders.append(ns)


def plan_clear(include_models: bool = False, include_runs: bool = False, root: Path | None = None) -> ClearPlan:
    """What ``cache clear`` would remove (nothing is removed here). ``SettingsError`` (one line) when the
    folder cannot be read, or holds things but nothing the cache wrote (MIA_CACHE_DIR pointing at the
    wrong folder)."""
    from .models.gguf import CONVERTED_MARKER

    root = Path(root) if root is not None else cache_root(writable=False)
    plan = ClearPlan(root=root)
    try:
        entries = sorted(root.iterdir())
        ours = 0
        for p in entries:
            if p.name in STAT_NAMESPACES and _real_dir(p):
                _plan_namespace(plan, p)
                ours += 1
            elif p.name == "models" and _real_dir(p):
                ours += 1
                for m in sorted(p.iterdir()):
                    if _real_dir(m) and _real_file(m / CONVERTED_MARKER):
                        n, b = _tree_size(m)
                        if include_models:
                            plan.trees.append(m)
                            plan.add("models", 1, b)
                        else:
                            plan.add("models", 1, b, plan.kept)
                    else:
                        plan.strays.append(m)
                if include_models:
                    plan.folders.append(p)
            elif p.name == "runs" and _real_dir(p):
                ours += 1
                _plan_runs(plan, p, include_runs)
            elif p.name in ROOT_FILES and _real_file(p):
                ours += 1
                plan.files.append(p)
            elif p.name.startswith(".mia-write-check-"):
                continue  # another process's probe, gone in a moment
            else:
                plan.foreign.append(p.name + ("/" if p.is_dir() else ""))
    except OSError as e:
        raise SettingsError(f"cannot read the cache folder {root} ({e.strerror or type(e).__name__}"
                            f"{': ' + str(e.filename) if e.filename else ''}): nothing removed") from None
    if plan.foreign and not ours:
        raise SettingsError(f"{root} does not look like a mia-dashboard cache folder (none of its {len(entries)} "
                            f"entries is the cache's, e.g. {plan.foreign[0]}): nothing removed. Check MIA_CACHE_DIR")
    return plan


def _plan_runs(plan: ClearPlan, folder: Path, include: bool) -> None:
    """Saved runs in ``<cache>/runs`` (the dashboard's default store): kept unless asked. Only folders
    that the run store recognises as its runs (a run id name, a ``meta.json``) count."""
    from .runs import META, _ID_RE  # the store's own rule for its run ids

    for r in sorted(folder.iterdir()):
        if _real_dir(r) and _ID_RE.match(r.name) and not r.name.endswith(".tmp") and _real_file(r / META):
            n, b = _tree_size(r)
            if include:
                plan.runs.append(r.name)
                plan.add("runs", 1, b)
            else:
                plan.add("runs", 1, b, plan.kept)
        else:
            plan.strays.append(r)


def clear_cache(include_models: bool = False, include_runs: bool = False, plan: ClearPlan | None = None) -> ClearPlan:
    """Remove what :func:`plan_clear` lists (cached statistics; converted model copies and saved runs only
    when asked), never anything else. Returns the plan carried out. ``SettingsError`` when something of
    ours could not be removed."""
    plan = plan or plan_clear(include_models, include_runs)
    cache_root()  # removing needs a writable folder (one line when it is not)
    failed = []
    for f in plan.files:
        try:
            f.unlink()
        except FileNotFoundError:
            pass
        except OSError as e:
            failed.append(f"{f.relative_to(plan.root)} ({e.strerror})")
    for t in plan.trees:
        shutil.rmtree(t, ignore_errors=True)
        if t.exists():
            failed.append(str(t.relative_to(plan.root)))
    if plan.runs:
        from .runs import delete_run

        for rid in plan.runs:
            try:
                delete_run(rid, plan.root / "runs")
            except Exception as e:  # noqa: BLE001 - said below, the others still go
                failed.append(f"runs/{rid} ({e})")
    for d in plan.folders:  # deepest first; a folder that still holds something not ours stays
        try:
            d.rmdir()
        except OSError:
            pass
    if failed:
        raise SettingsError(f"could not remove {len(failed)} item(s) from the cache folder {plan.root} "
                            f"(e.g. {failed[0]}); check its permissions")
    return plan
