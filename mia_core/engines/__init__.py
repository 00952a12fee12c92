"""Where the model passes run: in this process (``local``, the default) or on Ray workers (``ray``).

The choice never changes a number: every engine turns texts into the same per-token statistics
(:mod:`mia_core.stats`), and the driver (this process) keeps the one statistics cache, so a run
on one engine reuses what another computed (resume = skip what is cached).

Use it around any audit::

    from mia_core.engines import make_engine, use_engine

    with use_engine(make_engine("ray", workers=4, gpus_per_worker=1)):
        result = run_attacks(dataset, target)

:func:`mia_core.stats.compute_stats` asks :func:`current_engine` where to run the texts it does not
find in the cache. ``make_engine`` checks everything it can (Ray installed, the cluster reachable)
before any model is loaded, with one-line ``SettingsError``\\ s.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Callable

from ..errors import SettingsError

ENGINES = ("local", "ray")


class Partials:
    """A long text's windows done so far, kept between runs in the statistics cache's partial entries
    (``{fields over the whole text, "done_windows", "vp"}``, as the local engine writes them)."""

    def __init__(self, get: Callable[[int], dict | None], put: Callable[[int, dict], None],
                 drop: Callable[[int], None]):
        self.get, self.put, self.drop = get, put, drop


@dataclass
class LocalEngine:
    """This process, this device: :func:`mia_core.stats.compute_stats`'s own loop."""

    kind: str = "local"
    distributed: bool = False

    def describe(self) -> str:
        return "local (this process)"

    def close(self) -> None:
        pass


_current: contextvars.ContextVar = contextvars.ContextVar("mia_engine", default=LocalEngine())


def current_engine():
    """The engine the model passes of this context run on (:class:`LocalEngine` unless set)."""
    return _current.get()


@contextlib.contextmanager
def use_engine(engine):
    """Run the model passes inside the ``with`` block on ``engine``."""
    token = _current.set(engine)
    try:
        yield engine
    finally:
        _current.reset(token)


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


__all__ = ["ENGINES", "LocalEngine", "current_engine", "make_engine", "use_engine"]
