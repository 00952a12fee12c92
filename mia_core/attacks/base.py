"""What an attack sees and how attacks are registered.

Every attack is a cheap function of precomputed statistics: ``score(inputs, **params)``
returns one float per text, **higher = more likely member**, NaN where a text cannot be
scored (e.g. too short). The passes an attack needs are declared in ``needs`` so the
pipeline runs each model pass once for all attacks:

* ``"target"``: target-model token statistics of the texts,
* ``"target_lower"``: target-model statistics of the lower-cased texts,
* ``"reference"``: reference-model statistics of the texts,
* ``"neighbours"``: target-model losses of each text's neighbours (neighbour attacks),
* ``"labels"``: the attack learns from labelled training texts (SMIA).

Attacks that need more than statistics (neighbours, embeddings, a trained network) set a
``prepare(inputs, ctx, **params)`` hook; the pipeline calls it once before scoring, and it
stores what ``score`` needs in ``inputs.extra`` (and may return artefacts for the report).
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
    prepare: Callable[..., dict | None] | None = None
    population_ok: bool = True  # can score texts outside the prepared set (population thresholds)


def per_text(stats: list[TokenStats], fn: Callable[[TokenStats], float]) -> np.ndarray:
    """Apply ``fn`` to each text's statistics; NaN where the text has no predicted token."""
    out = np.full(len(stats), np.nan)
    for i, s in enumerate(stats):
        if s.n_predicted > 0:
            out[i] = fn(s)
    return out
