"""The page of a registered audit that has no page module of its own, made from its declaration
(:class:`mia_core.audits.Audit`), as ``mia NAME`` is (:mod:`mia_core.cli.audit_command`).

A page file is then two lines (``pages/8_Verbatim_extraction.py``): ``show("extraction")``. The page has

* the sidebar's model panel (the target, its precision and device), when the audit takes a model;
* its sets: the audit's bundled demo (``Audit.demo``), uploaded files (read as ``mia NAME`` reads them) or pasted
  texts, one box per set;
* a widget per declared option, its limits from the option's domain (``Options.widget_limits``: no limit written
  here), its help the option's;
* the "Model tested" line, the Run button and its background job (:func:`dashboard.audit_jobs.audit_job`: every
  check before anything runs; bad input is one red line and keeps the shown result);
* the result: the audit's figures (``Audit.figures``, the ones two saved runs are compared on), its report
  (``summary_text``), the per-text table and its CSV; saved in the one run store (the Runs page lists, reopens,
  compares and deletes it), labelled when the inputs changed since (:mod:`dashboard.stale`).
"""
from __future__ import annotations

import time

import streamlit as st

from mia_core.audits import audit_named, execute, prepare
from mia_core.errors import DataError, SettingsError

from .audit_jobs import AuditJob, audit_job, keep_finished, save_finished
from .options import words
from .saved_runs import REOPENED, reopened_line, saved_line, take_reopened
from .sidebar import model_panel
from .stale import result_box, signature, stale_parts
from .ui import fmt_seconds, kept, md_text, page_setup, upload_files

UPLOAD_TYPES = ["txt", "text", "md", "csv", "tsv", "jsonl", "json", "parquet", "arrow", "feather", "zip"]
SIG_WORDS = {"data": "the texts", "model": "the model", "settings": "the settings"}
SOURCES = {"demo": "Bundled demo", "upload": "Upload files", "paste": "Paste texts"}


def show(name: str, icon: str = ":material/fact_check:") -> None:
    """Draw the page of audit ``name`` (see the module docstring)."""
    audit = audit_named(name)
    prefix = name.replace("-", "_")
    page_setup(audit.title, icon, keep=(f"{prefix}_",))
    panel = model_panel(load=False, need_reference=False) if audit.models else None
    st.title(audit.title)
    st.markdown(md_text(f"{audit.about} ({audit.citation}.)"))
    result_key, started_key = f"{prefix}_result", f"{prefix}_started_sig"
    if (handed := take_reopened(name, prefix)) is not None:  # a saved run, from the Runs page
        st.session_state[result_key] = {"result": handed, "notes": [], "seconds": None, "signature": None}
    demo = audit.demo()
    sets = sets_section(audit, prefix, demo)
    options = options_section(audit, prefix)
    on_demo = sets["source"] == "demo"
    fixed = {k: v for k, v in (demo or {}).get("inputs", {}).items() if k in audit.options().declared()}
    if on_demo and fixed:
        st.caption(md_text("The demo runs with " + ", ".join(f"{words(k).lower()} {v}" for k, v in fixed.items())
                           + " (its own); the settings above apply to your own texts."))
    spec = (demo or {}).get("inputs", {}).get("model") if on_demo else getattr(panel, "target_spec", None)
    if audit.models:
        st.markdown(md_text("Model tested: " + ("the demo's target (the sidebar's model is not used)" if on_demo
                                                else spec or "none chosen: choose one in the sidebar")))
    now_sig = signature(data=sets, model=(spec, *_loading(panel)), settings=options)

    def _build():
        st.session_state[started_key] = now_sig  # what this run answers (the result is labelled when they change)
        return build_job(audit, sets, options, panel, demo)

    button = f"Run the {audit.title.lower()} audit"
    done = audit_job(prefix=prefix, kind=name, button=button, clear=(result_key, REOPENED.format(prefix=prefix)),
                     take_foreign=not st.session_state.get(REOPENED.format(prefix=prefix)), build=_build)
    if done is not None:
        keep_finished(done, result_key, started_key)
    stored = st.session_state.get(result_key)
    if stored is not None:
        reopened_line(prefix)
        saved_line(stored.get("record") or {})
        described = audit.describe(stored["result"]) or {}
        with result_box(stale_parts(stored.get("signature"), now_sig, SIG_WORDS), button=button,
                        title=described.get("data") or audit.title):
            show_result(audit, prefix, stored)


def _loading(panel) -> tuple:
    """How the sidebar loads the target (part of the model's signature)."""
    if panel is None:
        return ()
    return (panel.dtype, panel.quantize, panel.device, panel.trust_remote_code)


def sets_section(audit, prefix: str, demo: dict | None) -> dict:
    """Where the sets come from: ``{"source", "files": {set: uploads}, "texts": {set: pasted}}`` and the reading's
    ``mode`` and ``text_column``."""
    st.subheader("1 · Texts")
    options = (["demo"] if demo else []) + ["upload", "paste"]
    source = kept(st.radio, "Texts from", f"{prefix}_source", options[0], options=options, horizontal=True,
                  format_func=SOURCES.get, label_visibility="collapsed")
    out = {"source": source, "files": {}, "texts": {}, "mode": "auto", "text_column": None}
    cols = st.columns(len(audit.sets))
    if source == "demo":
        st.caption(md_text(f"Demo with ground truth: {demo['words']}."))
    elif source == "upload":
        for col, s in zip(cols, audit.sets):
            out["files"][s] = upload_files(col, words(s), type=UPLOAD_TYPES, key=f"{prefix}_{s}_up")
        m1, m2 = st.columns(2)
        out["mode"] = kept(m1.selectbox, ".txt files hold", f"{prefix}_mode", "auto", options=["auto", "lines", "blank"],
                           format_func={"auto": "auto-detect", "lines": "one text per line",
                                        "blank": "blank-line paragraphs"}.get)
        out["text_column"] = kept(m2.text_input, "Text column of tables (empty: found by itself)",
                                  f"{prefix}_text_column", "").strip() or None
    else:
        for col, s in zip(cols, audit.sets):
            out["texts"][s] = kept(col.text_area, f"{words(s)}: one text per line", f"{prefix}_{s}_text", "",
                                   height=160)
    return out


def options_section(audit, prefix: str) -> dict:
    """A widget per declared option (its limits and help from the option's field); ``{option: value}``."""
    st.subheader("2 · Settings")
    return option_widgets(audit.options(), f"{prefix}_opt")


def option_widgets(options, prefix: str, names=None) -> dict:
    """A widget per declared option of the options class ``options`` (or of ``names`` among them), keyed
    ``{prefix}_{option}``, its limits and help from the option's field: a checkbox, a choice, a number, else a typed
    word (an optional number, a comma list of a tuple's values), read by the option's domain when Run is pressed
    (build_job); ``{option: value}``. Every page's settings are these widgets (the audit pages, the traps steps)."""
    values = {}
    names = list(names or options.declared())
    cols = st.columns(min(4, len(names)) or 1)
    for i, n in enumerate(names):
        d, default, col = options.domain(n), options.default(n), cols[i % len(cols)]
        key, label, help_ = f"{prefix}_{n}", words(n), options.help(n)
        if d.kind == "bool":
            values[n] = kept(col.checkbox, label, key, bool(default), help=help_)
        elif d.kind == "choice":
            values[n] = kept(col.selectbox, label, key, default, options=list(d.choices), help=help_)
        elif d.kind in ("int", "float") and default is not None:
            step = 1 if d.kind == "int" else None
            values[n] = kept(col.number_input, label, key, default, step=step, help=help_, **options.widget_limits(n))
        else:  # an optional number, a word or a list: typed, checked by the option's domain when Run is pressed
            shown = ("" if default is None else
                     ",".join(f"{x:g}" if isinstance(x, float) else str(x) for x in default)
                     if isinstance(default, tuple) else str(default))
            typed = kept(col.text_input, label, key, shown, help=f"{help_} (empty: none)")
            values[n] = typed.strip() or None
    return values


def _inputs(audit, sets: dict, demo: dict | None) -> dict:
    """prepare's keywords for the sets (and the demo's model and settings), or one line saying what is missing."""
    from mia_core.api.data import read_text_files

    if sets["source"] == "demo":
        return dict(demo["inputs"])
    if sets["source"] == "paste":
        out = {s: [t.strip() for t in sets["texts"].get(s, "").splitlines() if t.strip()] for s in audit.sets}
        missing = [words(s).lower() for s, v in out.items() if not v]
        if missing:
            raise DataError(f"no {' or '.join(missing)} given: paste one text per line.")
        return out
    missing = [words(s).lower() for s in audit.sets if not sets["files"].get(s)]
    if missing:
        raise DataError(f"upload the {' and '.join(missing)} files.")
    notes: list = []
    out = {s: read_text_files(sets["files"][s], mode=sets["mode"], text_column=sets["text_column"], notes=notes)
           for s in audit.sets}
    for n in notes:
        st.caption(md_text(n))
    return out


def build_job(audit, sets: dict, options: dict, panel, demo: dict | None) -> AuditJob:
    """The checked request (every check before anything runs), the target loaded here, and the job that runs it."""
    from .loaders import load_with_progress

    inputs = _inputs(audit, sets, demo)
    if audit.models:
        spec = inputs.pop("model", None) or panel.target_spec
        if not spec:
            raise SettingsError(f"the target model is not chosen: {panel.target_error or 'choose one in the sidebar'}.")
        inputs["model"] = load_with_progress(spec, panel.dtype, panel.quantize, panel.device,
                                             panel.trust_remote_code, label="Loading the target")
    typed = {n: v for n, v in options.items() if isinstance(v, str)}  # the text boxes' values, read as a command line's
    settings = {**options, **audit.options().check_some(strict=False, **typed),
                **{k: v for k, v in inputs.items() if k in options}}  # the demo's own settings win
    request = prepare(audit.name, **{**inputs, **settings})

    def work(progress):
        t0 = time.time()
        res = execute(request, progress=lambda m, f: progress(f"{audit.title.lower()}: {m}", f))
        return {"result": res, "notes": [], "seconds": time.time() - t0, "record": save_finished(audit.name, res)}

    return AuditJob(title=audit.title, work=work)


def show_result(audit, prefix: str, stored: dict) -> None:
    """The figures two runs are compared on, the report, the per-text table and its CSV."""
    import pandas as pd

    from mia_core.runs.results import csv_text

    res = stored["result"]
    st.subheader("3 · Result")
    took = "" if stored.get("seconds") is None else f" · {fmt_seconds(stored['seconds'])}"  # None: reopened
    described = audit.describe(res) or {}
    st.caption(md_text(f"{described.get('model', '')} · {described.get('data', '')}{took}"))
    items = list(audit.figures(res).items())
    for start in range(0, len(items), 4):  # rows of four
        for col, (label, v) in zip(st.columns(4), items[start:start + 4]):
            col.metric(label, "n/a" if v is None or v != v else f"{v:.3f}")
    with st.expander("The report", expanded=True):
        st.code(res.summary_text(), language=None)
    scores = res.scores if isinstance(res.scores, pd.DataFrame) else pd.DataFrame(res.scores)
    with st.expander("Per-text figures"):
        st.dataframe(scores, hide_index=True, key=f"{prefix}_scores_table")
    st.download_button("Download the per-text figures (CSV)", csv_text(scores).encode("utf-8"),
                       file_name=f"{prefix}_scores.csv", mime="text/csv", key=f"go_{prefix}_download")
