"""Start-up time: what every CLI command, every test that starts a process and every dashboard start pays
before (and around) its work. Prints, on this machine, in one run:

1. ``mia --help``: the whole process (median of 5 runs) and its heaviest imports (``python -X importtime``).
2. ``mia run --demo`` cold, from an empty cache folder: the page's default attacks (LOSS, zlib, Min-K %,
   Min-K %++, reference) and the blind baseline; the CLI's demo also scores its 100 population texts (the
   threshold table). Every stage timed from the run's own progress lines: imports, the embedded model's one-off
   conversion, the LoRA target's one-off merge, the passes. Also what the run would take with the conversion
   already done (the page's cold case: the server's warm-up converts while the user reads the page).
3. The same command again with every statistic cached: the whole process (median of 3, peak memory), and where
   its time goes (one more run under cProfile, so slower by the profiler's overhead: imports, the two model
   loads, the weight checks inside them, the cached passes, the blind baseline). The cold run's full loads
   recorded the two models, so these loads read their tokenizers and defer the weights
   (``mia_core/models/deferred.py``): the weight checks do not run, the check of the files against the
   records does.
4. The modules a cached run imports that it does not need (torch, transformers, peft, bitsandbytes, Ray, ...).
5. The Calibration page's default run (the six rows: five attacks and the blind baseline, no population), cold in a
   fresh process (``benchmarks/first_run.py``'s measure: the server's warm-up, imports, preloads and its one-off
   speed measurement, then Run), and Run pressed again on the page (everything cached).

Plus the CPU and its fp32 matrix-product roof, measured in the same run. Goals (issue 41): a cached run at most
8 s, ``mia --help`` at most 1 s, the page's cold six-attack demo at most 120 s, its warm Run unchanged or faster.

Usage: python benchmarks/startup.py [--skip-cold] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import first_run  # noqa: E402 - the sibling benchmark of the page's run
from neighbours import cpu_name  # noqa: E402 - the sibling benchmark's CPU name reader

UNNEEDED = ("torch", "transformers", "peft", "bitsandbytes", "ray", "sentence_transformers", "streamlit", "plotly",
            "transformers.modeling_utils", "mia_core.documents", "mia_core.mlm", "mia_core.dataset_inference",
            "mia_core.smia")


def env(cache: Path) -> dict:
    return {**os.environ, "MIA_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "PYTHONWARNINGS": "ignore"}


def mia(*args: str) -> list[str]:
    return [sys.executable, "-m", "mia_core", *args]


PEAK = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, file=sys.stderr); sys.exit(r.returncode)")


def timed(cmd: list[str], e: dict, peak: bool = True) -> tuple[float, int | None]:
    """Wall seconds of one process and its peak resident memory (MB; read by a small wrapper process, whose own
    start, about 0.03 s, is then inside the wall time; ``peak=False``: no wrapper, None)."""
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", PEAK, *cmd] if peak else cmd, capture_output=True, text=True, env=e,
                       cwd=ROOT)
    wall = time.perf_counter() - t
    if p.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-3000:]}")
    return wall, int(p.stderr.strip().splitlines()[-1]) if peak else None


def heaviest_imports(cmd: list[str], e: dict, n: int = 6) -> tuple[float, list[tuple[str, float]]]:
    """Total import seconds and the ``n`` heaviest top-level imports of ``cmd`` (``-X importtime``)."""
    p = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], capture_output=True, text=True, env=e, cwd=ROOT)
    top = []
    for line in p.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S.*)$", line)  # top level: no indentation
        if m:
            top.append((m.group(2).strip(), int(m.group(1)) / 1e6))
    return sum(s for _, s in top), sorted(top, key=lambda x: -x[1])[:n]


def stage_times(cmd: list[str], e: dict) -> tuple[float, list[tuple[str, float]]]:
    """Run ``cmd``, stamping each progress line of its stderr; the seconds from start to each stage's first line
    (its name: the text before the first colon), in order, and the whole wall time."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=e, cwd=ROOT)
    first: dict[str, float] = {}
    for line in p.stderr:
        name = line.split(":")[0].strip()
        if name and not name.startswith(("note", "warning")) and name not in first:
            first[name] = time.perf_counter() - t0
    if p.wait():
        sys.exit(f"{' '.join(cmd)} failed")
    return time.perf_counter() - t0, sorted(first.items(), key=lambda x: x[1])


def profile_split(out: Path, e: dict) -> dict:
    """Seconds (under cProfile) of the parts of a cached run."""
    prof = out.parent / "cached.prof"
    subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "mia_core", "run", "--demo",
                    "--quiet", "--out", str(out)], capture_output=True, env=e, cwd=ROOT, check=True)
    st = pstats.Stats(str(prof))
    cum = {}
    for (file, _, func), (_, _, _, ct, _) in st.stats.items():
        key = f"{Path(file).name}:{func}"
        cum[key] = max(cum.get(key, 0.0), ct)
    pick = {
        "whole run (under the profiler)": "__main__.py:<module>",
        "model loads (both)": "request.py:load_models",
        "  weight checks (read back against the files)": "verify.py:verify_weights",
        "  known-sentence checks": "verify.py:check_known_loss",
        "  weight fingerprints": "verify.py:weight_fingerprint",
        "  weight files against the load records (deferred)": "deferred.py:files_digest",
        "  tokenizers (deferred loads)": "deferred_tokenizer.py:read_tokenizer",
        "passes (cached)": "entry.py:compute_stats",
        "blind baseline": "evaluate.py:blind_baseline",
        "attack metrics (bootstrap CIs)": "evaluate.py:attack_metrics",
    }
    return {label: cum.get(key) for label, key in pick.items()}


def modules_imported(e: dict, out: Path) -> list[str]:
    code = ("import runpy, sys\nsys.argv=['mia','run','--demo','--quiet','--out',%r]\n"
            "try:\n    runpy.run_module('mia_core', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in %r if m in sys.modules))") % (str(out), UNNEEDED)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, cwd=ROOT)
    return p.stdout.strip().splitlines()[-1:] or [p.stderr[-500:]]


def main() -> None:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-cold", action="store_true", help="reuse --keep's cache instead of a cold run")
    ap.add_argument("--keep", default=None, help="cache folder to use and keep (default: a temporary one)")
    args = ap.parse_args()
    print(f"machine: {cpu_name()}, {os.cpu_count()} CPUs, torch {torch.__version__} with {torch.get_num_threads()} "
          f"threads, fp32 matmul roof {first_run.roof():.0f} GFLOP/s (measured now); load average before: "
          f"{os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cache = Path(args.keep) if args.keep else tmp / "cache"
        cache.mkdir(parents=True, exist_ok=True)
        e = env(cache)

        helps = [timed(mia("--help"), e, peak=False)[0] for _ in range(5)]
        total, top = heaviest_imports(mia("--help"), e)
        print(f"\n1. mia --help: {statistics.median(helps):.2f} s whole process (median of 5; "
              f"{min(helps):.2f}-{max(helps):.2f}); imports {total:.2f} s, the heaviest: "
              + ", ".join(f"{n} {s:.2f}" for n, s in top))

        if not args.skip_cold:
            wall, stages = stage_times(mia("run", "--demo", "--out", str(tmp / "cold")), e)
            conv = [s for n, s in stages if n.startswith("converting")]
            after_conv = next((s for n, s in stages if n == "conversion done"), None)
            conversion = (after_conv - conv[0]) if conv and after_conv else 0.0
            print(f"\n2. mia run --demo cold, empty cache: {wall:.1f} s whole process "
                  f"({wall - conversion:.1f} s with the embedded model already converted: its conversion took "
                  f"{conversion:.1f} s)")
            prev = 0.0
            for n, s in stages + [("(end)", wall)]:
                print(f"    {s:7.1f} s  {n}  (+{s - prev:.1f})")
                prev = s

        walls, peaks = [], []
        for i in range(3):
            w, peak = timed(mia("run", "--demo", "--quiet", "--out", str(tmp / f"cached{i}")), e)
            walls.append(w)
            peaks.append(peak)
        print(f"\n3. mia run --demo, every statistic cached: {statistics.median(walls):.1f} s whole process "
              f"(median of 3: {', '.join(f'{w:.1f}' for w in walls)}), peak memory {max(peaks)} MB (the wall times include a 0.03 s wrapper that reads it)")
        total, top = heaviest_imports(mia("run", "--demo", "--quiet", "--out", str(tmp / "imports")), e)
        print(f"    imports {total:.1f} s, the heaviest: " + ", ".join(f"{n} {s:.2f}" for n, s in top))
        for label, sec in profile_split(tmp / "profiled", e).items():
            if sec is not None:
                print(f"    {label:<48} {sec:6.2f} s")

        print(f"\n4. modules a cached demo run imports that it does not use: {modules_imported(e, tmp / 'mods')[0]}")

        # the page's default run (no population), cold: the embedded model converted (by section 2's run), nothing
        # scored, the LoRA target not yet merged; the server's warm-up first (imports, the two models preloaded,
        # the one-off speed measurement), then Run; then Run again on the same page (everything cached)
        page = tmp / "page"
        (page / "models").mkdir(parents=True)
        for m in (cache / "models").iterdir():
            if (m / "mia_converted.json").is_file() and "-merged-" not in m.name:
                os.symlink(m, page / "models" / m.name)
        r = first_run.measure(page, tmp / "runs", 1000)
        page_cold = first_run.from_run(r) + r.get("warmup", 0)
        print("\n5. the Calibration page's default run on the demo (LOSS, zlib, Min-K %, Min-K %++, reference, the blind "
              "baseline; no population), in a fresh process:")
        first_run.show("   cold (the embedded model converted, nothing scored, the target not merged yet)", r)
        print(f"   warm on the page (Run pressed again, models loaded, every pass cached): {r['again']:.1f} s")

        cached = statistics.median(walls)
        help_s = statistics.median(helps)
        print(f"\ngoals: cached run <= 8 s: {'met' if cached <= 8 else 'NOT met'} ({cached:.1f} s); mia --help <= 1 s: "
              f"{'met' if help_s <= 1 else 'NOT met'} ({help_s:.2f} s)"
              + f"; the page's cold six-attack demo <= 120 s: {'met' if page_cold <= 120 else 'NOT met'} "
              f"({page_cold:.0f} s from the server's start to the saved run, the start-up warm-up included)"
              + ("" if args.skip_cold else
                 f"; the CLI's demo (with its population) cold: {wall:.0f} s from an empty cache, "
                 f"{wall - conversion:.0f} s with the embedded model converted"))


if __name__ == "__main__":
    main()
