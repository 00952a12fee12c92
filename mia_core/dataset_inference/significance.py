"""The two tests of dataset inference: the paper's split t-test and a cross-fitted permutation test.

Both take a feature matrix ``X`` (one row per text, one column per MIA feature) and labels ``y``
(1 = suspect text, 0 = validation text) and ask whether a linear combination of the features
scores suspect texts higher than validation texts. Under the null hypothesis (suspect and
validation texts are exchangeable: drawn from one distribution, neither trained on, or both
equally) neither test finds a difference beyond chance.

**The paper's procedure** (:func:`paper_test`; Maini et al. 2024, §4 "Dataset inference", and
``linear_di.py`` of pratyushmaini/llm_dataset_inference, its defaults): per feature and per set,
the lowest and highest 2.5 % of the values are clipped (``--outliers clip``,
``remove_frac = 0.05``); every feature is standardised with the suspect set's mean and standard
deviation (``--normalize train``); each set is shuffled and cut in two halves: a linear classifier
is trained on half A (suspect labelled 0, validation 1, as the code does) and scores half B; the
p-value is the one-sided two-sample t-test ``ttest_ind(suspect_B, validation_B,
alternative="less")``, which with scipy's default ``equal_var=True`` is **Student's** t-test (the
issue that asked for this module says Welch; the code does not; the Welch p-value is reported too).
The classifier here is scikit-learn's unregularised logistic regression (the code trains a
``torch.nn.Linear`` with a logistic loss by Adam for 1,000 full-batch epochs: the same model, fitted
to convergence). Half the texts only train, half only test.

**The cross-fitted permutation test** (:func:`permutation_test`, the primary p-value): every text
is tested. The texts are cut into ``k`` folds at random (independently of the labels); each fold
is scored by a least-squares linear classifier (ridge, features standardised on the other folds)
fitted on the other folds; the statistic is the difference of the mean out-of-fold scores,
suspect minus validation. Its null distribution comes from permuting the labels and re-running
the whole cross-fitting: the p-value ``(1 + #{T_perm >= T}) / (1 + B)`` is exact in finite
samples under exchangeability (Phipson & Smyth 2010 for the +1; the cross-fitted statistic is a
fixed function of (X, y), so permuting y is a valid randomisation test, e.g. Hemerik & Goeman
2018). For least squares the fitted weights are linear in the labels, so all ``B`` permuted label
vectors of a fold are one matrix product. A p-value at the resolution ``1 / (B + 1)`` is a bound
("p < 1e-4"), said so. The out-of-fold scores also give a one-sided Welch t-test, reported beside
it (it assumes the out-of-fold scores are independent, which cross-fitting only approximates).
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError

CLIP_FRAC = 0.05  # linear_di.py: remove_outliers(remove_frac=0.05, outliers="clip"), 2.5 % each side
DEFAULT_FOLDS = 5
DEFAULT_PERMUTATIONS = 10_000
RIDGE = 1.0  # the least-squares classifier's penalty on standardised features (not on the intercept)


# ---------------------------------------------------------------------------------------------- paper
def clip_outliers(v: np.ndarray, frac: float = CLIP_FRAC) -> np.ndarray:
    """``remove_outliers(..., outliers="clip")`` of the paper's code: the ``int(n * frac / 2)`` lowest
    (highest) values all set to the innermost of them, as the code does (``highest_ids[0]``,
    ``lowest_ids[-1]``; not to the first value kept)."""
    v = np.asarray(v, dtype=np.float64).copy()
    m = int(len(v) * frac / 2)
    if m == 0:
        return v
    order = np.argsort(v, kind="stable")
    low, high = order[:m], order[-m:]
    v[high] = v[high[0]]
    v[low] = v[low[-1]]
    return v


def _logistic(Xa: np.ndarray, ya: np.ndarray):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=np.inf, max_iter=5000).fit(Xa, ya)  # unregularised


def paper_test(X_suspect: np.ndarray, X_validation: np.ndarray, *, seed: int = 0) -> dict:
    """The paper's procedure (module docstring). Returns ``{"p_value"`` (Student, one-sided),
    ``"p_value_welch"``, ``"t"``, ``"n_train"``, ``"n_test"`` (texts per set in each half),
    ``"weights"`` (the classifier's, for "validation"; suspect-pointing = negative)``}``."""
    from scipy.stats import ttest_ind

    S, V = np.asarray(X_suspect, float), np.asarray(X_validation, float)
    S = np.column_stack([clip_outliers(c) for c in S.T])
    V = np.column_stack([clip_outliers(c) for c in V.T])
    mu, sd = S.mean(0), S.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    S, V = (S - mu) / sd, (V - mu) / sd
    rng = np.random.default_rng(seed)
    S, V = S[rng.permutation(len(S))], V[rng.permutation(len(V))]
    hs, hv = len(S) // 2, len(V) // 2
    Xa = np.r_[S[:hs], V[:hv]]
    ya = np.r_[np.zeros(hs), np.ones(hv)]  # the code's labels: suspect 0, validation 1
    model = _logistic(Xa, ya)
    ps, pv = model.decision_function(S[hs:]), model.decision_function(V[hv:])
    t, p = ttest_ind(ps, pv, alternative="less")
    _, pw = ttest_ind(ps, pv, alternative="less", equal_var=False)
    return {"p_value": float(p), "p_value_welch": float(pw), "t": float(t), "n_train": [hs, hv],
            "n_test": [len(S) - hs, len(V) - hv], "weights": (-model.coef_[0]).tolist()}


# ---------------------------------------------------------------------------------------------- permutation
def fold_ids(n: int, k: int, seed: int) -> np.ndarray:
    """A random fold for each of ``n`` texts (sizes differ by at most one), independent of the labels."""
    return np.random.default_rng(seed).permutation(np.arange(n) % k)


def crossfit_scores(X: np.ndarray, Y: np.ndarray, folds: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """Out-of-fold least-squares scores for every column of ``Y`` (label vectors, shape ``(n, B)``):
    each fold scored by the ridge fit on the other folds (features standardised with their mean and
    deviation), ``(n, B)``. The fit is ``W = (A'A + ridge D)^-1 A' Y`` (``D`` leaves the intercept
    unpenalised), linear in ``Y``: one matrix product for all label vectors."""
    X = np.asarray(X, float)
    Y = np.asarray(Y, float)
    n, d = X.shape
    S = np.empty_like(Y)
    pen = np.eye(d + 1) * ridge
    pen[0, 0] = 0.0
    for k in np.unique(folds):
        te = folds == k
        tr = ~te
        mu, sd = X[tr].mean(0), X[tr].std(0)
        sd = np.where(sd > 0, sd, 1.0)
        A = np.c_[np.ones(tr.sum()), (X[tr] - mu) / sd]
        H = np.linalg.solve(A.T @ A + pen, A.T)
        S[te] = np.c_[np.ones(te.sum()), (X[te] - mu) / sd] @ (H @ Y[tr])
    return S


def _statistic(S: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Mean out-of-fold score of the suspect texts minus that of the validation texts, per column."""
    n1 = Y.sum(0)
    return (S * Y).sum(0) / n1 - (S * (1 - Y)).sum(0) / (len(Y) - n1)


def permutation_test(X: np.ndarray, y: np.ndarray, *, folds: int = DEFAULT_FOLDS,
                     n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0, ridge: float = RIDGE,
                     chunk: int = 2000) -> dict:
    """The cross-fitted permutation test (module docstring).

    Returns ``{"p_value", "p_value_is_bound"`` (no permutation reached the statistic: p is at most
    the resolution), ``"resolution"``, ``"statistic"``, ``"p_value_welch"`` (one-sided Welch t-test
    on the out-of-fold scores), ``"t_welch"``, ``"oof_scores"``, ``"weights"`` (the ridge fit on all
    texts, standardised features, suspect-pointing = positive), ``"folds"``, ``"n_permutations"``,
    ``"null_statistics"`` (quantiles)``}``.
    """
    from scipy.stats import ttest_ind

    X = np.asarray(X, float)
    y = np.asarray(y, int)
    n = len(y)
    n1 = int(y.sum())
    if n1 < 2 or n - n1 < 2:
        raise DataError("the permutation test needs at least 2 suspect and 2 validation texts")
    k = int(min(folds, n))
    if k < 2:
        raise DataError("the permutation test needs at least 2 folds")
    f = fold_ids(n, k, seed)
    S = crossfit_scores(X, y[:, None], f, ridge)[:, 0]
    t_obs = float(_statistic(S[:, None], y[:, None].astype(float))[0])
    rng = np.random.default_rng([seed, 1])
    exceed, done, null_parts = 0, 0, []
    while done < n_permutations:
        b = min(chunk, n_permutations - done)
        Y = np.zeros((n, b))
        np.put_along_axis(Y, rng.random((n, b)).argsort(0)[:n1], 1.0, axis=0)  # b random relabellings
        T = _statistic(crossfit_scores(X, Y, f, ridge), Y)
        exceed += int((T >= t_obs - 1e-12 * max(1.0, abs(t_obs))).sum())
        null_parts.append(T)
        done += b
    null = np.concatenate(null_parts)
    p = (1 + exceed) / (1 + n_permutations)
    tw, pw = ttest_ind(S[y == 1], S[y == 0], alternative="greater", equal_var=False)
    mu, sd = X.mean(0), X.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    A = np.c_[np.ones(n), (X - mu) / sd]
    pen = np.eye(A.shape[1]) * ridge
    pen[0, 0] = 0.0
    w = np.linalg.solve(A.T @ A + pen, A.T @ y.astype(float))[1:]
    return {"p_value": float(p), "p_value_is_bound": exceed == 0, "resolution": 1.0 / (1 + n_permutations),
            "statistic": t_obs, "p_value_welch": float(pw), "t_welch": float(tw), "oof_scores": S,
            "weights": w.tolist(), "folds": k, "n_permutations": int(n_permutations),
            "null_statistics": {q: float(np.quantile(null, q)) for q in (0.5, 0.95, 0.99)}}


def format_p(p: float, is_bound: bool = False) -> str:
    """``p = 0.0123``, ``p = 3.2e-05`` or ``p <= 1.0e-04`` (no permutation reached the statistic: the
    smallest p-value the permutations can give, the true one may be smaller)."""
    if is_bound:
        return f"p <= {p:.1e}"
    return f"p = {p:.4f}" if p >= 1e-3 else f"p = {p:.1e}"


POWER_SIZES = (10, 25, 50, 100, 200)


def power_curve(X: np.ndarray, y: np.ndarray, *, sizes=POWER_SIZES, draws: int = 5, folds: int = DEFAULT_FOLDS,
                n_permutations: int = 999, seed: int = 0) -> list[dict]:
    """How many texts does the claim need? The permutation p-value on random subsets of ``n`` suspect and
    ``n`` validation texts, for each ``n`` in ``sizes`` that both sets allow (and all of them), ``draws``
    subsets each: ``[{"n", "median_p", "min_p", "max_p", "draws", "share_below"}]`` (``share_below``:
    ``{alpha: share of draws with p <= alpha}`` for 0.05 and 0.01). Fewer permutations than the main
    test (p down to 1e-3): the curve shows where p falls, the main test gives the figure."""
    X = np.asarray(X, float)
    y = np.asarray(y, int)
    si, vi = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    top = min(len(si), len(vi))
    ns = sorted({n for n in sizes if 4 <= n < top} | {top})
    rng = np.random.default_rng([seed, 3])
    out = []
    for n in ns:
        ps = []
        for d in range(draws if n < top or len(si) != len(vi) else 1):
            idx = np.r_[rng.choice(si, n, replace=False), rng.choice(vi, n, replace=False)]
            ps.append(permutation_test(X[idx], y[idx], folds=min(folds, n), n_permutations=n_permutations,
                                       seed=seed + d)["p_value"])
        ps = np.array(ps)
        out.append({"n": int(n), "median_p": float(np.median(ps)), "min_p": float(ps.min()), "max_p": float(ps.max()),
                    "draws": len(ps), "share_below": {"0.05": float((ps <= 0.05).mean()),
                                                      "0.01": float((ps <= 0.01).mean())}})
    return out


def p_number(p: float, is_bound: bool = False) -> str:
    """The p-value alone, for a table cell or a metric: ``0.0123``, ``3.2e-05``, ``<= 1.0e-04``."""
    return format_p(p, is_bound).removeprefix("p = ").removeprefix("p ")
