"""Small Streamlit helpers shared by the pages: page setup, error boxes, verdict banner, stage
progress, and people-friendly formatting (re-exported from ``mia_core.formatting``)."""
from __future__ import annotations

import re

import streamlit as st

from mia_core.formatting import (  # noqa: F401 - re-exported for the pages
    fmt_auc, fmt_bytes, fmt_num, fmt_pct, fmt_rate_ci, fmt_seconds, fpr_label,
)

from .options import worded

AUC_EXPLAINER = (
    "An attack gives every text a score; the **AUC** is the probability that a random member "
    "outscores a random non-member. **0.5 = chance**: the attack cannot tell texts the model was "
    "trained on from texts it never saw. What matters for a confident claim is the **true-positive "
    "rate at a low false-positive rate** (e.g. TPR at 1 % FPR)."
)


def page_setup(title: str, icon: str = ":material/home:") -> None:
    st.set_page_config(page_title=f"{title} · MIA dashboard", page_icon=icon, layout="wide")


# Markdown that a user string (a file or zip-member name, a text id, a model name) must not turn on in a
# message: links and images ([ ] and <autolinks>), emphasis, code, headings, quotes, tables, strikethrough,
# LaTeX ($), HTML entities (&), Streamlit's colour directives (:red[...]); and GitHub's bare-URL links.
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>#|~$&])")
_MD_WORD_EDGE_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")  # snake_case stays as it is
_MD_AUTOLINK = re.compile(r"(?i):(?=//)|(?<=www)\.|@")
_MD_LINE_START = re.compile(r"^\s*(?:[-+=]|\d+(?=[.)]))")  # a list item ("- x", "1. x") or a heading underline


def md_text(s) -> str:
    """``s`` as Markdown that shows exactly this text (for ``st.error``, ``st.caption``, progress texts,
    which render Markdown): one line (control characters escaped, :func:`mia_core.errors.safe_text`),
    and every character that would start a link, an image, emphasis, a heading... backslash-escaped,
    so a file named ``![x](http://host/beacon.png)`` is shown as such, not fetched."""
    from mia_core.errors import safe_text

    s = _MD_SPECIAL.sub(r"\\\1", safe_text(s))
    s = _MD_WORD_EDGE_UNDERSCORE.sub(r"\\_", s)
    s = _MD_AUTOLINK.sub(lambda m: "\\" + m.group(), s)
    m = _MD_LINE_START.match(s)
    if m:  # "- x" -> "\- x", "1. x" -> "1\. x"
        cut = m.end() - 1 if not m.group()[-1].isdigit() else m.end()
        s = s[:cut] + "\\" + s[cut:]
    return s


def show_error(e: Exception | str) -> None:
    """A user-facing error: one clear sentence in a red box, never a traceback. Its text is shown as text
    (:func:`md_text`): a name in it cannot render as Markdown (a link, an image) or add a line. The settings
    a ``MiaError`` is about are named as the pages name them (:func:`dashboard.options.worded`)."""
    st.error(md_text(worded(e)))


def known_truth_banner(known: dict | None) -> bool:
    """The demo's known-truth check (``mia_core.targets.demo.known_truth``): a red box when the run is far from the
    demo's known answer (then no green banner may follow), a line when it matches. True when it failed."""
    if not known:
        return False
    if not known.get("ok", True):
        st.error(f"**These figures are wrong.** {known.get('message', '')}", icon=":material/dangerous:")
        return True
    st.caption(f":material/verified: {known.get('message', '')}")
    return False


def verdict_banner(verdict: dict | None, *, known: dict | None = None) -> None:
    """The blind-baseline verdict: success / warning (caution) / error (shift). ``known``: the demo's
    known-truth check, shown first; when it failed, the verdict is shown without its green colour."""
    failed = known_truth_banner(known)
    if not verdict:
        return
    if failed and verdict.get("level") not in ("shift", "caution"):
        st.info(f"Blind baseline: {verdict.get('message', '')}")
        return
    level = verdict.get("level")
    msg = verdict.get("message", "")
    if level == "shift":
        st.error(f"**Distribution shift — these AUCs do not measure membership.** {msg}", icon=":material/error:")
    elif level == "caution":
        st.warning(f"**Caution — the sets differ slightly without the model.** {msg}", icon=":material/warning:")
    else:
        st.success(f"**Blind baseline: no sign of distribution shift.** {msg}", icon=":material/check_circle:")


def render_stages(job) -> None:
    """One progress bar per stage of a job, with its message (counts) and elapsed time."""
    import time

    stages = job.snapshot()
    current = job.current_stage() if job.running else None
    st.markdown(f"**{job.title}** — running for {fmt_seconds(job.elapsed)}")
    if job.status_message:
        st.caption(md_text(job.status_message))
    if not stages:
        st.progress(0.0, text="starting…")
    for s in stages:  # one timer per stage, from its start; the current one keeps counting
        el = time.time() - s.started if s.name == current else s.elapsed
        st.progress(s.fraction, text=f"{md_text(s.name)}: {md_text(s.message)} "  # a document's name: as text
                                     f"({fmt_seconds(el)}{stage_eta(s, el, s.name == current)})")


def start_job(reg, kind: str, title: str, work, *, state_key: str | None = None, engine=None) -> None:
    """Start ``work(progress)`` as a background job of ``reg`` (its passes on ``engine``, else the local
    engine), remember its id under ``state_key`` in this session, and redraw the page at once: the Run
    button disabled, the live progress below it (:func:`follow_job`)."""
    from contextlib import nullcontext

    from mia_core.engines import use_engine

    with use_engine(engine) if engine is not None else nullcontext():  # the job's thread runs its passes there
        job = reg.start(kind, title, work)
    if state_key:
        st.session_state[state_key] = job.id
    st.rerun()


def follow_job(reg, job, acked_key: str, *, extra=None, repeat_error: bool = False):
    """While ``job`` runs, its live progress (:func:`watch_job`, ``extra`` drawing more); once it ended, the
    job, once, when it is done (:func:`finished_job`); else None."""
    if job is not None and job.running:
        watch_job(reg, job.id, extra)
        return None
    return finished_job(job, acked_key, repeat_error=repeat_error)


def watch_job(reg, job_id: str, extra=None) -> None:
    """Redraw a running background job every second (its stages, elapsed time and time left; ``extra(job)``
    draws more, e.g. early results) and rerun the page once it ends, so the page picks up its result."""

    @st.fragment(run_every=1.0)
    def _watch(job_id: str):
        j = reg.get(job_id)
        if j is None:
            return
        render_stages(j)
        if extra is not None:
            extra(j)
        if not j.running:
            st.rerun()

    _watch(job_id)


def finished_job(job, acked_key: str, *, repeat_error: bool = False):
    """A job that ended and this session has not yet taken: returned once when it is done, its error shown
    when it failed (once, or on every rerun with ``repeat_error``); None otherwise. ``acked_key``: the
    session-state set of the jobs already taken."""
    acked = st.session_state.setdefault(acked_key, set())
    if job is None or job.running:
        return None
    if job.status == "error" and (repeat_error or job.id not in acked):
        show_error(job.error)
    if job.id in acked:
        return None
    acked.add(job.id)
    return job if job.status == "done" else None


def stage_eta(stage, elapsed: float, current: bool) -> str:
    """", about 40 s left" for the running stage, from its pace up to its last progress report (once it
    is 5 % done and has run 3 s, so the first batch's start-up does not make the guess wild); "" otherwise.

    The pace is the stage's whole time to its last report over the share done then, and the estimate
    counts down between reports. (It used to divide the time *now* by the share of the last report:
    work arrives in bursts, a batch of windows at once, so between two bursts the estimate grew, and it
    swung 2-4x in a pass.)"""
    import time

    f = float(stage.fraction)
    if not current or not 0.05 <= f < 1.0 or elapsed < 3:
        return ""
    upto = max(1e-9, float(stage.updated) - float(stage.started))
    left = upto * (1 - f) / f - max(0.0, time.time() - float(stage.updated))
    return f", about {fmt_seconds(left)} left" if left >= 1 else ", finishing"


def early_table(partial: dict):
    """Early results of a running calibration: one row per attack, AUC and TPR at 1 % / 10 % FPR
    (the rows of ``mia_core.metrics.metrics_rows``, without CIs)."""
    from mia_core.metrics import metrics_frame

    return metrics_frame(partial, fprs=(0.01, 0.1), with_ci=False, with_n=False).set_index("Attack")


def stage_progress(container):
    """A synchronous progress callback that draws one bar per stage inside ``container``."""
    import time

    bars: dict[str, tuple] = {}

    def cb(message: str, fraction: float) -> None:
        msg = str(message)
        name, rest = (msg.split(":", 1) + [""])[:2] if ":" in msg else ("status", msg)
        name = name.strip()
        if name not in bars:
            bars[name] = (container.empty(), time.time())
        slot, t0 = bars[name]
        slot.progress(max(0.0, min(1.0, float(fraction))),
                      text=f"{md_text(name)}: {md_text(rest.strip())} ({fmt_seconds(time.time() - t0)})")

    return cb
