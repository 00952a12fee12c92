"""What verifying cache entries on read costs, against the run it serves (issue 27: under 1 %).

Scores N real texts (Gutenberg paragraphs from tests/data, or --texts FILE) with the embedded SmolLM2 into an
empty cache (the cold run), then reads them back twice: with the entry checks (what every run does) and with
the checks switched off (a plain np.load), so the difference is the checks' cost. Prints the figures, the CPU
and the machine's fp32 matmul roof measured in the same run.

    python benchmarks/cache_verify.py [--n 200]
"""
from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cpu() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _roof() -> float:
    import torch

    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    for _ in range(3):
        a @ b
    t0, n = time.perf_counter(), 20
    for _ in range(n):
        a @ b
    return 2 * 1024**3 * n / (time.perf_counter() - t0) / 1e9


def _texts(n: int) -> list[str]:
    paras = []
    for f in sorted((ROOT / "tests" / "data").rglob("*.txt")):
        for p in f.read_text(encoding="utf-8", errors="replace").split("\n\n"):
            p = " ".join(p.split())
            if 200 <= len(p) <= 1500:
                paras.append(p)
    return list(dict.fromkeys(paras))[:n]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()
    os.environ["MIA_CACHE_DIR"] = tempfile.mkdtemp(prefix="mia-bench-cache-")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import mia_core.cache as cache_mod
    from mia_core.models import load_causal_lm
    from mia_core.stats import StatsSettings, compute_stats

    texts = _texts(args.n)
    lm = load_causal_lm(None)
    st = StatsSettings()
    t0 = time.perf_counter()
    compute_stats(lm, texts, st)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    compute_stats(lm, texts, st)
    warm = time.perf_counter() - t0
    assert compute_stats.last_cache.hits == len(texts)

    real_read = cache_mod.ArrayCache._read

    def unchecked(self, p, h, check):  # what a read costs without any check
        import numpy as np

        with np.load(p, allow_pickle=False) as z:
            out = {k: z[k] for k in z.files}
        out.pop(cache_mod.ENTRY, None)
        return out, ""

    cache_mod.ArrayCache._read = unchecked
    t0 = time.perf_counter()
    compute_stats(lm, texts, st)
    plain = time.perf_counter() - t0
    cache_mod.ArrayCache._read = real_read
    n_tok = sum(len(lm.tokenizer(t)["input_ids"]) for t in texts)
    checks = max(warm - plain, 0.0)
    print(f"CPU: {_cpu()}, {os.cpu_count()} logical CPUs; fp32 matmul roof {_roof():.0f} GFLOP/s")
    print(f"{len(texts)} texts, {n_tok:,} tokens, embedded SmolLM2 fp32")
    print(f"cold run (model passes, entries written): {cold:.2f} s")
    print(f"warm run, entries verified:  {warm:.3f} s")
    print(f"warm run, checks switched off: {plain:.3f} s")
    print(f"the checks: {checks * 1e3:.1f} ms = {100 * checks / cold:.2f} % of the cold run, "
          f"{1e3 * checks / len(texts):.2f} ms per entry")


if __name__ == "__main__":
    main()
