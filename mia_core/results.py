"""One result type for the three audits: ``run``, ``documents`` and ``mlm``.

Every audit returns an :class:`AuditResult`:

* :class:`mia_core.pipeline.RunResult` (``run_attacks``: baselines, neighbourhood, SMIA);
* :class:`mia_core.documents.DocumentAuditResult` (``run_document_audit``: Meeus et al. 2024);
* :class:`mia_core.mlm.MlmAuditResult` (``run_mlm_audit``: Mireshghallah et al. 2022).

They share four things, which the CLI and the dashboard rely on:

``metrics``
    ``{attack or pipeline: {metric: value}}`` (AUC, TPR at low FPR, thresholds...).
``scores``
    a ``pandas.DataFrame`` with one row per evaluated text (or document).
``summary_text()``
    the human-readable report the command line prints.
``save(out_dir)``
    writes the command's files into ``out_dir`` and returns ``{name: path}`` of what it wrote.

:func:`json_default` is the one ``json.dumps(default=...)`` encoder for the numpy values
(and paths) results hold.

CSV files people open in a spreadsheet (``scores.csv``, ``document_scores.csv``, the dashboard's
downloads) are written with :func:`write_csv` / :func:`csv_text` and read back with :func:`read_csv`:
a text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return would run as a
formula there (a text id ``=HYPERLINK(...)`` or ``=cmd|' /C calc'!A0``), so it gets a leading
``'`` as OWASP advises ("CSV Injection"); so does a text cell that already starts with ``'``, which
makes the round trip exact (:func:`read_csv` drops one leading ``'`` from every text cell). Numbers
are never touched: a score of -3.2 stays a number.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd


class AuditResult:
    """The interface every audit's result implements (see the module docstring).

    Subclasses are dataclasses holding at least ``metrics`` (dict) and ``scores``
    (DataFrame); they implement :meth:`summary_text` and :meth:`save`.
    """

    metrics: dict
    scores: pd.DataFrame

    def summary_text(self) -> str:
        """The human-readable report (what the CLI prints)."""
        raise NotImplementedError

    def save(self, out_dir: str | Path) -> dict[str, Path]:
        """Write the audit's files into ``out_dir``; returns ``{name: path}``."""
        raise NotImplementedError

    def _repr_html_(self) -> str:
        """A notebook shows the metrics table (every cell escaped) and the notes."""
        import html

        from .metrics import metrics_frame

        scored = {k: m for k, m in (self.metrics or {}).items() if isinstance(m, dict) and "auc" in m}
        rows = metrics_frame(scored, fprs=(0.01, 0.1), with_n=False, name="attack")
        table = rows.to_html(index=False, escape=True) if len(rows) else "<p>no metrics</p>"
        notes = getattr(self, "report", None) or []
        return (f"<div><b>{html.escape(type(self).__name__)}</b>{table}"
                + "".join(f"<div>note: {html.escape(str(n))}</div>" for n in notes) + "</div>")


def json_default(o):
    """``json.dumps(..., default=json_default)``: numpy scalars and arrays as Python values,
    paths and anything else as strings."""
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    return str(o)


# ----------------------------------------------------------------------------- CSV for people
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a cell as a formula
_QUOTE = "'"


def neutralise_cell(v):
    """A text cell that a spreadsheet would run as a formula, with a leading ``'`` (and one that starts
    with ``'`` too, so that :func:`restore_cell` is exact); anything else (numbers included) as it is."""
    if isinstance(v, str) and v.startswith(FORMULA_START + (_QUOTE,)):
        return _QUOTE + v
    return v


def restore_cell(v):
    """The inverse of :func:`neutralise_cell` on a text cell read back."""
    if isinstance(v, str) and v.startswith(_QUOTE):
        return v[1:]
    return v


def _text_columns(df: pd.DataFrame) -> list:
    return [c for c in df.columns if pd.api.types.is_object_dtype(df[c]) or pd.api.types.is_string_dtype(df[c])]


def csv_safe(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` whose text cells and column names are :func:`neutralise_cell`-ed."""
    out = df.copy()
    for c in _text_columns(out):
        mapped = out[c].map(neutralise_cell, na_action="ignore")  # a categorical maps its categories
        out[c] = mapped if isinstance(out[c].dtype, pd.CategoricalDtype) else mapped.astype(out[c].dtype)
    out.columns = [neutralise_cell(c) for c in out.columns]
    return out


def _to_csv(df: pd.DataFrame, target=None):
    safe = csv_safe(df)
    # a carriage return inside a cell: Python's csv writer (3.11) only quotes cells holding the line
    # terminator ("\n"), so such a cell would split its row; then every text cell is quoted
    cr = any(isinstance(v, str) and "\r" in v
             for v in [*safe.columns, *(v for c in _text_columns(safe) for v in safe[c].tolist())])
    return safe.to_csv(target, index=False, **({"quoting": csv.QUOTE_NONNUMERIC} if cr else {}))


def csv_text(df: pd.DataFrame) -> str:
    """``df`` as CSV text (no index) that is safe to open in a spreadsheet (a download button's data)."""
    return _to_csv(df)


def write_csv(df: pd.DataFrame, path) -> None:
    """Write ``df`` (no index) to ``path`` as :func:`csv_text`."""
    _to_csv(df, path)


def read_csv(path, **kwargs) -> pd.DataFrame:
    """Read a CSV written by :func:`write_csv` (``pandas.read_csv`` arguments): the cells and column
    names come back exactly as they were given to it."""
    df = pd.read_csv(path, **kwargs)
    df.columns = [restore_cell(c) for c in df.columns]
    for c in _text_columns(df):
        df[c] = df[c].map(restore_cell, na_action="ignore").astype(df[c].dtype)
    return df
