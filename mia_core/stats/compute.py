"""The passes, in this process: what a unit of work (:mod:`.workload`) runs on any engine.

:func:`compute_here` runs texts' windows (:mod:`.windows`): texts that see a whole condition against
its cached keys/values (:mod:`.conditioned`), texts that share a prefix from where they differ
(:mod:`.families`), the other one-window texts in length-sorted batches (:func:`_run_short`), all
under one batch budget that halves on out of memory (:mod:`.memory`). :func:`window_rows` runs a
range of a long text's windows and gives each batch back as it is done (the engine's rows: stored, and kept in the text's
partial cache entry, by :mod:`.workload`). :func:`plan_windows` is what the cutting needs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..progress import Progress, noop
from .conditioned import _run_conditioned
from .families import SHARED_MIN_TOKENS, _run_families
from .memory import _Budget, batches_by_length, out_of_memory, run_batches
from .reduce import reduce_chunks
from .settings import StatsSettings, tokenize
from .types import ALL_FIELDS, TokenStats
from .windows import _Job, make_jobs

if TYPE_CHECKING:  # mia_core.models (huggingface_hub, safetensors) loads with a model: ``mia --help`` stays light
    from ..models import LoadedModel

def compute_here(lm: LoadedModel, texts: Sequence[str], st: StatsSettings, *, progress: Progress = noop,
                 label: str = "token statistics", on_done=None) -> list[TokenStats]:
    """The statistics of one-window ``texts`` in this process, no cache (a unit of work on any engine;
    a longer text's windows go through :func:`window_rows`): texts that see the whole condition against
    its cached keys/values, texts that share a prefix from where they differ, the others in
    length-sorted batches; all under one batch budget that halves, for the rest of the call, on out of
    memory.
    ``on_done(index, stats)`` is called for each text as soon as it is done."""
    jobs = make_jobs(lm, texts, st, want_vp=st.vocab_probs)
    condition = tokenize(lm, st.condition) if st.condition else None
    results: list[TokenStats | None] = [None] * len(jobs)
    total_windows = sum(len(j.windows) for j in jobs) or 1
    done = {"w": 0}

    def tick():
        done["w"] = min(total_windows, done["w"] + 1)  # a fallback to the plain path may count a text twice
        progress(f"{label}: {done['w']}/{total_windows} windows", done["w"] / total_windows)

    def finish(job: _Job):
        results[job.idx] = job.stats()
        if on_done is not None:
            on_done(job.idx, results[job.idx])

    short = [j for j in jobs if len(j.windows) <= 1]
    if len(short) < len(jobs):
        raise ValueError("compute_here takes one-window texts; a longer text's windows go through window_rows")
    for j in short:
        if not j.windows:  # fewer than two tokens in the sequence: nothing to predict
            finish(j)
    budget = _Budget(st.resolved_batch_tokens(lm))  # halved, for the rest of the call, when a batch runs out of memory
    if condition is not None:  # texts that see the whole condition: its key/value cache is computed once
        shared = [j for j in short if j.windows and j.n_condition == len(condition)]
        via_cache = _run_conditioned(lm, shared, budget, finish, tick)
        short = [j for j in short if j not in via_cache]
    elif not st.vocab_probs:  # one-word neighbours, modified copies: run from where they differ
        via_base = set(map(id, _run_families(lm, [j for j in short if j.windows], budget, finish, tick)))
        short = [j for j in short if id(j) not in via_base]
    _run_short(lm, [j for j in short if j.windows], budget, finish, tick)
    return results  # type: ignore[return-value]




def plan_windows(lm: LoadedModel, texts: Sequence[str], settings: StatsSettings
                 ) -> list[tuple[int, list[int], tuple]]:
    """For each text: its number of tokens, the token index where each of its windows' predictions
    start (what a distributed engine needs to cut a long text into window ranges and put them back),
    and its first ``SHARED_MIN_TOKENS`` + 2 tokens (texts that share them may share a prefix pass)."""
    jobs = make_jobs(lm, texts, settings, want_vp=False)
    return [(len(j.ids), [max(0, s + 1 - j.offset) for s in j.windows], tuple(j.ids[:SHARED_MIN_TOKENS + 2].tolist()))
            for j in jobs]


def window_rows(lm: LoadedModel, text: str, settings: StatsSettings, w0: int, w1: int, progress: Progress = noop):
    """Windows ``[w0, w1)`` of ``text``, a forward batch at a time: ``(t0, t1, windows, arrays)`` with the
    per-token arrays of text tokens ``[t0, t1)`` and, with ``vocab_probs``, ``"vp"``: that batch's share of
    the summed predicted distribution. Windows are independent passes, so a long text's ranges can run on
    different workers; put back in order they are the whole text's arrays."""
    (job,) = make_jobs(lm, [text], settings, want_vp=settings.vocab_probs)
    if not (0 <= w0 < w1 <= len(job.windows)):
        raise ValueError(f"window range [{w0}, {w1}) outside the text's {len(job.windows)} windows")
    done = {"w": 0}

    def tick():
        done["w"] += 1
        progress(f"{done['w']}/{w1 - w0} windows", done["w"] / (w1 - w0))

    yield from _run_windows(lm, job, w0, w1, _Budget(settings.resolved_batch_tokens(lm)), tick)


def _run_short(lm, jobs: list[_Job], budget: _Budget, finish, tick):
    """One-window texts in length-sorted batches (tight: few padding tokens)."""
    lengths = [len(j.window(0)) for j in jobs]
    queue = [[jobs[i] for i in b] for b in batches_by_length(lengths, budget.tokens, tight=True)]

    def split(batch: list[_Job]) -> list[list[_Job]]:
        sub = batches_by_length([len(j.window(0)) for j in batch], budget.tokens)
        if len(sub) == 1:  # the budget still holds the whole batch: split it in two
            half = (len(batch) + 1) // 2
            sub = [list(range(half)), list(range(half, len(batch)))]
        return [[batch[i] for i in b] for b in sub]

    for batch, _ in run_batches(lm, budget, queue, lambda b: _forward(lm, [(j, 0) for j in b]),
                                length=lambda b: max(len(j.window(0)) for j in b), split=split):
        for j in batch:
            tick()
            finish(j)


def _run_windows(lm, job: _Job, w0: int, w1: int, budget: _Budget, tick):
    """Windows ``[w0, w1)`` of a text of several windows, as many per batch as the budget holds; yields
    each batch's ``(t0, t1, windows, arrays)`` (its tokens, and its own vocabulary sum)."""
    def per_batch() -> int:
        return max(1, budget.tokens // job.context)

    def forward(ws: list[int]) -> None:
        if job.vp is not None:
            job.vp = np.zeros_like(job.vp)  # this batch's share (the buffers are written only on success)
        _forward(lm, [(job, k) for k in ws])

    queue = [list(range(w0, min(w1, w0 + per_batch())))] if w0 < w1 else []
    for ws, _ in run_batches(lm, budget, queue, forward, length=lambda ws: job.context,
                             split=lambda ws: [ws[:per_batch()]]):
        for _ in ws:
            tick()
        w = ws[-1] + 1
        if w < w1:
            queue.append(list(range(w, min(w1, w + per_batch()))))
        t0 = max(0, job.windows[ws[0]] + 1 - job.offset)
        t1 = min(len(job.ids), job.windows[ws[-1]] + len(job.window(ws[-1])) - job.offset)
        arrays = {f: job.out[f][t0:t1].copy() for f in ALL_FIELDS}
        if job.vp is not None:
            arrays["vp"] = job.vp
        yield t0, t1, len(ws), arrays


def _forward(lm: LoadedModel, items: list[tuple[_Job, int]]):
    """One forward pass over a batch of windows; reduce logits to per-token scalars.

    The job buffers are written only once the whole batch is reduced, so a batch that runs
    out of memory (raised as :class:`.memory._OutOfMemory`) leaves them untouched and can be
    retried in smaller pieces.
    """
    import torch

    wins = [j.window(w) for j, w in items]
    L = max(len(x) for x in wins)
    pad = lm.tokenizer.pad_token_id or 0
    ids = np.full((len(wins), L), pad, dtype=np.int64)
    mask = np.zeros((len(wins), L), dtype=np.int64)
    for r, x in enumerate(wins):
        ids[r, : len(x)] = x
        mask[r, : len(x)] = 1
    dev = lm.device
    pending = []  # (job, text-token indices, reduced arrays)
    with out_of_memory(lm, f"{len(wins)} x {L} tokens"), torch.inference_mode():
        out = lm.model(input_ids=torch.from_numpy(ids).to(dev), attention_mask=torch.from_numpy(mask).to(dev))
        logits = out.logits
        del out
        for r, ((job, w), x) in enumerate(zip(items, wins)):
            start_seq = job.windows[w]
            # predictions at window positions 0..len(x)-2 are for seq positions start+1..start+len(x)-1
            tok_idx = np.arange(start_seq + 1, start_seq + len(x)) - job.offset  # index into text tokens
            # positions predicting condition tokens (conditioned passes only) are not reduced
            first = max(0, job.offset - 1 - start_seq)
            for c0, c1, red in reduce_chunks(logits[r, : len(x) - 1], x[1:], job.vp is not None, start=first):
                pending.append((job, tok_idx[c0:c1], red))
        del logits
    for job, ti, red in pending:
        job.put(ti, red)
