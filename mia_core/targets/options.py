"""The declared options of a target's fine-tune (``mia make-target``, ``mia make-references``, the Controlled
experiment page): their defaults, domains and help, the one check of them (:func:`mia_core.targets.recipe.check_recipe`
calls :meth:`TargetOptions.check`), the CLI's flags and the page's widget limits. Imports nothing heavy."""
from __future__ import annotations

from dataclasses import dataclass

from ..options import SEED, Options, number, one_of, option, whole

METHODS = ("lora", "full")
ADAPTER_DTYPES = ("fp32", "fp16", "bf16")
DEFAULT_LR = {"lora": 1e-3, "full": 1e-4}
MAX_EPOCHS = 1000  # more passes over the same members than any membership experiment needs


@dataclass(frozen=True)
class TargetOptions(Options):
    """How a base model is fine-tuned on the members (``mia_core.targets.make_target``)."""

    method: str = option("lora", one_of(*METHODS), "lora (a LoRA adapter) or full (every weight)")
    epochs: int = option(3, whole(1, MAX_EPOCHS), "passes over the member texts")
    lr: float | None = option(None, number(0, lo_open=True, optional=True),
                              f"learning rate (none: {DEFAULT_LR['lora']:g} for lora, {DEFAULT_LR['full']:g} for full)")
    seed: int = option(0, SEED, "seed of the adapter's initialisation and the data order")
    max_length: int = option(256, whole(2), "tokens per training sequence")
    batch_size: int = option(8, whole(1), "sequences per step")
    lora_r: int = option(16, whole(1), "LoRA rank (alpha = 2 r)")
    adapter_dtype: str = option("fp32", one_of(*ADAPTER_DTYPES),
                                "precision the LoRA adapter is saved in (fp16 halves the file)")


@dataclass(frozen=True)
class SplitOptions(Options):
    """How a corpus is cut into a controlled experiment's sets (``mia_core.api.data.split_corpus``; the Controlled
    experiment page's widgets take their limits from these fields)."""

    members_pct: int = option(40, whole(0, 100), "share of the corpus the target is trained on (%)")
    nonmembers_pct: int = option(40, whole(0, 100), "share never trained on, evaluated against the members (%)")
    population_pct: int = option(20, whole(0, 100), "share never trained on, kept apart to set decision thresholds "
                                                    "(%; 0: none)")
    max_texts: int = option(0, whole(0), "use at most this many texts of the corpus, the first ones (0: all)")
    seed: int = option(0, SEED, "seed of the random cut")
