"""Where the model passes run: in this process (``local``, the default) or on Ray workers (``ray``).

The choice never changes a number. Every kind of model work is a **workload**
(:class:`Workload`), written by its domain next to its code:

* :class:`mia_core.stats.workload.TokenStatsWorkload`: a causal LM's per-token statistics;
* :class:`mia_core.neighbours.base.NeighbourWorkload`: a generator's neighbours;
* :class:`mia_core.mlm.energy.EnergyWorkload`: a masked LM's per-pattern sums.

A workload cuts its texts into *units* (``{"items": [{"idx", "text", ...}], "tokens": cost}``) and
says how to build its tool (a model) and how to turn a unit into arrays. An engine runs the units:
``engine.map(workload, units, on_row)``; ``on_row(index, t0, t1, arrays)`` runs here, on the driver,
for every result (it stores it in the driver's cache and returns True when that completed a text).

* :class:`LocalEngine`: in this process, with the driver's own model (``workload.tool``);
* :class:`mia_core.engines.ray_data.RayEngine`: on Ray worker actors kept between calls, each building
  a tool with ``workload.build(init, device)`` when a unit first needs it and keeping the last one.

Both call the same ``workload.work``, and the domain code that cuts the units, stores the rows and
resumes what was half done is the same for both: one pass order. The one difference is grouping:
an engine whose workers hold one model at a time (``loads_per_call``: Ray) is sent each model's
passes of a run as one call, and the local engine each pass on its own, so early results come
after each. This package imports no domain: the domains import it (:func:`current_engine`).

Use it around any audit::

    from mia_core.engines import make_engine, use_engine

    with use_engine(make_engine("ray", workers=4, gpus_per_worker=1)):
        result = run_attacks(dataset, target)

``make_engine`` checks everything it can (Ray installed, the cluster reachable) before any model is
loaded, with one-line ``SettingsError``\\ s.
"""
from __future__ import annotations

from ..errors import SettingsError
from .base import ENGINES, UNITS_PER_WORKER, LocalEngine, Workload, current_engine, cut_units, use_engine


def make_engine(kind: str = "local", *, workers: int = 2, gpus_per_worker: float = 0.0,
                cpus_per_worker: float = 1.0, address: str | None = None, batch_texts_tokens: int | None = None):
    """An engine by name. ``ray``: ``workers`` actors, each with ``cpus_per_worker`` CPUs (its torch
    threads) and ``gpus_per_worker`` GPUs; ``address`` (else ``$RAY_ADDRESS``) joins a running cluster,
    otherwise a local one is started. Raises ``SettingsError`` (one line) on a bad setting, a missing
    Ray or an unreachable cluster, before any model is loaded."""
    kind = (kind or "local").strip().lower()
    if kind not in ENGINES:
        raise SettingsError(f"engine must be one of {', '.join(ENGINES)}, not {kind!r}")
    if kind == "local":
        return LocalEngine()
    from .ray_data import RayEngine

    return RayEngine.start(workers=workers, gpus_per_worker=gpus_per_worker, cpus_per_worker=cpus_per_worker,
                           address=address, unit_tokens=batch_texts_tokens)


__all__ = ["ENGINES", "UNITS_PER_WORKER", "LocalEngine", "Workload", "current_engine", "cut_units", "make_engine",
           "use_engine"]
