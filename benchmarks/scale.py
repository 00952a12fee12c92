"""The Ray engine's scaling on one machine: a CPU-bound LOSS job on the local engine and on 1 and 2 Ray workers.

The job: ``--texts`` short texts (AG News test articles from ../shared/data when it exists, else the
bundled demo passages) scored by the embedded SmolLM2-135M, nothing cached (``use_cache=False``), one
torch thread everywhere (the local process and each worker), so 2 workers can use at most 2 cores.
Each engine's time is the wall time of the ``compute_stats`` call, model already loaded on the driver:
for Ray, each worker count is timed twice: a driver's first pass (a new pool: the actors' start and their
model load) and a later pass (the engine keeps its actors and their model between calls); the cluster's
start is printed on its own (it is paid once per session).

Prints the figures, the speed-up at 2 workers over 1 (goal >= 1.8x), Ray's overhead at 1 worker over
the local engine (goal <= 10 %), the same two figures over only the time the workers' units ran (from
the first unit's start to the last one's end: what a long job tends to, the pool's start left out),
that the losses are the same (max abs difference), the CPU and its
fp32 matrix-product roof, measured in the same run.

Usage: python benchmarks/scale.py [--texts 400] [--model smollm2] [--unit-tokens N]
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from neighbours import cpu_name, roof_gflops  # noqa: E402 - the sibling benchmark's helpers

AG_NEWS = ROOT.parent / "shared" / "data" / "agnews" / "test.csv"


def texts(n: int) -> tuple[list[str], str]:
    if AG_NEWS.exists():
        with AG_NEWS.open(newline="", encoding="utf-8") as f:
            rows = [f"{r[1]}. {r[2]}".replace("\\", " ") for r in csv.reader(f)]
        return rows[:n], f"AG News test articles ({AG_NEWS})"
    from mia_core.targets.demo import demo_dataset

    pool = list(demo_dataset().texts)
    return [pool[i % len(pool)] + ("" if i < len(pool) else f" ({i})") for i in range(n)], "the bundled demo passages"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=400)
    ap.add_argument("--model", default=None, help="default: the embedded SmolLM2-135M")
    ap.add_argument("--unit-tokens", type=int, default=None, help="tokens per unit of work (default: the engine's)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import numpy as np
    import torch

    from mia_core.engines import make_engine, use_engine
    from mia_core.models import load_causal_lm
    from mia_core.stats import compute_stats, tokenize

    torch.set_num_threads(1)
    job, source = texts(args.texts)
    lm = load_causal_lm(args.model, device="cpu")
    n_tokens = sum(len(tokenize(lm, t)) + 1 for t in job)
    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores; fp32 matmul roof (1 thread) {roof_gflops():.0f} GFLOP/s")
    print(f"job: {len(job)} texts from {source}, {n_tokens} tokens, LOSS statistics of {lm.name} "
          f"({lm.n_params / 1e6:.0f}M parameters), nothing cached, 1 torch thread per process")

    compute_stats(lm, job[:2], use_cache=False)  # warm the local path (first-call allocations)
    t = time.perf_counter()
    local = compute_stats(lm, job, use_cache=False)
    t_local = time.perf_counter() - t
    print(f"local engine:   {t_local:6.1f} s  ({n_tokens / t_local:.0f} tokens/s)")

    import ray

    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")  # as RayEngine.start does: no core-worker lines
    t = time.perf_counter()
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    print(f"(Ray cluster start, once per session: {time.perf_counter() - t:.1f} s)")
    from mia_core.engines.ray_data import release_hosts

    times, warm, spans, worst = {}, {}, {}, 0.0
    for workers in (1, 2):
        release_hosts()  # a new pool: what a driver's first pass pays (the actors are kept for the passes after it)
        eng = make_engine("ray", workers=workers, batch_texts_tokens=args.unit_tokens)
        with use_engine(eng):
            for kind in ("first", "again"):
                t = time.perf_counter()
                got = compute_stats(lm, job, use_cache=False)
                (times if kind == "first" else warm)[workers] = time.perf_counter() - t
                worst = max([worst] + [abs(a.loss - b.loss) for a, b in zip(local, got) if a.n_tokens])
                last = eng.last
                if kind == "first":
                    spans[workers] = last["work_span"]
                took = times[workers] if kind == "first" else warm[workers]
                print(f"Ray, {workers} worker{'s' if workers > 1 else ' '}, {kind + ' pass:':12s} {took:6.1f} s  "
                      f"({n_tokens / took:.0f} tokens/s; {last['units']} units, {last['builds']} model builds): "
                      f"first unit began {last['first_unit_after']:.1f} s into the call, units ran for "
                      f"{last['work_span']:.1f} s (each worker busy {', '.join(f'{b:.1f}' for b in last['busy'])} s)")
    release_hosts()
    with use_engine(make_engine("ray", workers=1)):
        fixed = {}
        for kind in ("new pool", "kept pool"):
            t = time.perf_counter()
            compute_stats(lm, job[:1], use_cache=False)
            fixed[kind] = time.perf_counter() - t
    ray.shutdown()
    speedup, overhead = times[1] / times[2], times[1] / t_local - 1
    print(f"\nspeed-up at 2 workers over 1, a driver's first pass: {speedup:.2f}x (goal >= 1.8x) -> "
          f"{'met' if speedup >= 1.8 else 'NOT met'}; a later pass (actors and model kept): "
          f"{warm[1] / warm[2]:.2f}x -> {'met' if warm[1] / warm[2] >= 1.8 else 'NOT met'}")
    print(f"while the units ran (from the first one's start to the last one's end, the pool's start left "
          f"out): {spans[1] / spans[2]:.2f}x at 2 workers; 1 worker {spans[1] / t_local - 1:+.1%} over local")
    print(f"Ray's overhead at 1 worker over local: first pass {overhead:+.1%}, a later pass "
          f"{warm[1] / t_local - 1:+.1%} (goal <= 10 %) -> {'met' if warm[1] / t_local - 1 <= 0.10 else 'NOT met'}")
    print(f"fixed cost of a Ray pass (one text): {fixed['new pool']:.1f} s on a new pool (actor start + imports + "
          f"model load), {fixed['kept pool']:.2f} s on the kept one")
    print(f"same numbers: max |loss difference| {worst:.2e} over {len(job)} texts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
