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
    return {"lock": threading.Lock(), "locks": {}, "models": OrderedDict(), "steps": {}}


def model_store() -> dict:
    """The process-wide model store, for a thread outside any page (see :func:`preload_defaults`)."""
    return _store()


# The model panel's widget defaults (``dashboard.sidebar``), here so that the start-up preload
# (:func:`default_models`) reads them without importing the page code.
DEFAULTS = {
    "mp_target": "smollm2",
    "mp_target_custom": "",
    "mp_reference": "none",
    "mp_reference_custom": "",
    "mp_dtype": "auto",
    "mp_quantize": "none",
    "mp_device": "auto",
    "mp_trust": False,
}


def load_model(spec: str, dtype: str = "auto", quantize: str = "none", device: str = "auto",
               trust_remote_code: bool = False, _progress=None, _into: dict | None = None):
    """``mia_core.models.load_causal_lm`` once per (spec, dtype, quantize, device, trust_remote_code),
    shared by every page and session. ``_progress(message, fraction)`` hears the steps of a load.
    ``_into``: the store to use (a thread outside any page passes the one a page handed it)."""
    from . import warmup

    warmup.wait_imports()  # not racing the start-up warm-up's imports (dashboard.warmup.wait_imports)
    from mia_core.models import load_causal_lm

    key = (spec, dtype, quantize, device, bool(trust_remote_code))
    store = _into if _into is not None else _store()
    with store["lock"]:
        key_lock = store["locks"].setdefault(key, threading.Lock())
    tell, steps = _progress or (lambda *_: None), store["steps"]
    while not key_lock.acquire(timeout=0.5):  # another page, or the start-up preload, is loading it: its steps
        message, frac = steps.get(key, ("", 0.0))
        tell(f"already being loaded (by the server at start-up, or by another page){': ' + message if message else ''}",
             frac)

    def progress(message: str, fraction: float) -> None:
        steps[key] = (message, fraction)  # for a page that waits on this load
        tell(message, fraction)

    try:
        with store["lock"]:
            if key in store["models"]:
                store["models"].move_to_end(key)
                return store["models"][key]
        try:
            lm = load_causal_lm(spec, dtype=dtype, quantize=quantize, device=device,
                                trust_remote_code=trust_remote_code, reuse=False, progress=progress)
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
    finally:
        steps.pop(key, None)
        key_lock.release()


def loaded(spec: str | None, dtype: str = "auto", quantize: str = "none", device: str = "auto",
           trust_remote_code: bool = False):
    """The model :func:`load_model` would return for these settings if it is loaded already, else None
    (nothing is loaded: a page's time estimate reads the cache of a model only when it is there)."""
    if not spec:
        return None
    store = _store()
    with store["lock"]:
        return store["models"].get((spec, dtype, quantize, device, bool(trust_remote_code)))


def default_models() -> list[tuple]:
    """The load settings of the models the pages' defaults use first: the bundled demo's target and
    its reference (the Calibration and Document pages' default source), with the sidebar's default
    dtype, quantisation and device. Empty when the demo is not installed."""
    from mia_core.targets.demo import demo_reference, installed_demo

    demo = installed_demo()
    if not demo or not demo.get("target"):
        return []
    d = (DEFAULTS["mp_dtype"], DEFAULTS["mp_quantize"], DEFAULTS["mp_device"], bool(DEFAULTS["mp_trust"]))
    return [(str(demo["target"]), *d), (demo_reference(demo), d[0], "none", d[2], d[3])]


def preload_defaults(store: dict) -> None:
    """Load :func:`default_models` into ``store`` (called by the server's start-up warm-up thread,
    :func:`warm_defaults`), their weights read too: a load that an earlier one recorded defers them until a
    pass needs them (:mod:`mia_core.models.deferred`), and the warm-up is there to spare the first Run that
    wait. A failure is left for the page's own load to report."""
    for settings in default_models():
        try:
            load_model(*settings, _into=store).model  # noqa: B018 - read a deferred model's weights now
        except Exception:  # noqa: BLE001 - a preload only
            pass


def measure_default_speed(store: dict) -> None:
    """This machine's speed for the demo target, measured once (``mia_core.api.plan.measure_speed``: about 600
    tokens of the demo's population texts after an untimed first one, no cache written), so that the pages' first
    estimate uses it instead of an assumed speed. Skipped when that model's speed was measured here before, or
    when the demo target is not in ``store``; a failure is ignored (the first run measures the speed anyway)."""
    try:
        from mia_core.api.plan import measure_speed
        from mia_core.targets.demo import installed_demo

        models = default_models()
        with store["lock"]:
            lm = store["models"].get(models[0]) if models else None
        if lm is None:
            return
        demo = installed_demo() or {}
        path = demo.get("population") or demo.get("nonmembers")
        measure_speed(lm, path.read_text(encoding="utf-8").splitlines() if path else [])
    except Exception:  # noqa: BLE001 - a warm-up only
        return


def warm_defaults(store: dict) -> None:
    """What the server's start-up warm-up does once the model libraries are imported (``app.py`` hands it to
    :func:`dashboard.warmup.start`): :func:`preload_defaults` into ``store``, then
    :func:`measure_default_speed`."""
    preload_defaults(store)
    measure_default_speed(store)


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


@st.cache_data(show_spinner=False, max_entries=8)
def token_counts(model_identity: str, corpus_key: str, _tokenizer, _texts: tuple[str, ...], vocab_size: int) -> np.ndarray:
    """Token counts of a reference corpus under a model's tokenizer, one per id below ``vocab_size``
    (``mia_core.stats.token_frequency.count_tokens``, DC-PDD's counter; cached by model and corpus hash)."""
    from mia_core.stats.token_frequency import count_tokens

    counts = count_tokens(_tokenizer, list(_texts))[:vocab_size]
    return np.pad(counts, (0, vocab_size - len(counts)))


def corpus_key(texts) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:20]
