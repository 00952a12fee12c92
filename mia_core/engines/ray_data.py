"""The Ray engine: a workload's units on Ray worker actors that the driver keeps between calls.

The engine knows no workload by name (:mod:`mia_core.engines`): the domains cut their texts into
units and store the rows; this module runs the units.

How :meth:`RayEngine.map` runs a call:

1. The driver (this process) has already looked every text up in its cache; only the misses come
   here, cut into units by the workload (with :meth:`RayEngine.cut`: at least ``UNITS_PER_WORKER``
   per worker, the last ones smaller so the workers end together). Units go out largest first.
2. ``workers`` actors (:class:`MiaWorker`, one CPU or GPU share each) are started by the first call and
   kept by the driver for the calls and engines that follow (:func:`_hosts`): a new worker process
   imports torch and transformers and loads the model, seconds per call that a multi-pass audit (target,
   reference, neighbours) paid at each pass. Each actor builds the workload's tool (``workload.build``
   with the driver's load arguments) when a unit first needs it and keeps the last one built, so the
   next pass of the same model loads nothing. A worker whose model differs from the driver's, by
   identity, refuses to run. It turns units into arrays with ``workload.work``, the code the local
   engine runs. The arrays travel back as ``.npz`` bytes, read with ``allow_pickle=False``. Each actor
   has ``IN_FLIGHT`` units at hand; the next goes to the first that returns one.
3. ``on_row`` runs on the driver for every row: the domain stores each text in its cache as soon as
   it is complete, so a run that stops half-way keeps everything computed, and a re-run (on any
   engine) skips it. Cache entries are written atomically (:class:`mia_core.cache.ArrayCache`), so a
   cache folder on a shared filesystem may have several writers.

Faults:
* Ray restarts an actor that died and retries its unit (``MAX_UNIT_TRIES`` times).
* An error that persists (a model that does not load on a worker, a worker out of memory) stops the
  call with one line that names the worker's reason. The texts completed before it stay stored.
* A call stopped early (an interrupt, a closed page) cancels its units not yet started; one running
  ends on its actor and its result is dropped.

:meth:`RayEngine.close` stops the actors (and a cluster the engine started); so does the driver's end.
"""
from __future__ import annotations

import gc
import io
import json
import logging
import os
import socket
import threading
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
    """``ray``, or a one-line ``SettingsError`` that names the install command."""
    try:
        import ray
    except ImportError as e:
        raise SettingsError(f"{{engine}} ray needs Ray, which is not installed ({e.name or e}): "
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
    # Ray logs a failed task's whole stack at ERROR before raising it: the engine reports it in one line
    for name in ("ray", "ray.data", "ray._private", "ray.util"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


@dataclass
class RayEngine:
    """Workloads on ``workers`` Ray worker actors (see the module docstring)."""

    workers: int = 2
    gpus_per_worker: float = 0.0
    cpus_per_worker: float = 1.0
    address: str | None = None
    unit_tokens: int | None = None  # tokens per unit of work; None: the workload's choice
    owns_cluster: bool = False
    kind: str = "ray"
    loads_per_call: bool = True  # a worker keeps one model: a run sends each model's passes at once
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
        """Stop the worker actors, and shut down the Ray cluster this engine started (one it joined is left
        running)."""
        import ray

        if ray.is_initialized():
            release_hosts()
        if self.owns_cluster:
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
        """Run ``units`` on the cluster's worker actors (kept between calls, :func:`_hosts`), each building
        ``workload``'s tool once and keeping it for the next call of the same tool; ``on_row(index, t0, t1,
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
        builds = 0  # units whose worker had to build the workload's tool first
        # "auto" on a worker with GPUs: the model spread over the worker's GPUs (device_map="auto")
        device = "auto" if self.gpus_per_worker > 0 else "cpu"
        hosts = _hosts(self, min(self.workers, len(units)))
        todo = list(units)  # largest first, as cut
        inflight: dict = {}  # object ref -> the actor that runs it

        def send(host) -> None:
            u = todo.pop(0)
            ref = host.run.remote(type(workload), init, device, json.dumps({"items": u["items"]}), int(u["tokens"]))
            inflight[ref] = host

        for _ in range(IN_FLIGHT):  # each actor has its next unit at hand when it finishes one
            for host in hosts:
                if todo:
                    send(host)
        try:
            while inflight:
                (ref,), _ = ray.wait(list(inflight), num_returns=1)
                host = inflight.pop(ref)
                try:  # only what the workers raise is theirs: an error in on_row or progress is the caller's
                    batch = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - Ray's errors wrap the worker's: one line, what was kept
                    kept = f"{done_texts} of {n_texts} texts were computed and cached (a re-run resumes from them)"
                    raise ModelError(f"the Ray workers failed: {_reason(e)}; {kept}") from None
                if todo:
                    send(host)
                for i, t_a, t_b, payload in zip(batch["idx"], batch["t0"], batch["t1"], batch["payload"]):
                    with np.load(io.BytesIO(payload), allow_pickle=False) as z:
                        arrays = {k: z[k] for k in z.files}
                    done_texts += bool(on_row(int(i), int(t_a), int(t_b), arrays))
                done_tokens += int(batch["tokens"])
                pid, a, b = batch["span"]
                spans.setdefault(int(pid), []).append((float(a), float(b)))
                builds += bool(batch["built"])
                # once per unit, after all its texts are stored
                progress(f"{label}: {done_texts}/{n_texts} texts {where}", min(1.0, done_tokens / total))
        finally:  # stopped early (an error, an interrupt): the units not started are dropped; a running one ends
            for ref in inflight:
                ray.cancel(ref)
        t1 = time.time()
        starts = [a for s in spans.values() for a, _ in s]
        # for benchmarks and tests: the workers' process ids, how many units built a tool first (its time is the
        # unit's), when the first unit began (a new pool's start: actors and imports), how long each worker
        # spent on units, and the span from the first unit's start to the last one's end (the workers' clocks:
        # on one machine the driver's)
        self.last = {"kind": kind, "units": len(units), "seconds": t1 - t0, "texts": n_texts, "tokens": total,
                     "workers": sorted(spans), "builds": builds,
                     "first_unit_after": (min(starts) - t0) if starts else None,
                     "busy": [round(sum(b - a for a, b in s), 2) for s in spans.values()],
                     "work_span": (max(b for s in spans.values() for _, b in s) - min(starts)) if starts else None}


IN_FLIGHT = 2  # units sent ahead to each actor
MAX_UNIT_TRIES = 3  # a unit whose actor died is retried on its restarted actor this many times
_POOL: dict = {}  # the driver's worker actors: {"key": (Ray job, resources per worker), "hosts": [actor]}
_POOL_LOCK = threading.Lock()  # the dashboard's runs are threads: one pool, never an actor too many (it would wait)


def _hosts(engine: RayEngine, n: int) -> list:
    """``n`` worker actors with ``engine``'s resources, kept between calls and engines of this driver (a new
    process imports torch and loads the model: seconds per call). Actors of other resources are stopped
    first: they hold the cluster's CPUs and GPUs."""
    import ray

    key = (ray.get_runtime_context().get_job_id(), engine.cpus_per_worker, engine.gpus_per_worker)
    with _POOL_LOCK:
        if _POOL.get("key") != key:
            _release()
            _POOL.update(key=key, hosts=[])
        hosts = _POOL["hosts"]
        threads = max(1, int(engine.cpus_per_worker))
        while len(hosts) < n:
            hosts.append(ray.remote(MiaWorker).options(
                num_cpus=engine.cpus_per_worker, num_gpus=engine.gpus_per_worker or None,
                max_restarts=-1, max_task_retries=MAX_UNIT_TRIES).remote(threads))
        return hosts[:n]


def release_hosts() -> None:
    """Stop the worker actors this driver keeps (:func:`_hosts`)."""
    with _POOL_LOCK:
        _release()


def _release() -> None:
    import ray

    for h in _POOL.get("hosts", []):
        try:
            ray.kill(h)
        except Exception:  # noqa: BLE001 - an actor of a cluster since shut down
            pass
    _POOL.clear()


def _npz(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


class MiaWorker:
    """A worker actor (its process is named ``ray::MiaWorker``): builds a workload's tool (a model, a
    generator) when a unit first needs it and keeps it, one at a time, for the units and calls that follow;
    turns units of work into arrays with the workload's own ``work`` (the code the local engine runs). A
    worker whose model differs from the driver's, by identity, refuses to run: the cache would hold another
    model's numbers under this one's key.
    """

    def __init__(self, threads: int):
        import torch

        torch.set_num_threads(threads)
        self.key: str | None = None
        self.tool = None
        self.error: str | None = None

    def _tool(self, workload: type, init: dict, device: str) -> bool:
        """Build the tool unless it is the one kept; True when it was built (or failed to build)."""
        key = json.dumps([f"{workload.__module__}.{workload.__qualname__}", device, init], sort_keys=True, default=repr)
        if key == self.key:
            return False
        self.key, self.tool, self.error = None, None, None  # the last tool's memory is freed before the next loads
        gc.collect()
        host = socket.gethostname()
        # a failed load is raised by each unit that needs it (one line, not retried): an actor that died in
        # its constructor would be restarted by Ray for ever
        try:
            self.tool, identity = workload.build(init, device)
        except Exception as e:  # noqa: BLE001 - ModelError, out of memory, a missing package...
            self.error = f"worker on {host} could not load the model: {e if isinstance(e, MiaError) else _reason(e)}"
        else:
            if identity != init["identity"]:
                self.error = (f"worker on {host} loaded another model than the driver ({identity} vs "
                              f"{init['identity']}): give every machine the same model files")
        self.key = key
        return True

    def run(self, workload: type, init: dict, device: str, unit_json: str, tokens: int) -> dict:
        """One unit: its rows (``idx``, ``t0``, ``t1``, ``.npz`` ``payload``), its ``tokens``, when it ran and
        in which process (``span``), and whether the tool was built for it (``built``)."""
        start = time.time()
        built = self._tool(workload, init, device)
        if self.error:
            self.tool = None
            raise ModelError(self.error)
        rows = {"idx": [], "t0": [], "t1": [], "payload": []}

        def emit(i: int, t_a: int, t_b: int, arrays: dict) -> None:
            rows["idx"].append(i)
            rows["t0"].append(t_a)
            rows["t1"].append(t_b)
            rows["payload"].append(_npz(arrays))

        workload.work(self.tool, init, json.loads(unit_json)["items"], emit)
        # when this worker (its process id) ran the unit, for the engine's busy figures (``RayEngine.last``)
        return {**rows, "tokens": tokens, "span": (os.getpid(), start, time.time()), "built": built}



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
