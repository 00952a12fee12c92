"""Where a model runs and in which precision (shared by every loader).

``device="auto"`` means the GPU when torch sees one, else the CPU. ``dtype`` is one of
:data:`DTYPES`; ``auto`` picks bf16 on a GPU that supports it (else fp16) and fp32 on CPU.
"""
from __future__ import annotations

from ..errors import SettingsError

DTYPES = ("auto", "fp32", "bf16", "fp16")


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_device(device: str) -> str:
    """``"auto"`` -> :func:`default_device`; any other name is kept."""
    return default_device() if device == "auto" else device


def resolve_dtype(dtype: str, device: str) -> str:
    """``auto``: bf16 on a GPU that supports it (else fp16), fp32 on CPU.

    fp32 on CPU keeps scores bit-stable across runs; bf16 is ~3x faster on CPUs with
    native bf16 matrix units and is offered as an explicit choice.
    """
    if dtype not in DTYPES:
        raise SettingsError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    if dtype != "auto":
        return dtype
    if device.startswith("cuda"):
        import torch

        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "fp32"


def torch_dtype(name: str):
    """The ``torch.dtype`` for ``fp32`` / ``bf16`` / ``fp16``."""
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]
