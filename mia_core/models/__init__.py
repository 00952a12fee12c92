"""Loading the models an audit runs: causal LMs, masked LMs, sentence embedders, T5.

Which module holds what:

* ``hub`` — what every loader shares: which user strings are paths and which are hub ids
  (:func:`locate`), the offline flag (:func:`hub_offline`), the quick check before a hub
  download (:func:`hub_local_only`, :func:`hub_reachable`), cache identities
  (:func:`identity`, :func:`file_fingerprint`, :func:`folder_fingerprint`), loading errors
  as one-line ``ModelError`` (:func:`load_error`) and the load-once registry (:class:`LoadOnce`).
* ``device`` — ``device="auto"``, the check that a device exists (:func:`resolve_device`) and the dtypes (:data:`DTYPES`, :func:`resolve_dtype`).
* ``causal`` — :func:`load_causal_lm` -> :class:`LoadedModel`, the models the statistics pass
  (``mia_core.stats``) runs: embedded SmolLM2 GGUF, GGUF files, fine-tuned targets, local
  folders, hub ids; int8/int4 quantisation.
* ``gguf`` — GGUF files converted once to safetensors folders under the cache root
  (:func:`converted_gguf_dir`; safe for several processes at once).
* ``loaded`` — :class:`LoadedModel` (a causal LM with its tokenizer and what the engine needs to
  know about it), :func:`describe`, and the forward pass's key/value-cache argument
  (:func:`with_cache`, :func:`returned_cache`).
* ``masked`` — :func:`load_masked_lm` -> :class:`MaskedLM` (Mireshghallah et al. 2022's audit
  in ``mia_core.mlm``; masked-LM neighbours of Mattern et al. 2023).
* ``embedder`` — :func:`load_embedder` -> :class:`Embedder` (sentence-transformers, SMIA's
  semantic embeddings; the embedded all-MiniLM-L6-v2 by default).
* ``seq2seq`` — :func:`load_seq2seq` -> :class:`Seq2SeqLM` (T5 span-filling neighbours).

Spec forms a user may give
    ``None`` / ``"smollm2"`` (causal) or ``"minilm"`` (embedder): the model shipped in a
    PyPI wheel; a local folder (``config.json``; for causal LMs also a ``make-target``
    folder holding ``mia_target.json``, or a folder with a ``.gguf``); a ``.gguf`` file
    (causal only); otherwise a hub id (``name`` or ``org/name``). A string that can only be
    a path (``./``, ``/``, ``~``, several ``/``) but names nothing is an error, never a hub
    look-up.

Offline
    With ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) set to 1/on/yes/true, any case, hub
    ids load only from the local Hugging Face cache; local folders and files never contact
    the hub. Not offline, one quick reachability check comes first: an unreachable hub means
    the cached copy, or a ``ModelError`` in seconds when there is none.

Identity (cache keys: statistics, energies, embeddings, neighbours)
    Local folders and files: ``local:`` / ``gguf:`` / ``target:`` + a content fingerprint;
    hub models: ``hub:<id>@<revision>`` (the commit transformers resolved, ``unknown`` when
    not recorded), so caches do not survive a model update. Causal LMs add ``|dtype|quantize``,
    masked LMs ``|dtype``.

``trust_remote_code`` is off unless the caller turns it on. Every loader checks the device
first (``SettingsError`` for one the machine lacks) and raises ``ModelError`` with a one-line
reason for models it cannot find or load (corrupt ``.safetensors``, a ``.bin`` that would run
code, bad JSON...).
"""
from .causal import (
    EMBEDDED_NAME,
    EMBEDDED_PACKAGE,
    QUANTIZE,
    TARGET_MARKER,
    ModelSpec,
    embedded_gguf_path,
    forget_loaded,
    load_causal_lm,
    resolve_spec,
)
from .device import DTYPES, default_device, resolve_device, resolve_dtype, torch_dtype
from .embedder import Embedder, embedded_embedder_path, load_embedder
from .gguf import converted_gguf_dir
from .hub import (
    LoadOnce,
    Location,
    file_fingerprint,
    folder_fingerprint,
    hub_local_only,
    hub_offline,
    hub_reachable,
    hub_revision,
    identity,
    load_error,
    locate,
)
from .loaded import LoadedModel, describe, returned_cache, with_cache
from .masked import MaskedLM, load_masked_lm
from .seq2seq import Seq2SeqLM, load_seq2seq

__all__ = [
    "DTYPES", "EMBEDDED_NAME", "EMBEDDED_PACKAGE", "QUANTIZE", "TARGET_MARKER", "Embedder", "LoadOnce",
    "LoadedModel", "Location", "MaskedLM", "ModelSpec", "Seq2SeqLM", "converted_gguf_dir", "default_device",
    "describe", "embedded_embedder_path", "embedded_gguf_path", "file_fingerprint", "folder_fingerprint",
    "forget_loaded", "hub_local_only", "hub_offline", "hub_reachable", "hub_revision", "identity", "load_causal_lm", "load_embedder", "load_error",
    "load_masked_lm", "load_seq2seq", "locate", "resolve_device", "resolve_dtype", "resolve_spec", "returned_cache", "torch_dtype",
    "with_cache",
]
