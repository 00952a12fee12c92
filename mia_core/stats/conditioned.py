"""Conditioned texts against one key/value cache of the condition (ReCaLL's prefix, :mod:`.windows`).

Texts that see the whole condition in one window are scored against a key/value cache of
``[prefix token] + condition`` computed once per call (same numbers as the full-sequence pass up
to float rounding; the condition, e.g. twelve shots, is often ten times longer than a text), each
batch continuing it (:func:`.continuation.continue_from_cache`).
"""
from __future__ import annotations

import numpy as np

from .continuation import continue_from_cache, repeated_cache
from .memory import _Budget, _OutOfMemory, batches_by_length, out_of_memory, run_batches
from .reduce import reduce_chunks
from .windows import _Job


def _run_conditioned(lm, jobs: list[_Job], budget: _Budget, finish, tick) -> list[_Job]:
    """Conditioned texts that fit in one window with the whole condition, scored against a key/value
    cache of ``[prefix token] + condition`` computed once (the condition is often much longer than
    the texts: without the cache every text would pay for it again). The same numbers as the full
    sequence pass up to float rounding. Returns the jobs done; a model that cannot take a cache
    (an exception other than out-of-memory on the first batch) leaves them all to the plain path.
    """
    import torch

    from ..models import returned_cache

    if not jobs:
        return []
    head = jobs[0].seq[: jobs[0].offset]  # identical for these jobs: [prefix] + the whole condition
    try:
        with out_of_memory(lm, "the condition", free=True), torch.inference_mode():
            out = lm.model(input_ids=torch.from_numpy(head[None].astype(np.int64)).to(lm.device), use_cache=True)
            cache, last = returned_cache(out), out.logits[0, -1:].float()
            del out
        if cache is None:
            return []
    except Exception:  # noqa: BLE001 - no cache support (or no memory for it): the plain path
        return []
    n_head = len(head)
    done: list[_Job] = []

    def forward(batch):
        try:
            return _forward_cached(lm, batch, cache, last, n_head)
        except _OutOfMemory:
            raise
        except Exception:  # noqa: BLE001 - the model took the cache for the head but not for a batch
            if done:
                raise
            return None

    # a row holds the head's cached keys/values as well as the text: budget both
    queue = [[jobs[i] for i in b] for b in batches_by_length([n_head + len(j.ids) for j in jobs], budget.tokens)]
    for batch, pending in run_batches(lm, budget, queue, forward, length=lambda b: n_head + max(len(j.ids) for j in b)):
        if pending is None:
            return []
        for job, ti, red in pending:
            job.put(ti, red)
        for j in batch:
            tick()
            finish(j)
            done.append(j)
    return done


def _forward_cached(lm, batch: list[_Job], head_cache, head_last, n_head: int) -> list:
    """One batch of texts after the cached head: ``(job, text-token indices, reduced arrays)`` (nothing
    written yet)."""
    import torch

    L = max(len(j.ids) for j in batch)
    pending = []  # (job, text-token indices, reduced arrays)
    with out_of_memory(lm, f"{len(batch)} x {L} tokens after {n_head}"):
        cache = repeated_cache(head_cache, len(batch))
        with torch.inference_mode():
            logits = continue_from_cache(lm, cache, n_head, [n_head] * len(batch), [j.ids for j in batch])
            del cache
            for r, j in enumerate(batch):
                n = len(j.ids)
                # text token 0 is predicted by the head's last position, token t by text position t-1
                lg_all = torch.cat([head_last.to(logits.device), logits[r, : n - 1].float()])
                for c0, c1, red in reduce_chunks(lg_all, j.ids, j.vp is not None):
                    pending.append((j, np.arange(c0, c1), red))
            del logits
    return pending
