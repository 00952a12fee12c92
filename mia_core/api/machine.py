"""The machine check every front end runs before a model loads (the CLI's commands, through
:func:`mia_core.cli.common.check_machine`): the device exists here, the statistics cache is usable."""
from __future__ import annotations


def check_machine(*, device: str | None = None, cache: bool = True) -> None:
    """Before any model loads: ``device`` exists on this machine, and (unless ``cache`` is False) the statistics
    cache folder (``$MIA_CACHE_DIR``) is usable (a read-only, filled cache is read: nothing new is stored, and
    the run says so).

    Raises
    ------
    MiaError
        One line: a device this machine does not have, a cache folder that cannot be used.
    """
    from ..models.device import resolve_device
    from ..paths import cache_root

    if device is not None:
        resolve_device(device)
    if cache:
        cache_root(writable=False)
