"""Statistical validity of dataset inference's primary test (issue 38 item 7): simulated nulls and a power check.

"Used" must mean trained on, so a false "used" is the worst result the product can give. Every null the test
claims is simulated here, and its false-positive rate at alpha = 0.05 must stay inside the binomial bound:
at most ``alpha + 3 SE`` over ``REPS`` replicates (a fixed seed: the figures are deterministic; the bound
leaves room only for simulation noise, not for a real excess: the old test gave 20 % under unequal spread and
74 % on a less member-like suspect set). Features follow a one-factor model correlated as the default
features are (loadings 0.55-0.98: Min-K% at neighbouring k nearly collinear, DC-PDD and zlib less so).
The full tables (more replicates, every candidate statistic) are printed by ``benchmarks/di_validity.py``.
"""
from __future__ import annotations

import numpy as np
import pytest

from mia_core.dataset_inference.significance import permutation_test

pytestmark = pytest.mark.slow

REPS = 500
ALPHA = 0.05
BOUND = ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / REPS)  # 0.092
D = 12
LOADINGS = np.linspace(0.55, 0.98, D)


def features(rng, n: int, *, shift: float = 0.0, spread: float = 1.0, tails: str = "normal") -> np.ndarray:
    """``n`` texts' features: one common factor plus noise, oriented higher = more member-like."""
    f, e = rng.normal(size=(n, 1)), rng.normal(size=(n, D))
    if tails == "t3":
        scale = np.sqrt(rng.chisquare(3, size=(n, 1)) / 3)
        f, e = f / scale, e / scale
    X = f * LOADINGS + e * np.sqrt(1 - LOADINGS ** 2)
    if tails == "lognormal":
        X = np.exp(X)
    if tails == "outliers":
        X[rng.random(n) < 0.05] *= 10
    return spread * X + shift


def books(rng, n_books: int, passages: int) -> np.ndarray:
    """A book's features: the mean over its passages of a book effect plus passage noise."""
    return np.array([features(rng, 1)[0] + features(rng, passages).mean(0) for _ in range(n_books)])


def skewed(rng, n: int, *, spread: float = 1.0, left: bool = True, df: int = 3) -> np.ndarray:
    """Chi-square margins (``df`` 3: skewness 1.6) joined as the one-factor model's normals are (a Gaussian copula),
    standardised, mirrored when ``left``; then scaled by ``spread`` about the same mean (0)."""
    from scipy.stats import chi2, norm

    Z = features(rng, n)
    C = (chi2.ppf(norm.cdf(Z), df) - df) / np.sqrt(2 * df)
    return spread * (-C if left else C)


def mixed(rng, n: int, size: float = 0.5) -> np.ndarray:
    """One family of features ``size`` sd more member-like and another ``size`` sd less (issue 51: a set that
    differs, not a set trained on)."""
    X = features(rng, n)
    X[:, :4] += size
    X[:, 4:8] -= size
    return X


NULLS = {
    "exchangeable, 50 + 50": lambda r: (features(r, 50), features(r, 50)),
    "sizes 25 + 200": lambda r: (features(r, 25), features(r, 200)),
    "suspect twice the spread, 25 + 200": lambda r: (features(r, 25, spread=2.0), features(r, 200)),
    "validation twice the spread, 200 + 25": lambda r: (features(r, 200), features(r, 25, spread=2.0)),
    "heavy tails (t3), 80 + 80": lambda r: (features(r, 80, tails="t3"), features(r, 80, tails="t3")),
    "log-normal, 80 + 80": lambda r: (features(r, 80, tails="lognormal"), features(r, 80, tails="lognormal")),
    "5 % outliers, 80 + 80": lambda r: (features(r, 80, tails="outliers"), features(r, 80, tails="outliers")),
    "suspect less member-like (0.5 sd), 100 + 100": lambda r: (features(r, 100, shift=-0.5), features(r, 100)),
    # the books mode gives every book the same number of passages (the shortest book's): 5 books of 2 + 30 of 2
    "books, equal passages, 5 + 30": lambda r: (books(r, 5, 2), books(r, 30, 2)),
    # issue 51: skew with unequal spread, another correlation structure, a mixed shift (nonneg: 87 % at 0.05)
    "left-skewed, 10 suspect of twice the spread + 200": lambda r: (skewed(r, 10, spread=2.0), skewed(r, 200)),
    "chi-square margins, 200 + 25 validation of twice the spread": lambda r: (skewed(r, 200, left=False),
                                                                              skewed(r, 25, spread=2.0, left=False)),
    "another correlation (independent features), 25 + 200": lambda r: (r.normal(size=(25, D)), features(r, 200)),
    "mixed shift (+0.5 / -0.5 sd in two families), 100 + 100": lambda r: (mixed(r, 100), features(r, 100)),
}


def _fpr(make, seed: int) -> float:
    hits = 0
    for rep in range(REPS):
        S, V = make(np.random.default_rng([seed, rep]))
        y = np.r_[np.ones(len(S)), np.zeros(len(V))].astype(int)
        hits += permutation_test(np.r_[S, V], y, n_permutations=199, seed=rep)["p_value"] <= ALPHA
    return hits / REPS


@pytest.mark.parametrize("name", list(NULLS))
def test_false_positive_rate_stays_within_its_binomial_bound(name):
    fpr = _fpr(NULLS[name], seed=sum(map(ord, name)))
    assert fpr <= BOUND, f"{name}: 'used' in {fpr:.1%} of {REPS} null replicates at alpha {ALPHA} (bound {BOUND:.1%})"
    if "less member-like" in name:
        assert fpr == 0.0  # a set that scores the other way is never "used"


def test_a_small_wide_left_skewed_suspect_set_holds_its_level():
    """Issue 51 item 3: 10 left-skewed suspect texts of twice the spread against 200, the same mean. A small skewed
    set's mean and deviation are correlated, which skews the Welch t itself; the permutation and Welch parts both
    miss it (7.5 % at 0.05 in these 1,000 replicates), the bootstrap-t part follows it (the reported p, the largest
    of the three: 6.0 %). Bound: alpha + 2 SE for 1,000 replicates (6.4 %)."""
    reps, hits = 1000, 0
    for rep in range(reps):
        rng = np.random.default_rng([77, rep])
        S, V = skewed(rng, 10, spread=2.0), skewed(rng, 200)
        y = np.r_[np.ones(len(S)), np.zeros(len(V))].astype(int)
        hits += permutation_test(np.r_[S, V], y, n_permutations=199, seed=rep)["p_value"] <= ALPHA
    assert hits / reps <= ALPHA + 2 * np.sqrt(ALPHA * (1 - ALPHA) / reps), f"{hits / reps:.1%}"


def test_the_label_free_combination_is_one_sided_too():
    """``combination="mean"`` (equal weights): a suspect set less member-like is never "used"."""
    hits = 0
    for rep in range(100):
        rng = np.random.default_rng([11, rep])
        X = np.r_[features(rng, 100, shift=-0.5), features(rng, 100)]
        y = np.r_[np.ones(100), np.zeros(100)].astype(int)
        hits += permutation_test(X, y, n_permutations=199, seed=rep, combination="mean")["p_value"] <= ALPHA
    assert hits == 0


def test_power_on_a_weak_signal_that_moves_every_feature():
    """All features 0.25 sd more member-like, 100 + 100 texts: the test finds it in most replicates (the
    unconstrained ridge it replaced: about a quarter at 0.2 sd)."""
    hits = 0
    for rep in range(60):
        rng = np.random.default_rng([7, rep])
        X = np.r_[features(rng, 100, shift=0.25), features(rng, 100)]
        y = np.r_[np.ones(100), np.zeros(100)].astype(int)
        hits += permutation_test(X, y, n_permutations=199, seed=rep)["p_value"] <= ALPHA
    assert hits / 60 >= 0.5, f"power {hits / 60:.0%}"


def test_a_mixed_shift_between_attack_families_is_not_used():
    """The default combination (each attack family once: ``features.by_family``) on features named as the product
    names them: Min-K% 0.5 sd more member-like and Min-K%++ 0.5 sd less is no evidence of training; fitted
    non-negative weights said "used" in most such runs."""
    names = ["loss", "zlib"] + [f"min_k@{k}" for k in (0.1, 0.2, 0.3, 0.4, 0.5)] + \
        [f"min_k_pp@{k}" for k in (0.1, 0.2, 0.3, 0.4, 0.5)]
    hits = {"families": 0, "nonneg": 0}
    for rep in range(100):
        rng = np.random.default_rng([13, rep])
        S = features(rng, 100)
        S[:, 2:7] += 0.5
        S[:, 7:12] -= 0.5
        X = np.r_[S, features(rng, 100)]
        y = np.r_[np.ones(100), np.zeros(100)].astype(int)
        for c in hits:
            hits[c] += permutation_test(X, y, n_permutations=199, seed=rep, combination=c, names=names)["p_value"] <= ALPHA
    assert hits["families"] <= 100 * BOUND and hits["nonneg"] >= 50, hits
