"""The attack registry. Adding an attack = one module + one line here.

Every attack returns one score per text, higher = more likely member.
"""
from __future__ import annotations

from . import loss, lowercase, min_k, min_k_pp, reference, zlib_ratio
from . import neighbourhood, smia
from . import gradnorm, rmia
from . import dc_pdd, recall
from .base import Attack, AttackInputs

REGISTRY: dict[str, Attack] = {}


def register(attack: Attack) -> Attack:
    REGISTRY[attack.name] = attack
    return attack


register(Attack("loss", "LOSS", ("target",), loss.score, "Yeom et al. 2018"))
register(Attack("zlib", "zlib ratio", ("target",), zlib_ratio.score, "Carlini et al. 2021 §5.1"))
register(Attack("lowercase", "Lowercase ratio", ("target", "target_lower"), lowercase.score, "Carlini et al. 2021 §5.1"))
register(Attack("ref", "Reference model (log-likelihood difference)", ("target", "reference"), reference.score, "Mattern et al. 2023 §3.2 (difference); Carlini et al. 2021 §5.1 (ratio)", {"form": "difference"}, requires=reference.requires, choices={"form": ("difference", "ratio")}))
register(Attack("min_k", "Min-K%", ("target",), min_k.score, "Shi et al. 2024", {"k": 0.2}))
register(Attack("min_k_pp", "Min-K%++", ("target",), min_k_pp.score, "Zhang et al. 2024; SMIA App. A", {"k": 0.2}))
register(Attack("neighbourhood", "Neighbourhood", ("target", "neighbours"), neighbourhood.score,
                "Mattern et al. 2023 §2", dict(neighbourhood.DEFAULTS), prepare=neighbourhood.prepare))
register(Attack("smia", "SMIA", ("target", "neighbours", "labels"), smia.score,
                "Mozaffari & Marathe 2024 §4", dict(smia.DEFAULTS), prepare=smia.prepare, choices=smia.CHOICES,
                requires=smia.requires, types=smia.TYPES))
register(Attack("gradnorm", "Gradient norm", ("target",), gradnorm.score, "Duan et al. 2024 (MIMIR); Rezaei & Liu 2021", dict(gradnorm.DEFAULTS), prepare=gradnorm.prepare, choices={"p": ("l1", "l2", "linf"), "aggregate": ("global", "mean")}))
register(Attack("rmia", "RMIA", ("target",), rmia.score, "Zarifzadeh et al. 2024 §3", dict(rmia.DEFAULTS), prepare=rmia.prepare, population_ok=False, requires=rmia.requires))
register(Attack("recall", "ReCaLL", ("target",), recall.score, "Xie et al. 2024 §3", dict(recall.DEFAULTS), prepare=recall.prepare, population_ok=False, requires=recall.requires))
register(Attack("dc_pdd", "DC-PDD", ("target",), dc_pdd.score, "Zhang et al. 2024 (DC-PDD) §4", dict(dc_pdd.DEFAULTS), prepare=dc_pdd.prepare, requires=dc_pdd.requires))

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


__all__ = ["REGISTRY", "Attack", "AttackInputs", "register", "BASELINES", "DEFAULT_ATTACKS", "default_attacks"]
