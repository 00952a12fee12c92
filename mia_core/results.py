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
"""
from __future__ import annotations

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
