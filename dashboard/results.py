"""Drawing a stored run's results: verdict, tables, ROC (linear / log-log), histograms, downloads."""
from __future__ import annotations

import html
import json
import re

import streamlit as st

from mia_core.reports import plots
from mia_core.metrics import merge_warnings
from mia_core.runs.results import csv_text
from mia_core.reports.report import (
    build_report, fmt_pct, fmt_seconds, metrics_table, modified_table, population_table, smia_summary,
)

from .ui import md_text, verdict_banner


# ------------------------------------------------------------------ user strings inside Markdown
# Streamlit renders st.markdown / st.caption / st.error ... bodies as Markdown: an image there is fetched
# when the page opens, a link is followed. A string from a user (a run name, a model path, a note) goes
# in as text: escaped with md_text (dashboard.ui), or as inline code with md_code.


def md_code(s) -> str:
    """``s`` as inline code inside Markdown (shown verbatim, nothing in it is Markdown), on one line."""
    from mia_core.errors import safe_text

    s = " ".join(safe_text(s).split()) or " "
    fence = "`" * (max((len(r) for r in re.findall(r"`+", s)), default=0) + 1)
    return f"{fence} {s} {fence}"


# ------------------------------------------------------------------ the Runs page's words for stored codes
# the dataset-inference verdicts (mia_core.dataset_inference.audit.VERDICTS) and the blind baseline's levels
DI_VERDICT_WORDS = {"used": "used", "not_shown": "not shown",
                    "refused": "refused (the sets differ without the model)"}
SHIFT_WORDS = {"ok": "no shift seen", "caution": "caution: slight shift", "shift": "shift: AUCs invalid"}


def verdict_words(code, words: dict) -> str:
    """A stored verdict code in words (``"not_shown"`` -> ``"not shown"``); an unknown code with its underscores
    turned into spaces, a missing one as "–"."""
    if code is None or code == "":
        return "–"
    return words.get(code, str(code).replace("_", " "))


def p_words(p, is_bound: bool = False) -> str:
    """A p-value for a table cell, as people write it: ``0.0123``, ``3.2e-5``, and ``≤ 1e-4`` when no permutation
    reached the statistic (the smallest p-value the permutations can give; the true one may be smaller)."""
    from mia_core.formatting import p_number

    text = p_number(p, is_bound).replace("<=", "≤")
    return re.sub(r"(\d(?:\.\d*[1-9])?)\.?0*e([-+])0*(\d)", lambda m: f"{m[1]}e{m[2].replace('+', '')}{m[3]}", text)


@st.cache_data(show_spinner=False, max_entries=8)
def report_html(run_id: str, _run) -> str:
    """The self-contained HTML report of a run (cached per run id)."""
    return build_report(_run)


def _why(e: Exception) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())[:300]


def report_or_why(run) -> str:
    """The HTML report, or (when it cannot be written) a small HTML page saying why in one line: the
    download never fails silently."""
    try:
        return report_html(run.id, run)
    except Exception as e:  # noqa: BLE001 - a damaged run: the file says why instead of an empty download
        return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Run {html.escape(run.id)}</title>"
                f"</head><body><p>The report of run {html.escape(run.id)} could not be written: "
                f"{html.escape(_why(e))}</p></body></html>")


def _count(v) -> str:
    return str(int(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else "?"


def render_run(run, *, key: str = "res") -> None:
    """Everything about one run, as on the Calibration page. Run names, model names, notes and warnings
    are shown as text, never as Markdown."""
    meta = run.meta
    t = meta.get("target") if isinstance(meta.get("target"), dict) else {}
    r = meta.get("reference") if isinstance(meta.get("reference"), dict) else {}
    q = t.get("quantize")
    nm, nn, ne = meta.get("n_members"), meta.get("n_nonmembers"), meta.get("n_eval")
    evaluated = (f" ({_count(ne)} evaluated)" if _count(ne) != "?" and _count(nm) != "?" and _count(nn) != "?"
                 and int(ne) != int(nm) + int(nn) else "")
    st.markdown(f"**{md_code(run.name)}** · {md_text(meta.get('created', ''))}  \ntarget **{md_text(t.get('name') or '?')}** "
                f"({md_text(t.get('dtype') or '?')}{', ' + md_text(q) if q and q != 'none' else ''})"
                + (f" · reference **{md_text(r.get('name'))}**" if r else "")
                + f" · {_count(nm)} members, {_count(nn)} non-members" + evaluated)
    if meta.get("damaged"):
        st.warning(f"This run's meta.json is damaged ({md_text(meta['damaged'])}): what it could not say is "
                   "left out.", icon=":material/warning:")
    verdict_banner(run.verdict, known=run.extra.get("known_truth"))

    st.markdown("##### AUC and true-positive rate at low false-positive rates (95 % bootstrap CIs)")
    st.table(metrics_table(run.metrics).set_index("Attack"))
    warns = merge_warnings(dict.fromkeys(w for m in run.metrics.values() if isinstance(m, dict)
                                         for w in (m.get("warnings") or [])))
    if warns:  # about the numbers just shown: in view, not folded away
        st.markdown("**Read these numbers with:**\n" + "\n".join(f"- {md_text(w)}" for w in warns))
    if run.report:
        with st.expander(f"Notes on this run ({len(run.report)})"):
            for w in run.report:
                st.markdown(f"- {md_text(w)}")

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
        st.caption(md_text(smia_summary(sm)))
        st.plotly_chart(plots.smia_learning_curve(sm["curves"]), key=f"{key}_smia_curve")

    pop = run.population
    if pop and pop.get("attacks"):
        st.markdown(f"##### Decisions at a threshold flagging {fmt_pct(pop.get('alpha'))} of a population of "
                    f"{_count(pop.get('n_population'))} known non-members")
        st.table(population_table(pop, labels).set_index("Attack"))

    mod = run.extra.get("modified")
    if isinstance(mod, dict) and isinstance(mod.get("verbatim"), dict):
        st.markdown("##### Modified members: each evaluated member changed by one word (SMIA §5.2)")
        st.table(modified_table(mod).set_index("Attack"))
        unmod = {v: n for v, n in (mod.get("n_unmodified") or {}).items() if n}
        if unmod:
            st.caption("Members that could not be modified (kept verbatim): "
                       + md_text(", ".join(f"{v}: {n}" for v, n in unmod.items())))

    with st.expander("Settings and timings"):
        st.json({"config": run.config, "models": run.models,
                 "timings": {k: fmt_seconds(v) for k, v in run.timings.items()}, "data": meta.get("data")},
                expanded=2)  # the sections open, their details folded (a bare {...} told nothing)

    c = st.columns(3)
    c[0].download_button("Scores (CSV)", csv_text(run.scores), file_name=f"mia_{run.id}_scores.csv",
                         mime="text/csv", key=f"{key}_dl_csv", on_click="ignore")
    c[1].download_button("Metrics (JSON)", json.dumps(run.metrics, indent=2), file_name=f"mia_{run.id}_metrics.json",
                         mime="application/json", key=f"{key}_dl_json", on_click="ignore")
    html_data, why = (lambda: report_or_why(run)), None
    if meta.get("damaged"):  # written now, so that a report that cannot be written is said in one line here
        try:
            html_data = report_html(run.id, run)
        except Exception as e:  # noqa: BLE001 - a damaged run: one line, not a failed download
            why = _why(e)
    c[2].download_button("HTML report", html_data if why is None else "", file_name=f"mia_{run.id}_report.html",
                         mime="text/html", key=f"{key}_dl_html", on_click="ignore", disabled=why is not None,
                         help="One self-contained file (plots included) that opens offline.")
    if why is not None:
        st.error(f"No HTML report for this damaged run: {md_text(why)}", icon=":material/error:")
