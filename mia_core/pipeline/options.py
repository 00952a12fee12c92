"""The declared options of a calibration run (``mia run``, the Calibration run page, :func:`mia_core.api.prepare_run`):
one frozen :class:`RunOptions` whose fields carry their default, their domain and their one-line help
(:mod:`mia_core.options`).

:meth:`RunOptions.check` is the check of these settings wherever they are given: ``prepare_run`` checks them before
anything is read or loaded, :func:`mia_core.pipeline.check_config` (the first step of ``run_attacks``, for a
``RunConfig`` built by hand) checks the same fields with the same domains, ``mia run``'s flags are made from them
(:func:`mia_core.cli.common.add_options`) and the page's widgets take their limits from them. The attacks' own
parameters are declared by each attack (``DOMAINS``, :mod:`mia_core.attacks`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numbers

from ..errors import SettingsError
from ..options import BOOTSTRAP, SEED, Options, flag, number, option, parsed, whole

PREFIXES = ("auto", "always", "none")  # mia_core.stats.settings.PREFIX_MODES (tests/test_options.py holds them equal)
SHARE = number(0, 1, lo_open=True, hi_open=True)


def _prefix(value, where: str):
    """A prefix mode (``mia_core.stats.settings.prefix_mode``: a word, True / False, or a token id >= 0), as given."""
    from ..options import _shown
    from ..stats.settings import prefix_mode

    if isinstance(value, (str, bool)) or (isinstance(value, numbers.Integral) and int(value) >= 0):
        try:
            prefix_mode(value)
            return value.strip().lower() if isinstance(value, str) else value
        except SettingsError:
            pass
    raise SettingsError(f"{where} must be one of {', '.join(PREFIXES)} (or True: always, False: none), got "
                        f"{_shown(value)}")


@dataclass(frozen=True)
class RunOptions(Options):
    """The settings of a calibration run (the attacks and their parameters are given beside them)."""

    split: float | None = option(None, number(0, 1, lo_open=True, hi_open=True, also=(0,), optional=True),
                                 "share of the labelled texts the learning attacks train on (stratified); every attack "
                                 "is reported on the rest; 0 or none: no split")
    split_seed: int | None = option(None, whole(0, SEED.hi, optional=True), "seed of the split (none: the seed)")
    prefix: str = option("auto", parsed(_prefix, "one of auto, always, none"),
                         "what goes in front of each text: auto = what the model saw in training; always = a BOS/EOS "
                         "token; none = nothing")
    context: int | None = option(None, whole(2, also=(0,), optional=True),
                                 "window length C for long texts, stride C-1 (0 or none: min(the model's, 2048))")
    batch_tokens: int | None = option(None, whole(1, also=(0,), optional=True),
                                      "tokens per forward batch, a memory knob (0 or none: 2048 on a CPU, 8192 on a "
                                      "GPU)")
    first_token: bool | None = option(None, flag(optional=True),
                                      "score each text's first token (none: when the prefix is the model's own)")
    cache: bool = option(True, flag(), "read and write the statistics cache")
    n_bootstrap: int = option(1000, BOOTSTRAP, "bootstrap resamples of the confidence intervals")
    seed: int = option(0, SEED, "seed of the bootstrap, the blind baseline and SMIA's sweep")
    blind: bool = option(True, flag(), "also run the model-free blind baseline (the distribution-shift check)")
    alpha: float = option(0.1, SHARE, "FPR on the population set for the threshold (Mireshghallah et al. 2022, §2.4)")


__all__ = ["PREFIXES", "RunOptions"]
