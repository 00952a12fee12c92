"""Partial documents (Meeus et al. 2024, §6.4): AUC versus how much of each document is seen.

For each length L, every document is replaced by one random contiguous excerpt of L tokens
(seeded; the whole document when it is shorter) and the pipeline is cross-validated on the
excerpts over the same folds. Excerpts are slices of the full-document statistics
(``TokenStats.slice``), so no model is called again. (A token at the start of an excerpt
keeps the context it had in the full document's window; with stride C-1 windows that
context is at most C-1 tokens, the same as when scoring the excerpt alone except for the
excerpt's first window.) R^TF is rebuilt from the excerpts of each fold's training
documents; R^GP, which needs the summed predicted distributions that slices do not carry,
comes from the training documents' full texts.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..stats import TokenStats
from .pipeline import cross_validate, pipeline_name

DEFAULT_LENGTHS = (100, 500, 1000, 2500, 5000, 10000, 25000)


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


def partial_curve(
    stats: Sequence[TokenStats],
    labels: Sequence[int],
    folds: list[tuple[np.ndarray, np.ndarray]],
    pipelines: Sequence[tuple[str, str]],
    *,
    vocab_size: int,
    lengths: Sequence[int] = DEFAULT_LENGTHS,
    seed: int = 0,
    n_bins: int = 1000,
    n_estimators: int | None = None,
    n_jobs: int | None = None,
    progress: Callable[[str, float], None] | None = None,
) -> pd.DataFrame:
    """Rows: ``n_tokens`` (requested), ``mean_tokens`` (actually used), ``pipeline``, ``auc_mean``,
    ``auc_std``, ``tpr_1_mean``, ``tpr_10_mean``, ``n_truncated`` (documents longer than L).

    Lengths at or above the longest document are dropped (they equal the full-document
    result, which the audit reports anyway).
    """
    longest = max(s.n_tokens for s in stats)
    todo = sorted({int(L) for L in lengths if 0 < int(L) < longest})
    rows = []
    for j, L in enumerate(todo):
        ex = excerpts(stats, L, seed + L)
        norms = list(dict.fromkeys(n for n, _ in pipelines))
        feats = list(dict.fromkeys(f for _, f in pipelines))
        cv = cross_validate(
            ex, labels, norms, feats, vocab_size=vocab_size, folds=folds, seed=seed, n_bins=n_bins,
            n_estimators=n_estimators, n_jobs=n_jobs, gp_stats=stats,
        )
        for n, f in pipelines:
            m = cv.metrics[pipeline_name(n, f)]
            rows.append({
                "n_tokens": L,
                "mean_tokens": float(np.mean([s.n_tokens for s in ex])),
                "pipeline": pipeline_name(n, f),
                "auc_mean": m["auc_mean"],
                "auc_std": m["auc_std"],
                "tpr_1_mean": m["tpr_at_fpr_mean"]["0.01"],
                "tpr_10_mean": m["tpr_at_fpr_mean"]["0.1"],
                "n_truncated": int(sum(s.n_tokens > L for s in stats)),
            })
        if progress:
            progress(f"partial documents: {L} tokens", (j + 1) / len(todo))
    return pd.DataFrame(rows, columns=["n_tokens", "mean_tokens", "pipeline", "auc_mean", "auc_std",
                                       "tpr_1_mean", "tpr_10_mean", "n_truncated"])
