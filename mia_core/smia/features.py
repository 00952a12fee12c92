"""The features of SMIA's (text, neighbour) pairs and the mean of pair outputs per text.

For a text ``x`` and its neighbour ``x~_j`` (Mozaffari & Marathe 2024 §4, Algorithm 1 lines 4-7):

    features(x, x~_j) = ( e(x) - e(x~_j),  L(x) - L(x~_j) )

with ``e`` the sentence embedding (``mia_core.stats.embeddings``) and ``L`` the target's mean NLL per
token. Pairs whose loss difference is not finite are dropped. :func:`text_means` is Algorithm
2's average over a text's neighbours.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PairFeatures:
    """All (text, neighbour) pairs: ``text_index[k]`` is the text of pair ``k``."""

    text_index: np.ndarray
    emb_diff: np.ndarray
    loss_diff: np.ndarray
    cosine: np.ndarray

    def select(self, keep: np.ndarray) -> "PairFeatures":
        """The pairs where ``keep`` (one flag per pair) is true."""
        return PairFeatures(self.text_index[keep], self.emb_diff[keep], self.loss_diff[keep], self.cosine[keep])


def pair_features(texts: list[str], data, target_losses: np.ndarray, embedder, *, use_cache: bool = True,
                  progress=lambda m, f: None) -> PairFeatures:
    """Features of every (text, neighbour) pair (Algorithm 1, lines 4-7)."""
    from ..stats.embeddings import cosine, embed

    flat = [n.text for ns, _ in data for n in ns]
    e_x = embed(texts, embedder, use_cache=use_cache, progress=progress, label="embeddings (texts)")
    e_n = embed(flat, embedder, use_cache=use_cache, progress=progress, label="embeddings (neighbours)")
    idx = np.array([i for i, (ns, _) in enumerate(data) for _ in ns], dtype=np.int64)
    nb_loss = np.concatenate([ls for _, ls in data]) if flat else np.zeros(0)
    emb_diff = (e_x[idx] - e_n) if flat else np.zeros((0, e_x.shape[1]), dtype=np.float32)
    loss_diff = target_losses[idx] - nb_loss if flat else np.zeros(0)
    keep = np.isfinite(loss_diff)
    cos = cosine(e_x[idx], e_n) if flat else np.zeros(0)
    return PairFeatures(idx[keep], emb_diff[keep].astype(np.float64), loss_diff[keep], cos[keep])


def text_means(text_index: np.ndarray, probs: np.ndarray, n_texts: int) -> np.ndarray:
    """The mean of the pairs' ``probs`` per text (Algorithm 2); NaN for a text without pairs."""
    out = np.full(n_texts, np.nan)
    if len(probs):
        sums = np.bincount(text_index, weights=probs, minlength=n_texts)
        cnt = np.bincount(text_index, minlength=n_texts)
        ok = cnt > 0
        out[ok] = sums[ok] / cnt[ok]
    return out


def pairs_report(feats: PairFeatures, labels: np.ndarray, train_mask) -> dict:
    """The pairs for the run's report: text, cosine of the embeddings, loss difference, label and
    the text's part (``train`` or ``eval``)."""
    split = np.where(np.asarray(train_mask, dtype=bool), "train", "eval")
    return {
        "text_index": feats.text_index.tolist(),
        "cosine": [float(c) for c in feats.cosine],
        "loss_diff": [float(d) for d in feats.loss_diff],
        "label": labels[feats.text_index].tolist(),
        "split": split[feats.text_index].tolist(),
    }
