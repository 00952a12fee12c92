"""Paste a paragraph or upload a book: every token coloured by the model's probability, every
attack's score placed on your latest calibration run, and the text's neighbours.

(Page logic lives in ``dashboard.inspect`` and ``dashboard.tokens``; what it computes through the engine
goes through ``mia_core.api.inspect``.)
"""
from __future__ import annotations

import streamlit as st

from dashboard.inspect import (
    analyse, analysis_estimate, attack_section, current_result, model_line, neighbour_section, options_section, summary_section,
    text_section,
    token_section,
)
from dashboard.sidebar import model_panel
from dashboard.ui import page_setup

page_setup("Inspect a text", ":material/manage_search:", keep=("inspect_",))
st.title("Inspect a text")  # drawn before the model loads: the sidebar shows the loading steps
st.markdown("How familiar is the model with this text? Every token is coloured by the probability the "
            "model gave it; the attack scores below say how member-like the whole text looks, compared "
            "with your latest calibration run on the same model.")
panel = model_panel(load=True)

# ------------------------------------------------------------------ input
source, text, text_error, text_name = text_section()
corpus, corpus_upload, do_lower = options_section()
if (line := analysis_estimate(panel, text, do_lower)):  # what pressing Analyse will cost, before it is pressed
    st.caption("Estimate: " + line)
st.markdown(model_line(panel))
if st.button("Analyse", type="primary", key="go_inspect") or st.session_state.pop("inspect_autorun", False):
    analyse(panel, text, text_error, text_name, do_lower)

lm = panel.target
res = current_result(lm, source, text)
if res is None:
    st.stop()
summary_section(res)

# ------------------------------------------------------------------ per-token view
token_section(lm, res, corpus, corpus_upload)

# ------------------------------------------------------------------ attack scores
run = attack_section(lm, res)

# ------------------------------------------------------------------ neighbours
st.subheader("Neighbours")
neighbour_section(lm, res, run)
