"""The tests of dataset inference: a one-sided, studentized permutation test (primary) and the paper's split t-test.

Both take a feature matrix ``X`` (one row per text, one column per MIA feature, every column oriented
so that **higher = more member-like**: :mod:`mia_core.dataset_inference.features`) and labels ``y``
(1 = suspect text, 0 = validation text).

**What is tested.** H0: the suspect texts are *not more member-like* than the validation texts
(exchangeable with them, or less member-like); H1: they score as trained-on more. "Used" is a claim
in one direction only, so the test is one-sided by construction (issue 38):

* the combined score may only rise with evidence of membership: it is a combination of the oriented
  features with **non-negative weights** (:data:`COMBINATIONS`: equal, or fitted and kept >= 0), so a suspect set that scores *less*
  member-like can never be called "used" (its statistic is negative, its p-value large);
* the statistic is the **Welch t** of the combined scores, suspect minus validation (one-sided).

**The combined score** (``combination``):

* ``"families"`` (the default since issue 51): every feature standardised (pooled, label-free) and averaged within
  its attack family (``features.by_family``: Min-K% and Min-K%++ have seven columns each, LOSS one), then the
  ``"mean"`` below on the family means: each attack counts once, and no label is read. Chosen on the table of
  ``docs/dataset-inference.md``: fitted weights said "used" in 87 % of runs where one family moved 0.5 sd up and
  another 0.5 sd down (a set that differs, not one trained on); the family mean holds its level there and, on the
  calibrated features of two weak fine-tunes, has the fitted combination's power or more (25 + 25 texts: p < 1e-3
  in 5 and 10 of 10 draws, against 4 and 8).
* ``"nonneg"`` (the default before issue 51): a least-squares linear classifier (ridge, :data:`RIDGE`) fitted by
  cross-fitting (``k`` folds drawn at random, independently of the labels; each fold scored by the
  fit on the other folds, features standardised there), its weights projected onto ``w >= 0`` (the
  negative ones set to 0: one matrix product per fold for all permutations). It learns *how much*
  each feature counts, never *which direction*.
* ``"mean"``: the mean of the standardised features, a pre-specified combination that reads no
  label (no folds): every feature counts equally and only upward.

Chosen on evidence (``benchmarks/di_validity.py``; the tables in ``docs/dataset-inference.md``): both
hold their level under every simulated null (2,000 replicates where it was closest); ``nonneg`` has
nearly the mean's power when every feature moves together (0.50 vs 0.53 at 100 + 100 texts, 0.2 sd)
and far more when one family or one strong feature such as a reference model's ratio carries the
signal (0.68 vs 0.09); the unconstrained ridge it replaced is two-sided in effect (95 % "used" on a
suspect set 0.5 sd *less* member-like) and invalid under unequal spread; the first principal component
behaves as the mean; LOSS alone loses when every feature moves. The per-text p-values use the
label-free mean (``verdict.unit_p_values``), which keeps them exact.

Features are standardised (pooled mean and deviation: label-free) and **not clipped**: clipping at
pooled 2.5 % quantiles cut a small, wide set's tails and made its Welch standard error too small
(25 validation texts of twice the spread against 200, 2,000 replicates: 7.5 % at 0.05 for ``nonneg``
and 6.7 % for ``mean`` clipped; 4.7-5.4 % unclipped), and the combination of many features is robust enough to heavy tails and outliers
without it (4.4-4.7 % at 0.05 unclipped).

**The p-value.** The label vector is permuted ``B`` times and the whole cross-fitting redone; the
permutation p-value ``(1 + #{T_b >= T}) / (1 + B)`` is exact in finite samples when the two sets
are exchangeable (Phipson & Smyth 2010; Hemerik & Goeman 2018: the cross-fitted statistic is a fixed
function of ``(X, y)``). Because ``T`` is studentized, it stays asymptotically valid when only the
means are equal and the spreads or sizes differ (Janssen 1997; Chung & Romano 2013), where the
difference of means is not (measured: 20-30 % at alpha = 0.05 for 25 texts of twice the spread
against 200). In finite samples with a small, wide set the permutation distribution of the Welch t
(close to normal) is lighter-tailed than the statistic's own (close to Student's t with few degrees
of freedom): up to 7.5 % at 0.05 in that case. The reported p-value is therefore the largest of the
permutation p-value, the one-sided Welch t-test's (Satterthwaite degrees of freedom) and the Welch t's
bootstrap-t p-value (:func:`bootstrap_t_p`; issue 51 item 3) on the same combined scores. The largest of
several p-values is valid wherever any one of them is: when the sets are exchangeable (the permutation
part), when they differ only in spread and size (the Welch part), and when, besides, a small set is
skewed (the bootstrap-t part: a small set's sample mean and deviation are correlated under skew, which
skews the Welch t itself, and both other parts miss it). Measured on 2,000 replicates of 10 left-skewed
suspect texts of twice the spread against 200 (``tests/test_di_validity.py``'s ``skewed``): permutation
and Welch 6.4 % at 0.05, bootstrap-t alone 6.7 %, the largest of the three 5.5 % (binomial interval
[4.0, 6.0] %); 3.2-5.4 % in every null scenario of ``benchmarks/di_validity.py`` before it, which it
can only lower. A p-value at the resampling resolution ``1 / (B + 1)`` is a bound ("p <= 1e-4"), said
so.

**The paper's procedure** (:func:`paper_test`; Maini et al. 2024, §4 "Dataset inference", and
``linear_di.py`` of pratyushmaini/llm_dataset_inference): features clipped, standardised with the
suspect set's mean and deviation (``--normalize train``), each set shuffled and cut in two halves, a
linear classifier (suspect 0, validation 1) trained on half A scores half B, and the p-value is the
one-sided Student t-test ``ttest_ind(suspect_B, validation_B, alternative="less")``. The classifier
here is scikit-learn's unregularised logistic regression (the code trains a ``torch.nn.Linear`` with a
logistic loss by Adam for 1,000 epochs: the same model, fitted to convergence). **Departure**: the code
clips each feature at each set's *own* 2.5 % quantiles (``remove_outliers(..., outliers="clip")`` per
set, over both halves); the thresholds then tie half A to half B and the classifier learns the
artefact (anti-conservative once clipping acts, >= 80 texts a set: 17-22 % at 0.05 with heavy-tailed
features); here the quantiles are pooled over both sets (label-free: 5.3 %). The paper's classifier
learns the direction on half A, so its test is not one-sided in the membership direction: it is
shown beside the primary p-value, and never decides the verdict.
"""
from __future__ import annotations

import math

import numpy as np

from ..formatting import format_p, p_number  # noqa: F401 - the p-value's words, re-exported here
from ..errors import DataError
from ..options import check_option, one_of, whole

CLIP_FRAC = 0.05  # linear_di.py: remove_outliers(remove_frac=0.05, outliers="clip"), 2.5 % each side
DEFAULT_FOLDS = 5
DEFAULT_PERMUTATIONS = 10_000
MAX_PERMUTATIONS = 1_000_000  # p down to 1e-6; more says nothing a court could use and costs minutes
RIDGE = 1.0  # the least-squares classifier's penalty on standardised features (not on the intercept)
COMBINATIONS = ("families", "nonneg", "mean")
DEFAULT_COMBINATION = "families"
COMBINATION_WORDS = {"families": "the mean over attack families, each counted once",
                     "nonneg": "non-negative weights fitted by cross-fitting", "mean": "every feature equally"}
# the test's settings' domains (mia_core.options), also the fields of dataset_inference.options.InferenceOptions;
# more folds than 20 add nothing to the weights and multiply the test's time
FOLDS_DOMAIN = whole(2, 20)
PERMUTATIONS_DOMAIN = whole(99, MAX_PERMUTATIONS)
COMBINATION_DOMAIN = one_of(*COMBINATIONS)


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
    """The paper's procedure (module docstring; clipping at pooled quantiles). Returns ``{"p_value"`` (Student, one-sided),
    ``"p_value_welch"``, ``"t"``, ``"n_train"``, ``"n_test"`` (texts per set in each half),
    ``"weights"`` (the classifier's, for "validation"; suspect-pointing = negative)``}``."""
    from scipy.stats import ttest_ind

    S, V = np.asarray(X_suspect, float), np.asarray(X_validation, float)
    # clipped at the pooled quantiles (the code clips each set at its own: the module docstring's departure)
    both = np.column_stack([clip_outliers(c) for c in np.r_[S, V].T])
    S, V = both[:len(S)], both[len(S):]
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


# ---------------------------------------------------------------------------------------------- primary test
def fold_ids(n: int, k: int, seed: int) -> np.ndarray:
    """A random fold for each of ``n`` texts (sizes differ by at most one), independent of the labels."""
    return np.random.default_rng(seed).permutation(np.arange(n) % k)


def _standardise(X: np.ndarray, rows=None) -> tuple[np.ndarray, np.ndarray]:
    ref = X if rows is None else X[rows]
    mu, sd = ref.mean(0), ref.std(0)
    return mu, np.where(sd > 0, sd, 1.0)


def crossfit_scores(X: np.ndarray, Y: np.ndarray, folds: np.ndarray, ridge: float = RIDGE,
                    nonneg: bool = False) -> np.ndarray:
    """Out-of-fold least-squares scores for every column of ``Y`` (label vectors, shape ``(n, B)``):
    each fold scored by the ridge fit on the other folds (features standardised with their mean and
    deviation), ``(n, B)``. The fit is ``W = (A'A + ridge D)^-1 A' Y`` (``D`` leaves the intercept
    unpenalised), linear in ``Y``: one matrix product for all label vectors. ``nonneg``: the feature
    weights projected onto ``w >= 0`` (negative ones set to 0) and the intercept dropped (the score
    is then a non-negative combination of the standardised features: it can only rise with a feature)."""
    X = np.asarray(X, float)
    Y = np.asarray(Y, float)
    n, d = X.shape
    S = np.empty_like(Y)
    pen = np.eye(d + 1) * ridge
    pen[0, 0] = 0.0
    for k in np.unique(folds):
        te = folds == k
        tr = ~te
        mu, sd = _standardise(X, tr)
        A = np.c_[np.ones(tr.sum()), (X[tr] - mu) / sd]
        W = np.linalg.solve(A.T @ A + pen, A.T) @ Y[tr]
        Z = (X[te] - mu) / sd
        S[te] = Z @ W[1:].clip(min=0) if nonneg else np.c_[np.ones(te.sum()), Z] @ W
    return S


def welch_t(S: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """The Welch t of the scores, suspect (``Y == 1``) minus validation, for every column of ``S`` and
    ``Y`` (``(n, B)``); 0 where both sets' scores are constant."""
    S, Y = np.asarray(S, float), np.asarray(Y, float)
    n1 = Y.sum(0)
    n0 = len(Y) - n1
    m1, m0 = (S * Y).sum(0) / n1, (S * (1 - Y)).sum(0) / n0
    v1 = (((S - m1) ** 2) * Y).sum(0) / (n1 - 1)
    v0 = (((S - m0) ** 2) * (1 - Y)).sum(0) / (n0 - 1)
    se = np.sqrt(v1 / n1 + v0 / n0)
    diff = m1 - m0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, diff / np.where(se > 0, se, 1.0), np.sign(diff) * np.inf)
    return np.where(np.isnan(t), 0.0, t)


def welch_p(s: np.ndarray, y: np.ndarray) -> float:
    """One-sided Welch t-test (Satterthwaite degrees of freedom): suspect scores greater."""
    from scipy.stats import ttest_ind

    a, b = s[y == 1], s[y == 0]
    if np.ptp(np.r_[a, b]) == 0:
        return 1.0
    p = float(ttest_ind(a, b, alternative="greater", equal_var=False).pvalue)
    return 1.0 if math.isnan(p) else p


def bootstrap_t_p(s: np.ndarray, y: np.ndarray, n_resamples: int, seed: int = 0, chunk: int = 2000) -> float:
    """One-sided bootstrap-t p-value of the Welch t, suspect scores greater (Efron & Tibshirani 1993 §16.4; Hall
    1992 §3.5): each set is centred at its own mean (the null: equal means, any spreads and shapes) and resampled
    within itself ``n_resamples`` times; ``p = (1 + #{T* >= T}) / (1 + n_resamples)``. Second-order accurate where
    the Welch t's normal or Student reference is only first-order: the sample mean and deviation of a small,
    skewed set are correlated, which skews ``T`` itself."""
    s, y = np.asarray(s, float), np.asarray(y, int)
    a, b = s[y == 1], s[y == 0]
    if np.ptp(s) == 0:
        return 1.0
    t_obs = float(welch_t(s[:, None], y[:, None].astype(float))[0])
    ac, bc = a - a.mean(), b - b.mean()
    rng = np.random.default_rng([seed, 5])
    exceed, done = 0, 0
    while done < n_resamples:
        m = min(chunk, n_resamples - done)
        A, B = ac[rng.integers(0, len(a), (m, len(a)))], bc[rng.integers(0, len(b), (m, len(b)))]
        se = np.sqrt(A.var(1, ddof=1) / len(a) + B.var(1, ddof=1) / len(b))
        diff = A.mean(1) - B.mean(1)
        with np.errstate(divide="ignore", invalid="ignore"):
            T = np.where(se > 0, diff / np.where(se > 0, se, 1.0), 0.0)
        exceed += int((T >= t_obs - 1e-12 * max(1.0, abs(t_obs))).sum())
        done += m
    return (1 + exceed) / (1 + n_resamples)


def combined_scores(X: np.ndarray, Y: np.ndarray, *, combination: str, folds: np.ndarray | None,
                    ridge: float = RIDGE) -> np.ndarray:
    """The combined score of every text for every label vector (``(n, B)``; see the module docstring).
    ``"mean"`` reads no label (the same column for every ``Y``)."""
    if combination == "mean":
        mu, sd = _standardise(X)
        s = ((X - mu) / sd).mean(1)
        return np.repeat(s[:, None], Y.shape[1], axis=1)
    return crossfit_scores(X, Y, folds, ridge, nonneg=True)


def check_matrix(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``X`` as a finite float matrix and ``y`` as 0/1 labels, or ``DataError`` in one line."""
    try:
        X = np.asarray(X, dtype=float)
        y = np.asarray(y)
    except (TypeError, ValueError) as e:
        raise DataError(f"the feature matrix must hold numbers ({e})") from None
    if X.ndim != 2 or y.ndim != 1 or len(X) != len(y):
        raise DataError(f"the feature matrix must be (texts x features) with one label per text; got X of shape "
                        f"{X.shape} and {y.shape[0] if y.ndim else 0} label(s)")
    bad = ~np.isfinite(X)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise DataError(f"the feature matrix holds {int(bad.sum())} value(s) that are NaN or infinite (e.g. text "
                        f"{r + 1}, feature {c + 1}): drop or impute them before testing")
    if not np.isin(y, (0, 1)).all():
        raise DataError("labels must be 1 (suspect) or 0 (validation)")
    return X, y.astype(int)


def check_settings(*, folds, n_permutations, combination=DEFAULT_COMBINATION) -> None:
    """``SettingsError`` (one line, naming the option) for settings the test cannot use (their domains:
    :data:`FOLDS_DOMAIN`, :data:`PERMUTATIONS_DOMAIN`, :data:`COMBINATION_DOMAIN`)."""
    check_option("folds", FOLDS_DOMAIN, folds)
    check_option("n_permutations", PERMUTATIONS_DOMAIN, n_permutations)
    check_option("combination", COMBINATION_DOMAIN, combination)


def permutation_test(X: np.ndarray, y: np.ndarray, *, folds: int = DEFAULT_FOLDS,
                     n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0, ridge: float = RIDGE,
                     combination: str = DEFAULT_COMBINATION, chunk: int = 2000, names=None) -> dict:
    """The one-sided, studentized permutation test (module docstring).

    Returns ``{"p_value"`` (the largest of ``p_value_permutation``, ``p_value_welch`` and ``p_value_bootstrap``),
    ``"p_value_is_bound"`` (the resampling parts are at their resolution and decide: p is at most that),
    ``"p_value_permutation"``, ``"p_value_welch"`` (one-sided Welch t-test on the same combined scores),
    ``"p_value_bootstrap"`` (the Welch t's bootstrap-t p-value, :func:`bootstrap_t_p`, as many resamples as
    permutations),
    ``"resolution"``, ``"statistic"`` (the Welch t), ``"scores"`` (the combined score of every text: out
    of fold for ``nonneg``), ``"weights"`` (the non-negative weights fitted on all texts, standardised
    features; for ``mean`` the equal weights), ``"combination"``, ``"folds"``, ``"n_permutations"``,
    ``"null_statistics"`` (quantiles)``}``.
    """
    check_settings(folds=folds, n_permutations=n_permutations, combination=combination)
    X, y = check_matrix(X, y)
    asked, family_weights = combination, None
    if combination == "families":  # each attack family once (features.by_family), then their label-free mean
        from .features import by_family

        X, _, family_weights = by_family(X, names)
        combination = "mean"
    n = len(y)
    n1 = int(y.sum())
    if n1 < 2 or n - n1 < 2:
        raise DataError("the permutation test needs at least 2 suspect and 2 validation texts")
    k = int(min(folds, n))
    f = fold_ids(n, k, seed)
    y1 = y[:, None].astype(float)
    S = combined_scores(X, y1, combination=combination, folds=f, ridge=ridge)[:, 0]
    t_obs = float(welch_t(S[:, None], y1)[0])
    rng = np.random.default_rng([seed, 1])
    exceed, done, null_parts = 0, 0, []
    fixed = S[:, None] if combination == "mean" else None
    while done < n_permutations:
        b = min(chunk, n_permutations - done)
        Y = np.zeros((n, b))
        np.put_along_axis(Y, rng.random((n, b)).argsort(0)[:n1], 1.0, axis=0)  # b random relabellings
        Sb = fixed if fixed is not None else combined_scores(X, Y, combination=combination, folds=f, ridge=ridge)
        T = welch_t(Sb, Y)
        exceed += int((T >= t_obs - 1e-12 * max(1.0, abs(t_obs))).sum())
        null_parts.append(T)
        done += b
    null = np.concatenate(null_parts)
    p_perm = (1 + exceed) / (1 + n_permutations)
    p_w = welch_p(S, y)
    p_b = bootstrap_t_p(S, y, n_permutations, seed)
    mu, sd = _standardise(X)
    A = np.c_[np.ones(n), (X - mu) / sd]
    pen = np.eye(A.shape[1]) * ridge
    pen[0, 0] = 0.0
    w = (np.linalg.solve(A.T @ A + pen, A.T @ y.astype(float))[1:].clip(min=0) if combination == "nonneg"
         else family_weights if family_weights is not None else np.full(X.shape[1], 1.0 / X.shape[1]))
    combination = asked
    p = max(p_perm, p_w, p_b)
    return {"p_value": float(p), "p_value_is_bound": bool(p <= 1.0 / (1 + n_permutations) and p_w <= p),
            "p_value_permutation": float(p_perm), "p_value_welch": float(p_w), "p_value_bootstrap": float(p_b),
            "resolution": 1.0 / (1 + n_permutations), "statistic": t_obs, "scores": S, "weights": w.tolist(),
            "combination": combination, "folds": k, "n_permutations": int(n_permutations),
            "null_statistics": {q: float(np.quantile(null, q)) for q in (0.5, 0.95, 0.99)}}


def estimate_seconds(n_texts: int, n_features: int = 17, n_permutations: int = DEFAULT_PERMUTATIONS,
                     combination: str = DEFAULT_COMBINATION) -> float:
    """About how long the permutation tests of one run take (the primary, the self-check on half the
    validation set, the power curve's 999-permutation subsets): linear in permutations x texts, measured
    at 2.6 s for 10,000 permutations of 400 texts x 20 features (``nonneg``; ``mean`` 0.3 s) on a 2-core
    Xeon. A machine twice as fast halves it; the model passes are estimated elsewhere."""
    per = (2.6 if combination == "nonneg" else 0.3) / (10_000 * 400)
    work = n_permutations * n_texts * max(1.0, n_features / 20)
    return per * (work * 1.25 + 999 * n_texts * 4 * max(1.0, n_features / 20))


def conformal_p_values(scores: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each suspect text's conformal p-value against the validation set: ``(1 + #{v: s_v >= s_i}) /
    (1 + n_v)`` (Bates, Candes, Lei, Romano & Sesia 2023, "Testing for outliers with conformal
    p-values", Ann. Statist.), in the order of the suspect texts. Valid (``P(p <= a) <= a``) for a
    suspect text exchangeable with the validation texts; it cannot go below ``1 / (1 + n_v)``."""
    s, y = np.asarray(scores, float), np.asarray(y, int)
    sv = np.sort(s[y == 0])
    ge = len(sv) - np.searchsorted(sv, s[y == 1], side="left")
    return (1 + ge) / (1 + len(sv))



POWER_SIZES = (10, 25, 50, 100, 200)


def power_curve(X: np.ndarray, y: np.ndarray, *, sizes=POWER_SIZES, draws: int = 5, folds: int = DEFAULT_FOLDS,
                n_permutations: int = 999, seed: int = 0, combination: str = DEFAULT_COMBINATION,
                names=None) -> list[dict]:
    """How many texts does the claim need? **Descriptive**: the primary test's p-value on random subsets of
    ``n`` suspect and ``n`` validation texts *of these same data*, for each ``n`` in ``sizes`` that both sets
    allow (and all of them), ``draws`` subsets each: ``[{"n", "median_p", "min_p", "max_p", "draws",
    "share_below", "floor"}]`` (``share_below``: ``{alpha: share of draws with p <= alpha}`` for 0.05 and
    0.01; ``floor``: ``1 / (1 + n_permutations)``, the smallest p these permutations give). It reuses the
    data of the test, so it is not an independent estimate of power on new texts."""
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
                                       seed=seed + d, combination=combination, names=names)["p_value"])
        ps = np.array(ps)
        out.append({"n": int(n), "median_p": float(np.median(ps)), "min_p": float(ps.min()), "max_p": float(ps.max()),
                    "draws": len(ps), "floor": 1.0 / (1 + n_permutations),
                    "share_below": {"0.05": float((ps <= 0.05).mean()), "0.01": float((ps <= 0.01).mean())}})
    return out
