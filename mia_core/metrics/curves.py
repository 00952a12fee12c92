"""ROC curve, TPR at fixed FPRs (this project's rule and MIMIR's / LiRA's), and whether a TPR is
measurable on so many non-members; the ROC downsampling kept in ``evaluate(...)["roc"]``.

Carlini et al. 2022, "Membership Inference Attacks From First Principles", §III-B: TPR at a low FPR
is the figure that matters for confident claims.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
from sklearn.metrics import roc_curve

from .inputs import _EPS, FPR_GRID, MAX_ROC_POINTS, _clean, fpr_key


def roc(labels, scores) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC curve ``(fpr, tpr, thresholds)`` from ``sklearn.metrics.roc_curve``.

    ``drop_intermediate=False`` (every distinct score is a point), ``pos_label=1`` (members).
    NaN scores are left out.
    """
    y, s, _, _ = _clean(labels, scores)
    return roc_curve(y, s, pos_label=1, drop_intermediate=False)


def _tpr_from_curve(fpr: np.ndarray, tpr: np.ndarray, f: float) -> float:
    ok = fpr <= f + _EPS
    return float(tpr[ok].max()) if np.any(ok) else 0.0


def tpr_at_fpr(labels, scores, fprs: Iterable[float] = FPR_GRID) -> dict[str, float]:
    """True-positive rate at fixed false-positive rates, keyed by :func:`fpr_key`.

    This project's rule (the default everywhere): TPR@f = the largest TPR among the points of the
    full ROC curve whose FPR is **<= f**, i.e. the best threshold whose false-positive rate does not
    exceed the budget f (step interpolation, never linear between points). That is the definition of
    "TPR at FPR f" (Carlini et al. 2022, "LiRA", §III-B: the attack's TPR at a threshold that keeps FPR
    at f).

    It is **not** the rule of MIMIR, ReCaLL's, DC-PDD's and LiRA's code, which take
    ``tpr[np.where(fpr < f)[0][-1]]`` on scikit-learn's curve with its intermediate points dropped: a
    *strict* inequality, so a threshold with FPR exactly f is not allowed, see :func:`tpr_at_fpr_strict`.
    The two differ whenever ``f * n_nonmembers`` is a whole number: with 100 non-members at 1 % FPR the
    project's rule allows one false positive and the strict rule none (0.30 against 0.00 on one run).
    :func:`~mia_core.metrics.evaluation.evaluate` reports both; compare with a paper's table using the strict figure.
    With ``n`` non-members, FPR moves in steps of ``1/n``, so TPR@f is only meaningful when
    ``n >= 1/f`` (see the warnings of :func:`~mia_core.metrics.evaluation.evaluate`).
    """
    fpr, tpr, _ = roc(labels, scores)
    return {fpr_key(f): _tpr_from_curve(fpr, tpr, f) for f in fprs}


def tpr_at_fpr_strict(labels, scores, fprs: Iterable[float] = FPR_GRID) -> dict[str, float]:
    """TPR at FPR as MIMIR's, ReCaLL's, DC-PDD's and LiRA's code compute it: ``roc_curve`` with its
    default ``drop_intermediate=True``, then ``tpr[np.where(fpr < f)[0][-1]]`` (FPR strictly below f).
    See :func:`tpr_at_fpr` for how it differs from this project's rule."""
    y, s, _, _ = _clean(labels, scores)
    fpr, tpr, _ = roc_curve(y, s, pos_label=1)
    out = {}
    for f in fprs:
        idx = np.flatnonzero(fpr < f)
        out[fpr_key(f)] = float(tpr[idx[-1]]) if idx.size else 0.0
    return out


def tpr_estimable(fpr: float, n_nonmembers) -> bool:
    """Whether TPR at ``fpr`` can be measured on ``n_nonmembers`` non-members: it needs at least
    1/fpr of them (rounded), since the smallest non-zero FPR they allow is 1/n; below that the
    figure is the TPR at no false positive at all, not at ``fpr``. Unknown counts pass."""
    try:
        n = int(n_nonmembers)
    except (TypeError, ValueError):
        return True
    return n >= int(round(1.0 / float(fpr)))


def _downsample_roc(fpr: np.ndarray, tpr: np.ndarray, max_points: int = MAX_ROC_POINTS,
                    fprs: Sequence[float] = FPR_GRID) -> tuple[np.ndarray, np.ndarray]:
    """At most ~``max_points`` ROC points, keeping the shape and the low-FPR region exact.

    1. Keep only the corners of the step curve (points where the direction changes): this is
       lossless.
    2. If still too many: keep every corner up to the smallest FPR of interest
       (``min(fprs)``, at most ``max_points // 3`` points), then, on a grid of FPR targets that
       is log-spaced (dense at low FPR) and linear (even coverage), keep both corners of the
       step at each target (the last point with FPR <= target and the next one), plus the
       points that define TPR at each of ``fprs``.
    """
    n = fpr.size
    if n <= 2:
        return fpr, tpr
    dfpr, dtpr = np.diff(fpr), np.diff(tpr)
    # a middle point is a corner when the segment before and after differ in direction
    straight = (dfpr[:-1] * dtpr[1:] - dtpr[:-1] * dfpr[1:]) == 0
    keep = np.r_[True, ~straight, True]
    fpr, tpr = fpr[keep], tpr[keep]
    if fpr.size <= max_points:
        return fpr, tpr
    n = fpr.size
    chosen = {0, n - 1}
    f_min = min(fprs) if len(fprs) else 0.0
    exact = np.flatnonzero(fpr <= f_min + _EPS)[: max_points // 3]
    chosen.update(exact.tolist())
    positive = fpr[fpr > 0]
    lo = float(positive.min()) if positive.size else 1e-6
    budget = max(10, (max_points - len(chosen)) // 2)
    targets = np.unique(np.r_[np.geomspace(lo, 1.0, budget * 2 // 3), np.linspace(0, 1, budget // 3),
                              np.asarray(list(fprs), dtype=float)])
    last = np.searchsorted(fpr, targets + _EPS, side="right") - 1
    last = np.clip(last, 0, n - 1)
    chosen.update(last.tolist())
    chosen.update(np.clip(last + 1, 0, n - 1).tolist())
    idx = np.array(sorted(chosen))
    return fpr[idx], tpr[idx]
