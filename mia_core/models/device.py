"""Where a model runs and in which precision (shared by every loader).

``device="auto"`` means the GPU when torch sees one, else the CPU; any other device is checked
against the machine before a model is read (:func:`resolve_device`). ``dtype`` is one of
:data:`DTYPES`; ``auto`` picks bf16 on a GPU that supports it (else fp16) and fp32 on CPU.
"""
from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

from ..errors import SettingsError

DTYPES = ("auto", "fp32", "bf16", "fp16")


@functools.lru_cache(maxsize=None)
def torch_build() -> dict | None:
    """The installed torch's build, read from its ``torch/version.py`` without importing torch (about 2 s on a
    2-core CPU, which a run whose statistics are all cached does not otherwise spend): ``version`` (what
    ``torch.__version__`` says), ``cuda`` and ``hip`` (the toolkits it was built for: None for neither). None
    when torch is not installed or the file does not say."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
        origin = spec.origin if spec is not None else None
        if origin is None:
            return None
        text = (Path(origin).parent / "version.py").read_text(encoding="utf-8")
    except (ImportError, OSError, ValueError):
        return None
    found = dict(re.findall(r"^(__version__|cuda|hip)\s*(?::[^=]*)?=\s*(.+?)\s*$", text, re.M))
    if "__version__" not in found:
        return None
    values = {}
    for key, raw in found.items():
        m = re.fullmatch(r"'([^'\\]*)'|\"([^\"\\]*)\"|(None)", raw)
        if m is None:
            return None
        values[key] = None if m.group(3) else (m.group(1) if m.group(1) is not None else m.group(2))
    return {"version": values["__version__"], "cuda": values.get("cuda"), "hip": values.get("hip")}


def torch_version() -> str:
    """``torch.__version__``, without importing torch when it is not imported yet (:func:`torch_build`)."""
    if "torch" not in sys.modules:
        build = torch_build()
        if build is not None and build["version"]:
            return build["version"]
    import torch

    return torch.__version__


@functools.lru_cache(maxsize=None)
def default_device() -> str:
    """The device ``"auto"`` means here: ``"cuda"`` when torch sees a GPU, else ``"cpu"``. Asked once per process
    (every check and loader calls it): ``torch.cuda.is_available()`` asks the driver without initialising CUDA, and
    the answer does not change while the process runs. A torch built for neither CUDA nor ROCm sees no GPU: that
    is read from its build (:func:`torch_build`) without importing it."""
    if "torch" not in sys.modules:
        build = torch_build()
        if build is not None and build["cuda"] is None and build["hip"] is None:
            return "cpu"
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


_DEVICE_RE = re.compile(r"^(cpu|cuda|mps|xpu)(?::(\d+))?$")
DEVICE_HELP = "auto, cpu, cuda, cuda:N, mps or xpu"


def resolve_device(device: str | None) -> str:
    """``"auto"`` (or empty) -> :func:`default_device`; any other name is checked against this machine.

    Called by every loader (and by ``make-target``) before anything is read, so a device the
    machine does not have is a one-line ``SettingsError`` rather than a traceback from torch
    half-way through loading: ``cuda``/``cuda:N`` without CUDA (or past the last GPU), ``mps``
    without Apple's Metal, ``xpu`` without an Intel GPU, or a name that is no device at all.
    """
    d = "auto" if device is None else str(device).strip().lower()
    if d in ("", "auto"):
        return default_device()
    m = _DEVICE_RE.match(d)
    if not m:
        raise SettingsError(f"device {device!r} is not a device: use {DEVICE_HELP}")
    kind, index = m.group(1), m.group(2)
    if kind == "cpu":
        if index not in (None, "0"):
            raise SettingsError(f"device {device!r}: the CPU has no index (use cpu)")
        return "cpu"
    import torch

    if kind == "mps":
        backend = getattr(torch.backends, "mps", None)
        ok, count = bool(backend is not None and backend.is_available()), 1
        what = "Apple Metal (mps) device"
    else:
        mod = getattr(torch, kind, None)
        ok = bool(mod is not None and mod.is_available())
        count = int(mod.device_count()) if ok else 0
        what = "CUDA GPU" if kind == "cuda" else "Intel GPU (xpu)"
    if not ok:
        raise SettingsError(f"device {device!r}: torch sees no {what} on this machine (use cpu or auto)")
    if index is not None and int(index) >= count:
        raise SettingsError(f"device {device!r}: this machine has {count} {kind} device"
                            f"{'s' if count != 1 else ''} ({', '.join(f'{kind}:{i}' for i in range(count))})")
    return d


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
