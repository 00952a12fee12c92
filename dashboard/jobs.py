"""Long jobs (calibration runs) in a background thread.

The page starts a job and draws its progress from a fragment that reruns every second, so the
rest of the page (and the other pages) stay usable while it runs. Jobs live in a process-wide
registry (``st.cache_resource``), so a browser refresh (a new session) finds the running job
again; a finished job's result is saved to the run store by the job itself.

Progress follows the engine's ``progress(message, fraction)`` convention: the text before the
first ':' names the stage ("target pass", "reference pass", "blind baseline", "neighbours"...),
and each stage gets its own bar with its latest message and elapsed time.
"""
from __future__ import annotations

import contextvars
import logging
import secrets
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

import streamlit as st

from mia_core.errors import MiaError

from .options import worded

log = logging.getLogger("mia_dashboard.jobs")


@dataclass
class Stage:
    name: str
    fraction: float = 0.0
    message: str = ""
    started: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    history: list = field(default_factory=list)  # [(time of a report, share done then)]: the time left's pace

    @property
    def elapsed(self) -> float:
        return self.updated - self.started


@dataclass
class Job:
    id: str
    kind: str
    title: str
    started: float = field(default_factory=time.time)
    finished: float | None = None
    status: str = "running"  # running | done | error
    error: str | None = None
    result: object = None
    stages: dict[str, Stage] = field(default_factory=dict)
    status_message: str = ""
    partial: dict = field(default_factory=dict)  # early results (``run_attacks(partial=...)``), shown while running
    # what the page expected before Run: {"seconds": the model passes' estimate, "passes": how many} (the whole
    # run's time left starts from it and is revised from the run's own speed: dashboard.ui.whole_run_left)
    expected: dict | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_partial(self, results: dict) -> None:
        with self._lock:
            self.partial = {**self.partial, **results}

    def progress(self, message: str, fraction: float) -> None:
        """The engine's progress callback: routes each message to its stage."""
        msg = str(message)
        now = time.time()
        with self._lock:
            if ":" not in msg:
                self.status_message = msg
                return
            name, rest = msg.split(":", 1)
            name = name.strip()
            st_ = self.stages.get(name)
            if st_ is None:
                st_ = self.stages[name] = Stage(name=name, started=now)
            st_.fraction = max(0.0, min(1.0, float(fraction)))
            st_.message = rest.strip()
            st_.updated = now
            st_.history.append((now, st_.fraction))
            if len(st_.history) > 1000:  # thinned, first and last kept: the pace needs no more
                del st_.history[1:-1:2]

    def current_stage(self) -> str | None:
        """The stage that started last (its timer runs while the job does)."""
        with self._lock:
            return max(self.stages.values(), key=lambda s: s.started).name if self.stages else None

    def snapshot(self) -> list[Stage]:
        with self._lock:
            return [Stage(s.name, s.fraction, s.message, s.started, s.updated, list(s.history))
                    for s in self.stages.values()]

    @property
    def elapsed(self) -> float:
        return (self.finished or time.time()) - self.started

    @property
    def running(self) -> bool:
        return self.status == "running"


class _Reporter:
    """A job's progress callback, with ``partial`` for early results."""

    def __init__(self, job: Job):
        self.job = job

    def __call__(self, message: str, fraction: float) -> None:
        self.job.progress(message, fraction)

    def partial(self, results: dict) -> None:
        self.job.add_partial(results)


class JobRegistry:
    def __init__(self):
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def start(self, kind: str, title: str, fn: Callable[[Callable[[str, float], None]], object], *,
              expected: dict | None = None) -> Job:
        """Run ``fn(progress)`` in a daemon thread; its return value becomes ``job.result``.
        ``progress(message, fraction)`` also has ``progress.partial(results)`` for early results. ``expected``: what
        the page estimated before Run (``Job.expected``)."""
        job = Job(id=secrets.token_hex(4), kind=kind, title=title, expected=expected)

        def target():
            try:
                job.result = fn(_Reporter(job))
                job.status = "done"
            except MiaError as e:
                job.error = worded(e)  # its settings named as the pages name them
                job.status = "error"
            except Exception as e:  # noqa: BLE001 - a bug: log the traceback, show one line
                log.error("job %s failed:\n%s", job.id, traceback.format_exc())
                job.error = f"unexpected error ({type(e).__name__}): {e}"
                job.status = "error"
            finally:
                job.finished = time.time()

        with self._lock:
            self._jobs[job.id] = job
        # the caller's context variables (the engine the passes run on: mia_core.engines.use_engine) go along
        ctx = contextvars.copy_context()
        threading.Thread(target=ctx.run, args=(target,), name=f"mia-job-{job.id}", daemon=True).start()
        return job

    def get(self, job_id: str | None) -> Job | None:
        return self._jobs.get(job_id) if job_id else None

    def latest(self, kind: str) -> Job | None:
        with self._lock:
            jobs = [j for j in self._jobs.values() if j.kind == kind]
        return max(jobs, key=lambda j: j.started) if jobs else None

    def running(self, kind: str | None = None) -> list[Job]:
        with self._lock:
            return [j for j in self._jobs.values() if j.running and (kind is None or j.kind == kind)]


@st.cache_resource
def registry() -> JobRegistry:
    """The process-wide job registry (shared by every session)."""
    return JobRegistry()
