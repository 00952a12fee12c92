"""The run store's operations: where it lives, a run in memory (:class:`StoredRun`: a
:class:`~mia_core.runs.results.RunResult` plus where it is stored), and saving, listing, loading, deleting and
renaming runs (:func:`read_run`: any saved run folder, read the same way). Reading a folder that may be
damaged is ``mia_core.runs.folder``'s."""
from __future__ import annotations

import json
import os
import re
import secrets
import time
from contextlib import contextmanager
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DataError
from .results import RunResult, check_saved, json_default
from .folder import (
    META, RUN_MARKER, RunUnreadable, _blank_meta, _is_run_folder, _list_entry, one_line, read_run_json, _read_meta,
    _read_run_files, os_reason, _want, write_run_marker
)
from .folder import RUNS_ENV, remove_aside, runs_dir  # noqa: F401  (their home is folder.py; the store's names)

if TYPE_CHECKING:  # pandas is imported where a table is read or written: ``mia --help`` stays light
    import pandas as pd

META_VERSION = 1
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,80}$")




def _run_path(run_id: str, root=None) -> Path:
    if not isinstance(run_id, str) or not _ID_RE.match(run_id) or ".." in run_id:
        raise DataError(f"{run_id!r} is not a run id")
    return runs_dir(root) / run_id


@contextmanager
def _reading(run_id: str):
    """A damaged run folder's ``RunUnreadable`` (or an ``OSError`` meanwhile) as a one-line ``DataError``."""
    try:
        yield
    except RunUnreadable as e:
        raise DataError(one_line(f"run {run_id} is damaged: {e}")) from None
    except OSError as e:  # the folder went away or cannot be read meanwhile
        raise DataError(one_line(f"run {run_id} cannot be read ({os_reason(e)})")) from None


@dataclass
class StoredRun(RunResult):
    """A run of the store: the :class:`~mia_core.runs.results.RunResult` its folder holds, plus where it is
    stored: ``id`` (the folder's name), ``meta`` (its ``meta.json``, normalised) and ``path``.

    Read by :meth:`RunResult.load <mia_core.runs.results.RunResult.load>`, with every file checked
    (:meth:`read_saved`: ``mia_core.runs.folder``)."""

    _: KW_ONLY
    id: str = "unsaved"
    meta: dict = field(default_factory=dict)
    path: Path | None = None

    @property
    def name(self) -> str:
        """The run's name: the one it was saved under (``meta.json``), else its id."""
        return str(self.meta.get("name") or self.id)

    @staticmethod
    def read_saved(out: Path) -> tuple[pd.DataFrame, dict, dict]:
        """``scores.csv``, ``metrics.json``, ``run.json`` (none: empty) of ``out``, each checked; ``DataError``
        (one line) for a damaged folder: a file a link, not JSON, or of another shape than a run's."""
        with _reading(out.name):
            return _read_run_files(out)


def _model_meta(d: dict | None) -> dict | None:
    if not d:
        return None
    return {k: d.get(k) for k in ("name", "identity", "dtype", "quantize", "device", "n_params", "base", "source")}


def build_meta(result, *, name: str | None = None, data: dict | None = None, run_id: str = "") -> dict:
    """The ``meta.json`` content for a ``RunResult``."""
    scores = result.scores
    ev = scores[scores["split"] == "eval"] if "split" in scores.columns else scores
    target = _model_meta(result.models.get("target"))
    ref = _model_meta(result.models.get("reference"))
    n_m, n_n = int((scores["label"] == 1).sum()), int((scores["label"] == 0).sum())
    now = time.time()
    if not name:  # what tells runs apart in a list: model, precision, attacks, data size (the time is shown beside)
        t = target or {}
        q = t.get("quantize")
        # each attack by its label, short (the metrics carry it: "Reference model (...)" -> "Reference model")
        attacks = [str((result.metrics[k] or {}).get("label") or k).split(" (")[0] for k in result.metrics
                   if k != "blind"]
        shown = ", ".join(attacks[:3]) + (f" and {len(attacks) - 3} more" if len(attacks) > 3 else "")
        name = (f"{t.get('name', 'model')} ({t.get('dtype', '')}{', ' + q if q and q != 'none' else ''}) · {shown} · "
                f"{n_m} + {n_n} texts")
    verdict = ((result.shift or {}).get("verdict") or {}).get("level") if result.shift else None
    return {
        "version": META_VERSION,
        "id": run_id,
        "name": name,
        "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)),
        "created_ts": now,
        "target": target,
        "reference": ref,
        "attacks": [k for k in result.metrics if k != "blind"],
        "n_members": n_m,
        "n_nonmembers": n_n,
        "n_eval": int(len(ev)),
        "auc": {k: m.get("auc") for k, m in result.metrics.items() if isinstance(m, dict)},
        "verdict": verdict,
        "data": data or {},
        "content": content_key(result),
    }


def content_key(result) -> str:
    """A digest of what a run says: its settings, its models' identities, every text's scores. Two runs
    with the same key are the same run (a re-run that changed nothing)."""
    import hashlib

    blob = json.dumps({"config": result.config, "models": {k: (v or {}).get("identity") for k, v in result.models.items()},
                       "scores": result.scores.to_csv(index=False)}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _unique_name(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name} #{i}" in taken:
        i += 1
    return f"{name} #{i}"


def _new_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def save_run(result, *, name: str | None = None, data: dict | None = None, root=None) -> StoredRun:
    """Save a ``RunResult`` as a new run (``RunResult.save`` output + ``meta.json``).

    Without a ``name``, a run identical to the newest saved run (the same :func:`content_key`: settings,
    models, scores) is not saved again: that run is returned, with ``meta["unchanged"] = True``. A
    default name already taken gets ``#2``, ``#3``..."""
    existing = list_runs(root)
    if not name and existing and existing[0].get("content") == content_key(result):
        try:
            same = load_run(existing[0]["id"], root)
            same.meta["unchanged"] = True
            return same
        except DataError:
            pass
    run_id = _new_id()
    path = _run_path(run_id, root)
    tmp = path.with_name(path.name + ".tmp")
    result.save(tmp)
    meta = build_meta(result, name=name, data=data, run_id=run_id)
    if not name:
        meta["name"] = _unique_name(meta["name"], {m.get("name") for m in existing})
    (tmp / META).write_text(json.dumps(meta, indent=2, default=json_default))
    write_run_marker(tmp, "run", run_id)
    tmp.rename(path)
    return load_run(run_id, root)


def list_runs(root=None) -> list[dict]:
    """``meta.json`` of every run, newest first.

    Every run folder is listed: a damaged one (meta.json missing, unreadable, not a mapping, fields of
    the wrong type, run files missing, a link in place of the folder) with ``meta["damaged"]``, one line
    saying why, and safe defaults for what could not be read (``name``: its id). Fields of the wrong type
    are replaced by their defaults, so every entry has ``id``, ``name``, ``created`` (text),
    ``created_ts`` (a number), ``target``/``reference`` (mapping or None), ``attacks`` (list), ``auc``
    (mapping of numbers or None), ``data`` (mapping). ``DataError`` only when the runs dir cannot be read."""
    d = runs_dir(root)
    try:
        entries = list(d.iterdir())
    except OSError as e:
        raise DataError(f"the runs folder {d} cannot be read ({os_reason(e)})") from None
    out = []
    for p in entries:
        if p.name.endswith(".tmp") or not _ID_RE.match(p.name):
            continue
        try:
            meta = _list_entry(p)
        except OSError as e:  # the folder went away or cannot be read while listing
            meta = _blank_meta(p.name, p)
            meta["damaged"] = one_line(f"cannot be read ({os_reason(e)})")
        if meta is not None:
            out.append(meta)
    out.sort(key=lambda m: (m["created_ts"], m["id"]), reverse=True)
    return out


def load_run(run_id: str, root=None) -> StoredRun:
    """Read a run back; ``DataError`` (one line) if it does not exist or is damaged in any way: a link
    in place of its folder, a file missing, not JSON, or of another shape than a run's (metrics.json a
    list, run.json null, scores.csv without its columns...). A meta.json field of the wrong type is
    replaced by its default and named in ``meta["damaged"]`` (the run still opens)."""
    path = _run_path(run_id, root)
    if path.is_symlink():
        raise DataError(f"run {run_id} is a link, not a run folder: not opened")
    if not path.is_dir():
        raise DataError(f"no run {run_id!r} in {path.parent}")
    with _reading(run_id):
        meta = _read_meta(path, run_id)
    return StoredRun.load(path, id=run_id, meta=meta, path=path)


def read_run(path) -> StoredRun:
    """A folder that :meth:`RunResult.save <mia_core.runs.results.RunResult.save>` wrote (``result.save(dir)``,
    ``mia run --out``, a run of the store), read as :func:`load_run` reads the store's runs, every file
    checked (``DataError``, one line, for a folder that holds no saved run or a damaged one). ``id``: the
    folder's name; ``meta``: its ``meta.json`` (normalised) when it has one, else ``{}``."""
    if not isinstance(path, (str, os.PathLike)):
        raise DataError(f"give the path of a saved run's folder, not {type(path).__name__}")
    p = Path(path).expanduser()
    shown = one_line(os.fspath(p), 120)
    try:
        if p.is_symlink():
            raise DataError(f"{shown} is a link, not a run folder: not opened")
        if not p.is_dir():
            raise DataError(f"{shown} is not a folder: give the folder a run was saved in (result.save(dir))"
                            if p.exists() else f"no folder {shown}: give the folder a run was saved in")
        check_saved(p)
    except OSError as e:  # a name longer than the system allows, a folder that cannot be read
        raise DataError(f"{shown} cannot be read ({os_reason(e)})") from None
    except ValueError:  # a NUL character in the name
        raise DataError(f"{shown} is not a valid folder name") from None
    with _reading(p.name):
        meta = _read_meta(p, p.name) if os.path.lexists(p / META) else {}
    return StoredRun.load(p, id=p.name, meta=meta, path=p)




def delete_run(run_id: str, root=None) -> None:
    """Delete a run of the store: a folder inside the runs dir that the store saved (its marker,
    :func:`mia_core.runs.folder.is_own_run`), damaged or not; ``DataError`` (one line, nothing removed) for anything
    else: a user's own folder is never removed, whatever it holds. A link in place of a run folder is removed as a
    link: what it points to is never touched."""
    path = _run_path(run_id, root)
    if path.is_symlink():
        try:
            path.unlink()
        except OSError as e:
            raise DataError(f"the link {run_id} cannot be removed ({os_reason(e)})") from None
        return
    if not path.is_dir():
        raise DataError(f"no run {run_id!r} to delete")
    if path.resolve().parent != runs_dir(root).resolve() or not _is_run_folder(path):
        raise DataError(f"{run_id} is not a run the store saved (it has no {RUN_MARKER}): not deleted, nothing "
                        "removed")
    remove_aside(path, f"run {run_id}", _is_run_folder)


def foreign_folders(root=None) -> list[str]:
    """The names of what the runs dir holds that the store did not write (a user's own folders and files): never
    listed as runs, never deleted; the Runs page says how many there are. The kinds' own folders (``_<kind>``) and
    the store's temporary and hidden names are not counted; inside a kind's folder, what it did not write is
    counted as ``_<kind>/<name>``."""
    from .kinds import MARKER, stores_in

    d = runs_dir(root)
    try:
        entries = sorted(d.iterdir())
        stores = {s.subdir: s for s in stores_in(d)}
    except OSError:
        return []
    out = []
    for p in entries:
        if p.name.startswith(".") or p.name.endswith(".tmp"):
            continue
        if p.name in stores:
            s = stores[p.name]
            try:
                inner = sorted(p.iterdir())
            except OSError:
                continue
            out += [f"{p.name}/{k.name}" for k in inner if k.name != MARKER and not k.name.startswith(".")
                    and not k.name.endswith(".tmp") and not (k.is_symlink() and s.id_form(k.name))
                    and not s.owns(k)]
        elif p.is_symlink():  # a link in a run's place is listed (as damaged, removable as a link); others are not
            if _list_entry(p) is None:
                out.append(p.name)
        elif not _is_run_folder(p):
            out.append(p.name)
    return out


def rename_run(run_id: str, name: str, root=None) -> None:
    """Give a run another name (an empty name keeps the old one); ``DataError`` when its meta.json cannot
    be read or written."""
    path = _run_path(run_id, root)
    if path.is_symlink() or not path.is_dir():
        raise DataError(f"no run {run_id!r} to rename")
    try:
        meta = read_run_json(path, META)
        _want(meta, "meta.json", "a mapping", null=False)
    except RunUnreadable as e:
        raise DataError(one_line(f"run {run_id} is damaged: {e}")) from None
    new = str(name).strip() if name is not None else ""
    if new:
        meta["name"] = new
    elif not isinstance(meta.get("name"), str):
        meta["name"] = run_id
    tmp = path / (META + ".tmp")
    try:
        tmp.write_text(json.dumps(meta, indent=2))
        os.replace(tmp, path / META)
    except OSError as e:
        raise DataError(f"run {run_id} cannot be renamed ({os_reason(e)})") from None


def latest_run(*, target_identity: str | None = None, root=None) -> StoredRun | None:
    """The newest run (for ``target_identity``: the newest run on that exact model)."""
    for meta in list_runs(root):
        if target_identity is not None and (meta.get("target") or {}).get("identity") != target_identity:
            continue
        try:
            return load_run(meta["id"], root)
        except DataError:
            continue
    return None
