"""Continuing from a cached prefix: the model runs only the tokens after a prefix whose keys and
values it computed before (the prefix is not run again).

:func:`continue_from_cache` is the one such pass. Its users:

* shared prefixes (:mod:`.families`): each member of a family after its base's first tokens;
* conditioning (:mod:`.conditioned`): every text after ``[prefix token] + condition``;
* the offline neighbour generator (:mod:`mia_core.neighbours.offline`): each candidate word after
  its text's left context.

The cache it is handed holds one row per batch row: :func:`stacked_cache` builds one from per-row
prefixes (each row its own keys/values and length), :func:`repeated_cache` from one prefix shared by
every row. Row ``r`` attends to its cache positions ``[0, starts[r])`` and to its own tokens, which
sit at positions ``starts[r], starts[r] + 1, ...``: the numbers of a plain pass over prefix + tokens,
up to float rounding.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:  # mia_core.models (huggingface_hub, safetensors) loads with a model: ``mia --help`` stays light
    from ..models import LoadedModel



def cache_layers(cache) -> list | None:
    """(keys, values) per layer of a full-attention key/value cache, or None for any other kind
    (sliding windows, linear attention, ...), which the per-row paths leave alone."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        if not layers or any(type(lay).__name__ != "DynamicLayer" for lay in layers):
            return None
        return [(lay.keys, lay.values) for lay in layers]
    if hasattr(cache, "key_cache"):  # transformers 4.x
        return list(zip(cache.key_cache, cache.value_cache))
    return None


def stacked_cache(prefixes: Sequence[tuple[list, int]]):
    """One ``DynamicCache`` for a batch whose row ``r`` continues its own prefix ``prefixes[r] = (layers, p)``:
    the first ``p`` positions of ``layers`` ((keys, values) per layer, ``[heads, length, dim]``), zero-padded
    to the longest ``p`` (the padding is masked out by :func:`continue_from_cache`)."""
    from transformers import DynamicCache

    H = max(p for _, p in prefixes)
    B = len(prefixes)
    cache = DynamicCache()
    for li in range(len(prefixes[0][0])):
        k0, v0 = prefixes[0][0][li]
        ks = k0.new_zeros((B, k0.shape[0], H, k0.shape[2]))
        vs = v0.new_zeros((B, v0.shape[0], H, v0.shape[2]))
        for r, (layers, p) in enumerate(prefixes):
            k, v = layers[li]
            ks[r, :, :p] = k[:, :p]
            vs[r, :, :p] = v[:, :p]
        cache.update(ks, vs, li)
    return cache


def repeated_cache(cache, n_rows: int):
    """A copy of a one-row cache (any kind the model returned) for a batch of ``n_rows`` rows that all
    continue the same prefix."""
    import copy

    cache = copy.deepcopy(cache)
    if n_rows > 1:
        cache.batch_repeat_interleave(n_rows)
    return cache


def continue_from_cache(lm: LoadedModel, cache, width: int, starts: Sequence[int], rows: Sequence[np.ndarray]):
    """Logits ``[len(rows), longest row, vocabulary]`` of ``rows`` (token ids) continuing ``cache`` (``width``
    positions per row): row ``r`` after its first ``starts[r]`` cached positions, at positions
    ``starts[r]...``; rows shorter than the longest are padded on the right. The cache is consumed."""
    import torch

    from ..models import with_cache

    S = max(len(x) for x in rows)
    B = len(rows)
    pad = lm.tokenizer.pad_token_id or 0
    ids = np.full((B, S), pad, dtype=np.int64)
    pos = np.zeros((B, S), dtype=np.int64)
    mask = np.zeros((B, width + S), dtype=np.int64)
    for r, (p, x) in enumerate(zip(starts, rows)):
        ids[r, : len(x)] = x
        pos[r] = p + np.arange(S)
        mask[r, :p] = 1
        mask[r, width : width + len(x)] = 1
    dev = lm.device
    t = lambda a: torch.from_numpy(a).to(dev)  # noqa: E731
    with torch.inference_mode():
        out = lm.model(input_ids=t(ids), attention_mask=t(mask), position_ids=t(pos),
                       **with_cache(lm.model, cache), use_cache=True)
        return out.logits
