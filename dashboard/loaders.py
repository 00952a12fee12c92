"""Cached loaders: a model is loaded once per setting and shared by every page and session.

``st.cache_resource`` owns the loaded models (``mia_core``'s own in-process cache is bypassed
with ``reuse=False`` so that Streamlit's cache alone decides their lifetime). A failed load raises
``MiaError`` (not cached, so the next try loads again); the sidebar shows its message.
"""
from __future__ import annotations

import hashlib

import numpy as np
import streamlit as st

from mia_core.errors import ModelError, MiaError


@st.cache_resource(show_spinner=False, max_entries=4)
def load_model(spec: str, dtype: str = "auto", quantize: str = "none", device: str = "auto",
               trust_remote_code: bool = False):
    """``mia_core.models.load_causal_lm`` once per (spec, dtype, quantize, device, trust_remote_code)."""
    from mia_core.models import load_causal_lm

    try:
        return load_causal_lm(spec, dtype=dtype, quantize=quantize, device=device,
                              trust_remote_code=trust_remote_code, reuse=False)
    except MiaError:
        raise
    except Exception as e:  # noqa: BLE001 - anything else from transformers/bitsandbytes: one clear line
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ModelError(f"could not load {spec}: {first}") from e


def _corpus_counts(tokenizer, texts: list[str], vocab_size: int) -> np.ndarray:
    counts = np.zeros(vocab_size, dtype=np.int64)
    for t in texts:
        for start in range(0, len(t), 200_000):  # tokenise big corpora in slices
            ids = tokenizer(t[start:start + 200_000], add_special_tokens=False, verbose=False)["input_ids"]
            if ids:
                counts += np.bincount(np.asarray(ids, dtype=np.int64), minlength=vocab_size)[:vocab_size]
    return counts


@st.cache_data(show_spinner=False, max_entries=8)
def token_counts(model_identity: str, corpus_key: str, _tokenizer, _texts: tuple[str, ...], vocab_size: int) -> np.ndarray:
    """Token counts of a reference corpus under a model's tokenizer (cached by model and corpus hash)."""
    return _corpus_counts(_tokenizer, list(_texts), vocab_size)


def corpus_key(texts) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:20]
