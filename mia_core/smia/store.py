"""Saving and loading a trained SMIA model, and the settings it must match to be applied.

A model is a folder with ``smia.safetensors`` (the network's weights and the feature
standardisation) and ``smia.json`` (format, version, embedding size and the model's metadata);
nothing is ever unpickled. The metadata records what the model was trained with
(:func:`expected_settings`: the target model's identity, the embedder's identity, the neighbour
settings and the statistics settings); :func:`load_checked` refuses, with ``SettingsError``, a
model trained with anything different from the run it is applied in.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import SettingsError
from .network import SmiaModel, build_net

SMIA_FORMAT = "mia-dashboard/smia"
SMIA_VERSION = 1
WEIGHTS_FILE = "smia.safetensors"
META_FILE = "smia.json"


def save_smia(model: SmiaModel, path: str | Path) -> Path:
    """Write ``PATH/smia.safetensors`` (weights, standardisation) and ``PATH/smia.json``."""
    from safetensors import SafetensorError
    from safetensors.torch import save_file
    import torch

    out = Path(path).expanduser()
    tensors = {f"net.{k}": v.detach().cpu().contiguous() for k, v in model.net.state_dict().items()}
    tensors["feature_mean"] = torch.from_numpy(model.mean.astype(np.float32))
    tensors["feature_std"] = torch.from_numpy(model.std.astype(np.float32))
    meta = {"format": SMIA_FORMAT, "version": SMIA_VERSION, "embedding_dim": model.dim, **model.meta}
    try:  # checked before the run (DOMAINS["save"]); a disk that fills or a folder removed since is one line too
        out.mkdir(parents=True, exist_ok=True)
        save_file(tensors, str(out / WEIGHTS_FILE))
        (out / META_FILE).write_text(json.dumps(meta, indent=2, default=float))
    except (OSError, SafetensorError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else " ".join(str(e).split())
        raise SettingsError(f"cannot save the trained SMIA model to {path} ({{smia.save}}): {why}",
                            options=("smia.save",)) from None
    return out


def load_smia(path: str | Path) -> SmiaModel:
    """Read a model written by :func:`save_smia` (safetensors + JSON; nothing is unpickled)."""
    from safetensors.torch import load_file

    p = Path(path)
    if p.is_file() and p.name in (WEIGHTS_FILE, META_FILE):
        p = p.parent
    if not (p / WEIGHTS_FILE).exists() or not (p / META_FILE).exists():
        raise SettingsError(f"{path}: not a saved SMIA model (expected {WEIGHTS_FILE} and {META_FILE})")
    try:
        meta = json.loads((p / META_FILE).read_text())
    except (OSError, ValueError) as e:
        raise SettingsError(f"{p / META_FILE}: unreadable ({e})") from None
    if meta.get("format") != SMIA_FORMAT:
        raise SettingsError(f"{p}: not a saved SMIA model (format {meta.get('format')!r})")
    if int(meta.get("version", 0)) > SMIA_VERSION:
        raise SettingsError(f"{p}: saved by a newer version (format {meta.get('version')}); update mia-dashboard")
    tensors = load_file(str(p / WEIGHTS_FILE))
    dim = int(meta["embedding_dim"])
    net = build_net(dim)
    try:
        net.load_state_dict({k[4:]: v for k, v in tensors.items() if k.startswith("net.")})
    except RuntimeError as e:
        raise SettingsError(f"{p}: the weights do not fit the SMIA network ({str(e).splitlines()[0]})") from None
    net.eval()
    meta = {k: v for k, v in meta.items() if k not in ("format", "version", "embedding_dim")}
    return SmiaModel(net, dim, tensors["feature_mean"].numpy().astype(np.float64),
                     tensors["feature_std"].numpy().astype(np.float64), meta)


def check_saved(path, where: str = "smia.load") -> Path:
    """The folder of a saved SMIA model (``path`` or the folder of its weights / JSON file);
    ``SettingsError`` when the two files are not there. Nothing is read."""
    p = Path(str(path).strip()).expanduser()
    if p.is_file() and p.name in (WEIGHTS_FILE, META_FILE):
        p = p.parent
    if not ((p / WEIGHTS_FILE).is_file() and (p / META_FILE).is_file()):
        raise SettingsError(f"{where} {path}: not a saved SMIA model (expected {WEIGHTS_FILE} and {META_FILE})")
    return p


def expected_settings(ctx, settings, embedder, first_token: bool = False) -> dict:
    """What a saved model must have been trained with to be applied here (``first_token``:
    whether the losses include each text's first token, ``attacks.base``)."""
    from ..neighbours import make_generator
    from ..stats import cache_settings

    st = cache_settings(ctx.target, ctx.config.stats)
    return {
        "target": ctx.target.identity,
        "embedder": embedder.identity,
        "neighbours": {**settings.to_dict(), "generator_identity": make_generator(settings).identity},
        "statistics": {"context": st["context"], "prefix": st["prefix"], "first_token": bool(first_token)},
    }


def load_checked(path, expected: dict) -> SmiaModel:
    """:func:`load_smia`, refused (``SettingsError``) unless trained with the ``expected`` settings. A
    model saved before the first-token rule was recorded scored every token (``first_token`` true)."""
    model = load_smia(path)
    stats_meta = (model.meta.get("trained_with") or {}).get("statistics")
    if isinstance(stats_meta, dict):
        stats_meta.setdefault("first_token", True)  # saved before the rule: every token was scored
    model.check(expected)
    return model
