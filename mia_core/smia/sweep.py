"""SMIA's AUC against the number of neighbours averaged (Mozaffari & Marathe 2024, Table 5).

The paper trains with 25 neighbours and evaluates with 2, 5, 15 and 25; :func:`neighbour_sweep`
re-averages a trained network's pair outputs over each text's first ``k`` neighbours (the
generator's best ``k``) for ``k`` in :data:`SWEEP` below the ``n`` the run used, and ``n``.
"""
from __future__ import annotations

import numpy as np

from .features import PairFeatures

SWEEP = (2, 5, 15, 25, 50, 100)


def neighbour_sweep(feats: PairFeatures, probs: np.ndarray, labels: np.ndarray, eval_mask: np.ndarray, n: int, *,
                    n_bootstrap: int = 1000, seed: int = 0, need: int | None = None) -> list[dict]:
    """AUC of SMIA on the evaluated texts when only each text's first k neighbours (the
    proposer's best k) are averaged, for k in 2, 5, 15, 25, ... up to the n it was trained
    with (Mozaffari & Marathe Table 5: trained with 25, evaluated with 2, 5, 15, 25). A text
    with fewer than k of them is NaN at k, or averaged over those it has when ``need`` (the
    fewest the score asks for, ``neighbourhood.neighbours_needed``) is below k."""
    from .. import metrics as M

    rank = np.zeros(len(feats.text_index), dtype=np.int64)
    seen: dict[int, int] = {}
    for j, t in enumerate(feats.text_index):
        rank[j] = seen.get(int(t), 0)
        seen[int(t)] = rank[j] + 1
    out = []
    for k in [k for k in SWEEP if k < n] + [n]:
        sel = rank < k
        sums = np.bincount(feats.text_index[sel], weights=probs[sel], minlength=len(labels))
        cnt = np.bincount(feats.text_index[sel], minlength=len(labels))
        sc = np.where(cnt >= min(k, need or k), sums / np.maximum(cnt, 1), np.nan)
        m = M.evaluate(labels[eval_mask], sc[eval_mask], n_bootstrap=n_bootstrap, seed=seed)
        out.append({"n": int(k), "auc": m.get("auc"), "auc_ci": m.get("auc_ci"),
                    "n_texts": int(np.isfinite(sc[eval_mask]).sum())})
    return out
