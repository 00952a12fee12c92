"""The masked-LM audit's declared options (:class:`MlmOptions`): the one home of every setting's default, domain
and help. :func:`mia_core.api.mlm.prepare_mlm` checks a run's settings with them; the engine's guards
(:func:`~mia_core.mlm.stages.check_inputs`, the masking) check with the same domains; ``mia mlm``'s flags and the
page's widget limits are made from the fields (``docs/mlm.md`` holds the table).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..options import BOOTSTRAP, Options, flag, number, one_of, option, whole
from .masking import DEFAULT_RATE, DEFAULT_RECIPE, K_DOMAIN, RATE_DOMAIN, RECIPES, SEED_DOMAIN

DEFAULT_ALPHA = 0.1
ALPHA_DOMAIN = number(0, 1, lo_open=True, hi_open=True)


@dataclass(frozen=True)
class MlmOptions(Options):
    """The settings of a masked-LM audit (Mireshghallah et al. 2022)."""

    recipe: str = option(DEFAULT_RECIPE, one_of(*RECIPES),
                         "energy recipe (§2.3): sum, ceil(0.15 T) masked tokens per pattern, K = 10, their "
                         "log-probabilities summed; released (the authors' released code, issue 28), int(0.15 T) "
                         "masked tokens (at least 1), K = 20, mean loss per masked token")
    k: int | None = option(None, whole(K_DOMAIN.lo, K_DOMAIN.hi, optional=True),
                           "K, random masking patterns per text (§2.3); none: the recipe's (10 with sum, 20 with "
                           "released); a given K always wins")
    rate: float = option(DEFAULT_RATE, RATE_DOMAIN, "share of tokens masked in each pattern (§2.3)")
    alpha: float = option(DEFAULT_ALPHA, ALPHA_DOMAIN, "share of the population flagged by the threshold (§2.4)")
    seed: int = option(0, SEED_DOMAIN, "seed of the masking patterns and the bootstrap")
    batch_tokens: int = option(8192, whole(1), "padded tokens per forward pass (memory knob)")
    n_bootstrap: int = option(1000, BOOTSTRAP, "bootstrap resamples of the AUC's confidence interval")
    cache: bool = option(True, flag(), "read and write the energy cache")
    vocab_only: bool = option(False, flag(), "accept a reference with the same vocabulary whose tokenizer normalises "
                                             "text differently (both models get the target's tokenisation)")
