"""Honest audits: is there a member/non-member distribution shift that needs no model at all?

A membership-inference audit is evidence of memorisation only when members and non-members
come from the *same* distribution. Benchmarks split by date (members written before the
model's cut-off, non-members after) usually also differ in topic, vocabulary, named
entities and length, and a classifier that never queries the model then separates them as
well as, or better than, any attack. This is the warning of Duan et al. (2024) "Do
Membership Inference Attacks Work on Large Language Models?", of Meeus et al. (2024)
"SoK: Membership Inference Attacks on LLMs are Rushing Nowhere (and How to Fix It)"
§5.2.1 (date-split benchmarks such as WikiMIA are separable by model-free classifiers),
of Das, Zhang & Tramèr (2024) "Blind Baselines Beat Membership Inference Attacks for
Foundation Models", and of the SMIA paper (Mozaffari & Marathe 2024, §5.1).

This module provides

* :func:`blind_baseline` -- a text-only classifier (word 1-2-gram + character 2-5-gram
  TF-IDF, logistic regression) scored out-of-fold with stratified k-fold cross-validation.
  The whole :class:`~sklearn.pipeline.Pipeline` (vectorisers included) is refitted inside
  every fold, so no vocabulary or IDF weight ever sees a held-out text. Its AUC is the AUC
  an attack must beat before it can claim to measure membership.
* :func:`overlap_stats` -- n-gram overlap, length, date-token and duplicate statistics.
* :func:`verdict` -- ``ok`` / ``caution`` / ``shift`` in plain words.
* :func:`match_lengths` -- histogram matching on word counts, to debias a benchmark.
* :func:`shift_report` -- all of the above, optionally before/after length matching.

Nothing here loads or queries a language model.
"""
from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from typing import Sequence

import numpy as np

from .errors import DataError, SettingsError
from .metrics import finite
from .progress import Progress, noop


#: verdict thresholds on the lower end of the blind baseline's AUC confidence interval
SHIFT_CI_LOW = 0.60
CAUTION_CI_LOW = 0.50
SHIFT_MESSAGE = "these sets differ without the model; attack AUCs here do not measure membership"

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


# --------------------------------------------------------------------------- blind baseline


def _make_pipeline(seed: int):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import FeatureUnion, Pipeline

    features = FeatureUnion(
        [
            ("word", TfidfVectorizer(analyzer="word", ngram_range=(1, 2), lowercase=True,
                                     sublinear_tf=True, token_pattern=r"(?u)\b\w+\b")),
            ("char", TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), lowercase=True,
                                     sublinear_tf=True)),
        ]
    )
    clf = LogisticRegression(C=1.0, solver="liblinear", dual=True, class_weight="balanced",
                             max_iter=1000, random_state=seed)
    return Pipeline([("tfidf", features), ("logreg", clf)])


BLIND_MODEL_DESCRIPTION = (
    "TF-IDF word 1-2-grams + char_wb 2-5-grams (sublinear tf) -> logistic regression "
    "(liblinear dual, C=1, balanced), out-of-fold stratified {k}-fold, vectorisers fitted per fold"
)


def _top_features(pipe, k: int = 10) -> dict:
    """Most member-/non-member-indicative n-grams of a pipeline fitted on all texts."""
    try:
        names = pipe.named_steps["tfidf"].get_feature_names_out()
        coef = pipe.named_steps["logreg"].coef_.ravel()
    except Exception:  # pragma: no cover - defensive: feature names are a nicety
        return {"member": [], "nonmember": []}
    # ranked by the weight as shown (4 decimals), ties by name: the same list on every CPU (np.argsort's
    # order of equal weights is not fixed: AVX-512 machines sort them otherwise than AVX2 ones)
    shown = np.round(coef.astype(np.float64), 4)

    def fmt(i):
        kind, _, gram = str(names[i]).partition("__")
        return {"ngram": gram, "kind": kind, "weight": float(shown[i])}

    def top(sign: int) -> list[dict]:
        idx = np.flatnonzero(sign * coef > 0)
        return [fmt(i) for i in sorted(idx, key=lambda i: (-sign * shown[i], str(names[i])))[:k]]

    return {"member": top(1), "nonmember": top(-1)}


def blind_baseline(
    member_texts: Sequence[str],
    nonmember_texts: Sequence[str],
    *,
    folds: int = 5,
    seed: int = 0,
    n_bootstrap: int = 1000,
    top_features: int = 10,
    progress: Progress | None = None,
) -> dict:
    """Out-of-fold AUC of a classifier that reads only the texts, never the model.

    Model (a "blind" bag-of-n-grams baseline in the spirit of Meeus et al. 2024 §5.2.1 and
    Das et al. 2024, with character n-grams added): a :class:`~sklearn.pipeline.FeatureUnion` of a
    word 1-2-gram and a character (``char_wb``) 2-5-gram :class:`TfidfVectorizer`
    (sublinear tf, L2 rows) feeding a :class:`LogisticRegression`. Evaluation:
    :func:`sklearn.model_selection.cross_val_predict` with
    :class:`StratifiedKFold` (shuffled with ``seed``); each text gets the decision value
    (log-odds of "member") of the fold model that did not see it, and the pooled
    out-of-fold scores go through :func:`mia_core.metrics.evaluate` (AUC, TPR at low FPR,
    bootstrap CIs). The pipeline, vectorisers included, is refitted in every fold: no
    leakage of vocabulary or IDF statistics from held-out texts. The bootstrap CI resamples
    texts and so ignores the (small) fold-to-fold variation of the fitted models.

    ``folds`` is reduced to the size of the smaller class when needed (with a warning);
    fewer than 2 texts in a class raises :class:`DataError`.

    Returns ``evaluate``'s dict plus ``oof_scores`` (input order: members then non-members),
    ``model`` (description), ``folds`` (folds actually used) and ``top_features`` (the most
    member- and non-member-indicative n-grams of the pipeline refitted on all texts; empty
    when ``top_features=0``).
    """
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    from .metrics import evaluate

    progress = progress or noop
    members = _as_texts(member_texts, "member texts")
    nonmembers = _as_texts(nonmember_texts, "non-member texts")
    n_m, n_n = len(members), len(nonmembers)
    if n_m < 2 or n_n < 2:
        raise DataError(
            f"the blind baseline needs at least 2 members and 2 non-members (got {n_m} and {n_n})"
        )
    if not isinstance(folds, (int, np.integer)) or folds < 2:
        raise SettingsError(f"folds must be an integer >= 2 (got {folds!r})")
    warnings: list[str] = []
    k = int(min(folds, n_m, n_n))
    if k < folds:
        warnings.append(
            f"only {min(n_m, n_n)} texts in the smaller set: blind baseline uses {k} folds instead of {folds}"
        )
    texts = members + nonmembers
    labels = np.array([1] * n_m + [0] * n_n, dtype=int)
    if not any(t.strip() for t in texts):
        raise DataError("all texts are empty: nothing for the blind baseline to read")

    progress(f"blind baseline: {k}-fold cross-validation", 0.0)
    cv = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    try:
        scores = cross_val_predict(_make_pipeline(seed), texts, labels, cv=cv,
                                   method="decision_function")
    except ValueError as e:  # e.g. "empty vocabulary" in a fold of punctuation-only texts
        raise DataError(f"the blind baseline could not read these texts: {e}") from None
    progress("blind baseline: metrics", 0.8)
    out = dict(evaluate(labels, np.asarray(scores, dtype=float), n_bootstrap=n_bootstrap, seed=seed))
    out["warnings"] = list(out.get("warnings") or []) + warnings
    out["oof_scores"] = [float(s) for s in scores]
    out["model"] = BLIND_MODEL_DESCRIPTION.format(k=k)
    out["folds"] = k
    if top_features:
        pipe = _make_pipeline(seed)
        try:
            pipe.fit(texts, labels)
            out["top_features"] = _top_features(pipe, top_features)
        except ValueError:  # pragma: no cover - cross-validation succeeded, so this should too
            out["top_features"] = {"member": [], "nonmember": []}
    else:
        out["top_features"] = {"member": [], "nonmember": []}
    progress("blind baseline: done", 1.0)
    return out


# --------------------------------------------------------------------------- overlap statistics


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


def _length_stats(lengths: list[int]) -> dict:
    if not lengths:
        return {"mean": None, "median": None, "std": None, "min": None, "max": None}
    a = np.asarray(lengths, dtype=float)
    return {"mean": float(a.mean()), "median": float(np.median(a)), "std": float(a.std()),
            "min": int(a.min()), "max": int(a.max())}


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
    """
    from scipy.stats import ks_2samp

    members = _as_texts(member_texts, "member texts")
    nonmembers = _as_texts(nonmember_texts, "non-member texts")
    m_tok = [_words(t) for t in members]
    n_tok = [_words(t) for t in nonmembers]
    m_len = [_length(t) for t in members]
    n_len = [_length(t) for t in nonmembers]

    ngram = {str(n): _ngram_overlap(m_tok, n_tok, n) for n in NGRAM_SIZES}

    if m_len and n_len:
        ks = ks_2samp(m_len, n_len)
        ks_d = {"statistic": float(ks.statistic), "pvalue": float(ks.pvalue)}
    else:
        ks_d = {"statistic": None, "pvalue": None}
    lengths = {"unit": "whitespace-separated words",
               "members": _length_stats(m_len), "nonmembers": _length_stats(n_len), "ks": ks_d}

    dates = {"year_cutoff": int(year_cutoff),
             "members": _date_stats(members, m_len, year_cutoff),
             "nonmembers": _date_stats(nonmembers, n_len, year_cutoff)}

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

    def within(counter) -> int:  # extra copies beyond the first
        return int(sum(c - 1 for c in counter.values() if c > 1))

    duplicates = {
        "n_exact_pairs": len(exact),
        "exact_pairs": [[i, j] for i, j in exact[:max_pairs]],
        "n_near_pairs": len(near),
        "near_pairs": [[i, j, round(jac, 4)] for i, j, jac in near[:max_pairs]],
        "near_threshold": near_dup_threshold,
        "shingle_words": SHINGLE_SIZE,
        "nonmembers_with_duplicate": len({j for _, j in exact} | {j for _, j, _ in near}),
        "within_members_exact": within({k: len(v) for k, v in m_norm.items()}),
        "within_nonmembers_exact": within(n_norm),
    }
    return {
        "n_members": len(members),
        "n_nonmembers": len(nonmembers),
        "ngram_overlap": ngram,
        "lengths": lengths,
        "dates": dates,
        "duplicates": duplicates,
    }


# --------------------------------------------------------------------------- verdict



def verdict(blind: dict, attack_metrics: dict[str, dict] | None = None) -> dict:
    """Plain-language verdict on whether attack AUCs on these sets can mean membership.

    * ``shift``: the blind baseline's AUC CI lower bound exceeds 0.6, or it excludes 0.5
      and the blind AUC is at least the best attack's AUC. The message contains
      "these sets differ without the model; attack AUCs here do not measure membership".
    * ``caution``: the CI lower bound exceeds 0.5 (the sets are distinguishable, mildly);
      attack AUCs should be read against the blind AUC, not against 0.5.
    * ``ok``: otherwise (the CI includes 0.5 or lies below it; out-of-fold AUCs slightly
      below 0.5 are a known artefact of cross-validating on indistinguishable sets).

    Without a CI (``n_bootstrap=0``) the AUC itself is compared with the thresholds.

    ``attack_metrics`` maps attack names to ``evaluate``-style dicts (only ``auc`` is read).
    """
    auc = finite(blind.get("auc"))
    ci = blind.get("auc_ci") or (None, None)
    lo = finite(ci[0]) if len(ci) > 0 else None
    hi = finite(ci[1]) if len(ci) > 1 else None
    best_name, best_auc = None, None
    for name, m in (attack_metrics or {}).items():
        a = finite((m or {}).get("auc"))
        if a is not None and (best_auc is None or a > best_auc):
            best_name, best_auc = name, a
    info = {"blind_auc": auc, "blind_auc_ci": [lo, hi], "best_attack": best_name, "best_attack_auc": best_auc}
    if auc is None:
        return {"level": "caution", **info,
                "message": "The blind baseline's AUC could not be computed, so a distribution "
                           "shift between members and non-members cannot be ruled out."}
    if lo is None or hi is None:  # n_bootstrap=0: judge the point estimate itself
        lo = hi = auc
        blind_txt = (f"A text-only classifier that never queries the model reaches AUC {auc:.3f} "
                     "(no confidence interval was computed)")
    else:
        blind_txt = f"A text-only classifier that never queries the model reaches AUC {auc:.3f} [{lo:.3f}, {hi:.3f}]"
    beats = best_auc is not None and auc >= best_auc
    if lo > SHIFT_CI_LOW or (lo > CAUTION_CI_LOW and beats):
        why = (f" -- at least the best attack ({best_name}, AUC {best_auc:.3f})" if beats else "")
        return {"level": "shift", **info,
                "message": f"{blind_txt}{why}: {SHIFT_MESSAGE}. Use a random split of one source "
                           "or debias the sets (e.g. match lengths) before drawing conclusions."}
    if lo > CAUTION_CI_LOW:
        cmp_ = (f"; the best attack ({best_name}) reaches {best_auc:.3f}" if best_auc is not None else "")
        return {"level": "caution", **info,
                "message": f"{blind_txt}{cmp_}: the sets differ slightly without the model. "
                           "Compare attack AUCs with the blind AUC, not with 0.5."}
    below = (" The interval lies entirely below 0.5: that is not a signal pointing the other way. Out-of-fold "
             "AUCs pooled over folds are known to be biased below 0.5 when there is nothing to learn, the more so "
             "the smaller the sets (Airola et al. 2011, Comput. Stat. Data Anal. 55(4)); read it as no detectable "
             "shift."
             if hi < 0.5 else "")
    return {"level": "ok", **info,
            "message": f"{blind_txt}: no better than chance at telling the sets apart, so no sign "
                       f"of a member/non-member distribution shift that needs no model.{below}"}


# --------------------------------------------------------------------------- debiasing


def match_lengths(
    member_texts: Sequence[str],
    nonmember_texts: Sequence[str],
    *,
    n_bins: int = 10,
    seed: int = 0,
) -> tuple[list[int], list[int]]:
    """Subsample both sets to matched word-count distributions; return the kept indices.

    Histogram matching: bin edges are the quantiles of the pooled word counts (whitespace
    split; ``n_bins`` bins, merged where quantiles coincide); in every bin both sets keep
    ``min(members in bin, non-members in bin)`` texts drawn at random (``numpy`` generator
    seeded with ``seed``). The result has identical bin counts for both sets. Indices are
    returned sorted. It removes the length cue only, not topic or date cues: re-run the
    blind baseline on the kept texts (:func:`shift_report` with ``match=True``) to see
    what is left.
    """
    members = _as_texts(member_texts, "member texts")
    nonmembers = _as_texts(nonmember_texts, "non-member texts")
    if not members or not nonmembers:
        raise DataError("length matching needs at least one member and one non-member")
    if int(n_bins) < 1:
        raise SettingsError(f"n_bins must be >= 1 (got {n_bins})")
    m_len = np.array([_length(t) for t in members], dtype=float)
    n_len = np.array([_length(t) for t in nonmembers], dtype=float)
    pooled = np.concatenate([m_len, n_len])
    edges = np.unique(np.quantile(pooled, np.linspace(0, 1, int(n_bins) + 1)))
    inner = edges[1:-1]
    m_bin = np.searchsorted(inner, m_len, side="right")
    n_bin = np.searchsorted(inner, n_len, side="right")
    rng = np.random.default_rng(seed)
    keep_m: list[int] = []
    keep_n: list[int] = []
    for b in range(len(inner) + 1):
        mi = np.flatnonzero(m_bin == b)
        ni = np.flatnonzero(n_bin == b)
        c = min(len(mi), len(ni))
        if c == 0:
            continue
        keep_m.extend(int(i) for i in rng.choice(mi, size=c, replace=False))
        keep_n.extend(int(i) for i in rng.choice(ni, size=c, replace=False))
    if not keep_m:
        raise DataError("no word-count bin holds both members and non-members: the length "
                        "distributions do not overlap, so they cannot be matched")
    return sorted(keep_m), sorted(keep_n)


# --------------------------------------------------------------------------- report


def shift_report(
    member_texts: Sequence[str],
    nonmember_texts: Sequence[str],
    *,
    folds: int = 5,
    seed: int = 0,
    attack_metrics: dict[str, dict] | None = None,
    match: bool = False,
    n_bootstrap: int = 1000,
    n_bins: int = 10,
    year_cutoff: int = DEFAULT_YEAR_CUTOFF,
    progress: Progress | None = None,
) -> dict:
    """Blind baseline + overlap statistics + verdict; with ``match=True`` also the blind
    baseline after :func:`match_lengths` (before/after comparison).

    Returns ``{"blind", "overlap", "verdict"}`` and, when ``match``, ``"matched"``:
    ``{"n_members", "n_nonmembers", "member_indices", "nonmember_indices", "ks", "blind",
    "verdict"}`` (``ks``: KS statistic/p-value of the word counts after matching). Attack
    metrics, when given, only inform the verdict of the unmatched sets.
    """
    progress = progress or noop
    members = _as_texts(member_texts, "member texts")
    nonmembers = _as_texts(nonmember_texts, "non-member texts")
    steps = 3 if match else 2

    def sub(i):
        return lambda msg, f: progress(msg, (i + f) / steps)

    blind = blind_baseline(members, nonmembers, folds=folds, seed=seed,
                           n_bootstrap=n_bootstrap, progress=sub(0))
    progress("overlap statistics", 1 / steps)
    overlap = overlap_stats(members, nonmembers, year_cutoff=year_cutoff)
    out = {"blind": blind, "overlap": overlap, "verdict": verdict(blind, attack_metrics)}
    if match:
        from scipy.stats import ks_2samp

        progress("matching lengths", 2 / steps)
        mi, ni = match_lengths(members, nonmembers, n_bins=n_bins, seed=seed)
        mt = [members[i] for i in mi]
        nt = [nonmembers[i] for i in ni]
        ks = ks_2samp([_length(t) for t in mt], [_length(t) for t in nt])
        matched_blind = blind_baseline(mt, nt, folds=folds, seed=seed,
                                       n_bootstrap=n_bootstrap, progress=sub(2))
        out["matched"] = {
            "n_members": len(mi),
            "n_nonmembers": len(ni),
            "member_indices": mi,
            "nonmember_indices": ni,
            "ks": {"statistic": float(ks.statistic), "pvalue": float(ks.pvalue)},
            "blind": matched_blind,
            "verdict": verdict(matched_blind),
        }
    progress("shift report: done", 1.0)
    return out
