"""The declared options of the verbatim extraction audit (:class:`ExtractionOptions`)."""
from __future__ import annotations

from dataclasses import dataclass

from ..options import BOOTSTRAP, SEED, Options, flag, option, whole

DEFAULT_PREFIX = 50  # Carlini et al. 2023 prompt with 50 to 500 tokens and ask for the next 50
DEFAULT_SUFFIX = 50


@dataclass(frozen=True)
class ExtractionOptions(Options):
    """The settings of a verbatim extraction audit (Carlini et al. 2023, Definition 3.1)."""

    prefix_tokens: int = option(DEFAULT_PREFIX, whole(1, 4096),
                                "k, the text's first tokens given as the prompt (Definition 3.1's context)")
    suffix_tokens: int = option(DEFAULT_SUFFIX, whole(1, 4096),
                                "m, the tokens after the prompt the model must reproduce; a text shorter than k + m "
                                "tokens is left out and counted")
    n_bootstrap: int = option(1000, BOOTSTRAP, "bootstrap resamples of the AUC's and TPRs' confidence intervals")
    seed: int = option(0, SEED, "seed of the bootstrap")
    batch_tokens: int | None = option(None, whole(1, optional=True),
                                      "tokens per forward batch (memory knob); none: the device's default")
    cache: bool = option(True, flag(), "read and write the statistics cache")
