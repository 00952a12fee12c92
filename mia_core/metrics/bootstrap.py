"""Percentile bootstrap CIs of AUC and TPR at FPR, vectorised (O(B * n)), members and non-members
resampled separately (stratified); and bootstrap CIs of the differences between two runs."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..errors import DataError
from .inputs import _CHUNK_ELEMENTS, _EPS, FPR_GRID, fpr_key


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
    TPR@f (same step rule as :func:`~mia_core.metrics.curves.tpr_at_fpr`): with ``k = floor(f * n_neg)`` false
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


def _percentile_ci(values: np.ndarray, ci: float) -> list[float]:
    q = (1.0 - ci) / 2.0
    lo, hi = np.quantile(values, [q, 1.0 - q])
    return [float(lo), float(hi)]
