"""Document-level membership inference (Meeus et al. 2024, "Did the Neurons Read your Book?").

Upload member and non-member books (several .txt files or a .zip each, or give folders on the
server), choose the context, normalisations and feature extractors, and the page runs the audit
(``mia_core.api.documents``: ``prepare_documents`` then ``execute_documents``): per-fold ROC curves, the
normalisation × feature extractor table (mean ± std AUC, TPR at 1 % and 10 % FPR over the folds), the
partial-document curve, the optional precision table (§6.4, Table 5) and a per-token strip of any book.
The page's logic is in ``dashboard.documents``; its Run button and job in ``dashboard.audit_jobs``.
"""
from __future__ import annotations

import streamlit as st

from dashboard.audit_jobs import audit_job
from dashboard.documents import (PRECISION_KEY, RESULT_KEY, SAVED_KEY, SIG_KEY, SIG_WORDS, STARTED_SIG_KEY,
                                 books_section, build_job, estimate_line, input_signature, model_line,
                                 settings_section, show_results)
from dashboard.saved_runs import REOPENED, reopened_line, saved_line, take_reopened
from dashboard.sidebar import model_panel
from dashboard.stale import result_box, stale_parts
from dashboard.ui import AUC_EXPLAINER, fmt_seconds, job_origin, page_setup

page_setup("Document audit", ":material/menu_book:", keep=("doc_",))  # inputs kept across pages
st.title("Document audit")
st.markdown(
    "Was a whole **book** (or long document) in the training data? Following Meeus et al. (2024), every "
    "token's probability is normalised by how common the token is, turned into a histogram or summary "
    "statistics per book, and a random forest learns to tell member books from non-member books under "
    "k-fold cross-validation. " + AUC_EXPLAINER
)
panel = model_panel(load=True)  # after the title: the sidebar shows the loading steps

if (handed := take_reopened("documents", "doc")) is not None:  # a saved run, from the Runs page
    st.session_state.update({RESULT_KEY: handed, PRECISION_KEY: None, SAVED_KEY: None, SIG_KEY: None})

books = books_section()
cfg = settings_section()
if line := estimate_line(books, cfg, panel):  # what pressing Run will cost, before it is pressed
    st.caption("Estimate: " + line)
st.markdown(model_line(books, panel))
now_sig = input_signature(books, cfg, panel)


def _build():
    st.session_state[STARTED_SIG_KEY] = now_sig  # what this run answers (the result is labelled when they change)
    return build_job(books, cfg, panel)


reopened = REOPENED.format(prefix="doc")  # set while the page shows a run reopened from Runs
done = audit_job(prefix="doc", kind="documents", button="Run the document audit",
                 clear=(RESULT_KEY, PRECISION_KEY, SAVED_KEY, SIG_KEY, reopened),
                 take_foreign=not st.session_state.get(reopened), build=_build)
if done is not None:
    st.session_state[RESULT_KEY] = done.result["result"]
    st.session_state[PRECISION_KEY] = done.result["precision"]
    st.session_state[SAVED_KEY] = done.result.get("record")
    # another tab's run: its inputs are not known here (the page says it started in another tab)
    st.session_state[SIG_KEY] = None if job_origin(done) else st.session_state.get(STARTED_SIG_KEY)
    st.caption(f"Done in {fmt_seconds(done.elapsed)}.")

res = st.session_state.get(RESULT_KEY)
if res is not None:
    reopened_line("doc")
    saved_line(st.session_state.get(SAVED_KEY) or {})
    stale = stale_parts(st.session_state.get(SIG_KEY), now_sig, SIG_WORDS)
    with result_box(stale, button="Run the document audit",
                    title=f"{res.model.get('name')}, {len(res.labels)} books"):
        show_results(res, st.session_state.get(PRECISION_KEY))
