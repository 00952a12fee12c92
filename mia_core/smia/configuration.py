"""How an SMIA result is named: the paper's configuration or "SMIA-style".

The paper's neighbours are T5 span fillings and its training recipe is App. D.4 (Mozaffari &
Marathe 2024). Only that configuration -- ``--neighbours t5:MODEL`` with ``--smia-preset paper``
-- is reported as "SMIA (paper configuration)"; anything else, the default included (masked-LM
neighbours from the embedded proposer, preset project), is "SMIA-style". The sentence embedder
differs from the paper's in both (Cohere Embedding V3 is not available offline).
"""
from __future__ import annotations

from .training import PRESETS

GENERATOR_WORDS = {"t5": "T5 span-filling", "masked-lm": "masked-LM", "offline": "SmolLM2 word-proposal"}
PAPER_CONFIGURATION = "SMIA (paper configuration)"


def configuration(generator: str, preset: str, training: dict | None = None) -> dict:
    """How SMIA's result is named: ``{"configuration": "paper" | "smia-style", "configuration_label": ...}``.

    "paper" only with T5 span-filling neighbours (``t5:MODEL``, the paper's generator) and the paper's
    training recipe (``preset="paper"``); anything else -- the default masked-LM neighbours from the
    embedded proposer with preset project included -- is "SMIA-style". ``training`` (the trained or
    loaded model's training record): preset values it overrode are named in the label."""
    from ..neighbours import parse_generator_spec

    kind, _ = parse_generator_spec(generator)
    tr = training or {}
    changed = [f"{k} {tr[k]:g}" if isinstance(tr[k], float) else f"{k} {tr[k]}"
               for k in ("lr", "epochs", "batch_size", "batch_texts", "standardise")
               if preset in PRESETS and k in tr and tr[k] != PRESETS[preset][k]
               and not (k == "batch_size" and tr.get("batch_texts"))]  # batches of texts: batch_size unused
    if kind == "t5" and preset == "paper":
        label = PAPER_CONFIGURATION + (f" with {', '.join(changed)} instead of the paper's" if changed else "")
        return {"configuration": "paper", "configuration_label": label}
    label = (f"SMIA-style ({GENERATOR_WORDS.get(kind, kind)} neighbours from {generator}, preset {preset}"
             + (f", {', '.join(changed)}" if changed else "")
             + "; the paper's configuration is T5 span-filling neighbours, --neighbours t5:MODEL, "
               "with --smia-preset paper)")
    return {"configuration": "smia-style", "configuration_label": label}
