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
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from dashboard.sidebar import model_panel
from dashboard.ui import fmt_num, fmt_seconds, page_setup, show_error
from mia_core.reports import plots
from mia_core.errors import DataError, MiaError, SettingsError
from mia_core.models import EMBEDDED_NAME
from mia_core.paths import cache_subdir
from mia_core.data import split_corpus
from mia_core.data.demo import demo_corpus_files

UPLOAD_TYPES = ["txt", "text", "csv", "tsv", "jsonl", "json", "parquet", "arrow", "feather", "zip"]
CALIBRATION_PAGE = "pages/2_Calibration_run.py"
KEYS = ("controlled_target", "controlled_members", "controlled_nonmembers", "controlled_population",
        "controlled_reference", "controlled_log")

page_setup("Controlled experiment", ":material/science:")
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
    uploads = st.file_uploader("Corpus: .txt (one text per line or blank-line paragraphs), .csv/.tsv/.jsonl/.json "
                               "with a text column, or a .zip of .txt files", type=UPLOAD_TYPES,
                               accept_multiple_files=True, key="cx_upload")
    mode = st.selectbox(".txt files hold", ["auto", "lines", "blank"], key="cx_mode",
                        format_func={"auto": "auto-detect", "lines": "one text per line",
                                     "blank": "paragraphs separated by blank lines"}.get)

# ------------------------------------------------------------------ split
st.subheader("2 · Split")
r1, r2, r3 = st.columns(3)
p_mem = r1.number_input("Members (%)", min_value=0, max_value=100, value=40, step=5, key="cx_members_pct",
                        help="Trained on.")
p_non = r2.number_input("Non-members (%)", min_value=0, max_value=100, value=40, step=5, key="cx_nonmembers_pct",
                        help="Never trained on; evaluated against the members.")
p_pop = r3.number_input("Population (%)", min_value=0, max_value=100, value=20, step=5, key="cx_population_pct",
                        help="Never trained on; kept apart to set decision thresholds.")
max_texts = st.number_input("Use at most this many texts of the corpus (0 = all)", min_value=0, value=0,
                            key="cx_max_texts", help="Fine-tuning time grows with the number of member texts.")

# ------------------------------------------------------------------ fine-tuning
st.subheader("3 · Fine-tuning")
f1, f2, f3, f4 = st.columns(4)
base_choice = f1.selectbox("Base model", ["smollm2", "custom"], key="cx_base",
                           format_func={"smollm2": "Embedded SmolLM2-135M-Instruct",
                                        "custom": "Hub id or local folder…"}.get)
base_custom = ""
if base_choice == "custom":
    base_custom = f1.text_input("Base model: hub id or local folder", key="cx_base_custom")
method = f2.selectbox("Method", ["lora", "full"], key="cx_method",
                      format_func={"lora": "LoRA adapter", "full": "full fine-tuning"}.get)
epochs = f3.number_input("Epochs", min_value=0, max_value=100, value=3, key="cx_epochs",
                         help="More epochs memorise more: the attacks get easier.")
lr_text = f4.text_input("Learning rate (blank: 1e-3 for LoRA, 1e-4 for full)", key="cx_lr")
g1, g2, g3 = st.columns(3)
seed = g1.number_input("Seed (split and training)", min_value=0, value=0, key="cx_seed")
max_length = g2.number_input("Max tokens per text", min_value=2, max_value=4096, value=256, key="cx_max_length")
batch_size = g3.number_input("Batch size", min_value=1, max_value=256, value=8, key="cx_batch")
name = st.text_input("Experiment name (a folder under the dashboard's cache)", key="cx_name",
                     value=f"controlled-{time.strftime('%Y%m%d-%H%M%S')}")

build = st.button("Build the target", type="primary", key="cx_go")


def _corpus_texts() -> tuple[list[str], list[str]]:
    from mia_core.data import read_texts

    notes: list[str] = []
    if source == "demo":
        items, m = demo_files, "lines"
    else:
        if not uploads:
            raise DataError("upload a corpus first (or choose the bundled demo corpus).")
        items, m = list(uploads), mode
    texts, seen = [], set()
    for it in items:
        for r in read_texts(it, mode=m, notes=notes):
            t = " ".join(r.text.split())  # one text per line in the split files
            if t and t not in seen:
                seen.add(t)
                texts.append(t)
    # e.g. a file read as Windows-1252: shown even when a later check fails; the per-file "read N texts" lines
    # are summed into one line by the caller, which knows how many texts the experiment uses
    for n_ in notes:
        if not re.match(r"^.*: read \d+ texts", n_):
            st.caption(n_)
    return texts, notes


def _parse_lr(text: str) -> float | None:
    if not text.strip():
        return None
    try:
        v = float(text)
    except ValueError:
        raise SettingsError(f"the learning rate must be a number such as 1e-3, got {text.strip()!r}.") from None
    if not (v > 0 and np.isfinite(v)):
        raise SettingsError(f"the learning rate must be a positive number, got {text.strip()!r}.")
    return v


def _plan() -> dict:
    """Validate every input and split the corpus (raises MiaError); nothing is trained yet."""
    if int(epochs) < 1:
        raise SettingsError("train for at least 1 epoch.")
    lr = _parse_lr(lr_text)
    base = EMBEDDED_NAME if base_choice == "smollm2" else base_custom.strip()
    if not base:
        raise SettingsError("type a hub id or a local folder for the base model.")
    if base != EMBEDDED_NAME:
        from mia_core.models.hub import locate

        locate(base)  # a path that does not exist: ModelError now, before anything is written
    folder_name = name.strip()
    if not folder_name or not re.fullmatch(r"[A-Za-z0-9._-]+", folder_name) or folder_name.startswith("."):
        raise SettingsError("the experiment name may hold only letters, digits, '.', '_' and '-'.")
    out_root = cache_subdir("controlled") / folder_name
    if out_root.exists() and any(out_root.iterdir()):
        raise SettingsError(f"an experiment named {folder_name!r} exists already; choose another name.")
    texts, notes = _corpus_texts()
    total = len(texts)
    if int(max_texts) > 0:
        texts = texts[: int(max_texts)] if len(texts) > int(max_texts) else texts
    n = len(texts)
    files = sum(bool(re.match(r"^.*: read \d+ texts", n_)) for n_ in notes)
    st.caption(f"Read {total:,} distinct texts" + (f" from {files} files" if files > 1 else "")
               + (f"; this experiment uses the first {n:,}." if n < total else "."))
    sets = split_corpus(texts, (int(p_mem), int(p_non), int(p_pop)), int(seed))
    return {"sets": sets, "notes": notes, "base": base, "lr": lr, "out_root": out_root}


if build:
    created: Path | None = None
    try:
        plan = _plan()
        from mia_core.targets import make_target

        out_root: Path = plan["out_root"]
        if not out_root.exists():
            created = out_root
        out_root.mkdir(parents=True, exist_ok=True)
        files = {}
        for role, texts in plan["sets"].items():
            if texts:
                files[role] = out_root / f"{role}.txt"
                files[role].write_text("\n".join(texts) + "\n", encoding="utf-8")
        st.caption(f"Split: {len(plan['sets']['members'])} members · {len(plan['sets']['nonmembers'])} non-members · "
                   f"{len(plan['sets']['population'])} population texts, written to `{out_root}`.")
        bar = st.progress(0.0, text="loading the base model…")

        def progress(message: str, fraction: float) -> None:
            bar.progress(max(0.0, min(1.0, float(fraction))), text=str(message)[:160])

        t0 = time.time()
        log = make_target(plan["sets"]["members"], base=plan["base"], out_dir=out_root / "target", method=method,
                          epochs=int(epochs), lr=plan["lr"], seed=int(seed),
                          heldout_texts=plan["sets"]["nonmembers"], progress=progress, max_length=int(max_length),
                          batch_size=int(batch_size), device=panel.device,
                          data_files={k: str(v) for k, v in files.items()})
        bar.progress(1.0, text=f"target built in {fmt_seconds(time.time() - t0)}")
        st.session_state["controlled_target"] = str(out_root / "target")
        st.session_state["controlled_members"] = str(files["members"])
        st.session_state["controlled_nonmembers"] = str(files["nonmembers"])
        st.session_state["controlled_population"] = str(files["population"]) if "population" in files else None
        st.session_state["controlled_reference"] = plan["base"]
        st.session_state["controlled_log"] = log
        created = None
    except MiaError as e:
        show_error(e)
    finally:
        if created is not None:  # the build failed: drop the half-made experiment so its name stays free
            import shutil

            shutil.rmtree(created, ignore_errors=True)

# ------------------------------------------------------------------ result and hand-over
if st.session_state.get("controlled_target"):
    st.subheader("4 · Your target")
    log = st.session_state.get("controlled_log") or {}
    hist = pd.DataFrame(log.get("history") or [])
    final = log.get("final") or {}
    k1, k2, k3 = st.columns(3)
    k1.metric("Loss on the members", fmt_num(final.get("train_loss")))
    k2.metric("Loss on the non-members", fmt_num(final.get("heldout_loss")))
    gap = None
    if final.get("train_loss") is not None and final.get("heldout_loss") is not None:
        gap = final["heldout_loss"] - final["train_loss"]
    k3.metric("Generalisation gap", fmt_num(gap), help="Held-out loss minus member loss: the larger, the easier "
              "membership inference.")
    if len(hist):
        st.plotly_chart(plots.loss_curve(hist), key="cx_loss_chart")
        st.caption("The members' curve is the mean training loss over each epoch, as the model was still learning "
                   "them (and with dropout, if the model uses it); the figures above are both sets scored once more "
                   "after training, so the members' final loss sits below their last point.")
    st.success(f"Target folder: `{st.session_state['controlled_target']}` — members "
               f"`{st.session_state['controlled_members']}`, non-members `{st.session_state['controlled_nonmembers']}`.")
    if st.button("Use this target (and its base as reference) in the sidebar", key="cx_use"):
        st.session_state["mp_target"] = "custom"
        st.session_state["mp_target_custom"] = st.session_state["controlled_target"]
        ref = st.session_state.get("controlled_reference")
        if ref == EMBEDDED_NAME:
            st.session_state["mp_reference"] = "smollm2"
        elif ref:
            st.session_state["mp_reference"] = "custom"
            st.session_state["mp_reference_custom"] = ref
        st.rerun()
    st.page_link(CALIBRATION_PAGE, label="Audit it on the calibration page", icon=":material/monitoring:")
    st.caption("On the calibration page, choose \"The controlled experiment's split\" as data (no upload needed: "
               "the population file sets thresholds), with this target and its base model as reference.")
