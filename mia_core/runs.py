"""The local run store: every finished calibration run, kept on disk so it survives restarts.

Layout: ``<runs dir>/<run id>/`` holds what :meth:`mia_core.pipeline.RunResult.save` writes
(``scores.csv``, ``metrics.json``, ``run.json``) plus ``meta.json`` (name, time, model
identities, attacks, data summary, AUCs, verdict) used for listing without reading the rest.
The runs dir is ``$MIA_RUNS_DIR`` when set, else ``<cache root>/runs`` (``mia_core.paths``).

Run ids are ``YYYYmmdd-HHMMSS-<6 hex>``; only ids of that alphabet are accepted, so a run
id can never point outside the store. Nothing is unpickled: everything is CSV/JSON.

A damaged run never takes the others down: :func:`list_runs` lists it with ``meta["damaged"]`` (one
line: why), :func:`load_run` refuses it with a one-line ``DataError``, and :func:`delete_run` removes
it. A link in the runs dir is never followed: it is listed as damaged and deleted as a link.
"""
from __future__ import annotations

import json
import math
import os
import re
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .errors import DataError
from .paths import cache_subdir
from .results import read_csv

RUNS_ENV = "MIA_RUNS_DIR"
META = "meta.json"
META_VERSION = 1
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,80}$")


def runs_dir(root: str | Path | None = None) -> Path:
    """The folder holding the runs (created if missing)."""
    if root is not None:
        p = Path(root).expanduser()
    elif os.environ.get(RUNS_ENV):
        p = Path(os.environ[RUNS_ENV]).expanduser()
    else:
        return cache_subdir("runs")
    p.mkdir(parents=True, exist_ok=True)
    return p


def _run_path(run_id: str, root=None) -> Path:
    if not isinstance(run_id, str) or not _ID_RE.match(run_id) or ".." in run_id:
        raise DataError(f"{run_id!r} is not a run id")
    return runs_dir(root) / run_id


@dataclass
class StoredRun:
    """A run read back from the store (or wrapped from a fresh ``RunResult``)."""

    id: str
    meta: dict
    metrics: dict
    scores: pd.DataFrame
    run: dict = field(default_factory=dict)  # config, models, timings, shift, population, report, extra
    path: Path | None = None

    @property
    def name(self) -> str:
        return str(self.meta.get("name") or self.id)

    @property
    def config(self) -> dict:
        return self.run.get("config") or {}

    @property
    def models(self) -> dict:
        return self.run.get("models") or {}

    @property
    def shift(self) -> dict | None:
        return self.run.get("shift")

    @property
    def verdict(self) -> dict | None:
        s = self.shift
        return (s or {}).get("verdict") if s else None

    @property
    def notes(self) -> list[str]:
        return list(self.run.get("report") or [])

    @property
    def extra(self) -> dict:
        return self.run.get("extra") or {}

    @property
    def population(self) -> dict | None:
        return self.run.get("population")

    @property
    def timings(self) -> dict:
        return self.run.get("timings") or {}

    def attack_names(self) -> list[str]:
        return [k for k in self.metrics if k != "blind"]

    @classmethod
    def from_result(cls, result, *, meta: dict | None = None, run_id: str = "unsaved") -> "StoredRun":
        """Wrap a ``RunResult`` in memory (same JSON round trip as saving, without the disk)."""
        from .results import json_default as _json_default

        run = {
            "config": result.config, "models": result.models, "timings": result.timings, "shift": result.shift,
            "population": result.population, "group_metrics": result.group_metrics, "report": result.report,
            "extra": result.extra,
        }
        run = json.loads(json.dumps(run, default=_json_default))
        metrics = json.loads(json.dumps(result.metrics, default=_json_default))
        return cls(id=run_id, meta=meta or build_meta(result, run_id=run_id), metrics=metrics,
                   scores=result.scores.copy(), run=run)


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
        attacks = [k for k in result.metrics if k != "blind"]
        shown = ", ".join(attacks[:3]) + (f" +{len(attacks) - 3}" if len(attacks) > 3 else "")
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
    from .results import json_default as _json_default

    (tmp / META).write_text(json.dumps(meta, indent=2, default=_json_default))
    tmp.rename(path)
    return load_run(run_id, root)


# ------------------------------------------------------------------ reading a run folder that may be damaged
RUN_FILES = ("scores.csv", "metrics.json", "run.json")  # what RunResult.save writes
_NEW_ID_RE = re.compile(r"^(\d{8}-\d{6})-[0-9a-f]{6}$")  # what _new_id makes
MAX_META_BYTES = 16 * 2**20  # a meta.json is a few KiB: a bigger one is not read when listing


class _Bad(Exception):
    """Why a run folder cannot be read (turned into ``DataError`` or a listing's ``damaged``)."""


def _one_line(s, limit: int = 300) -> str:
    """``s`` as one short printable line (messages here may carry what a damaged file holds)."""
    s = re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+", " ", str(s)).strip()
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _kind(v) -> str:
    """What a JSON value is, in words (for "x is a list, not a mapping")."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true/false"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "text"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "a mapping"
    return type(v).__name__


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_WANT = {"a mapping": lambda v: isinstance(v, dict), "a list": lambda v: isinstance(v, list),
         "a number": _is_num, "text": lambda v: isinstance(v, str), "true/false": lambda v: isinstance(v, bool)}


def _want(v, where: str, want: str, *, null: bool = True):
    """``v`` when it is ``want`` (or None, with ``null``); else ``_Bad`` naming ``where``."""
    if (v is None and null) or _WANT[want](v):
        return v
    raise _Bad(f"{where} is {_kind(v)}, not {want}")


def _reason(e: OSError) -> str:
    return e.strerror or type(e).__name__


def _read_json(path: Path, fname: str, *, max_bytes: int | None = None):
    """``path/fname`` parsed; ``_Bad`` when it is missing, a link (never followed), unreadable or not JSON."""
    f = path / fname
    if f.is_symlink():
        raise _Bad(f"{fname} is a link (not followed)")
    try:
        if max_bytes is not None and f.stat().st_size > max_bytes:
            raise _Bad(f"{fname} is over {max_bytes // 2**20} MiB")
        text = f.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _Bad(f"{fname} is missing") from None
    except OSError as e:
        raise _Bad(f"{fname} cannot be read ({_reason(e)})") from None
    except UnicodeDecodeError:
        raise _Bad(f"{fname} is not UTF-8 text") from None
    try:
        return json.loads(text)
    except ValueError as e:
        raise _Bad(f"{fname} is not JSON ({e})") from None
    except RecursionError:
        raise _Bad(f"{fname} is nested too deeply") from None


def _is_run_folder(p: Path) -> bool:
    """A real directory (not a link) that holds a run: a run id made by ``save_run``, or one of the files
    a run has. Anything else in the runs dir (a user's own folder) is not a run: not listed, never deleted."""
    if p.is_symlink() or not p.is_dir():
        return False
    return bool(_NEW_ID_RE.match(p.name)) or any(os.path.lexists(p / f) for f in (META, *RUN_FILES))


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
        problems.append(f"{field_} is {_kind(v)}, not {want}")

    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        if name is not None and not isinstance(name, str):
            bad("name", name, "text")
        out["name"] = run_id
    ts = raw.get("created_ts")
    if not _is_num(ts) or not math.isfinite(ts):
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
        if inner.get("n_params") is not None and not _is_num(inner["n_params"]):
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
        if v is not None and not _is_num(v):
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
            if v is not None and not _is_num(v):
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
        out["damaged"] = _one_line("meta.json: " + "; ".join(problems[:4]) + more)
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
        try:
            looks = bool(_NEW_ID_RE.match(run_id)) or any(os.path.lexists(p / f) for f in (META, *RUN_FILES))
        except OSError:
            looks = False
        if not looks:
            return None
        meta = _blank_meta(run_id, p)
        meta["damaged"] = _one_line(f"a link to {target}, not a run folder: not opened (Delete removes the link only)")
        return meta
    if not _is_run_folder(p):
        return None
    try:
        raw = _read_json(p, META, max_bytes=MAX_META_BYTES)
        if not isinstance(raw, dict):
            raise _Bad(f"meta.json is {_kind(raw)}, not a mapping")
    except _Bad as e:
        meta = _blank_meta(run_id, p)
        meta["damaged"] = _one_line(e)
        return meta
    meta = _normalise_meta(raw, run_id, p)
    extra = [f"{f} is missing" for f in ("scores.csv", "metrics.json") if not os.path.lexists(p / f)]
    extra += [f"{f} is a link (not followed)" for f in RUN_FILES if (p / f).is_symlink()]
    if extra:
        meta["damaged"] = _one_line("; ".join(([meta["damaged"]] if meta.get("damaged") else []) + extra))
    return meta


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
        raise DataError(f"the runs folder {d} cannot be read ({_reason(e)})") from None
    out = []
    for p in entries:
        if p.name.endswith(".tmp") or not _ID_RE.match(p.name):
            continue
        try:
            meta = _list_entry(p)
        except OSError as e:  # the folder went away or cannot be read while listing
            meta = _blank_meta(p.name, p)
            meta["damaged"] = _one_line(f"cannot be read ({_reason(e)})")
        if meta is not None:
            out.append(meta)
    out.sort(key=lambda m: (m["created_ts"], m["id"]), reverse=True)
    return out


def _check_pair(v, where: str) -> None:
    if v is None:
        return
    if not isinstance(v, list) or len(v) != 2 or not all(x is None or _is_num(x) for x in v):
        raise _Bad(f"{where} is {_kind(v)}, not a pair of numbers")


def _check_metrics(metrics) -> None:
    """``metrics.json``: ``{attack: {auc, auc_ci, tpr_at_fpr, ...}}`` with the types the pages and the report read."""
    _want(metrics, "metrics.json", "a mapping", null=False)
    if not metrics:
        raise _Bad("metrics.json has no attack")
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
    """``scores.csv``, with a 0/1 ``label`` on every row and numeric attack columns; ``_Bad`` otherwise."""
    f = path / "scores.csv"
    if f.is_symlink():
        raise _Bad("scores.csv is a link (not followed)")
    if not f.exists():
        raise _Bad("scores.csv is missing")
    try:
        df = read_csv(f, dtype={"text_id": str, "text_hash": str})  # undoes write_csv's quote on formula-like ids
    except (OSError, ValueError) as e:  # pandas' parser and empty-file errors are ValueErrors
        raise _Bad(f"scores.csv cannot be read ({_one_line(e, 120)})") from None
    missing = [c for c in ("text_id", "label") if c not in df.columns]
    if missing:
        raise _Bad(f"scores.csv lacks the column{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    label = pd.to_numeric(df["label"], errors="coerce")
    if not label.isin([0, 1]).all():
        raise _Bad("scores.csv: label is not 0 or 1 on every row")
    df["label"] = label.astype(int)
    for a in metrics:
        if a in df.columns:
            col = pd.to_numeric(df[a], errors="coerce")
            if (col.isna() & df[a].notna()).any():
                raise _Bad(f"scores.csv: the column {a} holds something other than numbers")
            df[a] = col.astype(float)
    return df


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
    try:
        raw = _read_json(path, META)
        _want(raw, "meta.json", "a mapping", null=False)
        meta = _normalise_meta(raw, run_id, path)
        metrics = _read_json(path, "metrics.json")
        _check_metrics(metrics)
        run = _read_json(path, "run.json") if os.path.lexists(path / "run.json") else {}
        _check_run(run)
        scores = _read_scores(path, metrics)
    except _Bad as e:
        raise DataError(_one_line(f"run {run_id} is damaged: {e}")) from None
    except OSError as e:  # the folder went away or cannot be read meanwhile
        raise DataError(_one_line(f"run {run_id} cannot be read ({_reason(e)})")) from None
    return StoredRun(id=run_id, meta=meta, metrics=metrics, scores=scores, run=run, path=path)


def delete_run(run_id: str, root=None) -> None:
    """Delete a run of the store: a real run folder inside the runs dir (``DataError`` for anything else).
    A link in place of a run folder is removed as a link: what it points to is never touched."""
    path = _run_path(run_id, root)
    if path.is_symlink():
        try:
            path.unlink()
        except OSError as e:
            raise DataError(f"the link {run_id} cannot be removed ({_reason(e)})") from None
        return
    if not path.is_dir():
        raise DataError(f"no run {run_id!r} to delete")
    if path.resolve().parent != runs_dir(root).resolve() or not _is_run_folder(path):
        raise DataError(f"{run_id} is not a run folder (no meta.json, scores.csv, metrics.json or run.json): "
                        "not deleted")
    try:
        shutil.rmtree(path)  # links inside are removed, never followed
    except OSError as e:
        raise DataError(f"run {run_id} could not be deleted completely ({_reason(e)})") from None


def rename_run(run_id: str, name: str, root=None) -> None:
    """Give a run another name (an empty name keeps the old one); ``DataError`` when its meta.json cannot
    be read or written."""
    path = _run_path(run_id, root)
    if path.is_symlink() or not path.is_dir():
        raise DataError(f"no run {run_id!r} to rename")
    try:
        meta = _read_json(path, META)
        _want(meta, "meta.json", "a mapping", null=False)
    except _Bad as e:
        raise DataError(_one_line(f"run {run_id} is damaged: {e}")) from None
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
        raise DataError(f"run {run_id} cannot be renamed ({_reason(e)})") from None


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
