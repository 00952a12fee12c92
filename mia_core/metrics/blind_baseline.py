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
* :func:`verdict` -- ``ok`` / ``caution`` / ``shift`` in plain words.
* :func:`match_lengths` -- histogram matching on word counts, to debias a benchmark.
* :func:`shift_report` -- all of the above and the overlap statistics
  (:func:`mia_core.data.overlap.overlap_stats`), optionally before/after length matching.

Nothing here loads or queries a language model.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..data.overlap import DEFAULT_YEAR_CUTOFF, _as_texts, _length, overlap_stats
from ..errors import DataError, SettingsError
from ..formatting import finite
from ..progress import Progress, noop

#: verdict thresholds on the lower end of the blind baseline's AUC confidence interval
SHIFT_CI_LOW = 0.60
CAUTION_CI_LOW = 0.50
SHIFT_MESSAGE = "these sets differ without the model; attack AUCs here do not measure membership"

BLIND_MODEL_DESCRIPTION = (
    "TF-IDF word 1-2-grams + char_wb 2-5-grams (sublinear tf) -> logistic regression "
    "(liblinear dual, C=1, balanced), out-of-fold stratified {k}-fold, vectorisers fitted per fold"
)

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


def _check_blind_inputs(member_texts, nonmember_texts, folds) -> tuple[list[str], np.ndarray, int, list[str]]:
    """The pooled texts (members first), their labels, the folds to use and a warning when fewer than asked.

    Parameters
    ----------
    member_texts, nonmember_texts
        The two sets (at least 2 texts each, not all empty, else ``DataError``).
    folds
        The folds asked for (an integer >= 2, else ``SettingsError``); cut to the smaller set's size.

    Returns
    -------
    tuple
        ``(texts, labels, k, warnings)``.
    """
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
    return texts, labels, k, warnings


def _out_of_fold_scores(texts: list[str], labels: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Every text's decision value from the fold model that did not see it (stratified, shuffled k-fold)."""
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    cv = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    try:
        return cross_val_predict(_make_pipeline(seed), texts, labels, cv=cv, method="decision_function")
    except ValueError as e:  # e.g. "empty vocabulary" in a fold of punctuation-only texts
        raise DataError(f"the blind baseline could not read these texts: {e}") from None


def _fitted_top_features(texts: list[str], labels: np.ndarray, seed: int, top_features: int) -> dict:
    """The ``top_features`` most indicative n-grams of each side, from the pipeline refitted on all texts."""
    if not top_features:
        return {"member": [], "nonmember": []}
    pipe = _make_pipeline(seed)
    try:
        pipe.fit(texts, labels)
    except ValueError:  # pragma: no cover - cross-validation succeeded, so this should too
        return {"member": [], "nonmember": []}
    return _top_features(pipe, top_features)


def blind_baseline(
    member_texts: Sequence[str],
    nonmember_texts: Sequence[str],
    *,
    folds: int = 5,
    seed: int = 0,
    n_bootstrap: int = 1000,
    top_features: int = 10,
    progress: Progress | None = None,
    cache: bool = False,
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

    Parameters
    ----------
    member_texts, nonmember_texts
        The two sets.
    folds, seed, n_bootstrap, top_features
        As above; ``top_features=0`` lists none.
    progress
        ``progress(message, fraction)``.
    cache
        Reuse the result stored for the same texts (same order) and settings in the cache's ``blind``
        namespace, and store a new one (:func:`cached_blind_baseline`); off: always computed.

    Returns
    -------
    dict
        ``evaluate``'s dict plus ``oof_scores`` (input order: members then non-members),
        ``model`` (description), ``folds`` (folds actually used) and ``top_features`` (the most
        member- and non-member-indicative n-grams of the pipeline refitted on all texts; empty
        when ``top_features=0``).
    """
    if cache:
        return cached_blind_baseline(member_texts, nonmember_texts, folds=folds, seed=seed, n_bootstrap=n_bootstrap,
                                     top_features=top_features, progress=progress)
    from sklearn.model_selection import StratifiedKFold  # noqa: F401 - without scikit-learn: ImportError first

    from . import evaluate

    progress = progress or noop
    texts, labels, k, warnings = _check_blind_inputs(member_texts, nonmember_texts, folds)
    progress(f"blind baseline: {k}-fold cross-validation", 0.0)
    scores = _out_of_fold_scores(texts, labels, k, seed)
    progress("blind baseline: metrics", 0.8)
    out = dict(evaluate(labels, np.asarray(scores, dtype=float), n_bootstrap=n_bootstrap, seed=seed))
    out["warnings"] = list(out.get("warnings") or []) + warnings
    out["oof_scores"] = [float(s) for s in scores]
    out["model"] = BLIND_MODEL_DESCRIPTION.format(k=k)
    out["folds"] = k
    out["top_features"] = _fitted_top_features(texts, labels, seed, top_features)
    progress("blind baseline: done", 1.0)
    return out


# --------------------------------------------------------------------------- blind baseline, cached

#: bump when the blind model, its description or the figures :func:`blind_baseline` returns change
BLIND_CACHE_VERSION = "blind-1"
BLIND_NAMESPACE = "blind"  # the cache's folder of blind baselines (``mia_core.cache.store.NAMESPACES``)
_BLIND_ARRAY = "result"  # the entry's one array: the JSON of the result


def blind_cache_settings(*, folds: int, seed: int, n_bootstrap: int, top_features: int) -> dict | None:
    """What a cached blind baseline depends on besides the texts, or None without scikit-learn.

    Parameters
    ----------
    folds, seed, n_bootstrap, top_features
        As :func:`blind_baseline` takes them.

    Returns
    -------
    dict or None
        :data:`BLIND_CACHE_VERSION`, the model's description, the four settings and the scikit-learn and
        NumPy versions (read from the installed package's metadata: scikit-learn is not imported); None
        when scikit-learn is not installed.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        sklearn_version = version("scikit-learn")
    except PackageNotFoundError:
        return None
    return {"version": BLIND_CACHE_VERSION, "model": BLIND_MODEL_DESCRIPTION, "folds": int(folds), "seed": int(seed),
            "n_bootstrap": int(n_bootstrap), "top_features": int(top_features), "sklearn": sklearn_version,
            "numpy": np.__version__}


def blind_cache_key(members: Sequence[str], nonmembers: Sequence[str]) -> str:
    """The cache key of a blind baseline on these texts: the hash of their hashes, in order, side by side.

    Parameters
    ----------
    members, nonmembers
        The two sets, as :func:`blind_baseline` reads them (the order matters: ``oof_scores`` are in it).

    Returns
    -------
    str
        32 hex digits (:func:`mia_core.cache.store.text_hash` of the canonical list).
    """
    from ..cache.store import text_hash

    canon = "members:" + ",".join(map(text_hash, members)) + ";nonmembers:" + ",".join(map(text_hash, nonmembers))
    return text_hash(canon)


def _same(a, b) -> bool:
    """Whether ``b`` (read back from JSON) is ``a`` exactly: the same types (no tuple turned list, no key turned
    string) and values, NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a == b or (a != a and b != b)
    return a == b


def _decode_blind(arrays: dict, n_members: int, n_nonmembers: int) -> tuple[dict | None, str]:
    """A cached entry's result and "" , or None and the reason it is not used.

    Parameters
    ----------
    arrays
        The entry's arrays (as :meth:`mia_core.cache.store.ArrayCache.get` reads them).
    n_members, n_nonmembers
        The sizes of the sets asked for.

    Returns
    -------
    tuple
        ``(result, "")`` or ``(None, reason)``.
    """
    import json

    raw = arrays.get(_BLIND_ARRAY)
    if raw is None or raw.shape != () or raw.dtype.kind != "U":
        return None, "it holds no blind baseline"
    try:
        out = json.loads(str(raw[()]))
    except ValueError:
        return None, "its blind baseline is not readable"
    if not isinstance(out, dict) or not isinstance(out.get("oof_scores"), list) or \
            len(out["oof_scores"]) != n_members + n_nonmembers or out.get("n_members") != n_members or \
            out.get("n_nonmembers") != n_nonmembers:
        return None, "its blind baseline is not for sets of these sizes"
    return out, ""


def cached_blind_baseline(
    member_texts: Sequence[str],
    nonmember_texts: Sequence[str],
    *,
    folds: int = 5,
    seed: int = 0,
    n_bootstrap: int = 1000,
    top_features: int = 10,
    progress: Progress | None = None,
) -> dict:
    """:func:`blind_baseline` through the cache: the stored result of the same texts and settings, else computed
    and stored.

    The entry (namespace ``blind``, settings :func:`blind_cache_settings`, key :func:`blind_cache_key` of the
    texts in order) holds the result's JSON, which gives back every value exactly (a result that would not
    is computed every time, never stored). Entries are verified on read like every cache entry
    (:class:`mia_core.cache.store.ArrayCache`), and the sizes they hold must be those of the sets. A cache
    hit imports none of scikit-learn's modelling modules. A read-only cache is read and not written; a
    cache folder that cannot be used or written never stops the baseline (a note, and it is computed).
    Without scikit-learn it raises ``ImportError`` as :func:`blind_baseline` does.

    Parameters
    ----------
    member_texts, nonmember_texts, folds, seed, n_bootstrap, top_features, progress
        As :func:`blind_baseline` takes them.

    Returns
    -------
    dict
        :func:`blind_baseline`'s result.
    """
    import json

    from ..cache.store import ArrayCache, note

    def compute() -> dict:
        return blind_baseline(member_texts, nonmember_texts, folds=folds, seed=seed, n_bootstrap=n_bootstrap,
                              top_features=top_features, progress=progress)

    settings = blind_cache_settings(folds=folds, seed=seed, n_bootstrap=n_bootstrap, top_features=top_features)
    if settings is None:  # no scikit-learn: blind_baseline's ImportError
        return compute()
    members = _as_texts(member_texts, "member texts")
    nonmembers = _as_texts(nonmember_texts, "non-member texts")
    key = blind_cache_key(members, nonmembers)
    try:
        store = ArrayCache(BLIND_NAMESPACE, settings)
    except SettingsError as e:  # an unusable cache folder: the baseline without it
        note(f"cache: the blind baseline is not cached ({e})")
        return compute()
    reason = {}

    def check(arrays: dict) -> str | None:
        reason["out"], why = _decode_blind(arrays, len(members), len(nonmembers))
        return why or None

    if store.get(key, check) is not None:
        (progress or noop)("blind baseline: done (cached)", 1.0)
        return reason["out"]
    out = compute()
    blob = json.dumps(out)
    if not _same(out, json.loads(blob)):  # pragma: no cover - every value blind_baseline returns round-trips
        return out
    try:
        store.put(key, {_BLIND_ARRAY: np.array(blob)})
    except SettingsError as e:  # a full disk: this run goes on, uncached
        note(f"cache: the blind baseline is not cached ({e})")
    return out


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


def _matched_report(members: list[str], nonmembers: list[str], *, folds: int, seed: int, n_bootstrap: int,
                    n_bins: int, progress: Progress) -> dict:
    """The blind baseline again on the texts :func:`match_lengths` keeps, with the KS test of their word counts.

    Parameters
    ----------
    members, nonmembers
        The two sets.
    folds, seed, n_bootstrap, n_bins
        As :func:`shift_report` takes them.
    progress
        ``progress(message, fraction)`` of the baseline's run.

    Returns
    -------
    dict
        ``{"n_members", "n_nonmembers", "member_indices", "nonmember_indices", "ks", "blind", "verdict"}``.
    """
    from scipy.stats import ks_2samp

    mi, ni = match_lengths(members, nonmembers, n_bins=n_bins, seed=seed)
    mt = [members[i] for i in mi]
    nt = [nonmembers[i] for i in ni]
    ks = ks_2samp([_length(t) for t in mt], [_length(t) for t in nt])
    matched_blind = blind_baseline(mt, nt, folds=folds, seed=seed, n_bootstrap=n_bootstrap, progress=progress)
    return {
        "n_members": len(mi),
        "n_nonmembers": len(ni),
        "member_indices": mi,
        "nonmember_indices": ni,
        "ks": {"statistic": float(ks.statistic), "pvalue": float(ks.pvalue)},
        "blind": matched_blind,
        "verdict": verdict(matched_blind),
    }


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
    cache: bool = False,
) -> dict:
    """Blind baseline + overlap statistics + verdict; with ``match=True`` also the blind
    baseline after :func:`match_lengths` (before/after comparison).

    Attack metrics, when given, only inform the verdict of the unmatched sets.

    Parameters
    ----------
    member_texts, nonmember_texts
        The two sets.
    folds, seed, n_bootstrap
        The blind baseline's (:func:`blind_baseline`).
    attack_metrics
        Attack name -> ``evaluate``-style dict (only ``auc`` is read), for :func:`verdict`.
    match, n_bins
        Also length-match the sets (:func:`match_lengths` with ``n_bins`` bins) and rerun the baseline.
    year_cutoff
        Of the date statistics (:func:`mia_core.data.overlap.overlap_stats`).
    progress
        ``progress(message, fraction)``.
    cache
        Reuse a cached blind baseline of the same texts and settings (``blind_baseline``'s ``cache``; the
        length-matched one is always computed). The overlap statistics and the verdicts are computed every time.

    Returns
    -------
    dict
        ``{"blind", "overlap", "verdict"}`` and, when ``match``, ``"matched"``:
        ``{"n_members", "n_nonmembers", "member_indices", "nonmember_indices", "ks", "blind",
        "verdict"}`` (``ks``: KS statistic/p-value of the word counts after matching).
    """
    progress = progress or noop
    members = _as_texts(member_texts, "member texts")
    nonmembers = _as_texts(nonmember_texts, "non-member texts")
    steps = 3 if match else 2

    def sub(i):
        return lambda msg, f: progress(msg, (i + f) / steps)

    blind = blind_baseline(members, nonmembers, folds=folds, seed=seed,
                           n_bootstrap=n_bootstrap, progress=sub(0), cache=cache)
    progress("overlap statistics", 1 / steps)
    overlap = overlap_stats(members, nonmembers, year_cutoff=year_cutoff)
    out = {"blind": blind, "overlap": overlap, "verdict": verdict(blind, attack_metrics)}
    if match:
        progress("matching lengths", 2 / steps)
        out["matched"] = _matched_report(members, nonmembers, folds=folds, seed=seed, n_bootstrap=n_bootstrap,
                                         n_bins=n_bins, progress=sub(2))
    progress("shift report: done", 1.0)
    return out
