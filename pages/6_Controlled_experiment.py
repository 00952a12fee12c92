"""Controlled experiment: build a target model whose training data you know.

Split a corpus (yours or the bundled demo corpus) at random into members, non-members and a
population, fine-tune a base model on the members only (``mia_core.targets.make_target``,
LoRA or full fine-tuning), then audit it on the calibration page, where membership is ground
truth. The target folder and the split files are handed over in ``st.session_state``:

* ``controlled_target``      the target folder (str path; loads like any local model)
* ``controlled_members``     members.txt (one text per line; str path)
* ``controlled_nonmembers``  nonmembers.txt
* ``controlled_population``  population.txt (None when the population share is 0)
* ``controlled_reference``   the base model spec (the natural reference model)
* ``controlled_log``         the training log returned by ``make_target``

The page's logic is in ``dashboard.controlled``; the engine's part in ``mia_core.api.targets``.
"""
from __future__ import annotations

import time

import streamlit as st

from dashboard.audit_jobs import audit_job
from dashboard.controlled import UPLOAD_TYPES, build_job, estimate_line, show_target, take_built
from dashboard.sidebar import model_panel
from dashboard.ui import page_setup, upload_files
from mia_core.api.data import SplitOptions
from mia_core.targets.demo import demo_corpus_files
from mia_core.targets.options import TargetOptions

page_setup("Controlled experiment", ":material/science:", keep=("cx_",))  # inputs kept across pages
panel = model_panel(load=False)
st.title("Controlled experiment")
st.markdown(
    "Know the ground truth: split a corpus at random into **members**, **non-members** and a **population**, "
    "fine-tune a base model on the members only, and audit the result on the calibration page. Held-out "
    "non-members come from the same corpus, so any difference the attacks find is membership, not a shift "
    "in style or era."
)

# ------------------------------------------------------------------ corpus
st.subheader("1 · Corpus")
demo_files = [p for p in demo_corpus_files() if p.stem in ("members", "nonmembers", "population")]
sources = (["demo"] if demo_files else []) + ["upload"]
source = st.radio("Corpus", sources, horizontal=True, key="cx_source", label_visibility="collapsed",
                  format_func={"demo": "Bundled demo corpus", "upload": "Upload a corpus"}.get)
uploads = None
mode = "auto"
if source == "demo":
    st.caption(f"The demo corpus: the {len(demo_files)} text files in `mia_core/assets/demo` pooled and re-split at random.")
else:
    uploads = upload_files(st, "Corpus: .txt (one text per line or blank-line paragraphs), .csv/.tsv/.jsonl/.json "
                           "with a text column, or a .zip of .txt files", type=UPLOAD_TYPES, key="cx_upload")
    mode = st.selectbox(".txt files hold", ["auto", "lines", "blank"], key="cx_mode",
                        format_func={"auto": "auto-detect", "lines": "one text per line",
                                     "blank": "paragraphs separated by blank lines"}.get)

# ------------------------------------------------------------------ split
st.subheader("2 · Split")
r1, r2, r3 = st.columns(3)
# the split's declared options (mia_core.data.SplitOptions): their defaults, limits and help
p_mem = r1.number_input("Members (%)", value=SplitOptions.default("members_pct"), step=5, key="cx_members_pct",
                        help=SplitOptions.help("members_pct"), **SplitOptions.widget_limits("members_pct"))
p_non = r2.number_input("Non-members (%)", value=SplitOptions.default("nonmembers_pct"), step=5,
                        key="cx_nonmembers_pct", help=SplitOptions.help("nonmembers_pct"),
                        **SplitOptions.widget_limits("nonmembers_pct"))
p_pop = r3.number_input("Population (%)", value=SplitOptions.default("population_pct"), step=5,
                        key="cx_population_pct", help=SplitOptions.help("population_pct"),
                        **SplitOptions.widget_limits("population_pct"))
max_texts = st.number_input("Use at most this many texts of the corpus (0 = all)", value=SplitOptions.default("max_texts"),
                            key="cx_max_texts", help=SplitOptions.help("max_texts") + "; fine-tuning time grows with "
                                                                                    "the number of member texts",
                            **SplitOptions.widget_limits("max_texts"))

# ------------------------------------------------------------------ fine-tuning
st.subheader("3 · Fine-tuning")
f1, f2, f3, f4 = st.columns(4)
base_choice = f1.selectbox("Base model", ["smollm2", "custom"], key="cx_base",
                           format_func={"smollm2": "SmolLM2-135M", "custom": "Other…"}.get,
                           help="SmolLM2-135M: the embedded SmolLM2-135M-Instruct (no download). Other…: a hub id "
                                "or a local folder, typed in the box below.")
base_custom = ""
if base_choice == "custom":
    base_custom = f1.text_input("Base model: hub id or local folder", key="cx_base_custom")
method = f2.selectbox("Method", ["lora", "full"], key="cx_method",
                      format_func={"lora": "LoRA adapter", "full": "full fine-tuning"}.get)
epochs = f3.number_input("Epochs", **TargetOptions.widget_limits("epochs"), value=TargetOptions.default("epochs"),
                         key="cx_epochs",
                         help="More epochs memorise more: the attacks get easier.")
lr_text = f4.text_input("Learning rate (blank: 1e-3 for LoRA, 1e-4 for full)", key="cx_lr")
g1, g2, g3 = st.columns(3)
seed = g1.number_input("Seed (split and training)", **TargetOptions.widget_limits("seed"),
                       value=TargetOptions.default("seed"), key="cx_seed")
max_length = g2.number_input("Max tokens per text", **TargetOptions.widget_limits("max_length"),
                             value=TargetOptions.default("max_length"), key="cx_max_length")
batch_size = g3.number_input("Batch size", **TargetOptions.widget_limits("batch_size"),
                             value=TargetOptions.default("batch_size"), key="cx_batch")
name = st.text_input("Experiment name (a folder under the dashboard's cache)", key="cx_name",
                     value=f"controlled-{time.strftime('%Y%m%d-%H%M%S')}")

cfg = {"source": source, "demo_files": demo_files, "uploads": uploads, "mode": mode,
       "shares": (p_mem, p_non, p_pop), "max_texts": max_texts, "base_choice": base_choice,
       "base_custom": base_custom, "method": method, "epochs": epochs, "lr_text": lr_text, "seed": seed,
       "max_length": max_length, "batch_size": batch_size, "name": name}
if line := estimate_line(cfg, panel):  # what pressing Build will cost, before it is pressed
    st.caption("Estimate: " + line)
done = audit_job(prefix="cx", kind="controlled", button="Build the target", clear=(),
                 build=lambda: build_job(cfg, panel))
if done is not None:  # the build's target and split, handed over (another tab's build too: it is on disk)
    take_built(done.result)

# ------------------------------------------------------------------ result and hand-over
show_target()
