"""Controlled targets: fine-tune a causal LM on a known member set.

A membership audit can only be checked against ground truth when we know exactly what a
model was trained on. :func:`make_target` fine-tunes a base model (the embedded SmolLM2, a
local folder, a ``.gguf`` file or a hub id) on ``member_texts`` and writes a *target folder*
that :func:`mia_core.models.load_causal_lm` loads like any other model:

* ``mia_target.json``: ``{"base": <base spec>, "method": "lora"|"full", ...}``; the base
  doubles as the natural reference model of the reference attack (Carlini et al. 2021 §5.1);
* LoRA (default): the peft adapter (``adapter_config.json``, ``adapter_model.safetensors``);
  full fine-tuning: ``config.json`` + ``model.safetensors`` + the tokenizer;
* ``training_log.json``: per-epoch train loss and held-out loss, final losses, seed, settings,
  command, SHA-256 of the data, library versions.

Training (plain torch, no HF ``Trainer``; :mod:`.recipe`):

* Each text is tokenised exactly as :mod:`mia_core.stats` scores it by default
  (``StatsSettings.prefix="auto"``): what the base model's tokenizer puts in front of a text itself
  (a Llama-style BOS; nothing for GPT-2-style tokenizers such as SmolLM2's), then the text tokens, so
  that the model is fine-tuned the standard way and the loss it is trained to lower is the loss the
  attacks read. The token (or none) is recorded as ``prefix_token_id`` in ``mia_target.json``, and
  the scorer puts the same in front of every text of this target. (Earlier versions trained every
  target with a BOS/EOS token in front; their folders say so in ``training_log.json`` and are
  scored that way.) Texts longer than ``max_length``
  are cut into windows of ``max_length`` tokens overlapping by one token (every token is
  trained on once, as the windows of ``mia_core.stats`` score it).
* Causal-LM objective: mean next-token cross-entropy over the real (non-padding) tokens of a
  batch, AdamW (Loshchilov & Hutter 2019; weight decay 0), constant learning rate, gradient
  norm clipped at 1.0.
* LoRA (Hu et al. 2022, "LoRA: Low-Rank Adaptation of Large Language Models"): rank ``r``,
  ``lora_alpha = 2 r``, no dropout, on the attention projections ``q_proj, k_proj, v_proj,
  o_proj`` and the MLP ``gate_proj, up_proj, down_proj`` of Llama-style models (all linear
  layers but the output head for other architectures, peft's ``"all-linear"``). The adapter
  is merged into the base on loading.
* Reproducible: ``torch.manual_seed(seed)`` before the adapter is initialised, the data
  order of every epoch is a permutation drawn from a ``torch.Generator`` seeded with
  ``seed``, no dropout. Same seed, data and machine: the same weights and losses.

The loss reported per epoch as ``train_loss`` is the token-weighted mean of the batch losses
seen during that epoch (the model changes as it goes); ``final`` holds the losses of the
finished model on the members and on the held-out texts (one more pass over each), whose gap
is the membership signal a LOSS attack (Yeom et al. 2018) can see.

Reference models for RMIA (Zarifzadeh et al. 2024): :func:`make_references` (:mod:`.references`) trains
``k`` models with the same recipe, each on a random half of a population set (complementary halves
in pairs, seeded), writes them as ``ref-0 .. ref-<k-1>`` target folders with the record of
which population texts each one saw (``reference_members.json``), and ``references.json``
with the time each took (``mia make-references``).

Modules: :mod:`.recipe` (the shared recipe: data, LoRA/full setup, training loop, saving),
:mod:`.target` (``make_target`` as stages), :mod:`.references` (``make_references`` as stages).
"""
from __future__ import annotations

from .recipe import (ADAPTER_DTYPES, DEFAULT_LR, LLAMA_LORA_MODULES, MAX_GRAD_NORM, METHODS, TRAINING_LOG,
                     base_record, file_sha256, read_log, texts_sha256)
from .references import REFERENCE_MEMBERS, REFERENCES_INDEX, make_references, reference_splits
from .target import make_target

__all__ = [
    "ADAPTER_DTYPES", "DEFAULT_LR", "LLAMA_LORA_MODULES", "MAX_GRAD_NORM", "METHODS", "REFERENCES_INDEX",
    "REFERENCE_MEMBERS", "TRAINING_LOG", "base_record", "file_sha256", "make_references", "make_target",
    "read_log", "reference_splits", "texts_sha256",
]
