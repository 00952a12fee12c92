"""The Run button and background job of an audit page (Document audit, Masked-LM audit, Dataset inference, Controlled
experiment): one block for all.

:func:`audit_job` draws the Run button (disabled while an audit of its kind runs, whichever tab started it); when
it is pressed it builds the job (the page's cheap checks, the engine, the models: every bad input is one red line
before anything runs in the background, and the earlier results stay), clears the page's earlier results and starts
it; while the job runs
it shows its live progress; once it is done it returns the finished job, once. The job is the registry's latest of
its kind, so a new tab finds an audit another tab started (and says so).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import streamlit as st

from mia_core.errors import MiaError

from .options import worded

from .jobs import registry
from .ui import follow_job, show_error, start_job

RUN_HELP = "Runs in the background, with its elapsed time and time left; the results appear below."


@dataclass
class AuditJob:
    """What a page's Run button starts: ``work(progress)`` under ``title`` on ``engine`` (None: this process); with
    ``expected`` (the estimate before Run) the job shows one time left for the whole run (``ui.whole_run_left``)."""

    title: str
    work: Callable
    engine: object = None
    expected: dict | None = None  # the estimate before Run, for the whole run's time left (dashboard.jobs.Job.expected)


def audit_job(*, prefix: str, kind: str, button: str, clear: Sequence[str], build: Callable[[], AuditJob],
              take_foreign: bool = True, disabled: bool = False):
    """The Run button, its background job and the job's progress; the finished job, once.

    Parameters
    ----------
    prefix : str
        The page's session-state prefix: ``{prefix}_job`` (the id of the job this session started), ``go_{prefix}``
        (the button), ``{prefix}_acked`` (the jobs already taken). The job shown is the registry's latest of
        ``kind``, whichever tab started it (a new tab finds a running audit, or its result once done).
    kind : str
        The job's kind in the registry (``"documents"``, ``"mlm"``).
    button : str
        The button's label.
    clear : sequence of str
        Session-state keys of the earlier results, removed once the job is built (bad input, said in one line,
        keeps them: nothing is lost).
    build : callable
        ``build()`` -> :class:`AuditJob`, called when the button is pressed; a ``MiaError`` it raises is shown
        as one red line and nothing starts.
    take_foreign : bool
        False while the page shows a run the user chose (reopened from Runs): a job another tab started and finished
        is then left alone, not shown over it (``ui.follow_job``).
    disabled : bool
        The button off (a known limit the page says beside it).

    Returns
    -------
    Job or None
        The job, once, when it is done (its ``result`` is what ``work`` returned); None otherwise.
    """
    reg = registry()
    job = reg.latest(kind)  # the latest audit of this kind, this tab's or another's (one runs at a time)
    busy = job is not None and job.running
    go_ = st.button(button, type="primary", key=f"go_{prefix}", disabled=busy or disabled, help=RUN_HELP)
    if go_ and not busy and not disabled:
        try:
            built = build()
        except MiaError as e:
            show_error(e)  # the earlier results stay: bad input loses nothing
        else:
            for key in clear:
                st.session_state.pop(key, None)
            start_job(reg, kind, built.title, built.work, state_key=f"{prefix}_job", engine=built.engine,
                      expected=built.expected)
    return follow_job(reg, job, f"{prefix}_acked", take_foreign=take_foreign)


def keep_finished(done, result_key: str, started_key: str) -> None:
    """A finished job's result (``done.result``: ``result``, ``notes``, ``seconds``...) kept under ``result_key`` with
    the signature of the inputs its run started from (``started_key``; None for another tab's run, whose inputs are
    not known here: the page says it started in another tab), and the line "Done in ..."."""
    from .ui import fmt_seconds, job_origin

    st.session_state[result_key] = {**done.result,
                                    "signature": None if job_origin(done) else st.session_state.get(started_key)}
    st.caption(f"Done in {fmt_seconds(done.result['seconds'])}.")


def save_finished(kind: str, result) -> dict:
    """Save a finished audit's result in the one run store (``mia_core.audits.saved``; the Runs page lists it):
    ``{"saved": id, "name": name}``, or ``{"saved": None, "save_error": why}`` (one line in words: a run that cannot
    be saved never loses the result on the page). Called by the job itself, once, whichever tab watches it."""
    from mia_core.audits.saved import save_run

    try:
        meta = save_run(kind, result)
    except (MiaError, OSError) as e:
        return {"saved": None, "save_error": worded(e)}
    return {"saved": meta["id"], "name": meta["name"]}
