"""The entry point: :func:`compute_stats`, one forward pass per text, cached on disk.

Results are cached on disk (``mia_core.cache``, :meth:`ArrayCache.lookup <mia_core.cache.ArrayCache.lookup>`) keyed by model identity, settings and text hash
(:func:`.settings.cache_settings`), so a re-run of any attack on cached texts makes no model call.
The texts the cache lacks go to the current engine (:mod:`mia_core.engines`: this process or Ray
workers) as a :class:`.workload.TokenStatsWorkload`; each is stored as soon as it is complete, and
a long text's windows done so far are kept in its partial cache entry, so an interrupted call
resumes from there, on any engine.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..cache import ArrayCache, text_hash
from ..engines import current_engine
from ..progress import Progress, noop
from .settings import StatsSettings, cache_settings, tokenize
from .types import ALL_FIELDS, TokenStats
from .workload import Partials, run_on_engine

if TYPE_CHECKING:  # mia_core.models (huggingface_hub, safetensors) loads with a model: ``mia --help`` stays light
    from ..models import LoadedModel


def entry_problem(lm: LoadedModel, text: str, arrays: dict, st: StatsSettings) -> str | None:
    """Why a cached entry cannot be the statistics of ``text`` under ``lm`` (None when it can): every
    array there, the text's own token ids, every per-token array as long, the text's byte count."""
    need = ("token_ids", *ALL_FIELDS, "n_bytes")
    lacking = [k for k in need if k not in arrays]
    if lacking:
        return f"it lacks {', '.join(lacking)}"
    if st.vocab_probs and "vocab_prob_sum" not in arrays:
        return "it lacks vocab_prob_sum"
    ids = arrays["token_ids"]
    if ids.ndim != 1 or not np.array_equal(ids, tokenize(lm, text)):
        return "its tokens are not this text's"
    short = [k for k in ALL_FIELDS if arrays[k].shape != ids.shape]
    if short:
        return f"{short[0]} has {arrays[short[0]].shape[0] if arrays[short[0]].ndim else 0} values for {ids.shape[0]} tokens"
    if int(arrays["n_bytes"]) != len(text.encode("utf-8", "surrogatepass")):
        return "its byte count is not this text's"
    return None



def compute_stats(
    lm: LoadedModel,
    texts: Sequence[str],
    settings: StatsSettings | None = None,
    *,
    use_cache: bool = True,
    progress: Progress = noop,
    label: str = "token statistics",
) -> list[TokenStats]:
    """Per-token statistics for every text (cached). Empty texts give zero-length stats.

    Parameters
    ----------
    lm : LoadedModel
        The causal LM.
    texts : sequence of str
        The texts, duplicates allowed (each distinct text is computed once).
    settings : StatsSettings, optional
        Window, prefix, batch budget...; None: the defaults.
    use_cache : bool
        Read and write the disk cache (namespace ``stats``).
    progress : Progress
        Progress callback.
    label : str
        What the progress messages call this pass.

    Returns
    -------
    list of TokenStats
        One per text, in order.
    """
    st = settings or StatsSettings()
    cache = ArrayCache("stats", cache_settings(lm, st), enabled=use_cache)
    hashes = [text_hash(t) for t in texts]
    look = cache.lookup(hashes, TokenStats.from_arrays, lambda i, a: entry_problem(lm, texts[i], a, st))
    todo = look.missing
    compute_stats.last_cache = cache  # for tests/benchmarks: hits and misses of the last call
    if not todo:
        progress(f"{label}: all {len(texts)} texts cached", 1.0)
        return look.results

    def store(i: int, s: TokenStats) -> None:
        cache.put(hashes[i], s.to_arrays())
        look.fill(hashes[i], s)

    # a long text's windows done so far: its partial entry, resumed from on any engine
    partial = Partials(lambda i: cache.get_partial(hashes[i]), lambda i, a: cache.put_partial(hashes[i], a),
                       lambda i: cache.drop_partial(hashes[i]))
    engine = current_engine()
    t_start = time.time()
    tokens = run_on_engine(engine, lm, {look.first(h): texts[look.first(h)] for h in todo}, st, store,
                           partial=partial, progress=progress, label=label)
    if use_cache and engine.in_process:  # this machine's speed, for the estimate shown before a run
        from ..estimate import record

        record(tokens, time.time() - t_start, lm.n_params, lm.device, lm.identity)
    progress(f"{label}: done ({len(todo)} texts scored, {look.n_cached} cached)", 1.0)
    return look.results


compute_stats.last_cache = None  # type: ignore[attr-defined]
