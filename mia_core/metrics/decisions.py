"""Threshold decisions calibrated on a population of known non-members, their Wilson intervals, and
group-level scores (Mireshghallah et al. 2022, "Quantifying Privacy Risks of Masked Language Models
Using Membership Inference Attacks", §2.4 and §4.2)."""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
from sklearn.metrics import confusion_matrix

from ..errors import DataError, SettingsError
from .inputs import _as_labels, _as_scores, _clean


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
