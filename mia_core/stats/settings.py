"""The settings of a statistics pass (:class:`StatsSettings`) and how a text becomes the token
sequence the model sees: its token ids (:func:`tokenize`) and what is put in front (the prefix).

**The prefix: texts as the model saw them in training** (``StatsSettings.prefix``). ``"auto"``
(the default) puts in front of each text what the model saw there in training:

* a ``make-target`` folder: the token it was trained with (its ``training_log.json``), or none;
* any other model: what its tokenizer adds itself (:func:`tokenizer_prefix_id`). Llama-style
  tokenizers add a BOS token, so every text token is predicted from it, as in MIMIR, which
  tokenizes with the tokenizer's special tokens; GPT-2-style tokenizers (GPT-2, Pythia, SmolLM2,
  Qwen and most of their fine-tunes) add nothing, so nothing is prepended and the first text token
  has no prediction: tokens 2..n are scored, as in MIMIR.

``"always"`` puts the tokenizer's BOS, or ``<|endoftext|>``/EOS when it has none, in front of
every text (:func:`prefix_token_id`), so that the first text token is predicted too and the
total NLL covers the whole string (per-byte comparisons across tokenizers need it), at the cost
of a context a GPT-2-style model never saw in training (it lowers every attack's AUC on such
fine-tunes: issue 28). ``"none"`` prepends nothing. ``True``/``False`` are read as
``"always"``/``"none"`` (the settings of earlier versions).

:func:`cache_settings` is the disk-cache key of a pass: model identity, window, prefix, vocabulary
sums, :data:`STATS_VERSION` and (only when set) a hash of the condition.
"""
from __future__ import annotations

import warnings
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..cache import text_hash
from ..data.decoding import check_text_length
from ..errors import ModelError
from ..models.loaded import compute_prefix_token_id, compute_tokenizer_prefix_id, recorded_fact

if TYPE_CHECKING:  # mia_core.models (huggingface_hub, safetensors) loads with a model: ``mia --help`` stays light
    from ..models import LoadedModel

STATS_VERSION = 2  # 2: sigma as E[(lp - mu)^2] (stable in float32)
DEFAULT_CONTEXT_CAP = 2048  # default window on CPU-friendly terms; the model's max if smaller
DEFAULT_BATCH_TOKENS = 2048  # on a CPU: the demo's 200 paragraphs run at 355 tokens/s vs 299 at 4096 (2-core EPYC)
DEFAULT_BATCH_TOKENS_GPU = 8192  # on a GPU, where wider batches pay
PREFIX_MODES = ("auto", "always", "none")


@dataclass
class StatsSettings:
    """How the one statistics pass reads texts (part of every statistics cache key, :func:`cache_settings`).

    Parameters
    ----------
    context : int, optional
        Window length C in tokens; None: the model's maximum, at most ``DEFAULT_CONTEXT_CAP`` (2048).
    prefix : str, bool or int
        What goes in front of each text: ``"auto"`` (what the model saw in training), ``"always"`` (its BOS,
        else EOS), ``"none"``, or a token id (:func:`prefix_mode`).
    batch_tokens : int, optional
        Tokens per forward batch; None: ``DEFAULT_BATCH_TOKENS`` on a CPU, ``DEFAULT_BATCH_TOKENS_GPU`` elsewhere.
    vocab_probs : bool
        Also accumulate the sum of the predicted distributions (RMIA's ``R^GP``).
    condition : str, optional
        A text every text is conditioned on (ReCaLL's prefix); None or ``""``: none.
    """
    context: int | None = None  # window length C; None: min(model max, DEFAULT_CONTEXT_CAP)
    prefix: str | bool = "auto"  # "auto" (what the model saw in training), "always" (BOS/EOS), "none"
    batch_tokens: int | None = None  # tokens per forward batch; None: DEFAULT_BATCH_TOKENS(_GPU) for the device
    vocab_probs: bool = False  # also accumulate sum of predicted distributions (R^GP)
    condition: str | None = None  # text every text is conditioned on (ReCaLL's prefix); None/"": none

    def __post_init__(self):
        self.prefix = prefix_mode(self.prefix)

    def resolved_context(self, lm: LoadedModel) -> int:
        """The window length for ``lm``: ``context``, else ``min(model max, DEFAULT_CONTEXT_CAP)``, never over the
        model's maximum.

        Parameters
        ----------
        lm : LoadedModel
            The model the pass runs on.

        Returns
        -------
        int
            Tokens per window.

        Raises
        ------
        ModelError
            A window shorter than 2 tokens.
        """
        c = self.context or min(lm.max_context, DEFAULT_CONTEXT_CAP)
        if c < 2:
            raise ModelError("the context length must be at least 2 tokens")
        return min(c, lm.max_context)

    def resolved_batch_tokens(self, lm: LoadedModel) -> int:
        """Tokens per forward batch for ``lm``: ``batch_tokens``, else the CPU or GPU default for its device."""
        if self.batch_tokens:
            return int(self.batch_tokens)
        return DEFAULT_BATCH_TOKENS if str(lm.device).startswith("cpu") else DEFAULT_BATCH_TOKENS_GPU


def prefix_mode(value) -> str | int:
    """``StatsSettings.prefix`` as one of :data:`PREFIX_MODES` (``True``/``False``: ``"always"``/``"none"``),
    or a token id (an int >= 0: that token in front of every text; a run pins its other models to the
    target's token this way, so that a reference scores the same tokens)."""
    if value is True:
        return "always"
    if value is False or value is None:
        return "none"
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        return int(value)
    v = str(value).strip().lower()
    if v not in PREFIX_MODES:
        from ..errors import SettingsError

        raise SettingsError(f"prefix must be one of {', '.join(PREFIX_MODES)}, got {value!r}")
    return v


_TOKENIZER_MEMO: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _memo(tokenizer, what: str, compute):
    """``compute(tokenizer)`` once per tokenizer object (and size: added tokens invalidate it): the prefix
    ids are asked for several times per scoring call, and a probe tokenization and a 49k-entry vocabulary
    each time showed in profiles."""
    try:
        memo = _TOKENIZER_MEMO.setdefault(tokenizer, {})
    except TypeError:  # not weakly referenceable: no memo
        return compute(tokenizer)
    key = (what, len(tokenizer))
    if key not in memo:
        memo[key] = compute(tokenizer)
    return memo[key]


def tokenizer_prefix_id(tokenizer) -> int | None:
    """The token the tokenizer itself puts in front of a text (``add_special_tokens=True``): a Llama-style
    tokenizer's BOS; None for GPT-2-style tokenizers, which add nothing. When it adds several, the one
    right before the text."""
    return _memo(tokenizer, "tokenizer_prefix_id", lambda t: recorded_fact(t, "tokenizer_prefix_id",
                                                                      compute_tokenizer_prefix_id))


def resolve_prefix(lm: LoadedModel, st: "StatsSettings") -> int | None:
    """The token put in front of every text under ``st`` (None: nothing), see the module docstring."""
    mode = prefix_mode(st.prefix)
    if isinstance(mode, int):
        return mode
    if mode == "none":
        return None
    if mode == "always":
        return prefix_token_id(lm.tokenizer)
    info = getattr(lm, "info", None) or {}
    if "trained_prefix_token_id" in info:  # a make-target folder: what it was trained with
        v = info["trained_prefix_token_id"]
        return None if v is None else int(v)
    return tokenizer_prefix_id(lm.tokenizer)


def scores_first_token(lm: LoadedModel, st: "StatsSettings") -> bool:
    """Whether attacks score each text's first token by default: under ``"auto"`` when a prefix is put in
    front (the model learned to predict the first token from it, and MIMIR scores it); never under
    ``"always"`` (the prefix is ours, not the model's: tokens 2..n, as the papers); without a prefix the
    first token has no prediction anyway."""
    return prefix_mode(st.prefix) == "auto" and resolve_prefix(lm, st) is not None


def settings_for(lm: LoadedModel, target: LoadedModel, st: "StatsSettings | None" = None) -> "StatsSettings":
    """``st`` for scoring ``lm`` beside ``target``: a model that shares the target's tokenizer (a reference,
    RMIA's references) is scored with the target's prefix, so that both score the same tokens; a model with
    another tokenizer keeps its own."""
    import dataclasses

    st = st or StatsSettings()
    if st.prefix == "auto" and lm is not target and target.same_tokenizer(lm):
        r = resolve_prefix(target, st)
        return dataclasses.replace(st, prefix="none" if r is None else r)
    return st


def prefix_key(lm: LoadedModel, st: "StatsSettings"):
    """The prefix as the cache key holds it: ``True`` for the BOS/EOS token of earlier versions' default,
    ``False`` for none, else the token id. Entries of earlier versions stay valid wherever the numbers are
    the same (a Llama-style model under ``"auto"``, any model under ``"always"`` or ``"none"``)."""
    r = resolve_prefix(lm, st)
    if r is None:
        return False
    return True if r == prefix_token_id(lm.tokenizer) else int(r)


def prefix_token_id(tokenizer) -> int | None:
    """The BOS/EOS token ``prefix="always"`` puts in front of every text."""
    return _memo(tokenizer, "prefix_token_id", lambda t: recorded_fact(t, "prefix_token_id",
                                                                  compute_prefix_token_id))


def tokenize(lm: LoadedModel, text: str) -> np.ndarray:
    """``text``'s token ids under ``lm``'s tokenizer, without special tokens.

    Parameters
    ----------
    lm : LoadedModel
        The model whose tokenizer is used.
    text : str
        The text; one longer than the readers allow is refused before the tokenizer sees it (a fast tokenizer
        would abort the process).

    Returns
    -------
    numpy.ndarray
        The ids, ``int32``.

    Raises
    ------
    DataError
        A text too long to tokenize safely (:func:`mia_core.data.decoding.check_text_length`).
    """
    # the readers refuse longer texts with their source; this guards every other way in (the API,
    # generated texts): a fast tokenizer handed one aborts the process (Rust panic, exit 134)
    check_text_length(text, f"scoring with {getattr(lm, 'name', 'the model')}")
    encode = recorded_fact(lm.tokenizer, "encode_plain", lambda tok: None)  # a deferred load's, by its file
    if encode is not None:
        return np.asarray(encode(text), dtype=np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ids = lm.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]
    return np.asarray(ids, dtype=np.int32)


def cache_settings(lm: LoadedModel, st: StatsSettings) -> dict:
    """The statistics cache's settings key for ``lm`` under ``st``: the model's identity, the resolved window, the
    prefix (:func:`prefix_key`), ``vocab_probs``, the statistics version and, when set, the condition's hash and
    length.

    Parameters
    ----------
    lm : LoadedModel
        The model.
    st : StatsSettings
        The pass's settings.

    Returns
    -------
    dict
        The key's fields (an unconditional pass's key has no ``condition`` entries, as before conditions existed).
    """
    out = {
        "model": lm.identity,
        "context": st.resolved_context(lm),
        "prefix": prefix_key(lm, st),
        "vocab_probs": st.vocab_probs,
        "version": STATS_VERSION,
    }
    if st.condition:  # only when set: the unconditional key stays what it always was
        out["condition"] = text_hash(st.condition)
        out["condition_chars"] = len(st.condition)
    return out
