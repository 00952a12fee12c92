"""The declared options of where the model passes run (:class:`EngineOptions`): ``--engine``, ``--workers``... of
every command that runs a model (``mia_core.cli.common.add_engine_args``), the pages' engine widgets
(``dashboard.engine``) and :meth:`mia_core.engines.ray_data.RayEngine.start`'s own check take them from here."""
from __future__ import annotations

from dataclasses import dataclass

from ..options import Options, number, one_of, option, text, whole


@dataclass(frozen=True)
class EngineOptions(Options):
    """Where the model passes run; the choice never changes a number."""

    engine: str = option("local", one_of("local", "ray"), "local: this process; ray: Ray workers, each keeping its "
                                                          "model between passes (needs pip install 'mia-dashboard[ray]')")
    workers: int = option(2, whole(1), "Ray workers")
    gpus_per_worker: float = option(0.0, number(0), "GPUs per Ray worker (0: CPU workers)")
    cpus_per_worker: int = option(1, whole(1), "CPUs per Ray worker, its torch threads")
    ray_address: str | None = option(None, text(optional=True), "join a running cluster (ray start --head) instead "
                                                                 "of starting a local one; $RAY_ADDRESS if unset")
