"""Weights read when a pass first needs them: a load that finds every figure it would compute already on record
(from an earlier load of the same files with the same settings, which read and verified the weights) hands back
the tokenizer and those figures, and reads the weights only when a pass asks for ``lm.model``.

Why: a re-run whose statistics are all cached needs no weight. Reading them (and importing transformers' modelling
code to do it) was most of such a run's start-up: about 4 s of a cached ``mia run --demo``'s 11 s on a 2-core CPU.

What a deferred load checks, instead of reading the weights (:func:`files_digest`, about 30 ms for the demo's two
models): the weight files it would read hold the same bytes, where sampled, as the files the recorded load read and
verified. The sample is the safetensors header of every file (every tensor's name, dtype, shape and place), the first
and the last row of every tensor (up to 64 KiB each), and 253 evenly spaced elements of every tensor: the rows the
full load reads back against the files, and every element its weight fingerprint samples
(:func:`~mia_core.models.verify.weight_fingerprint`, 64 per tensor) among others. Any difference there, a file
missing or added, or a record that does not read back exactly, and the load reads the weights as before (and
records again).

The record (cache namespace ``loads``, :data:`LOADS_NAMESPACE`) is keyed by everything the full load's result depends
on: the source's identity (the GGUF file's, the folder's; a ``make-target`` folder's and its base's, and its method),
the dtype, the quantisation, the device, and the versions of this package, torch, transformers, peft and safetensors.
Only loads whose weights come from local safetensors files are deferred: not hub ids (their revision is only known
from the loaded config), quantised loads, models running their own code, accelerate's placement, or loads that
accepted a weight mismatch.

When a pass first touches ``lm.model``, the model is loaded in full, verified as any load is (the loading report,
rows read back against the files, a shipped model's known sentence), and its identity must be the one the run has
been using for its cache keys: if not (the files changed in between), the pass stops with a one-line
``ModelError`` and the next run reads the weights afresh.
"""
from __future__ import annotations

import hashlib
import json
import mmap
import os
import threading
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ModelError, SettingsError
from .loaded import LoadedModel, probe_ids
from .merged import _version

LOADS_NAMESPACE = "loads"  # the cache's folder of load records (``mia_core.cache.store.NAMESPACES``)
RECORD_VERSION = 1  # bump when what a record holds, or how a load computes it, changes
_RECORD_KEY = "0" * 32  # one record per settings folder (the settings are the key)
_RECORD_ARRAY = "record"
_ROW_BYTES = 1 << 16  # at most this much of a tensor's first and last rows enters the digest
_ELEMENTS = 253  # evenly spaced elements of every tensor in the digest: 4 x 63 + 1, so the 64 the weight
# fingerprint samples (``verify._sample``: element i (n-1) // 63) are among them

# bytes per element of the safetensors dtypes
_ITEMSIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I64": 8, "I32": 4, "I16": 2,
             "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1}


def record_settings(sources: dict, dtype: str, quantize: str, device: str) -> dict:
    """The key of a load's record: the sources' identities (``sources``), the load's settings and the versions of
    the code that loads."""
    import torch

    from ..version import __version__

    return {"record": RECORD_VERSION, "sources": sources, "dtype": dtype, "quantize": quantize, "device": device,
            "mia": __version__, "torch": torch.__version__, "transformers": _version("transformers"),
            "peft": _version("peft"), "safetensors": _version("safetensors")}


def files_digest(files: list[Path]) -> str | None:
    """16 hex digits over the weight files' names, sizes, safetensors headers, the first and last rows of every
    tensor and :data:`_ELEMENTS` evenly spaced elements of it. None when a file cannot be read as safetensors."""
    h = hashlib.sha256()
    try:
        for f in files:
            f = Path(f)
            size = f.stat().st_size
            h.update(f"{f.name}:{size}:".encode())
            with open(f, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
                n = int.from_bytes(m[:8], "little")
                if n <= 0 or 8 + n > size:
                    return None
                header = m[8:8 + n]
                h.update(header)
                meta = json.loads(header)
                buf = np.frombuffer(m, dtype=np.uint8)
                try:
                    picks = []
                    for name in sorted(k for k in meta if k != "__metadata__"):
                        t = meta[name]
                        item = _ITEMSIZE.get(t["dtype"])
                        a, b = (8 + n + int(x) for x in t["data_offsets"])
                        if item is None or b > size or a > b:
                            return None
                        nbytes, shape = b - a, t["shape"]
                        row = min(nbytes // shape[0] if shape and shape[0] else nbytes, _ROW_BYTES)
                        h.update(m[a:a + row])
                        h.update(m[b - row:b])
                        count = nbytes // item
                        if count:  # the weight fingerprint's formula: its 64 elements are among these
                            k = min(_ELEMENTS, count)
                            first = a + (np.arange(k, dtype=np.int64) * (count - 1) // max(1, k - 1)) * item
                            picks.append((first[:, None] + np.arange(item)).ravel())
                    if picks:
                        h.update(buf[np.concatenate(picks)].tobytes())
                finally:
                    del buf
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    return h.hexdigest()[:16]


def _store(settings: dict):
    from ..cache.store import ArrayCache

    return ArrayCache(LOADS_NAMESPACE, settings)


_FIELDS = {"identity": str, "name": str, "dtype": str, "quantize": str, "device": str, "max_context": int,
           "n_params": int, "vocab_size": int, "memory_bytes": int, "info": dict, "tok_src": str, "files": list,
           "digest": str, "time": float, "tokenizer_len": int, "probe_ids": list}


def find_record(settings: dict, roots: list[Path]) -> dict | None:
    """The record of an earlier load with these settings whose weight files lie under one of ``roots`` (the
    source's folder, the cache's converted copies) and still match it (:func:`files_digest`), or None (none,
    unreadable, files elsewhere, or the files differ)."""
    try:
        store = _store(settings)
    except SettingsError:
        return None
    got = {}

    def check(arrays: dict) -> str | None:
        try:
            rec = json.loads(str(arrays[_RECORD_ARRAY][()]))
        except (KeyError, ValueError, TypeError):
            return "not a load record"
        if not isinstance(rec, dict) or any(not isinstance(rec.get(k), t) for k, t in _FIELDS.items() if k != "time"):
            return "not a load record"
        got["rec"] = rec
        return None

    if store.get(_RECORD_KEY, check) is None:
        return None
    rec = got["rec"]
    files = [Path(f) for f in rec["files"]]
    under = [os.path.join(os.path.abspath(r), "") for r in roots]
    if not all(isinstance(f, str) and os.path.abspath(f).startswith(tuple(under)) for f in rec["files"]):
        return None  # a record this load did not write: its files are not this source's
    if not files or files_digest(files) != rec["digest"]:
        return None
    return rec


def save_record(settings: dict, lm: LoadedModel, files: list[Path], tok_src: str) -> None:
    """Keep what a full load found (``lm``: its identity, sizes, record of checks), the weight files it read with
    their digest, and where its tokenizer came from. A cache that cannot take it only means the next load reads
    the weights too."""
    digest = files_digest(files) if files else None
    if digest is None:
        return
    import transformers

    tok = lm.tokenizer
    cls = type(tok).__name__
    rec = {"tokenizer_class": cls if getattr(transformers, cls, None) is type(tok) else None,
           "tokenizer_len": len(tok), "probe_ids": probe_ids(tok),
           "identity": lm.identity, "name": lm.name, "dtype": lm.dtype, "quantize": lm.quantize, "device": lm.device,
           "max_context": int(lm.max_context), "n_params": int(lm.n_params), "vocab_size": int(lm.vocab_size),
           "memory_bytes": int(lm.memory_bytes), "base_spec": lm.base_spec, "source": lm.source,
           "info": lm.info, "tok_src": str(tok_src), "files": [os.path.abspath(f) for f in files],
           "digest": digest, "time": time.time()}
    try:
        blob = json.dumps(rec)
        _store(settings).put(_RECORD_KEY, {_RECORD_ARRAY: np.array(blob)})
    except (SettingsError, TypeError, ValueError, OSError):
        return


def read_tokenizer(rec: dict):
    """The tokenizer of a recorded load, read from the same folder: with the class the load's ``AutoTokenizer``
    chose, when that is one of transformers' own (``AutoTokenizer`` reads the model's config to choose it, which
    imports transformers' modelling code: about 1.5 s), else with ``AutoTokenizer``; with the padding token the
    load set. None (read the model in full) unless it has the recorded size and tokenizes the probe as recorded."""
    import transformers

    cls = getattr(transformers, rec.get("tokenizer_class") or "", None)
    if not (isinstance(cls, type) and issubclass(cls, transformers.PreTrainedTokenizerBase)):
        cls = transformers.AutoTokenizer
    tok = cls.from_pretrained(rec["tok_src"], local_files_only=True, _from_auto=True)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token or tok.unk_token
    return tok if len(tok) == rec["tokenizer_len"] and probe_ids(tok) == rec["probe_ids"] else None


class DeferredLoadedModel(LoadedModel):
    """A :class:`LoadedModel` whose ``model`` is read on first use (``full_load()``, verified, and required to
    have the identity the record gave). ``weights_loaded`` says whether it has been."""

    def __init__(self, *, full_load: Callable[[], LoadedModel], recorded: dict, **fields):
        self._model = None
        self._full_load = full_load
        self._recorded = recorded
        self._lock = threading.Lock()
        super().__init__(model=None, **fields)

    @property
    def model(self):  # type: ignore[override]
        """The transformers model: read (in full, verified) the first time it is asked for."""
        if self._model is None:
            self._materialise()
        return self._model

    @model.setter
    def model(self, value) -> None:
        """Set the model (the dataclass's ``__init__`` sets None: not read yet)."""
        self._model = value

    @property
    def weights_loaded(self) -> bool:
        """Whether the weights have been read (a pass has asked for ``model``)."""
        return self._model is not None

    def _materialise(self) -> None:
        from .hub import model_load_lock

        with model_load_lock(), self._lock:
            if self._model is not None:
                return
            t0 = time.time()
            full = self._full_load()
            if full.identity != self.identity:
                raise ModelError(
                    f"the weights of {self.name} changed while this run was using them (their identity is now "
                    f"{full.identity.rsplit('|', 1)[-1]}, not {self.identity.rsplit('|', 1)[-1]}): run it again")
            self.info.update(full.info)
            self.info["weights_read"] = "when a pass first needed them"
            self.load_seconds += time.time() - t0
            self._model = full.model

    @property
    def vocab_size(self) -> int:  # type: ignore[override]
        """Rows of the output embedding: the record's until the weights are read."""
        return int(self._recorded["vocab_size"]) if self._model is None else super().vocab_size

    @property
    def memory_bytes(self) -> int:  # type: ignore[override]
        """The model's memory footprint as the recorded load measured it, until the weights are read."""
        return int(self._recorded["memory_bytes"]) if self._model is None else super().memory_bytes

    def __repr__(self) -> str:  # the dataclass's would read the weights
        return f"DeferredLoadedModel(name={self.name!r}, identity={self.identity!r}, loaded={self.weights_loaded})"

    __eq__ = object.__eq__
    __hash__ = object.__hash__
