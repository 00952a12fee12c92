"""A run's settings (:class:`RunConfig`) and what an attack's ``prepare`` hook may use (:class:`RunContext`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..attacks import DEFAULT_ATTACKS
from ..data import Dataset
from ..models import LoadedModel
from ..progress import Progress
from ..stats import StatsSettings


@dataclass
class RunConfig:
    """A run's settings: which attacks with which parameters, how texts are read, and how the metrics are made.

    Parameters
    ----------
    attacks : sequence of str
        Attack names (default: ``mia_core.attacks.DEFAULT_ATTACKS``).
    params : dict
        ``{attack: {param: value}}``, over each attack's defaults.
    stats : StatsSettings
        The statistics pass's settings.
    use_cache : bool
        Read and write the disk caches.
    n_bootstrap : int
        Bootstrap resamples for the confidence intervals.
    seed : int
        Seed of the bootstrap, of the blind baseline and of SMIA's neighbour sweep.
    split : float, optional
        Fraction of the labelled set used for training (SMIA); the rest is evaluated.
    split_seed : int
        Seed of that split.
    population_alpha : float
        FPR on the population set for the threshold (Mireshghallah et al. 2022 §2.4).
    blind : bool
        Also compute the model-free blind baseline (distribution-shift check).
    score_first_token : bool, optional
        None: from the prefix (``mia_core.stats.scores_first_token``); True / False force each text's first token
        in / out of the scored tokens (``mia_core.attacks.base``).
    """
    attacks: Sequence[str] = DEFAULT_ATTACKS  # the one default list (mia_core.attacks)
    params: dict = field(default_factory=dict)  # {attack: {param: value}}
    stats: StatsSettings = field(default_factory=StatsSettings)
    use_cache: bool = True
    n_bootstrap: int = 1000
    seed: int = 0
    split: float | None = None  # fraction of the labelled set used for training (SMIA), rest evaluated
    split_seed: int = 0
    population_alpha: float = 0.1  # FPR on the population set for the threshold (Mireshghallah §2.4)
    blind: bool = True  # model-free baseline (distribution-shift check)
    # attacks score every token the model predicts as it did in training (attacks.base): None decides from
    # the prefix (stats.scores_first_token); True / False force the first text token in / out
    score_first_token: bool | None = None

    def to_dict(self) -> dict:
        """The settings as plain data (for ``run.json``): the attacks as a list, the statistics settings as a dict."""
        d = {k: v for k, v in self.__dict__.items() if k != "stats"}
        d["attacks"] = list(self.attacks)
        d["stats"] = dict(self.stats.__dict__)
        return d


@dataclass
class RunContext:
    """Everything an attack's ``prepare`` hook may use."""

    target: LoadedModel
    reference: LoadedModel | None
    config: RunConfig
    dataset: Dataset  # all texts being scored (evaluation + training parts)
    train_mask: np.ndarray  # texts usable for training (labels known to the attack)
    progress: Progress
    compute: Callable[..., list]  # compute(lm, texts, label=...) -> list[TokenStats] with the run's settings
    population: Dataset | None = None  # known non-members disjoint from the audited texts (ReCaLL prefix, RMIA)
