"""The Ray engine: the model passes on Ray Data actors (``map_batches`` with an actor pool).

Three kinds of work go to the workers, each through the same map (:meth:`RayEngine._map`, one
``_Worker`` class with a build and a work function per kind):

* ``stats``: the causal-LM passes of :func:`mia_core.stats.compute_stats` (target, lower-cased,
  reference, population, neighbours' losses, books);
* ``neighbours``: :meth:`mia_core.neighbours.NeighbourGenerator.generate`'s proposals;
* ``mlm``: the masked-LM audit's per-pattern sums (:func:`mia_core.mlm.energy.energies`).

How a call runs:

1. The driver (this process) has already looked every text up in its cache; only the misses come
   here. For ``stats`` it tokenises them (:func:`mia_core.stats.plan_windows`) and cuts the work
   into *units* of about ``unit_tokens`` tokens, at least ``UNITS_PER_WORKER`` per worker:
   * short texts sorted by length, with texts that start alike kept together, so a text's
     neighbours share their prefix pass on the worker;
   * ranges of windows of a long text. A book's windows go to different workers and are put back
     in order here.
   Units go out largest first. The other kinds cut the texts, in order, into units of about equal cost.
   With more than one worker, the last units of texts are smaller (:meth:`RayEngine._text_units`), so the
   workers end together.
2. Each of ``workers`` actors builds its model once, with the driver's load arguments. A worker whose
   model differs from the driver's, by identity, refuses to run. It turns units into arrays with the
   local code: :func:`mia_core.stats.compute_stats` or :func:`mia_core.stats.window_range_stats`,
   the generator's ``_generate``, or ``energies`` on masks re-made from the seed. The arrays travel
   back as ``.npz`` bytes, read with ``allow_pickle=False``.
3. The driver stores each text in its cache as soon as it is complete. A run that stops half-way
   therefore keeps everything computed, and a re-run (on any engine) skips it. Of a long text not yet
   complete, the windows back in order from its start go to its partial cache entry (the local engine's
   format) every ``stats.PARTIAL_EVERY_S`` s and when the call stops early; a re-run sends only the rest. Cache entries are
   written atomically (:class:`mia_core.cache.ArrayCache`), so a cache folder on a shared filesystem
   may have several writers.

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
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from ..errors import MiaError, ModelError, SettingsError
from . import Partials
from ..progress import Progress, noop

RAY_INSTALL = "pip install 'mia-dashboard[ray]'  (or: pip install 'ray[data]')"
CONNECT_TIMEOUT_S = 5.0
UNIT_BATCHES = 4  # a unit holds at most this many forward batches of the run's batch_tokens
UNITS_PER_WORKER = 4  # ... and is small enough that each worker gets at least this many
# what a worker on another machine needs to find the same model files and stay offline
_FORWARDED_ENV = ("MIA_CACHE_DIR", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def import_ray():
    """``ray`` and ``ray.data``, or a one-line ``SettingsError`` that names the install command."""
    try:
        import ray
        import ray.data  # noqa: F401 - Ray Data needs pyarrow as well: ray[data]
    except ImportError as e:
        raise SettingsError(f"--engine ray needs Ray Data, which is not installed ({e.name or e}): "
                            f"{RAY_INSTALL}") from None
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
                            "`ray start --head` on that machine, or fix --ray-address / RAY_ADDRESS") from None


def _quiet_ray_logs() -> None:
    # Ray Data logs a failed job's whole stack at ERROR before raising it: the engine reports it in one line
    for name in ("ray", "ray.data", "ray._private", "ray.util"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


@dataclass
class RayEngine:
    """Token statistics on ``workers`` Ray Data actors (see the module docstring)."""

    workers: int = 2
    gpus_per_worker: float = 0.0
    cpus_per_worker: float = 1.0
    address: str | None = None
    unit_tokens: int | None = None  # tokens per unit of work; None: UNIT_BATCHES x the run's batch_tokens
    owns_cluster: bool = False
    kind: str = "ray"
    distributed: bool = True
    last: dict = field(default_factory=dict)  # figures of the last call (units, seconds, retries) for benchmarks

    @classmethod
    def start(cls, *, workers: int = 2, gpus_per_worker: float = 0.0, cpus_per_worker: float = 1.0,
              address: str | None = None, unit_tokens: int | None = None) -> "RayEngine":
        """Connect to (``address`` / ``$RAY_ADDRESS``) or start a Ray cluster; check it can host the workers."""
        if int(workers) < 1:
            raise SettingsError(f"--workers must be at least 1, got {workers}")
        if gpus_per_worker < 0 or cpus_per_worker <= 0:
            raise SettingsError("--gpus-per-worker must be >= 0 and the CPUs per worker > 0")
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
                "use fewer --workers or --gpus-per-worker, or add machines (ray start --address=...)")

    def describe(self) -> str:
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
    def token_stats(self, lm, texts: dict[int, str], settings, store: Callable, *, progress: Progress = noop,
                    label: str = "token statistics", partial: "Partials | None" = None) -> None:
        """Statistics of ``texts`` (index -> text) on the workers; ``store(index, TokenStats)`` is called
        on the driver for each text as soon as it is complete.

        ``partial``: where a long text's completed windows are kept between runs (the local engine's
        partial cache entries, :class:`Partials`). A long text with one resumes from it, and the windows
        that came back in order from the start are written to it every ``stats.PARTIAL_EVERY_S`` s and when the
        call stops early (an error, an interrupt), so a re-run on any engine skips them."""
        from ..stats import FIELDS, INT_FIELDS, PARTIAL_EVERY_S, TokenStats, plan_windows, tokenize

        if not lm.load_args:
            raise SettingsError(f"{lm.name} was not loaded with load_causal_lm, so Ray workers cannot load it: "
                                "use --engine local")
        idx = list(texts)
        plan = plan_windows(lm, [texts[i] for i in idx], settings)
        n_tokens = {i: n for i, (n, _, _) in zip(idx, plan)}
        n_windows = {i: len(w) for i, (_, w, _) in zip(idx, plan)}
        first_t = {i: w[0] for i, (_, w, _) in zip(idx, plan) if w}  # where a text's first window's predictions start
        pieces: dict[int, list] = {}  # long text -> its ranges back so far: (t0, t1, windows, arrays)
        saved: dict[int, tuple[int, float]] = {}  # long text -> (windows in its partial entry, when written)
        resume: dict[int, int] = {}  # long text -> windows already done (its partial entry)
        for i, (n, starts, _) in zip(idx, plan):
            part = partial.get(i) if partial is not None and len(starts) > 1 else None
            if part is not None and 0 < int(part["done_windows"]) < len(starts):
                d = int(part["done_windows"])
                head = {f: part[f][: starts[d]] for f in (*FIELDS, *INT_FIELDS)}
                if "vp" in part:
                    head["vp"] = part["vp"]
                pieces[i], resume[i], saved[i] = [(0, starts[d], d, head)], d, (d, time.time())
        units = self._units(idx, plan, settings.resolved_batch_tokens(lm), settings.resolved_context(lm), resume)

        def keep(i: int, now: bool) -> None:  # a long text's windows done from its start, into its partial entry
            last_done, last_t = saved.get(i, (0, 0.0))
            if now or time.time() - last_t > PARTIAL_EVERY_S:
                done, arrays = _done_prefix(n_tokens[i], first_t[i], pieces[i])
                if done > last_done:
                    partial.put(i, {**arrays, "done_windows": np.array(done)})
                    saved[i] = (done, time.time())

        def on_row(i: int, t_a: int, t_b: int, arrays: dict) -> bool:
            if t_a < 0:  # a whole short text
                store(i, TokenStats.from_arrays(arrays))
                return True
            pieces.setdefault(i, []).append((t_a, t_b, int(arrays.pop("n_windows")), arrays))
            if sum(p[2] for p in pieces[i]) < n_windows[i]:
                if partial is not None:
                    keep(i, now=False)
                return False
            store(i, _merge(tokenize(lm, texts[i]), texts[i], pieces.pop(i)))
            if partial is not None:
                partial.drop(i)
            return True

        init = {"load_args": lm.load_args, "identity": lm.identity, "settings": asdict(settings)}
        try:
            self._map("stats", init, units, texts, on_row, progress, label)
        finally:  # stopped early: the long texts' windows done from their start are kept
            if partial is not None:
                for i in list(pieces):
                    keep(i, now=True)

    def neighbours(self, gen, texts: dict[int, str], store: Callable, *, progress: Progress = noop,
                   label: str = "neighbours") -> None:
        """Neighbours of ``texts`` made by ``gen``'s generator on the workers (each builds it once);
        ``store(index, list[Neighbour])`` on the driver as each text's arrive."""
        from ..neighbours.base import _from_arrays

        idx = list(texts)
        units = self._text_units(idx, [len(texts[i].split()) for i in idx])

        def on_row(i: int, t_a: int, t_b: int, arrays: dict) -> bool:
            store(i, _from_arrays(arrays))
            return True

        init = {"settings": gen.settings.to_dict(), "identity": gen.identity}
        self._map("neighbours", init, units, texts, on_row, progress, label)

    def mlm_energies(self, mlm, plan, todo: list[int], batch_tokens: int, store: Callable, *,
                     progress: Progress = noop, label: str = "scoring") -> None:
        """Per-pattern log-probability sums (``mia_core.mlm.energy``) of the plan's texts ``todo`` on the
        workers; each re-makes its texts' masks from the plan's settings (they depend on the text and the
        seed only). ``store(index, sums)`` on the driver."""
        if not getattr(mlm, "load_args", None):
            raise SettingsError(f"{mlm.name} was not loaded with load_masked_lm, so Ray workers cannot load it")
        texts = {i: plan.texts[i] for i in todo}
        units = self._text_units(todo, [len(plan.ids[i]) * plan.k for i in todo])

        def on_row(i: int, t_a: int, t_b: int, arrays: dict) -> bool:
            store(i, arrays["pattern_logp"])
            return True

        init = {"load_args": mlm.load_args, "identity": mlm.identity, "batch_tokens": int(batch_tokens),
                "plan": {"k": plan.k, "seed": plan.seed, "rate": plan.rate, "max_length": plan.max_length,
                         "recipe": plan.recipe}}
        self._map("mlm", init, units, texts, on_row, progress, label)

    def _text_units(self, idx: list[int], costs: list[int], size: int | None = None) -> list[dict]:
        """Texts in the given order, cut into units of about ``size`` cost (default: about
        UNITS_PER_WORKER units per worker).

        Unless the unit size was set (``unit_tokens``) or there is one worker, the units shrink towards
        the end: none holds more than a ``2 x workers``-th of the cost still to cut, down to an eighth of
        ``size`` ("factoring", as in loop scheduling), so the units that finish last are short and the
        workers end together. (With equal units, 2 workers on 400 AG News texts ended 1.8 s apart in a
        34-s span.)"""
        total = sum(costs) or 1
        size = size or self.unit_tokens or -(-total // (UNITS_PER_WORKER * self.workers))
        smallest = size if self.unit_tokens or self.workers == 1 else max(1, size // 8)
        units, cur, cur_cost, left = [], [], 0, total  # left: the cost not yet in a closed unit
        for i, c in zip(idx, costs):
            cur.append({"idx": i})
            cur_cost += c
            if cur_cost >= max(smallest, min(size, left / (2 * self.workers))):
                units.append({"items": cur, "tokens": cur_cost})
                left -= cur_cost
                cur, cur_cost = [], 0
        if cur:
            units.append({"items": cur, "tokens": cur_cost})
        return units

    def _map(self, kind: str, init: dict, units: list[dict], texts: dict[int, str], on_row: Callable,
             progress: Progress, label: str) -> None:
        """Run ``units`` on a pool of ``_Worker(kind, init)`` actors; ``on_row(index, t0, t1, arrays)`` for
        every result on the driver (True when it completed a text)."""
        import ray

        if not ray.is_initialized():
            raise SettingsError("the Ray engine's cluster was shut down: make a new engine")
        n_texts = len(texts)
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
        ds = ray.data.from_items([{"unit": json.dumps({"items": [{**it, "text": texts[it["idx"]]} for it in u["items"]]}),
                                   "tokens": u["tokens"]} for u in units], override_num_blocks=max(1, len(units)))
        # "auto" on a worker with GPUs: the model spread over the worker's GPUs (device_map="auto")
        worker_device = "auto" if self.gpus_per_worker > 0 else "cpu"
        out = ds.map_batches(
            _Worker, batch_size=1, batch_format="numpy",
            fn_constructor_kwargs=dict(kind=kind, init=init, threads=max(1, int(self.cpus_per_worker)),
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

    def _units(self, idx: list[int], plan, batch_tokens: int, context: int, resume: dict[int, int] | None = None
               ) -> list[dict]:
        """Short texts (length-sorted, see below) in units of about ``size`` tokens; each long text in ranges
        of windows of that size, from its window ``resume[i]`` (those before it are done)."""
        resume = resume or {}
        total = sum(n + 1 - (starts[resume[i]] if i in resume else 0) for i, (n, starts, _) in zip(idx, plan))
        # at least UNITS_PER_WORKER units per worker, so that no worker waits long for the last one
        size = int(self.unit_tokens or min(UNIT_BATCHES * batch_tokens,
                                           max(batch_tokens, -(-total // (UNITS_PER_WORKER * self.workers)))))
        # short texts sorted by length (a unit's batches then have little padding: 10 % faster than the
        # caller's order on AG News), texts that start alike kept together (a text's neighbours share
        # their prefix pass on the worker): groups by first tokens, ordered by their first text's length
        short = [(i, n, head) for i, (n, starts, head) in zip(idx, plan) if len(starts) <= 1]
        first_len: dict[tuple, int] = {}
        for _, n, head in short:
            first_len.setdefault(head, n)
        short.sort(key=lambda x: (-first_len[x[2]], x[2]))
        units = self._text_units([i for i, _, _ in short], [n + 1 for _, n, _ in short], size)
        for i, (n, starts, _) in zip(idx, plan):
            if len(starts) <= 1:
                continue
            per = max(1, size // context)
            for w0 in range(resume.get(i, 0), len(starts), per):
                w1 = min(len(starts), w0 + per)
                tokens = (starts[w1] if w1 < len(starts) else n) - starts[w0]
                units.append({"items": [{"idx": i, "w0": w0, "w1": w1}], "tokens": tokens})
        return sorted(units, key=lambda u: -u["tokens"])  # largest first: the last unit to finish is a small one


def _done_prefix(n: int, first: int, parts: list) -> tuple[int, dict]:
    """The windows of a long text of ``n`` tokens done from its start, as a partial entry's arrays:
    ``(windows, arrays)``. ``first``: the token the first window's predictions start at; ``parts``:
    ``(t0, t1, windows, arrays)`` ranges in any order; the first that does not follow on ends the prefix."""
    prefix, end = [], first
    for p in sorted(parts, key=lambda p: p[0]):
        if p[0] > end or (prefix and p[0] != end):
            break
        prefix.append(p)
        end = p[1]
    out, vp = _fill(n, prefix)
    if vp is not None:
        out["vp"] = vp
    return sum(p[2] for p in prefix), out


def _fill(n: int, parts: list) -> tuple[dict, "np.ndarray | None"]:
    """Per-token arrays of ``n`` tokens (NaN / -1 where no part covers them) from ``(t0, t1, windows,
    arrays)`` ranges, and the ranges' summed vocabulary probabilities (None without them)."""
    from ..stats import FIELDS, INT_FIELDS

    out = {f: np.full(n, np.nan, dtype=np.float32) for f in FIELDS}
    out.update({f: np.full(n, -1, dtype=np.int32) for f in INT_FIELDS})
    vp = None
    for t_a, t_b, _, arrays in sorted(parts, key=lambda p: p[0]):
        for f in (*FIELDS, *INT_FIELDS):
            out[f][t_a:t_b] = arrays[f]
        if "vp" in arrays:
            vp = arrays["vp"].copy() if vp is None else vp + arrays["vp"]
    return out, vp


def _merge(ids: np.ndarray, text: str, parts: list) -> "object":
    """A long text's window ranges, put back in token order, as one ``TokenStats``."""
    from ..stats import TokenStats

    out, vp = _fill(len(ids), parts)
    return TokenStats(token_ids=ids, **out, n_bytes=len(text.encode("utf-8", "surrogatepass")), vocab_prob_sum=vp)


def _npz(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


class _Worker:
    """A Ray Data actor: builds its model (or generator) once, then turns units of work into arrays.

    ``kind``: ``stats`` (a causal LM's token statistics), ``neighbours`` (a neighbour generator) or
    ``mlm`` (a masked LM's per-pattern sums). A worker whose model differs from the driver's, by
    identity, refuses to run: the cache would hold another model's numbers under this one's key.
    """

    def __init__(self, kind: str, init: dict, threads: int, device: str):
        import torch

        torch.set_num_threads(threads)
        self.kind, self.init = kind, init
        host = socket.gethostname()
        # a failed load is raised by the first call, not here: an actor that dies in its constructor is
        # restarted by Ray (and Ray prints each try), a task that fails ends the job with its message
        self.error: str | None = None
        try:
            self.tool, identity = _BUILD[kind](init, device)
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
            for k, (i, t_a, t_b, arrays) in enumerate(_WORK[self.kind](self.tool, self.init, items)):
                rows["idx"].append(i)
                rows["t0"].append(t_a)
                rows["t1"].append(t_b)
                rows["payload"].append(_npz(arrays))
                rows["tokens"].append(int(tokens) if k == 0 else 0)
        n = len(rows["idx"])
        # when this worker (its process id) ran the unit, for the engine's busy figures (``RayEngine.last``)
        span = np.array([[os.getpid(), start, time.time()]] * n, dtype=np.float64).reshape(n, 3)
        return {"idx": np.array(rows["idx"], dtype=np.int64), "t0": np.array(rows["t0"], dtype=np.int64),
                "t1": np.array(rows["t1"], dtype=np.int64), "payload": np.array(rows["payload"], dtype=object),
                "tokens": np.array(rows["tokens"], dtype=np.int64), "span": span}


def _build_stats(init: dict, device: str):
    from ..models import load_causal_lm
    from ..stats import StatsSettings

    lm = load_causal_lm(**init["load_args"], device=device)
    return (lm, StatsSettings(**init["settings"])), lm.identity


def _work_stats(tool, init: dict, items: list[dict]):
    from ..stats import compute_stats, window_range_stats

    lm, settings = tool
    short = [it for it in items if "w1" not in it]  # whole texts; the others are window ranges
    if short:
        for it, s in zip(short, compute_stats(lm, [it["text"] for it in short], settings, use_cache=False)):
            yield it["idx"], -1, -1, s.to_arrays()
    for it in (it for it in items if "w1" in it):
        t_a, t_b, arrays = window_range_stats(lm, it["text"], settings, it["w0"], it["w1"])
        arrays["n_windows"] = np.array(it["w1"] - it["w0"])
        yield it["idx"], t_a, t_b, arrays


def _build_neighbours(init: dict, device: str):
    from ..neighbours import NeighbourSettings, make_generator

    gen = make_generator(NeighbourSettings(**init["settings"]), device=device)
    return gen, gen.identity


def _work_neighbours(gen, init: dict, items: list[dict]):
    from ..neighbours.base import _to_arrays

    made = gen._generate([it["text"] for it in items], noop)
    for it, nbs in zip(items, made):
        yield it["idx"], -1, -1, _to_arrays(nbs)


def _build_mlm(init: dict, device: str):
    from ..models import load_masked_lm

    mlm = load_masked_lm(**init["load_args"], device=device)
    return mlm, mlm.identity


def _work_mlm(mlm, init: dict, items: list[dict]):
    from ..mlm.energy import energies
    from ..mlm.masking import plan_masks

    p = init["plan"]
    plan = plan_masks(mlm.tokenizer, [it["text"] for it in items], k=p["k"], seed=p["seed"], rate=p["rate"],
                      max_length=p["max_length"], recipe=p["recipe"])
    _, sums = energies(mlm, plan=plan, batch_tokens=init["batch_tokens"], cache=False, return_patterns=True)
    for it, row in zip(items, sums):
        yield it["idx"], -1, -1, {"pattern_logp": row}


_BUILD = {"stats": _build_stats, "neighbours": _build_neighbours, "mlm": _build_mlm}
_WORK = {"stats": _work_stats, "neighbours": _work_neighbours, "mlm": _work_mlm}


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
