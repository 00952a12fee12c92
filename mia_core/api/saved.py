"""``load``: a saved run folder read back."""
from __future__ import annotations

import os

from ..errors import DataError
from ..inputs import bad_value


def load(path):
    """A saved calibration run's folder read back, as the dashboard's run store reads its runs (``mia_core.load``
    reads any audit's folder: :func:`mia_core.audits.load_saved`).

    Parameters
    ----------
    path : str or Path
        A folder written by ``result.save(dir)``, ``mia run --out`` or the run store.

    Returns
    -------
    mia_core.runs.StoredRun
        The :class:`mia_core.pipeline.RunResult` it was (``.scores``, ``.metrics``, ``.config``,
        ``.models``, ``.timings``, ``.shift``, ``.report``...), plus ``.id`` (the folder's name),
        ``.meta`` (its ``meta.json`` when the run store wrote it, else ``{}``) and ``.path``.

    Raises
    ------
    DataError
        One line, for a folder that holds no saved run (a document, masked-LM or dataset-inference folder: read
        it with ``mia_core.load``) or a damaged one: a file a link, not JSON, or of another shape than a run's.
    """
    from ..runs import read_run

    if not isinstance(path, (str, os.PathLike)) or (isinstance(path, str) and not path.strip()):
        raise bad_value("path", "the path of a saved run's folder", path, DataError)
    return read_run(path)
