"""One run store for every audit: a finished run of any registered audit is saved, listed, opened again, compared
with another of its kind and deleted here, by its kind (the audit's name: ``"run"``, ``"documents"``, ``"mlm"``,
``"infer-dataset"``) and its id.

Where the runs live: ``<runs dir>/<id>/`` for the calibration runs (:mod:`mia_core.runs`, which keeps its own
listing fields and its paired comparison), ``<runs dir>/_<kind>/<id>/`` for the others (each audit's ``store()``, a
:class:`mia_core.runs.kinds.KindStore`). Every folder holds what the result's ``save`` writes (so ``mia_core.load``
reads it too) and a ``meta.json`` the listing reads. Only folders the store wrote are ever deleted.
"""
from __future__ import annotations

import math

from ..errors import DataError
from . import AUDITS, audit_named


def kinds() -> list[str]:
    """Every audit whose runs are kept, in the registry's order."""
    return list(AUDITS)


def save_run(kind: str, result, *, name: str | None = None, root=None) -> dict:
    """Save ``result`` (a finished ``kind`` audit) as a new run; returns its ``meta.json`` (``id``, ``name``,
    ``created``...). The default name says the model, the data and the headline figure (the audit's
    ``describe``); a calibration run identical to the newest is not saved twice (:func:`mia_core.runs.save_run`)."""
    a = audit_named(kind)
    _result_of(a, result)
    store = a.store()
    if store is None:
        from ..runs import save_run as save_calibration

        return {**save_calibration(result, name=name, root=root).meta, "kind": kind}
    meta = dict(a.describe(result))
    if name:
        meta["name"] = str(name)
    return {**store.save(result, meta, root=root, save=lambda folder: a.keep(result, folder)), "kind": kind}


def list_runs(kind: str | None = None, root=None) -> list[dict]:
    """The saved runs of ``kind`` (None: of every kind), newest first, each ``meta.json`` normalised (every field
    the Runs page shows, of its type; a damaged run listed with ``damaged``, one line) with its ``kind``."""
    out = []
    for k in ([audit_named(kind).name] if kind is not None else kinds()):
        store = AUDITS[k].store()
        if store is None:
            from ..runs import list_runs as list_calibration

            metas = list_calibration(root)
        else:
            metas = store.list(root)
        out.extend({**m, "kind": k} for m in metas)
    out.sort(key=lambda m: (m["created_ts"], m["id"]), reverse=True)
    return out


def open_run(kind: str, run_id: str, root=None):
    """A saved run read back as its audit's result (every file checked; ``DataError`` in one line for a run that is
    missing or damaged)."""
    a = audit_named(kind)
    store = a.store()
    if store is None:
        from ..runs import load_run

        return load_run(run_id, root)
    path = store.path(run_id, root)
    if not path.is_symlink() and not path.exists():
        raise DataError(f"no {store.words} {run_id!r} in {path.parent}")
    return a.load(path)


def delete_run(kind: str, run_id: str, root=None) -> None:
    """Delete a saved run: only a folder the store wrote (``DataError`` in one line otherwise, nothing removed)."""
    store = audit_named(kind).store()
    if store is None:
        from ..runs import delete_run as delete_calibration

        delete_calibration(run_id, root)
    else:
        store.delete(run_id, root)


def _result_of(audit, result, name: str = "result"):
    """``result`` when it is one of ``audit``'s results; a one-line ``SettingsError`` naming ``name`` otherwise."""
    from ..inputs import bad_value

    if not isinstance(result, audit.result()):
        raise bad_value(name, f"what the {audit.title} returns ({audit.result().__name__})", result)
    return result


def _number(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def compare_runs(kind: str, a, b) -> list[dict]:
    """Two results of audit ``kind`` side by side: one row per figure either has (the audit's ``figures``), with
    ``A``, ``B`` and ``difference`` (B − A, where both are numbers; None otherwise). No confidence interval: runs
    of these audits keep no resamples to pair (the calibration runs' paired comparison is
    :func:`mia_core.reports.report.compare_table`)."""
    audit = audit_named(kind)
    fa, fb = audit.figures(_result_of(audit, a, "a")), audit.figures(_result_of(audit, b, "b"))
    rows = []
    for k in list(fa) + [k for k in fb if k not in fa]:
        va, vb = fa.get(k), fb.get(k)
        na, nb = _number(va), _number(vb)
        rows.append({"figure": k, "A": va, "B": vb,
                     "difference": nb - na if na is not None and nb is not None else None})
    return rows


__all__ = ["kinds", "save_run", "list_runs", "open_run", "delete_run", "compare_runs"]
