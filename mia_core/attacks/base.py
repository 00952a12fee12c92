"""What an attack sees and how attacks are registered.

Every attack is a cheap function of precomputed statistics: ``score(inputs, **params)``
returns one float per text, **higher = more likely member**, NaN where a text cannot be
scored (e.g. too short). The passes an attack needs are declared in ``needs`` so the
pipeline runs each model pass once for all attacks:

* ``"target"``: target-model token statistics of the texts,
* ``"target_lower"``: target-model statistics of the lower-cased texts,
* ``"reference"``: reference-model statistics of the texts,
* ``"neighbours"``: target-model losses of each text's neighbours (neighbour attacks).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..stats import TokenStats


@dataclass
class AttackInputs:
    texts: list[str]
    target: list[TokenStats] | None = None
    target_lower: list[TokenStats] | None = None
    reference: list[TokenStats] | None = None
    same_tokenizer: bool = True  # target and reference share a tokenizer
    extra: dict = field(default_factory=dict)  # neighbour losses, embeddings, trained models...


@dataclass(frozen=True)
class Attack:
    name: str
    label: str  # for tables and plots
    needs: tuple[str, ...]
    score: Callable[..., np.ndarray]
    citation: str
    params: dict = field(default_factory=dict)  # default parameters


def per_text(stats: list[TokenStats], fn: Callable[[TokenStats], float]) -> np.ndarray:
    """Apply ``fn`` to each text's statistics; NaN where the text has no predicted token."""
    out = np.full(len(stats), np.nan)
    for i, s in enumerate(stats):
        if s.n_predicted > 0:
            out[i] = fn(s)
    return out
