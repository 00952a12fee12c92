"""Drawing a stored run's results: verdict, tables, ROC (linear / log-log), histograms, downloads."""
from __future__ import annotations

import json

import streamlit as st

from mia_core import plots
from mia_core.metrics import merge_warnings
from mia_core.report import (
    build_report, fmt_pct, fmt_seconds, metrics_table, modified_table, population_table, smia_summary,
)

from .ui import verdict_banner


@st.cache_data(show_spinner=False, max_entries=8)
def report_html(run_id: str, _run) -> str:
    """The self-contained HTML report of a run (cached per run id)."""
    return build_report(_run)


def render_run(run, *, key: str = "res") -> None:
    """Everything about one run, as on the Calibration page."""
    meta = run.meta
    t = meta.get("target") or {}
    r = meta.get("reference") or {}
    q = t.get("quantize")
    st.markdown(f"**{run.name}** · {meta.get('created', '')}  \ntarget **{t.get('name', '?')}** "
                f"({t.get('dtype', '?')}{', ' + q if q and q != 'none' else ''})"
                + (f" · reference **{r.get('name')}**" if r else "")
                + f" · {meta.get('n_members', '?')} members, {meta.get('n_nonmembers', '?')} non-members"
                + (f" ({meta.get('n_eval')} evaluated)" if meta.get("n_eval") != (meta.get("n_members", 0) + meta.get("n_nonmembers", 0)) else ""))
    verdict_banner(run.verdict, known=run.extra.get("known_truth"))

    st.markdown("##### AUC and true-positive rate at low false-positive rates (95 % bootstrap CIs)")
    st.table(metrics_table(run.metrics).set_index("Attack"))
    warns = merge_warnings(dict.fromkeys(w for m in run.metrics.values() if isinstance(m, dict)
                                         for w in (m.get("warnings") or [])))
    if warns:  # about the numbers just shown: in view, not folded away
        st.markdown("**Read these numbers with:**\n" + "\n".join(f"- {w}" for w in warns))
    if run.notes:
        with st.expander(f"Notes on this run ({len(run.notes)})"):
            for w in run.notes:
                st.markdown(f"- {w}")

    attacks = run.attack_names()
    scale = st.radio("ROC axes", ["Log-log", "Linear"], horizontal=True, key=f"{key}_roc_scale",
                     help="Log-log (the field's convention) shows the low-FPR region where confident claims are made.")
    st.plotly_chart(plots.roc_figure(run.metrics, log=scale == "Log-log"), key=f"{key}_roc")
    labels = {a: (run.metrics.get(a) or {}).get("label", a) for a in attacks}
    if len(run.scores):
        st.plotly_chart(plots.score_histograms(run.scores, attacks, labels=labels), key=f"{key}_hist")

    sm = run.extra.get("smia")
    if isinstance(sm, dict) and (sm.get("curves") or {}).get("epoch"):
        st.markdown("##### SMIA training")
        st.caption(smia_summary(sm))
        st.plotly_chart(plots.smia_learning_curve(sm["curves"]), key=f"{key}_smia_curve")

    pop = run.population
    if pop and pop.get("attacks"):
        st.markdown(f"##### Decisions at a threshold flagging {fmt_pct(pop.get('alpha'))} of a population of "
                    f"{pop.get('n_population')} known non-members")
        st.table(population_table(pop, labels).set_index("Attack"))

    mod = run.extra.get("modified")
    if isinstance(mod, dict) and isinstance(mod.get("verbatim"), dict):
        st.markdown("##### Modified members: each evaluated member changed by one word (SMIA §5.2)")
        st.table(modified_table(mod).set_index("Attack"))
        unmod = {v: n for v, n in (mod.get("n_unmodified") or {}).items() if n}
        if unmod:
            st.caption("Members that could not be modified (kept verbatim): "
                       + ", ".join(f"{v}: {n}" for v, n in unmod.items()))

    with st.expander("Settings and timings"):
        st.json({"config": run.config, "models": run.models,
                 "timings": {k: fmt_seconds(v) for k, v in run.timings.items()}, "data": meta.get("data")},
                expanded=2)  # the sections open, their details folded (a bare {...} told nothing)

    c = st.columns(3)
    c[0].download_button("Scores (CSV)", run.scores.to_csv(index=False), file_name=f"mia_{run.id}_scores.csv",
                         mime="text/csv", key=f"{key}_dl_csv", on_click="ignore")
    c[1].download_button("Metrics (JSON)", json.dumps(run.metrics, indent=2), file_name=f"mia_{run.id}_metrics.json",
                         mime="application/json", key=f"{key}_dl_json", on_click="ignore")
    c[2].download_button("HTML report", lambda: report_html(run.id, run), file_name=f"mia_{run.id}_report.html",
                         mime="text/html", key=f"{key}_dl_html", on_click="ignore",
                         help="One self-contained file (plots included) that opens offline.")
