"""The Ray engine: a workload's units on Ray Data actors (``map_batches`` with an actor pool).

The engine knows no workload by name (:mod:`mia_core.engines`): the domains cut their texts into
units and store the rows; this module runs the units.

How :meth:`RayEngine.map` runs a call:

1. The driver (this process) has already looked every text up in its cache; only the misses come
   here, cut into units by the workload (with :meth:`RayEngine.cut`: at least ``UNITS_PER_WORKER``
   per worker, the last ones smaller so the workers end together). Units go out largest first.
2. Each of ``workers`` actors builds the workload's tool once (``workload.build`` with the driver's
   load arguments). A worker whose model differs from the driver's, by identity, refuses to run. It
   turns units into arrays with ``workload.work``, the code the local engine runs. The arrays travel
   back as ``.npz`` bytes, read with ``allow_pickle=False``.
3. ``on_row`` runs on the driver for every row: the domain stores each text in its cache as soon as
   it is complete, so a run that stops half-way keeps everything computed, and a re-run (on any
   engine) skips it. Cache entries are written atomically (:class:`mia_core.cache.ArrayCache`), so a
   cache folder on a shared filesystem may have several writers.

Faults:
* Ray restarts an actor that died and retries its unit.
* An error that persists (a model that does not load on a worker, a worker out of memory) stops the
  call with one line that names the worker's reason. The texts completed before it stay stored.
"""
from __future__ import annotations

import io
import json
import logging
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import MiaError, ModelError, SettingsError
from .base import UNITS_PER_WORKER, Workload, cut_units
from ..progress import Progress, noop

RAY_INSTALL = "pip install 'mia-dashboard[ray]'  (or: pip install 'ray[data]')"
CONNECT_TIMEOUT_S = 5.0
# what a worker on another machine needs to find the same model files and stay offline
_FORWARDED_ENV = ("MIA_CACHE_DIR", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def import_ray():
    """``ray`` and ``ray.data``, or a one-line ``SettingsError`` that names the install command."""
    try:
        import ray
        import ray.data  # noqa: F401 - Ray Data needs pyarrow as well: ray[data]
    except ImportError as e:
        raise SettingsError(f"{{engine}} ray needs Ray Data, which is not installed ({e.name or e}): "
                            f"{RAY_INSTALL}", options=("engine",)) from None
    return ray


def check_address(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """A ``host:port`` or ``ray://host:port`` address answers within ``timeout`` s, else ``SettingsError``.
    (``ray.init`` itself keeps retrying an address that does not answer for about a minute.)"""
    a = address.strip()
    if a in ("auto", "local"):
        return
    hostport = a.split("://", 1)[1] if "://" in a else a
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise SettingsError(f"Ray address {address!r} is not host:port (or ray://host:port, or auto)")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as e:
        why = "timed out" if isinstance(e, socket.timeout) else (e.strerror or type(e).__name__)
        raise SettingsError(f"cannot reach the Ray cluster at {address} ({why}): start one with "
                            "`ray start --head` on that machine, or fix {ray_address} / RAY_ADDRESS",
                            options=("ray_address",)) from None


def _quiet_ray_logs() -> None:
    # Ray Data logs a failed job's whole stack at ERROR before raising it: the engine reports it in one line
    for name in ("ray", "ray.data", "ray._private", "ray.util"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


@dataclass
class RayEngine:
    """Workloads on ``workers`` Ray Data actors (see the module docstring)."""

    workers: int = 2
    gpus_per_worker: float = 0.0
    cpus_per_worker: float = 1.0
    address: str | None = None
    unit_tokens: int | None = None  # tokens per unit of work; None: the workload's choice
    owns_cluster: bool = False
    kind: str = "ray"
    loads_per_call: bool = True  # each call's workers build their model: a run sends each model's passes at once
    in_process: bool = False
    last: dict = field(default_factory=dict)  # figures of the last call (units, seconds, retries) for benchmarks

    @classmethod
    def start(cls, *, workers: int = 2, gpus_per_worker: float = 0.0, cpus_per_worker: float = 1.0,
              address: str | None = None, unit_tokens: int | None = None) -> "RayEngine":
        """Connect to (``address`` / ``$RAY_ADDRESS``) or start a Ray cluster; check it can host the workers."""
        from .options import EngineOptions

        checked = EngineOptions.check_some(strict=False, workers=workers, gpus_per_worker=gpus_per_worker,
                                           cpus_per_worker=cpus_per_worker)  # the declared domains, one line each
        workers, gpus_per_worker, cpus_per_worker = (checked[k] for k in ("workers", "gpus_per_worker",
                                                                          "cpus_per_worker"))
        os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")  # Ray's C++ notes on stderr; failures come as one line
        ray = import_ray()
        _quiet_ray_logs()
        address = address or os.environ.get("RAY_ADDRESS") or None
        owns = False
        if not ray.is_initialized():
            if address:
                check_address(address)
                env = {k: os.environ[k] for k in _FORWARDED_ENV if k in os.environ}
                try:
                    ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False,
                             runtime_env={"env_vars": env} if env else None)
                except Exception as e:  # noqa: BLE001 - ConnectionError, RuntimeError: one line
                    raise SettingsError(f"cannot join the Ray cluster at {address}: {_reason(e)}") from None
            else:
                need = int(np.ceil(workers * cpus_per_worker))
                ray.init(num_cpus=max(need, os.cpu_count() or 1), include_dashboard=False,
                         logging_level=logging.ERROR, log_to_driver=False)
                owns = True
        eng = cls(workers=int(workers), gpus_per_worker=float(gpus_per_worker), cpus_per_worker=float(cpus_per_worker),
                  address=address, unit_tokens=unit_tokens, owns_cluster=owns)
        eng.check_resources()
        return eng

    def check_resources(self) -> None:
        """The cluster has the CPUs and GPUs the workers ask for (else they would wait for ever)."""
        import ray

        have = ray.cluster_resources()
        cpus, gpus = float(have.get("CPU", 0)), float(have.get("GPU", 0))
        need_c, need_g = self.workers * self.cpus_per_worker, self.workers * self.gpus_per_worker
        if need_c > cpus or need_g > gpus:
            raise SettingsError(
                f"the Ray cluster has {cpus:g} CPUs and {gpus:g} GPUs; {self.workers} workers x "
                f"{self.cpus_per_worker:g} CPUs x {self.gpus_per_worker:g} GPUs need {need_c:g} and {need_g:g}: "
                "use fewer {workers} or {gpus_per_worker}, or add machines (ray start --address=...)",
                options=("workers", "gpus_per_worker"))

    def describe(self) -> str:
        """The engine in words, for reports and run records: workers, GPUs each, and the cluster's address."""
        where = self.address or "a local Ray cluster"
        gpu = f", {self.gpus_per_worker:g} GPU each" if self.gpus_per_worker else ""
        return f"ray ({self.workers} worker{'s' if self.workers != 1 else ''}{gpu} on {where})"

    def close(self) -> None:
        """Shut down the Ray cluster this engine started (one it joined is left running)."""
        if self.owns_cluster:
            import ray

            ray.shutdown()
            self.owns_cluster = False

    # ------------------------------------------------------------------ the work
    def cut(self, items: list[dict], costs: list[int], size: int | None = None) -> list[dict]:
        """Texts in the given order, cut into units of about ``size`` cost (default: about
        ``UNITS_PER_WORKER`` units per worker), tapered towards the end (:func:`mia_core.engines.cut_units`)."""
        total = sum(costs) or 1
        size = size or self.unit_tokens or -(-total // (UNITS_PER_WORKER * self.workers))
        return cut_units(items, costs, size, workers=self.workers, fixed=bool(self.unit_tokens))

    def map(self, workload: Workload, units: list[dict], on_row: Callable[[int, int, int, dict], bool], *,
            progress: Progress = noop, label: str = "work") -> None:
        """Run ``units`` on a pool of actors, each building ``workload``'s tool once; ``on_row(index, t0, t1,
        arrays)`` for every result on the driver (True when it completed a text)."""
        import ray

        if not ray.is_initialized():
            raise SettingsError("the Ray engine's cluster was shut down: make a new engine")
        workload.check_remote()
        kind, init = workload.kind, workload.init
        n_texts = len({it["idx"] for u in units for it in u["items"]})
        total = sum(u["tokens"] for u in units) or 1
        where = f"on {self.workers} Ray worker{'s' if self.workers != 1 else ''}"
        progress(f"{label}: 0/{n_texts} texts {where}", 0.0)
        t0 = time.time()
        done_tokens, done_texts = 0, 0
        spans: dict[int, list] = {}  # worker pid -> [(start, end)] of its units
        # Ray Data's own progress bars are never shown (the engine reports progress itself), and drawing
        # them cost the driver about 1 s of CPU per 50 s job on a 2-core machine, beside the workers
        data_ctx = ray.data.DataContext.get_current()
        data_ctx.enable_progress_bars = False
        data_ctx.print_on_execution_start = False
        ds = ray.data.from_items([{"unit": json.dumps({"items": u["items"]}), "tokens": u["tokens"]} for u in units],
                                 override_num_blocks=max(1, len(units)))
        # "auto" on a worker with GPUs: the model spread over the worker's GPUs (device_map="auto")
        worker_device = "auto" if self.gpus_per_worker > 0 else "cpu"
        out = ds.map_batches(
            _Worker, batch_size=1, batch_format="numpy",
            fn_constructor_kwargs=dict(workload=type(workload), init=init, threads=max(1, int(self.cpus_per_worker)),
                                       device=worker_device),
            compute=ray.data.ActorPoolStrategy(size=max(1, min(self.workers, len(units)))),
            num_cpus=self.cpus_per_worker, num_gpus=self.gpus_per_worker or None,
        )
        batches = iter(out.iter_batches(batch_size=None, batch_format="numpy", prefetch_batches=0))
        try:
            while True:
                try:  # only what the workers raise is theirs: an error in on_row or progress (an interrupt) is the caller's
                    batch = next(batches)
                except StopIteration:
                    break
                except MiaError:
                    raise
                except Exception as e:  # noqa: BLE001 - Ray's errors wrap the worker's: one line, what was kept
                    kept = f"{done_texts} of {n_texts} texts were computed and cached (a re-run resumes from them)"
                    raise ModelError(f"the Ray workers failed: {_reason(e)}; {kept}") from None
                for i, t_a, t_b, payload, tokens in zip(batch["idx"], batch["t0"], batch["t1"], batch["payload"],
                                                         batch["tokens"]):
                    with np.load(io.BytesIO(payload), allow_pickle=False) as z:
                        arrays = {k: z[k] for k in z.files}
                    done_tokens += int(tokens)
                    done_texts += bool(on_row(int(i), int(t_a), int(t_b), arrays))
                for pid, a, b in (np.unique(batch["span"], axis=0) if len(batch["span"]) else ()):
                    spans.setdefault(int(pid), []).append((float(a), float(b)))
                # once per unit, after all its texts are stored (a unit's tokens come with its first row: a
                # report per row read "100 %, 1/23 texts" for a run of one unit)
                progress(f"{label}: {done_texts}/{n_texts} texts {where}", min(1.0, done_tokens / total))
        finally:  # stopped early (an error, an interrupt): Ray Data stops the job and frees its actors now
            close = getattr(batches, "close", None)
            if close is not None:
                close()
        t1 = time.time()
        starts = [a for s in spans.values() for a, _ in s]
        # for benchmarks: when the first unit began (the pool's start: actors, imports, model load), how long
        # each worker spent on units, and the span from the first unit's start to the last one's end (the
        # workers' clocks: on one machine the driver's)
        self.last = {"kind": kind, "units": len(units), "seconds": t1 - t0, "texts": n_texts, "tokens": total,
                     "first_unit_after": (min(starts) - t0) if starts else None,
                     "busy": [round(sum(b - a for a, b in s), 2) for s in spans.values()],
                     "work_span": (max(b for s in spans.values() for _, b in s) - min(starts)) if starts else None}


def _npz(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


class _Worker:
    """A Ray Data actor: builds its workload's tool (a model, a generator) once, then turns units of
    work into arrays with the workload's own ``work`` (the code the local engine runs). A worker whose
    model differs from the driver's, by identity, refuses to run: the cache would hold another model's
    numbers under this one's key.
    """

    def __init__(self, workload: type, init: dict, threads: int, device: str):
        import torch

        torch.set_num_threads(threads)
        self.workload, self.init = workload, init
        host = socket.gethostname()
        # a failed load is raised by the first call, not here: an actor that dies in its constructor is
        # restarted by Ray (and Ray prints each try), a task that fails ends the job with its message
        self.error: str | None = None
        try:
            self.tool, identity = workload.build(init, device)
        except Exception as e:  # noqa: BLE001 - ModelError, out of memory, a missing package...
            self.error = f"worker on {host} could not load the model: {e if isinstance(e, MiaError) else _reason(e)}"
            return
        if identity != init["identity"]:
            self.error = (f"worker on {host} loaded another model than the driver ({identity} vs "
                          f"{init['identity']}): give every machine the same model files")

    def __call__(self, batch: dict) -> dict:
        if self.error:
            raise ModelError(self.error)
        rows = {"idx": [], "t0": [], "t1": [], "payload": [], "tokens": []}
        start = time.time()
        for unit_json, tokens in zip(batch["unit"], batch["tokens"]):
            items = json.loads(unit_json)["items"]
            first = len(rows["idx"])

            def emit(i: int, t_a: int, t_b: int, arrays: dict) -> None:
                rows["idx"].append(i)
                rows["t0"].append(t_a)
                rows["t1"].append(t_b)
                rows["payload"].append(_npz(arrays))
                rows["tokens"].append(0)

            self.workload.work(self.tool, self.init, items, emit)
            if len(rows["idx"]) > first:
                rows["tokens"][first] = int(tokens)  # a unit's tokens come with its first row
        n = len(rows["idx"])
        # when this worker (its process id) ran the unit, for the engine's busy figures (``RayEngine.last``)
        span = np.array([[os.getpid(), start, time.time()]] * n, dtype=np.float64).reshape(n, 3)
        return {"idx": np.array(rows["idx"], dtype=np.int64), "t0": np.array(rows["t0"], dtype=np.int64),
                "t1": np.array(rows["t1"], dtype=np.int64), "payload": np.array(rows["payload"], dtype=object),
                "tokens": np.array(rows["tokens"], dtype=np.int64), "span": span}


def _reason(e: BaseException) -> str:
    """The one-line reason of a (Ray-wrapped) exception: the worker's own error when it is one of ours
    (``mia_core.errors...: message`` in Ray's text), else the last line that names an error."""
    texts = []
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        texts.append(str(cur))
        inner = getattr(cur, "cause", None)
        cur = inner if isinstance(inner, BaseException) else (cur.__cause__ or cur.__context__)
    lines = [ln.strip() for t in texts for ln in t.splitlines() if ln.strip()]
    ours = [ln.split(": ", 1)[1] for ln in lines if ln.startswith("mia_core.errors.") and ": " in ln]
    if ours:
        return ours[-1][:400]
    named = [ln for ln in lines if "Error" in ln.split(":", 1)[0] or "Exception" in ln.split(":", 1)[0]]
    return (named or lines or [type(e).__name__])[-1][:400]
