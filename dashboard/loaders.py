"""Cached loaders: a model is loaded once per setting and shared by every page and session.

One process-wide store (``st.cache_resource``) owns the loaded models (``mia_core``'s own
in-process cache is bypassed with ``reuse=False`` so that this store alone decides their lifetime). A failed load raises
``MiaError`` (not cached, so the next try loads again); the sidebar shows its message.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np
import streamlit as st

from mia_core.errors import ModelError, MiaError


MAX_MODELS = 4  # models kept loaded in this process (the least recently used goes first)


@st.cache_resource(show_spinner=False)
def _store() -> dict:
    """The process-wide model store: loaded models by settings, and one lock per settings (so that
    sessions asking for the same model at once load it once). Not ``st.cache_resource`` on the
    loader itself, because a cached function may not draw: the loader reports its steps to a
    progress bar of the page that asked."""
    return {"lock": threading.Lock(), "locks": {}, "models": OrderedDict()}


def load_model(spec: str, dtype: str = "auto", quantize: str = "none", device: str = "auto",
               trust_remote_code: bool = False, _progress=None):
    """``mia_core.models.load_causal_lm`` once per (spec, dtype, quantize, device, trust_remote_code),
    shared by every page and session. ``_progress(message, fraction)`` hears the steps of a load."""
    from mia_core.models import load_causal_lm
    from mia_core.progress import noop

    key = (spec, dtype, quantize, device, bool(trust_remote_code))
    store = _store()
    with store["lock"]:
        key_lock = store["locks"].setdefault(key, threading.Lock())
    with key_lock:
        with store["lock"]:
            if key in store["models"]:
                store["models"].move_to_end(key)
                return store["models"][key]
        try:
            lm = load_causal_lm(spec, dtype=dtype, quantize=quantize, device=device,
                                trust_remote_code=trust_remote_code, reuse=False, progress=_progress or noop)
        except MiaError:
            raise
        except Exception as e:  # noqa: BLE001 - anything else from transformers/bitsandbytes: one clear line
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise ModelError(f"could not load {spec}: {first}") from e
        with store["lock"]:
            store["models"][key] = lm
            while len(store["models"]) > MAX_MODELS:
                store["models"].popitem(last=False)
        return lm


def load_with_progress(spec: str, dtype: str = "auto", quantize: str = "none", device: str = "auto",
                       trust_remote_code: bool = False, *, where=None, label: str = "Loading"):
    """:func:`load_model` with a progress bar in ``where`` (a container; default the main area)
    that names each step of a first load (a GGUF's one-time conversion: tokenizer, weights, saving;
    the base model; an adapter) and disappears when the model is there. A model already loaded
    shows nothing."""
    slot = (where or st).empty()
    shown = {"bar": None}

    def progress(message: str, fraction: float) -> None:
        text = f"{label} {spec}: {message}"[:200]
        frac = max(0.0, min(1.0, float(fraction)))
        if shown["bar"] is None:
            shown["bar"] = slot.progress(frac, text=text)
        else:
            shown["bar"].progress(frac, text=text)

    try:
        return load_model(spec, dtype, quantize, device, trust_remote_code, _progress=progress)
    finally:
        slot.empty()


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
