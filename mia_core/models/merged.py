"""LoRA targets as merged copies: a ``make-target`` LoRA folder (a base model plus an adapter, merged for speed on
every load) is merged once, and the merged weights are kept under the cache root beside the converted GGUF copies
(``<cache root>/models/<target>-merged-<key>``), so that later loads read one safetensors folder like any local
model, without importing peft (about 4 s), applying the adapter (about 1 s) or merging it (about 2 s on a 2-core CPU).

The copy holds exactly the weights the merge gave (fp32, before any cast to the run's dtype), so a load from it gives
the same model, bit for bit, as the load that made it; a load from it is verified like any other (its weights read
back against its files, :func:`mia_core.models.verify.verify_weights`: the loading report, and the first and last
rows of every tensor) and, in addition, its weights must have the fingerprint the merge recorded
(:data:`CONVERTED_MARKER`'s ``fingerprint``, :func:`~mia_core.models.verify.weight_fingerprint`: 64 evenly spaced
elements of every tensor): a copy that differs there is not used (the load merges again, and says so). Elements
neither check reads are not compared, as for a converted GGUF copy: reading all 135M of them back costs seconds
(a float64 sum per tensor took 2.4 s on a 2-core CPU), which is the time this copy saves. The key (:func:`merged_key`) covers the target's files, the base's files, the
device kind and the versions of torch, transformers and peft, since another merge could round differently.

Several processes may make the same copy at once: each writes a private temporary folder and publishes it with one
atomic rename (:func:`mia_core.models.gguf.publish_dir`); the folder carries the same marker file as a converted
GGUF, so ``mia cache clear --models`` recognises it as this tool's. A cache that cannot be written (read-only, full)
only means the next load merges again.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import time
from importlib import metadata
from pathlib import Path

from ..paths import cache_subdir
from .gguf import CONVERTED_MARKER, _private_tmp, _remove_abandoned_tmps, publish_dir
from .hub import folder_fingerprint
from .verify import weight_fingerprint


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "none"


def merged_key(target: Path, base_folder: Path, device: str) -> str:
    """The key of a target's merged copy: 16 hex digits over the target's and the base's files (names, sizes and
    first/last MiB: :func:`~mia_core.models.hub.folder_fingerprint`), the device kind the merge ran on and the
    versions of torch, transformers and peft.

    Parameters
    ----------
    target : pathlib.Path
        The ``make-target`` folder (its adapter and records).
    base_folder : pathlib.Path
        The base model's local folder (a converted GGUF copy, or a model folder).
    device : str
        Where the merge runs (``cpu``, ``cuda:0``...): only its kind enters the key.

    Returns
    -------
    str
    """
    from .device import torch_version

    blob = json.dumps({"target": folder_fingerprint(Path(target)), "base": folder_fingerprint(Path(base_folder)),
                       "device": str(device).split(":")[0], "torch": torch_version(),
                       "transformers": _version("transformers"), "peft": _version("peft")}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def merged_dir(target: Path, key: str, *, writable: bool = False) -> Path:
    """Where the merged copy of ``target`` under ``key`` lives (it may not exist)."""
    return cache_subdir("models", writable=writable) / f"{Path(target).name}-merged-{key}"


def find_merged(target: Path, key: str) -> tuple[Path, dict] | None:
    """The published merged copy of ``target`` under ``key`` and its record, or None (none yet, or its record
    unreadable)."""
    folder = merged_dir(target, key)
    try:
        record = json.loads((folder / CONVERTED_MARKER).read_text())
    except (OSError, ValueError):
        return None
    return (folder, record) if isinstance(record, dict) and record.get("kind") == "merged-lora" else None


def save_merged(model, target: Path, base_folder: Path, key: str) -> Path | None:
    """Keep ``model`` (the merged fp32 model, before any cast) as the merged copy of ``target``: its config and
    weights (``model.safetensors``) and a record (the marker, with the weights' fingerprint) in a private
    temporary folder, published in one rename. Returns the folder, or None when the cache cannot take it (the
    next load merges again).
    """
    from safetensors.torch import save_model

    try:
        out = merged_dir(target, key, writable=True)
    except Exception:  # noqa: BLE001 - a read-only or unusable cache: no copy, nothing else changes
        return None
    if (out / CONVERTED_MARKER).exists():
        return out
    tmp = None
    try:
        tmp = _private_tmp(out)
        model.config.to_json_file(str(tmp / "config.json"))
        save_model(model, str(tmp / "model.safetensors"))
        record = {"kind": "merged-lora", "source": str(Path(target).resolve()), "base": str(base_folder),
                  "fingerprint": weight_fingerprint(model), "time": time.time()}
        (tmp / CONVERTED_MARKER).write_text(json.dumps(record, indent=2))
        return publish_dir(tmp, out, marker=CONVERTED_MARKER)
    except OSError:
        return None
    finally:
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        _remove_abandoned_tmps(out)
