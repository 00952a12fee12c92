"""The audit registry. Adding an audit = its engine package, one module here (an :class:`Audit` passed to
:func:`register`), its import below, and its page (``docs/layout.md``, "Adding an audit").

:func:`prepare` and :func:`execute` are the one front door to every audit by name (the named functions of
:mod:`mia_core.api` stay, for notebooks); :func:`load_saved` (``mia_core.load``) reads any audit's saved folder
back, :func:`load_result` one of a named audit.
"""
from __future__ import annotations

from .base import AUDITS, Audit, Known, register

# Each module registers its audit; the order of these imports is the registry's order.
from . import run, documents, masked_lm, dataset_inference, extraction, traps  # noqa: E402,F401,I001


def audit_named(name: str) -> Audit:
    """The registered audit ``name``; ``SettingsError`` in one line naming the audits there are."""
    from ..inputs import bad_value

    if not isinstance(name, str) or name not in AUDITS:
        raise bad_value("audit", f"one of {', '.join(AUDITS)}", name)  # an API-only parameter: named as it is
    return AUDITS[name]


def prepare(name: str, *sets, **inputs):
    """A checked request for audit ``name``, before any model loads: its sets (``Audit.sets``, in that order) by
    position or by keyword, as ``mia_core.audit(members, nonmembers)`` takes them, and its options by keyword."""
    from ..errors import SettingsError

    audit = audit_named(name)
    if len(sets) > len(audit.sets):
        raise SettingsError(f"prepare({name!r}, ...) takes {len(audit.sets)} set(s) by position "
                            f"({', '.join(audit.sets)}), got {len(sets)}; give the options by keyword")
    for set_name, value in zip(audit.sets, sets):
        if set_name in inputs:
            raise SettingsError(f"prepare({name!r}, ...): {set_name} given twice (by position and by keyword)")
        inputs[set_name] = value
    return audit.prepare(**inputs)


def audit_of(request) -> Audit:
    """The audit whose ``prepare`` made ``request``."""
    from ..inputs import bad_value

    for a in AUDITS.values():
        if isinstance(request, a.request()):
            return a
    raise bad_value("request", "what mia_core.audits.prepare() returns", request)


def execute(request, *, progress=None):
    """Run a prepared request (:func:`prepare`) on its audit; ``progress(message, fraction)``."""
    return audit_of(request).execute(request, progress=progress)


def load_result(name: str, folder):
    """The result audit ``name`` saved into ``folder`` (``result.save(folder)``), read back."""
    return audit_named(name).load(folder)


def load_saved(path):
    """Any audit's saved folder read back (``mia_core.load``): the audit whose marker file the folder holds
    (``run.json``, ``document_metrics.json``, ``curves.json``, ``dataset_inference.json``) reads it.

    Parameters
    ----------
    path : str or Path
        A folder written by ``result.save(dir)``, a command's ``--out`` or the run store.

    Returns
    -------
    mia_core.runs.results.AuditResult
        A :class:`mia_core.runs.StoredRun` for a calibration run (``.id``, ``.meta``, ``.path`` besides), a
        ``DocumentAuditResult``, an ``MlmAuditResult`` or a ``DatasetInferenceResult``.

    Raises
    ------
    DataError
        One line: not a folder, a folder that holds no saved audit, or a damaged one.
    """
    import os
    from pathlib import Path

    from ..errors import DataError

    from ..inputs import bad_value

    if not isinstance(path, (str, os.PathLike)) or (isinstance(path, str) and not path.strip()):
        raise bad_value("path", "the path of a saved audit's folder", path, DataError)
    p = Path(path).expanduser()
    for a in AUDITS.values():
        marker = p / a.marker
        try:
            there = marker.is_file() or marker.is_symlink()  # a link is refused by the audit's own reader
        except (OSError, ValueError):  # a name too long, a NUL: the run reader below says so in one line
            break
        if there:
            return a.load(p)
    return AUDITS["run"].load(p)  # says in one line what the folder is not (missing, a file, a link, a run's files)


__all__ = ["AUDITS", "Audit", "Known", "register", "audit_named", "audit_of", "prepare", "execute", "load_result",
           "load_saved"]
