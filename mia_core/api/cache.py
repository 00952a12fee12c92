"""The cache command's front door: what ``mia cache`` does: the cache's sizes (``cache info``) and, file by file, what ``cache clear`` removes.

``clear_cache()`` removes what the cache wrote and nothing else (:func:`plan_clear` lists it first); ``cache_info()``
reports sizes. An unusable cache folder (``MIA_CACHE_DIR`` a file, not writable, ...) is a one-line ``SettingsError``
from either. The entries themselves are written and read by :mod:`mia_core.cache.store`.
"""
from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SettingsError
from ..paths import cache_root, cache_writable
from ..cache.store import NAMESPACES




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
        """Count ``n`` files of ``size`` bytes under ``kind``: in :attr:`removed_by_kind`, or in ``where`` (e.g.
        :attr:`kept`) when given.
        """
        c = (self.removed_by_kind if where is None else where).setdefault(kind, [0, 0])
        c[0] += n
        c[1] += size

    @property
    def empty(self) -> bool:
        """Whether there is nothing to remove (no file, model copy, saved run or folder)."""
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
    from ..models.gguf import CONVERTED_MARKER

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
    that the run store recognises as its runs count (the run marker it writes: ``mia_core.runs.folder.is_own_run``):
    a calibration run, and in each other audit's folder (``_documents``, ``_masked_lm``, ``_dataset_inference``: a
    folder with the store's marker, ``mia_core.runs.kinds.stores_in``) a run of that store; ``plan.runs`` names the
    latter ``<folder>/<id>``."""
    from ..runs import _ID_RE  # the store's own rule for its run ids
    from ..runs.folder import _is_run_folder
    from ..runs.kinds import ID_RE, MARKER, stores_in

    stores = {s.subdir: s for s in stores_in(folder)}
    subdirs = set(stores)

    def take(r: Path, name: str) -> None:
        n, b = _tree_size(r)
        if include:
            plan.runs.append(name)
            plan.add("runs", 1, b)
        else:
            plan.add("runs", 1, b, plan.kept)

    for r in sorted(folder.iterdir()):
        if _real_dir(r) and _ID_RE.match(r.name) and not r.name.endswith(".tmp") and _is_run_folder(r):
            take(r, r.name)
        elif r.name in subdirs and _real_dir(r):
            for k in sorted(r.iterdir()):
                if _real_dir(k) and ID_RE.match(k.name) and stores[r.name].owns(k):
                    take(k, f"{r.name}/{k.name}")
                elif k.name != MARKER:
                    plan.strays.append(k)
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
        from ..runs import delete_run
        from ..runs.kinds import stores_in

        stores = {s.subdir: s for s in stores_in(plan.root / "runs")}
        for rid in plan.runs:
            sub, _, kid = rid.rpartition("/")
            try:
                if sub:  # another audit's run: deleted by its store (what it wrote, nothing else)
                    stores[sub].delete(kid, plan.root / "runs")
                else:
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
