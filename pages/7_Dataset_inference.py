"""Dataset inference: was this collection used to train the model? (Maini et al. 2024, "LLM Dataset
Inference: Did you train on my dataset?", NeurIPS.)

A suspect set and a validation set of the same distribution, known not to be trained on, as texts or as
books; MIA features of every text (or every book's passages); one p-value: the one-sided permutation test
(primary) beside the paper's split t-test (texts), with the IID guard (the blind baseline), a self-check, and
each suspect text's or book's own adjusted p-value. Page logic: ``dashboard.dataset_inference`` (the result drawn by
``dashboard.di_results``); the run is built
through the front door ``mia_core.api.inference`` (``prepare_inference`` / ``execute_inference``); engine:
``mia_core.dataset_inference``.
"""
from __future__ import annotations

import streamlit as st

from dashboard import dataset_inference as DI
from dashboard.audit_jobs import audit_job
from dashboard.di_results import show_result
from dashboard.jobs import registry
from dashboard.sidebar import model_panel
from dashboard.ui import kept, md_text, page_setup, upload_files
from mia_core.api.inference import inference_demo

page_setup("Dataset inference", ":material/dataset:", keep=("di_",))  # inputs kept across pages
panel = model_panel(load=False)
st.title("Dataset inference")
st.markdown(
    "Was **this collection** used to train the model? A single text carries little signal; many texts together "
    "give one statistically valid answer (Maini et al. 2024). Bring a **suspect** set (the texts in question) and "
    "a **validation** set drawn from the *same distribution* and known **not** to be trained on (e.g. written "
    "after the model's cut-off, or held back before a release). Every text gets the membership scores of the "
    "existing attacks, read beyond what a model that never saw either set also sees (the *negative control*) and "
    "adjusted for text length; they are combined with non-negative weights (higher always means more member-like), and "
    "a one-sided permutation test asks whether the suspect set scores as *more* member-like: a set that scores "
    "differently, or less, is never called used. "
    "The test is only valid if the two sets are exchangeable: a text classifier that never queries the model "
    "(the blind baseline) checks that first, and the verdict is refused when it can tell the sets apart.  \n"
    "**Was my book used?** Choose *Books*: each book is cut into passages and is one unit of the test (its "
    "passages share an author and names, so they are not counted as separate evidence), and every suspect book "
    "gets its own p-value."
)

# ------------------------------------------------------------------ data
st.subheader("1 · Texts or books")
demo = inference_demo()  # None when the demo is not installed
unit = kept(st.radio, "Unit of the test", "di_unit", "texts", options=list(DI.UNITS), horizontal=True,
               format_func=DI.UNITS.get,
               help="Texts: each text is one unit. Books: one book per file, cut into passages; the book is the unit.")
if unit == "books":
    opts = (["demo", "demo_null"] if DI.book_demo_available(demo) else []) + ["upload"]
    source = kept(st.radio, "Books from", "di_book_source", opts[0], options=opts, horizontal=True,
                     label_visibility="collapsed", format_func=DI.BOOK_SOURCES.get)
else:
    opts = (["demo", "demo_null"] if demo else []) + ["upload", "paste"]
    source = kept(st.radio, "Texts from", "di_source", opts[0], options=opts, horizontal=True,
                     label_visibility="collapsed", format_func=DI.TEXT_SOURCES.get)
DI.follow_book_demo(unit, source)
src = DI.Source(unit, source)
if unit == "texts" and source == "demo":
    st.caption("The calibration demo's 100 members of the demo target (a SmolLM2 fine-tune) as the suspect set, its "
               "100 non-members as validation: the answer should be *used*. The demo target is audited.")
elif unit == "texts" and source == "demo_null":
    st.caption("The demo's 100 population texts (never trained on) as the suspect set, its 100 non-members as "
               "validation: the answer should be *not shown*. The demo target is audited.")
elif source == "demo":
    st.caption("The book demo (the Document audit's): 20 member documents of the demo target as the suspect books, "
               "its 20 non-member documents as validation: the answer should be *used*. Each document is five "
               "demo passages of one novel (about 240 words), so **passage words is set to 64** below (the "
               "default 256 would read each document as a single passage). The demo target is audited.")
elif source == "demo_null":
    st.caption("The book demo's 20 non-member documents (never trained on) in two halves, alternate documents on "
               "each side (every novel on both): the answer should be *not shown*. **Passage words is set to 64** "
               "below (the documents are about 240 words). The demo target is audited.")
elif source == "upload":
    left = DI.uploads_left()  # before the uploaders: their state is gone when the page or the source was left
    u1, u2 = st.columns(2)
    books = unit == "books"
    kind = dict(type=DI.BOOK_TYPES if books else DI.TEXT_TYPES)
    src.suspect_files = upload_files(u1, "Suspect books (.txt, one book per file, or a .zip)" if books else
                                     "Suspect set (the texts in question)", key="di_suspect_up", **kind)
    src.validation_files = upload_files(
        u2, "Validation books (.txt or a .zip: same kind, known not trained on)" if books else
        "Validation set (same distribution, known not trained on)", key="di_validation_up", **kind)
    if books:
        src.strip = kept(st.checkbox, "Strip Project Gutenberg headers and footers", "di_strip", True)
    DI.upload_note(src, left)
else:
    p1, p2 = st.columns(2)
    src.suspect_text = kept(p1.text_area, "Suspect texts: one per line", "di_suspect_text", "", height=160)
    src.validation_text = kept(p2.text_area, "Validation texts: one per line", "di_validation_text", "", height=160)

# ------------------------------------------------------------------ settings
st.subheader("2 · Test settings")
a1, a2, a3, a4 = st.columns(4)

bounds = DI.limits  # the options' domains (mia_core.dataset_inference.options)
alpha = kept(a1.number_input, "α (significance level)", "di_alpha", float(DI.default("di_alpha")), **bounds("di_alpha"),
                step=0.01, format="%.4f", help="The verdict is 'used' when the p-value is at most α.")
folds = kept(a2.number_input, "Folds", "di_folds", DI.default("di_folds"), **bounds("di_folds"),
                help="Cross-fitting folds: each unit is scored by a model fitted on the other folds.")
perms = kept(a3.number_input, "Permutations", "di_perms", DI.default("di_perms"), **bounds("di_perms"), step=1000,
                help="Label permutations: p-values down to 1 / (permutations + 1).")
seed = kept(a4.number_input, "Seed", "di_seed", DI.default("di_seed"), **bounds("di_seed"))
f1, f2 = st.columns([3, 2])
features = kept(f1.text_input, "Features", "di_features", "default",
                   help="default: loss, zlib, Min-K% and Min-K%++ at k = 0.05 ... 0.6, DC-PDD (+ the reference "
                        "attack when the sidebar has a reference model); all; or a comma list "
                        "(e.g. default,lowercase).")
correction = kept(f2.selectbox, f"Correction across the suspect {unit}", "di_correction", "bh",
                     options=list(DI.CORRECTIONS), format_func=DI.CORRECTIONS.get,
                     help="How each suspect unit's own p-value is adjusted for testing them all.")
c1, c2 = st.columns([3, 2])
control = kept(c1.selectbox, "Negative control", "di_control", "auto", options=["auto", "none", "named"],
               format_func={"auto": "auto: the reference model, else the target's base, else the embedded SmolLM2",
                            "none": "none: assume the sets differ in nothing a model sees but training",
                            "named": "a model I name"}.get,
               help="A model that never saw either set. Every feature is read as the target's minus the control's, and "
                    "the verdict is refused when the control alone tells the sets apart: a difference such a model "
                    "also sees (length, style, topic) is not evidence of training.")
if control == "named":  # named like the sidebar's model: checked when Run is pressed, before any model loads
    control = kept(c1.text_input, "Control model", "di_control_model", "",
                   placeholder="a hub id, a folder, a make-target folder, a .gguf file or smollm2",
                   help="Not the target itself; with a reference model in the sidebar, the reference is the "
                        "control (name the same model, or clear the sidebar's reference).").strip()
adjust = kept(c2.checkbox, "Adjust every feature for text length", "di_adjust_length", True,
              help="Each feature replaced by its residual from one pooled fit on the texts' lengths in tokens, words "
                   "and characters (reads no label, so the test stays exact). Off: the guard refuses sets of "
                   "different lengths.")
settings = DI.Settings(float(alpha), int(folds), int(perms), int(seed), features, correction, control=control,
                       adjust_length=bool(adjust))
if unit == "books":
    b1, b2 = st.columns(2)
    settings.passage_words = int(kept(b1.number_input, "Passage words", "di_passage_words", DI.PASSAGE_WORDS,
                                         **bounds("di_passage_words"), step=16,
                                         help="Words per passage (the CLI's --passage-words, 256 by default)."))
    settings.max_passages = int(kept(b2.number_input, "Max passages a book", "di_max_passages", DI.MAX_PASSAGES,
                                        **bounds("di_max_passages"),
                                        help="At most this many passages, spread over the book; every book is read "
                                             "as the same number (the shortest book's count)."))

reg = registry()
job = reg.latest("di")  # the latest dataset inference, this tab's or another's (one runs at a time)
busy = job is not None and job.running
st.markdown(DI.model_line(src, settings, demo, panel))
blocked = "" if busy else DI.blocker(src, settings, demo, panel)
if blocked:  # a known limit said before Run, which stays off; the previous result is kept
    st.caption(f":material/block: **Run is not available yet:** {md_text(blocked)}")
if not busy and not blocked and (line := DI.estimate(src, settings, demo, panel)):
    st.caption("Estimate: " + line)  # above Run, as on the other pages (issue 53 item 9)
now = DI.signature(src, settings, demo, panel)
done = audit_job(prefix="di", kind="di", button="Run dataset inference", clear=(DI.RESULT_KEY,),
                 build=lambda: DI.build_job(src, settings, demo, panel, now), disabled=bool(blocked),
                 take_foreign=st.session_state.get(DI.RESULT_KEY) is None)
if done is not None:
    DI.finished(done)

# ------------------------------------------------------------------ results
if (stored := st.session_state.get(DI.RESULT_KEY)) is not None:
    show_result(stored, now)
