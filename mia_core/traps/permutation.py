"""The pre-registered test: a one-sided, bucket-stratified permutation test of the rank sum (a randomisation test).

Under the null hypothesis that the model was not trained on the inserted traps, nothing the model does depends on
which traps the coin flip inserted (:func:`mia_core.traps.record.assign`): within each perplexity bucket, every
subset of the bucket's inserted count was equally likely to be the inserted one. The statistic is the sum of the
inserted traps' ranks (mid-ranks for ties) of the membership score (higher: more member-like). Its randomisation
distribution is that of the same sum over the within-bucket assignments the design could have made: all of them
when there are at most ``permutations`` (exact), else ``permutations`` of them drawn at random, and

    p = (1 + #{T_b >= T}) / (B + 1),

which is exact for the random draws (Phipson and Smyth 2010) and ``#{T_a >= T} / N`` when enumerated. This holds
whatever the model, the texts and how the score is computed, since the score is computed the same way for every
trap without knowing the groups; a weak score costs power, never validity.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.stats import rankdata

CHUNK = 10_000


def n_assignments(strata: np.ndarray, treated: np.ndarray) -> int:
    """How many within-stratum assignments there are: the product over strata of C(n_b, k_b)."""
    total = 1
    for b in np.unique(strata):
        m = strata == b
        total *= math.comb(int(m.sum()), int(treated[m].sum()))
    return total


def p_floor(strata, treated, permutations: int) -> float:
    """The smallest p-value :func:`stratified_rank_test` can return for these groups, whatever the scores: 1 / N
    when it enumerates the N within-stratum assignments (N <= B + 1), else 1 / (B + 1). Known from the split alone,
    so before anything is published: a floor above alpha means the record can never show training."""
    total = n_assignments(np.asarray(strata), np.asarray(treated, dtype=bool))
    return 1.0 / total if total <= permutations + 1 else 1.0 / (permutations + 1)


def floor_notes(strata, group, copies, permutations: int, alpha: float) -> tuple[dict, list[str]]:
    """The floors of the pre-registered test over every trap and of each repetition level (a lower bound of its
    Holm-adjusted p-value), and a note for each that is not below ``alpha``:
    ``({"overall": p, "levels": {r: p_holm}}, notes)``."""
    g, c, b = np.asarray(group), np.asarray(copies), np.asarray(strata)
    inserted, held = g == "inserted", g == "held_out"
    overall = p_floor(b, inserted, permutations)
    levels = sorted(set(c[inserted].tolist()))
    own = {str(r): p_floor(b[(c == r) | held], inserted[(c == r) | held], permutations) for r in levels}
    # Holm's adjusted p of a level is at least its own p and at least m times the smallest level p: a lower bound
    # that is reached when the floors are equal (the usual case: equal levels, one set of held-out traps)
    per = {r: min(1.0, max(f, len(levels) * min(own.values()))) for r, f in own.items()}
    notes = []
    if overall >= alpha:
        notes.append(f"the smallest p-value this split of {int(inserted.sum())} inserted and {int(held.sum())} held-out "
                     f"traps allows is {overall:.3g}, not below the pre-registered alpha {alpha:g}: the test can "
                     "never say \"trained on the traps\"; make more traps (count) or fewer buckets")
    low = [r for r, f in per.items() if f >= alpha]
    if low and overall < alpha:
        notes.append(f"repetition level(s) x{', x'.join(low)} cannot be shown on their own at alpha {alpha:g} "
                     f"(their Holm-adjusted floor: {', '.join(f'{per[r]:.3g}' for r in low)}); the test over every "
                     "trap can")
    return {"overall": overall, "levels": per}, notes


def stratified_rank_test(scores, treated, strata, *, permutations: int = 100_000, seed: int = 0) -> dict:
    """The test of ``treated`` (True: inserted) scoring higher than the rest, within ``strata``.

    Parameters
    ----------
    scores : array of float
        Membership scores, higher = more member-like; every trap's, computed without the groups.
    treated : array of bool
    strata : array
        Each trap's bucket.
    permutations : int
        B, the random assignments drawn when there are more than B + 1.
    seed : int

    Returns
    -------
    dict
        ``statistic`` (the rank sum), ``expected`` (its mean under the null), ``p_value``, ``method``
        (``"exact"`` or ``"monte carlo"``), ``n_assignments`` (a number, or a float when huge), ``permutations``.
    """
    s = np.asarray(scores, dtype=float)
    t = np.asarray(treated, dtype=bool)
    g = np.asarray(strata)
    if s.shape != t.shape or s.shape != g.shape or not np.isfinite(s).all():
        raise ValueError("scores, groups and strata must be finite arrays of one length")
    r = rankdata(s)  # mid-ranks: ties never favour either group
    observed = float(r[t].sum())
    expected = 0.0
    blocks = []
    for b in np.unique(g):
        idx = np.flatnonzero(g == b)
        k = int(t[idx].sum())
        expected += k * float(r[idx].mean())
        if 0 < k < len(idx):
            blocks.append((r[idx], k))
    total = n_assignments(g, t)
    eps = 1e-9 * max(1.0, abs(observed))
    # a stratum wholly inserted (or wholly held out) adds the same to every assignment's sum
    const = float(sum(r[g == b][t[g == b]].sum() for b in np.unique(g) if t[g == b].sum() == (g == b).sum()))
    if total <= permutations + 1:
        sums = np.full(1, const)
        for ranks, k in blocks:  # every assignment: the sums of each stratum's choices combined
            part = np.array([ranks[list(c)].sum() for c in itertools.combinations(range(len(ranks)), k)])
            sums = (sums[:, None] + part[None, :]).ravel()
        return {"statistic": observed, "expected": expected, "p_value": float(np.mean(sums >= observed - eps)),
                "method": "exact", "n_assignments": int(total), "permutations": int(len(sums))}
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < permutations:
        n = min(CHUNK, permutations - done)
        sums = np.full(n, const)
        for ranks, k in blocks:  # k of the stratum's ranks drawn without replacement, n times
            keys = rng.random((n, len(ranks)))
            pick = np.argpartition(keys, k - 1, axis=1)[:, :k] if k < len(ranks) else slice(None)
            sums += ranks[pick].sum(axis=1)
        hits += int(np.sum(sums >= observed - eps))
        done += n
    return {"statistic": observed, "expected": expected, "p_value": (1 + hits) / (permutations + 1),
            "method": "monte carlo", "n_assignments": float(total) if total > 2**62 else int(total),
            "permutations": int(permutations)}


def holm(p_values: dict) -> dict:
    """Holm's step-down adjustment of ``{name: p}`` (family-wise error at most alpha; any dependence)."""
    items = sorted(p_values.items(), key=lambda kv: kv[1])
    m = len(items)
    out, running = {}, 0.0
    for i, (name, p) in enumerate(items):
        running = max(running, min(1.0, (m - i) * p))
        out[name] = running
    return out


def exposure(member_scores, reference_scores) -> np.ndarray:
    """Exposure in bits of each inserted trap (Carlini et al. 2019, §4, estimated by rank): ``log2(n + 1) -
    log2(rank)``, its rank among itself and the ``n`` held-out traps (1: more member-like than every one of them;
    ties counted half). 0 bits: no more familiar than the held-out ones; ``log2(n + 1)``: the most."""
    ref = np.sort(np.asarray(reference_scores, dtype=float))
    m = np.asarray(member_scores, dtype=float)
    above = len(ref) - np.searchsorted(ref, m, side="right")
    ties = np.searchsorted(ref, m, side="right") - np.searchsorted(ref, m, side="left")
    rank = 1 + above + 0.5 * ties
    return np.log2(len(ref) + 1) - np.log2(rank)
