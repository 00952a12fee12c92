"""Dataset inference's primary test: false-positive rates under every null it claims, and power (issue 38).

Prints two tables on synthetic feature matrices (the one-factor model of ``tests/test_di_validity.py``,
correlated as the default features are):

1. **FPR at alpha = 0.05 and 0.01** under the nulls (exchangeable, unequal sizes, unequal spreads, heavy tails,
   log-normal, outliers, books with unequal or equal passages, a suspect set *less* member-like), with the 95 %
   binomial interval of alpha for the number of replicates;
2. **power** when every feature moves together (0.2 sd), when only one feature family moves (0.3 sd) and
   when one strong feature stands apart (a reference model's ratio), at 50 / 100 / 200 texts a set.

Candidates (each permuted with the Welch t of the combined scores, reported as the larger of the permutation
p-value and the Welch t-test's, as the product does; ``diff`` rows: the old statistic, the difference of means):

* ``nonneg`` -- cross-fitted ridge, weights projected onto w >= 0 (the product's ``combination="nonneg"``);
* ``mean`` -- the label-free mean of the standardised features (the product's default);
* ``ridge`` -- the unconstrained cross-fitted ridge (the test this replaced; learns the direction);
* ``pc1`` -- the first principal component of the standardised features, computed without labels;
* ``single`` -- the strongest single feature chosen in advance (the first, LOSS-like).

    python benchmarks/di_validity.py [--reps 600] [--permutations 199]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from mia_core.dataset_inference.significance import crossfit_scores, fold_ids, welch_p, welch_t

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_di_validity import D, books, features  # noqa: E402 - the synthetic features the suite's null tests use


NULLS = {
    "exchangeable 100+100": lambda r: (features(r, 100), features(r, 100)),
    "exchangeable 25+25": lambda r: (features(r, 25), features(r, 25)),
    "sizes 25+200": lambda r: (features(r, 25), features(r, 200)),
    "spread x2 suspect 25+200": lambda r: (features(r, 25, spread=2.0), features(r, 200)),
    "spread x2 validation 200+25": lambda r: (features(r, 200), features(r, 25, spread=2.0)),
    "t3 100+100": lambda r: (features(r, 100, tails="t3"), features(r, 100, tails="t3")),
    "log-normal 100+100": lambda r: (features(r, 100, tails="lognormal"), features(r, 100, tails="lognormal")),
    "outliers 5% 100+100": lambda r: (features(r, 100, tails="outliers"), features(r, 100, tails="outliers")),
    "books 5x2 vs 30x40 passages": lambda r: (books(r, 5, 2), books(r, 30, 40)),
    "books equal passages 5x2 vs 30x2": lambda r: (books(r, 5, 2), books(r, 30, 2)),
    "suspect less member-like 0.5sd": lambda r: (features(r, 100, shift=-0.5), features(r, 100)),
}


def _shift(cols, size):
    v = np.zeros(D)
    v[cols] = size
    return v


POWER = {
    "all features +0.2 sd": _shift(slice(None), 0.2),
    "one family (4 features) +0.3 sd": _shift(slice(8, 12), 0.3),
    "a strong feature apart (+0.6 sd, loading 0.55)": _shift([0], 0.6),
}


def scores(kind, X, Y, f):
    if kind in ("nonneg", "ridge"):
        return crossfit_scores(X, Y, f, nonneg=kind == "nonneg")
    Z = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    if kind == "mean":
        s = Z.mean(1)
    elif kind == "pc1":
        v = np.linalg.svd(Z - Z.mean(0), full_matrices=False)[2][0]
        s = Z @ (v if v.sum() >= 0 else -v)
    else:
        s = Z[:, 0]
    return np.repeat(s[:, None], Y.shape[1], 1)


def p_value(kind, X, y, B, seed, stat="welch"):
    X = np.asarray(X, float)  # not clipped, as the product
    rng = np.random.default_rng([seed, 1])
    n, n1 = len(y), int(y.sum())
    Y = np.zeros((n, B + 1))
    Y[:, 0] = y
    np.put_along_axis(Y[:, 1:], rng.random((n, B)).argsort(0)[:n1], 1.0, axis=0)
    S = scores(kind, X, Y, fold_ids(n, 5, seed))
    if stat == "diff":
        T = (S * Y).sum(0) / n1 - (S * (1 - Y)).sum(0) / (n - n1)
        return (1 + (T[1:] >= T[0] - 1e-12).sum()) / (1 + B)
    T = welch_t(S, Y)
    p = (1 + (T[1:] >= T[0] - 1e-12 * max(1, abs(T[0]))).sum()) / (1 + B)
    return max(p, welch_p(S[:, 0], y))


def run(make, kind, reps, B, seed, stat="welch"):
    ps = []
    for r in range(reps):
        S, V = make(np.random.default_rng([seed, r]))
        y = np.r_[np.ones(len(S)), np.zeros(len(V))].astype(int)
        ps.append(p_value(kind, np.r_[S, V], y, B, r, stat))
    return np.array(ps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=600)
    ap.add_argument("--power-reps", type=int, default=300)
    ap.add_argument("--permutations", type=int, default=199)
    a = ap.parse_args()
    kinds = ("nonneg", "mean", "ridge", "pc1", "single")
    se = np.sqrt(0.05 * 0.95 / a.reps)
    print(f"FPR at alpha 0.05 (0.01), {a.reps} replicates, {a.permutations} permutations; 95 % binomial interval of "
          f"0.05: [{0.05 - 1.96 * se:.3f}, {0.05 + 1.96 * se:.3f}]")
    print(f"{'null':34s}" + "".join(f"{k:>16s}" for k in (*kinds, "ridge diff(old)")))
    t0 = time.time()
    for i, (name, make) in enumerate(NULLS.items()):
        cells = []
        for k, stat in [*((k, "welch") for k in kinds), ("ridge", "diff")]:
            ps = run(make, k, a.reps, a.permutations, 100 + i, stat)
            cells.append(f"{(ps <= 0.05).mean():.3f} ({(ps <= 0.01).mean():.3f})")
        print(f"{name:34s}" + "".join(f"{c:>16s}" for c in cells), flush=True)
    print(f"\npower at alpha 0.05 (0.01), {a.power_reps} replicates")
    print(f"{'signal':48s}{'n':>5s}" + "".join(f"{k:>16s}" for k in kinds))
    for j, (name, shift) in enumerate(POWER.items()):
        for n in (50, 100, 200):
            def make(r, n=n, shift=shift):
                return features(r, n) + shift, features(r, n)
            cells = []
            for k in kinds:
                ps = run(make, k, a.power_reps, a.permutations, 500 + 10 * j + n)
                cells.append(f"{(ps <= 0.05).mean():.3f} ({(ps <= 0.01).mean():.3f})")
            print(f"{name:48s}{n:5d}" + "".join(f"{c:>16s}" for c in cells), flush=True)
    print(f"\n{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
