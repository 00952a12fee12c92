"""Cost of turning logits into the per-token statistics (``mia_core.stats.reduce``): one piece or row blocks.

``_reduce`` makes about ten passes over a piece's [positions, vocabulary] float32 buffers (log-softmax, exp,
max, first argmax, mean, variance, rank). A piece of 1,024 positions of SmolLM2's 49,152-word vocabulary is
200 MB a buffer: each pass streams it from memory. In row blocks of ``ROW_BLOCK`` positions (3 MB a buffer) the
passes after the first run from the cache. The numbers are the same bit for bit (``tests/test_engine.py``).

Prints, on one torch thread:
0. the machine: CPU, the fp32 matrix-product roof and the memory bandwidth (a 400 MB sum), measured in this run;
1. ms per position for pieces of 64 to 1,024 positions, with and without the vocabulary sum, one piece
   (``ROW_BLOCK`` set past the piece: the code as it was) against row blocks;
2. a SmolLM2 pass (the embedded model, cache off) over ``--texts`` passages of ``--words`` words from the
   bundled books (one window each up to 2,048 tokens), both ways, and whether every array is equal.

Usage: python benchmarks/reduce.py [--texts 4] [--words 1500]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from neighbours import cpu_name, roof_gflops  # noqa: E402 - the sibling benchmark's helpers


def bandwidth_gbs() -> float:
    """GB/s of a sum over a 400 MB float32 array (read once)."""
    import torch

    x = torch.ones(100_000_000)
    x.sum()
    t, k = time.perf_counter(), 0
    while time.perf_counter() - t < 1.0:
        x.sum()
        k += 1
    return 4e8 * k / (time.perf_counter() - t) / 1e9


def timed(f, reps: int = 3) -> float:
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", type=int, default=4)
    ap.add_argument("--words", type=int, default=1500)
    args = ap.parse_args()

    import numpy as np
    import torch

    import mia_core.stats.reduce as SR

    torch.set_num_threads(1)
    print(f"CPU: {cpu_name()}; 1 torch thread; fp32 matmul roof {roof_gflops():.0f} GFLOP/s; "
          f"memory bandwidth (one thread, a sum) {bandwidth_gbs():.1f} GB/s")
    block = SR.ROW_BLOCK
    g = torch.Generator().manual_seed(0)
    v = 49152
    print(f"\n1. _reduce of random logits, vocabulary {v}: ms per position")
    print(f"{'positions':>9}  {'vp':>5}  {'one piece':>9}  {'blocks of ' + str(block):>12}  equal")
    for n in (64, 128, 256, 512, 1024):
        lg, tg = torch.randn(n, v, generator=g) * 4, torch.randint(0, v, (n,), generator=g)
        for vp in (False, True):
            SR.ROW_BLOCK = 10**9
            one, a = timed(lambda: SR._reduce(lg, tg, vp)), SR._reduce(lg, tg, vp)
            SR.ROW_BLOCK = block
            blocks, b = timed(lambda: SR._reduce(lg, tg, vp)), SR._reduce(lg, tg, vp)
            same = all(np.array_equal(a[k], b[k]) for k in a)
            print(f"{n:>9}  {vp!s:>5}  {one * 1e3 / n:9.3f}  {blocks * 1e3 / n:12.3f}  {same}")

    from mia_core.models import load_causal_lm
    from mia_core.stats import compute_stats

    books = sorted((ROOT / "tests" / "data" / "books").glob("*.txt"))
    texts = [" ".join(b.read_text(encoding="utf-8").split()[: args.words]) for b in books[: args.texts]]
    lm = load_causal_lm("smollm2")
    n_tok = sum(len(lm.tokenizer(t)["input_ids"]) for t in texts)
    print(f"\n2. SmolLM2-135M over {len(texts)} passages of {args.words} words ({n_tok} tokens), cache off")
    out = {}
    for name, rb in (("one piece", 10**9), (f"blocks of {block}", block)):
        SR.ROW_BLOCK = rb
        compute_stats(lm, texts[:1], use_cache=False)  # warm
        t = time.perf_counter()
        out[name] = (compute_stats(lm, texts, use_cache=False), time.perf_counter() - t)
        print(f"  {name:>14}: {out[name][1]:6.2f} s ({out[name][1] / n_tok * 1e3:.2f} ms per token)")
    SR.ROW_BLOCK = block
    (a, ta), (b, tb) = out.values()
    fields = ("logprob", "max_logprob", "mu", "sigma", "entropy", "rank", "top_id")
    same = all(np.array_equal(getattr(x, f), getattr(y, f), equal_nan=True) for x, y in zip(a, b) for f in fields)
    print(f"  every array equal: {same}; {(1 - tb / ta) * 100:.1f} % less time")


if __name__ == "__main__":
    main()
