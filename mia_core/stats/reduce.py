"""Turning logits into the per-token arrays (:mod:`.types`): what is kept of a forward pass.

Full-vocabulary logits are reduced in chunks of :data:`REDUCE_CHUNK` positions
(:func:`reduce_chunks`), in float32 maths, to a handful of scalars per position
(:func:`_reduce`); nothing of vocabulary size is kept per token (the vocabulary sum R^GP, Meeus
et al. §4.2.1, is summed over positions).
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

REDUCE_CHUNK = 1024  # positions reduced at once: REDUCE_CHUNK x vocab floats in memory
ROW_BLOCK = 32  # rows reduced together inside a chunk on the CPU (_row_blocks)


def reduce_chunks(logits, targets: np.ndarray, want_vp: bool, start: int = 0) -> Iterator[tuple[int, int, dict]]:
    """``(c0, c1, arrays)``: :func:`_reduce` of the predictions ``logits[c0:c1]`` ([n, V]) of tokens
    ``targets[c0:c1]``, for positions ``start..n-1`` in chunks of :data:`REDUCE_CHUNK`."""
    import torch

    n = logits.shape[0]
    for c0 in range(start, n, REDUCE_CHUNK):
        c1 = min(n, c0 + REDUCE_CHUNK)
        lg = logits[c0:c1].float()
        yield c0, c1, _reduce(lg, torch.from_numpy(targets[c0:c1].astype(np.int64, copy=False)).to(lg.device), want_vp)


def _first_argmax(x, mx, block: int = 1024):
    """The first column of each row of ``x`` that holds the row's maximum ``mx`` (``x.argmax(-1)``,
    which, like ``x.max(-1)``, is several times slower than a plain ``amax`` on the CPU): the first
    block of columns whose maximum is ``mx``, then the first column of that block. Exact: only
    comparisons of values taken from ``x`` itself."""
    import torch

    n, v = x.shape
    nb = v // block
    if nb < 2 or x.stride(1) != 1:
        return x.argmax(-1)
    bm = x.as_strided((n, nb, block), (x.stride(0), block, 1)).amax(-1)
    if nb * block < v:
        bm = torch.cat([bm, x[:, nb * block:].amax(-1, keepdim=True)], 1)
    blk = (bm == mx.unsqueeze(1)).view(torch.uint8).argmax(-1)
    cols = (blk.unsqueeze(1) * block + torch.arange(block, device=x.device)).clamp_(max=v - 1)
    seg = x.gather(1, cols)
    return blk * block + (seg == mx.unsqueeze(1)).view(torch.uint8).argmax(-1)


def _row_blocks(n: int, device) -> list[tuple[int, int]]:
    """Row ranges that :func:`_reduce` reduces one at a time: on the CPU, blocks of :data:`ROW_BLOCK` rows (the
    last one takes the rest: ``ROW_BLOCK..2*ROW_BLOCK-1`` rows), so that the ten passes over a block's [rows, V]
    buffers run from the cache, not from memory (1,024 positions of a 49k vocabulary: 0.65 s in one piece, 0.19 s
    in blocks of 32, one thread; ``benchmarks/reduce.py``). The numbers are the same bit for bit: each row's
    reductions run over its own V values alone. A block is never smaller than torch's thread count (torch may
    split one row's sum across threads when a tensor has fewer rows than threads; not seen with torch 2.13, kept
    as a guard). On a GPU: one piece, as before."""
    import torch

    if getattr(device, "type", "cpu") != "cpu":
        return [(0, n)]
    b = max(ROW_BLOCK, torch.get_num_threads())
    if n < 2 * b:
        return [(0, n)]
    starts = list(range(0, n - b + 1, b))
    return [(s, starts[i + 1] if i + 1 < len(starts) else n) for i, s in enumerate(starts)]


def _reduce(logits, targets, want_vp: bool) -> dict[str, np.ndarray]:
    """Reduce [n, V] logits to per-position scalars (float32 maths), in row blocks (:func:`_row_blocks`); the
    vocabulary sum (``want_vp``) over all ``n`` rows at once, as before (a sum over rows in blocks would add them
    in another order)."""
    import torch

    blocks = _row_blocks(logits.shape[0], logits.device)
    if want_vp:  # the log-probabilities of all rows, for their sum; the blocks take their rows of them
        lp = torch.log_softmax(logits, dim=-1)
        p = lp.exp()
        parts = [_reduce_rows(lp[a:b], p[a:b], targets[a:b]) for a, b in blocks]
    else:
        parts = [_reduce_rows(*_probs(logits[a:b]), targets[a:b]) for a, b in blocks]
    out = parts[0] if len(parts) == 1 else {k: np.concatenate([q[k] for q in parts]) for k in parts[0]}
    if want_vp:
        out["vp"] = p.sum(0).double().cpu().numpy()
    return out


def _probs(logits):
    """``(log_softmax(logits), its exp)``."""
    import torch

    lp = torch.log_softmax(logits, dim=-1)
    return lp, lp.exp()


def _reduce_rows(lp, p, targets) -> dict[str, np.ndarray]:
    """:func:`_reduce` of a block of rows from their log-probabilities ``lp`` and probabilities ``p``, without the
    vocabulary sum."""
    import torch

    tl = lp.gather(1, targets.long().unsqueeze(1)).squeeze(1)
    # the max and its (first) index, as lp.max(-1) gives them, in a fifth of its time (max with
    # indices and argmax take about 4 ms per 64 positions of a 49k vocabulary; amax 0.2 ms)
    mx = lp.amax(-1)
    top = _first_argmax(lp, mx)
    mu = (p * lp).sum(-1)
    # the variance as E[(lp - mu)^2], not E[lp^2] - mu^2: the difference of two numbers near 100 lost
    # about four digits in float32 (sigma moved by up to 5e-4 with the batch's shape or thread count).
    # In place on one [n, V] buffer: as fast as the old formula (0.49 against 0.51 s per 1,024 positions
    # of a 49k vocabulary; 0.72 s with temporaries)
    dev = lp - mu.unsqueeze(1)
    sigma = dev.square_().mul_(p).sum(-1).sqrt()
    del dev
    # the count of larger log-probabilities as uint8 summed into int32 (a bool sum goes through int64: 3.8
    # against 2.1 ms per 64 positions)
    rank = (lp > tl.unsqueeze(1)).view(torch.uint8).sum(-1, dtype=torch.int32) + 1
    return {
        "logprob": tl.cpu().numpy().astype(np.float32),
        "max_logprob": mx.cpu().numpy().astype(np.float32),
        "mu": mu.cpu().numpy().astype(np.float32),
        "sigma": sigma.cpu().numpy().astype(np.float32),
        "entropy": (-mu).cpu().numpy().astype(np.float32),
        "rank": rank.cpu().numpy().astype(np.int32),
        "top_id": top.cpu().numpy().astype(np.int32),
    }
