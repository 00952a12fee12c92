"""Model-free overlap statistics between a member and a non-member set (a distribution-shift check).

* :func:`overlap_stats` -- n-gram overlap (:func:`ngram_overlaps`), length (:func:`length_comparison`),
  date-token (:func:`date_comparison`) and duplicate (:func:`duplicate_stats`) statistics.
* :func:`near_duplicate_pairs` -- exact all-pairs Jaccard search over word shingles (prefix filtering).

The blind baseline that reads the same two sets is :mod:`mia_core.metrics.blind_baseline`. Nothing
here loads or queries a language model.
"""
from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from typing import Sequence

import numpy as np

from ..errors import DataError

NGRAM_SIZES = (7, 13)
SHINGLE_SIZE = 5
NEAR_DUP_JACCARD = 0.8
DEFAULT_YEAR_CUTOFF = 2020
MAX_LISTED_PAIRS = 100

_WORD_RE = re.compile(r"\w+")
_YEAR_RE = re.compile(r"(?<![\w.,])(1[0-9]{3}|20[0-9]{2})(?![\w]|[.,]\d)")
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)
_MONTH_RE = re.compile(r"\b(" + "|".join(MONTHS) + r")\b")


def _as_texts(texts, what: str) -> list[str]:
    if isinstance(texts, str):
        raise DataError(f"{what} must be a list of texts, not a single string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise DataError(f"{what} item {i} is {type(t).__name__}, not text")
    return out


def _words(text: str) -> list[str]:
    """Lower-cased word tokens (``\\w+``) used for n-grams and shingles."""
    return _WORD_RE.findall(text.lower())


def _length(text: str) -> int:
    """Length in whitespace-separated words (how WikiMIA's length splits are defined)."""
    return len(text.split())


# --------------------------------------------------------------------------- n-grams, lengths, dates


def _ngrams(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def _ngram_overlap(m_tok: list[list[str]], n_tok: list[list[str]], n: int) -> dict:
    member_grams: set = set()
    for t in m_tok:
        member_grams |= _ngrams(t, n)
    nonmember_grams: set = set()
    texts_with = 0
    for t in n_tok:
        g = _ngrams(t, n)
        nonmember_grams |= g
        if g and not g.isdisjoint(member_grams):
            texts_with += 1
    shared = len(nonmember_grams & member_grams)
    total = len(nonmember_grams)
    return {
        "nonmember_ngrams": total,
        "in_members": shared,
        "fraction": shared / total if total else None,
        "nonmember_texts_with_overlap": texts_with,
        "nonmember_texts_with_overlap_share": texts_with / len(n_tok) if n_tok else None,
    }


def ngram_overlaps(m_tok: list[list[str]], n_tok: list[list[str]]) -> dict:
    """The non-members' word n-grams found in the members, for every size of :data:`NGRAM_SIZES`.

    Parameters
    ----------
    m_tok, n_tok
        The members' and non-members' word tokens (:func:`_words`).

    Returns
    -------
    dict
        ``{"7": {...}, "13": {...}}``: ``nonmember_ngrams``, ``in_members``, ``fraction``,
        ``nonmember_texts_with_overlap`` and its share.
    """
    return {str(n): _ngram_overlap(m_tok, n_tok, n) for n in NGRAM_SIZES}


def _length_stats(lengths: list[int]) -> dict:
    if not lengths:
        return {"mean": None, "median": None, "std": None, "min": None, "max": None}
    a = np.asarray(lengths, dtype=float)
    return {"mean": float(a.mean()), "median": float(np.median(a)), "std": float(a.std()),
            "min": int(a.min()), "max": int(a.max())}


def length_comparison(m_len: list[int], n_len: list[int]) -> dict:
    """Word counts of both sets and the two-sample Kolmogorov-Smirnov test between them.

    Parameters
    ----------
    m_len, n_len
        The members' and non-members' word counts (:func:`_length`).

    Returns
    -------
    dict
        ``{"unit", "members", "nonmembers", "ks"}``: mean/median/std/min/max per set and the KS
        statistic and p-value (:func:`scipy.stats.ks_2samp`; None when a set is empty).
    """
    from scipy.stats import ks_2samp

    if m_len and n_len:
        ks = ks_2samp(m_len, n_len)
        ks_d = {"statistic": float(ks.statistic), "pvalue": float(ks.pvalue)}
    else:
        ks_d = {"statistic": None, "pvalue": None}
    return {"unit": "whitespace-separated words",
            "members": _length_stats(m_len), "nonmembers": _length_stats(n_len), "ks": ks_d}


def _date_stats(texts: list[str], lengths: list[int], year_cutoff: int) -> dict:
    n_words = sum(lengths)
    years_per_text = [[int(y) for y in _YEAR_RE.findall(t)] for t in texts]
    n_years = sum(len(y) for y in years_per_text)
    n_months = sum(len(_MONTH_RE.findall(t)) for t in texts)
    all_years = [y for ys in years_per_text for y in ys]
    per1k = (lambda c: 1000.0 * c / n_words if n_words else None)
    return {
        "years_per_1000_words": per1k(n_years),
        "months_per_1000_words": per1k(n_months),
        "share_texts_with_year": (sum(1 for y in years_per_text if y) / len(texts)) if texts else None,
        "share_texts_with_year_ge_cutoff": (
            sum(1 for ys in years_per_text if any(y >= year_cutoff for y in ys)) / len(texts)
        ) if texts else None,
        "median_year": float(np.median(all_years)) if all_years else None,
        "max_year": max(all_years) if all_years else None,
    }


def date_comparison(members: list[str], nonmembers: list[str], m_len: list[int], n_len: list[int],
                    year_cutoff: int) -> dict:
    """Year-like tokens and month names in both sets.

    Parameters
    ----------
    members, nonmembers
        The two sets.
    m_len, n_len
        Their word counts.
    year_cutoff
        The year from which a text counts as "with a recent year".

    Returns
    -------
    dict
        ``{"year_cutoff", "members", "nonmembers"}``, per set: years and months per 1,000 words, the
        share of texts with a year and with a year >= ``year_cutoff``, median and latest year.
    """
    return {"year_cutoff": int(year_cutoff),
            "members": _date_stats(members, m_len, year_cutoff),
            "nonmembers": _date_stats(nonmembers, n_len, year_cutoff)}


# --------------------------------------------------------------------------- duplicates


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())


def _shingles(tokens: list[str], k: int = SHINGLE_SIZE) -> frozenset:
    if not tokens:
        return frozenset()
    if len(tokens) < k:
        return frozenset([tuple(tokens)])
    return frozenset(tuple(tokens[i:i + k]) for i in range(len(tokens) - k + 1))


def near_duplicate_pairs(
    a_tokens: list[list[str]],
    b_tokens: list[list[str]],
    *,
    threshold: float = NEAR_DUP_JACCARD,
    k: int = SHINGLE_SIZE,
) -> list[tuple[int, int, float]]:
    """All pairs ``(i, j, jaccard)`` with Jaccard(shingles(a_i), shingles(b_j)) >= threshold.

    Shingles are word ``k``-grams (``k=5``); texts shorter than ``k`` words form one shingle.
    Exact, not approximate: prefix filtering (Chaudhuri, Ganti & Kaushik 2006; Bayardo,
    Ma & Srikant 2007 "Scaling up all pairs similarity search"). Order every shingle by
    global frequency, rarest first; two sets with Jaccard >= t must share a shingle among
    the first ``|S| - ceil(t*|S|) + 1`` of each, so only pairs sharing a *prefix* shingle are
    candidates, and candidates are then verified exactly (plus the size filter
    ``t*|A| <= |B| <= |A|/t``). Two sets of 1,000 texts take well under a second.
    """
    if not 0 < threshold <= 1:
        raise ValueError("threshold must be in (0, 1]")
    sa = [_shingles(t, k) for t in a_tokens]
    sb = [_shingles(t, k) for t in b_tokens]
    df: Counter = Counter()
    for s in sa:
        df.update(s)
    for s in sb:
        df.update(s)

    def prefix(s: frozenset) -> list:
        ordered = sorted(s, key=lambda g: (df[g], g))
        p = len(s) - math.ceil(threshold * len(s) - 1e-9) + 1
        return ordered[:max(p, 0)]

    index: dict = defaultdict(list)
    for i, s in enumerate(sa):
        for g in prefix(s):
            index[g].append(i)
    pairs = []
    for j, s in enumerate(sb):
        if not s:
            continue
        cands: set[int] = set()
        for g in prefix(s):
            cands.update(index.get(g, ()))
        for i in cands:
            a = sa[i]
            if not (threshold * len(a) <= len(s) + 1e-9 and threshold * len(s) <= len(a) + 1e-9):
                continue
            inter = len(a & s)
            jac = inter / (len(a) + len(s) - inter)
            if jac >= threshold - 1e-12:
                pairs.append((i, j, jac))
    pairs.sort(key=lambda p: (p[0], p[1]))
    return pairs


def _within(counter) -> int:
    """Extra copies beyond the first, over every text of ``counter`` (text -> copies)."""
    return int(sum(c - 1 for c in counter.values() if c > 1))


def duplicate_stats(members: list[str], nonmembers: list[str], m_tok: list[list[str]], n_tok: list[list[str]],
                    near_dup_threshold: float, max_pairs: int) -> dict:
    """Cross-set exact and near duplicates, and exact duplicates within each set.

    Parameters
    ----------
    members, nonmembers
        The two sets.
    m_tok, n_tok
        Their word tokens (:func:`_words`).
    near_dup_threshold
        The Jaccard similarity of word 5-gram shingles from which two texts are near duplicates.
    max_pairs
        How many pairs are listed (the counts are complete).

    Returns
    -------
    dict
        ``n_exact_pairs``, ``exact_pairs`` (``[member_index, nonmember_index]``), ``n_near_pairs``,
        ``near_pairs`` (``[..., jaccard]``, exact ones excluded), ``near_threshold``, ``shingle_words``,
        ``nonmembers_with_duplicate``, ``within_members_exact``, ``within_nonmembers_exact``.
    """
    m_norm: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(members):
        m_norm[_normalise(t)].append(i)
    exact = []
    for j, t in enumerate(nonmembers):
        for i in m_norm.get(_normalise(t), ()):
            exact.append((i, j))
    exact_set = set(exact)
    near = [(i, j, jac) for i, j, jac in near_duplicate_pairs(m_tok, n_tok, threshold=near_dup_threshold)
            if (i, j) not in exact_set]
    n_norm = Counter(_normalise(t) for t in nonmembers)
    return {
        "n_exact_pairs": len(exact),
        "exact_pairs": [[i, j] for i, j in exact[:max_pairs]],
        "n_near_pairs": len(near),
        "near_pairs": [[i, j, round(jac, 4)] for i, j, jac in near[:max_pairs]],
        "near_threshold": near_dup_threshold,
        "shingle_words": SHINGLE_SIZE,
        "nonmembers_with_duplicate": len({j for _, j in exact} | {j for _, j, _ in near}),
        "within_members_exact": _within({k: len(v) for k, v in m_norm.items()}),
        "within_nonmembers_exact": _within(n_norm),
    }


# --------------------------------------------------------------------------- all statistics


def overlap_stats(
    member_texts: Sequence[str],
    nonmember_texts: Sequence[str],
    *,
    year_cutoff: int = DEFAULT_YEAR_CUTOFF,
    near_dup_threshold: float = NEAR_DUP_JACCARD,
    max_pairs: int = MAX_LISTED_PAIRS,
) -> dict:
    """Model-free statistics comparing the two sets (a JSON-able dict).

    * ``ngram_overlap["7"|"13"]``: of the distinct word n-grams (``\\w+`` tokens,
      lower-cased) of the non-members, how many also occur in the members (``fraction``),
      and how many non-member texts share at least one such n-gram with the members.
      13-gram overlap is the contamination test of GPT-3 (Brown et al. 2020, App. C).
    * ``lengths``: word counts (whitespace split) per set -- mean/median/std/min/max -- and
      the two-sample Kolmogorov-Smirnov test (:func:`scipy.stats.ks_2samp`) statistic and
      p-value.
    * ``dates``: year-like tokens (1000-2099) and English month names per 1,000 words per
      set, the share of texts with any year and with a year >= ``year_cutoff`` (month
      names are matched capitalised, so "May"/"March" opening a sentence also count).
    * ``duplicates``: cross-set pairs that are identical after lower-casing and collapsing
      whitespace (``exact_pairs``), and near-duplicates with Jaccard similarity of word
      5-gram shingles >= 0.8 (``near_pairs``, exact ones excluded; see
      :func:`near_duplicate_pairs`). Pairs are ``[member_index, nonmember_index(, jaccard)]``
      listed up to ``max_pairs``; counts are always complete. Also exact duplicates within
      each set.

    Parameters
    ----------
    member_texts, nonmember_texts
        The two sets (lists of strings).
    year_cutoff, near_dup_threshold, max_pairs
        As above.

    Returns
    -------
    dict
        ``{"n_members", "n_nonmembers", "ngram_overlap", "lengths", "dates", "duplicates"}``.
    """
    members = _as_texts(member_texts, "member texts")
    nonmembers = _as_texts(nonmember_texts, "non-member texts")
    m_tok = [_words(t) for t in members]
    n_tok = [_words(t) for t in nonmembers]
    m_len = [_length(t) for t in members]
    n_len = [_length(t) for t in nonmembers]
    return {
        "n_members": len(members),
        "n_nonmembers": len(nonmembers),
        "ngram_overlap": ngram_overlaps(m_tok, n_tok),
        "lengths": length_comparison(m_len, n_len),
        "dates": date_comparison(members, nonmembers, m_len, n_len, year_cutoff),
        "duplicates": duplicate_stats(members, nonmembers, m_tok, n_tok, near_dup_threshold, max_pairs),
    }
