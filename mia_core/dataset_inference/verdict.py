"""From a feature matrix to a verdict: the stage that texts and books share.

:func:`test_stage` runs, on the units of the test (texts, or books):

1. the primary test (``significance.permutation_test``: one-sided, studentized, non-negative weights);
2. the paper's split t-test (shown beside it, never deciding: it learns the direction on half A);
3. the **self-check**: the same test between two random halves of the validation set. The halves are
   exchangeable by construction, so this checks that the code path gives a uniform p-value on this
   data; it cannot tell whether the validation set is homogeneous, and does not claim to;
4. per-unit **conformal p-values** against the validation set (``significance.conformal_p_values``) on
   the label-free combined score (the mean of the standardised features: no label is read, so a suspect text that is exchangeable with the validation texts gets an exact
   p-value), adjusted across the suspect units by Benjamini-Hochberg (false-discovery rate; valid for
   conformal p-values, which are positively dependent: Bates et al. 2023, Thm 2) or Holm (family-wise
   error, any dependence). A unit's p-value cannot go below ``1 / (1 + n_validation)``; the stage says
   when that floor keeps every unit from being flagged;
5. the verdict and its sentence, which says exactly what was shown.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .significance import (DEFAULT_COMBINATION, combined_scores, conformal_p_values, format_p, paper_test,
                           permutation_test)


def benjamini_hochberg(p: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (the step-up FDR procedure, Benjamini & Hochberg 1995)."""
    p = np.asarray(p, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adj = np.empty(m)
    running = 1.0
    for rank in range(m - 1, -1, -1):
        i = order[rank]
        running = min(running, p[i] * m / (rank + 1))
        adj[i] = min(running, 1.0)
    return adj


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979): family-wise error control under any dependence."""
    p = np.asarray(p, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adj = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adj[i] = running
    return adj


CORRECTIONS = {"bh": benjamini_hochberg, "holm": holm}
CORRECTION_NAMES = {"bh": "Benjamini-Hochberg", "holm": "Holm"}


SPREAD_ALPHA = 0.05  # per-unit flags are withheld when the suspect scores spread wider than this p-value says


def wider_spread_p(s: np.ndarray, y: np.ndarray, n_permutations: int = 999, seed: int = 0) -> float:
    """Do the suspect units' scores spread wider than the validation units'? A one-sided Brown-Forsythe permutation
    test: the mean absolute deviation from each set's own median, suspect minus validation (a shift in location
    does not move it), against ``n_permutations`` relabellings (each set's median recomputed). Exact under
    exchangeability."""
    s, y = np.asarray(s, float), np.asarray(y, int)
    n, n1 = len(y), int(y.sum())
    if n1 < 2 or n - n1 < 2:
        return 1.0
    rng = np.random.default_rng([seed, 9])
    Y = np.zeros((n_permutations + 1, n), bool)
    Y[0] = y == 1
    idx = rng.random((n_permutations, n)).argsort(1)[:, :n1]
    np.put_along_axis(Y[1:], idx, True, axis=1)
    S = np.broadcast_to(s, Y.shape)
    m1 = np.nanmedian(np.where(Y, S, np.nan), axis=1)
    m0 = np.nanmedian(np.where(~Y, S, np.nan), axis=1)
    d = np.abs(S - np.where(Y, m1[:, None], m0[:, None]))
    t = (d * Y).sum(1) / n1 - (d * ~Y).sum(1) / (n - n1)
    return float((1 + (t[1:] >= t[0] - 1e-12).sum()) / (1 + n_permutations))


def unit_p_values(X: np.ndarray, y: np.ndarray, *, alpha: float, correction: str = "bh", seed: int = 0,
                  names=None) -> dict:
    """Step 4 of the module docstring: ``{"score"`` (label-free, every unit), ``"p_value"``, ``"p_adjusted"``,
    ``"flagged"`` (suspect units, in order), ``"floor"``, ``"floor_note"``, ``"spread_p_value"``}``.

    A unit's conformal p-value assumes it is exchangeable with the validation units; a suspect set whose scores
    spread wider than the validation set's (:func:`wider_spread_p` at most :data:`SPREAD_ALPHA`) breaks that even
    without training (25 never-trained texts of twice the spread against 200: a text flagged at BH 0.05 in 38.6 %
    of runs), so then no unit is flagged and the note says why."""
    from .features import by_family

    X = np.asarray(X, float) if names is None else by_family(X, names)[0]
    s = combined_scores(X, np.zeros((len(y), 1)), combination="mean", folds=None)[:, 0]
    p = conformal_p_values(s, y)
    adj = CORRECTIONS[correction](p) if len(p) else p
    spread_p = wider_spread_p(s, y, seed=seed)
    n_v, m = int((y == 0).sum()), int((y == 1).sum())
    floor = 1.0 / (1 + n_v)
    # the smallest adjusted p any unit can reach: every suspect unit at the floor (BH: floor; Holm: m x floor)
    best = floor if correction == "bh" else min(1.0, m * floor)
    note = None
    if best > alpha:
        note = (f"no single {{unit}} can be flagged: a {{unit}}'s own p-value cannot go below 1 / (1 + {n_v} validation "
                f"{{units}}) = {floor:.3g}" + (f", and Holm multiplies the smallest by {m}" if correction == "holm" else "")
                + f" > alpha {alpha}; the collection test is not limited this way")
    flagged = adj <= alpha
    if spread_p <= SPREAD_ALPHA and note is None:
        note = (f"no single {{unit}} is flagged: the suspect {{units}}' scores spread wider than the validation "
                f"{{units}}' (Brown-Forsythe permutation p = {spread_p:.3g}), and a {{unit}}'s own p-value assumes it "
                "is exchangeable with the validation {units}; the collection test does not rest on that")
        flagged = np.zeros(len(adj), bool)
    return {"score": s, "p_value": p, "p_adjusted": adj, "flagged": flagged, "floor": floor, "floor_note": note,
            "spread_p_value": spread_p}


def test_stage(X: np.ndarray, y: np.ndarray, *, alpha: float, folds: int, n_permutations: int, seed: int,
               combination: str = DEFAULT_COMBINATION, correction: str = "bh", paper: bool = True,
               unit: str = "text", names=None) -> dict:
    """Steps 1-5 (module docstring) on the kept units. Returns ``{"summary": fields for the result's
    summary, "metrics": the tests, "perm", "units"}``."""
    perm = permutation_test(X, y, folds=folds, n_permutations=n_permutations, seed=seed, combination=combination,
                            names=names)
    pap = paper_test(X[y == 1], X[y == 0], seed=seed) if paper else None
    Xv = X[y == 0]
    half = np.zeros(len(Xv), int)
    half[np.random.default_rng([seed, 2]).permutation(len(Xv))[: len(Xv) // 2]] = 1
    selfc = permutation_test(Xv, half, folds=min(folds, len(Xv)), n_permutations=min(n_permutations, 999),
                             seed=seed + 1, combination=combination, names=names)
    units = unit_p_values(X, y, alpha=alpha, correction=correction, seed=seed,
                          names=names if combination == "families" else None)
    p, bound = perm["p_value"], perm["p_value_is_bound"]
    n_flag = int(units["flagged"].sum())
    plural = unit + "s"
    if p <= alpha:
        verdict = "used"
        reason = (f"The suspect {plural} score as more member-like than the validation {plural} ({format_p(p, bound)}, "
                  f"at most alpha = {alpha}; one-sided: only a higher score counts). This is evidence that the "
                  f"suspect set was used to train the model, valid if the two sets were drawn from one distribution. "
                  f"{n_flag} of {int((y == 1).sum())} suspect {plural} stand out on their own "
                  f"({CORRECTION_NAMES[correction]}-adjusted p at most {alpha}).")
    else:
        higher = perm["statistic"] > 0
        reason = (f"Not shown that the suspect set was used ({format_p(p, bound)}, above alpha = {alpha}): the suspect "
                  f"{plural} score " + ("as more member-like, but not significantly" if higher else
                                        "no more member-like than the validation " + plural)
                  + ". This is not evidence that the set was not used: more " + plural + " give more power.")
        verdict = "not_shown"
    summary = {
        "verdict": verdict, "verdict_reason": reason, "p_value": p, "p_value_is_bound": bound,
        "p_value_resolution": perm["resolution"], "p_value_permutation": perm["p_value_permutation"],
        "p_value_welch": perm["p_value_welch"], "p_value_bootstrap": perm["p_value_bootstrap"],
        "statistic": perm["statistic"], "combination": combination,
        "p_value_ttest": None if pap is None else pap["p_value"],
        "p_value_ttest_welch": None if pap is None else pap["p_value_welch"],
        "self_check_p_value": selfc["p_value"], "self_check_p_value_is_bound": selfc["p_value_is_bound"],
        "correction": correction, "n_flagged": n_flag, "unit_p_floor": units["floor"], "alpha": float(alpha),
    }
    metrics = {"permutation": {k: v for k, v in perm.items() if k != "scores"},
               "self_check": {k: v for k, v in selfc.items() if k != "scores"}}
    if pap is not None:
        metrics["paper"] = pap
    return {"summary": summary, "metrics": metrics, "perm": perm, "units": units, "unit_note":
            None if units["floor_note"] is None else
            units["floor_note"].replace("{units}", plural).replace("{unit}", unit)}
