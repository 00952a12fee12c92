"""Saved dataset-inference runs, beside the calibration runs (``mia_core.runs``).

They live in ``<runs dir>/_dataset_inference/<id>/`` (the calibration runs' listing skips names that
start with ``_``): what ``DatasetInferenceResult.save`` writes (``dataset_inference.json``,
``scores.csv``, ``report.html``) plus ``meta.json`` (name, time, verdict, p-value, sizes). A folder
that cannot be read, or a ``meta.json`` with a field of the wrong type, is listed with the reason
(``damaged``), never stops the listing; a report is handed out only as a regular file inside its run
folder (:func:`report_file`: never through a link); only folders this module made (their id, and a
``meta.json``) are ever deleted. :func:`load_result` reads a run back as a ``DatasetInferenceResult`` (the
Runs page reopens it in the Dataset inference page), every file checked: a damaged run is one line.
"""
from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

from ..errors import DataError
from ..runs.folder import MAX_META_BYTES, RunUnreadable, is_json_number, json_kind, one_line, read_run_json, os_reason
from ..runs.kinds import KindStore, count, share, text
from .audit import RESULT_FILE

SUBDIR = "_dataset_inference"
META = "meta.json"
REPORT = "report.html"

# meta.json's own fields (beside the common name, created, model, model_identity, data): (check, what it should
# be, default); None is always allowed (nothing recorded)
_FIELDS = {
    "verdict": (text, "text", None),
    "mode": (lambda v: v in ("texts", "books"), "texts or books", "texts"),
    "p_value": (share, "a number in [0, 1]", None),
    "blind_auc": (share, "a number in [0, 1]", None),
    "alpha": (share, "a number in [0, 1]", None),
    "p_value_is_bound": (lambda v: isinstance(v, bool), "true/false", False),
    "n_suspect": (count, "a count", None),
    "n_validation": (count, "a count", None),
}
STORE = KindStore(SUBDIR, "dataset-inference run", _FIELDS)
_share = share


def store_dir(root=None) -> Path:
    """The folder of the saved dataset-inference runs, ``<runs dir>/_dataset_inference`` (created if missing)."""
    return STORE.folder(root)


def describe(result, *, name: str | None = None, model: str | None = None) -> dict:
    """A result's ``meta.json`` (before its id and time): the default name is the model, the data and the verdict
    (``report.run_name``, from the result's ``inputs``); it keeps the inputs (``inputs``), the data in one line
    (``data``), the model's identity (``model_identity``), the verdict, the p-value and the sizes."""
    from .report import data_words, run_name

    s, inputs = result.summary, clean_inputs(getattr(result, "inputs", None))
    return {"name": name or run_name(s, inputs),
            "model": model or inputs.get("model") or s.get("model"), "model_identity": inputs.get("model_identity"),
            "data": data_words(s, inputs), "inputs": inputs,
            "verdict": s.get("verdict"), "p_value": s.get("p_value"), "p_value_is_bound": s.get("p_value_is_bound"),
            "n_suspect": s.get("n_suspect"), "n_validation": s.get("n_validation"), "alpha": s.get("alpha"),
            "blind_auc": s.get("blind_auc"), "mode": s.get("mode", "texts")}


def save(result, *, name: str | None = None, model: str | None = None, root=None) -> dict:
    """Save a result as a new run (:func:`describe`); returns its meta."""
    return STORE.save(result, describe(result, name=name, model=model), root=root)


def figures(result) -> dict:
    """What two saved runs are compared on: the verdict, the headline p-value, the blind baseline, the sizes."""
    s = result.summary
    return {"verdict": s.get("verdict"), "p-value": s.get("p_value"), "blind-baseline AUC": s.get("blind_auc"),
            "suspect " + s.get("mode", "texts"): s.get("n_suspect"),
            "validation " + s.get("mode", "texts"): s.get("n_validation"), "significance level": s.get("alpha")}


_INPUT_TEXT = ("model", "model_identity", "model_spec", "reference", "source", "unit")
_INPUT_LISTS = ("suspect_files", "validation_files")


def clean_inputs(raw) -> dict:
    """What was audited (``DatasetInferenceResult.inputs``) with only the fields the store knows, each of its type
    (a text, or a list of texts): anything else is left out, never shown."""
    if not isinstance(raw, dict):
        return {}
    out = {k: raw[k] for k in _INPUT_TEXT if isinstance(raw.get(k), str)}
    out.update({k: [str(x) for x in raw[k]] for k in _INPUT_LISTS
                if isinstance(raw.get(k), list) and all(isinstance(x, str) for x in raw[k])})
    return out


def list_runs(root=None) -> list[dict]:
    """Every saved dataset-inference run's meta, newest first. Each entry has every field the Runs page shows,
    of the type it expects (``id``, ``name``, ``created`` text, ``created_ts`` a number, ``p_value`` and
    ``blind_auc`` a number in [0, 1] or None...). One damaged run never hides the others: a ``meta.json``
    missing, a link, not a regular file, not JSON or not a mapping gives an entry with ``damaged`` (one line:
    why) and defaults; a field of the wrong type is replaced by its default and named in ``damaged``.
    ``DataError`` only when the folder of runs cannot be read (:class:`mia_core.runs.kinds.KindStore`)."""
    return STORE.list(root)


MAX_REPORT_BYTES = 256 * 2**20  # a report is a few MiB at most


def report_file(run_id: str, root=None) -> Path:
    """The run's ``report.html``, to hand out: a regular file inside the run's own folder (``DataError``, one
    line, for a report that is missing, a link (never followed: it could point at any file of the machine), not
    a regular file, outside the run folder, or larger than a report can be)."""
    folder = run_path(run_id, root)
    f = folder / REPORT
    try:
        if folder.is_symlink() or not folder.is_dir():
            raise DataError(f"dataset-inference run {run_id} is not a run folder: its report is not served")
        if f.is_symlink():
            raise DataError(f"the report of dataset-inference run {run_id} is a link: not served")
        st = f.lstat()
        if not stat.S_ISREG(st.st_mode):
            raise DataError(f"the report of dataset-inference run {run_id} is not a regular file: not served")
        if f.resolve().parent != folder.resolve():
            raise DataError(f"the report of dataset-inference run {run_id} lies outside its folder: not served")
        if st.st_size > MAX_REPORT_BYTES:
            raise DataError(f"the report of dataset-inference run {run_id} is over "
                            f"{MAX_REPORT_BYTES // 2**20} MiB: not served")
    except FileNotFoundError:
        raise DataError(f"dataset-inference run {run_id} has no report") from None
    except OSError as e:
        raise DataError(f"the report of dataset-inference run {run_id} cannot be read ({os_reason(e)})") from None
    return f


def read_report(run_id: str, root=None) -> bytes:
    """The bytes of :func:`report_file` (read without following a link; ``DataError``, one line, otherwise)."""
    f = report_file(run_id, root)
    try:
        fd = os.open(f, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            return fh.read(MAX_REPORT_BYTES + 1)[:MAX_REPORT_BYTES]
    except OSError as e:
        raise DataError(f"the report of dataset-inference run {run_id} cannot be read ({os_reason(e)})") from None


def run_path(run_id: str, root=None) -> Path:
    """The folder of saved run ``run_id`` (it may not exist).

    Raises
    ------
    DataError
        ``run_id`` is not of the form this module gives (``YYYYMMDD-HHMMSS-xxxxxx``): nothing outside the
        store is ever named.
    """
    return STORE.path(run_id, root)


def load_summary(run_id: str, root=None) -> dict:
    """The ``dataset_inference.json`` of saved run ``run_id`` as written (the summary, with ``tests`` and
    ``notes``), unchecked (:func:`load_result` checks every file).

    Raises
    ------
    DataError
        A bad id, or the file cannot be read or parsed (one line).
    """
    try:
        return json.loads((run_path(run_id, root) / RESULT_FILE).read_text())
    except (OSError, ValueError) as e:
        raise DataError(f"dataset-inference run {run_id} cannot be read ({type(e).__name__})") from None


def delete(run_id: str, root=None) -> None:
    """Delete a run this module saved (its id and its meta.json); nothing else."""
    STORE.delete(run_id, root)


MAX_RESULT_BYTES = 64 * 2**20  # dataset_inference.json: the summary, the tests and the notes (a few KiB)
MAX_SCORES_BYTES = 256 * 2**20  # scores.csv: one row per text or book
_NUMBER_COLUMNS = ("score", "label_free_score", "p_value", "p_adjusted", "n_passages")
_BOOL_COLUMNS = ("excluded", "flagged")


def _num_or_none(v) -> bool:
    return v is None or is_json_number(v)


def _check_summary(raw) -> tuple[dict, dict, list]:
    """``dataset_inference.json`` as (summary, tests, notes) of the types the pages read; ``RunUnreadable`` otherwise.
    Older runs' keys (``null_p_value``, ``p_value_crossfit_ttest``, no ``self_check_p_value``...) are kept
    as they are: only the fields every version writes are required."""
    from .audit import VERDICTS

    if not isinstance(raw, dict):
        raise RunUnreadable(f"{RESULT_FILE} is {json_kind(raw)}, not a mapping")
    s = dict(raw)
    tests, notes = s.pop("tests", {}) or {}, s.pop("notes", []) or []
    if not isinstance(tests, dict):
        raise RunUnreadable(f"{RESULT_FILE}: tests is {json_kind(tests)}, not a mapping")
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise RunUnreadable(f"{RESULT_FILE}: notes is not a list of texts")
    if s.get("verdict") not in VERDICTS:
        raise RunUnreadable(f"{RESULT_FILE}: verdict is {json_kind(s.get('verdict'))}, not one of {', '.join(VERDICTS)}")
    checks = {"verdict_reason": (lambda v: isinstance(v, str), "text"),
              "mode": (lambda v: v in ("texts", "books"), "texts or books"),
              "n_suspect": (lambda v: is_json_number(v) and float(v).is_integer() and v >= 0, "a count"),
              "n_validation": (lambda v: is_json_number(v) and float(v).is_integer() and v >= 0, "a count"),
              "alpha": (_share, "a number in [0, 1]"), "p_value": (_share, "a number in [0, 1]"),
              "blind_auc": (_share, "a number in [0, 1]"),
              "p_value_is_bound": (lambda v: isinstance(v, bool), "true/false"),
              "weights": (lambda v: isinstance(v, dict) and all(is_json_number(x) for x in v.values()),
                          "a mapping of numbers"),
              "power_curve": (lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v),
                              "a list of mappings"),
              "features": (lambda v: isinstance(v, list), "a list"), "books": (_books_ok, "a list of books")}
    required = ("verdict_reason", "n_suspect", "n_validation", "alpha")
    for k, (ok, want) in checks.items():
        v = s.get(k)
        if v is None and k in required:
            raise RunUnreadable(f"{RESULT_FILE}: {k} is missing")
        if v is not None and not (isinstance(v, float) and math.isnan(v) and k == "blind_auc") and not ok(v):
            raise RunUnreadable(f"{RESULT_FILE}: {k} is {json_kind(v)}, not {want}")
    for k, v in s.items():  # every other p-value, statistic or size: a number or nothing
        if (k.startswith(("p_value", "self_check_p", "null_p", "blind_p", "n_")) or k in ("folds", "unit_p_floor")) \
                and not isinstance(v, bool) and not _num_or_none(v):
            raise RunUnreadable(f"{RESULT_FILE}: {k} is {json_kind(v)}, not a number")
    if s.get("verdict") != "refused" and s.get("p_value") is None:
        raise RunUnreadable(f"{RESULT_FILE}: p_value is missing")
    return s, tests, notes


def _books_ok(v) -> bool:
    if not isinstance(v, list):
        return False
    for b in v:
        if not isinstance(b, dict) or not isinstance(b.get("book"), str):
            return False
        if not isinstance(b.get("flagged", False), bool):
            return False
        if not all(_num_or_none(b.get(k)) for k in ("n_passages", "score", "p_value", "p_adjusted")):
            return False
    return True


def _read_scores(folder: Path, verdict: str):
    """``scores.csv`` of a run, checked: a regular file (never a link), a ``set`` column of suspect /
    validation, numbers where numbers belong, true/false in ``excluded`` and ``flagged``; ``RunUnreadable`` otherwise."""
    import pandas as pd

    from ..runs.results import read_csv

    f = folder / "scores.csv"
    if f.is_symlink():
        raise RunUnreadable("scores.csv is a link (not followed)")
    try:
        st_ = f.stat()
    except FileNotFoundError:
        raise RunUnreadable("scores.csv is missing") from None
    if not stat.S_ISREG(st_.st_mode):
        raise RunUnreadable("scores.csv is not a regular file")
    if st_.st_size > MAX_SCORES_BYTES:
        raise RunUnreadable(f"scores.csv is over {MAX_SCORES_BYTES // 2**20} MiB")
    try:
        df = read_csv(f, dtype={"text_id": str, "book": str, "set": str})
    except (OSError, ValueError, UnicodeDecodeError) as e:  # pandas' parser and empty-file errors are ValueErrors
        raise RunUnreadable(f"scores.csv cannot be read ({one_line(e, 120)})") from None
    if "set" not in df.columns or not df["set"].isin(["suspect", "validation"]).all():
        raise RunUnreadable("scores.csv: the column set is not suspect or validation on every row")
    for c in _NUMBER_COLUMNS:
        if c in df.columns:
            col = pd.to_numeric(df[c], errors="coerce")
            if (col.isna() & df[c].notna()).any():
                raise RunUnreadable(f"scores.csv: the column {c} holds something other than numbers")
            df[c] = col.astype(float)
    for c in _BOOL_COLUMNS:
        if c in df.columns:
            col = df[c].map(lambda x: {"true": True, "false": False}.get(str(x).strip().lower()))
            if col.isna().any():
                raise RunUnreadable(f"scores.csv: the column {c} is not true/false on every row")
            df[c] = col.astype(bool)
    if verdict != "refused":
        missing = [c for c in ("score", "excluded") if c not in df.columns]
        if missing:
            raise RunUnreadable(f"scores.csv lacks the column{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    return df


def load_result(run_id: str, root=None):
    """A saved run as a :class:`~mia_core.dataset_inference.audit.DatasetInferenceResult`: its
    ``dataset_inference.json`` (the keys ``tests`` and ``notes`` are the metrics and the report, the rest the
    summary) and ``scores.csv``, each checked (:func:`_check_summary`, :func:`_read_scores`; JSON and CSV are
    parsed, never unpickled). ``DataError`` in one line for a run that is missing, a link, or damaged."""
    return read_folder(run_path(run_id, root), f"dataset-inference run {run_id}")


def read_folder(folder: Path, name: str | None = None):
    """The :class:`~mia_core.dataset_inference.audit.DatasetInferenceResult` saved in ``folder`` (by the run store
    or by ``result.save``): its checked files (:func:`load_result`), with the inputs its ``meta.json`` records when
    there is one. ``name``: how the one-line ``DataError`` calls the folder (default: its path)."""
    from .audit import DatasetInferenceResult

    name = name or f"{folder} (a saved dataset inference)"
    try:
        if folder.is_symlink():
            raise RunUnreadable("its folder is a link (not followed)")
        if not folder.is_dir():
            raise RunUnreadable("it is not a run folder")
        raw = read_run_json(folder, RESULT_FILE, max_bytes=MAX_RESULT_BYTES)
        summary, tests, notes = _check_summary(raw)
        scores = _read_scores(folder, summary["verdict"])
    except RunUnreadable as e:
        raise DataError(one_line(f"{name} cannot be opened: {e}")) from None
    except OSError as e:
        raise DataError(f"{name} cannot be opened ({os_reason(e)})") from None
    return DatasetInferenceResult(summary=summary, scores=scores, metrics=tests, report=list(notes),
                                  inputs=_saved_inputs(folder))


def _saved_inputs(folder: Path) -> dict:
    """The inputs ``meta.json`` recorded (:func:`clean_inputs`); none for a run saved before issue 40 or a
    ``meta.json`` that cannot be read (the listing says why)."""
    try:
        raw = read_run_json(folder, META, max_bytes=MAX_META_BYTES)
    except (RunUnreadable, OSError):
        return {}
    return clean_inputs(raw.get("inputs")) if isinstance(raw, dict) else {}
