"""The run store on the pages (``mia_core.audits.saved``): an audit page's job saves what it found, the page says
where, and the Runs page lists, reopens, compares and deletes the saved runs of the document and masked-LM audits.

* ``dashboard.audit_jobs.save_finished``: called by the job itself (once, whichever tab watches it, or none);
* :func:`saved_line`: the line under a finished run (its name in Runs, or why it was not saved);
* :func:`take_reopened` and :func:`reopened_line`: on an audit's page, the run the Runs page handed over, and the
  line that says it is a reopened run whose inputs are not restored;
* :func:`audit_runs`: one audit's section of the Runs page (any registered audit with a store).
"""
from __future__ import annotations

from collections import Counter

import pandas as pd
import streamlit as st

from mia_core.audits import AUDITS
from mia_core.audits.saved import compare_runs, delete_run, list_runs, open_run
from mia_core.errors import MiaError

from .options import worded
from .ui import fmt_num, md_text

REOPENED = "{prefix}_reopened"  # session-state key: the label of the saved run a page shows, when reopened


def saved_line(record: dict) -> None:
    """Where the finished run was saved (the Runs page lists it under that name), or why it was not."""
    if record.get("saved"):
        st.caption(md_text(f"Saved in Runs as “{record['name']}”."))
    elif record.get("save_error"):
        st.caption(md_text(f"Not saved to the runs folder: {record['save_error']}"))


def reopened_line(prefix: str) -> None:
    """On a page showing a run reopened from Runs: which run, and that the inputs above are the page's own."""
    label = st.session_state.get(REOPENED.format(prefix=prefix))
    if label:
        st.info(md_text(f"Reopened from Runs: {label}. Its inputs are not restored: the sets and settings above "
                        "are this page's own, and Run audits those, not this run's."), icon=":material/history:")


def _label(m: dict) -> str:
    return " ".join(f"{'[damaged] ' if m.get('damaged') else ''}{m['name']} ({m['created']})".split())


def _labels(metas: list[dict]) -> dict[str, str]:
    """A distinct label per run (two runs of the same name and time: two options, told apart by their ids)."""
    base = {m["id"]: _label(m) for m in metas}
    seen = Counter(base.values())
    return {i: (f"{b} · {i}" if seen[b] > 1 else b) for i, b in base.items()}


def _reopen(kind: str, run_id: str, label: str) -> None:
    """The saved run (every file checked) handed to its audit's page (:func:`take_reopened` there)."""
    try:
        res = open_run(kind, run_id)
    except MiaError as e:
        st.error(md_text(worded(e)))
        return
    st.session_state[f"_reopen_{kind}"] = {"result": res, "label": f"saved run “{label}”"}
    st.switch_page(AUDITS[kind].page)


def take_reopened(kind: str, prefix: str) -> object | None:
    """On an audit's page: the result the Runs page handed over (once; None when there is none), its label kept for
    :func:`reopened_line` (``prefix``: the page's session-state prefix)."""
    handed = st.session_state.pop(f"_reopen_{kind}", None)
    if handed is None:
        return None
    st.session_state[REOPENED.format(prefix=prefix)] = handed["label"]
    return handed["result"]


def damaged_reasons(damaged: list[dict], labels: dict[str, str]) -> None:
    """Why each damaged run is damaged, one line each, under the table (which keeps a short mark, so that it fits
    the page); open while there are few."""
    with st.expander(f"Why {'each is' if len(damaged) > 1 else 'it is'} damaged", expanded=len(damaged) <= 3):
        st.markdown("\n".join(f"- {md_text(labels.get(m['id'], m['id']))}: damaged: {md_text(m['damaged'])}"
                               for m in damaged))


def _shown(v) -> str:
    if v is None or isinstance(v, bool):
        return "–" if v is None else ("yes" if v else "no")
    if isinstance(v, (int, float)):
        return fmt_num(v)
    return str(v)


def compare_section(kind: str, metas: list[dict], labels: dict[str, str]) -> None:
    """Two saved runs of ``kind`` side by side (by default the two newest): each figure of A and B and their
    difference; damaged runs are not offered."""
    ids = [m["id"] for m in metas if not m.get("damaged")]  # a damaged run does not open: listed above, not here
    if len(ids) < 2:
        st.info("Two saved runs that are not damaged are needed to compare.")
        return
    a = st.selectbox("Run A", ids, index=1, format_func=labels.get, key=f"runs_{kind}_a")
    b = st.selectbox("Run B", ids, index=0, format_func=labels.get, key=f"runs_{kind}_b")
    try:
        ra, rb = open_run(kind, a), open_run(kind, b)
    except MiaError as e:  # a run damaged inside (its listing could not tell): said where it is listed too
        st.caption(md_text(f"These two runs cannot be compared: {worded(e)}"))
        return
    rows = compare_runs(kind, ra, rb)
    st.dataframe(pd.DataFrame({"Figure": [r["figure"] for r in rows], "A": [_shown(r["A"]) for r in rows],
                               "B": [_shown(r["B"]) for r in rows],
                               "B − A": [_shown(r["difference"]) for r in rows]}),
                 hide_index=True, width="stretch", key=f"runs_{kind}_compare")
    st.caption("B − A without a confidence interval: these runs keep no resamples to pair. A difference within "
               "either run's own interval (shown on its page) is not a difference.")


def audit_runs(kind: str) -> None:
    """One audit's saved runs on the Runs page: a table, then reopen, delete (with a confirmation) and compare."""
    audit = AUDITS[kind]
    try:
        metas = list_runs(kind)
    except MiaError as e:
        st.error(md_text(worded(e)))
        return
    if not metas:
        return
    st.subheader(audit.title)
    damaged = [m for m in metas if m.get("damaged")]
    labels = _labels(metas)
    if damaged:
        st.warning(f"{len(damaged)} {audit.title.lower()} run{'s are' if len(damaged) > 1 else ' is'} damaged: "
                   "they can still be deleted below; the other runs are not affected.", icon=":material/warning:")
        damaged_reasons(damaged, labels)
    rows = [{**({"Damaged": "damaged" if m.get("damaged") else ""} if damaged else {}), "Created": m["created"],
             "AUC": "–" if m.get("headline") is None else f"{m['headline']:.3f}",
             "Of": m.get("headline_label") or "–", "Model": m.get("model") or "–", "Data": m.get("data") or "–",
             "Name": m["name"]} for m in metas]  # the name last: it may be long
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key=f"runs_{kind}_table",
                 column_config={"Name": st.column_config.TextColumn(width="medium")})
    one, cmp = st.tabs(["Open / delete a run", "Compare two runs"])
    with one:
        rid = st.selectbox("Run", list(labels), format_func=labels.get, key=f"runs_{kind}_open")
        if rid is not None:
            c1, c2, c3 = st.columns([2, 1, 3])
            page = audit.page.rsplit("/", 1)[-1].removesuffix(".py").split("_", 1)[-1].replace("_", " ")
            if c1.button(f"Show in {page} page", key=f"runs_{kind}_show"):
                _reopen(kind, rid, labels[rid])
            confirm = c3.checkbox("Yes, delete this run for good", key=f"runs_{kind}_confirm")
            if c2.button("Delete", disabled=not confirm, key=f"runs_{kind}_delete"):
                try:
                    delete_run(kind, rid)
                except MiaError as e:
                    st.error(md_text(worded(e)))
                else:
                    st.session_state.pop(f"runs_{kind}_confirm", None)
                    st.rerun()
    with cmp:
        if len(metas) < 2:
            st.info("Save a second run of this audit to compare two.")
        else:
            compare_section(kind, metas, labels)
