"""Which samples leak (§4.6): simple features of the members an attack flags vs. those it misses.

The features are a text's length in tokens, its digits, its non-alphanumeric characters
(spaces excluded) and the corpus frequency of its rarest token (:func:`token_counts` counts
tokens over the audited texts). ``run_mlm_audit`` reports their means over the flagged and the
unflagged members at the population threshold.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

from .masking import MaskPlan

LEAK_FEATURES = ("n_tokens", "n_digits", "n_non_alnum", "rarest_token_freq")


def leak_features(plan: MaskPlan, idx: Sequence[int] | None = None, freq: Counter | None = None) -> dict[str, np.ndarray]:
    """Simple features of texts (§4.6): length in tokens, digits, non-alphanumeric characters
    (spaces excluded) and the corpus frequency of the text's rarest token.

    ``freq`` counts tokens over the texts of ``plan`` (by default over all of them: in the
    audit, the population plus the evaluated texts); the rarest-token frequency of a text is
    the smallest count among its tokens (>= 1, since it counts the text itself).
    """
    idx = list(range(len(plan.texts))) if idx is None else list(idx)
    if freq is None:
        freq = token_counts(plan)
    out = {f: np.zeros(len(idx), dtype=np.float64) for f in LEAK_FEATURES}
    for r, i in enumerate(idx):
        t = plan.texts[i]
        toks = plan.ids[i][plan.content[i]]
        out["n_tokens"][r] = plan.n_tokens_full[i]
        out["n_digits"][r] = sum(ch.isdigit() for ch in t)
        out["n_non_alnum"][r] = sum((not ch.isalnum()) and not ch.isspace() for ch in t)
        out["rarest_token_freq"][r] = min((freq[int(x)] for x in toks), default=np.nan)
    return out


def token_counts(plan: MaskPlan, idx: Sequence[int] | None = None) -> Counter:
    """How often each token id occurs among the content tokens (special tokens excluded) of the plan's texts
    ``idx`` (default: all): the corpus frequency behind ``rarest_token_freq``.
    """
    idx = range(len(plan.texts)) if idx is None else idx
    c: Counter = Counter()
    for i in idx:
        c.update(plan.ids[i][plan.content[i]].tolist())
    return c


def _leak_table(plan: MaskPlan, member_idx: np.ndarray, flagged: np.ndarray, freq: Counter) -> dict:
    feats = leak_features(plan, member_idx, freq)

    def means(sel):
        return {f: (float(np.mean(v[sel])) if np.any(sel) else None) for f, v in feats.items()}

    return {"n_flagged": int(flagged.sum()), "n_unflagged": int((~flagged).sum()),
            "flagged": means(flagged), "unflagged": means(~flagged), "features": list(LEAK_FEATURES)}
