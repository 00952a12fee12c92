"""Partial documents (Meeus et al. 2024, §6.4): AUC versus how much of each document is seen.

The protocol, at each length L (``partial_cross_validation``):

1. **Partial documents.** Every document is cut to its first L tokens (``position="start"``,
   the default: what an auditor who reads or queries only the beginning of a book sees), or
   to one seeded random contiguous excerpt of L tokens (``position="random"``). A document
   shorter than L is used whole. The cuts are slices of the full-document statistics
   (``TokenStats.slice``), so no model is called again. (A token keeps the context it had in
   the full document's window; with stride C-1 windows that context is at most C-1 tokens,
   the same as when scoring the partial document alone except inside its first window.)
2. **Everything is re-fitted at length L, on the same k folds as the full audit:** R^TF is
   counted from the fold's training documents cut to L (``dictionaries="partial"``, the
   default: an auditor with L tokens per book has no more to count; R^GP, which needs the
   summed predicted distributions that slices do not carry, comes from the training
   documents' full texts), or both dictionaries come from the full training documents, as
   in the full audit (``dictionaries="full"``). The histogram bin edges are fitted on the
   training fold's length-L values, and the random forest is trained on the training fold's
   length-L features and evaluated on the held-out fold's length-L features. Nothing fitted on
   full documents is applied to partial ones: the values of L tokens span a narrower range
   than those of whole books (fewer extreme tokens), so bins fitted on full documents would
   leave part of their bins empty for partial documents, and a forest trained on
   full-document features would read partial-document features out of distribution.
3. **Figures** as in the full audit: AUC (and TPR at 1 % / 10 % FPR) per held-out fold,
   mean ± standard deviation over folds.

``partial_curve`` runs this for every length and every pipeline asked for; the audit asks
for the paper's pipeline for books (MaxNormTF + HistFE) and for the pipeline with the best
full-document AUC of the same audit (column ``role``; ``full_auc_mean`` repeats that
pipeline's full-document AUC, the curve's right end).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..errors import SettingsError
from ..stats import TokenStats
from .options import DEFAULT_LENGTHS, DICTIONARIES, POSITIONS  # noqa: F401 - declared with the options
from .pipeline import CrossValidation, cross_validate, pipeline_name

COLUMNS = ["n_tokens", "mean_tokens", "pipeline", "role", "auc_mean", "auc_std", "tpr_1_mean", "tpr_10_mean",
           "full_auc_mean", "n_truncated", "position", "dictionaries"]


def prefixes(stats: Sequence[TokenStats], n_tokens: int) -> list[TokenStats]:
    """The first ``n_tokens`` tokens of every document (the whole document if shorter)."""
    return [s if s.n_tokens <= n_tokens else s.slice(0, n_tokens) for s in stats]


def excerpts(stats: Sequence[TokenStats], n_tokens: int, seed: int) -> list[TokenStats]:
    """One random excerpt of ``n_tokens`` tokens per document (the whole document if shorter)."""
    rng = np.random.default_rng(seed)
    out = []
    for s in stats:
        if s.n_tokens <= n_tokens:
            out.append(s)
            continue
        a = int(rng.integers(0, s.n_tokens - n_tokens + 1))
        out.append(s.slice(a, a + n_tokens))
    return out


def partial_documents(stats: Sequence[TokenStats], n_tokens: int, position: str = "start",
                      seed: int = 0) -> list[TokenStats]:
    """Every document cut to ``n_tokens`` tokens: its start (``"start"``) or a random excerpt (``"random"``)."""
    if position not in POSITIONS:
        raise SettingsError(f"unknown partial-document position {position!r}: choose {' or '.join(POSITIONS)}")
    if int(n_tokens) < 2:
        raise SettingsError(f"a partial document needs at least 2 tokens, got {n_tokens}")
    return prefixes(stats, int(n_tokens)) if position == "start" else excerpts(stats, int(n_tokens), seed)


def partial_cross_validation(
    stats: Sequence[TokenStats],
    labels: Sequence[int],
    folds: list[tuple[np.ndarray, np.ndarray]],
    pipelines: Sequence[tuple[str, str]],
    n_tokens: int,
    *,
    vocab_size: int,
    position: str = "start",
    dictionaries: str = "partial",
    seed: int = 0,
    n_bins: int = 1000,
    n_estimators: int | None = None,
    n_jobs: int | None = None,
    keep_fitted: bool = False,
    agg_count: bool = False,
    hist_outside: str = "clip",
) -> tuple[CrossValidation, list[TokenStats]]:
    """The pipelines cross-validated on documents cut to ``n_tokens`` tokens (step 1-3 of the module
    docstring): dictionaries, histogram bins and forest all fitted on the training fold's partial
    documents. Returns the ``CrossValidation`` (``keep_fitted=True`` keeps the fitted bins and
    forests) and the partial documents. ``agg_count``/``hist_outside``: the feature options of
    ``cross_validate`` (``features``)."""
    if dictionaries not in DICTIONARIES:
        raise SettingsError(f"unknown partial-document dictionaries {dictionaries!r}: choose {' or '.join(DICTIONARIES)}")
    part = partial_documents(stats, n_tokens, position, seed + int(n_tokens))
    norms = list(dict.fromkeys(n for n, _ in pipelines))
    feats = list(dict.fromkeys(f for _, f in pipelines))
    cv = cross_validate(
        part, labels, norms, feats, vocab_size=vocab_size, folds=folds, seed=seed, n_bins=n_bins,
        n_estimators=n_estimators, n_jobs=n_jobs, gp_stats=stats,
        dict_stats=stats if dictionaries == "full" else None, keep_fitted=keep_fitted, agg_count=agg_count,
        hist_outside=hist_outside,
    )
    return cv, part


MIN_POINTS = 4  # fewer of the grid's lengths below the longest document than this: lengths from the documents


def lengths_for(stats: Sequence[TokenStats], lengths: Sequence[int] = DEFAULT_LENGTHS) -> list[int]:
    """The lengths the curve is drawn at: those of ``lengths`` below the longest document (a length at or
    above it equals the full-document result, reported anyway).

    With the paper's grid (:data:`DEFAULT_LENGTHS`, made for whole books) and documents too short for
    :data:`MIN_POINTS` of its points (the demo's are 300-350 tokens: it kept only 100, one point), five
    lengths are taken from the documents instead: geometric from a 32nd of the longest document (at
    least 16 tokens) to 80 % of it, rounded to two significant digits. Lengths a user chose are kept."""
    longest = max(s.n_tokens for s in stats)
    todo = sorted({int(L) for L in lengths if 2 <= int(L) < longest})
    if tuple(int(L) for L in lengths) != DEFAULT_LENGTHS or len(todo) >= MIN_POINTS or longest < 40:
        return todo
    grid = np.geomspace(max(16.0, longest / 32), 0.8 * longest, 5)
    return sorted({int(float(f"{g:.2g}")) for g in grid if 2 <= float(f"{g:.2g}") < longest})


def partial_curve(
    stats: Sequence[TokenStats],
    labels: Sequence[int],
    folds: list[tuple[np.ndarray, np.ndarray]],
    pipelines: Sequence[tuple[str, str]],
    *,
    vocab_size: int,
    lengths: Sequence[int] = DEFAULT_LENGTHS,
    position: str = "start",
    dictionaries: str = "partial",
    roles: dict[str, str] | None = None,
    full_metrics: dict[str, dict] | None = None,
    seed: int = 0,
    n_bins: int = 1000,
    n_estimators: int | None = None,
    n_jobs: int | None = None,
    agg_count: bool = False,
    hist_outside: str = "clip",
    progress: Callable[[str, float], None] | None = None,
) -> pd.DataFrame:
    """Rows (``COLUMNS``): ``n_tokens`` (requested), ``mean_tokens`` (actually used), ``pipeline``,
    ``role`` (from ``roles``, pipeline name -> e.g. ``"paper"``/``"best"``), ``auc_mean``, ``auc_std``,
    ``tpr_1_mean``, ``tpr_10_mean``, ``full_auc_mean`` (the pipeline's full-document AUC from
    ``full_metrics``), ``n_truncated`` (documents longer than L), ``position``, ``dictionaries``.

    Each length is a fresh cross-validation at that length (``partial_cross_validation``), at the
    lengths :func:`lengths_for` chooses (lengths at or above the longest document are dropped; the
    paper's grid on short documents is replaced by lengths taken from the documents).
    ``agg_count``/``hist_outside``: the feature options, as in the full audit (``features``).
    """
    if position not in POSITIONS:
        raise SettingsError(f"unknown partial-document position {position!r}: choose {' or '.join(POSITIONS)}")
    if dictionaries not in DICTIONARIES:
        raise SettingsError(f"unknown partial-document dictionaries {dictionaries!r}: choose {' or '.join(DICTIONARIES)}")
    todo = lengths_for(stats, lengths)
    roles = roles or {}
    rows = []
    for j, L in enumerate(todo):
        cv, part = partial_cross_validation(
            stats, labels, folds, pipelines, L, vocab_size=vocab_size, position=position, dictionaries=dictionaries,
            seed=seed, n_bins=n_bins, n_estimators=n_estimators, n_jobs=n_jobs, agg_count=agg_count,
            hist_outside=hist_outside,
        )
        for n, f in pipelines:
            name = pipeline_name(n, f)
            m = cv.metrics[name]
            rows.append({
                "n_tokens": L,
                "mean_tokens": float(np.mean([s.n_tokens for s in part])),
                "pipeline": name,
                "role": roles.get(name, ""),
                "auc_mean": m["auc_mean"],
                "auc_std": m["auc_std"],
                "tpr_1_mean": m["tpr_at_fpr_mean"]["0.01"],
                "tpr_10_mean": m["tpr_at_fpr_mean"]["0.1"],
                "full_auc_mean": (full_metrics or {}).get(name, {}).get("auc_mean", float("nan")),
                "n_truncated": int(sum(s.n_tokens > L for s in stats)),
                "position": position,
                "dictionaries": dictionaries,
            })
        if progress:
            progress(f"partial documents: {L} tokens", (j + 1) / len(todo))
    return pd.DataFrame(rows, columns=COLUMNS)
