"""Shared prefixes: texts that start with the same tokens are scored from where they differ.

Texts of one window that start with the same tokens as another text of the call (a text's one-word
neighbours, modified copies) are grouped in families (:func:`_families`); each family's base runs
once with its keys/values kept, and every other member runs only from its first token that differs
from the base (:func:`.continuation.continue_from_cache`). Same numbers as the plain pass up to
float rounding (checked against a plain pass of one member on the first batch of every call; a
model whose cache cannot be reused this way is left to the plain path).
"""
from __future__ import annotations

import numpy as np

from .continuation import cache_layers, continue_from_cache, stacked_cache
from .memory import _Budget, _OutOfMemory, batches_by_length, out_of_memory, run_batches
from .reduce import _reduce
from .types import ALL_FIELDS
from .windows import _Job

SHARED_MIN_TOKENS = 4  # texts that share at least this many leading tokens (prefix token included) form a family
SHARED_MAX_FAMILY = 512  # at most this many texts reuse one base text's keys/values


def _lcp(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    d = np.nonzero(a[:n] != b[:n])[0]
    return int(d[0]) if len(d) else n


def _families(jobs: list[_Job]) -> list[tuple[_Job, list[tuple[_Job, int]]]]:
    """Texts that share a long token prefix (the one-word neighbours of a text, modified copies):
    ``(base, [(member, tokens it shares with base)])``. Sorting the token sequences puts all those
    that start with the same ``SHARED_MIN_TOKENS`` tokens in one run; the base is the member that
    shares the most tokens with the others (for neighbours: the one nearest the original text)."""
    cand = sorted((j for j in jobs if len(j.seq) > SHARED_MIN_TOKENS), key=lambda j: j.seq.tolist())
    runs: list[list[_Job]] = []
    for j in cand:
        if runs and len(runs[-1]) < SHARED_MAX_FAMILY and np.array_equal(
                runs[-1][0].seq[:SHARED_MIN_TOKENS], j.seq[:SHARED_MIN_TOKENS]):
            runs[-1].append(j)
        else:
            runs.append([j])
    out = []
    for run in runs:
        if len(run) < 2:
            continue
        adj = np.array([_lcp(a.seq, b.seq) for a, b in zip(run, run[1:])])
        # tokens member b shares with each other member: running minima of the neighbouring LCPs
        shared = [int(np.minimum.accumulate(adj[b:]).sum() + np.minimum.accumulate(adj[:b][::-1]).sum())
                  for b in range(len(run))]
        b = int(np.argmax(shared))
        base = run[b]
        out.append((base, [(j, min(_lcp(base.seq, j.seq), len(j.seq) - 1)) for i, j in enumerate(run) if i != b]))
    return out


def _run_families(lm, jobs: list[_Job], budget: _Budget, finish, tick) -> list[_Job]:
    """Families of texts that share a prefix (:func:`_families`), scored from where they differ.

    Each family's base text runs once (batched with other bases) and its keys/values are kept;
    every other member then runs only from its first token that differs from its base, attending
    to the base's keys/values for the tokens before it. Rows of many families share one batch
    (each row its own cache rows, attention mask and position ids). Predictions before the first
    difference are the base's own; the rest equal a plain pass up to float rounding. One-word
    neighbours differ from their text from a uniformly placed word on, so a neighbour attack runs
    about half the tokens. A model whose cache cannot be reused like this is caught on the first
    batch (one member is also run plainly and compared) and everything is left to the plain path.
    Returns the jobs done.
    """
    fams = _families(jobs)
    done: list[_Job] = []
    checked = False
    while fams:  # chunks of families whose bases' keys/values are held at once
        chunk, n_tok = [], 0
        while fams and (not chunk or n_tok + len(fams[0][0].seq) <= budget.tokens):
            n_tok += len(fams[0][0].seq)
            chunk.append(fams.pop(0))
        try:
            ok = _run_chunk(lm, chunk, budget, tick, finish, done, check=not checked)
        except _OutOfMemory:
            return done  # the plain path takes the rest, halving its batches as usual
        if not ok:
            return done
        checked = True
    return done


def _run_chunk(lm, chunk, budget: _Budget, tick, finish, done: list, check: bool) -> bool:
    """One chunk of families: their bases, then their members, each text finished (cached) and
    put in ``done`` as soon as it is reduced, so an interrupted run keeps what it scored. False:
    this model cannot reuse the cache (the texts not in ``done`` go the plain way)."""
    got = _run_bases(lm, chunk, budget, tick, finish, done, check)
    if got is None:
        return False
    kv_of, vals_of, at_p = got
    rows = [(m, p, i) for i, (_, members) in enumerate(chunk) for m, p in members]
    rows.sort(key=lambda r: len(r[0].seq) - r[1])
    queue = [[rows[i] for i in b] for b in batches_by_length([len(m.seq) - p for m, p, _ in rows], budget.tokens, tight=True)]
    any_rows = False

    def forward(batch):
        try:
            return _forward_rows(lm, batch, kv_of, vals_of, at_p)
        except _OutOfMemory:
            raise
        except Exception:  # noqa: BLE001 - the model did not take the assembled cache
            if any_rows or not check:
                raise
            return None

    for batch, pending in run_batches(lm, budget, queue, forward, length=lambda b: max(len(m.seq) - p for m, p, _ in b),
                                      fits=lambda b: len(b) * max(p for _, p, _ in b) <= 2 * budget.tokens):
        # fits: the rows' cached keys/values take memory too
        if pending is None:
            return False
        if check and not any_rows and not _matches_plain(lm, batch[0][0], pending[0]):
            return False
        any_rows = True
        for (m, _, _), vals in zip(batch, pending):
            _write(m, vals)
            tick()
            finish(m)
            done.append(m)
    return True


def _run_bases(lm, chunk, budget: _Budget, tick, finish, done: list, check: bool):
    """The chunk's bases, plain passes that keep their keys/values (each base finished as it is
    reduced): ``(keys/values per base, base predictions per base, each member's prediction of its
    first differing token)``, or None when this model cannot reuse its cache (the first chunk)."""
    import torch

    from ..models import returned_cache

    dev = lm.device
    kv: list = []  # per base: (keys, values) per layer, [kv_heads, len, dim]
    base_vals: list = []
    at_p: dict[int, dict] = {}  # id(member) -> reduced prediction of its first differing token
    pad = lm.tokenizer.pad_token_id or 0
    bases = [b for b, _ in chunk]
    for group in batches_by_length([len(b.seq) for b in bases], budget.tokens, tight=True):
        L = max(len(bases[i].seq) for i in group)
        ids = np.full((len(group), L), pad, dtype=np.int64)
        mask = np.zeros((len(group), L), dtype=np.int64)
        for r, i in enumerate(group):
            ids[r, : len(bases[i].seq)] = bases[i].seq
            mask[r, : len(bases[i].seq)] = 1
        try:
            with out_of_memory(lm, "bases", free=True), torch.inference_mode():
                out = lm.model(input_ids=torch.from_numpy(ids).to(dev), attention_mask=torch.from_numpy(mask).to(dev),
                               use_cache=True)
                layers = cache_layers(returned_cache(out))
                if layers is None:
                    return None
                for r, i in enumerate(group):
                    b, members = chunk[i]
                    n = len(b.seq)
                    kv_i = [(k[r, :, :n].clone(), v[r, :, :n].clone()) for k, v in layers]
                    lg = out.logits[r]
                    vals = _reduce(lg[: n - 1].float(), torch.from_numpy(b.seq[1:]).to(lg.device), False)
                    if members:
                        red = _reduce(lg[[p - 1 for _, p in members]].float(),
                                      torch.tensor([int(m.seq[p]) for m, p in members], device=lg.device), False)
                        for k, (m, _) in enumerate(members):
                            at_p[id(m)] = {f: red[f][k : k + 1] for f in ALL_FIELDS}
                    kv.append((i, kv_i))
                    base_vals.append((i, vals))
                    _write(b, vals)  # a base is a plain pass with its cache kept: done now
                    tick()
                    finish(b)
                    done.append(b)
                del out, layers
        except _OutOfMemory:  # the plain path takes the rest
            raise
        except Exception:  # noqa: BLE001 - no cache support: the plain path
            if check:
                return None
            raise
    return dict(kv), dict(base_vals), at_p


def _forward_rows(lm, batch, kv_of, vals_of, at_p) -> list[dict]:
    """Member rows after their bases' first ``p`` tokens; per row the reduced arrays of seq
    positions 1..len-1 (nothing written yet)."""
    import torch

    H = max(p for _, p, _ in batch)
    S = max(len(m.seq) - p for m, p, _ in batch)
    out_rows = []
    with out_of_memory(lm, f"{len(batch)} x {S} tokens after {H}"):
        cache = stacked_cache([(kv_of[i], p) for _, p, i in batch])
        with torch.inference_mode():
            logits = continue_from_cache(lm, cache, H, [p for _, p, _ in batch], [m.seq[p:] for m, p, _ in batch])
            del cache
            for r, (m, p, i) in enumerate(batch):
                n = len(m.seq) - p
                rest = (_reduce(logits[r, : n - 1].float(), torch.from_numpy(m.seq[p + 1:]).to(logits.device), False)
                        if n > 1 else None)
                out_rows.append({f: np.concatenate([vals_of[i][f][: p - 1], at_p[id(m)][f]]
                                                   + ([rest[f]] if rest is not None else [])) for f in ALL_FIELDS})
            del logits
    return out_rows


def _write(job: _Job, vals: dict) -> None:
    """Predictions of seq positions 1..len-1 into the job's text-token buffers."""
    idx = np.arange(1, len(job.seq)) - job.offset
    keep = idx >= 0
    for f in ALL_FIELDS:
        job.out[f][idx[keep]] = vals[f][keep]


def _matches_plain(lm, job: _Job, vals: dict) -> bool:
    import torch

    with torch.inference_mode():
        logits = lm.model(input_ids=torch.from_numpy(job.seq[None]).to(lm.device)).logits[0, :-1].float()
        lp = torch.log_softmax(logits, -1).gather(1, torch.from_numpy(job.seq[1:, None]).to(logits.device))[:, 0]
    return bool(np.allclose(vals["logprob"], lp.cpu().numpy(), atol=2e-3, rtol=1e-3))
