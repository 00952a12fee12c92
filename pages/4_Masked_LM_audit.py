"""Masked-LM membership inference (Mireshghallah et al. 2022, "Quantifying Privacy Risks of Masked
Language Models Using Membership Inference Attacks").

A text's energy under a masked LM is the negative log-likelihood of K random masking patterns
(§2.3), summed over the masked tokens (recipe "sum", the default) or averaged per masked token
(recipe "released": the authors' released code as issue 28 describes it); the
**likelihood-ratio** attack compares the target's energy with a reference model's, the **loss**
attack uses the target's alone. A population of texts known not to be in the
training data sets the threshold that flags a fraction α of it (§2.4); precision and recall at
that threshold are measured on the members and non-members, and per group (e.g. patient) when a
group column exists (§4.2). Engine: ``mia_core.api.mlm`` (``prepare_mlm``, ``execute_mlm``); the page's logic is
in ``dashboard.mlm``, its Run button and job in ``dashboard.audit_jobs``.
"""
from __future__ import annotations

import streamlit as st

from dashboard.audit_jobs import audit_job, keep_finished
from dashboard.mlm import (RESULT_KEY, SIG_WORDS, STARTED_SIG_KEY, build_job, estimate_line, input_signature,
                           model_line, models_section, settings_section, show_results, texts_section)
from dashboard.saved_runs import REOPENED, reopened_line, saved_line, take_reopened
from dashboard.sidebar import model_panel
from dashboard.stale import result_box, stale_parts
from dashboard.ui import AUC_EXPLAINER, page_setup

page_setup("Masked-LM audit", ":material/healing:", keep=("mlm_",))
panel = model_panel(load=False, need_reference=False)
st.title("Masked-LM audit")
st.markdown(
    "Membership inference against **masked** language models (BERT-style), after Mireshghallah et al. (2022). "
    "Each text is scored by its energy under K random maskings; the likelihood-ratio attack divides out a "
    "reference model's energy. A **population** of texts known not to be in the training data fixes the "
    "threshold (it flags a share α of the population); precision and recall at that threshold are then "
    "measured on your members and non-members. " + AUC_EXPLAINER
)

if (handed := take_reopened("mlm", "mlm")) is not None:  # a saved run, from the Runs page
    st.session_state[RESULT_KEY] = {"result": handed, "notes": [], "seconds": None, "signature": None}

models = models_section()
texts = texts_section()
cfg = settings_section()
if line := estimate_line(models, texts, cfg, panel):  # what pressing Run will cost, before it is pressed
    st.caption("Estimate: " + line)
st.markdown(model_line(models, texts))
now_sig = input_signature(models, texts, cfg, panel)


def _build():
    st.session_state[STARTED_SIG_KEY] = now_sig  # what this run answers (the result is labelled when they change)
    return build_job(models, texts, cfg, panel)


reopened = REOPENED.format(prefix="mlm")  # set while the page shows a run reopened from Runs
done = audit_job(prefix="mlm", kind="mlm", button="Run the masked-LM audit", clear=(RESULT_KEY, reopened),
                 take_foreign=not st.session_state.get(reopened), build=_build)
if done is not None:
    keep_finished(done, RESULT_KEY, STARTED_SIG_KEY)

stored = st.session_state.get(RESULT_KEY)
if stored is not None:
    reopened_line("mlm")
    saved_line(stored.get("record") or {})
    s = stored["result"].settings
    with result_box(stale_parts(stored.get("signature"), now_sig, SIG_WORDS), button="Run the masked-LM audit",
                    title=f"{s.get('n_members')} members + {s.get('n_nonmembers')} non-members, K = {s.get('k')}"):
        show_results(stored)
