"""Every finished run, kept locally: open one, delete one, or compare two side by side
(e.g. the same data with the target in fp32 and in int4)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.results import render_run
from dashboard.sidebar import model_panel
from dashboard.ui import page_setup, show_error
from mia_core import plots, runs
from mia_core.errors import MiaError
from mia_core.report import compare_table, paired_scores

page_setup("Runs", ":material/folder_open:")
model_panel(load=False)
st.title("Runs")
st.caption(f"Saved in {runs.runs_dir()} (set MIA_RUNS_DIR to keep them elsewhere).")

metas = runs.list_runs()
if not metas:
    st.info("No saved run yet: finished calibration runs appear here.")
    st.stop()


def _label(m: dict) -> str:
    return f"{m.get('name', m['id'])} ({m.get('created', '')})"


by_id = {m["id"]: m for m in metas}
rows = []
for m in metas:
    t = m.get("target") or {}
    aucs = {k: v for k, v in (m.get("auc") or {}).items() if k != "blind" and v is not None}
    best = max(aucs.items(), key=lambda kv: kv[1]) if aucs else None
    q = t.get("quantize")
    rows.append({  # the shift check first: a narrow window cuts columns from the right
        "Shift check": m.get("verdict") or "–",
        "Name": m.get("name"),
        "Target": f"{t.get('name')} ({t.get('dtype')}{'/' + q if q and q != 'none' else ''})",
        "Reference": (m.get("reference") or {}).get("name") or "–",
        "Texts": f"{m.get('n_members')} + {m.get('n_nonmembers')}",
        "Best AUC": f"{best[1]:.3f} ({best[0]})" if best else "–",
        "Blind AUC": f"{m['auc']['blind']:.3f}" if (m.get("auc") or {}).get("blind") is not None else "–",
        "Attacks": len(m.get("attacks") or []),
        "Created": m.get("created"),
    })
st.dataframe(pd.DataFrame(rows), hide_index=True, key="runs_table", width="stretch",
             column_config={"Name": st.column_config.TextColumn(width="medium"),
                            "Shift check": st.column_config.TextColumn(
                                width="small", help="The blind baseline's verdict on the data, not on the attacks: "
                                "ok = no sign that members and non-members differ in a way a model-free classifier "
                                "sees; caution or shift = attack AUCs may measure that difference, not membership.")})

tab_cmp, tab_one = st.tabs(["Compare two runs", "Open / delete a run"])
ids = [m["id"] for m in metas]

with tab_cmp:
    if len(ids) < 2:
        st.info("Save a second run to compare (e.g. the same data with the target in fp32 and in int4).")
    else:
        c1, c2 = st.columns(2)
        a = c1.selectbox("Run A", ids, index=1, format_func=lambda i: _label(by_id[i]), key="runs_a")
        b = c2.selectbox("Run B", ids, index=0, format_func=lambda i: _label(by_id[i]), key="runs_b")
        try:
            ra, rb = runs.load_run(a), runs.load_run(b)
        except MiaError as e:
            show_error(e)
            st.stop()
        ta, tb = ra.meta.get("target") or {}, rb.meta.get("target") or {}
        st.markdown(f"**A**: {ra.name} — {ta.get('name')} {ta.get('dtype')}/{ta.get('quantize')}  \n"
                    f"**B**: {rb.name} — {tb.get('name')} {tb.get('dtype')}/{tb.get('quantize')}")
        st.table(compare_table(ra.metrics, rb.metrics, scores_a=ra.scores, scores_b=rb.scores).set_index("Attack"))
        same = paired_scores(ra.scores, rb.scores, next(iter(ra.attack_names()), "loss"))
        st.caption("Δ = B − A with a 95 % bootstrap CI (1,000 resamples); TPR differences in percentage points (pp). "
                   + ("Both runs evaluated the same texts: the CIs are paired (each resample draws the same texts "
                      "for A and B), so what the runs share cancels." if same and same[2] else
                      "The runs evaluated different texts: each is resampled on its own (wider CIs)."))
        scale = st.radio("ROC axes", ["Log-log", "Linear"], horizontal=True, key="runs_scale")
        st.plotly_chart(plots.roc_overlay([("A", ra.metrics), ("B", rb.metrics)], log=scale == "Log-log"),
                        key="runs_roc_overlay")

with tab_one:
    rid = st.selectbox("Run", ids, format_func=lambda i: _label(by_id[i]), key="runs_open")
    c1, c2, c3 = st.columns([1, 1, 3])
    if c1.button("Show in Calibration page", key="runs_show"):
        st.session_state["cal_run_id"] = rid
        st.switch_page("pages/2_Calibration_run.py")
    confirm = c3.checkbox("Yes, delete this run for good", key="runs_confirm")
    if c2.button("Delete", disabled=not confirm, key="runs_delete"):
        try:
            runs.delete_run(rid)
            if st.session_state.get("cal_run_id") == rid:
                st.session_state.pop("cal_run_id")
            st.session_state.pop("runs_confirm", None)
            st.rerun()
        except MiaError as e:
            show_error(e)
    try:
        render_run(runs.load_run(rid), key="runs_one")
    except MiaError as e:
        show_error(e)
