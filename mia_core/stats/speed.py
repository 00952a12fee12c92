"""What a run's plan needs from the statistics before it starts: this machine's speed for a model, measured
on purpose (:func:`measure`, the dashboard's start-up warm-up), and which texts the disk cache already holds
(:func:`cached_texts`), so that only the others count. The speed records and the arithmetic of an estimate
are :mod:`mia_core.estimate`'s, below this package (every :func:`~mia_core.stats.compute_stats` call records
its speed there).
"""
from __future__ import annotations

import time
from typing import Sequence

from ..cache import text_hash
from ..cache.store import settings_key
from ..estimate import MIN_TOKENS, count_tokens, record
from ..paths import cache_subdir
from .compute import compute_here
from .settings import StatsSettings, cache_settings


def measure(lm, texts: Sequence[str], tokens: int = MIN_TOKENS + 100) -> float | None:
    """Measure and record (:func:`mia_core.estimate.record`) this machine's speed for ``lm``: one small batch of ``texts`` first,
    not timed (a first forward pays for allocating and warming up), then the following texts up to about
    ``tokens`` tokens, timed, in this process and without the cache (nothing is stored). Returns the tokens per
    second measured, or None when the texts hold too few tokens (nothing is recorded then).

    Parameters
    ----------
    lm : LoadedModel
        The loaded model.
    texts : sequence of str
        Short texts (one window each), e.g. the bundled demo's.
    tokens : int
        About how many tokens the timed part scores (at least :data:`mia_core.estimate.MIN_TOKENS` to be recorded).

    Returns
    -------
    float or None
    """
    texts = [t for t in texts if t.strip()]
    st = StatsSettings()
    ctx = st.resolved_context(lm)
    lengths = [count_tokens([t], lm.tokenizer) for t in texts]
    short = [(t, n) for t, n in zip(texts, lengths) if n < ctx]
    if len(short) < 2:
        return None
    compute_here(lm, [short[0][0]], st)  # the warm-up: not timed
    timed, n = [], 0
    for t, k in short[1:]:
        if n >= tokens:
            break
        timed.append(t)
        n += k
    if n < MIN_TOKENS:
        return None
    t0 = time.perf_counter()
    compute_here(lm, timed, st)
    seconds = time.perf_counter() - t0
    record(n, seconds, lm.n_params, lm.device, lm.identity)
    return n / seconds if seconds > 0 else None


def cached_texts(lm, texts: Sequence[str], settings=None) -> list[bool]:
    """Which of ``texts`` already have statistics in the disk cache for ``lm`` under ``settings`` (the key
    :func:`mia_core.stats.compute_stats` reads: ``cache_settings(lm, settings)``, ``text_hash(text)``): a cheap
    check that each entry's file is there, nothing read or verified (a damaged entry, recomputed by the
    run, still counts as cached here). All False when the cache cannot be read.

    Parameters
    ----------
    lm : LoadedModel
        The loaded model.
    texts : sequence of str
        The texts the pass will score.
    settings : StatsSettings, optional
        The pass's settings (None: the defaults).

    Returns
    -------
    list of bool
        One per text.
    """
    try:
        folder = cache_subdir("stats", writable=False) / settings_key(cache_settings(lm, settings or StatsSettings()))
        if not folder.is_dir():
            return [False] * len(texts)
        seen: dict[str, bool] = {}
        out = []
        for t in texts:
            h = text_hash(t)
            if h not in seen:
                seen[h] = (folder / h[:2] / f"{h}.npz").is_file()
            out.append(seen[h])
        return out
    except Exception:  # noqa: BLE001 - an unreadable cache or model: nothing counts as cached
        return [False] * len(texts)
