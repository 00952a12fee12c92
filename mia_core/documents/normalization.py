"""Token-level normalisations (Meeus et al. 2024, §4.2.2), each turned into F(t) = -log(·).

For token t at position i with predicted probability P(t) = p(t | context_i), the largest
predicted probability at that position P_max = max_v p(v | context_i) (``TokenStats.max_logprob``)
and a reference value R(t) from a fold's dictionary (R^TF or R^GP, see ``dictionaries``):

* **NoNorm**:            F(t) = -log P(t)                       (the token's NLL)
* **RatioNorm{TF,GP}**:  F(t) = -log( P(t) / R(t) )
* **MaxNorm{TF,GP}**:    F(t) = -log( (1 - (P_max - P(t))) / R(t) )

MaxNorm is the paper's practical definition, taken from the authors' code
(``get_diff_max_token``): the gap between the most likely token's probability and the true
token's probability (0 when the model's top guess is right), subtracted from 1 and divided
by R(t). It needs only P_max at each position, which the single forward pass keeps, so no
approximation is involved. Numerically, 1 - P_max + P(t) is computed in float64 and never
taken below P(t) (it is mathematically >= P(t)), so F stays finite; the authors' code
replaced non-finite values with 1e-5 instead.

Lower F = the model found the token more predictable than its reference value suggests;
members tend to have more low-F tokens.

``normalize`` computes F from per-token arrays (the one place these formulas are written; the
dashboard's per-token view shows -F / ln 10); ``normalized_values`` applies it to a document
with one fold's dictionaries.
"""
from __future__ import annotations

import numpy as np

from ..errors import SettingsError
from ..stats import TokenStats
from .dictionaries import ReferenceDictionaries
from .options import NORMALIZATIONS, parse_normalizations  # noqa: F401 - declared with the options

LABELS = {
    "nonorm": "NoNorm",
    "rationorm_tf": "RatioNormTF",
    "rationorm_gp": "RatioNormGP",
    "maxnorm_tf": "MaxNormTF",
    "maxnorm_gp": "MaxNormGP",
}

FEATURE_WORDS = {"hist": "HistFE", "agg": "AggFE"}


def pipeline_words(name: str) -> str:
    """A pipeline by the paper's names (Meeus et al. 2024 §4.2-4.3): ``"rationorm_tf+agg"`` -> ``"RatioNormTF +
    AggFE"``; an unknown part is kept as it is."""
    norm, _, feats = str(name).partition("+")
    return f"{LABELS.get(norm, norm)} + {FEATURE_WORDS.get(feats, feats)}" if feats else LABELS.get(norm, norm)


def needs_general_proba(names) -> bool:
    """Whether any of the normalisations ``names`` (canonical, :func:`parse_normalizations`) uses R^GP, the
    general-probability dictionary (which needs the statistics' ``vocab_prob_sum``).
    """
    return any(NORMALIZATIONS[n][1] == "gp" for n in names)


def normalize(kind: str, logprob, max_logprob=None, reference=None) -> np.ndarray:
    """F(t) from per-token arrays (float64, NaN where a token got no prediction).

    ``kind`` is ``"none"``, ``"ratio"`` or ``"max"`` (the first entry of :data:`NORMALIZATIONS`);
    ``max_logprob`` is log P_max (MaxNorm only) and ``reference`` R(t) of each token (RatioNorm
    and MaxNorm). :func:`normalized_values` applies it to a document with a fold's dictionary;
    the dashboard's per-token view applies it with R^TF of a reference corpus.
    """
    lp = np.asarray(logprob, dtype=np.float64)
    if kind == "none":
        return -lp
    log_r = np.log(reference)
    if kind == "ratio":
        return -(lp - log_r)
    p = np.exp(lp)
    pmax = np.exp(np.asarray(max_logprob, dtype=np.float64))
    inner = np.maximum(np.maximum(1.0 - (pmax - p), p), np.finfo(np.float64).tiny)
    return -(np.log(inner) - log_r)


def normalized_values(stats: TokenStats, name: str, dicts: ReferenceDictionaries | None) -> np.ndarray:
    """F(t) for every token of a document (float64, NaN where a token got no prediction)."""
    kind, table = NORMALIZATIONS[name]
    if kind == "none":
        return normalize(kind, stats.logprob)
    if dicts is None:
        raise SettingsError(f"{LABELS[name]} needs a reference dictionary")
    return normalize(kind, stats.logprob, stats.max_logprob, dicts.lookup(table, stats.token_ids))
