"""The result of a run of attacks (:func:`mia_core.pipeline.run_attacks`): :class:`RunResult`.

It lives in :mod:`mia_core.results` beside :class:`~mia_core.results.AuditResult`, below the pipeline,
so that the run store (``mia_core.runs``) reads saved runs back as the same type; it is re-exported
here and as ``mia_core.pipeline.RunResult``."""
from __future__ import annotations

from ..results import RunResult

__all__ = ["RunResult"]
