"""The local run store: every finished calibration run, kept on disk so it survives restarts.

Layout: ``<runs dir>/<run id>/`` holds what :meth:`mia_core.pipeline.RunResult.save` writes
(``scores.csv``, ``metrics.json``, ``run.json``) plus ``meta.json`` (name, time, model
identities, attacks, data summary, AUCs, verdict) used for listing without reading the rest.
The runs dir is ``$MIA_RUNS_DIR`` when set, else ``<cache root>/runs`` (``mia_core.paths``).

Run ids are ``YYYYmmdd-HHMMSS-<6 hex>``; only ids of that alphabet are accepted, so a run
id can never point outside the store. Nothing is unpickled: everything is CSV/JSON.

A damaged run never takes the others down: :func:`list_runs` lists it with ``meta["damaged"]`` (one
line: why), :func:`load_run` refuses it with a one-line ``DataError``, and :func:`delete_run` removes
it. A link in the runs dir is never followed: it is listed as damaged and deleted as a link.

A run read back is a :class:`StoredRun`: the :class:`mia_core.runs.results.RunResult` it was (read by
``RunResult.load``, every file checked), plus its ``id``, ``meta`` and ``path``. :func:`read_run` reads
any saved run folder the same way (``mia_core.load``).

The package: ``store`` (the operations: :func:`save_run`, :func:`list_runs`, :func:`load_run`,
:func:`read_run`, :func:`delete_run`, :func:`rename_run`, :func:`latest_run`, :class:`StoredRun`) and
``folder`` (reading one run folder that may be damaged, and its checks).
"""
from .folder import MAX_META_BYTES, META, RUN_FILES
from .store import (_ID_RE, META_VERSION, RUNS_ENV, StoredRun, build_meta, content_key, delete_run, foreign_folders,  # noqa: F401
                    latest_run, list_runs, load_run, read_run, rename_run, runs_dir, save_run)

__all__ = ["MAX_META_BYTES", "META", "META_VERSION", "RUNS_ENV", "RUN_FILES", "StoredRun", "build_meta", "content_key",
           "delete_run", "foreign_folders", "latest_run", "list_runs", "load_run", "read_run", "rename_run", "runs_dir", "save_run"]
