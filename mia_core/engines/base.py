"""The engine interface: :class:`Workload`, the local engine, the current engine of a context, and
:func:`cut_units` (see :mod:`mia_core.engines`)."""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Callable

from ..progress import Progress, noop

ENGINES = ("local", "ray")
UNITS_PER_WORKER = 4  # a distributed engine cuts the work into at least this many units per worker


class Workload:
    """One kind of model work, as an engine runs it.

    ``tool``: the driver's own tool (a loaded model, a generator), used by :class:`LocalEngine`;
    ``init``: what a worker needs to build the same tool (picklable: Ray sends it), given to :meth:`build` and
    :meth:`work`. Subclasses live with their domain and define :meth:`build`, :meth:`work` and
    :meth:`check_remote`; they must be importable by module path (a Ray worker imports them).
    """

    kind = "work"

    def __init__(self, tool, init: dict):
        self.tool, self.init = tool, init

    def check_remote(self) -> None:
        """Raise ``SettingsError`` when the tool cannot be rebuilt on another process (before any work)."""

    @classmethod
    def build(cls, init: dict, device: str) -> tuple[object, str]:  # pragma: no cover - per workload
        """On a worker: ``(tool, identity)``; the identity must equal ``init["identity"]``."""
        raise NotImplementedError

    @classmethod
    def work(cls, tool, init: dict, items: list[dict], emit: Callable[[int, int, int, dict], object],
             progress: Progress = noop) -> None:  # pragma: no cover - per workload
        """A unit's items -> ``emit(index, t0, t1, arrays)`` for each result as soon as it is done
        (``t0 = t1 = -1``: a whole text). On the local engine ``emit`` stores it at once (a run that
        stops keeps it); a worker sends its unit's rows back together."""
        raise NotImplementedError


def cut_units(items: list[dict], costs: list[int], size: int, *, workers: int = 1, fixed: bool = False
              ) -> list[dict]:
    """``items`` in the given order, cut into units of about ``size`` cost.

    Unless the size was set by the user (``fixed``) or there is one worker, the units shrink towards
    the end: none holds more than a ``2 x workers``-th of the cost still to cut, down to an eighth of
    ``size`` ("factoring", as in loop scheduling), so the units that finish last are short and the
    workers end together. (With equal units, 2 workers on 400 AG News texts ended 1.8 s apart in a
    34-s span.)"""
    total = sum(costs) or 1
    smallest = size if fixed or workers == 1 else max(1, size // 8)
    units, cur, cur_cost, left = [], [], 0, total  # left: the cost not yet in a closed unit
    for it, c in zip(items, costs):
        cur.append(it)
        cur_cost += c
        if cur_cost >= max(smallest, min(size, left / (2 * workers))):
            units.append({"items": cur, "tokens": cur_cost})
            left -= cur_cost
            cur, cur_cost = [], 0
    if cur:
        units.append({"items": cur, "tokens": cur_cost})
    return units


@dataclass
class LocalEngine:
    """This process, this device: each unit runs on the driver's own tool, in order."""

    kind: str = "local"
    # each call builds no tool (the driver's model runs): a run may send its passes one by one (early results
    # after each); an engine whose workers load the model per call wants each model's passes in one call
    loads_per_call: bool = False
    in_process: bool = True  # the run's speed is this machine's (recorded for the estimate)
    workers: int = 1
    unit_tokens: int | None = None

    def describe(self) -> str:
        """The engine in words, for reports and run records: ``local (this process)``."""
        return "local (this process)"

    def close(self) -> None:
        """Nothing to release (the engine holds no workers)."""
        pass

    def cut(self, items: list[dict], costs: list[int], size: int | None = None) -> list[dict]:
        """Texts as units: all in one (the workload batches them itself, e.g. texts that share a prefix)."""
        return [{"items": list(items), "tokens": sum(costs)}] if items else []

    def map(self, workload: Workload, units: list[dict], on_row: Callable[[int, int, int, dict], bool], *,
            progress: Progress = noop, label: str = "work") -> None:
        """Run ``units`` here, in order; ``on_row`` for every row. The workload's own progress (windows,
        texts) is shown within each unit's share of the tokens."""
        total = sum(u["tokens"] for u in units) or 1
        done = 0

        for u in units:
            def sub(msg: str, frac: float, base=done, n=u["tokens"]) -> None:
                progress(msg, min(1.0, (base + frac * n) / total))

            workload.work(workload.tool, workload.init, u["items"],
                          lambda i, t_a, t_b, arrays: on_row(int(i), int(t_a), int(t_b), arrays), sub)
            done += u["tokens"]


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
