"""Validated inputs of every metric: labels, scores, FPR keys, and the constants they share.

``labels``: 1 = member, 0 = non-member. ``scores``: higher = more likely member; ``NaN`` (could not be
scored) is left out and counted, ``+/-inf`` are mapped just outside the finite range (ranking
unchanged), see :func:`_clean`.
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError

FPR_GRID = (0.001, 0.01, 0.02, 0.05, 0.1)

# Below this many texts in a set, a warning says the figures are very uncertain.
MIN_SET_SIZE = 10
# Largest number of ROC points kept in ``evaluate(...)["roc"]``.
MAX_ROC_POINTS = 1000
# Bootstrap work is done in chunks of about this many array elements (memory bound).
_CHUNK_ELEMENTS = 4_000_000
# Tolerance when comparing an FPR k/n with a target such as 0.29 (0.29 * 100 = 28.999...).
_EPS = 1e-9


def fpr_key(f: float) -> str:
    """The JSON key for an FPR target: ``0.001 -> "0.001"``, ``0.1 -> "0.1"``, ``1e-5 -> "0.00001"``."""
    s = f"{float(f):.10f}".rstrip("0").rstrip(".")
    return s if s else "0"


def _as_labels(labels) -> np.ndarray:
    y = np.asarray(labels)
    if y.ndim != 1:
        y = y.reshape(-1)
    if y.dtype == bool:
        return y.astype(np.int64)
    try:
        yf = y.astype(float)
    except (TypeError, ValueError):
        raise DataError("labels must be 1 (member) or 0 (non-member).") from None
    if yf.size and not np.all(np.isin(yf, (0.0, 1.0))):
        bad = sorted({str(v) for v in y[~np.isin(yf, (0.0, 1.0))]})[:5]
        raise DataError(f"labels must be 1 (member) or 0 (non-member); found {', '.join(bad)}.")
    return yf.astype(np.int64)


def _as_scores(scores) -> np.ndarray:
    try:
        s = np.asarray(scores, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise DataError("scores must be numbers (higher = more likely member).") from None
    return s


def _finite_ranked(s: np.ndarray) -> np.ndarray:
    """Replace +/-inf by values just outside the finite range (ranking unchanged)."""
    if np.all(np.isfinite(s)):
        return s
    s = s.copy()
    finite = s[np.isfinite(s)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    span = max(hi - lo, 1.0)
    s[np.isposinf(s)] = hi + span
    s[np.isneginf(s)] = lo - span
    return s


def _clean(labels, scores) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Validated (labels, scores) without NaN scores, plus how many NaNs were dropped per class.

    Raises ``DataError`` when there are no members or no non-members (before or after
    dropping NaNs).
    """
    y = _as_labels(labels)
    s = _as_scores(scores)
    if y.shape[0] != s.shape[0]:
        raise DataError(f"got {y.shape[0]} labels but {s.shape[0]} scores; they must match one to one.")
    if not np.any(y == 1):
        raise DataError("no members given: the evaluation needs at least one member text (label 1).")
    if not np.any(y == 0):
        raise DataError("no non-members given: the evaluation needs at least one non-member text (label 0).")
    nan = np.isnan(s)
    nan_m = int(np.sum(nan & (y == 1)))
    nan_n = int(np.sum(nan & (y == 0)))
    y, s = y[~nan], s[~nan]
    if not np.any(y == 1):
        raise DataError("no member could be scored: every member score is NaN (texts too short?).")
    if not np.any(y == 0):
        raise DataError("no non-member could be scored: every non-member score is NaN (texts too short?).")
    return y, _finite_ranked(s), nan_m, nan_n
