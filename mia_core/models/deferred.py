"""Weights read when a pass first needs them: a load that finds every figure it would compute already on record
(from an earlier load of the same files with the same settings, which read and verified the weights) hands back
the tokenizer and those figures, and reads the weights only when a pass asks for ``lm.model``.

Why: a re-run whose statistics are all cached needs no weight. Reading them (and importing transformers' modelling
code to do it) was most of such a run's start-up: about 4 s of a cached ``mia run --demo``'s 11 s on a 2-core CPU;
importing torch and transformers at all was about 3.5 s of what was left (issue 70): such a run imports neither.

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
the dtype, the quantisation, the device, and the versions of this package, torch (read from its build, without
importing it), transformers, peft, safetensors and tokenizers.
Only loads whose weights come from local safetensors files are deferred: not hub ids (their revision is only known
from the loaded config), quantised loads, models running their own code, accelerate's placement, or loads that
accepted a weight mismatch.

A record is a cache entry like any other (a cache folder is copied between machines, restored from a backup,
shared): nothing a score depends on is read from it (:func:`find_record`). The model's identity is the source's
identity, the settings, and a weight fingerprint read from the weight files themselves (:func:`plan_fingerprint`:
the same 64 elements of every tensor, cast as the load casts, that :func:`~mia_core.models.verify.weight_fingerprint`
reads from the weights in memory; the record only says which tensor of the files each one is). The tokenizer is read
from the model's own folder (a GGUF's converted copy; a target's, else its base's) and its files must be the ones
the recorded load read (:func:`tokenizer_digest`); where transformers tokenizes with exactly that folder's
``tokenizer.json``, it is read through the ``tokenizers`` library alone until more than ids is asked of it
(:class:`DeferredTokenizer`, which names the one fact it takes from the record, checked once transformers'
tokenizer is read); the context length and vocabulary size come from the model's
``config.json`` by the load's rules, the device from the settings, the name, source and a target's base, method and
training prefix from its folder. The weight files must be the source's own (a target's merged copy: a folder of
the cache's ``models/``) and exactly that folder's checkpoint. Every field is checked for type and range
(:data:`_CHECKS`); the fields kept as written (the parameter count, the memory footprint, the words of the check,
the known sentence's loss, the time) enter no score. A record that fails any of this is not used: the load reads
the weights, with a one-line note saying why.

What this does not bind: a weight file changed where neither digest samples (the same limit as the in-memory
fingerprint), and a converted GGUF copy or merged copy replaced whole by other weights: the identity is then that
of the weights actually in the files (never another model's cached scores), and a full load reads the same files.

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
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import ModelError, SettingsError
from .deferred_tokenizer import (DeferredTokenizer, FileTokenizer, backend_is_file, file_backend, file_facts_differ,
                                 read_tokenizer, tokenizer_digest)
from .loaded import LoadedModel, prefix_ids, probe_ids
from .merged import _version

LOADS_NAMESPACE = "loads"  # the cache's folder of load records (``mia_core.cache.store.NAMESPACES``)
RECORD_VERSION = 3  # bump when what a record holds, or how a load computes it, changes (2: nothing a score
# depends on is read from it, issue 50; 3: the tokenizer's prefix tokens, so that it is read only when used)
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
    the code that loads (torch's read from its build, without importing it: :func:`~.device.torch_version`)."""
    from ..version import __version__
    from .device import torch_version

    return {"record": RECORD_VERSION, "sources": sources, "dtype": dtype, "quantize": quantize, "device": device,
            "mia": __version__, "torch": torch_version(), "transformers": _version("transformers"),
            "peft": _version("peft"), "safetensors": _version("safetensors"), "tokenizers": _version("tokenizers")}


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


# --------------------------------------------------------------------------- what a load derives, not reads

_TORCH_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
                 "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool"}
_SAMPLES = 64  # the weight fingerprint's elements per tensor (``verify.SAMPLES_PER_TENSOR``)
def config_figures(folder: Path, tok) -> dict | None:
    """The context length and vocabulary size a model's ``config.json`` in ``folder`` declares, by the load's own
    rules (``causal._max_context``: the first of ``max_position_embeddings``, ``n_positions``,
    ``max_sequence_length``, ``seq_length``, else the tokenizer's ``model_max_length`` when plausible, else 1024;
    ``vocab_size``, or its ``text_config``'s). None when the file cannot be read or names no vocabulary size."""
    try:
        cfg = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(cfg, dict):
        return None

    def positive(v) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v > 0

    context = next((cfg[k] for k in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
                    if positive(cfg.get(k))), None)
    if context is None:
        v = getattr(tok, "model_max_length", None)
        context = v if isinstance(v, int) and 0 < v < 10**7 else 1024
    vocab = cfg.get("vocab_size")
    if not positive(vocab) and isinstance(cfg.get("text_config"), dict):
        vocab = cfg["text_config"].get("vocab_size")
    return {"max_context": context, "vocab_size": vocab} if positive(vocab) else None


def _tensors(files: list[Path]) -> dict | None:
    """Every tensor of the safetensors ``files``: name -> (file, absolute offset, safetensors dtype, shape,
    bytes). None when a file cannot be read as safetensors."""
    from .verify import safetensors_header

    out = {}
    for f in files:
        header = safetensors_header(Path(f))
        if header is None:
            return None
        try:
            with open(f, "rb") as fh:
                start = 8 + int.from_bytes(fh.read(8), "little")
            size = Path(f).stat().st_size
            for name, t in header.items():
                if name == "__metadata__":
                    continue
                a, b = (int(x) for x in t["data_offsets"])
                shape = [int(d) for d in t["shape"]]
                if t["dtype"] not in _TORCH_DTYPES or start + b > size or a > b or min(shape, default=0) < 0:
                    return None
                out[name] = (Path(f), start + a, t["dtype"], shape, b - a)
        except (OSError, ValueError, KeyError, TypeError):
            return None
    return out


def _file_sample(tensor: tuple, dtype: str) -> bytes | None:
    """The bytes :func:`~mia_core.models.verify.weight_fingerprint` reads of this file tensor once loaded in
    ``dtype`` (a torch dtype's name): its 64 evenly spaced elements, cast as the load casts (:func:`_cast`)."""
    f, offset, kind, shape, nbytes = tensor
    item = _ITEMSIZE[kind]
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if count * item != nbytes:
        return None
    if count == 0:
        return b""
    k = min(count, _SAMPLES)
    idx = (np.arange(k, dtype=np.int64) * (count - 1)) // max(1, k - 1)
    with open(f, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
        buf = np.frombuffer(m, dtype=np.uint8)
        try:
            raw = buf[(offset + idx * item)[:, None] + np.arange(item)].tobytes()
        finally:
            del buf
    return _cast(raw, kind, dtype)


def _cast(raw: bytes, kind: str, dtype: str) -> bytes | None:
    """``raw`` (elements of the safetensors dtype ``kind``, little-endian) as torch casts them to ``dtype`` (a
    torch dtype's name), in bytes. The casts that change no bit (the same dtype) or only widen (bf16 or fp16 to
    fp32: exact, by the bits for bf16; fp16 without a NaN, whose payload numpy might not keep as torch does) are
    done with numpy, so that a deferred load of fp32, bf16 or fp16 weights imports no torch; any other with
    torch."""
    if _TORCH_DTYPES[kind] == dtype:
        return raw
    if dtype == "float32" and kind == "BF16":
        return (np.frombuffer(raw, dtype="<u2").astype("<u4") << 16).tobytes()
    if dtype == "float32" and kind == "F16":
        half = np.frombuffer(raw, dtype="<f2")
        if not np.isnan(half).any():
            return half.astype("<f4").tobytes()
    import torch

    target = getattr(torch, dtype, None)
    if not isinstance(target, torch.dtype):
        return None
    values = torch.frombuffer(bytearray(raw), dtype=getattr(torch, _TORCH_DTYPES[kind])).to(target)
    return values.contiguous().view(-1).view(torch.uint8).numpy().tobytes() if values.element_size() else b""


def weight_plan(model, files: list[Path]) -> list | None:
    """How the model's weight fingerprint is read from its files: for every tensor the fingerprint reads (by
    name), ``[name, shape, dtype, ""]`` where the files hold it under that name (its sample is read from them),
    else ``[name, shape, dtype, hex of its sampled bytes]`` (a buffer computed from the config, such as rotary
    frequencies). None unless the plan reproduces the model's fingerprint from the files (a load that casts in
    another way, a tensor on the meta device): that model's loads are not deferred."""
    from .verify import _sample, _unique_tensors, weight_fingerprint

    tensors = _tensors(files)
    if tensors is None:
        return None
    plan = []
    for n, t in sorted(_unique_tensors(model), key=lambda x: x[0]):
        if t.device.type == "meta":
            return None
        dtype = str(t.dtype).removeprefix("torch.")
        if n in tensors and tensors[n][3] == list(t.shape):
            plan.append([n, list(t.shape), dtype, ""])
        else:
            s = _sample(t)
            raw = s.contiguous().view(-1).view(__import__("torch").uint8).numpy().tobytes() if s.element_size() else b""
            plan.append([n, list(t.shape), dtype, raw.hex()])
    return plan if plan_fingerprint(plan, files) == weight_fingerprint(model) else None


def plan_fingerprint(plan: list, files: list[Path]) -> str | None:
    """The weight fingerprint (:func:`~mia_core.models.verify.weight_fingerprint`) of the model ``files`` load
    into, read from the files by ``plan`` (:func:`weight_plan`), without loading it. None when the plan does not
    fit the files (a tensor missing, of another shape, a file unreadable)."""
    tensors = _tensors(files)
    if tensors is None:
        return None
    h = hashlib.sha256()
    try:
        for name, shape, dtype, own in plan:
            h.update(f"{name}:{tuple(shape)}:torch.{dtype}:".encode())
            if own:
                h.update(bytes.fromhex(own))
            else:
                t = tensors.get(name)
                if t is None or t[3] != list(shape):
                    return None
                sample = _file_sample(t, dtype)
                if sample is None:
                    return None
                h.update(sample)
            h.update(b";")
    except (OSError, ValueError, TypeError, IndexError):
        return None
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------- the record

def _is_int(v, low: int = 0, high: int = 2**62) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


def _is_plan(v) -> bool:
    return isinstance(v, list) and 0 < len(v) <= 10**6 and all(
        isinstance(e, list) and len(e) == 4 and isinstance(e[0], str) and isinstance(e[1], list)
        and all(_is_int(d) for d in e[1]) and e[2] in _TORCH_DTYPES.values() and isinstance(e[3], str)
        and len(e[3]) <= 2 * 8 * _SAMPLES and all(c in "0123456789abcdef" for c in e[3]) for e in v)


# every field of a record and what it must be: anything else (a field missing, added, of another type or out of
# range) is a record this version did not write, and the load reads the weights
_CHECKS: dict[str, Callable[[object], bool]] = {
    "record": lambda v: v == RECORD_VERSION,
    "tokenizer_class": lambda v: v is None or (isinstance(v, str) and v.isidentifier()),
    "tokenizer_len": lambda v: _is_int(v, 1, 10**7),
    "probe_ids": lambda v: isinstance(v, list) and len(v) <= 1000 and all(_is_int(i, 0, 10**7) for i in v),
    "backend_is_file": lambda v: isinstance(v, bool),
    "prefix_ids": lambda v: isinstance(v, list) and len(v) == 2 and all(i is None or _is_int(i, 0, 10**7) for i in v),
    "tokenizer_digest": lambda v: isinstance(v, str) and len(v) == 16,
    "plan": _is_plan,
    "n_params": lambda v: _is_int(v, 1),
    "memory_bytes": lambda v: _is_int(v),
    "weights": lambda v: isinstance(v, str) and len(v) <= 2000,
    "known_sentence_loss": lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)
                                                   and np.isfinite(v)),
    "files": lambda v: isinstance(v, list) and 0 < len(v) <= 10**4 and all(isinstance(f, str) for f in v),
    "digest": lambda v: isinstance(v, str) and len(v) == 16,
    "time": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)
    and 0 <= v <= time.time() + 86400,
}


@dataclass(frozen=True)
class Source:
    """What a deferred load derives from the source and the settings, never from a record: the folder its
    tokenizer is read from and the folder its weight files must be in (the model's own; a GGUF's converted copy, a
    LoRA target's merged copy under the cache's ``models/``)."""

    tok_src: Path
    weights_dir: Path


@dataclass(frozen=True)
class Recorded:
    """A record that verified: the weight fingerprint read from the files by its plan, the figures derived from
    the files (``max_context``, ``vocab_size``), the tokenizer read from its own folder, and the record's fields
    that no score depends on (checked for type and range: ``n_params``, ``memory_bytes``, ``weights``,
    ``known_sentence_loss``, ``time``)."""

    fingerprint: str
    tokenizer: object
    max_context: int
    vocab_size: int
    fields: dict


def _weights_folder(files: list[str], source: Source) -> str | None:
    """Why the record's weight files are not this source's (None: they are): they must be exactly the checkpoint
    files of the source's own weights folder."""
    from .verify import checkpoint_files

    paths = sorted(Path(os.path.abspath(f)) for f in files)
    if {p.parent for p in paths} != {Path(os.path.abspath(source.weights_dir))}:
        return "its weight files are not the model's own"
    if paths != sorted(Path(os.path.abspath(f)) for f in checkpoint_files(str(source.weights_dir))):
        return "its weight files are not the folder's checkpoint"
    return None


def find_record(settings: dict, source: Source) -> Recorded | str | None:
    """The verified record of an earlier load with these settings (:class:`Recorded`); None when there is none;
    else why the one there is not used (damaged, foreign, or its files changed), for a one-line note.

    Nothing a score depends on is read from the record: the identity's weight fingerprint is read from the weight
    files (:func:`plan_fingerprint`), the tokenizer from the source's own folder (whose files must be those the
    recorded load read, :func:`tokenizer_digest`), the context length and vocabulary size from its
    ``config.json`` (:func:`config_figures`), the device from the settings."""
    try:
        store = _store(settings)
    except SettingsError:
        return None
    got: dict = {}

    def check(arrays: dict) -> None:  # the verdict is the load's note, not the store's
        try:
            rec = json.loads(str(arrays[_RECORD_ARRAY][()]))
        except (KeyError, ValueError, TypeError, IndexError):
            got["why"] = "not a load record"
            return None
        if not isinstance(rec, dict) or set(rec) != set(_CHECKS):
            got["why"] = "not a load record of this version"
            return None
        bad = sorted(k for k, ok in _CHECKS.items() if not ok(rec[k]))
        got["why" if bad else "rec"] = f"damaged ({', '.join(bad)})" if bad else rec
        return None

    rejected = len(store.rejected)
    if store.get(_RECORD_KEY, check) is None:
        return store.rejected[-1][1] if len(store.rejected) > rejected else None
    if "rec" not in got:
        return got.get("why", "not a load record")
    rec = got["rec"]
    why = _weights_folder(rec["files"], source)
    if why:
        return why
    files = [Path(f) for f in rec["files"]]
    if files_digest(files) != rec["digest"]:
        return "the weight files changed since"
    fingerprint = plan_fingerprint(rec["plan"], files)
    if fingerprint is None:
        return "its weight plan does not fit the files"
    if tokenizer_digest(source.tok_src) != rec["tokenizer_digest"]:
        return "the tokenizer files changed since"
    def forget() -> None:
        _forget(settings)

    if rec["backend_is_file"]:  # ids by the file's tokenizer, checked here against the record
        raw = file_backend(source.tok_src)
        if raw is None:
            return "its tokenizer could not be read"
        file = FileTokenizer(raw)
        why = file_facts_differ(file, rec)
        if why:
            return why
        tok = DeferredTokenizer(rec, source.tok_src, forget, file=file)
    else:  # transformers tokenizes otherwise than the file alone: read it now, as a full load would
        real = read_tokenizer(rec, source.tok_src)
        if isinstance(real, str):
            return real
        if prefix_ids(real) != rec["prefix_ids"]:
            return "the tokenizer adds another prefix than recorded"
        tok = DeferredTokenizer(rec, source.tok_src, forget, tok=real)
    figures = config_figures(files[0].parent, tok)
    if figures is None:
        return "the model's config.json names no vocabulary size"
    from .verify import checkpoint_params

    held = checkpoint_params(files)
    if held is None or rec["n_params"] > held:
        return "it counts more parameters than the files hold"
    fields = {k: rec[k] for k in ("n_params", "memory_bytes", "weights", "known_sentence_loss", "time")}
    return Recorded(fingerprint, tok, figures["max_context"], figures["vocab_size"], fields)


def save_record(settings: dict, lm: LoadedModel, files: list[Path], source: Source) -> None:
    """Keep what a full load found (``lm``: the check of its weights, sizes, its tokenizer's class, size and
    probe), the weight files it read with their digest, the plan that reads its weight fingerprint from them, and
    the digest of its tokenizer's files. Kept only where a later load can derive every figure a score depends on
    from the files and find the same (the fingerprint by the plan, the context length and vocabulary size from
    ``config.json``): else the next load reads the weights too, as it does when the cache cannot take it."""
    import transformers

    digest = files_digest(files) if files else None
    plan = weight_plan(lm.model, files) if digest else None
    tok = lm.tokenizer
    figures = config_figures(Path(files[0]).parent, tok) if plan else None
    tok_digest = tokenizer_digest(source.tok_src)
    if (figures is None or tok_digest is None or figures != {"max_context": lm.max_context,
                                                             "vocab_size": lm.vocab_size}
            or lm.info.get("weight_fingerprint") != lm.identity.rsplit("|w:", 1)[-1]
            or _weights_folder([str(f) for f in files], source)):
        return
    cls = type(tok).__name__
    rec = {"record": RECORD_VERSION,
           "tokenizer_class": cls if getattr(transformers, cls, None) is type(tok) else None,
           "tokenizer_len": len(tok), "probe_ids": probe_ids(tok),
           "prefix_ids": prefix_ids(tok),
           "backend_is_file": backend_is_file(tok, source.tok_src, digest=tok_digest),
           "tokenizer_digest": tok_digest, "plan": plan,
           "n_params": int(lm.n_params), "memory_bytes": int(lm.memory_bytes),
           "weights": str(lm.info.get("weights", ""))[:2000],
           "known_sentence_loss": lm.info.get("known_sentence_loss"),
           "files": [os.path.abspath(f) for f in files], "digest": digest, "time": time.time()}
    if any(not ok(rec[k]) for k, ok in _CHECKS.items()):
        return
    try:
        blob = json.dumps(rec)
        _store(settings).put(_RECORD_KEY, {_RECORD_ARRAY: np.array(blob)})
    except (SettingsError, TypeError, ValueError, OSError):
        return


def _forget(settings: dict) -> None:
    """Make the record under ``settings`` unusable (it said what its tokenizer does not do): the next load reads
    the weights and records again."""
    try:
        _store(settings).put(_RECORD_KEY, {_RECORD_ARRAY: np.array("{}")})
    except (SettingsError, OSError):
        pass


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
