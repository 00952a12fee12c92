"""The one batched, windowed forward pass of a causal LM, reduced to per-token statistics.

This is the only place that runs a causal LM over texts (the gradient pass aside:
``mia_core.stats.gradients``). What each module holds:

* ``types`` — :class:`TokenStats`, a text's per-token statistics (log-probability of the true
  token, max log-probability, mean and standard deviation of the log-probabilities (Min-K%++),
  entropy, rank, top token; optionally the summed predicted distribution, Meeus et al. §4.2.1's
  R^GP), and the names of its arrays (:data:`FIELDS`, :data:`INT_FIELDS`).
* ``settings`` — :class:`StatsSettings` (window, prefix, batch budget, vocabulary sums,
  condition), the prefix put in front of each text (``"auto"``: what the model saw in training;
  :func:`resolve_prefix`, :func:`scores_first_token`, :func:`settings_for`), :func:`tokenize` and
  the disk-cache key :func:`cache_settings`.
* ``windows`` — how a text becomes windows of C tokens with stride C-1 (Meeus et al. §4.1), with
  ReCaLL's condition in front (:func:`kept_condition_tokens`); the per-text job and its buffers.
* ``reduce`` — full-vocabulary logits reduced, in chunks of positions, to those per-token arrays.
* ``memory`` — batches under a token budget (:func:`batches_by_length`) and the one out-of-memory
  wrapper and retry loop: the budget halves for the rest of the call, down to one window per batch.
* ``continuation`` — :func:`continue_from_cache`, the pass that continues a sequence from a cached
  prefix's keys/values (used by the two next modules and by the offline neighbour generator).
* ``families`` — texts that share a prefix (a text's one-word neighbours) run from where they differ.
* ``conditioned`` — conditioned texts run against one cache of the condition.
* ``compute`` — the passes in this process (:func:`compute_here`: one-window texts;
  :func:`window_rows`: a range of a long text's windows, a batch at a time; :func:`plan_windows`).
* ``workload`` — the statistics as an engine workload (:class:`TokenStatsWorkload`): units cut for
  the current engine, rows stored as they come, a long text's partial cache entry written and
  resumed from; the same steps in this process and on Ray workers.
* ``entry`` — :func:`compute_stats`, the entry point: the disk cache, then the engine.

Beside the forward pass, the other per-text statistics the attacks read, each cached the same way
(``mia_core.cache.ArrayCache.lookup``): ``gradients`` (GradNorm's backward pass, Wang et al. 2024),
``embeddings`` (SMIA's sentence embeddings of texts and neighbours) and ``token_frequency`` (DC-PDD's
token frequencies of a reference corpus).
"""
from .compute import compute_here, plan_windows, window_rows
from .entry import compute_stats, entry_problem
from .continuation import continue_from_cache
from .families import SHARED_MAX_FAMILY, SHARED_MIN_TOKENS
from .memory import batches_by_length
from .reduce import REDUCE_CHUNK
from .settings import (DEFAULT_BATCH_TOKENS, DEFAULT_BATCH_TOKENS_GPU, DEFAULT_CONTEXT_CAP, PREFIX_MODES, STATS_VERSION,
                       StatsSettings, cache_settings, prefix_key, prefix_mode, prefix_token_id, resolve_prefix,
                       scores_first_token, settings_for, tokenize, tokenizer_prefix_id)
from .types import ALL_FIELDS, FIELDS, INT_FIELDS, TokenStats
from .windows import kept_condition_tokens, window_starts
from .workload import PARTIAL_EVERY_S, TokenStatsWorkload

__all__ = [
    "ALL_FIELDS", "DEFAULT_BATCH_TOKENS", "DEFAULT_BATCH_TOKENS_GPU", "DEFAULT_CONTEXT_CAP", "FIELDS", "INT_FIELDS",
    "PARTIAL_EVERY_S", "PREFIX_MODES", "REDUCE_CHUNK", "SHARED_MAX_FAMILY", "SHARED_MIN_TOKENS", "STATS_VERSION",
    "StatsSettings", "TokenStats", "TokenStatsWorkload", "compute_here", "batches_by_length", "cache_settings", "compute_stats", "continue_from_cache",
    "entry_problem", "kept_condition_tokens", "plan_windows", "prefix_key", "prefix_mode", "prefix_token_id",
    "resolve_prefix", "scores_first_token", "settings_for", "tokenize", "tokenizer_prefix_id", "window_rows",
    "window_starts",
]
