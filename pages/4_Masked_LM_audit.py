"""Masked-LM membership inference (Mireshghallah et al. 2022, "Quantifying Privacy Risks of Masked
Language Models Using Membership Inference Attacks").

A text's energy under a masked LM is the negative log-likelihood of K random masking patterns
(§2.3), summed over the masked tokens (recipe "sum", the default) or averaged per masked token
(recipe "released": the authors' released code as issue 28 describes it); the
**likelihood-ratio** attack compares the target's energy with a reference model's, the **loss**
attack uses the target's alone. A population of texts known not to be in the
training data sets the threshold that flags a fraction α of it (§2.4); precision and recall at
that threshold are measured on the members and non-members, and per group (e.g. patient) when a
group column exists (§4.2). Engine: ``mia_core.mlm.run_mlm_audit``.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.engine import engine_for, engine_widgets
from dashboard.jobs import registry
from dashboard.sidebar import model_panel
from dashboard.ui import (AUC_EXPLAINER, fmt_auc, fmt_num, fmt_pct, fmt_rate_ci, fmt_seconds, page_setup,
                          md_text, show_error, stage_progress, follow_job, start_job)
from mia_core.metrics import decision_cis, metrics_rows
from mia_core import plots
from mia_core.errors import DataError, MiaError, SettingsError
from mia_core.results import csv_text
from mia_core.mlm import DEFAULT_ALPHA, DEFAULT_RECIPE, RECIPES, MlmAuditResult, recipe_k, run_mlm_audit
from mia_core.mlm.audit import check_inputs as check_mlm_inputs
from mia_core.models import load_masked_lm

RESULT_KEY = "mlm_audit_result"
UPLOAD_TYPES = ["txt", "text", "csv", "tsv", "jsonl", "json", "parquet", "arrow", "feather", "zip"]
def _mlm_demo() -> dict | None:
    """``mia_core.demo.mlm_demo_paths()``, or None when the demo's files are not installed."""
    try:
        from mia_core.demo import mlm_demo_paths

        return mlm_demo_paths()
    except (ImportError, MiaError):
        return None


SHORT = {"likelihood_ratio": "Likelihood ratio", "loss": "Loss"}
ATTACKS = {"likelihood_ratio": "Likelihood ratio (target vs reference)", "loss": "Loss (target energy only)"}

page_setup("Masked-LM audit", ":material/healing:")
panel = model_panel(load=False, need_reference=False)
st.title("Masked-LM audit")
st.markdown(
    "Membership inference against **masked** language models (BERT-style), after Mireshghallah et al. (2022). "
    "Each text is scored by its energy under K random maskings; the likelihood-ratio attack divides out a "
    "reference model's energy. A **population** of texts known not to be in the training data fixes the "
    "threshold (it flags a share α of the population); precision and recall at that threshold are then "
    "measured on your members and non-members. " + AUC_EXPLAINER
)

# ------------------------------------------------------------------ models
st.subheader("1 · Masked language models")
st.info("The sidebar's models are causal LMs and are not used here. One masked LM ships with the dashboard: "
        "`embedded` (the all-MiniLM-L6-v2 encoder with a masked-LM head trained on public-domain books, the "
        "neighbour proposer; bert-base-uncased's WordPiece vocabulary), usable as the reference of a target with "
        "that tokenizer. The **bundled demo** (section 2) brings its own pair: leave both boxes empty to use it. "
        "Otherwise give a Hugging Face hub id (needs network access) or a local folder holding a masked LM (config, "
        "weights and tokenizer), e.g. one saved with `save_pretrained`. Both models must share a tokenizer.",
        icon=":material/info:")
c1, c2 = st.columns(2)
target_spec = c1.text_input("Target masked LM (the audited model)", key="mlm_target",
                            placeholder="/path/to/fine-tuned-bert or a hub id")
reference_spec = c2.text_input("Reference masked LM (e.g. the pre-trained model it was fine-tuned from)",
                               key="mlm_reference", placeholder="bert-base-uncased or /path/to/model")

# ------------------------------------------------------------------ data
st.subheader("2 · Texts")
demo = _mlm_demo()
source = st.radio("Texts from", (["demo"] if demo else []) + ["upload", "paste"], horizontal=True, key="mlm_source",
                  format_func={"demo": "Bundled demo", "upload": "Upload files", "paste": "Paste texts"}.get,
                  label_visibility="collapsed")
mem_up = non_up = pop_up = None
mem_txt = non_txt = pop_txt = ""
mode, text_column, group_column = "auto", None, None
if source == "demo":
    st.caption("Demo with ground truth: 100 member, 100 non-member and 100 population passages from five "
               "public-domain novels (the calibration demo's texts). Reference: the embedded masked LM, trained on "
               "eight other novels. Target: that model trained further on the 100 members "
               "(`python -m mia_core build-proposer --mlm-demo-target`); it never saw the non-members or the "
               "population. Leave the model boxes above empty to use this pair.")
elif source == "upload":
    u1, u2, u3 = st.columns(3)
    mem_up = u1.file_uploader("Members (believed to be in the training data)", type=UPLOAD_TYPES,
                              accept_multiple_files=True, key="mlm_members_up")
    non_up = u2.file_uploader("Non-members (known not to be)", type=UPLOAD_TYPES,
                              accept_multiple_files=True, key="mlm_nonmembers_up")
    pop_up = u3.file_uploader("Population (other known non-members: set the threshold)", type=UPLOAD_TYPES,
                              accept_multiple_files=True, key="mlm_population_up")
    o1, o2, o3 = st.columns(3)
    mode = o1.selectbox(".txt files hold", ["auto", "lines", "blank"], key="mlm_mode",
                        format_func={"auto": "auto-detect", "lines": "one text per line",
                                     "blank": "paragraphs separated by blank lines"}.get)
    text_column = o2.text_input("Text column of tables (blank: auto)", key="mlm_text_column").strip() or None
    group_column = o3.text_input("Group column (e.g. patient id; blank: none)", key="mlm_group_column",
                                 help="§4.2: a group's score is the mean of its texts' scores.").strip() or None
else:
    p1, p2, p3 = st.columns(3)
    mem_txt = p1.text_area("Members: one text per line", key="mlm_members_text", height=160)
    non_txt = p2.text_area("Non-members: one text per line", key="mlm_nonmembers_text", height=160)
    pop_txt = p3.text_area("Population: one text per line (disjoint from the other two)", key="mlm_population_text",
                           height=160)

# ------------------------------------------------------------------ settings
st.subheader("3 · Attack settings")
RECIPE_LABELS = {"sum": "Sum over the masked tokens (default)",
                 "released": "Mean per masked token (authors' released code)"}


def _recipe_changed() -> None:
    """A new recipe brings its own K (10 or 20); K can still be changed afterwards (an explicit K wins)."""
    st.session_state["mlm_k"] = recipe_k(st.session_state["mlm_recipe"])


recipe = st.radio("Energy recipe", list(RECIPES), horizontal=True, key="mlm_recipe",
                  index=list(RECIPES).index(DEFAULT_RECIPE), format_func=RECIPE_LABELS.get,
                  on_change=_recipe_changed,
                  help="§2.3. Sum: ⌈0.15·T⌉ masked tokens per pattern, K = 10, the energy sums their "
                       "log-probabilities (this project's reading of the paper's eq. 2). Released: ⌊0.15·T⌋ "
                       "masked tokens (at least 1), K = 20, the energy is the mean loss per masked token, as an "
                       "independent review (issue 28) found in the authors' released code. The two rank texts of "
                       "different lengths differently.")
st.session_state.setdefault("mlm_k", recipe_k(recipe))  # the widget takes its value from here (no default given)
a1, a2, a3, a4 = st.columns(4)
alpha = a1.number_input("α: share of the population flagged", min_value=0.001, max_value=0.999, value=DEFAULT_ALPHA,
                        step=0.01, format="%.3f", key="mlm_alpha",
                        help="§2.4: the threshold is the (1-α) quantile of the population's scores.")
k = a2.number_input("K: masking patterns per text", min_value=1, max_value=100, key="mlm_k",
                    help="§2.3: 15% of the tokens masked in each of K patterns. The recipe's K (10 for sum, 20 for "
                         "released) is set when the recipe is chosen; a K typed here wins.")
seed = a3.number_input("Seed", min_value=0, value=0, key="mlm_seed")
n_boot = a4.number_input("Bootstrap resamples (AUC CI)", min_value=0, max_value=10000, value=1000, step=100,
                         key="mlm_bootstrap")

with st.expander("Advanced"):
    engine_choice = engine_widgets("mlm")

reg = registry()
job = reg.get(st.session_state.get("mlm_job"))  # this session's audit, running in the background
busy = job is not None and job.running
go_ = st.button("Run the masked-LM audit", type="primary", key="mlm_go", disabled=busy,
                help="Runs in the background, with its elapsed time and time left; the results appear below.")


def _lines(text: str) -> list[str]:
    return [t.strip() for t in (text or "").splitlines() if t.strip()]


def _inputs() -> dict:
    """Validated keyword arguments for ``run_mlm_audit`` (raises MiaError)."""
    if source == "demo":
        from mia_core.data import read_texts

        read = lambda role: [r.text for r in read_texts(demo[role], mode="lines")]  # noqa: E731
        return dict(members=read("members"), nonmembers=read("nonmembers"), population=read("population"),
                    target=target_spec.strip() or str(demo["target"]),
                    reference=reference_spec.strip() or demo["reference"], notes=[])
    if not target_spec.strip():
        raise SettingsError("give the target masked LM: a local folder or a hub id.")
    if not reference_spec.strip():
        raise SettingsError("give the reference masked LM: a local folder or a hub id (e.g. the target's base model).")
    notes: list[str] = []
    if source == "paste":
        mem, non, pop = _lines(mem_txt), _lines(non_txt), _lines(pop_txt)
        for role, v in (("members", mem), ("non-members", non), ("population texts", pop)):
            if not v:
                raise DataError(f"no {role} given: paste one text per line.")
        return dict(members=mem, nonmembers=non, population=pop, notes=notes, target=target_spec.strip(),
                    reference=reference_spec.strip())
    from mia_core.data import load_dataset, read_population

    if not mem_up or not non_up:
        raise DataError("upload the member and the non-member files.")
    if not pop_up:
        raise DataError("upload the population file: texts known not to be in the training data, other than the "
                        "non-members, to set the threshold.")
    ds = load_dataset(members=list(mem_up), nonmembers=list(non_up), mode=mode, text_column=text_column,
                      group_column=group_column)
    notes += list(ds.report)
    pop = read_population(list(pop_up), mode=mode, text_column=text_column, group_column=group_column, notes=notes)
    mi = [i for i in range(len(ds)) if ds.labels[i] == 1]
    ni = [i for i in range(len(ds)) if ds.labels[i] == 0]
    kw = dict(members=[ds.texts[i] for i in mi], nonmembers=[ds.texts[i] for i in ni], population=[r.text for r in pop],
              member_ids=[ds.ids[i] for i in mi], nonmember_ids=[ds.ids[i] for i in ni], notes=notes,
              target=target_spec.strip(), reference=reference_spec.strip())
    if ds.groups is not None:
        kw["member_groups"] = [ds.groups[i] for i in mi]
        kw["nonmember_groups"] = [ds.groups[i] for i in ni]
        if any(r.group is not None for r in pop):
            kw["population_groups"] = [r.group for r in pop]
    return kw


if go_ and not busy:
    st.session_state.pop(RESULT_KEY, None)
    try:
        kw = _inputs()
        notes = kw.pop("notes")
        for n_ in notes:  # input notes (e.g. a file read as Windows-1252), kept when a later step fails
            st.caption(md_text(n_))
        # every cheap check first (texts, settings, the Ray cluster), then the two models, here, so that a bad
        # input or a model that does not load is one line on the page before anything runs in the background
        check_mlm_inputs(kw["members"], kw["nonmembers"], kw["population"], alpha=float(alpha), k=int(k),
                         seed=int(seed), recipe=recipe)
        engine = engine_for(engine_choice)  # Ray started or joined here: its errors before any model loads
        slot = st.empty()
        cb = stage_progress(slot.container())
        for role in ("target", "reference"):
            kw[role] = load_masked_lm(kw[role], device=panel.device, dtype=panel.dtype,
                                      trust_remote_code=panel.trust_remote_code,
                                      progress=lambda m, f, role=role: cb(f"loading the {role}: {m}", f))
        slot.empty()

        def work(progress):
            import time

            t0 = time.time()
            res = run_mlm_audit(k=int(k), seed=int(seed), alpha=float(alpha), n_bootstrap=int(n_boot), recipe=recipe,
                                device=panel.device, dtype=panel.dtype, trust_remote_code=panel.trust_remote_code,
                                progress=lambda m, f: progress(f"masked-LM audit: {m}", f), **kw)
            res.plan = None  # tokenisation and masks: large, not needed for display
            return {"result": res, "notes": notes, "seconds": time.time() - t0}

        start_job(reg, "mlm", f"Masked-LM audit: {len(kw['members'])} members + {len(kw['nonmembers'])} "
                  f"non-members, K = {int(k)}, recipe {recipe}", work, state_key="mlm_job", engine=engine)
    except MiaError as e:
        show_error(e)

if (done := follow_job(reg, job, "mlm_acked")) is not None:
    st.session_state[RESULT_KEY] = done.result
    st.caption(f"Done in {fmt_seconds(done.result['seconds'])}.")


def _histogram(res: MlmAuditResult, attack: str):
    """Members, non-members and population scores with the population threshold (the paper's Figure 3)."""
    scores = res.scores
    pt = res.metrics[attack]["population_threshold"]
    return plots.population_histogram(
        scores.loc[scores["label"] == 1, attack], scores.loc[scores["label"] == 0, attack],
        pd.Series(res.population_scores[attack], dtype=float), threshold=pt.get("threshold"),
        threshold_label=f"threshold: flags {fmt_pct(pt['alpha'])} of the population", title=ATTACKS[attack])


def _metrics_rows(metrics: dict, group: bool = False) -> pd.DataFrame:
    """The engine's metrics rows (AUC [CI], TPR at 1 % FPR) with the decisions at the population threshold."""
    rows = []
    for r in metrics_rows(metrics, fprs=(0.01,)):
        name, m = r["attack"], metrics[r["attack"]]
        pt = m["population_threshold"]
        row = {"attack": SHORT.get(name, name)}
        if group:
            row["groups"] = m.get("n_groups")
        row.update({
            "AUC [95% CI]": r["auc_ci_text"],
            "TPR at 1% FPR": r["tpr_text"]["0.01"],
            "precision [95% CI]": fmt_rate_ci(pt.get("precision"), decision_cis(pt)["precision"]),
            "recall [95% CI]": fmt_rate_ci(pt.get("recall"), decision_cis(pt)["recall"]),
            "FPR [95% CI]": fmt_rate_ci(pt.get("fpr"), decision_cis(pt)["fpr"]),
            "flagged": f"{pt.get('n_flagged')} of {pt.get('n_members', 0) + pt.get('n_nonmembers', 0)}",
            "threshold": fmt_num(pt.get("threshold")),
        })
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ results
stored = st.session_state.get(RESULT_KEY)
if stored is not None:
    res: MlmAuditResult = stored["result"]
    st.subheader("4 · Results")
    for w in res.warnings:
        st.warning(md_text(w))
    for n in stored["notes"]:
        st.caption(md_text(n))
    s = res.settings
    st.caption(f"{s['n_members']} members · {s['n_nonmembers']} non-members · {s['n_population']} population texts · "
               f"K = {s['k']} · recipe {s.get('recipe', DEFAULT_RECIPE)} · α = {fmt_pct(s['alpha'])} · "
               f"{fmt_seconds(stored['seconds'])}")
    cols = st.columns(len(res.metrics))
    for col, (name, m) in zip(cols, res.metrics.items()):
        pt = m["population_threshold"]
        with col:
            st.markdown(f"**{ATTACKS.get(name, name)}**")
            x1, x2, x3 = st.columns(3)
            x1.metric("AUC", fmt_auc(m.get("auc")), help=f"95% bootstrap CI: {fmt_auc(m.get('auc'), m.get('auc_ci'))}")
            cis = decision_cis(pt)
            x2.metric("Precision", fmt_pct(pt.get("precision")),
                      help="Of the texts flagged at the population threshold, the share that are members.")
            x3.metric("Recall", fmt_pct(pt.get("recall")), help="Share of the members flagged.")
            st.caption(f"AUC {fmt_auc(m.get('auc'), m.get('auc_ci'))} · precision "
                       f"{fmt_rate_ci(pt.get('precision'), cis['precision'])} · recall "
                       f"{fmt_rate_ci(pt.get('recall'), cis['recall'])} (95 % Wilson intervals)")
            st.plotly_chart(_histogram(res, name), key=f"mlm_hist_{name}")
    st.markdown("**At the population threshold**")
    st.dataframe(_metrics_rows(res.metrics), hide_index=True, key="mlm_metrics_table", width="stretch")
    if res.group_metrics:
        g0 = next(iter(res.group_metrics.values()))
        st.markdown(f"**Group level** (mean score per group; threshold from the "
                    f"{g0['population_threshold'].get('threshold_from', 'population')}; §4.2)")
        st.dataframe(_metrics_rows(res.group_metrics, group=True), hide_index=True, key="mlm_group_table",
                     width="stretch")
    leaks = res.leak_features or {}
    if leaks:
        with st.expander("Which members leak (§4.6): features of flagged vs unflagged members"):
            for name, lk in leaks.items():
                fl, un = lk.get("flagged") or {}, lk.get("unflagged") or {}
                feats = sorted(set(fl) | set(un))
                if feats:
                    st.markdown(ATTACKS.get(name, name))
                    st.dataframe(pd.DataFrame({"feature": feats, "flagged members": [fmt_num(fl.get(f)) for f in feats],
                                               "unflagged members": [fmt_num(un.get(f)) for f in feats]}),
                                 hide_index=True, key=f"mlm_leak_{name}")
    scores = res.scores
    with st.expander("Per-text scores"):
        st.dataframe(scores, hide_index=True, key="mlm_scores_table")
    st.download_button("Download the per-text scores (CSV)", csv_text(scores).encode("utf-8"),
                       file_name="mlm_scores.csv", mime="text/csv", key="mlm_download")
