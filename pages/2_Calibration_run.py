"""Members vs non-members (your files, pasted texts or the bundled demo): ROC curves, TPR at low
FPR with confidence intervals, score histograms, the blind-baseline check, a downloadable report.

Runs in a background job (``dashboard.jobs``) and saves every finished run to the run store
(``mia_core.runs``); the latest run is shown again after a browser refresh.
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboard.calibration import (
    SIG_WORDS, UPLOAD_TYPES, build_request, input_signature, learning_attacks, make_job, model_line, read_inputs,
    run_estimate, run_expected,
)
from dashboard.engine import engine_for, engine_widgets
from dashboard.jobs import registry
from dashboard.loaders import load_with_progress, loaded
from dashboard.results import render_run
from dashboard.sidebar import model_panel, switch_target
from dashboard.stale import result_box, stale_parts
from dashboard.ui import (AUC_EXPLAINER, early_table, follow_job, job_origin, md_text, page_setup, show_error, start_job,
                          upload_files)
from mia_core.reports import plots
from mia_core import runs
from mia_core.attacks import REGISTRY, WITH_REFERENCE, default_attacks
from mia_core.attacks.base import needs_line
from mia_core.attacks.neighbourhood import run_coupling_warning
from mia_core.errors import MiaError, SettingsError
from mia_core.api import widget_limits
from mia_core.targets.demo import demo_reference, installed_demo
from mia_core.api.request import RunOptions, modify_choices

ESTIMATE_MAX_BYTES = 5 * 2**20  # uploads above this are not re-read just to estimate the run's time

page_setup("Calibration run", ":material/monitoring:", keep=("cal_",))  # inputs kept across pages
panel = model_panel(load=False)
reg = registry()
st.title("Calibration run")
st.markdown("Score texts known to be in the training data (**members**) and texts known not to be "
            "(**non-members**) with each attack, and measure how well the scores separate them. "
            + AUC_EXPLAINER)

# ------------------------------------------------------------------ data
st.subheader("1 · Data")
demo = installed_demo()
# the split a Controlled experiment wrote in this session: offered as a source, so its files need no upload
cx = {k: st.session_state.get(f"controlled_{k}") for k in ("target", "members", "nonmembers", "population", "reference")}
have_cx = bool(cx["members"] and cx["nonmembers"] and Path(cx["members"]).is_file() and Path(cx["nonmembers"]).is_file())
sources = (["demo"] if demo else []) + (["controlled"] if have_cx else []) + ["upload", "paste"]
src_labels = {"demo": "Bundled demo set", "controlled": "The controlled experiment's split", "upload": "Upload files",
              "paste": "Paste texts"}
source = st.radio("Data source", sources, format_func=src_labels.get, horizontal=True, key="cal_source",
                  label_visibility="collapsed")
if not demo:
    st.caption("The bundled demo set is not available yet (`mia_core.targets.demo`).")
members = nonmembers = population = None
demo_population = False
members_text = nonmembers_text = ""
mode = "auto"
use_demo_models = False
if source == "demo":
    st.caption(f"Demo: a small target fine-tuned on the member texts, the base SmolLM2 as reference. Members "
               f"`{demo['members']}`, non-members `{demo['nonmembers']}`.")
    use_demo_models = st.checkbox("Use the demo target and its base model as reference (instead of the sidebar's)",
                                  value=True, key="cal_demo_models")
    demo_population = st.checkbox(
        "Also decide member / non-member at a threshold fitted on the demo's 100 population texts "
        "(Mireshghallah et al. 2022 §2.4; scores those texts too: about half as long again)",
        value=False, key="cal_demo_population",
        help="Attacks that need known non-members (ReCaLL's prefix, RMIA) use the population whether or not this "
             "is ticked.")
elif source == "controlled":
    st.caption(f"The split the Controlled experiment wrote: members `{cx['members']}`, non-members "
               f"`{cx['nonmembers']}`" + (f", population `{cx['population']}`" if cx["population"] else "") + ".")
    if cx["target"] and panel.target_spec != cx["target"]:
        st.info("The sidebar's target is not the experiment's.")
        if st.button("Use the experiment's target (and its base as reference) in the sidebar", key="go_cal_cx_models"):
            switch_target(cx["target"], reference=cx["reference"])
            st.rerun()
elif source == "upload":
    c1, c2 = st.columns(2)
    members = upload_files(c1, "Members (texts believed to be in the training data)", type=UPLOAD_TYPES,
                           key="cal_members")
    nonmembers = upload_files(c2, "Non-members (texts known not to be)", type=UPLOAD_TYPES, key="cal_nonmembers")
    mode = st.selectbox(".txt files hold", ["auto", "lines", "blank"], key="cal_mode",
                        format_func={"auto": "auto-detect", "lines": "one text per line",
                                     "blank": "paragraphs separated by blank lines"}.get)
    with st.expander("Population set (optional)"):
        population = upload_files(st, "Known non-members, disjoint from the sets above: they fit a decision "
                                  "threshold, and are ReCaLL's prefix and RMIA's population",
                                  type=UPLOAD_TYPES, key="cal_population")
    st.caption(".txt (one text per line or blank-line paragraphs), .csv/.tsv/.jsonl/.json/.parquet/.arrow/.feather "
               "with a text column, "
               "or .zip of .txt files.")
else:
    c1, c2 = st.columns(2)
    members_text = c1.text_area("Members: one text per line (or paragraphs separated by blank lines)", height=180,
                                key="cal_members_text")
    nonmembers_text = c2.text_area("Non-members: one text per line (or paragraphs separated by blank lines)",
                                   height=180, key="cal_nonmembers_text")

if use_demo_models:
    panel.show_status(note="This run uses the demo target and its base model (SmolLM2) as reference.")
else:
    panel.load()

# ------------------------------------------------------------------ attacks
st.subheader("2 · Attacks")
have_ref = panel.reference is not None or use_demo_models
default = default_attacks(have_reference=have_ref)  # the CLI's default too
# a reference model appearing or going away (demo data <-> own data, sidebar choice) ticks or
# unticks the attacks that read it by default (ref, WBC); the user's other choices stay
if "cal_attacks" in st.session_state and st.session_state.get("_cal_have_ref", have_ref) != have_ref:
    st.session_state["cal_attacks"] = [a for a in st.session_state["cal_attacks"] if a not in WITH_REFERENCE] + (
        [a for a in WITH_REFERENCE if a in REGISTRY] if have_ref else [])
st.session_state["_cal_have_ref"] = have_ref
chosen = st.multiselect("Attacks to run", list(REGISTRY), default=None if "cal_attacks" in st.session_state else default,
                        key="cal_attacks",
                        format_func=lambda n: f"{REGISTRY[n].label} — {REGISTRY[n].citation}")
params: dict = {}
with st.expander("What each attack needs and costs"):
    st.markdown("\n".join(f"- **{a.label}** ({a.citation}): {needs_line(a)}." for a in REGISTRY.values()))
with_params = [a for a in chosen if REGISTRY[a].params]
if with_params:
    with st.expander("Attack parameters (defaults from the papers)"):
        for a in with_params:
            vals = {}
            for p, dv in REGISTRY[a].params.items():
                key = f"cal_param_{a}_{p}"
                dom = REGISTRY[a].domains[p]  # the declared domain: checked by build_request, shown as help
                label = f"{REGISTRY[a].label}: {p}" + (" (fraction of lowest-scoring tokens)" if p == "k" else "")
                tip = dom.describe() + (f" — {dom.note}" if dom.note else "")
                if p in REGISTRY[a].choices:
                    opts = list(REGISTRY[a].choices[p])
                    vals[p] = st.selectbox(label, opts, index=opts.index(dv) if dv in opts else 0, key=key, help=tip)
                elif isinstance(dv, bool):
                    vals[p] = st.checkbox(label, value=dv, key=key, help=tip)
                elif isinstance(dv, int):  # the limits are the declared domain's (mia_core.options.widget_limits)
                    vals[p] = int(st.number_input(label, value=dv, step=1, key=key, help=tip,
                                                  **{k: int(v) for k, v in widget_limits(dom).items()}))
                elif isinstance(dv, float):
                    vals[p] = float(st.number_input(label, value=dv, help=tip,
                                                    **{k: float(v) for k, v in widget_limits(dom).items()},
                                                    step=0.05 if dv >= 0.05 else dv / 2, format="%g", key=key))
                else:  # strings; None = optional (e.g. a path to save / load a trained SMIA model)
                    v = st.text_input(label + (" (optional)" if dv is None else ""), value="" if dv is None else str(dv),
                                      key=key, help=tip)
                    vals[p] = v.strip() or (None if dv is None else str(dv))
            params[a] = vals
split = None
learns = learning_attacks(chosen)
if learns:
    split = st.slider(f"Train/evaluation split: share of texts used to train {', '.join(REGISTRY[a].label for a in learns)} "
                      "(every attack is reported on the held-out rest)", 0.1, 0.9, 0.5, 0.05, key="cal_split")
modify_variants: list = []
if st.checkbox("Also evaluate on modified members (one word duplicated / deleted / added, SMIA §5.2)",
               key="cal_modify", help="An auditor rarely holds the exact training string: how robust is each "
                                      "attack to a one-word edit? Re-runs the attacks once per variant."):
    modify_variants = st.multiselect("Variants", list(modify_choices()), default=list(modify_choices()),
                                     key="cal_modify_variants")
with st.expander("Advanced"):
    c = st.columns(4)
    # limits and defaults: the run's declared options (mia_core.pipeline.options.RunOptions)
    n_boot = int(c[0].number_input("Bootstrap resamples (CIs)", **RunOptions.widget_limits("n_bootstrap"),
                                   value=RunOptions.default("n_bootstrap"), step=100, key="cal_boot"))
    seed = int(c[1].number_input("Seed", **RunOptions.widget_limits("seed"), value=RunOptions.default("seed"),
                                 key="cal_seed"))
    ctx = int(c[2].number_input("Context window (0 = model default)", **RunOptions.widget_limits("context"), value=0,
                                step=256, key="cal_ctx"))
    blind = c[3].checkbox("Blind baseline", value=True, key="cal_blind",
                          help="A classifier that never sees the model: if it separates the sets, attack AUCs "
                               "measure a distribution shift, not membership.")
    first_token = st.checkbox("Also score each text's first token", value=False, key="cal_first_token",
                              help="By default texts are scored as the model saw them in training: after the token "
                                   "its tokenizer puts in front (a Llama-style BOS: every token is scored, as MIMIR) "
                                   "or with nothing in front (GPT-2 style: tokens 2..n, as MIMIR). Tick to score the "
                                   "first token wherever it has a prediction.")
    run_name = st.text_input("Run name (optional)", key="cal_name", placeholder="e.g. SmolLM2 fp32 demo")
    engine_choice = engine_widgets("cal")

# ------------------------------------------------------------------ run
now_sig = input_signature(source=source, members=members, nonmembers=nonmembers, population=population,
                          members_text=members_text, nonmembers_text=nonmembers_text, mode=mode,
                          demo_population=demo_population, use_demo_models=use_demo_models, panel=panel,
                          attacks=chosen, params=params,
                          settings=(split, tuple(modify_variants), n_boot, seed, ctx, blind, first_token))
st.subheader("3 · Run")
job = reg.latest("calibration")
busy = job is not None and job.running
_up_bytes = sum(getattr(f, "size", 0) or 0 for f in [*(members or []), *(nonmembers or []), *(population or [])])
if not busy and chosen and _up_bytes > ESTIMATE_MAX_BYTES:  # not re-read on every rerun
    st.caption("Estimate: not made for uploads over 5 MB (they would be re-read on every change of the page).")
elif not busy and chosen:  # what pressing Run will cost, before it is pressed
    try:
        _est_inputs = read_inputs(source, demo=cx if source == "controlled" else demo, members=members, nonmembers=nonmembers, mode=mode,
                                  population=population, members_text=members_text, nonmembers_text=nonmembers_text)
        if source == "demo" and not demo_population and not any(
                "population" in REGISTRY[a].inputs_needed(params.get(a)) for a in chosen if a in REGISTRY):
            _est_inputs.population = None
        if use_demo_models:  # the demo's models when loaded already (the start-up warm-up loads them)
            _lm = loaded(str(demo["target"]), panel.dtype, panel.quantize, panel.device, panel.trust_remote_code)
            _ref = loaded(demo_reference(demo), panel.dtype, "none", panel.device, panel.trust_remote_code)
        else:
            _lm, _ref = panel.target, panel.reference
        st.caption("Estimate: " + run_estimate(
            _est_inputs, chosen, params, modify_variants=modify_variants, target=_lm, reference=_ref,
            context=ctx or None))
    except MiaError:
        pass  # the same inputs give their one-line error when Run is pressed
st.markdown(model_line(use_demo_models, panel))
if st.button("Run the attacks", type="primary", disabled=busy, key="go_cal",
             help="Runs in the background: you can keep using the dashboard; the run is saved when it finishes."):
    try:
        inputs = read_inputs(source, demo=cx if source == "controlled" else demo, members=members, nonmembers=nonmembers, mode=mode,
                             population=population, members_text=members_text, nonmembers_text=nonmembers_text)
        for note in inputs.notes:  # e.g. a file read as Windows-1252: shown even when a later check fails
            st.caption(md_text(note))
        if source == "demo" and not demo_population and not any(
                "population" in REGISTRY[a].inputs_needed(params.get(a)) for a in chosen if a in REGISTRY):
            inputs.population = None  # the demo's population costs passes; only scored when asked for
        if not chosen:  # cheap settings first, before any model is loaded
            raise SettingsError("choose at least one attack.")
        request = build_request(chosen, params, split=split, n_bootstrap=n_boot, seed=seed, context=ctx or None,
                                blind=blind, dataset=inputs.dataset, population=inputs.population,
                                reference=demo_reference(demo) if use_demo_models else panel.reference,
                                model=str(demo["target"]) if use_demo_models else panel.target,
                                first_token=True if first_token else None, quantize=panel.quantize,
                                modify=modify_variants)
        engine = engine_for(engine_choice)  # Ray started or joined here: its errors before any model loads
        if use_demo_models:
            target = load_with_progress(str(demo["target"]), panel.dtype, panel.quantize, panel.device,
                                        panel.trust_remote_code, label="Loading the demo target")
            reference = load_with_progress(demo_reference(demo), panel.dtype, "none", panel.device,
                                           panel.trust_remote_code, label="Loading the reference")
        else:
            if panel.target is None:
                raise MiaError(f"no target model loaded: {panel.target_error or 'choose one in the sidebar'}")
            if panel.reference_error:
                raise MiaError(f"the reference model did not load: {panel.reference_error}")
            target, reference = panel.target, panel.reference
        coupled = run_coupling_warning(chosen, params, target)
        if coupled:
            st.warning(coupled)
        work = make_job(request, inputs, target, reference if request.reference is not None else None,
                        name=run_name.strip() or None)
        try:  # the estimate with the loaded models (their cache, their speed): the start of the whole run's time left
            expected = run_expected(inputs, chosen, params, modify_variants=modify_variants, target=target,
                                    reference=reference if request.reference is not None else None,
                                    context=ctx or None)
        except MiaError:
            expected = None
        st.session_state["cal_started_sig"] = now_sig  # the inputs of the run started (start_job reruns the page)
        start_job(reg, "calibration", f"{len(chosen)} attack(s) on {inputs.dataset.n_members} members + "
                  f"{inputs.dataset.n_nonmembers} non-members, target {target.name}", work, engine=engine,
                  expected=expected)
    except MiaError as e:
        show_error(e)

def _early(j) -> None:
    if j.partial:  # results of the attacks whose passes are done, while the rest runs
        st.markdown("##### Early results (AUC without confidence intervals; the full table comes at the end)")
        st.table(early_table(j.partial))
        st.plotly_chart(plots.roc_figure(j.partial, log=True), key=f"cal_early_roc_{len(j.partial)}")


if (done := follow_job(reg, job, "cal_acked", extra=_early, repeat_error=True)) is not None:
    res = done.result if isinstance(done.result, dict) else {"id": done.result}
    mine = not job_origin(done)  # this tab pressed Run (a job of another tab is not "this re-run")
    st.session_state["cal_run_id"] = res["id"]
    st.session_state["cal_unchanged"] = mine and bool(res.get("unchanged"))
    st.session_state["cal_run_sig"] = st.session_state.get("cal_started_sig") if mine else None
    st.session_state["cal_run_origin"] = "mine" if mine else "other"

# ------------------------------------------------------------------ results
st.subheader("Results")
run = None
rid = st.session_state.get("cal_run_id")
if rid:
    try:
        run = runs.load_run(rid)
    except MiaError:
        st.session_state.pop("cal_run_id", None)
if run is None:
    run = runs.latest_run()
if run is None and busy:
    st.info("The run is going: its progress is shown above, and its results appear here when it finishes.")
elif run is None:
    st.info("No run yet: choose data and attacks above and press **Run the attacks**.")
else:
    stale = stale_parts(st.session_state.get("cal_run_sig"), now_sig, SIG_WORDS) if rid else []
    if rid is None:
        st.caption("Showing the latest saved run (not necessarily of the inputs above: press **Run the attacks** "
                   "for those).")
    elif st.session_state.get("cal_run_origin") == "reopened":
        st.caption("Reopened from the Runs page: its inputs are not restored above, and **Run the attacks** scores "
                   "the inputs above, not this run's.")
    elif st.session_state.get("cal_run_origin") == "other":
        st.caption("A run another tab started: its inputs may not be those above.")
    if not stale and rid is not None and st.session_state.get("cal_unchanged"):
        st.caption("This re-run changed nothing (the same settings, models and scores as the run below), so it "
                   "was not saved again.")
    # issue 53 item 3: never shown as the answer to inputs it did not come from (dashboard.stale, as every page)
    with result_box(stale, button="Run the attacks", title=run.meta.get("name", run.id)):
        render_run(run, key="cal")
