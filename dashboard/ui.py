"""Small Streamlit helpers shared by the pages: page setup, error boxes, verdict banner, stage
progress, and people-friendly formatting (re-exported from ``mia_core.formatting``)."""
from __future__ import annotations

import re

import streamlit as st

from mia_core.formatting import (  # noqa: F401 - re-exported for the pages
    counted, fmt_auc, fmt_bytes, fmt_num, fmt_pct, fmt_rate_ci, fmt_seconds, fpr_label,
)

from .options import worded

AUC_EXPLAINER = (
    "An attack gives every text a score; the **AUC** is the probability that a random member "
    "outscores a random non-member. **0.5 = chance**: the attack cannot tell texts the model was "
    "trained on from texts it never saw. What matters for a confident claim is the **true-positive "
    "rate at a low false-positive rate** (e.g. TPR at 1 % FPR)."
)


def page_setup(title: str, icon: str = ":material/home:", *, keep: tuple[str, ...] = ()) -> None:
    """The page's title and icon in the browser tab, the wide layout, and what the user entered on the page kept
    across page switches (:func:`keep_inputs`). Every page calls it first (the Home page too).

    Parameters
    ----------
    title : str
        The page's title (the browser tab shows "<title> · MIA dashboard").
    icon : str
        The page's icon.
    keep : tuple of str
        The widget-key prefixes of this page's inputs, kept across page switches (:func:`keep_inputs`).
    """
    st.set_page_config(page_title=f"{title} · MIA dashboard", page_icon=icon, layout="wide")
    keep_inputs(*keep)


_LAST_PAGE = "_last_page"  # session state: the page of the previous run (keep_inputs)
_KEPT_INPUTS = "_kept_inputs"  # session state: {page: {widget key: value}} (keep_inputs)
_STICKY = "_sticky_inputs"  # session state: {page: {widget key: value}} (kept)
_PLAIN = (str, int, float, bool)


def _page_id() -> str:
    """The page being drawn (Streamlit's hash of its script; "" outside a running script)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return (getattr(ctx, "page_script_hash", "") or "") if ctx is not None else ""


def keep_inputs(*prefixes: str) -> None:
    """Keep what the user entered on a page (the widgets whose keys start with one of ``prefixes``) across page
    switches: on coming back, every entry is as it was left. Called at the top of every page, before its widgets
    (by :func:`page_setup`, with the page's ``keep=``).

    Streamlit forgets a widget's value when another page is shown. So at the top of every run that follows a run
    of the same page, the page's entries are noted: the values under its prefixes as the last run left them (the
    user's latest input included), plain ones only (text, numbers, choices, lists of them; not uploaded files,
    which cannot be given back, and not None). The note replaces the previous one, so what the page itself
    removed (a reopened run's id it consumed on arrival) or stopped drawing is forgotten, as Streamlit forgets it
    (a plain value under a kept prefix that the page removes in the one run after which the user leaves would
    come back: the pages' own removable state is consumed on arrival, which is never noted). When the
    page is shown again after another one, every noted entry that is missing is put back through the public
    Session State API before its widgets are drawn (Streamlit's own advice: "save your widget values into Session
    State"); the page's own state is never missing (Streamlit drops only widgets' values), so it is never
    overwritten. A widget that must also outlive the runs of its own page that do not draw it is drawn with
    :func:`kept`. Rules for the pages, checked by ``tests/test_page_memory.py``: a button's key never starts with a
    kept prefix (Streamlit refuses a button value set through Session State; the pages name theirs ``go_...``),
    and ``.streamlit/config.toml`` turns off Streamlit's log line about a widget given both a default and a
    Session State value (``global.disableWidgetStateDuplicationWarning``).

    Parameters
    ----------
    *prefixes : str
        The page's widget-key prefixes, e.g. ``"cal_"``.
    """
    ss, here = st.session_state, _page_id()
    last = ss.get(_LAST_PAGE)
    ss[_LAST_PAGE] = here
    kept = ss.setdefault(_KEPT_INPUTS, {})
    back = dict(ss.setdefault(_STICKY, {}).get(here, {}))  # kept() widgets: on every run
    if prefixes:
        if last == here:
            kept[here] = _values(tuple(prefixes))
        else:
            back = {**kept.get(here, {}), **back}
    for k, v in back.items():
        if k not in ss:
            ss[k] = v


def kept(widget, label: str, key: str, default, **kw):
    """``widget(label, key=key, **kw)`` starting at ``default``, whose value also outlives the runs in which the page
    does not draw it (a field shown for one choice only: the texts pasted before the user looked at the upload
    option). Its last value is noted as it is drawn, and :func:`keep_inputs` puts it back, on every run, whenever
    Streamlit has dropped it (the public Session State API, before the widget is drawn). ``options`` (a radio, a
    selectbox): a value no longer offered falls back to ``default``.

    Parameters
    ----------
    widget : callable
        A Streamlit widget function (``st.text_area``, ``columns[0].number_input``...), given no ``value``.
    label, key : str
        The widget's label and key.
    default
        Its value the first time.
    **kw
        The widget's other arguments.

    Returns
    -------
    object
        The widget's value.
    """
    ss = st.session_state
    if key not in ss:
        ss[key] = default
    if "options" in kw and ss[key] not in list(kw["options"]):
        ss[key] = default
    value = widget(label, key=key, **kw)
    _stick(key, value)
    return value


def put(key: str, value) -> None:
    """Set a :func:`kept` widget's value (before the widget is drawn in this run)."""
    st.session_state[key] = value
    _stick(key, value)


def _stick(key: str, value) -> None:
    """Note ``value`` as the :func:`kept` widget ``key``'s, on this page (a plain value only)."""
    if _keepable(value):
        st.session_state.setdefault(_STICKY, {}).setdefault(_page_id(), {})[key] = value


def _values(prefixes: tuple[str, ...]) -> dict:
    """The plain values in this session's state under ``prefixes`` (:func:`_keepable`)."""
    ss = st.session_state
    return {k: ss[k] for k in list(ss.keys()) if isinstance(k, str) and k.startswith(prefixes) and _keepable(ss[k])}


def _keepable(v) -> bool:
    """A value a widget can be given back: plain values and lists of them."""
    import datetime

    if isinstance(v, (list, tuple)):
        return all(isinstance(x, _PLAIN) for x in v)
    return isinstance(v, (*_PLAIN, datetime.date, datetime.time))


# Markdown that a user string (a file or zip-member name, a text id, a model name) must not turn on in a
# message: links and images ([ ] and <autolinks>), emphasis, code, headings, quotes, tables, strikethrough,
# LaTeX ($), HTML entities (&), Streamlit's colour directives (:red[...]); and GitHub's bare-URL links.
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>#|~$&])")
_MD_WORD_EDGE_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")  # snake_case stays as it is
_MD_AUTOLINK = re.compile(r"(?i):(?=//)|(?<=www)\.|@")
_MD_LINE_START = re.compile(r"^\s*(?:[-+=]|\d+(?=[.)]))")  # a list item ("- x", "1. x") or a heading underline


# ------------------------------------------------------------------ uploads
def upload_key(key: str) -> str:
    """The widget key of the upload box ``key`` now: a new one after "Clear these files" (a file uploader's files
    cannot be set or removed through session state, so the emptied box is a new widget)."""
    gen = st.session_state.get(f"_{key}_gen", 0)
    return key if not gen else f"{key}~{gen}"


def _clear_uploads(key: str) -> None:
    st.session_state[f"_{key}_gen"] = st.session_state.get(f"_{key}_gen", 0) + 1


def upload_summary(files) -> tuple[str, str | None]:
    """What an upload box holds, in words: every file's name (Streamlit's own list shows three at a time) with the
    count, the kinds and the size; and a warning when it mixes archives with single files (new uploads add to the
    files already there, so a ".zip run" can silently become a mix). ``files``: objects with ``name`` and ``size``."""
    from pathlib import Path

    names = [getattr(f, "name", str(f)) for f in files]
    kinds = sorted({Path(n).suffix.lower() or "no extension" for n in names})
    size = sum(int(getattr(f, "size", 0) or 0) for f in files)
    line = f"{counted(len(names), 'files')} ({', '.join(kinds)}, {fmt_bytes(size)}): {', '.join(names)}"
    mixed = None
    if ".zip" in kinds and len(kinds) > 1:
        n_zip = sum(n.lower().endswith(".zip") for n in names)
        mixed = (f"This box mixes {counted(n_zip, '.zip archives')} with {counted(len(names) - n_zip, 'other files')}: "
                 "all of them are read. New uploads add to the files already here; **Clear these files** empties "
                 "the box.")
    return line, mixed


def upload_files(container, label: str, *, key: str, **kw) -> list:
    """A multi-file upload box, and below it every file it holds (:func:`upload_summary`) and a button that empties
    it. Returns the uploaded files (a list, empty when none)."""
    files = container.file_uploader(label, key=upload_key(key), accept_multiple_files=True, **kw) or []
    if files:
        line, mixed = upload_summary(files)
        container.caption(md_text(line))
        if mixed:
            container.warning(mixed, icon=":material/folder_zip:")
        container.button("Clear these files", key=f"{key}_clear", on_click=_clear_uploads, args=(key,),
                         icon=":material/delete_sweep:")
    return list(files)


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
    whole = whole_run_left(job) if job.running else ""
    if whole:
        st.caption(whole)
    if job.status_message:
        st.caption(md_text(job.status_message))
    if not stages:
        st.progress(0.0, text="starting…")
    for s in stages:  # one timer per stage, from its start; the current one keeps counting
        el = time.time() - s.started if s.name == current else s.elapsed
        st.progress(s.fraction, text=f"{md_text(s.name)}: {md_text(s.message)} "  # a document's name: as text
                                     f"({fmt_seconds(el)}{stage_eta(s, el, s.name == current)})")


_PASS_MESSAGE = re.compile(r"\d[\d,]*/\d[\d,]* windows|texts scored")  # a model pass's reports (not "all cached")


def _pass_left(stage, now: float) -> tuple[float, float] | None:
    """The pass under way: ``(seconds left, its projected whole time)`` from its pace since its first report (the
    time before that, reading the cache and the first batch, is paid once per pass and is in the whole time, not in
    the pace), counted down between reports; None until it is 10 % done over 5 s of reports."""
    hist = [h for h in (getattr(stage, "history", None) or ()) if h[1] > 0]  # from the first texts scored
    f = float(stage.fraction)
    if len(hist) < 2 or f < 0.1:
        return None
    t1, f1 = hist[0]
    span = float(stage.updated) - t1
    if span < 5 or f <= f1:
        return None
    left = max(0.0, (1 - f) / ((f - f1) / span) - (now - float(stage.updated)))
    return left, (now - float(stage.started)) + left


def whole_run_left(job, now: float | None = None) -> str:
    """One time left for the whole run (issue 53 item 1), from ``job.expected`` (the estimate before Run:
    ``seconds`` in all, ``pass_seconds`` of the passes over the audited texts and ``passes``, how many of them have
    texts to score; ``after``, optional: what follows the passes, in words) and the job's own model-pass stages (those reporting windows; a pass found all cached is not
    one).

    Until the first pass is 10 % done (and has run 5 s) it is the estimate before Run less the time elapsed, said as
    such: its speed was measured when the dashboard started, and a machine that is busier now takes longer.
    From then on it is revised from this run's own speed: the pass under way by its pace since its first report
    (:func:`_pass_left`), the passes done by their time; their ratio to the estimate scales the passes not started
    and the work after them (population, neighbours, modified members); the line says how far that speed is from
    the estimate's.
    "" without an estimate.

    Parameters
    ----------
    job : dashboard.jobs.Job
        A running job.
    now : float, optional
        The time (``time.time()``; given by tests).

    Returns
    -------
    str
    """
    import time

    exp = getattr(job, "expected", None) or {}
    total = float(exp.get("seconds") or 0.0)
    n = int(exp.get("passes") or 0)
    planned = float(exp.get("pass_seconds") or 0.0)
    if total <= 0:
        return ""
    now = time.time() if now is None else now
    if exp.get("fraction_is_whole"):  # a job whose every report gives the whole job's share done (a target's build)
        return _whole_by_fraction(job, total, now)
    passes = sorted((s for s in job.snapshot() if _PASS_MESSAGE.search(str(s.message))), key=lambda s: s.started)
    passes = passes[:n]  # the passes over the audited texts come first
    done = sum(float(s.fraction) for s in passes) / n if n else 0.0
    finished = [s for s in passes if s.fraction >= 1]
    current = next((s for s in reversed(passes) if s.fraction < 1), None)
    live = _pass_left(current, now) if current is not None and n and planned > 0 else None
    each = planned / n if n else 0.0
    if live is not None:  # the pass under way, and the passes done, against the estimate's seconds for them
        ratio = (sum(s.elapsed for s in finished) + live[1]) / (each * (len(finished) + 1))
    elif finished and planned > 0:
        ratio = sum(s.elapsed for s in finished) / (each * len(finished))
    else:
        ratio = None
    if ratio is None:
        return _from_estimate(total, now - job.started, "Run", "this run's own speed",
                              "its first texts are scored")
    if done >= 1:
        after = max(s.updated for s in passes)
        left = (total - planned) * ratio - (now - after)
        if left < 1:
            rest = exp.get("after") or "metrics, the blind baseline"
            return f"Whole run: the model passes are done; finishing ({rest})."
        return f"Whole run: the model passes are done; about {fmt_seconds(left)} left for the rest."
    not_started = n - len(finished) - (current is not None)
    left = ((live[0] if live is not None else each * ratio * (1 - float(current.fraction)) if current else 0.0)
            + each * ratio * max(0, not_started) + (total - planned) * ratio)
    pace = _pace_words(ratio)
    if left < 1:  # the pass under way has reached its end by its own pace: its last texts are being finished
        return (f"Whole run: finishing the model passes ({pace}; {100 * done:.0f} % of "
                f"{counted(n, 'model passes')} done).")
    return (f"Whole run: about {fmt_seconds(left)} left, from this run's own speed so far ({pace}; "
            f"{100 * done:.0f} % of {counted(n, 'model passes')} done).")


def _from_estimate(total: float, elapsed: float, before: str, revised: str, once: str) -> str:
    """The whole run's time left before its own pace is known: the estimate (made before ``before``) less the time
    elapsed, said as such; "longer than the estimate" once that is spent."""
    left = total - elapsed
    if left < 1:
        return (f"Whole run: longer than the estimate before {before} ({fmt_seconds(total)}); the time left comes "
                f"from {revised} once {once}.")
    return (f"Whole run: about {fmt_seconds(left)} left: the estimate before {before}, at the speed measured when the "
            f"dashboard started (a busier machine takes longer); revised from {revised} once {once}.")


def _pace_words(ratio: float) -> str:
    """A run's own time against its estimate's, in words ("as the estimate said", "2.0× the estimate's time")."""
    if 0.8 <= ratio <= 1.25:
        return "as the estimate said"
    return f"{ratio:.1f}× the estimate's time" if ratio > 1 else f"{1 / ratio:.1f}× faster than the estimate"


def _whole_by_fraction(job, total: float, now: float) -> str:
    """The whole job's time left when its reports give the whole job's share done (``expected["fraction_is_whole"]``:
    a target's build, a masked-LM audit): the estimate before it started, less the time elapsed, until its latest
    stage is a tenth done over 5 s of reports; then that stage's own pace since its first report (:func:`_pass_left`),
    with how far the whole is from the estimate's."""
    stages = job.snapshot()
    live = _pass_left(max(stages, key=lambda s: s.updated), now) if stages else None
    if live is None:
        return _from_estimate(total, now - job.started, "it started", "its own pace", "a tenth is done")
    left = live[0]
    ratio = ((now - job.started) + left) / total
    pace = _pace_words(ratio)
    if left < 1:
        return f"Whole run: finishing ({pace})."
    done = float(max(stages, key=lambda s: s.updated).fraction)
    return f"Whole run: about {fmt_seconds(left)} left, from its own pace so far ({pace}; {100 * done:.0f} % done)."


def start_job(reg, kind: str, title: str, work, *, state_key: str | None = None, engine=None,
              expected: dict | None = None) -> None:
    """Start ``work(progress)`` as a background job of ``reg`` (its passes on ``engine``, else the local
    engine), remember its id under ``state_key`` in this session, and redraw the page at once: the Run
    button disabled, the live progress below it (:func:`follow_job`). ``expected``: the estimate before Run
    (``{"seconds", "pass_seconds", "passes"}``, ``dashboard.jobs.Job.expected``), the start of the whole run's time left (:func:`whole_run_left`)."""
    from contextlib import nullcontext

    from mia_core.engines import use_engine

    with use_engine(engine) if engine is not None else nullcontext():  # the job's thread runs its passes there
        job = reg.start(kind, title, work, expected=expected)
    st.session_state.setdefault(MY_JOBS, set()).add(job.id)
    if state_key:
        st.session_state[state_key] = job.id
    st.rerun()


MY_JOBS = "_my_jobs"  # session state: the ids of the jobs this tab started (start_job)
_FOLLOWED = "_followed_jobs"  # session state: {acked_key: (id, started)} of the job a page last showed running


def _clock(t: float) -> str:
    import time

    return time.strftime("%H:%M", time.localtime(t))


def job_origin(job) -> str:
    """"" for a job this tab started; "Started in another tab at 14:05." for one another tab (or an earlier,
    closed one) started: the registry is the process's, so every tab finds the latest job of its page."""
    if job is None or job.id in st.session_state.get(MY_JOBS, ()):
        return ""
    return f"Started in another tab at {_clock(job.started)}."


def _lost_job(reg, acked_key: str) -> None:
    """The job this page last showed running, when the registry no longer knows it (the server restarted, or
    its jobs were cleared): said in one line, once, instead of showing nothing."""
    seen = st.session_state.setdefault(_FOLLOWED, {})
    rec = seen.get(acked_key)
    if rec is None or reg.get(rec[0]) is not None:
        return
    seen.pop(acked_key, None)
    st.warning(f"The job started at {_clock(rec[1])} is no longer known to the server (it was restarted, or its "
               "jobs were cleared): its result is lost. Press the Run button again.", icon=":material/warning:")


def follow_job(reg, job, acked_key: str, *, extra=None, repeat_error: bool = False, take_foreign: bool = True):
    """While ``job`` runs, its live progress (:func:`watch_job`, ``extra`` drawing more); once it ended, the
    job, once, when it is done (:func:`finished_job`); else None. A job another tab started says so
    (:func:`job_origin`); a job this page showed running that the registry lost is one warning line.
    ``take_foreign=False``: a job another tab started and finished, that this tab never showed running, is
    left alone (a page that already shows a result the user chose, e.g. a run reopened from the Runs page)."""
    if job is None:
        _lost_job(reg, acked_key)
    origin = job_origin(job)
    if (job is not None and not job.running and origin and not take_foreign
            and st.session_state.get(_FOLLOWED, {}).get(acked_key, (None,))[0] != job.id):
        return None
    if job is not None and job.running:
        st.session_state.setdefault(_FOLLOWED, {})[acked_key] = (job.id, job.started)
        if origin:
            st.caption(origin)
        watch_job(reg, job.id, extra)
        return None
    if job is not None:
        st.session_state.setdefault(_FOLLOWED, {}).pop(acked_key, None)
    done = finished_job(job, acked_key, repeat_error=repeat_error)
    if done is not None and origin:
        st.caption(f"{origin[:-1]}; finished at {_clock(done.finished or done.started)}.")
    return done


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


def _recent_pace(stage, f: float, upto: float) -> float:
    """The stage's share done per second over the later half of its time to its last report, from the reports
    the job recorded (``Stage.history``); its whole pace when none came in that half before the last."""
    half = float(stage.started) + upto / 2
    t_now = float(stage.updated)
    earlier = [p for p in getattr(stage, "history", None) or () if half - 1e-9 <= p[0] < t_now and p[1] < f]
    if earlier:
        t0, f0 = earlier[0]
        return (f - f0) / (t_now - t0)
    return f / upto


def stage_eta(stage, elapsed: float, current: bool) -> str:
    """", about 40 s left" for the running stage, from its recent pace up to its last progress report (once it
    is 5 % done and has run 3 s, so the first batch's start-up does not make the guess wild); "" otherwise.

    The pace is the share done over the later half of the stage's time to its last report (the reports the
    job recorded there, ``Stage.history``; the whole stage's pace until there is one), and the estimate
    counts down between reports. A pass's first texts can cost several times the later ones (texts that share their first words
    run one family at a time, a first batch warms the model up), and its reports come in bursts (a batch of
    texts at once): the whole stage's pace then kept the time left at 8-10 min for 3 min of a pass that
    ended soon after (issue 40); before that, the time *now* over the share of the last report made it grow
    between bursts."""
    import time

    f = float(stage.fraction)
    if not current or not 0.05 <= f < 1.0 or elapsed < 3:
        return ""
    upto = max(1e-9, float(stage.updated) - float(stage.started))
    pace = _recent_pace(stage, f, upto)
    left = (1 - f) / max(pace, 1e-12) - max(0.0, time.time() - float(stage.updated))
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
