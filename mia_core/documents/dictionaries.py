"""Normalisation dictionaries R(t) (Meeus et al. 2024, §4.2.1), built per cross-validation fold.

Both dictionaries are computed from the *reference documents* D_ref of one fold: the
training members ∪ training non-members of that fold, never a held-out document (so a
document's own tokens never calibrate the classifier that evaluates it).

* **Token frequency** R^TF(t) = count(t in D_ref) / Σ_v count(v in D_ref). A token that
  never occurs in D_ref gets half the smallest observed frequency (§4.2.1; the authors'
  ``get_norm_val``). ``token_frequency`` computes it from counts (also used by the
  dashboard's per-token view, with a reference corpus instead of a fold).
* **General probability** R^GP(t) = the mean, over every predicted position of every
  document of D_ref, of the model's predicted probability of t:

      R^GP(t) = Σ_{d ∈ D_ref} Σ_{positions i of d} p(t | context_i) / Σ_{d ∈ D_ref} n_predicted(d)

  It is accumulated without storing any per-token full-vocabulary array: the windowed
  forward pass (``mia_core.stats.compute_stats(..., StatsSettings(vocab_probs=True))``)
  keeps one float64 vector per document, ``TokenStats.vocab_prob_sum`` = Σ_i p(· | context_i),
  and a fold sums those vectors and divides by the fold's number of positions. (The
  authors' code averages per-document means per chunk and weights chunks by tokens; the
  paper's definition, the mean over positions, is what is implemented here.) A probability
  that underflowed to 0 is replaced by half the smallest positive value, like unseen tokens
  of R^TF, so that -log stays finite.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import SettingsError
from ..stats import TokenStats


@dataclass
class ReferenceDictionaries:
    """R^TF and R^GP of one fold, as dense float64 arrays over the model's vocabulary."""

    token_freq: np.ndarray  # [V], sums to 1 over seen tokens; unseen = half the smallest
    general_proba: np.ndarray | None  # [V], None when the stats carry no vocab_prob_sum
    doc_indices: tuple[int, ...]  # the documents D_ref this was built from
    n_tokens: int  # tokens counted for R^TF
    n_positions: int  # predicted positions averaged for R^GP

    def lookup(self, kind: str, token_ids: np.ndarray) -> np.ndarray:
        """R(t) for each token (``kind`` is ``"tf"`` or ``"gp"``)."""
        table = self.token_freq if kind == "tf" else self.general_proba
        if table is None:
            raise SettingsError(
                "the general-probability dictionary needs the summed predicted distributions "
                "(compute_stats with StatsSettings(vocab_probs=True))"
            )
        return table[np.asarray(token_ids, dtype=np.int64)]


def _floor_half_min(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Give entries that are not ``present`` (or not positive) half the smallest positive present value."""
    out = values.astype(np.float64, copy=True)
    ok = present & (out > 0)
    if not ok.any():
        raise SettingsError("the reference documents of a fold have no tokens: nothing to build R(t) from")
    out[~ok] = out[ok].min() / 2.0
    return out


def token_frequency(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """R^TF from token counts: count / total; unseen tokens get half the smallest observed frequency.

    Returns (R^TF, seen mask). Meeus et al. 2024 §4.2.1 (the authors' ``get_norm_val``). With no
    token counted at all, every token gets 1 / V (the per-token view's fallback;
    :func:`build_dictionaries` refuses an empty fold before it gets here).
    """
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    seen = counts > 0
    if total <= 0:
        return np.full(counts.shape, 1.0 / max(1, counts.size)), seen
    tf = counts / total
    tf[~seen] = tf[seen].min() / 2.0
    return tf, seen


def token_counts(stats: TokenStats, vocab_size: int) -> np.ndarray:
    """Occurrences of each vocabulary token in one document (int64 [V])."""
    return np.bincount(np.asarray(stats.token_ids, dtype=np.int64), minlength=vocab_size)[:vocab_size]


def build_dictionaries(
    stats: Sequence[TokenStats],
    indices: Sequence[int],
    vocab_size: int,
    *,
    gp_stats: Sequence[TokenStats] | None = None,
) -> ReferenceDictionaries:
    """R^TF and R^GP from the documents ``stats[i] for i in indices`` only (§4.2.1).

    ``gp_stats`` (same indexing) supplies ``vocab_prob_sum`` when ``stats`` are excerpts
    (``TokenStats.slice`` drops the summed distribution): the partial-document curve then
    uses R^GP of the fold's full reference documents.
    """
    idx = tuple(int(i) for i in indices)
    if not idx:
        raise SettingsError("a fold has no reference documents to build R(t) from")
    counts = np.zeros(vocab_size, dtype=np.int64)
    for i in idx:
        counts += token_counts(stats[i], vocab_size)
    total = int(counts.sum())
    if total == 0:
        raise SettingsError("the reference documents of a fold have no tokens: nothing to build R(t) from")
    tf, _ = token_frequency(counts)

    src = gp_stats if gp_stats is not None else stats
    gp = None
    n_pos = 0
    if all(src[i].vocab_prob_sum is not None for i in idx):
        acc = np.zeros(vocab_size, dtype=np.float64)
        for i in idx:
            v = np.asarray(src[i].vocab_prob_sum, dtype=np.float64)
            acc[: min(vocab_size, v.shape[0])] += v[:vocab_size]
            n_pos += src[i].n_predicted
        if n_pos > 0:
            gp = _floor_half_min(acc / n_pos, np.ones(vocab_size, dtype=bool))
    return ReferenceDictionaries(token_freq=tf, general_proba=gp, doc_indices=idx, n_tokens=total, n_positions=n_pos)
