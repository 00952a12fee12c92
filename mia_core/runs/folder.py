"""One run folder, read defensively: what it holds, and every check that a damaged one fails.

A run folder holds ``scores.csv``, ``metrics.json``, ``run.json`` (what
:meth:`mia_core.pipeline.RunResult.save` writes) and ``meta.json``. Anything in it may be damaged: a
file missing, a link (never followed), not UTF-8, not JSON, of another shape than a run's. Here:

* :func:`read_run_json` reads one JSON file or raises ``RunUnreadable`` (one line: why);
* :func:`_normalise_meta` gives ``meta.json`` every field of the type the pages expect, naming what it
  replaced in ``meta["damaged"]``; :func:`_list_entry` is one entry of a listing;
* :func:`_check_metrics`, :func:`_check_run`, :func:`_read_scores` check ``metrics.json``,
  ``run.json`` and ``scores.csv`` against the types the pages and the report read;
  :func:`_read_run_files` reads the three with these checks (``StoredRun.read_saved``: the run is then
  made by :meth:`mia_core.runs.results.RunResult.from_saved`), :func:`_read_meta` reads ``meta.json``.

``mia_core.runs.store`` turns ``RunUnreadable`` into a ``DataError`` or a listing's ``damaged`` line.
"""
from __future__ import annotations

import json
import math
import os
import re
import secrets
import shutil
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .results import RUN_FILES, read_csv

RUNS_ENV = "MIA_RUNS_DIR"

if TYPE_CHECKING:  # pandas is imported where a table is read or written: ``mia --help`` stays light
    import pandas as pd

META = "meta.json"
_NEW_ID_RE = re.compile(r"^(\d{8}-\d{6})-[0-9a-f]{6}$")  # what store._new_id makes
MAX_META_BYTES = 16 * 2**20  # a meta.json is a few KiB: a bigger one is not read when listing


class RunUnreadable(Exception):
    """Why a run folder cannot be read (turned into ``DataError`` or a listing's ``damaged``)."""


def one_line(s, limit: int = 300) -> str:
    """``s`` as one short printable line (messages here may carry what a damaged file holds)."""
    s = re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+", " ", str(s)).strip()
    return s if len(s) <= limit else s[: limit - 1] + "…"


def json_kind(v) -> str:
    """What a JSON value is, in words (for "x is a list, not a mapping")."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true/false"
    if isinstance(v, (int, float)):
        return "a number" if is_json_number(v) else "a number too large to use"
    if isinstance(v, str):
        return "text"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "a mapping"
    return type(v).__name__


def is_json_number(v) -> bool:
    """A JSON number the pages can format: not true/false, and an integer only as large as a float holds (a
    300-digit integer would make ``f"{v:.3f}"`` or ``math.isfinite`` raise)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        float(v)
    except OverflowError:
        return False
    return True


_WANT = {"a mapping": lambda v: isinstance(v, dict), "a list": lambda v: isinstance(v, list),
         "a number": is_json_number, "text": lambda v: isinstance(v, str), "true/false": lambda v: isinstance(v, bool)}


def _want(v, where: str, want: str, *, null: bool = True):
    """``v`` when it is ``want`` (or None, with ``null``); else ``RunUnreadable`` naming ``where``."""
    if (v is None and null) or _WANT[want](v):
        return v
    raise RunUnreadable(f"{where} is {json_kind(v)}, not {want}")


def os_reason(e: OSError) -> str:
    """An ``OSError`` in a few words (its ``strerror``, else its type), for a one-line message."""
    return e.strerror or type(e).__name__


def read_run_json(path: Path, fname: str, *, max_bytes: int | None = None):
    """``path/fname`` parsed; ``RunUnreadable`` when it is missing, a link (never followed), unreadable or not JSON."""
    f = path / fname
    if f.is_symlink():
        raise RunUnreadable(f"{fname} is a link (not followed)")
    try:
        st = f.stat()
        if not stat.S_ISREG(st.st_mode):  # a folder, or a FIFO that would block the listing forever
            raise RunUnreadable(f"{fname} is not a regular file")
        if max_bytes is not None and st.st_size > max_bytes:
            raise RunUnreadable(f"{fname} is over {max_bytes // 2**20} MiB")
        text = f.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunUnreadable(f"{fname} is missing") from None
    except OSError as e:
        raise RunUnreadable(f"{fname} cannot be read ({os_reason(e)})") from None
    except UnicodeDecodeError:
        raise RunUnreadable(f"{fname} is not UTF-8 text") from None
    try:
        return json.loads(text)
    except ValueError as e:
        raise RunUnreadable(f"{fname} is not JSON ({e})") from None
    except RecursionError:
        raise RunUnreadable(f"{fname} is nested too deeply") from None


def read_saved_json(folder: Path, fname: str, what: str, *, needs: tuple = (), max_bytes: int = 256 * 2**20) -> dict:
    """``folder/fname`` of a saved result, parsed (never unpickled): a JSON object holding the keys ``needs``.
    ``DataError`` in one line naming the folder and ``what`` it should hold (``"document audit"``) when the folder
    or the file is missing, a link, too large, not JSON or of another shape."""
    from ..errors import DataError

    try:
        if folder.is_symlink():
            raise RunUnreadable("its folder is a link (not followed)")
        if not folder.is_dir():
            raise RunUnreadable("it is not a folder")
        raw = read_run_json(folder, fname, max_bytes=max_bytes)
        if not isinstance(raw, dict):
            raise RunUnreadable(f"{fname} holds {json_kind(raw)}, not an object")
        missing = [k for k in needs if k not in raw]
        if missing:
            raise RunUnreadable(f"{fname} lacks {', '.join(missing)}")
    except RunUnreadable as e:
        raise DataError(one_line(f"{folder} does not hold a saved {what}: {e}")) from None
    return raw


RUN_MARKER = ".mia-run.json"  # what the store writes into every run it saves: the runs it may list and delete
TOOL = "mia-dashboard"
MAX_MARKER_BYTES = 64 * 2**10


def write_run_marker(folder: Path, kind: str, run_id: str) -> None:
    """Mark ``folder`` as a run the store saved: the tool's name and version, the run's kind and id."""
    from ..version import __version__

    rec = {"tool": TOOL, "version": __version__, "kind": kind, "id": run_id,
           "created": time.strftime("%Y-%m-%d %H:%M:%S")}
    (Path(folder) / RUN_MARKER).write_text(json.dumps(rec, indent=2))


def _small_json(f: Path, limit: int):
    """The JSON of the real, small file ``f`` (None when it is a link, missing, larger than ``limit`` or not JSON)."""
    try:
        if f.is_symlink() or not f.is_file() or f.stat().st_size > limit:
            return None
        return json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def is_own_run(p: Path, kind: str = "run", id_re: re.Pattern = _NEW_ID_RE) -> bool:
    """Is ``p`` a run the store saved, of ``kind``? A real directory (not a link) holding the store's
    :data:`RUN_MARKER` (a real file that names this tool and ``kind``), whatever else in it is damaged; or a run
    saved before the marker existed: a name of the store's id form (``id_re``) and a ``meta.json`` (a real file)
    that records that very id. Anything else (a user's own folder, whatever files it holds) is not a run: never
    listed as one, never deleted."""
    try:
        if p.is_symlink() or not p.is_dir():
            return False
        if os.path.lexists(p / RUN_MARKER):
            rec = _small_json(p / RUN_MARKER, MAX_MARKER_BYTES)
            return isinstance(rec, dict) and rec.get("tool") == TOOL and rec.get("kind") == kind
        if not id_re.match(p.name):
            return False
        meta = _small_json(p / META, MAX_META_BYTES)
        return isinstance(meta, dict) and meta.get("id") == p.name
    except OSError:
        return False


def _is_run_folder(p: Path) -> bool:
    """A calibration run the store saved (:func:`is_own_run`)."""
    return is_own_run(p, "run")


def _fallback_ts(p: Path) -> float:
    """When a run was made, for a run whose meta.json does not say: from its id, else the folder's time."""
    m = _NEW_ID_RE.match(p.name)
    if m:
        try:
            return time.mktime(time.strptime(m.group(1), "%Y%m%d-%H%M%S"))
        except (ValueError, OverflowError):
            pass
    try:
        return p.lstat().st_mtime
    except OSError:
        return 0.0


def _fmt_ts(ts: float) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
    except (ValueError, OverflowError, OSError):
        return ""


def _blank_meta(run_id: str, p: Path) -> dict:
    """A listing's meta for a run whose meta.json cannot be read: every field present, safe to show."""
    ts = _fallback_ts(p)
    return {"version": None, "id": run_id, "name": run_id, "created": _fmt_ts(ts), "created_ts": ts, "target": None,
            "reference": None, "attacks": [], "n_members": None, "n_nonmembers": None, "n_eval": None, "auc": {},
            "verdict": None, "data": {}, "content": None}


_MODEL_TEXT = ("name", "identity", "dtype", "quantize", "device", "base", "source")


def _normalise_meta(raw: dict, run_id: str, p: Path) -> dict:
    """``meta.json`` with every field of the type the pages expect: a field of another type is replaced by
    its default and named in ``meta["damaged"]`` (one line)."""
    out = dict(raw)
    out.pop("damaged", None)
    out["id"] = run_id
    problems: list[str] = []

    def bad(field_: str, v, want: str) -> None:
        problems.append(f"{field_} is {json_kind(v)}, not {want}")

    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        if name is not None and not isinstance(name, str):
            bad("name", name, "text")
        out["name"] = run_id
    ts = raw.get("created_ts")
    if not is_json_number(ts) or not math.isfinite(ts):
        if ts is not None:
            bad("created_ts", ts, "a number")
        out["created_ts"] = ts = _fallback_ts(p)
    created = raw.get("created")
    if not isinstance(created, str):
        if created is not None:
            bad("created", created, "text")
        out["created"] = _fmt_ts(ts)
    for role in ("target", "reference"):
        v = raw.get(role)
        if v is None:
            continue
        if not isinstance(v, dict):
            bad(role, v, "a mapping")
            out[role] = None
            continue
        inner = dict(v)
        for k in _MODEL_TEXT:
            if inner.get(k) is not None and not isinstance(inner[k], str):
                bad(f"{role}.{k}", inner[k], "text")
                inner[k] = None
        if inner.get("n_params") is not None and not is_json_number(inner["n_params"]):
            bad(f"{role}.n_params", inner["n_params"], "a number")
            inner["n_params"] = None
        out[role] = inner
    attacks = raw.get("attacks")
    if not isinstance(attacks, list):
        if attacks is not None:
            bad("attacks", attacks, "a list")
        out["attacks"] = []
    elif not all(isinstance(a, str) for a in attacks):
        problems.append("attacks holds something other than names")
        out["attacks"] = [a for a in attacks if isinstance(a, str)]
    for k in ("n_members", "n_nonmembers", "n_eval"):
        v = raw.get(k)
        if v is not None and not is_json_number(v):
            bad(k, v, "a number")
            out[k] = None
    auc = raw.get("auc")
    if not isinstance(auc, dict):
        if auc is not None:
            bad("auc", auc, "a mapping")
        out["auc"] = {}
    else:
        clean = {}
        for k, v in auc.items():
            if v is not None and not is_json_number(v):
                bad(f"auc.{k}", v, "a number")
                v = None
            clean[k] = v if v is None or math.isfinite(v) else None
        out["auc"] = clean
    for k, want, default in (("verdict", "text", None), ("content", "text", None), ("data", "a mapping", {})):
        v = raw.get(k)
        if v is not None and not _WANT[want](v):
            bad(k, v, want)
            out[k] = default
        elif v is None:
            out[k] = default
    if problems:
        more = f"; and {len(problems) - 4} more" if len(problems) > 4 else ""
        out["damaged"] = one_line("meta.json: " + "; ".join(problems[:4]) + more)
    return out


def _list_entry(p: Path) -> dict | None:
    """The listing's meta of one entry of the runs dir, ``damaged`` set when it is damaged; None when the
    entry is not a run at all."""
    run_id = p.name
    if p.is_symlink():
        try:
            target = os.readlink(p)
        except OSError:
            target = "?"
        try:  # a link is listed (and removable as a link) only where it takes a run's place: a run's id
            looks = bool(_NEW_ID_RE.match(run_id))
        except OSError:
            looks = False
        if not looks:
            return None
        meta = _blank_meta(run_id, p)
        meta["damaged"] = one_line(f"a link to {target}, not a run folder: not opened (Delete removes the link only)")
        return meta
    if not _is_run_folder(p):
        return None
    try:
        raw = read_run_json(p, META, max_bytes=MAX_META_BYTES)
        if not isinstance(raw, dict):
            raise RunUnreadable(f"meta.json is {json_kind(raw)}, not a mapping")
    except RunUnreadable as e:
        meta = _blank_meta(run_id, p)
        meta["damaged"] = one_line(e)
        return meta
    meta = _normalise_meta(raw, run_id, p)
    extra = [f"{f} is missing" for f in ("scores.csv", "metrics.json") if not os.path.lexists(p / f)]
    extra += [f"{f} is a link (not followed)" for f in RUN_FILES if (p / f).is_symlink()]
    if extra:
        meta["damaged"] = one_line("; ".join(([meta["damaged"]] if meta.get("damaged") else []) + extra))
    return meta


def _check_pair(v, where: str) -> None:
    if v is None:
        return
    if not isinstance(v, list) or len(v) != 2 or not all(x is None or is_json_number(x) for x in v):
        raise RunUnreadable(f"{where} is {json_kind(v)}, not a pair of numbers")


def _check_metrics(metrics) -> None:
    """``metrics.json``: ``{attack: {auc, auc_ci, tpr_at_fpr, ...}}`` with the types the pages and the report read."""
    _want(metrics, "metrics.json", "a mapping", null=False)
    if not metrics:
        raise RunUnreadable("metrics.json has no attack")
    for n, m in metrics.items():
        w = f"metrics.json: {n}"
        _want(m, w, "a mapping", null=False)
        for k in ("label", "citation", "colour"):
            _want(m.get(k), f"{w}.{k}", "text")
        for k in ("auc", "n_members", "n_nonmembers"):
            _want(m.get(k), f"{w}.{k}", "a number")
        _check_pair(m.get("auc_ci"), f"{w}.auc_ci")
        for k in ("tpr_at_fpr", "tpr_at_fpr_ci"):
            for f, v in (_want(m.get(k), f"{w}.{k}", "a mapping") or {}).items():
                if k == "tpr_at_fpr":
                    _want(v, f"{w}.{k}.{f}", "a number")
                else:
                    _check_pair(v, f"{w}.{k}.{f}")
        for x in _want(m.get("warnings"), f"{w}.warnings", "a list") or []:
            _want(x, f"{w}.warnings", "text", null=False)
        roc = _want(m.get("roc"), f"{w}.roc", "a mapping") or {}
        for k in ("fpr", "tpr"):
            for x in _want(roc.get(k), f"{w}.roc.{k}", "a list") or []:
                _want(x, f"{w}.roc.{k}", "a number")


def _check_run(run) -> None:
    """``run.json``: the sections the pages and the report read, with their types."""
    _want(run, "run.json", "a mapping", null=False)
    for k in ("config", "models", "timings", "shift", "population", "group_metrics", "extra"):
        _want(run.get(k), f"run.json: {k}", "a mapping")
    for x in _want(run.get("report"), "run.json: report", "a list") or []:
        _want(x, "run.json: report", "text", null=False)
    for role, d in (run.get("models") or {}).items():
        _want(d, f"run.json: models.{role}", "a mapping")
        for k in ("n_params", "memory_mb", "load_seconds"):
            _want((d or {}).get(k), f"run.json: models.{role}.{k}", "a number")
    v = _want((run.get("shift") or {}).get("verdict"), "run.json: shift.verdict", "a mapping") or {}
    for k in ("level", "message"):
        _want(v.get(k), f"run.json: shift.verdict.{k}", "text")
    pop = run.get("population") or {}
    for k in ("alpha", "n_population"):
        _want(pop.get(k), f"run.json: population.{k}", "a number")
    for a, d in (_want(pop.get("attacks"), "run.json: population.attacks", "a mapping") or {}).items():
        w = f"run.json: population.attacks.{a}"
        _want(d, w, "a mapping", null=False)
        if "error" in d:
            _want(d["error"], f"{w}.error", "text", null=False)
            continue
        for k in ("n_flagged", "n_members", "n_nonmembers", "precision", "recall", "fpr"):
            _want(d.get(k), f"{w}.{k}", "a number")
    extra = run.get("extra") or {}
    kt = _want(extra.get("known_truth"), "run.json: extra.known_truth", "a mapping") or {}
    _want(kt.get("ok"), "run.json: extra.known_truth.ok", "true/false")
    _want(kt.get("message"), "run.json: extra.known_truth.message", "text")
    sm = _want(extra.get("smia"), "run.json: extra.smia", "a mapping") or {}
    for k in ("curves", "training"):
        _want(sm.get(k), f"run.json: extra.smia.{k}", "a mapping")
    for k in ("lr", "best_val_loss"):
        if k in (sm.get("training") or {}):
            _want(sm["training"][k], f"run.json: extra.smia.training.{k}", "a number", null=False)
    for x in _want(sm.get("sweep"), "run.json: extra.smia.sweep", "a list") or []:
        _want(x, "run.json: extra.smia.sweep", "a mapping", null=False)
    mod = _want(extra.get("modified"), "run.json: extra.modified", "a mapping") or {}
    _want(mod.get("n_unmodified"), "run.json: extra.modified.n_unmodified", "a mapping")
    for k, d in mod.items():
        if k not in ("modifications", "n_unmodified") and isinstance(d, dict):
            for a, m in d.items():
                _want(m, f"run.json: extra.modified.{k}.{a}", "a mapping")


def _read_scores(path: Path, metrics: dict) -> pd.DataFrame:
    """``scores.csv``, with a 0/1 ``label`` on every row and numeric attack columns; ``RunUnreadable`` otherwise."""
    import pandas as pd

    f = path / "scores.csv"
    if f.is_symlink():
        raise RunUnreadable("scores.csv is a link (not followed)")
    if not f.exists():
        raise RunUnreadable("scores.csv is missing")
    if not stat.S_ISREG(f.stat().st_mode):
        raise RunUnreadable("scores.csv is not a regular file")
    try:
        df = read_csv(f, dtype={"text_id": str, "text_hash": str})  # undoes write_csv's quote on formula-like ids
    except (OSError, ValueError) as e:  # pandas' parser and empty-file errors are ValueErrors
        raise RunUnreadable(f"scores.csv cannot be read ({one_line(e, 120)})") from None
    missing = [c for c in ("text_id", "label") if c not in df.columns]
    if missing:
        raise RunUnreadable(f"scores.csv lacks the column{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    label = pd.to_numeric(df["label"], errors="coerce")
    if not label.isin([0, 1]).all():
        raise RunUnreadable("scores.csv: label is not 0 or 1 on every row")
    df["label"] = label.astype(int)
    for a in metrics:
        if a in df.columns:
            col = pd.to_numeric(df[a], errors="coerce")
            if (col.isna() & df[a].notna()).any():
                raise RunUnreadable(f"scores.csv: the column {a} holds something other than numbers")
            df[a] = col.astype(float)
    return df


def _read_meta(path: Path, run_id: str) -> dict:
    """``meta.json`` of a run folder, normalised (:func:`_normalise_meta`); ``RunUnreadable`` when it is not a mapping."""
    raw = read_run_json(path, META)
    _want(raw, "meta.json", "a mapping", null=False)
    return _normalise_meta(raw, run_id, path)


def _read_run_files(path: Path) -> tuple[pd.DataFrame, dict, dict]:
    """``scores.csv``, ``metrics.json`` and ``run.json`` (none: empty) of a run folder, each checked;
    ``RunUnreadable`` (or ``OSError``) for a damaged one."""
    metrics = read_run_json(path, "metrics.json")
    _check_metrics(metrics)
    run = read_run_json(path, "run.json") if os.path.lexists(path / "run.json") else {}
    _check_run(run)
    return _read_scores(path, metrics), metrics, run

def runs_dir(root: str | Path | None = None) -> Path:
    """The folder holding the runs (created if missing)."""
    from ..paths import cache_subdir

    if root is not None:
        p = Path(root).expanduser()
    elif os.environ.get(RUNS_ENV):
        p = Path(os.environ[RUNS_ENV]).expanduser()
    else:
        return cache_subdir("runs")
    p.mkdir(parents=True, exist_ok=True)
    return p


def remove_aside(path: Path, shown: str, own) -> None:
    """Remove the run folder ``path``: first renamed aside in one step (``.<id>.deleting-<hex>``, a name no listing
    shows), so that an interrupted delete leaves the run whole or gone, then removed (links inside are removed, never
    followed). Leftovers of an earlier interrupted delete beside it are removed too, where ``own`` (the store's
    recognition of its runs) says they are runs."""
    from ..errors import DataError

    aside = path.with_name(f".{path.name}.deleting-{secrets.token_hex(3)}")
    try:
        os.rename(path, aside)
    except OSError as e:
        raise DataError(f"{shown} could not be deleted ({os_reason(e)}): nothing removed") from None
    try:
        shutil.rmtree(aside)
    except OSError as e:
        raise DataError(f"{shown} was taken out of the list but not removed completely ({os_reason(e)}): what is left "
                        f"is {aside}") from None
    for old in path.parent.glob(".*.deleting-*"):
        if own(old):
            shutil.rmtree(old, ignore_errors=True)
