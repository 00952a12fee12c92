"""Dataset inference: was this collection used to train the model? (Maini et al. 2024, "LLM Dataset
Inference: Did you train on my dataset?", NeurIPS.)

A suspect set and a validation set of the same distribution, known not to be trained on; MIA features
of every text; one p-value: the one-sided permutation test (primary) beside the paper's split
t-test, with the IID guard (the blind baseline), a self-check and a power curve. Engine:
``mia_core.dataset_inference.run_dataset_inference``.
"""
from __future__ import annotations

import streamlit as st

from dashboard.jobs import registry
from dashboard.loaders import load_model
from dashboard.options import worded
from dashboard.sidebar import model_panel
from dashboard.ui import fmt_seconds, md_text, page_setup, show_error, follow_job, start_job
from mia_core import plots
from mia_core.dataset_inference import DEFAULT_ALPHA, check_inputs, run_dataset_inference
from mia_core.dataset_inference.significance import p_number
from mia_core.errors import DataError, MiaError
from mia_core.results import csv_text

RESULT_KEY = "di_result"
UPLOAD_TYPES = ["txt", "text", "csv", "tsv", "jsonl", "json", "parquet", "arrow", "feather", "zip"]
VERDICT_LABEL = {"used": "Used: the suspect set was very likely in the training data",
                 "not_shown": "Not shown: no significant evidence that the suspect set was used",
                 "refused": "Refused: the two sets differ without the model"}

page_setup("Dataset inference", ":material/dataset:")
panel = model_panel(load=False)
st.title("Dataset inference")
st.markdown(
    "Was **this collection** used to train the model? A single text carries little signal; many texts together "
    "give one statistically valid answer (Maini et al. 2024). Bring a **suspect** set (the texts in question) and "
    "a **validation** set drawn from the *same distribution* and known **not** to be trained on (e.g. written "
    "after the model's cut-off, or held back before a release). Every text gets the membership scores of the "
    "existing attacks; a linear model learns which separate the sets; a permutation test gives the p-value. "
    "The test is only valid if the two sets are exchangeable: a text classifier that never queries the model "
    "(the blind baseline) checks that first, and the verdict is refused when it can tell the sets apart."
)

# ------------------------------------------------------------------ data
st.subheader("1 · Texts")
try:
    from mia_core.demo import demo_paths

    demo = demo_paths()
except (ImportError, MiaError):
    demo = None
sources = (["demo", "demo_null"] if demo else []) + ["upload", "paste"]
source = st.radio("Texts from", sources, horizontal=True, key="di_source", label_visibility="collapsed",
                  format_func={"demo": "Demo: members vs non-members", "demo_null": "Demo null: unseen vs non-members",
                               "upload": "Upload files", "paste": "Paste texts"}.get)
sus_up = val_up = None
sus_txt = val_txt = ""
if source == "demo":
    st.caption("The calibration demo's 100 members of the demo target (a SmolLM2 fine-tune) as the suspect set, its "
               "100 non-members as validation: the answer should be *used*. The demo target is audited.")
elif source == "demo_null":
    st.caption("The demo's 100 population texts (never trained on) as the suspect set, its 100 non-members as "
               "validation: the answer should be *not shown*. The demo target is audited.")
elif source == "upload":
    u1, u2 = st.columns(2)
    sus_up = u1.file_uploader("Suspect set (the texts in question)", type=UPLOAD_TYPES, accept_multiple_files=True,
                              key="di_suspect_up")
    val_up = u2.file_uploader("Validation set (same distribution, known not trained on)", type=UPLOAD_TYPES,
                              accept_multiple_files=True, key="di_validation_up")
else:
    p1, p2 = st.columns(2)
    sus_txt = p1.text_area("Suspect texts: one per line", key="di_suspect_text", height=160)
    val_txt = p2.text_area("Validation texts: one per line", key="di_validation_text", height=160)

# ------------------------------------------------------------------ settings
st.subheader("2 · Test settings")
a1, a2, a3, a4 = st.columns(4)
alpha = a1.number_input("α (significance level)", min_value=0.0001, max_value=0.5, value=DEFAULT_ALPHA, step=0.01,
                        format="%.4f", key="di_alpha", help="The verdict is 'used' when the p-value is at most α.")
folds = a2.number_input("Folds", min_value=2, max_value=20, value=5, key="di_folds",
                        help="Cross-fitting folds: each text is scored by a model fitted on the other folds.")
perms = a3.number_input("Permutations", min_value=99, max_value=100_000, value=10_000, step=1000, key="di_perms",
                        help="Label permutations: p-values down to 1 / (permutations + 1).")
seed = a4.number_input("Seed", min_value=0, value=0, key="di_seed")
features = st.text_input("Features", value="default", key="di_features",
                         help="default: loss, zlib, Min-K% and Min-K%++ at k = 0.05 ... 0.6, DC-PDD (+ the reference "
                              "attack when the sidebar has a reference model); all; or a comma list "
                              "(e.g. default,lowercase).")



def _estimate() -> str:
    """The line shown before Run: the features' passes over both sets at this machine's measured speed (the
    calibration page's estimate, ``mia_core.api.plan_run``); empty until both sets are there."""
    from mia_core.api import plan_run
    from mia_core.dataset_inference import parse_features

    try:
        s_, v_, _, ref_ = _texts()
        fams = parse_features(features, reference=ref_ is not None, population=False)
        plan = plan_run(fams, texts=s_ + v_, check_inputs=False)
    except (MiaError, ValueError):
        return ""
    from mia_core.dataset_inference.significance import estimate_seconds

    tests = estimate_seconds(len(s_) + len(v_), n_permutations=int(perms))
    return (plan.estimate.split(" Lowercase (not ticked")[0]
            + f" The permutation tests ({int(perms):,} permutations): about {fmt_seconds(tests)} more.")


reg = registry()
job = reg.get(st.session_state.get("di_job"))
busy = job is not None and job.running
go_ = st.button("Run dataset inference", type="primary", key="di_go", disabled=busy)


def _lines(text: str) -> list[str]:
    return [t.strip() for t in (text or "").splitlines() if t.strip()]


def _texts() -> tuple[list[str], list[str], str | None, str | None]:
    """Suspect texts, validation texts, the target spec and the reference spec (None: none)."""
    from mia_core.data import read_texts

    if source in ("demo", "demo_null"):
        read = lambda role: [r.text for r in read_texts(demo[role], mode="lines")]  # noqa: E731
        return read("population" if source == "demo_null" else "members"), read("nonmembers"), str(demo["target"]), \
            (panel.reference_spec or None)
    if source == "paste":
        s, v = _lines(sus_txt), _lines(val_txt)
    else:
        if not sus_up or not val_up:
            raise DataError("upload the suspect and the validation files.")
        s = [r.text for f in sus_up for r in read_texts(f)]
        v = [r.text for f in val_up for r in read_texts(f)]
    return s, v, panel.target_spec, panel.reference_spec or None


if not busy and (line := _estimate()):
    st.caption("Estimate: " + line + " The permutation test itself takes about a second.")

if go_ and not busy:
    st.session_state.pop(RESULT_KEY, None)
    try:
        suspect, validation, target_spec, reference_spec = _texts()
        # every model-free check first (sizes, overlap, settings): one line on the page before anything runs
        check_inputs(suspect, validation, features=features, reference=reference_spec is not None,
                     alpha=float(alpha), folds=int(folds), n_permutations=int(perms))
        with st.spinner("loading the models"):  # here, so that a model that does not load is one line on the page
            target = load_model(target_spec, panel.dtype, "none", panel.device, panel.trust_remote_code)
            reference = load_model(reference_spec, panel.dtype, "none", panel.device, panel.trust_remote_code) \
                if reference_spec else None

        def work(progress):
            import time

            t0 = time.time()
            res = run_dataset_inference(
                suspect, validation, target, reference=reference, features=features, alpha=float(alpha),
                folds=int(folds), n_permutations=int(perms), seed=int(seed),
                progress=lambda m, f: progress(f"dataset inference: {m}", f))
            return {"result": res, "seconds": time.time() - t0, "model": getattr(target, "name", None)}

        start_job(reg, "di", f"Dataset inference: {len(suspect)} suspect vs {len(validation)} validation texts", work,
                  state_key="di_job")
    except MiaError as e:
        show_error(e)

if (done := follow_job(reg, job, "di_acked")) is not None:
    st.session_state[RESULT_KEY] = done.result
    try:  # kept on the Runs page, beside the calibration runs
        from mia_core.dataset_inference import store

        done.result["saved"] = store.save(done.result["result"], model=done.result.get("model"))["id"]
    except (MiaError, OSError) as e:
        done.result["saved"] = None
        st.caption(md_text(f"not saved to the runs folder: {worded(e)}"))

# ------------------------------------------------------------------ results
stored = st.session_state.get(RESULT_KEY)
if stored is not None:
    res = stored["result"]
    s = res.summary
    st.subheader("3 · Verdict")
    label = VERDICT_LABEL[s["verdict"]]
    {"used": st.warning, "not_shown": st.info, "refused": st.error}[s["verdict"]](
        f"**{label}.** {md_text(s['verdict_reason'])}")
    st.caption(f"{s['n_suspect']} suspect · {s['n_validation']} validation texts · α = {s['alpha']:g} · "
               f"{fmt_seconds(stored['seconds'])}" + (f" · saved as run {stored['saved']} (Runs page)"
                                                      if stored.get("saved") else ""))
    if s["verdict"] != "refused":
        m1, m2, m3, m4 = st.columns(4)
        m1.metric("p-value (one-sided test)", p_number(s["p_value"], s["p_value_is_bound"]),
                  help=f"Is the suspect set more member-like than the validation set? A permutation test of the Welch "
                       f"t of the combined scores (non-negative weights, {s['folds']} folds, {s['n_permutations']:,} "
                       "permutations), reported as the larger of its p-value and the Welch t-test's: exact when the "
                       "sets are exchangeable, and valid when they differ only in spread or size. The primary figure.")
        m2.metric("p-value (paper's t-test)", p_number(s["p_value_ttest"]),
                  help="Maini et al.'s procedure: a linear model on half the texts, a t-test on the other half. It "
                       "learns the direction, so it is not one-sided: shown beside, never deciding.")
        m3.metric("Texts that stand out", f"{s.get('n_flagged', 0)} of {s['n_suspect']}",
                  help="Each suspect text's conformal p-value against the validation set, adjusted by "
                       "Benjamini-Hochberg (false-discovery rate at alpha). A weak target shifts the whole set a "
                       "little and flags few or no single texts: the collection test is the stronger claim.")
        m4.metric("Blind baseline AUC", "-" if s.get("blind_auc") is None else f"{s['blind_auc']:.3f}",
                  help="A text classifier that never queries the model, suspect vs validation, with a permutation "
                       "p-value (the IID guard: refused at p <= 0.05). Far below 0.5 happens by chance on small sets.")
        st.caption(md_text(f"Self-check (the same test on two random halves of the validation set, exchangeable by "
                           f"construction: it checks the code path, not the data): p = "
                           f"{p_number(s['self_check_p_value'], s.get('self_check_p_value_is_bound', False))}."))
        scores = res.scores[~res.scores["excluded"]]
        c1, c2 = st.columns(2)
        with c1:
            st.plotly_chart(plots.di_score_histogram(scores.loc[scores["set"] == "suspect", "score"],
                                                     scores.loc[scores["set"] == "validation", "score"]),
                            key="di_hist")
        with c2:
            st.plotly_chart(plots.di_power_curve(s["power_curve"], alpha=s["alpha"]), key="di_power")
        st.plotly_chart(plots.di_weights(s["weights"]), key="di_weights")
        if "p_adjusted" in res.scores:
            sus = res.scores[(res.scores["set"] == "suspect") & ~res.scores["excluded"]]
            top = sus.sort_values("p_value")[["text_id", "label_free_score", "p_value", "p_adjusted", "flagged"]]
            st.markdown(f"**Which texts stand out?** Each suspect text's conformal p-value against the validation set "
                        f"(a label-free score: exact for a text that is like the validation texts), adjusted across "
                        f"the {len(sus)} suspect texts ({'Benjamini-Hochberg' if s.get('correction') == 'bh' else 'Holm'}). "
                        f"A text's p-value cannot go below 1 / (1 + validation texts) = {s.get('unit_p_floor', 0):.2g}; "
                        "on a weak target few or no single texts stand out even when the collection does. "
                        "`s0001` is the first suspect text (after empty and duplicate texts are dropped).")
            st.dataframe(top.head(50), hide_index=True, key="di_units")
        st.caption("Weights of the test's combination on standardised features, fitted on all texts and kept "
                   "non-negative: every feature is oriented so that higher means more member-like, and the combined "
                   "score can only rise with a feature. Correlated features (Min-K% at neighbouring k) share weight; "
                   "a weight of 0 means the feature adds nothing the others do not.")
    else:
        st.caption(f"Blind baseline AUC {s.get('blind_auc'):.3f}: no model pass was made.")
    for n in res.report:
        st.caption(md_text(n))
    st.download_button("Download the per-text features and scores (CSV)", csv_text(res.scores).encode("utf-8"),
                       file_name="dataset_inference_scores.csv", mime="text/csv", key="di_download")
