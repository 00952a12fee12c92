"""Masking patterns (§2.3): which tokens of each text are masked, drawn once per text.

Mireshghallah et al. 2022, §2.3: a text of ``T`` tokens gets ``K`` random patterns, each
masking ``l = ceil(0.15 T)`` of its own tokens (special tokens excluded) at once. The patterns
come from a generator seeded by ``(seed, hash of the text)``, so they do not depend on batch
order or on which other texts are scored. :func:`plan_masks` tokenises the texts **once** and
draws their patterns into a :class:`MaskPlan`; the same plan is given to the target and the
reference, which therefore score exactly the same masked inputs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..cache import text_hash
from ..errors import SettingsError

DEFAULT_K = 10
DEFAULT_RATE = 0.15


def n_masked(token_count: int, rate: float = DEFAULT_RATE) -> int:
    """``l = ceil(rate * T)`` (§2.3), computed without float noise (0.15 * 20 is 3, not 3.0000000000000004)."""
    if token_count <= 0:
        return 0
    return min(token_count, max(1, math.ceil(round(rate * token_count, 9))))


def _check_settings(k: int, seed: int, rate: float) -> None:
    if int(k) != k or k < 1:
        raise SettingsError(f"the number of masking patterns K must be a whole number >= 1, got {k}.")
    if int(seed) != seed or seed < 0:
        raise SettingsError(f"the seed must be a whole number >= 0, got {seed}.")
    if not 0.0 < float(rate) <= 1.0:
        raise SettingsError(f"the mask rate must be in (0, 1], got {rate}.")


def masking_patterns(token_count: int, k: int, seed: int, text_hash: str, rate: float = DEFAULT_RATE) -> np.ndarray:
    """``K`` masking patterns for a text of ``token_count`` tokens, shape ``(K, l)``, sorted rows.

    Each row holds ``l = ceil(rate * T)`` distinct token positions (0-based, counting only the
    text's own tokens, not the special tokens), drawn uniformly without replacement (§2.3).
    The generator is ``numpy.random.default_rng([seed, int(text_hash[:16], 16)])``: the same
    text always gets the same patterns for a given seed, whatever else is scored with it.
    """
    _check_settings(k, seed, rate)
    l = n_masked(int(token_count), rate)
    if l == 0:
        return np.zeros((int(k), 0), dtype=np.int64)
    rng = np.random.default_rng([int(seed), int(str(text_hash)[:16], 16)])
    out = np.empty((int(k), l), dtype=np.int64)
    for j in range(int(k)):
        out[j] = np.sort(rng.choice(int(token_count), size=l, replace=False))
    return out


@dataclass
class MaskPlan:
    """Tokenised texts and their masking patterns, made once and given to every model.

    ``ids[i]``: the token ids of text ``i`` with special tokens (truncated to ``max_length``);
    ``content[i]``: where its own tokens sit in ``ids[i]``; ``masks[i]``: ``(K, l)`` indices into
    ``content[i]`` (from :func:`masking_patterns`).
    """

    texts: list[str]
    hashes: list[str]
    ids: list[np.ndarray]
    content: list[np.ndarray]
    masks: list[np.ndarray]
    n_tokens_full: np.ndarray  # before truncation
    k: int
    seed: int
    rate: float
    max_length: int
    vocab_size: int
    n_truncated: int = 0

    @property
    def n_tokens(self) -> np.ndarray:
        return np.array([c.size for c in self.content], dtype=np.int64)

    @property
    def n_masked(self) -> np.ndarray:
        """``l`` per text: the tokens each of its ``K`` patterns masks (``ceil(rate * T)``, §2.3)."""
        return np.array([m.shape[1] for m in self.masks], dtype=np.int64)

    def settings(self) -> dict:
        return {"k": self.k, "seed": self.seed, "rate": self.rate, "max_length": self.max_length}

    def positions(self, i: int) -> np.ndarray:
        """``(K, l)`` positions in ``ids[i]`` that pattern ``k`` masks."""
        return self.content[i][self.masks[i]]


def plan_masks(tokenizer, texts: Sequence[str], *, k: int = DEFAULT_K, seed: int = 0, rate: float = DEFAULT_RATE,
               max_length: int = 512) -> MaskPlan:
    """Tokenise ``texts`` once and draw their masking patterns (§2.3)."""
    _check_settings(k, seed, rate)
    texts = [str(t) for t in texts]
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # no "sequence longer than the maximum" noise: truncation is counted
    try:
        raw = tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
        enc = tokenizer(texts, truncation=True, max_length=int(max_length), return_special_tokens_mask=True) \
            if texts else {"input_ids": [], "special_tokens_mask": []}
    finally:
        hf_logging.set_verbosity(verbosity)
    hashes, ids, content, masks, full = [], [], [], [], []
    n_trunc = 0
    for t, toks, seq, special in zip(texts, raw, enc["input_ids"], enc["special_tokens_mask"]):
        pos = np.flatnonzero(np.asarray(special, dtype=bool) == 0)
        full.append(len(toks))
        if pos.size < len(toks):
            n_trunc += 1
        h = text_hash(t)
        hashes.append(h)
        ids.append(np.asarray(seq, dtype=np.int64))
        content.append(pos.astype(np.int64))
        masks.append(masking_patterns(pos.size, k, seed, h, rate))
    return MaskPlan(texts=texts, hashes=hashes, ids=ids, content=content, masks=masks,
                    n_tokens_full=np.asarray(full, dtype=np.int64), k=int(k), seed=int(seed), rate=float(rate),
                    max_length=int(max_length), vocab_size=len(tokenizer), n_truncated=n_trunc)


def _subplan(plan: MaskPlan, idx) -> MaskPlan:
    idx = list(idx)
    return MaskPlan(texts=[plan.texts[i] for i in idx], hashes=[plan.hashes[i] for i in idx],
                    ids=[plan.ids[i] for i in idx], content=[plan.content[i] for i in idx],
                    masks=[plan.masks[i] for i in idx], n_tokens_full=plan.n_tokens_full[idx],
                    k=plan.k, seed=plan.seed, rate=plan.rate, max_length=plan.max_length,
                    vocab_size=plan.vocab_size, n_truncated=plan.n_truncated)
