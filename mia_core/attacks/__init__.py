"""The attack registry. Adding an attack = one module (with ``@register(...)`` on its ``score``) + its
import here.

Every attack returns one score per text, higher = more likely member.
"""
from __future__ import annotations

from ..errors import SettingsError
from .base import REGISTRY, Attack, AttackInputs, register

# Each attack module registers itself (``@register(...)`` on its ``score``); the order of these imports is
# the registry's order (the order of every table, of "all" and of the page's list).
from . import loss, zlib_ratio, lowercase, reference, min_k, min_k_pp  # noqa: E402,F401,I001
from . import neighbourhood, smia  # noqa: E402,F401
from . import gradnorm, rmia, recall, dc_pdd  # noqa: E402,F401
from . import wbc, con_recall  # noqa: E402,F401


def check_params(params: dict | None, *, prefix: str = "") -> dict:
    """A run's attack parameters ``{attack: {name: value}}`` checked against the declared domains
    and coerced (a new dict); ``SettingsError`` with one line naming ``[prefix]attack.name``, the
    value and the domain, for an unknown attack or parameter or a value outside its domain.

    The one check of attack parameters: the CLI (``--param``, with ``prefix="--param "``), the
    pipeline (``pipeline.check_config``, before any model pass) and the calibration page
    (``dashboard.calibration.build_request``, before the page loads a model) call it."""
    out = {}
    for name, values in (params or {}).items():
        if name not in REGISTRY:
            raise SettingsError(f"{prefix}{name}: unknown attack; choose from {', '.join(REGISTRY)}")
        if values is not None and not isinstance(values, dict):
            raise SettingsError(f"{prefix}{name}: parameters must be a mapping of name to value, got {values!r}")
        out[name] = REGISTRY[name].check_params(values, prefix=prefix)
    return out


BASELINES = ("loss", "zlib", "lowercase", "ref", "min_k", "min_k_pp")

# The attacks a run scores when none are named, in every front end (the CLI's `mia run`, the Calibration
# page's ticked boxes, the API), plus ``ref`` and ``wbc`` when there is a reference model: the cheap one-pass
# baselines and the strongest when they can be placed (both read the reference pass; WBC, Chen et al. 2026, is
# the strongest on the weak fine-tunes of docs/attacks.md, and is skipped with a note when the reference's
# tokenizer differs from the target's: ``pipeline.plan.check_tokenizers``). Lowercase is one word away but not
# run by default: besides ref, it is the only classic baseline with a model pass of its own (over the
# lower-cased texts), a third of the demo's first run (40 s of 121 s on a 2-core AVX2 CPU), for the weakest of
# the demo's signals (AUC 0.70 against LOSS 0.84, ref 0.98).
DEFAULT_ATTACKS = ("loss", "zlib", "min_k", "min_k_pp")
WITH_REFERENCE = ("ref", "wbc")


def default_attacks(have_reference: bool) -> list[str]:
    """:data:`DEFAULT_ATTACKS`, plus :data:`WITH_REFERENCE` (``ref``, ``wbc``) when a reference model is there."""
    return [*DEFAULT_ATTACKS, *(WITH_REFERENCE if have_reference else ())]


__all__ = ["REGISTRY", "Attack", "AttackInputs", "register", "check_params", "BASELINES", "DEFAULT_ATTACKS", "WITH_REFERENCE",
           "default_attacks"]
