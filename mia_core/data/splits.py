"""Member/non-member splits: of a labelled set, and of a corpus into a controlled experiment's sets.

:func:`split_corpus` cuts an unlabelled corpus at random into members, non-members and a
population (the Controlled-experiment page and ``make-target``'s ground truth).
:func:`split_mask` draws the share ``fraction`` of each class (members, label 1;
non-members, label 0) at random, keeping at least one text of each class on both sides. Two
callers use it: the pipeline's train/evaluation split of the audited texts (``RunConfig.split``:
True = the training part, ``mia_core.pipeline``) and SMIA's validation split of its training
texts (True = held out for validation, ``mia_core.smia.training``; Mozaffari & Marathe 2024
App. D.4).
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError, SettingsError



def split_mask(labels: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Stratified random split: True for ``round(fraction * k)`` of the ``k`` texts of each class
    (clamped to 1..k-1, so each class keeps >= 1 text on both sides), drawn with
    ``numpy.random.default_rng(seed)``, non-members (0) first, then members (1).

    ``SettingsError`` unless 0 < ``fraction`` < 1; ``DataError`` when a class has fewer than 2 texts."""
    if not 0 < fraction < 1:
        raise SettingsError(f"the split fraction must be between 0 and 1, got {fraction}")
    rng = np.random.default_rng(seed)
    mask = np.zeros(len(labels), dtype=bool)
    for c in (0, 1):
        idx = np.flatnonzero(labels == c)
        if len(idx) < 2:
            raise DataError("a train/evaluation split needs at least 2 members and 2 non-members")
        n_drawn = min(max(int(round(len(idx) * fraction)), 1), len(idx) - 1)
        mask[rng.permutation(idx)[:n_drawn]] = True
    return mask


def split_corpus(texts: list[str], shares: tuple[int, int, int], seed: int) -> dict[str, list[str]]:
    """``texts`` cut at random (``numpy.random.default_rng(seed).permutation``) into ``{"members",
    "nonmembers", "population"}`` by percentage ``shares`` (members, non-members, population; they add up
    to 100). A population share of 0 gives the non-members every text the members do not take.

    ``SettingsError`` when the shares do not add up to 100; ``DataError`` when a set would hold fewer than
    2 texts (checked before anything is trained). Each share's and the seed's domain is checked at the front door
    (``mia_core.api.data.split_corpus``, :class:`mia_core.targets.options.SplitOptions`)."""
    p_mem, p_non, p_pop = (int(x) for x in shares)
    if p_mem + p_non + p_pop != 100:
        raise SettingsError(f"the shares must add up to 100%, they add up to {p_mem + p_non + p_pop}%.")
    n = len(texts)
    order = np.random.default_rng(int(seed)).permutation(n)
    n_mem = int(round(n * p_mem / 100))
    n_non = int(round(n * p_non / 100))
    n_pop = n - n_mem - n_non if p_pop else 0
    if p_pop == 0:
        n_non = n - n_mem
    if n_mem < 2 or n_non < 2:
        raise DataError(f"the corpus has {n} texts: that gives {n_mem} members and {n_non} non-members; "
                        "each set needs at least 2 (use a larger corpus or other shares).")
    if p_pop and n_pop < 2:
        raise DataError(f"the population would hold {n_pop} texts; it needs at least 2 (or set its share to 0%).")
    return {"members": [texts[i] for i in order[:n_mem]],
            "nonmembers": [texts[i] for i in order[n_mem:n_mem + n_non]],
            "population": [texts[i] for i in order[n_mem + n_non:n_mem + n_non + n_pop]]}
