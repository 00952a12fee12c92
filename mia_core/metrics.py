"""Evaluation metrics for membership-inference attacks.

Conventions used everywhere in ``mia_core``:

* ``labels``: 1 = member (the text was in the training data), 0 = non-member.
* ``scores``: higher = more likely member. ``NaN`` means "could not be scored" (e.g. a text
  too short for the attack); such texts are left out of that attack's figures and counted
  in a warning. ``+inf``/``-inf`` are legitimate extreme scores: they are mapped to just
  above/below the finite range, which keeps the ranking (and so every metric) unchanged.

What is reported (following Carlini et al. 2022, "Membership Inference Attacks From First
Principles", §III-B/§IV, who argue that the true-positive rate at a *low* false-positive rate
matters more than the AUC or the accuracy):

* ROC curve and AUC (scikit-learn ``roc_curve`` / ``roc_auc_score``).
* TPR at fixed FPRs (``FPR_GRID``: 0.1 %, 1 %, 2 %, 5 %, 10 %), read off the ROC curve with
  the conservative step interpolation (FPR <= f, :func:`tpr_at_fpr`), and beside it the rule of
  MIMIR's and LiRA's code (FPR < f, :func:`tpr_at_fpr_strict`), which differs from it.
* Percentile bootstrap confidence intervals, resampling members and non-members separately
  (stratified), so every resample has the original class sizes.
* Threshold decisions calibrated on a population of known non-members (Mireshghallah et al.
  2022, "Quantifying Privacy Risks of Masked Language Models Using Membership Inference
  Attacks", §2.4) and group-level ("patient-level", §4.2) aggregation of scores.
"""
from __future__ import annotations

import math
import re
from collections import OrderedDict
from typing import Iterable, Sequence

import numpy as np
from sklearn.metrics import confusion_matrix, roc_auc_score, roc_curve

from .errors import DataError, SettingsError


def finite(v) -> float | None:
    """``v`` as a float, or ``None`` when it is missing, not a number, NaN or infinite (for display)."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None

FPR_GRID = (0.001, 0.01, 0.02, 0.05, 0.1)

# Below this many texts in a set, a warning says the figures are very uncertain.
MIN_SET_SIZE = 10
# Largest number of ROC points kept in ``evaluate(...)["roc"]``.
MAX_ROC_POINTS = 1000
# Bootstrap work is done in chunks of about this many array elements (memory bound).
_CHUNK_ELEMENTS = 4_000_000
# Tolerance when comparing an FPR k/n with a target such as 0.29 (0.29 * 100 = 28.999...).
_EPS = 1e-9


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def fpr_key(f: float) -> str:
    """The JSON key for an FPR target: ``0.001 -> "0.001"``, ``0.1 -> "0.1"``, ``1e-5 -> "0.00001"``."""
    s = f"{float(f):.10f}".rstrip("0").rstrip(".")
    return s if s else "0"


def _pct(f: float) -> str:
    """``0.001 -> "0.1%"``, ``0.1 -> "10%"`` (for messages and table headers)."""
    return f"{float(f) * 100:.10f}".rstrip("0").rstrip(".") + "%"


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


# --------------------------------------------------------------------------------------
# ROC, AUC, TPR at FPR
# --------------------------------------------------------------------------------------
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
    :func:`evaluate` reports both; compare with a paper's table using the strict figure.
    With ``n`` non-members, FPR moves in steps of ``1/n``, so TPR@f is only meaningful when
    ``n >= 1/f`` (see the warnings of :func:`evaluate`).
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


# --------------------------------------------------------------------------------------
# bootstrap (vectorised, O(B * n))
# --------------------------------------------------------------------------------------
def _resample_counts(rng: np.random.Generator, n: int, b: int) -> np.ndarray:
    """``b`` bootstrap resamples of ``n`` items as a (b, n) matrix of multiplicities."""
    idx = rng.integers(0, n, size=(b, n)) + (np.arange(b) * n)[:, None]
    return np.bincount(idx.ravel(), minlength=b * n).reshape(b, n)


def _bootstrap_stats(pos_sorted: np.ndarray, neg_sorted: np.ndarray, w_pos: np.ndarray,
                     w_neg: np.ndarray, fprs: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """AUC and TPR@FPR for resamples given as multiplicities of the sorted scores.

    ``w_pos`` (B, n_pos) and ``w_neg`` (B, n_neg) are counts over ``pos_sorted`` and
    ``neg_sorted`` (ascending). With all-ones weights this reproduces the exact figures.

    AUC (Mann-Whitney form): ``sum_i w_i * (#neg < p_i + 0.5 * #neg == p_i) / (n_pos * n_neg)``,
    the negative counts read from cumulative sums of ``w_neg``.
    TPR@f (same step rule as :func:`tpr_at_fpr`): with ``k = floor(f * n_neg)`` false
    positives allowed, the lowest admissible threshold lies just above the (k+1)-th largest
    resampled negative ``v``, so TPR = (#pos > v) / n_pos.
    """
    b = w_pos.shape[0]
    n_pos, n_neg = pos_sorted.size, neg_sorted.size
    cneg = np.zeros((b, n_neg + 1), dtype=np.int64)
    np.cumsum(w_neg, axis=1, out=cneg[:, 1:])
    lo = np.searchsorted(neg_sorted, pos_sorted, side="left")
    hi = np.searchsorted(neg_sorted, pos_sorted, side="right")
    below = cneg[:, lo]
    ties = cneg[:, hi] - below
    auc = np.sum(w_pos * (below + 0.5 * ties), axis=1) / (n_pos * n_neg)

    cpos = np.zeros((b, n_pos + 1), dtype=np.int64)
    np.cumsum(w_pos, axis=1, out=cpos[:, 1:])
    rows = np.arange(b)
    tprs = np.empty((b, len(fprs)))
    for j, f in enumerate(fprs):
        k = int(math.floor(f * n_neg + _EPS))
        if k >= n_neg:
            tprs[:, j] = 1.0
            continue
        # index (in neg_sorted) of the (n_neg - k)-th smallest resampled negative
        jneg = np.sum(cneg[:, 1:] < n_neg - k, axis=1)
        v = neg_sorted[jneg]
        u = np.searchsorted(pos_sorted, v, side="right")
        tprs[:, j] = (n_pos - cpos[rows, u]) / n_pos
    return auc, tprs


def _bootstrap(pos: np.ndarray, neg: np.ndarray, fprs: Sequence[float], n_bootstrap: int,
               seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    pos_sorted, neg_sorted = np.sort(pos), np.sort(neg)
    chunk = max(1, _CHUNK_ELEMENTS // (pos.size + neg.size))
    aucs, tprs = [], []
    done = 0
    while done < n_bootstrap:
        b = min(chunk, n_bootstrap - done)
        w_pos = _resample_counts(rng, pos.size, b)
        w_neg = _resample_counts(rng, neg.size, b)
        a, t = _bootstrap_stats(pos_sorted, neg_sorted, w_pos, w_neg, fprs)
        aucs.append(a)
        tprs.append(t)
        done += b
    return np.concatenate(aucs), np.concatenate(tprs, axis=0)


def delta_ci(a: tuple, b: tuple, fprs: Sequence[float] = FPR_GRID, *, paired: bool = False,
             n_bootstrap: int = 1000, ci: float = 0.95, seed: int = 0) -> dict:
    """Bootstrap CIs of the differences B − A in AUC and TPR at each FPR between two runs.

    ``a`` and ``b`` are ``(labels, scores)``. ``paired``: the two runs scored the same texts in
    the same order (same labels), and each resample draws the same texts (members and
    non-members separately) for both, so what the two share cancels, e.g. fp32 vs int4 on one
    set; texts with a NaN score in either run are left out. Otherwise each run is resampled on
    its own. Returns ``{"auc": (lo, hi), "tpr_at_fpr": {key: (lo, hi)}, "paired": bool, "n": ...}``.
    """
    ya, sa = np.asarray(a[0], dtype=int), np.asarray(a[1], dtype=float)
    yb, sb = np.asarray(b[0], dtype=int), np.asarray(b[1], dtype=float)
    fprs = tuple(float(f) for f in fprs)
    rng = np.random.default_rng(seed)
    q = ((1 - ci) / 2 * 100, (1 + ci) / 2 * 100)
    if paired:
        if ya.shape != yb.shape or not np.array_equal(ya, yb):
            raise DataError("a paired comparison needs the same texts, with the same labels, in both runs")
        ok = np.isfinite(sa) & np.isfinite(sb)
        y, sa, sb = ya[ok], sa[ok], sb[ok]
        P, N = np.nonzero(y == 1)[0], np.nonzero(y == 0)[0]
        if not P.size or not N.size:
            raise DataError("no member or no non-member scored in both runs")
        chunk = max(1, _CHUNK_ELEMENTS // y.size)
        d_auc, d_tpr, done = [], [], 0
        while done < n_bootstrap:
            k = min(chunk, n_bootstrap - done)
            w_pos, w_neg = _resample_counts(rng, P.size, k), _resample_counts(rng, N.size, k)
            stats = []
            for s in (sa, sb):
                op, on = np.argsort(s[P], kind="stable"), np.argsort(s[N], kind="stable")
                stats.append(_bootstrap_stats(s[P][op], s[N][on], w_pos[:, op], w_neg[:, on], fprs))
            d_auc.append(stats[1][0] - stats[0][0])
            d_tpr.append(stats[1][1] - stats[0][1])
            done += k
        d_auc, d_tpr = np.concatenate(d_auc), np.concatenate(d_tpr, axis=0)
        n = (int(P.size), int(N.size))
    else:
        boots = []
        for y, s in ((ya, sa), (yb, sb)):
            ok = np.isfinite(s)
            pos, neg = s[ok & (y == 1)], s[ok & (y == 0)]
            if not pos.size or not neg.size:
                raise DataError("a run has no member or no non-member score")
            boots.append(_bootstrap(pos, neg, fprs, n_bootstrap, int(rng.integers(2**31))))
        d_auc, d_tpr = boots[1][0] - boots[0][0], boots[1][1] - boots[0][1]
        n = None
    lo, hi = np.percentile(d_auc, q)
    return {"auc": (float(lo), float(hi)), "paired": paired, "n": n,
            "tpr_at_fpr": {fpr_key(f): tuple(float(x) for x in np.percentile(d_tpr[:, j], q))
                           for j, f in enumerate(fprs)}}


# --------------------------------------------------------------------------------------
# evaluate
# --------------------------------------------------------------------------------------
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


def _percentile_ci(values: np.ndarray, ci: float) -> list[float]:
    q = (1.0 - ci) / 2.0
    lo, hi = np.quantile(values, [q, 1.0 - q])
    return [float(lo), float(hi)]


def evaluate(labels, scores, *, n_bootstrap: int = 1000, seed: int = 0, ci: float = 0.95,
             fprs: Iterable[float] = FPR_GRID, keep_roc: bool = True) -> dict:
    """All figures for one attack, as plain JSON-serialisable Python values.

    Returns::

        {"auc": float, "auc_ci": [lo, hi],
         "tpr_at_fpr": {"0.001": float, ...}, "tpr_at_fpr_ci": {"0.001": [lo, hi], ...},
         "tpr_at_fpr_strict": {"0.001": float, ...},   # MIMIR's / LiRA's code's rule
         "n_members": int, "n_nonmembers": int, "n_dropped": int,
         "warnings": [str, ...],
         "roc": {"fpr": [...], "tpr": [...]}}          # only when keep_roc

    * AUC: ``sklearn.metrics.roc_auc_score``; TPR@FPR: :func:`tpr_at_fpr` (step interpolation).
    * CIs: percentile bootstrap with ``n_bootstrap`` resamples (seeded by ``seed``), members
      and non-members resampled separately (stratified). ``n_bootstrap=0`` gives ``None`` CIs.
    * ``n_members``/``n_nonmembers`` count the scored texts; ``n_dropped`` the NaN scores.
    * Warnings: TPR@f when there are fewer than ``1/f`` non-members (at 0.1 % FPR with fewer
      than 1,000 non-members, at most zero false positives are allowed, so the figure is not
      meaningful), sets smaller than ``MIN_SET_SIZE`` texts, NaN scores dropped.
    * ``roc``: the curve downsampled to about ``MAX_ROC_POINTS`` points (see ``_downsample_roc``).

    Raises ``DataError`` when there are no members or no non-members.
    """
    if not 0.0 < ci < 1.0:
        raise SettingsError(f"the confidence level must be between 0 and 1, got {ci}.")
    if n_bootstrap < 0:
        raise SettingsError(f"the number of bootstrap resamples must be >= 0, got {n_bootstrap}.")
    fprs = tuple(float(f) for f in fprs)
    for f in fprs:
        if not 0.0 < f < 1.0:
            raise SettingsError(f"FPR targets must be between 0 and 1, got {f}.")
    y, s, nan_m, nan_n = _clean(labels, scores)
    pos, neg = s[y == 1], s[y == 0]
    n_pos, n_neg = int(pos.size), int(neg.size)

    fpr, tpr, _ = roc_curve(y, s, pos_label=1, drop_intermediate=False)
    auc = float(roc_auc_score(y, s))
    tprs = {fpr_key(f): _tpr_from_curve(fpr, tpr, f) for f in fprs}

    out: dict = {"auc": auc, "auc_ci": None, "tpr_at_fpr": tprs,
                 "tpr_at_fpr_ci": {fpr_key(f): None for f in fprs},
                 # MIMIR's / LiRA's code's rule (FPR strictly below f): for comparisons with papers' tables
                 "tpr_at_fpr_strict": tpr_at_fpr_strict(y, s, fprs),
                 "n_members": n_pos, "n_nonmembers": n_neg, "n_dropped": nan_m + nan_n,
                 "warnings": []}
    if n_bootstrap > 0:
        boot_auc, boot_tpr = _bootstrap(pos, neg, fprs, int(n_bootstrap), int(seed))
        out["auc_ci"] = _percentile_ci(boot_auc, ci)
        out["tpr_at_fpr_ci"] = {fpr_key(f): _percentile_ci(boot_tpr[:, j], ci) for j, f in enumerate(fprs)}

    warnings = out["warnings"]
    for f in sorted(fprs):
        if not tpr_estimable(f, n_neg):
            warnings.append(f"TPR at {_pct(f)} FPR is not estimable with {n_neg:,} non-members (it needs at least "
                            f"{int(round(1.0 / f)):,}): shown as n/e")
    if n_pos < MIN_SET_SIZE:
        warnings.append(f"only {n_pos} member{'s' if n_pos != 1 else ''} scored: with fewer than "
                        f"{MIN_SET_SIZE} texts the figures are very uncertain")
    if n_neg < MIN_SET_SIZE:
        warnings.append(f"only {n_neg} non-member{'s' if n_neg != 1 else ''} scored: with fewer than "
                        f"{MIN_SET_SIZE} texts the figures are very uncertain")
    if nan_m + nan_n:
        warnings.append(f"{nan_m + nan_n} text{'s' if nan_m + nan_n != 1 else ''} could not be scored "
                        f"(NaN, e.g. too short) and {'were' if nan_m + nan_n != 1 else 'was'} left out: "
                        f"{nan_m} member{'s' if nan_m != 1 else ''}, "
                        f"{nan_n} non-member{'s' if nan_n != 1 else ''}")
    if keep_roc:
        f_ds, t_ds = _downsample_roc(fpr, tpr, MAX_ROC_POINTS, fprs)
        out["roc"] = {"fpr": [float(v) for v in f_ds], "tpr": [float(v) for v in t_ds]}
    return out


# --------------------------------------------------------------------------------------
# thresholds and decisions (Mireshghallah et al. 2022, §2.4)
# --------------------------------------------------------------------------------------
def population_threshold(population_scores, alpha: float = 0.1) -> float:
    """Threshold ``t`` that flags a fraction ``alpha`` of a population of non-members.

    Mireshghallah et al. 2022, §2.4: the auditor holds a *population* set of texts known not to
    be in the training data (disjoint from the evaluation set) and picks the threshold so that
    a fraction ``alpha`` of the population would be (falsely) flagged as members; a text is
    called "member" when ``score >= t``. So ``t`` is the (1 - alpha) quantile of the
    population scores, taken as an observed score (``numpy.quantile(..., method="higher")``),
    which flags ``alpha * n`` population texts when that is a whole number (otherwise the
    nearest whole number within one; more only with tied scores).
    NaN scores are ignored.
    """
    if not 0.0 < float(alpha) < 1.0:
        raise SettingsError(f"alpha (the population false-positive rate) must be between 0 and 1, got {alpha}.")
    s = _as_scores(population_scores)
    s = s[~np.isnan(s)]
    if s.size == 0:
        raise DataError("the population set is empty (or no population text could be scored); "
                        "a threshold needs scores of known non-members.")
    return float(np.quantile(s, 1.0 - float(alpha), method="higher"))


def decisions_at(labels, scores, threshold: float) -> dict:
    """Decisions "member iff score >= threshold" on the evaluation data.

    Returns ``{"threshold", "precision", "recall", "fpr", "n_flagged", "n_members",
    "n_nonmembers"}``: precision = TP / (TP + FP) (``None`` when nothing is flagged),
    recall = TP / #members (the TPR), fpr = FP / #non-members, computed with
    ``sklearn.metrics.confusion_matrix``. NaN scores are left out.
    """
    y, s, _, _ = _clean(labels, scores)
    pred = (s >= float(threshold)).astype(np.int64)
    tn, fp, fn, tp = (int(v) for v in confusion_matrix(y, pred, labels=[0, 1]).ravel())
    flagged = tp + fp
    return {
        "threshold": float(threshold),
        "precision": (tp / flagged) if flagged else None,
        "recall": tp / (tp + fn),
        "fpr": fp / (fp + tn),
        "n_flagged": flagged,
        "n_members": tp + fn,
        "n_nonmembers": fp + tn,
    }


def wilson_ci(k: int, n: int, ci: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval of a proportion k/n (None when n is 0): unlike the normal
    approximation it stays inside [0, 1] and is sensible for 0/n and n/n on small counts."""
    from statistics import NormalDist

    if not n:
        return None
    z = NormalDist().inv_cdf(0.5 + ci / 2)
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def decision_cis(d: dict, ci: float = 0.95) -> dict:
    """95 % Wilson intervals of a :func:`decisions_at` result's precision (flagged texts that are
    members), recall (members flagged) and FPR (non-members flagged), from its counts."""
    flagged, n_m, n_n = int(d.get("n_flagged") or 0), int(d.get("n_members") or 0), int(d.get("n_nonmembers") or 0)
    tp = int(round((d.get("recall") or 0.0) * n_m))
    fp = int(round((d.get("fpr") or 0.0) * n_n))
    return {"precision": wilson_ci(tp, flagged, ci), "recall": wilson_ci(tp, n_m, ci), "fpr": wilson_ci(fp, n_n, ci)}


# --------------------------------------------------------------------------------------
# group-level scores (Mireshghallah et al. 2022, §4.2)
# --------------------------------------------------------------------------------------
def group_scores(scores, labels, groups, how: str = "mean") -> tuple[list, np.ndarray, np.ndarray]:
    """Aggregate text scores into one score per group (e.g. per patient, per author, per book).

    Mireshghallah et al. 2022, §4.2 ("patient-level" attack): a group's score is the mean of
    its texts' scores (``how="mean"``); ``how="max"`` takes the most member-like text instead.
    NaN scores are ignored inside a group; a group whose texts are all NaN gets NaN.
    Returns ``(group_ids, group_scores, group_labels)`` in order of first appearance.
    Raises ``DataError`` naming the group when its texts carry both labels.
    """
    if how not in ("mean", "max"):
        raise SettingsError(f"group aggregation must be 'mean' or 'max', got {how!r}.")
    s = _as_scores(scores)
    y = _as_labels(labels)
    g = list(groups)
    if not (len(g) == s.size == y.size):
        raise DataError(f"got {s.size} scores, {y.size} labels and {len(g)} group ids; they must match one to one.")
    members: "OrderedDict[object, list[int]]" = OrderedDict()
    for i, gid in enumerate(g):
        members.setdefault(gid, []).append(i)
    ids, agg, lab = [], [], []
    for gid, idx in members.items():
        gl = np.unique(y[idx])
        if gl.size > 1:
            raise DataError(f"group {gid!s} has both member and non-member texts; "
                            "every text of a group must have the same label.")
        vals = s[idx]
        vals = vals[~np.isnan(vals)]
        if vals.size == 0:
            v = float("nan")
        else:
            v = float(vals.mean() if how == "mean" else vals.max())
        ids.append(gid)
        agg.append(v)
        lab.append(int(gl[0]))
    return ids, np.asarray(agg, dtype=float), np.asarray(lab, dtype=np.int64)


# --------------------------------------------------------------------------------------
# text table for the CLI
# --------------------------------------------------------------------------------------
def _fmt_pct3(v) -> str:
    """A rate as a percentage with 3 significant digits: 0.0123 -> '1.23%', 1 -> '100%'."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    x = float(v) * 100.0
    if x == 0.0:
        return "0.00%"
    digits = max(0, 2 - int(math.floor(math.log10(abs(x)))))
    return f"{x:.{digits}f}%"


def _fmt_auc(m: dict) -> str:
    auc = m.get("auc")
    if auc is None or (isinstance(auc, float) and math.isnan(auc)):
        return "-"
    s = f"{auc:.3f}"
    ci = m.get("auc_ci")
    if ci:
        s += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    return s


_NE = re.compile(r"^TPR at ([0-9.]+)% FPR is not estimable with ([0-9,]+) non-members \(it needs at least ([0-9,]+)\): "
                 r"shown as n/e$")


def merge_warnings(warnings) -> list[str]:
    """The same warnings with the per-FPR "not estimable" lines on one set size merged into one
    line, FPRs in increasing order (five near-identical lines say less than one)."""
    out, groups = [], {}
    for w in warnings:
        m = _NE.match(w)
        if m is None:
            out.append(w)
            continue
        key = m.group(2)
        if key not in groups:
            groups[key] = []
            out.append(key)  # placeholder, keeps the first one's position
        groups[key].append((float(m.group(1)), m.group(1), m.group(3)))
    merged = []
    for w in out:
        if w in groups:
            items = sorted(groups[w])
            if len(items) == 1:
                _, f, need = items[0]
                merged.append(f"TPR at {f}% FPR is not estimable with {w} non-members (it needs at least {need}): "
                              "shown as n/e")
                continue
            fs = [f"{f}%" for _, f, _ in items]
            needs = ", ".join(n for _, _, n in items)
            merged.append(f"TPR at {', '.join(fs[:-1])} and {fs[-1]} FPR is not estimable with {w} non-members "
                          f"(each needs at least 1/FPR of them: {needs}): shown as n/e")
        else:
            merged.append(w)
    return merged


def tpr_estimable(fpr: float, n_nonmembers) -> bool:
    """Whether TPR at ``fpr`` can be measured on ``n_nonmembers`` non-members: it needs at least
    1/fpr of them (rounded), since the smallest non-zero FPR they allow is 1/n; below that the
    figure is the TPR at no false positive at all, not at ``fpr``. Unknown counts pass."""
    try:
        n = int(n_nonmembers)
    except (TypeError, ValueError):
        return True
    return n >= int(round(1.0 / float(fpr)))


NOT_ESTIMABLE = "n/e"


def summarize_table(metrics: dict[str, dict]) -> str:
    """Fixed-width table, one row per attack: AUC [CI], TPR at each FPR (%), n members/non-members.

    Warnings are appended below the table, deduplicated: a warning that every attack shares
    is printed once, others are prefixed with the attack's name.
    """
    keys = [fpr_key(f) for f in FPR_GRID]
    extra = sorted({k for m in metrics.values() for k in (m.get("tpr_at_fpr") or {}) if k not in keys},
                   key=float)
    present = [k for k in keys if any(k in (m.get("tpr_at_fpr") or {}) for m in metrics.values())] + extra
    if not present:
        present = keys
    header = ["attack", "AUC [CI]"] + [f"TPR@{_pct(float(k))}" for k in present] + ["n (mem/non)"]
    rows = []
    for name, m in metrics.items():
        t = m.get("tpr_at_fpr") or {}
        n = f"{m.get('n_members', '-')}/{m.get('n_nonmembers', '-')}"
        rows.append([str(name), _fmt_auc(m)]
                    + [_fmt_pct3(t.get(k)) if tpr_estimable(float(k), m.get("n_nonmembers")) else NOT_ESTIMABLE
                       for k in present] + [n])
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]

    def line(cells):
        out = [cells[0].ljust(widths[0]), cells[1].ljust(widths[1])]
        out += [c.rjust(w) for c, w in zip(cells[2:], widths[2:])]
        return "  ".join(out).rstrip()

    lines = [line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]

    n_attacks = len(metrics)
    seen: "OrderedDict[str, list[str]]" = OrderedDict()
    for name, m in metrics.items():
        for w in m.get("warnings") or []:
            seen.setdefault(w, [])
            if name not in seen[w]:
                seen[w].append(name)
    if seen:
        lines.append("")
        lines.append("Warnings:")
        shared = [w for w, names in seen.items() if len(names) == n_attacks or n_attacks <= 1]
        for w in merge_warnings(shared):
            lines.append(f"  - {w}")
        for w, names in seen.items():
            if w not in shared:
                lines.append(f"  - [{', '.join(names)}] {w}")
    return "\n".join(lines)
