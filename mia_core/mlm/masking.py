"""Masking patterns (§2.3): which tokens of each text are masked, drawn once per text.

Mireshghallah et al. 2022, §2.3: a text of ``T`` tokens gets ``K`` random patterns, each
masking ``l`` of its own tokens (special tokens excluded) at once, about 15 % of them. The
patterns come from a generator seeded by ``(seed, hash of the text)``, so they do not depend on
batch order or on which other texts are scored. :func:`plan_masks` tokenises the texts **once**
and draws their patterns into a :class:`MaskPlan`; the same plan is given to the target and the
reference, which therefore score exactly the same masked inputs.

Two **recipes** (:data:`RECIPES`) fix ``l``, the default ``K`` and how the energy aggregates the
masked tokens' log-probabilities (``mia_core.mlm.energy``):

* ``"sum"`` (the default, this project's reading of the paper's eq. 2): ``l = ceil(0.15 T)``,
  ``K = 10``, the energy sums the log-probabilities over the ``l`` masked tokens of a pattern and
  averages over the patterns;
* ``"released"`` (the recipe of the authors' released code as an independent review described it,
  issue 28): ``l = int(0.15 T)`` (at least 1), ``K = 20``, the energy is the mean loss per masked
  token (cross-entropy averaged over the ``l`` tokens of a pattern), averaged over the patterns:
  the ``"sum"`` energy divided by ``l``. For a text of fewer than 7 tokens ``int(0.15 T)`` is 0;
  a mean over no token is undefined, so one token is masked (the same floor of 1 as ``"sum"``).

An explicit ``k`` always wins over the recipe's default.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..cache import text_hash
from ..errors import SettingsError
from ..options import SEED, check_option, number, whole

DEFAULT_K = 10
DEFAULT_RATE = 0.15
DEFAULT_RECIPE = "sum"
# the masking settings' domains (mia_core.options), also fields of mlm.options.MlmOptions
K_DOMAIN = whole(1, 1000)
RATE_DOMAIN = number(0, 1, lo_open=True, hi_open=True)  # 1 would mask every token: every pattern alike
SEED_DOMAIN = SEED
# what each recipe fixes: the default K, how l is rounded, and how the energy aggregates a pattern's
# masked tokens ("sum" of their log-probabilities, or their "mean"); "about" is the one-line description
RECIPES = {
    "sum": {"k": DEFAULT_K, "count": "ceil", "energy": "sum",
            "about": "l = ceil(0.15 T) masked tokens, K = 10, energy = sum over the masked tokens (the default)"},
    "released": {"k": 20, "count": "floor", "energy": "mean",
                 "about": "l = int(0.15 T) masked tokens (at least 1), K = 20, energy = mean loss per masked "
                          "token (the authors' released code, as described in issue 28)"},
}


def check_recipe(recipe) -> str:
    """The recipe's name, or a one-line ``SettingsError`` naming the known ones."""
    if not isinstance(recipe, str) or recipe not in RECIPES:
        known = "; ".join(f"'{name}': {r['about']}" for name, r in RECIPES.items())
        raise SettingsError(f"unknown energy recipe {recipe!r}; choose one of {known}.")
    return recipe


def recipe_k(recipe: str = DEFAULT_RECIPE, k: int | None = None) -> int:
    """``K``: ``k`` when given (an explicit ``k`` always wins), else the recipe's default (10 or 20)."""
    return RECIPES[check_recipe(recipe)]["k"] if k is None else k


def n_masked(token_count: int, rate: float = DEFAULT_RATE, recipe: str = DEFAULT_RECIPE) -> int:
    """``l``, the tokens each pattern masks: ``ceil(rate * T)`` (recipe ``"sum"``) or ``int(rate * T)``
    (``"released"``), at least 1 and at most ``T``; computed without float noise (0.15 * 20 is 3, not
    3.0000000000000004; for rate 0.15 the floor equals Python's ``int(0.15 * T)`` for every ``T`` < 5000)."""
    if token_count <= 0:
        return 0
    x = round(rate * token_count, 9)
    l = math.floor(x) if RECIPES[check_recipe(recipe)]["count"] == "floor" else math.ceil(x)
    return min(token_count, max(1, l))


def _check_settings(k: int, seed: int, rate: float) -> None:
    check_option("k", K_DOMAIN, k)
    check_option("seed", SEED_DOMAIN, seed)
    check_option("rate", RATE_DOMAIN, rate)


def masking_patterns(token_count: int, k: int, seed: int, text_hash: str, rate: float = DEFAULT_RATE,
                     recipe: str = DEFAULT_RECIPE) -> np.ndarray:
    """``K`` masking patterns for a text of ``token_count`` tokens, shape ``(K, l)``, sorted rows.

    Each row holds ``l`` distinct token positions (:func:`n_masked`: ``ceil(rate * T)``, or
    ``int(rate * T)`` with the ``"released"`` recipe; 0-based, counting only the text's own tokens,
    not the special tokens), drawn uniformly without replacement (§2.3). The generator is
    ``numpy.random.default_rng([seed, int(text_hash[:16], 16)])``: the same text always gets the
    same patterns for a given seed and recipe, whatever else is scored with it.
    """
    _check_settings(k, seed, rate)
    l = n_masked(int(token_count), rate, recipe)
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
    ``content[i]`` (from :func:`masking_patterns`); ``recipe``: the energy recipe (:data:`RECIPES`)
    the masks were drawn for.
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
    recipe: str = DEFAULT_RECIPE

    @property
    def n_tokens(self) -> np.ndarray:
        """Each text's own tokens (special tokens excluded) after truncation to ``max_length``."""
        return np.array([c.size for c in self.content], dtype=np.int64)

    @property
    def n_masked(self) -> np.ndarray:
        """``l`` per text: the tokens each of its ``K`` patterns masks (:func:`n_masked`, §2.3)."""
        return np.array([m.shape[1] for m in self.masks], dtype=np.int64)

    def settings(self) -> dict:
        """What the cached per-pattern sums depend on besides the model and the text (the energy cache's key).

        The default recipe's dict is the one of earlier versions (its cache entries stay valid); another
        recipe adds its rounding of ``l`` (other masks, other sums). How the energy aggregates the sums
        (sum or mean) is not in it: the cache holds the sums, which do not depend on that."""
        out = {"k": self.k, "seed": self.seed, "rate": self.rate, "max_length": self.max_length}
        count = RECIPES[self.recipe]["count"]
        if count != RECIPES[DEFAULT_RECIPE]["count"]:
            out["mask_count"] = count
        return out

    def positions(self, i: int) -> np.ndarray:
        """``(K, l)`` positions in ``ids[i]`` that pattern ``k`` masks."""
        return self.content[i][self.masks[i]]


def plan_masks(tokenizer, texts: Sequence[str], *, k: int | None = None, seed: int = 0, rate: float = DEFAULT_RATE,
               max_length: int = 512, recipe: str = DEFAULT_RECIPE) -> MaskPlan:
    """Tokenise ``texts`` once and draw their masking patterns (§2.3) for the energy ``recipe``
    (:data:`RECIPES`; ``k`` None: the recipe's default ``K``)."""
    k = recipe_k(recipe, k)
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
        masks.append(masking_patterns(pos.size, k, seed, h, rate, recipe))
    return MaskPlan(texts=texts, hashes=hashes, ids=ids, content=content, masks=masks,
                    n_tokens_full=np.asarray(full, dtype=np.int64), k=int(k), seed=int(seed), rate=float(rate),
                    max_length=int(max_length), vocab_size=len(tokenizer), n_truncated=n_trunc, recipe=recipe)


def _subplan(plan: MaskPlan, idx) -> MaskPlan:
    idx = list(idx)
    return MaskPlan(texts=[plan.texts[i] for i in idx], hashes=[plan.hashes[i] for i in idx],
                    ids=[plan.ids[i] for i in idx], content=[plan.content[i] for i in idx],
                    masks=[plan.masks[i] for i in idx], n_tokens_full=plan.n_tokens_full[idx],
                    k=plan.k, seed=plan.seed, rate=plan.rate, max_length=plan.max_length,
                    vocab_size=plan.vocab_size, n_truncated=plan.n_truncated, recipe=plan.recipe)
