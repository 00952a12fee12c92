"""Every finished run, kept locally: open one, delete one, or compare two side by side
(e.g. the same data with the target in fp32 and in int4). Document-audit, masked-LM and dataset-inference runs are
listed below the calibration runs and open again in their own pages.

The reopening is ``dashboard.dataset_inference.reopened`` (Home shows the first paragraph above to users)."""
from __future__ import annotations

from collections import Counter

import pandas as pd
import streamlit as st

from dashboard.options import worded
from dashboard.results import DI_VERDICT_WORDS, SHIFT_WORDS, md_code, md_text, p_words, render_run, verdict_words
from dashboard.saved_runs import audit_runs, compare_section, damaged_reasons
from dashboard.sidebar import model_panel
from dashboard.ui import page_setup
from mia_core.reports import plots
from mia_core import runs
from mia_core.attacks.base import short_label
from mia_core.errors import MiaError
from mia_core.reports.report import compare_table, paired_scores

# A damaged run (mia_core.runs.list_runs: meta["damaged"]) is listed with its reason, can be deleted, and
# never stops the page: the others open, compare and download as usual. Runs are chosen by id (two runs
# with the same name and time are two options); names, notes and model names are shown as text.
_DAMAGED_SHAPES = (KeyError, TypeError, ValueError, AttributeError, IndexError)


def _error(e) -> None:
    """An error in one line, as text (a message may carry a run's name or a path)."""
    st.error(md_text(worded(e)))


page_setup("Runs", ":material/folder_open:", keep=("runs_a", "runs_b", "runs_open", "runs_di_open", "runs_scale"))
model_panel(load=False)
st.title("Runs")
try:
    st.caption(f"Saved in {md_code(runs.runs_dir())} (set MIA_RUNS_DIR to keep them elsewhere).")
    metas = runs.list_runs()
    foreign = runs.foreign_folders()
    if foreign:  # a user's own folders there: the store never lists, opens or deletes what it did not write
        st.caption(f"{len(foreign)} folder{'s' if len(foreign) > 1 else ''} or file{'s' if len(foreign) > 1 else ''} "
                   f"here {'were' if len(foreign) > 1 else 'was'} not written by mia and {'are' if len(foreign) > 1 else 'is'} "
                   f"left alone (e.g. {md_code(foreign[0])}).")
except MiaError as e:
    _error(e)
    st.stop()


def _di_label(m: dict) -> str:
    return " ".join(f"{'[damaged] ' if m.get('damaged') else ''}{m['name']} ({m['created']})".split())


def _model_words(t: dict) -> str:
    """A run's target in words: "smollm2 (fp32)", "smollm2 (fp32, int4-quantised)" (issue 53 item 6: no "fp32/none")."""
    if not t:
        return "model not recorded"
    q = t.get("quantize")
    return f"{t.get('name')} ({t.get('dtype')}{', ' + str(q) + '-quantised' if q and q != 'none' else ''})"


def _name_width(rows: list[dict]) -> int:
    """The Name column's width in pixels: the longest name in full (up to 1000). It is the last column, so the
    verdict, model, sets, AUCs and time stay in view on the left of a narrow window (issue 53 item 7)."""
    longest = max((len(str(r.get("Name", ""))) for r in rows), default=0)
    return int(min(1000, max(160, 5.6 * longest + 24)))


def _dataset_inference_runs() -> None:
    """Saved dataset-inference runs (``mia_core.api.inference``: ``list_inference_runs``, ``inference_report``): a
    table, each run's report. Every
    entry of the listing has every field, of the type shown here (a damaged ``meta.json`` is listed with its
    reason, never stops the page); a report is handed out only as a regular file inside its run's folder."""
    from mia_core.api.inference import inference_report, list_inference_runs

    try:
        di = list_inference_runs()
    except (MiaError, OSError) as e:
        _error(e)
        return
    if not di:
        return
    st.subheader("Dataset inference")
    damaged = [m for m in di if m.get("damaged")]
    if damaged:
        st.warning(f"{len(damaged)} dataset-inference run{'s are' if len(damaged) > 1 else ' is'} damaged: listed "
                   "with the reason; the other runs are not affected.", icon=":material/warning:")
    rows = []
    for m in di:
        try:
            p = "–" if m["p_value"] is None else p_words(m["p_value"], bool(m["p_value_is_bound"]))
        except (TypeError, ValueError, OverflowError):  # the listing checked it: never expected
            p = "?"
        rows.append({"Verdict": f"damaged: {m['damaged']}" if m.get("damaged") else verdict_words(m["verdict"],
                                                                                                  DI_VERDICT_WORDS),
                     "p-value": p, "Model": m["model"] or "–",
                     "Sets": (f"{'?' if m['n_suspect'] is None else m['n_suspect']} + "
                              f"{'?' if m['n_validation'] is None else m['n_validation']} {m['mode']}"),
                     "Blind AUC": "–" if m["blind_auc"] is None else f"{m['blind_auc']:.3f}", "Created": m["created"],
                     "Name": m["name"]})  # last: a long name no longer pushes the short columns out of view
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="runs_di_table", width="stretch",
                 column_config={"Name": st.column_config.TextColumn(width=_name_width(rows)),
                                "Verdict": st.column_config.TextColumn(
                                    help="used: the suspect set scores as trained on, beyond chance at the run's "
                                         "level; not shown: no significant evidence; refused: the blind baseline "
                                         "tells the two sets apart without the model, so no verdict is valid.")})
    base = {m["id"]: _di_label(m) for m in di}
    seen = Counter(base.values())  # two runs of the same name and time: two options, told apart by their ids
    labels = {i: (f"{b} · {i}" if seen[b] > 1 else b) for i, b in base.items()}
    rid = st.selectbox("Dataset-inference run", list(labels), key="runs_di_open", format_func=labels.get)
    if rid is None:
        return
    d1, d2, d3 = st.columns([2, 1, 3])
    if d1.button("Show in Dataset inference page", key="runs_di_show",
                 help="Opens this run's verdict, tables and charts on the Dataset inference page."):
        _reopen(rid, next(m for m in di if m["id"] == rid))
    confirm = d3.checkbox("Yes, delete this run for good", key="runs_di_confirm")
    if d2.button("Delete", disabled=not confirm, key="runs_di_delete"):  # issue 53 item 7
        from mia_core.api.inference import delete_inference_run

        try:
            delete_inference_run(rid)
        except MiaError as e:
            _error(e)
        else:
            st.session_state.pop("runs_di_confirm", None)
            st.rerun()
    try:
        report = inference_report(rid)
    except MiaError as e:
        st.caption(md_text(worded(e)))
    else:
        st.download_button("Download its report (HTML)", report, file_name=f"dataset_inference_{rid}.html",
                           mime="text/html", key="runs_di_report")
    if sum(not m.get("damaged") for m in di) > 1:
        with st.expander("Compare two dataset-inference runs"):
            compare_section("infer-dataset", di, labels)


def _reopen(rid: str, meta: dict) -> None:
    """The saved run (every file checked: a damaged one is one line here) into the Dataset inference page."""
    from dashboard import dataset_inference as DI

    try:
        stored = DI.reopened(rid, meta)
    except MiaError as e:
        _error(e)
        return
    st.session_state[DI.RESULT_KEY] = stored
    DI.restore_settings(stored["result"].summary)  # the page opens on the run's unit and settings
    st.switch_page("pages/7_Dataset_inference.py")


def _other_audits() -> None:
    """The saved runs of every other registered audit (document, masked-LM: mia_core.audits.saved), then dataset
    inference (its verdict, p-value and report)."""
    from mia_core.audits import AUDITS

    for kind, audit in AUDITS.items():  # every registered audit that keeps runs; dataset inference's own section
        if audit.store() is not None and kind != "infer-dataset":
            audit_runs(kind)
    _dataset_inference_runs()


if not metas:
    st.info("No saved calibration run yet: finished calibration runs appear here.")
    _other_audits()
    st.stop()

by_id = {m["id"]: m for m in metas}
ids = list(by_id)


def _labels() -> dict[str, str]:
    """A distinct label per run for the selectboxes (Streamlit tells options apart by their label: two
    runs with the same name and time would be one option, the last)."""
    base = {i: " ".join(f"{'[damaged] ' if m.get('damaged') else ''}{m['name']} ({m['created']})".split())
            for i, m in by_id.items()}
    seen = Counter(base.values())
    out = {i: (f"{b} · {i}" if seen[b] > 1 else b) for i, b in base.items()}
    if len(set(out.values())) < len(out):  # a name that spells another run's label with its id
        out = {i: f"{b} · {i}" for i, b in base.items()}
    return out


st.subheader("Calibration runs")
labels = _labels()
damaged = [m for m in metas if m.get("damaged")]
rows = []
for m in metas:
    t = m.get("target") or {}
    aucs = {k: v for k, v in m["auc"].items() if k != "blind" and v is not None}
    best = max(aucs.items(), key=lambda kv: kv[1]) if aucs else None
    blind = m["auc"].get("blind")
    row = {"Damaged": "damaged" if m.get("damaged") else ""} if damaged else {}  # the reasons: the warning above
    rows.append({**row,  # the time and the shift check first: a narrow window cuts columns from the right
                 "Created": m["created"],
                 "Shift check": verdict_words(m.get("verdict"), SHIFT_WORDS),
                 "Target": _model_words(t) if t else "–",
                 "Reference": (m.get("reference") or {}).get("name") or "–",
                 "Texts": (f"{m.get('n_members')} + {m.get('n_nonmembers')}"
                           if m.get("n_members") is not None or m.get("n_nonmembers") is not None else "–"),
                 "Best AUC": f"{best[1]:.3f} ({short_label(best[0])})" if best else "–",
                 "Blind AUC": f"{blind:.3f}" if blind is not None else "–",
                 "Attacks": len(m["attacks"]),
                 "Name": m["name"]})  # last: a long name no longer pushes the short columns out of view
if damaged:
    st.warning(f"{len(damaged)} run{'s are' if len(damaged) > 1 else ' is'} damaged: they can still be deleted "
               "below; the other runs are not affected.", icon=":material/warning:")
    damaged_reasons(damaged, labels)
st.dataframe(pd.DataFrame(rows), hide_index=True, key="runs_table", width="stretch",
             column_config={"Name": st.column_config.TextColumn(width=min(360, _name_width(rows))),
                            "Damaged": st.column_config.TextColumn(width="small"),
                            "Shift check": st.column_config.TextColumn(
                                width="medium", help="The blind baseline's verdict on the data, not on the attacks: "
                                "no shift seen = no sign that members and non-members differ in a way a model-free "
                                "classifier sees; caution or shift = attack AUCs may measure that difference, not "
                                "membership.")})

tab_cmp, tab_one = st.tabs(["Compare two runs", "Open / delete a run"])


def _compare(a: str, b: str) -> None:
    try:
        ra, rb = runs.load_run(a), runs.load_run(b)
    except MiaError as e:
        _error(e)
        return
    ta, tb = ra.meta.get("target") or {}, rb.meta.get("target") or {}
    st.markdown(f"**A**: {md_code(ra.name)} — {md_text(_model_words(ta))}  \n"
                f"**B**: {md_code(rb.name)} — {md_text(_model_words(tb))}")
    st.table(compare_table(ra.metrics, rb.metrics, scores_a=ra.scores, scores_b=rb.scores).set_index("Attack"))
    same = paired_scores(ra.scores, rb.scores, next(iter(ra.attack_names()), "loss"))
    st.caption("Δ = B − A with a 95 % bootstrap CI (1,000 resamples); TPR differences in percentage points (pp). "
               + ("Both runs evaluated the same texts: the CIs are paired (each resample draws the same texts "
                  "for A and B), so what the runs share cancels." if same and same[2] else
                  "The runs evaluated different texts: each is resampled on its own (wider CIs)."))
    scale = st.radio("ROC axes", ["Log-log", "Linear"], horizontal=True, key="runs_scale")
    st.plotly_chart(plots.roc_overlay([("A", ra.metrics), ("B", rb.metrics)], log=scale == "Log-log"),
                    key="runs_roc_overlay")


with tab_cmp:
    whole = [i for i in ids if not by_id[i].get("damaged")]  # a damaged run cannot be compared: not offered
    if len(whole) < 2:
        st.info("Save a second run to compare (e.g. the same data with the target in fp32 and in int4)." if len(ids) < 2
                else "Two runs that are not damaged are needed to compare.")
    else:
        # by default the two newest runs; one under the other, so a long name is not cut
        if st.session_state.get("runs_a") not in whole:
            st.session_state.pop("runs_a", None)
        if st.session_state.get("runs_b") not in whole:
            st.session_state.pop("runs_b", None)
        a = st.selectbox("Run A", whole, index=1, format_func=labels.get, key="runs_a")
        b = st.selectbox("Run B", whole, index=0, format_func=labels.get, key="runs_b")
        try:
            _compare(a, b)
        except _DAMAGED_SHAPES as e:  # a damaged run that got past the checks: one line, never a traceback
            _error(f"These runs cannot be compared (one is damaged): {type(e).__name__}: {e}")

with tab_one:
    # by default the newest run that opens (the page's first view is never an error box); every run is offered
    rid = st.selectbox("Run", ids, index=ids.index(whole[0]) if whole else 0, format_func=labels.get, key="runs_open")
    try:
        run, problem = runs.load_run(rid), None
    except MiaError as e:
        run, problem = None, worded(e)
    listed = by_id[rid].get("damaged")
    if run is None:  # the listing's reason (it names a link's target), and the reading's when it says more
        if listed:
            st.error(f"damaged: {md_text(listed)}", icon=":material/error:")
        if not listed or listed not in problem:
            _error(problem)
    c1, c2, c3 = st.columns([1, 1, 3])
    if c1.button("Show in Calibration page", key="runs_show"):
        st.session_state["cal_run_id"] = rid
        st.session_state["cal_run_origin"] = "reopened"  # its inputs are not the page's: the page says so
        st.session_state.pop("cal_run_sig", None)
        st.switch_page("pages/2_Calibration_run.py")
    confirm = c3.checkbox("Yes, delete this run for good", key="runs_confirm")
    if c2.button("Delete", disabled=not confirm, key="runs_delete"):
        try:
            runs.delete_run(rid)
        except MiaError as e:
            _error(e)
        else:
            if st.session_state.get("cal_run_id") == rid:
                st.session_state.pop("cal_run_id")
            st.session_state.pop("runs_confirm", None)
            st.rerun()
    try:
        if run is not None:
            render_run(run, key="runs_one")
    except MiaError as e:
        _error(e)
    except _DAMAGED_SHAPES as e:  # a damaged run that got past the checks: one line, never a traceback
        _error(f"This run cannot be shown in full (it is damaged): {type(e).__name__}: {e}")

_other_audits()
