"""Checking that a loaded model is the model its checkpoint holds, and fingerprinting what was loaded.

An audit of a model with some layers randomly initialised looks like an audit: every number
comes out, near chance. transformers only *logs* missing weights (a table on stderr) and loads
anyway; a load that raced another thread's came out with the embedded SmolLM2's embeddings
re-initialised and its output layer untied (163M parameters instead of 135M). So every causal LM
and masked LM this package loads goes through these checks before anyone sees it:

* :func:`check_loading_info` — transformers' own report (``output_loading_info=True``): any
  weight the config declares but the checkpoint lacks (*missing*, i.e. randomly initialised),
  any weight the checkpoint holds that the model has no place for (*unexpected*) or of the
  wrong shape (*mismatched*) refuses the load with one line.
* :func:`check_against_checkpoint` — independent of that report, the loaded tensors are read
  back against the ``.safetensors`` files: no tensor left on the ``meta`` device; every
  parameter (tied parameters counted once) is in the checkpoint, so the parameter count is the
  checkpoint's; and the first and last rows of every tensor equal the file's (cast to the
  loaded dtype). Quantised loads (int8/int4 repack the weights) and checkpoints whose names
  transformers renames while loading are checked by the report alone; the result says so.
* :func:`weight_fingerprint` — a digest of the weights actually in memory (a strided sample
  of every tensor, bit for bit). It is part of the model's cache identity, so statistics of a
  damaged load can never be written under a healthy model's key.
* :func:`check_known_loss` — for the models the product ships (the embedded SmolLM2, the
  bundled demo's target), a fixed sentence's loss must fall in a band measured on healthy
  loads; a load outside it is refused.
"""
from __future__ import annotations

import contextvars
import hashlib
import json
import math
import re
from pathlib import Path

from ..errors import ModelError

SAMPLES_PER_TENSOR = 64  # elements read from each tensor for the fingerprint

# A user who knows the checkpoint does not match (a deliberately re-initialised head, a pruned copy) may
# audit it anyway: asked for explicitly (``--accept-weight-mismatch``, :func:`accepting_weight_mismatch`),
# never the default, and recorded in the model's record, the run's notes and its report.
_ACCEPT = contextvars.ContextVar("mia_accept_weight_mismatch", default=False)
ACCEPT_FLAG = "--accept-weight-mismatch"  # in the record of a model audited anyway (the refusal names the option)


class accepting_weight_mismatch:  # noqa: N801 - used as ``with accepting_weight_mismatch(): ...``
    """Within the block, models whose weights do not match their checkpoint load (recorded) instead of
    being refused."""

    def __init__(self, on: bool = True):
        self.on = bool(on)

    def __enter__(self):
        self._token = _ACCEPT.set(self.on)
        return self

    def __exit__(self, *exc):
        _ACCEPT.reset(self._token)
        return False


def weight_mismatch_accepted() -> bool:
    """Whether the caller is within :class:`accepting_weight_mismatch` (a mismatching checkpoint loads, recorded)."""
    return _ACCEPT.get()


def verify_weights(model, loading_info: dict | None, files: list, name: str, *, quantized: bool = False,
                   unused_label: str = "parts this class lacks") -> tuple[str, str | None]:
    """:func:`check_loading_info` then :func:`check_against_checkpoint`: ``(what was checked, None)``, or a
    one-line ``ModelError``. Where the user accepted a mismatch (:func:`accepting_weight_mismatch`), a failed
    check returns ``(a record saying so, the problem)`` instead, for the run to carry."""
    try:
        unused = check_loading_info(loading_info, name, model)
        checked = check_against_checkpoint(model, files, name, quantized=quantized)
    except ModelError as e:
        if not weight_mismatch_accepted():
            raise ModelError(e.template + " ({accept_weight_mismatch} audits it anyway, recorded in the run)",
                             options=(*e.options, "accept_weight_mismatch")) from None
        return f"NOT VERIFIED (audited as asked with {ACCEPT_FLAG}): {e}", str(e)
    if unused:
        checked += f"; {len(unused)} weight(s) of the checkpoint not used ({unused_label}: {', '.join(unused[:3])})"
    return checked, None


def _names(keys, n: int = 3) -> str:
    keys = sorted(keys)
    return ", ".join(keys[:n]) + (f" and {len(keys) - n} more" if len(keys) > n else "")


def _pattern(name: str) -> str:
    """A weight's name with its layer numbers replaced: ``model.layers.30.mlp.up.weight`` -> ``model.layers.#.mlp.up.weight``."""
    return re.sub(r"\.\d+(?=\.)", ".#", name)


def check_loading_info(info: dict | None, name: str, model=None) -> list[str]:
    """One-line ``ModelError`` when transformers reported weights missing, mismatched or unexpected in the
    model's body; returns the unexpected weights that were let through.

    Unexpected weights are refused when they have the shape of the model's own parameters (``model`` given:
    a checkpoint with more layers than the config declares, say); weights of parts the loaded class does
    not have (a pooler, a next-sentence head: bert-base-uncased loaded as a masked LM has both) do not
    change the model and are returned, to be recorded. Without ``model``, every unexpected weight is refused."""
    if not info:
        return []
    missing = list(info.get("missing_keys") or ())
    unexpected = list(info.get("unexpected_keys") or ())
    mismatched = [k[0] if isinstance(k, (tuple, list)) else k for k in (info.get("mismatched_keys") or ())]
    ignored: list[str] = []
    if unexpected and model is not None:
        body = {_pattern(n) for n, _ in model.named_parameters(remove_duplicate=False)}
        body |= {p.split(".", 1)[1] for p in body if "." in p}  # with or without the base model's prefix
        ignored = [k for k in unexpected if _pattern(k) not in body]
        unexpected = [k for k in unexpected if _pattern(k) in body]
    problems = []
    if missing:
        problems.append(f"{len(missing)} weight(s) its config declares are missing from the checkpoint "
                        f"({_names(missing)}) and would be randomly initialised")
    if mismatched:
        problems.append(f"{len(mismatched)} weight(s) have the wrong shape ({_names(mismatched)})")
    if unexpected:
        problems.append(f"{len(unexpected)} weight(s) in the checkpoint have no place in the model "
                        f"({_names(unexpected)})")
    if problems:
        raise ModelError(f"model {name} does not match its checkpoint: {'; '.join(problems)}. Refusing to audit "
                         "a model that is not what its files hold: check the folder (a partial copy, a config from "
                         "another model)")
    return sorted(ignored)


def _unique_tensors(model) -> list[tuple[str, object]]:
    """(name, tensor) for every parameter and buffer, tied ones once (the first name), in state-dict order."""
    seen, out = set(), []
    for n, t in list(model.named_parameters()) + list(model.named_buffers()):
        key = id(t)
        if key in seen:
            continue
        seen.add(key)
        out.append((n, t))
    return out


def _sample(t, k: int = SAMPLES_PER_TENSOR):
    import torch

    flat = t.detach().reshape(-1)
    n = flat.numel()
    if n == 0:
        return flat
    k = min(n, k)
    idx = (torch.arange(k, dtype=torch.int64) * (n - 1)) // max(1, k - 1)  # integer: exact at any size
    return flat.index_select(0, idx.to(flat.device)).cpu()


def weight_fingerprint(model) -> str:
    """16 hex digits over every tensor's name, shape, dtype and a strided sample of its values, bit for bit.

    Reads ``SAMPLES_PER_TENSOR`` elements per tensor (milliseconds, whatever the model's size), so a
    load with any tensor re-initialised, on the meta device or of another dtype gets another
    fingerprint. Tensors on the ``meta`` device (offloaded by accelerate) enter by name and shape."""
    h = hashlib.sha256()
    for n, t in sorted(_unique_tensors(model), key=lambda x: x[0]):
        h.update(f"{n}:{tuple(t.shape)}:{t.dtype}:".encode())
        if t.device.type != "meta":
            s = _sample(t)
            h.update(s.contiguous().view(-1).view(__import__("torch").uint8).numpy().tobytes()
                     if s.element_size() else b"")
        h.update(b";")
    return h.hexdigest()[:16]


def checkpoint_files(location: str) -> list[Path]:
    """The ``.safetensors`` weight files of a local folder or of a hub id in the local Hugging Face cache
    (empty when there are none: a ``.bin`` checkpoint, or a hub model not cached)."""
    p = Path(location)
    if p.is_dir():
        index = p / "model.safetensors.index.json"
        if index.is_file():
            try:
                shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
                return [p / s for s in shards if (p / s).is_file()]
            except (OSError, ValueError, KeyError, TypeError):
                return []
        return sorted(f for f in p.glob("*.safetensors") if not f.name.startswith("adapter_model"))
    try:
        from huggingface_hub import try_to_load_from_cache

        single = try_to_load_from_cache(location, "model.safetensors")
        if isinstance(single, str):
            return [Path(single)]
        index = try_to_load_from_cache(location, "model.safetensors.index.json")
        if isinstance(index, str):
            folder = Path(index).parent
            shards = sorted(set(json.loads(Path(index).read_text())["weight_map"].values()))
            return [folder / s for s in shards if (folder / s).is_file()]
    except Exception:  # noqa: BLE001 - no cached checkpoint to compare with
        pass
    return []


def _rows(t, k: int = 2):
    """The first ``k`` and the last entries along the first dimension (all of a small tensor)."""
    import torch

    if t.dim() == 0 or t.shape[0] <= k + 1:
        return t
    return torch.cat([t[:k], t[-1:]])


def check_against_checkpoint(model, files: list[Path], name: str, *, quantized: bool = False,
                             ignore_prefixes: tuple[str, ...] = ()) -> str:
    """Read the loaded weights back against the checkpoint ``files``; ``ModelError`` when they differ.

    Returns a short description of what was checked (it goes into the model's ``info``).
    ``ignore_prefixes``: parameters deliberately not in ``files`` (an adapter's own weights).
    """
    import torch

    tensors = _unique_tensors(model)
    on_meta = [n for n, t in tensors if t.device.type == "meta"]
    if on_meta and not getattr(model, "hf_device_map", None):
        raise ModelError(f"model {name} was not fully loaded: {len(on_meta)} tensor(s) have no data "
                         f"({_names(on_meta)}); load it again (one load at a time)")
    if not files:
        return "loading report only (no .safetensors checkpoint to read back)"
    if quantized:
        return "loading report only (quantised weights are repacked)"
    try:
        from safetensors import safe_open

        handles = [safe_open(str(f), framework="pt") for f in files]
    except Exception as e:  # noqa: BLE001 - transformers read these files a moment ago
        raise ModelError(f"model {name}: could not read back its checkpoint ({type(e).__name__}: {e})") from None
    where = {k: h for h in handles for k in h.keys()}
    names = {n for n, _ in list(model.named_parameters(remove_duplicate=False)) + list(model.named_buffers())}
    matched = [k for k in where if k in names]
    if len(matched) < 0.5 * len(where):
        return "loading report only (the checkpoint's tensor names are renamed while loading)"
    groups: dict[int, list[str]] = {}
    for n, p in model.named_parameters(remove_duplicate=False):
        groups.setdefault(id(p), []).append(n)
    # every parameter in the files (so the parameter count is the checkpoint's): judged only when every name of
    # the files is the model's, since a name transformers renames while loading would look like a missing one
    uncovered = [] if len(matched) < len(where) else [
        ns[0] for ns in groups.values() if not any(n in where for n in ns) and not ns[0].startswith(ignore_prefixes)]
    if uncovered:
        raise ModelError(f"model {name} does not match its checkpoint: {len(uncovered)} parameter(s) are not in its "
                         f"files ({_names(uncovered)}) and would be randomly initialised; refusing to audit it")
    state = dict(model.named_parameters(remove_duplicate=False))
    state.update(dict(model.named_buffers()))
    differ = []
    for k in matched:
        t = state[k]
        if t.device.type == "meta" or not (t.is_floating_point()):
            continue
        sl = where[k].get_slice(k)
        shape = tuple(sl.get_shape())
        if shape != tuple(t.shape):
            differ.append(k)
            continue
        if len(shape) == 0 or shape[0] <= 3:
            ref = where[k].get_tensor(k)
        else:
            ref = torch.cat([sl[0:2], sl[shape[0] - 1:shape[0]]])
        got = _rows(t.detach()).cpu()
        ref = ref.to(got.dtype)
        if not torch.equal(got, ref):
            tol = 1e-6 if got.dtype == torch.float32 else 1e-2
            if not torch.allclose(got.float(), ref.float(), rtol=tol, atol=tol):
                differ.append(k)
    if differ:
        raise ModelError(f"model {name} does not match its checkpoint: {len(differ)} tensor(s) hold other values than "
                         f"its files ({_names(differ)}); refusing to audit it (load it again, one load at a time)")
    return (f"read back against its checkpoint ({len(matched)} tensors"
            + ("" if len(matched) == len(where) else f" of {len(where)}: the others are renamed or not used") + ")")


# --------------------------------------------------------------------------- known loss

KNOWN_SENTENCE = ("The company said on Monday that its quarterly profit rose by twelve million dollars, "
                  "helped by strong sales in Europe and Asia.")
# The known sentence's mean loss (nats per token, tokens 2..n, no special tokens) on healthy loads, measured
# (AMD EPYC, torch 2.13 CPU, transformers 5.24): name -> value. A load more than KNOWN_LOSS_BAND nats away
# (twice that for int8/int4) is refused: a broken load (two threads loading at once) scored 10-11 nats.
KNOWN_LOSS = {"smollm2": 4.00, "demo-target": 4.12}  # fp32; bf16 gave 4.01 and 4.09
KNOWN_LOSS_BAND = 0.5


def sentence_loss(lm, text: str = KNOWN_SENTENCE) -> float:
    """Mean next-token loss of ``text`` (tokens 2..n, no special tokens) under a loaded causal LM."""
    import torch

    ids = lm.tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids.to(lm.device)
    with torch.no_grad():
        out = lm.model(input_ids=ids, labels=ids)
    return float(out.loss)


def check_known_loss(lm, which: str) -> float:
    """Refuse (``ModelError``) a shipped model whose loss on :data:`KNOWN_SENTENCE` is out of its band."""
    expected = KNOWN_LOSS[which]
    band = KNOWN_LOSS_BAND * (2 if lm.quantize != "none" else 1)
    got = sentence_loss(lm)
    if not math.isfinite(got) or abs(got - expected) > band:
        raise ModelError(f"the loaded {lm.name} is broken: a known sentence scores loss {got:.2f} where this model "
                         f"scores {expected:.2f} +/- {band:.2f}; refusing to audit with it (load it again; if it "
                         "persists, reinstall the model's package or clear the converted copy with "
                         "`mia cache clear --models`)")
    return got


# --------------------------------------------------------------------------- size before allocation

def _cfg_int(cfg, *names) -> int | None:
    for n in names:
        v = getattr(cfg, n, None)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


def config_params(cfg) -> int | None:
    """A lower-end estimate of the parameter count a causal-LM config declares (embeddings, attention with
    its key/value heads, the MLP), from its sizes alone: nothing is allocated. None when the config does not
    name its sizes in the usual way (the check is then skipped)."""
    cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    h = _cfg_int(cfg, "hidden_size", "n_embd", "d_model")
    n_layers = _cfg_int(cfg, "num_hidden_layers", "n_layer", "num_layers")
    vocab = _cfg_int(cfg, "vocab_size")
    if not (h and n_layers and vocab) or min(h, n_layers, vocab) < 1:
        return None
    inter = _cfg_int(cfg, "intermediate_size", "n_inner", "ffn_dim") or 4 * h
    heads = _cfg_int(cfg, "num_attention_heads", "n_head") or 1
    kv = _cfg_int(cfg, "num_key_value_heads") or heads
    kv_dim = h * kv // max(heads, 1)
    gated = 3 if any(getattr(cfg, a, None) for a in ("hidden_act", "activation_function")) and \
        str(getattr(cfg, "hidden_act", "")).lower() in ("silu", "swiglu", "geglu") else 2
    per_layer = 2 * h * h + 2 * h * kv_dim + gated * h * inter
    return int(vocab * h + n_layers * per_layer)


def safetensors_header(f: Path, limit: int = 100 * 2**20) -> dict | None:
    """The JSON header of a ``.safetensors`` file (its first 8 bytes say how long it is; capped at
    ``limit``), or None when the file is not readable as one. Reads nothing else."""
    import struct

    try:
        with open(f, "rb") as fh:
            raw = fh.read(8)
            if len(raw) != 8:
                return None
            (n,) = struct.unpack("<Q", raw)
            if n > limit:
                return None
            header = json.loads(fh.read(n))
    except (OSError, ValueError):
        return None
    return header if isinstance(header, dict) else None


def checkpoint_params(files: list[Path]) -> int | None:
    """Elements in the ``.safetensors`` files (read from their headers only); None when there are none or
    they hold packed (integer) weights, whose element counts are not parameter counts."""
    total = 0
    for f in files:
        header = safetensors_header(f)
        if header is None:
            return None
        for name, t in header.items():
            if name == "__metadata__" or not isinstance(t, dict):
                continue
            if not str(t.get("dtype", "")).startswith(("F", "BF")):
                return None
            n = 1
            for d in t.get("shape") or ():
                n *= int(d)
            total += n
    return total or None


BYTES_PER_PARAM = {"fp32": 4, "fp16": 2, "bf16": 2}


def _available_bytes(device: str | None) -> tuple[int | None, str]:
    if device is None:
        return None, ""
    if str(device).startswith("cuda"):
        try:
            import torch

            free, _ = torch.cuda.mem_get_info(torch.device(device))
            return int(free), f"{device} has"
        except Exception:  # noqa: BLE001 - no figure, no check
            return None, ""
    try:
        import psutil

        vm, sw = psutil.virtual_memory(), psutil.swap_memory()
        return int(vm.available + sw.free), "this machine has"
    except Exception:  # noqa: BLE001
        return None, ""


def check_model_size(cfg, files: list[Path], name: str, *, dtype: str, quantize: str, device: str | None) -> int | None:
    """Before any weight is allocated: one-line ``ModelError`` when the config declares a model far larger
    than its checkpoint holds (a config with 10,000 layers beside a 30-layer checkpoint would otherwise be
    allocated until memory runs out), or larger than the memory free for it. Returns the estimate."""
    est = config_params(cfg)
    if est is None:
        return None
    held = checkpoint_params(files) if files else None
    cfg_t = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    layers = _cfg_int(cfg_t, "num_hidden_layers", "n_layer", "num_layers")
    if held is not None and est > 2 * held + 10_000_000:
        raise ModelError(f"model {name}: its config.json declares {layers:,} layers, about {est / 1e6:,.0f}M "
                         f"parameters, but its checkpoint holds {held / 1e6:,.1f}M: the config is not this "
                         "checkpoint's (a partial copy, a config from another model); nothing was allocated")
    per = {"int8": 1, "int4": 0.5}.get(quantize, BYTES_PER_PARAM.get(dtype, 4))
    need = est * per
    avail, who = _available_bytes(device)
    if avail is not None and need > avail:
        raise ModelError(f"model {name} needs about {need / 2**30:,.1f} GiB for its weights in "
                         f"{quantize if quantize != 'none' else dtype} ({layers:,} layers, about {est / 1e6:,.0f}M "
                         f"parameters, from its config.json); {who} {avail / 2**30:,.1f} GiB free: try {{quantize}} "
                         "int8 or int4, a smaller model, or a machine with more memory; nothing was allocated",
                         options=("quantize",))
    return est
