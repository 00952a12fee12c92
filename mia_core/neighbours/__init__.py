"""Neighbour texts: copies of a text with one (or ``m``) words replaced by plausible ones.

Neighbour-based attacks compare the target's behaviour on a text with its behaviour on
slightly perturbed copies (the *neighbourhood attack*, Mattern et al. 2023, and SMIA,
Mozaffari & Marathe 2024). Three generators, chosen with a spec string; the default is
``masked-lm:embedded``, the masked-LM procedure below with the embedded independent proposer
(``neighbours.proposer``: MiniLM's encoder + a masked-LM head trained on the bundled books),
which shares no weights with SmolLM2-based targets (``shares_base`` detects a proposer that
does, and the attacks warn):

``masked-lm:MODEL``  (Mattern et al. 2023 §2.2, after Zhou et al. 2019)
    Any Hugging Face masked LM (bert-base-uncased, roberta-base, a local folder...). For a
    word position ``i`` the original token is kept but **dropout with rate p (default 0.7)
    is applied to its input embedding only** (``inputs_embeds``, the other positions are
    untouched), so the masked LM still sees a blurred version of the word and proposes
    substitutes that fit the context *and* stay close to the original meaning. The MLM
    distribution at ``i`` is taken, the original token (and its case variants) excluded,
    and it is renormalised over whole-word tokens::

        p_swap(w' | x, i) = p_mlm(w' | x~_i) / sum_{w'' != x_i} p_mlm(w'' | x~_i)

    Every (position, candidate) pair is scored by that probability and the ``n`` best pairs
    across all positions make the ``n`` neighbours (the paper's procedure; its best setting
    was n = 100, m = 1). For ``m > 1`` words, combinations of single substitutions at
    distinct positions are scored by the product of their probabilities. Positions are the
    content words that the MLM tokenises as one whole-word token. Positions at least 12
    tokens apart share one forward pass (each with its own dropout mask; the paper blurs one
    per pass), and inflections of the original word (a shared stem) are not proposed.

``t5:MODEL``  (span filling, as in DetectGPT, Mitchell et al. 2023, and SMIA §4)
    ``m`` random content words are replaced by sentinel tokens ``<extra_id_j>`` and a
    T5-family model (``AutoModelForSeq2SeqLM``) fills them by sampling. Decoding is
    *constrained* (a logits processor) to the sentinel structure ``<extra_id_0> words
    <extra_id_1> words ... </s>`` with 1-3 whole-word tokens per span, so every sample parses
    into exactly ``m`` filled spans, whatever the model.

``offline`` (``offline:MODEL`` for another causal LM)
    A stand-in for the masked-LM generator that needs no model from the hub: the embedded
    causal LM (SmolLM2-135M, ``load_causal_lm()``) proposes words from the **left context**
    -- one forward pass gives the next-token distribution at every position at once -- and
    the candidates are **re-ranked by how likely the right context stays**: for each
    candidate ``w`` at word ``i`` the causal LM scores ``w`` followed by the next
    ``R = 6`` original tokens, re-using the key/value cache of the left context, so a
    candidate costs about ``1 + R`` token evaluations::

        delta(w) = [log p(x_{i+1..i+R} | x_<i, w) - log p(x_{i+1..i+R} | x_<i, x_i)]
                   + 0.1 [log p(w | x_<i) - log p(x_i | x_<i)]

    and the ``n`` substitutions with the highest ``delta`` are kept. The first term (how well
    the rest of the sentence still fits after ``w``) does the ranking; it keeps grammar and
    most of the meaning, where ranking by the full joint likelihood would favour frequent
    words that fit the left context only (``He was mollified by that`` -> ``He was also by
    that``). The small left-context term breaks ties at the end of a text, where there is no
    right context. Candidates are single-token, alphabetic, whole English words (the token must
    start a word and be a word of the WordPiece vocabulary shipped with the embedded
    sentence embedder when that package is installed, so no word fragments), never the
    original word (case-insensitively). Positions are drawn with the seed among content
    words (no punctuation, numbers, stop words or words under 3 letters).

All generators are batched, seeded (``seed`` and the text's hash fix the random choices,
so a text gets the same neighbours whatever it is batched with), keep the text's
punctuation and spacing (only the word's characters change), and carry the original's
capitalisation over (``The`` -> ``A``, ``RIVER`` -> ``STREAM``). A lower-case word is never
replaced by a capitalised one (no proper nouns appear mid-sentence). Results are cached on
disk (``mia_core.cache``, namespace ``neighbours``) keyed by the generator's identity,
settings and the text hash; neighbour texts are stored as a numpy unicode array.

Which module holds what:

* ``words`` — the word utilities shared by every generator and by ``edits``:
  :class:`Word`, :func:`words`, :data:`STOPWORDS`, :func:`is_content_word`,
  :func:`content_positions`, :func:`apply_case` (capitalisation carried over),
  :func:`substitute`, :func:`word_diff`, :func:`text_rng` (the seeded per-text random
  generator), the English word list of the embedded embedder's vocabulary, and the per-token
  word tables of a tokenizer.
* ``base`` — :class:`NeighbourSettings` (``n``, ``m``, dropout ``p``, seed; the
  ``DEFAULT_*`` values), :func:`parse_generator_spec`, :class:`Neighbour`, and
  :class:`NeighbourGenerator` (the disk cache, ``NEIGHBOURS_VERSION``, and the selection of
  the ``n`` best substitutions or ``m``-word combinations).
* ``offline`` — :class:`OfflineGenerator` (the ``delta(w)`` ranking above).
* ``masked_lm`` — :class:`MaskedLMGenerator` (Mattern et al. 2023: embedding dropout,
  ``p_swap``).
* ``t5`` — :class:`T5Generator` (DetectGPT / SMIA span filling, constrained decoding).
* this package — :func:`make_generator` (the generator for a settings object, loaded once
  per process), :func:`forget_generators`, :func:`generate_neighbours`.
* ``edits`` — one-word modifications of members (SMIA §5.2: a word duplicated, deleted or
  added, the added word from a generator's ``propose_insertions``): :func:`~mia_core.neighbours.edits.modify_texts`,
  ``VARIANTS``. Not imported by this package (it uses :func:`make_generator`); the runs on
  modified members are ``mia_core.pipeline.modified``.

Models are loaded through ``mia_core.models`` (causal LM, masked LM, seq2seq).
"""
from __future__ import annotations

import threading
from typing import Sequence

from ..progress import Progress, noop
from .base import (
    DEFAULT_DROPOUT,
    DEFAULT_GENERATOR,
    DEFAULT_M,
    DEFAULT_N,
    GENERATORS,
    NEIGHBOURS_VERSION,
    Neighbour,
    NeighbourGenerator,
    NeighbourSettings,
    parse_generator_spec,
)
from .masked_lm import MaskedLMGenerator
from .offline import OfflineGenerator
from .t5 import T5Generator
from .words import (
    STOPWORDS,
    WORD_RE,
    Word,
    apply_case,
    content_positions,
    is_content_word,
    substitute,
    text_rng,
    word_diff,
    words,
)

__all__ = [
    "DEFAULT_DROPOUT", "DEFAULT_GENERATOR", "DEFAULT_M", "DEFAULT_N", "GENERATORS", "NEIGHBOURS_VERSION", "STOPWORDS", "WORD_RE",
    "MaskedLMGenerator", "Neighbour", "NeighbourGenerator", "NeighbourSettings", "OfflineGenerator", "T5Generator",
    "Word", "apply_case", "content_positions", "forget_generators", "generate_neighbours", "is_content_word",
    "make_generator", "parse_generator_spec", "shares_base", "substitute", "text_rng", "word_diff", "words",
]

_GENERATORS: dict[tuple, NeighbourGenerator] = {}
_LOCK = threading.Lock()


def make_generator(settings: NeighbourSettings | None = None, *, device: str = "auto") -> NeighbourGenerator:
    """The generator for ``settings`` (models are loaded once per process)."""
    settings = (settings or NeighbourSettings()).validate()
    kind, model = parse_generator_spec(settings.generator)
    key = (kind, model, device, settings)
    with _LOCK:
        if key in _GENERATORS:
            return _GENERATORS[key]
    if kind == "offline":
        gen: NeighbourGenerator = OfflineGenerator(settings, model, device=device)
    elif kind == "masked-lm":
        gen = MaskedLMGenerator(settings, model, device=device)  # type: ignore[arg-type]
    else:
        gen = T5Generator(settings, model, device=device)  # type: ignore[arg-type]
    with _LOCK:
        _GENERATORS[key] = gen
    return gen


def _proposer_model(gen: NeighbourGenerator):
    for owner in ("lm", "mlm", "s2s", "seq2seq"):
        m = getattr(getattr(gen, owner, None), "model", None)
        if m is not None:
            return m
    return getattr(gen, "model", None)


def shares_base(gen: NeighbourGenerator, target) -> bool:
    """Whether the generator's proposer and the target (a loaded ``CausalLM``) share a base model.

    Fine-tunes (LoRA or full) barely move the input embedding table, so two models share a base
    when their tables have the same shape and matching rows point the same way (mean cosine
    over up to 4,096 rows above 0.5; unrelated models with the same vocabulary size give about 0).
    """
    import torch

    prop = _proposer_model(gen)
    tgt = getattr(target, "model", target)
    try:
        a = prop.get_input_embeddings().weight
        b = tgt.get_input_embeddings().weight
    except (AttributeError, NotImplementedError):
        return False
    if a is None or b is None or tuple(a.shape) != tuple(b.shape) or a.is_meta or b.is_meta:
        return False
    k = min(int(a.shape[0]), 4096)
    with torch.inference_mode():
        x = a[:k].detach().float().cpu()
        y = b[:k].detach().float().cpu()
        cos = torch.nn.functional.cosine_similarity(x, y, dim=-1)
    return bool(torch.nan_to_num(cos).mean() > 0.5)


def forget_generators() -> None:
    """Drop the generators :func:`make_generator` keeps (and the models they hold): the next call loads afresh."""
    with _LOCK:
        _GENERATORS.clear()


def generate_neighbours(texts: Sequence[str], settings: NeighbourSettings | None = None, *, use_cache: bool = True,
                        progress: Progress = noop, device: str = "auto") -> list[list[Neighbour]]:
    """Neighbours of each text with the given settings (default: offline, n=25, m=1)."""
    return make_generator(settings, device=device).generate(texts, use_cache=use_cache, progress=progress)
