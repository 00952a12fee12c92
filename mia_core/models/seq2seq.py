"""Loading sequence-to-sequence models (the T5 family) for the T5 span-filling neighbours.

``load_seq2seq(spec)`` loads ``AutoModelForSeq2SeqLM`` + ``AutoTokenizer`` (fp32, eval mode)
from a local folder or a hub id, once per process and device. How the model fills masked
spans (DetectGPT / SMIA) is :class:`mia_core.neighbours.T5Generator`.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ModelError
from .device import resolve_device
from .hub import LOAD_ERRORS, LoadOnce, hub_local_only, identity, load_error, locate


@dataclass
class Seq2SeqLM:
    """A loaded sequence-to-sequence model with its tokenizer and cache identity."""

    model: object  # transformers AutoModelForSeq2SeqLM, in eval mode
    tokenizer: object
    name: str
    identity: str  # local:<folder fingerprint> or hub:<id>@<revision>
    device: str


_LOADED: LoadOnce[Seq2SeqLM] = LoadOnce()


def load_seq2seq(spec: str, *, device: str = "auto") -> Seq2SeqLM:
    """Load a T5-style model from a local folder or a hub id (local-only when offline)."""
    device = resolve_device(device)
    s = str(spec).strip()
    loc = locate(s, missing="no such folder")
    if loc.kind == "file":
        raise ModelError(f"{s}: a T5 model must be a folder or a hub id, not a file")
    return _LOADED.get_or_load((loc.location, device), lambda: _load(s, loc.location, loc.is_local, device))


def _load(s: str, location: str, local: bool, device: str) -> Seq2SeqLM:
    import torch

    local_only = local or hub_local_only(location, what="the T5 model")
    try:
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(location, local_files_only=local_only)
        model = AutoModelForSeq2SeqLM.from_pretrained(location, local_files_only=local_only,
                                                      dtype=torch.float32).to(device).eval()
    except LOAD_ERRORS as e:
        raise load_error(e, s, what="the T5 model", hub=not local) from None
    return Seq2SeqLM(model, tokenizer, s, identity("local" if local else "hub", location, model), device)


def forget_loaded() -> None:
    """Drop the in-process seq2seq model cache."""
    _LOADED.clear()
