"""The attack registry. Adding an attack = one module + one line here.

Every attack returns one score per text, higher = more likely member.
"""
from __future__ import annotations

from . import loss, lowercase, min_k, min_k_pp, reference, zlib_ratio
from . import neighbourhood, smia
from . import gradnorm, rmia
from . import dc_pdd, recall
from ..errors import SettingsError
from .base import Attack, AttackInputs

REGISTRY: dict[str, Attack] = {}


def register(attack: Attack) -> Attack:
    """Add ``attack`` to the registry. Every parameter must have a declared domain (``DOMAINS`` in
    the attack's module, ``attacks.domains``) and its default must lie in it."""
    undeclared = sorted(set(attack.params) ^ set(attack.domains))
    if undeclared:
        raise ValueError(f"attack {attack.name}: parameters and declared domains differ: {', '.join(undeclared)}")
    attack.check_params(attack.params)  # a default outside its domain is a bug here, not the user's
    REGISTRY[attack.name] = attack
    return attack


def check_params(params: dict | None, *, prefix: str = "") -> dict:
    """A run's attack parameters ``{attack: {name: value}}`` checked against the declared domains
    and coerced (a new dict); ``SettingsError`` with one line naming ``[prefix]attack.name``, the
    value and the domain, for an unknown attack or parameter or a value outside its domain.

    The one check of attack parameters: the CLI (``--param``, with ``prefix="--param "``), the
    pipeline (``pipeline.check_config``, before any model pass) and the calibration page
    (``dashboard.calibration.build_config``, before the page loads a model) call it."""
    out = {}
    for name, values in (params or {}).items():
        if name not in REGISTRY:
            raise SettingsError(f"{prefix}{name}: unknown attack; choose from {', '.join(REGISTRY)}")
        if values is not None and not isinstance(values, dict):
            raise SettingsError(f"{prefix}{name}: parameters must be a mapping of name to value, got {values!r}")
        out[name] = REGISTRY[name].check_params(values, prefix=prefix)
    return out


register(Attack("loss", "LOSS", ("target",), loss.score, "Yeom et al. 2018"))
register(Attack("zlib", "zlib ratio", ("target",), zlib_ratio.score, "Carlini et al. 2021 §5.1"))
register(Attack("lowercase", "Lowercase ratio", ("target", "target_lower"), lowercase.score, "Carlini et al. 2021 §5.1"))
register(Attack("ref", "Reference model (log-likelihood difference)", ("target", "reference"), reference.score, "Mattern et al. 2023 §3.2 (difference); Carlini et al. 2021 §5.1 (ratio)", dict(reference.DEFAULTS), requires=reference.requires, domains=reference.DOMAINS))
register(Attack("min_k", "Min-K%", ("target",), min_k.score, "Shi et al. 2024", dict(min_k.DEFAULTS), domains=min_k.DOMAINS))
register(Attack("min_k_pp", "Min-K%++", ("target",), min_k_pp.score, "Zhang et al. 2024; SMIA App. A", dict(min_k_pp.DEFAULTS), domains=min_k_pp.DOMAINS))
register(Attack("neighbourhood", "Neighbourhood", ("target", "neighbours"), neighbourhood.score,
                "Mattern et al. 2023 §2", {**neighbourhood.DEFAULTS, **neighbourhood.SCORE_DEFAULTS},
                prepare=neighbourhood.prepare, domains={**neighbourhood.DOMAINS, **neighbourhood.SCORE_DOMAINS}))
register(Attack("smia", "SMIA", ("target", "neighbours", "labels"), smia.score,
                "Mozaffari & Marathe 2024 §4", dict(smia.DEFAULTS), prepare=smia.prepare, requires=smia.requires,
                domains=smia.DOMAINS))
register(Attack("gradnorm", "Gradient norm", ("target",), gradnorm.score, "Rezaei & Liu 2021; MIMIR's variant (arXiv:2402.17012, Duan et al. 2024) has the opposite sign", dict(gradnorm.DEFAULTS), prepare=gradnorm.prepare, domains=gradnorm.DOMAINS))
register(Attack("rmia", "RMIA", ("target",), rmia.score, "Zarifzadeh et al. 2024 §3", dict(rmia.DEFAULTS), prepare=rmia.prepare, population_ok=False, requires=rmia.requires, domains=rmia.DOMAINS))
register(Attack("recall", "ReCaLL", ("target",), recall.score, "Xie et al. 2024 §3", dict(recall.DEFAULTS), prepare=recall.prepare, population_ok=False, requires=recall.requires, domains=recall.DOMAINS))
register(Attack("dc_pdd", "DC-PDD", ("target",), dc_pdd.score, "Zhang et al. 2024 (DC-PDD) §4", dict(dc_pdd.DEFAULTS), prepare=dc_pdd.prepare, requires=dc_pdd.requires, domains=dc_pdd.DOMAINS))

BASELINES = ("loss", "zlib", "lowercase", "ref", "min_k", "min_k_pp")

# The attacks a run scores when none are named, in every front end (the CLI's `mia run`, the Calibration
# page's ticked boxes, the API), plus ``ref`` when there is a reference model: the cheap one-pass baselines
# and the strongest when it can be placed. Lowercase is one word away but not run by default: besides ref,
# it is the only classic baseline with a model pass of its own (over the lower-cased texts), a third of
# the demo's first run (40 s of 121 s on a 2-core AVX2 CPU), for the weakest of the demo's signals (AUC
# 0.70 against LOSS 0.84, ref 0.98).
DEFAULT_ATTACKS = ("loss", "zlib", "min_k", "min_k_pp")


def default_attacks(have_reference: bool) -> list[str]:
    """:data:`DEFAULT_ATTACKS`, plus ``ref`` when a reference model is there."""
    return [*DEFAULT_ATTACKS, *(["ref"] if have_reference else [])]


__all__ = ["REGISTRY", "Attack", "AttackInputs", "register", "check_params", "BASELINES", "DEFAULT_ATTACKS", "default_attacks"]
