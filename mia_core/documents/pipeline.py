"""The document-level pipeline under cross-validation (Meeus et al. 2024, §4 and §5.2.4).

For each fold (``meta.make_folds``): build R^TF/R^GP from the fold's training documents
(``dictionaries``), turn every document's token probabilities into F(t) values for each
normalisation (``normalization``), extract AggFE/HistFE features (``features``; histogram
bins fitted on the training documents), fit the random forest on the training documents
and score the held-out ones (``meta``). A *pipeline* is one normalisation × one feature
extractor, named ``"<normalisation>+<features>"``, e.g. ``"maxnorm_tf+hist"``. The two feature
options (``agg_count``: AggFE with the token count; ``hist_outside``: HistFE's held-out values
outside the fitted bins clipped or dropped) are described in ``features``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..stats import TokenStats
from .dictionaries import ReferenceDictionaries, build_dictionaries
from .features import HistogramFeatures, agg_features, check_options
from .meta import fold_figures, make_folds, random_forest, summarize_folds
from .normalization import normalized_values


def pipeline_name(normalization: str, features: str) -> str:
    """A pipeline's name, ``"<normalisation>+<features>"`` (e.g. ``"maxnorm_tf+hist"``)."""
    return f"{normalization}+{features}"


@dataclass
class CrossValidation:
    """Every pipeline cross-validated over the same folds (:func:`cross_validate`).

    Attributes
    ----------
    metrics : dict
        ``{pipeline: summary}``: mean and standard deviation over folds of the AUC and TPR at low FPR, the
        per-fold ROC curves and the pooled out-of-fold AUC (:func:`mia_core.documents.meta.summarize_folds`).
    oof : dict
        ``{pipeline: out-of-fold membership probability per document}``.
    folds : list of (numpy.ndarray, numpy.ndarray)
        ``(train_idx, test_idx)`` of each fold.
    fold_of_doc : numpy.ndarray
        The fold in which each document was held out.
    fold_dicts : list of ReferenceDictionaries
        Each fold's R^TF / R^GP, built from its training documents.
    fitted : list of dict or None
        With ``keep_fitted=True``: per fold, ``{pipeline: {"hist": HistogramFeatures or None, "classifier":
        forest, "train_tokens": the finite token values the training features came from}}``.
    """

    metrics: dict[str, dict]  # pipeline -> summary (mean/std AUC, TPR@FPR, per-fold ROC)
    oof: dict[str, np.ndarray]  # pipeline -> out-of-fold membership probability per document
    folds: list[tuple[np.ndarray, np.ndarray]]
    fold_of_doc: np.ndarray  # the fold in which each document was held out
    fold_dicts: list[ReferenceDictionaries]
    # with keep_fitted=True: per fold, pipeline -> {"hist": HistogramFeatures or None, "classifier": forest,
    # "train_tokens": finite token values the training features were computed from}
    fitted: list[dict[str, dict]] | None = None


def cross_validate(
    stats: Sequence[TokenStats],
    labels: Sequence[int],
    normalizations: Sequence[str],
    features: Sequence[str],
    *,
    vocab_size: int,
    folds: int | list = 5,
    seed: int = 0,
    n_bins: int = 1000,
    n_estimators: int | None = None,
    n_jobs: int | None = None,
    gp_stats: Sequence[TokenStats] | None = None,
    dict_stats: Sequence[TokenStats] | None = None,
    keep_fitted: bool = False,
    agg_count: bool = False,
    hist_outside: str = "clip",
    progress: Callable[[str, float], None] | None = None,
) -> CrossValidation:
    """Run every (normalisation × feature extractor) pipeline over the same folds.

    ``folds`` is k (stratified, shuffled with ``seed``) or a precomputed list of
    ``(train_idx, test_idx)``. ``dict_stats`` (same indexing as ``stats``; default ``stats``): the
    statistics a fold's R^TF is counted from, e.g. the full documents when ``stats`` are
    partial documents; ``gp_stats``: see ``build_dictionaries`` (default ``dict_stats``).
    ``keep_fitted=True`` keeps each fold's fitted histogram bins and forest in ``.fitted``.
    ``agg_count=True`` adds the token count to AggFE; ``hist_outside="drop"`` makes HistFE the
    authors' ``density=True`` histogram that drops held-out values outside the bins (``features``).
    """
    agg_count, hist_outside = check_options(agg_count, hist_outside)
    y = np.asarray(labels, dtype=int)
    split = make_folds(y, folds, seed) if isinstance(folds, int) else list(folds)
    names = [pipeline_name(n, f) for n in normalizations for f in features]
    oof = {p: np.full(len(y), np.nan) for p in names}
    per_fold: dict[str, list[dict]] = {p: [] for p in names}
    fold_of_doc = np.full(len(y), -1, dtype=int)
    fold_dicts: list[ReferenceDictionaries] = []
    fitted: list[dict[str, dict]] = []
    ref = stats if dict_stats is None else dict_stats
    steps = max(1, len(split) * len(names))
    done = 0
    for k, (tr, te) in enumerate(split):
        fold_of_doc[te] = k
        dicts = build_dictionaries(ref, tr, vocab_size, gp_stats=gp_stats)
        fold_dicts.append(dicts)
        fitted.append({})
        for norm in normalizations:
            values = [normalized_values(s, norm, dicts) for s in stats]
            for feat in features:
                name = pipeline_name(norm, feat)
                fe = None
                if feat == "hist":
                    fe = HistogramFeatures(n_bins, hist_outside).fit([values[i] for i in tr])
                    X_tr = fe.transform([values[i] for i in tr])
                    X_te = fe.transform([values[i] for i in te])
                else:
                    X_tr = agg_features([values[i] for i in tr], count=agg_count)
                    X_te = agg_features([values[i] for i in te], count=agg_count)
                clf = random_forest(seed, n_estimators, n_jobs).fit(X_tr, y[tr])
                p = clf.predict_proba(X_te)[:, list(clf.classes_).index(1)]
                oof[name][te] = p
                if keep_fitted:
                    fitted[k][name] = {"hist": fe, "classifier": clf,
                                       "train_tokens": int(sum(np.isfinite(values[i]).sum() for i in tr))}
                per_fold[name].append(fold_figures(y[te], p))
                done += 1
                if progress:
                    progress(f"meta-classifier: fold {k + 1}/{len(split)}, {name}", done / steps)
            del values
    metrics = {p: summarize_folds(per_fold[p], y, oof[p]) for p in names}
    return CrossValidation(metrics=metrics, oof=oof, folds=split, fold_of_doc=fold_of_doc, fold_dicts=fold_dicts,
                           fitted=fitted if keep_fitted else None)
