"""A loaded causal LM (:class:`LoadedModel`: the model, its tokenizer and what the engine needs to know
about it), its summary for reports (:func:`describe`) and the key/value-cache argument of its forward pass
under either of transformers' names (:func:`with_cache`, :func:`returned_cache`).

:func:`mia_core.models.causal.load_causal_lm` makes one.
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from typing import Callable


@dataclass
class LoadedModel:
    """A loaded causal LM with everything the engine needs to know about it."""

    model: object
    tokenizer: object
    name: str
    identity: str  # stable string for cache keys: source fingerprint + dtype + quantisation
    dtype: str  # the precision it computes in (int4: its compute dtype, bf16 when fp32 was asked for)
    quantize: str
    device: str
    max_context: int
    load_seconds: float
    n_params: int
    base_spec: str | None = None  # for fine-tuned targets: the base model (a natural reference)
    info: dict = field(default_factory=dict)
    source: str | None = None  # where it was loaded from: the embedded name, a hub id or a path
    # how to load the same model elsewhere (a Ray worker): load_causal_lm's arguments, the spec absolute
    load_args: dict = field(default_factory=dict)

    @property
    def weights_loaded(self) -> bool:
        """Whether the weights are in memory (a deferred load's are read when a pass first needs them:
        :mod:`mia_core.models.deferred`)."""
        return True

    @property
    def memory_bytes(self) -> int:
        """The model's memory footprint in bytes (transformers' ``get_memory_footprint``); 0 when unknown."""
        try:
            return int(self.model.get_memory_footprint())
        except Exception:  # noqa: BLE001
            return 0

    @property
    def vocab_size(self) -> int:
        """Rows of the output embedding: the size of the distribution the model predicts over."""
        return int(self.model.get_output_embeddings().weight.shape[0])

    def same_tokenizer(self, other: "LoadedModel") -> bool:
        """Whether ``other`` tokenizes like this model: same vocabulary size and the same ids for a probe string
        (letters, digits, accents, symbols).

        Parameters
        ----------
        other : LoadedModel
            The other model (e.g. the reference).

        Returns
        -------
        bool
            True when per-token statistics of the two models are comparable.
        """
        a, b = self.tokenizer, other.tokenizer
        if recorded_fact(a, "len", len) != recorded_fact(b, "len", len):
            return False
        return recorded_fact(a, "probe_ids", probe_ids) == recorded_fact(b, "probe_ids", probe_ids)


TOKENIZER_PROBE = "Membership inference: 1234 naïve résumé, ~zß!"  # letters, digits, accents, symbols
_PREFIX_PROBE = "Hello world. The quick brown fox"


def probe_ids(tokenizer) -> list[int]:
    """The token ids ``tokenizer`` gives :data:`TOKENIZER_PROBE` (no special tokens): two tokenizers that agree
    here and in size tokenize alike for this tool's purposes."""
    return list(tokenizer(TOKENIZER_PROBE, add_special_tokens=False).input_ids)


def compute_tokenizer_prefix_id(tokenizer) -> int | None:
    """The token ``tokenizer`` puts in front of a text itself (``add_special_tokens=True``), read off a probe:
    a Llama-style tokenizer's BOS; None for GPT-2-style tokenizers, which add nothing; when it adds several, the
    one right before the text (:func:`mia_core.stats.settings.tokenizer_prefix_id` keeps it per tokenizer)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plain = list(tokenizer(_PREFIX_PROBE, add_special_tokens=False)["input_ids"])
            full = list(tokenizer(_PREFIX_PROBE, add_special_tokens=True)["input_ids"])
    except Exception:  # noqa: BLE001 - a tokenizer that cannot say adds nothing we know of
        return None
    for start in range(len(full) - len(plain) + 1):
        if full[start:start + len(plain)] == plain:
            return int(full[start - 1]) if start > 0 else None
    return None


def compute_prefix_token_id(tokenizer) -> int | None:
    """The BOS/EOS token ``prefix="always"`` puts in front of every text: the BOS where the tokenizer adds one,
    else ``<|endoftext|>``, ``</s>`` or ``<s>`` when it has one, else its BOS or EOS
    (:func:`mia_core.stats.settings.prefix_token_id` keeps it per tokenizer)."""
    vocab = tokenizer.get_vocab()
    if tokenizer.bos_token_id is not None and getattr(tokenizer, "add_bos_token", False):
        return tokenizer.bos_token_id
    for t in ("<|endoftext|>", "</s>", "<s>"):
        if t in vocab:
            return vocab[t]
    for tid in (tokenizer.bos_token_id, tokenizer.eos_token_id):
        if tid is not None:
            return tid
    return None


def prefix_ids(tokenizer) -> list:
    """``[tokenizer prefix id, prefix token id]``: the two prefix facts a load record keeps and checks
    (:func:`compute_tokenizer_prefix_id`, :func:`compute_prefix_token_id`)."""
    return [compute_tokenizer_prefix_id(tokenizer), compute_prefix_token_id(tokenizer)]


def recorded_fact(tokenizer, name: str, compute: Callable):
    """``compute(tokenizer)``, or what a deferred load's tokenizer has on record for it without being read
    (:class:`mia_core.models.deferred.DeferredTokenizer`'s ``recorded_facts``: its size ``"len"``, its
    ``"probe_ids"``, ``"tokenizer_prefix_id"`` and ``"prefix_token_id"``)."""
    facts = vars(tokenizer).get("recorded_facts") if hasattr(tokenizer, "__dict__") else None
    if facts and name in facts:
        return facts[name]
    return compute(tokenizer)


# transformers renamed a forward pass's key/value cache from ``past_key_values`` to ``cache`` (5.2x),
# in the forward's arguments and in its output. The old names still work there, with a warning printed in
# every run ("past_key_values/cache_params are deprecated"), and go in 5.40. These two speak to either.
@functools.lru_cache(maxsize=None)
def _cache_argument(cls: type) -> str:
    import inspect

    params = inspect.signature(cls.forward).parameters
    for name in ("cache", "past_key_values"):
        if name in params:
            return name
    from transformers.modeling_outputs import CausalLMOutputWithPast

    return "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"


def with_cache(model, cache) -> dict:
    """The keyword argument that hands ``cache`` (a transformers ``Cache``) to ``model``'s forward pass,
    under the name its forward takes (a PEFT wrapper: its base model's)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return {_cache_argument(type(base)): cache}


def returned_cache(out):
    """The key/value cache a forward pass with ``use_cache=True`` returned (None when it returned none)."""
    if "cache" in getattr(type(out), "__dataclass_fields__", ()):
        return out.cache
    return getattr(out, "past_key_values", None)


def describe(lm: LoadedModel) -> dict:
    """A JSON-able summary for reports and the dashboard."""
    return {
        "name": lm.name,
        "identity": lm.identity,
        "dtype": lm.dtype,
        "quantize": lm.quantize,
        "device": lm.device,
        "max_context": lm.max_context,
        "n_params": lm.n_params,
        "load_seconds": round(lm.load_seconds, 2),
        "memory_mb": round(lm.memory_bytes / 2**20, 1),
        "base": lm.base_spec,
        "source": lm.source,
        **({"weights_not_verified": lm.info["accepted_mismatch"]} if (lm.info or {}).get("accepted_mismatch") else {}),
    }
