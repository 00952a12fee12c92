"""Saved dataset-inference runs, beside the calibration runs (``mia_core.runs``).

They live in ``<runs dir>/_dataset_inference/<id>/`` (the calibration runs' listing skips names that
start with ``_``): what ``DatasetInferenceResult.save`` writes (``dataset_inference.json``,
``scores.csv``, ``report.html``) plus ``meta.json`` (name, time, verdict, p-value, sizes). A folder
that cannot be read is listed with the reason, never stops the listing; only folders this module
made (their id, and a ``meta.json``) are ever deleted.
"""
from __future__ import annotations

import json
import re
import secrets
import shutil
import time
from pathlib import Path

from ..errors import DataError
from .audit import RESULT_FILE

SUBDIR = "_dataset_inference"
META = "meta.json"
_ID_RE = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")


def store_dir(root=None) -> Path:
    from ..runs import runs_dir

    d = runs_dir(root) / SUBDIR
    d.mkdir(parents=True, exist_ok=True)
    return d


def save(result, *, name: str | None = None, model: str | None = None, root=None) -> dict:
    """Save a result as a new run; returns its meta."""
    from ..results import json_default

    s = result.summary
    run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
    path = store_dir(root) / run_id
    tmp = path.with_name(path.name + ".tmp")
    result.save(tmp)
    meta = {"id": run_id, "name": name or f"{s['n_suspect']} suspect vs {s['n_validation']} validation "
                                          f"{'books' if s.get('mode') == 'books' else 'texts'}",
            "created": time.strftime("%Y-%m-%d %H:%M"), "created_ts": time.time(), "model": model,
            "verdict": s.get("verdict"), "p_value": s.get("p_value"), "p_value_is_bound": s.get("p_value_is_bound"),
            "n_suspect": s.get("n_suspect"), "n_validation": s.get("n_validation"), "alpha": s.get("alpha"),
            "blind_auc": s.get("blind_auc"), "mode": s.get("mode", "texts")}
    (tmp / META).write_text(json.dumps(meta, indent=2, default=json_default))
    tmp.rename(path)
    return meta


def list_runs(root=None) -> list[dict]:
    """Every saved dataset-inference run's meta, newest first; an unreadable one with ``damaged``."""
    out = []
    for p in store_dir(root).iterdir():
        if not _ID_RE.match(p.name) or p.is_symlink() or not p.is_dir():
            continue
        try:
            meta = json.loads((p / META).read_text())
            if not isinstance(meta, dict):
                raise ValueError("meta.json is not a mapping")
            meta["id"] = p.name
        except (OSError, ValueError) as e:
            meta = {"id": p.name, "name": p.name, "created": "?", "created_ts": 0.0,
                    "damaged": f"cannot be read ({type(e).__name__})"}
        out.append(meta)
    out.sort(key=lambda m: (float(m.get("created_ts") or 0), m["id"]), reverse=True)
    return out


def run_path(run_id: str, root=None) -> Path:
    if not _ID_RE.match(str(run_id)):
        raise DataError(f"{run_id!r} is not a dataset-inference run id")
    return store_dir(root) / run_id


def load_summary(run_id: str, root=None) -> dict:
    try:
        return json.loads((run_path(run_id, root) / RESULT_FILE).read_text())
    except (OSError, ValueError) as e:
        raise DataError(f"dataset-inference run {run_id} cannot be read ({type(e).__name__})") from None


def delete(run_id: str, root=None) -> None:
    """Delete a run this module saved (its id and its meta.json); nothing else."""
    p = run_path(run_id, root)
    if p.is_symlink() or not p.is_dir() or not (p / META).is_file():
        raise DataError(f"{p} is not a saved dataset-inference run: not deleted")
    shutil.rmtree(p)
