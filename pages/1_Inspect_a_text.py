"""Paste a paragraph or upload a book: every token coloured by the model's probability, every
attack's score placed on your latest calibration run, and the text's neighbours.

(Page logic lives in ``dashboard.inspect`` and ``dashboard.tokens``.)
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import tokens
from dashboard.inspect import (
    attack_scores, calibration_runs, neighbour_section, placement_rows, reference_counts, related_run,
)
from dashboard.options import worded
from dashboard.sidebar import model_panel, switch_target, target_choice
from dashboard.ui import fmt_num, fmt_pct, page_setup, show_error, stage_progress
from mia_core.attacks.base import scored_tokens
from mia_core.reports import plots
from mia_core.cache import text_hash
from mia_core.documents.dictionaries import token_frequency
from mia_core.errors import MiaError
from mia_core.data.demo import demo_corpus_files

DEFAULT_TEXT = (
    "Alice was beginning to get very tired of sitting by her sister on the bank, and of having nothing "
    "to do: once or twice she had peeped into the book her sister was reading, but it had no pictures or "
    "conversations in it, 'and what is the use of a book,' thought Alice 'without pictures or "
    "conversations?'"
)

page_setup("Inspect a text", ":material/manage_search:")
st.title("Inspect a text")  # drawn before the model loads: the sidebar shows the loading steps
st.markdown("How familiar is the model with this text? Every token is coloured by the probability the "
            "model gave it; the attack scores below say how member-like the whole text looks, compared "
            "with your latest calibration run on the same model.")
panel = model_panel(load=True)

# ------------------------------------------------------------------ input
source = st.radio("Text", ["Paste a paragraph", "Upload a .txt file"], horizontal=True, key="inspect_source",
                  label_visibility="collapsed")
text, text_error, text_name = "", None, "pasted text"
if source == "Paste a paragraph":
    # Streamlit forgets a widget's value when the user leaves the page: the text is kept apart, so a
    # pasted paragraph is still there (and is what "switch the target and compare" analyses) on return
    if "inspect_text" not in st.session_state:
        st.session_state["inspect_text"] = st.session_state.get("inspect_text_kept", DEFAULT_TEXT)
    text = st.text_area("Text to inspect", height=170, key="inspect_text",
                        help="A paragraph works best; long texts are scored in windows of the model's context.")
    st.session_state["inspect_text_kept"] = text
else:
    up = st.file_uploader("A .txt file (a whole book works: it is scored in windows)", type=["txt", "text", "md"],
                          key="inspect_upload")
    strip = st.checkbox("Strip a Project Gutenberg header and footer", value=True, key="inspect_strip")
    if up is not None:
        from mia_core.data import MAX_BYTES, decode_bytes
        from mia_core.data.decoding import _read_bytes
        from mia_core.documents import strip_gutenberg

        try:
            read_notes: list[str] = []
            _, raw = _read_bytes(up, MAX_BYTES)  # the same size limit as every other reader
            text, _ = decode_bytes(raw, up.name, read_notes)
            for n_ in read_notes:  # e.g. read as Windows-1252
                st.caption(n_)
            if strip:
                text, info = strip_gutenberg(text)
            text = text.strip()
            text_name = up.name
        except MiaError as e:
            text_error = worded(e)

with st.expander("Options", expanded=False):
    corpus_opts = (["demo"] if demo_corpus_files() else []) + ["self", "upload"]
    corpus_labels = {"demo": "the bundled demo corpus", "upload": "a corpus I upload (.txt)", "self": "this text itself"}
    corpus = st.radio("Token frequencies R^TF (for RatioNorm, MaxNorm and rarity) come from", corpus_opts,
                      format_func=corpus_labels.get, key="inspect_corpus",
                      help="Meeus et al. 2024 §4.2.1: a token's frequency in a reference corpus of similar text.")
    corpus_upload = None
    if corpus == "upload":
        corpus_upload = st.file_uploader("Reference corpus (.txt)", type=["txt", "text", "md"], key="inspect_corpus_up")
    do_lower = st.checkbox("Score the lower-cased text too (lowercase attack; doubles the time)", value=True,
                           key="inspect_lower")

analyse = st.button("Analyse", type="primary", key="inspect_go") or st.session_state.pop("inspect_autorun", False)

lm, ref = panel.target, panel.reference
if analyse:
    if text_error:
        show_error(text_error)
    elif not text.strip():
        show_error("the text is empty: paste a paragraph or upload a .txt file first.")
    elif lm is None:
        show_error(f"no target model loaded: {panel.target_error or 'choose one in the sidebar'}")
    else:
        from mia_core.pipeline import text_passes
        from mia_core.stats import StatsSettings, scores_first_token

        slot = st.empty()
        cb = stage_progress(slot.container())
        try:
            passes = text_passes([text], lm, reference=ref, lower=do_lower, progress=cb)
            stats = passes.target[0]
            if stats.n_predicted < 2:
                raise MiaError("the text is too short: at least two tokens are needed.")
            lower = passes.target_lower[0] if do_lower else None
            rstats = passes.reference[0] if ref is not None else None  # the tokens the target scores
            st.session_state["inspect_result"] = {
                "hash": text_hash(text), "text": text, "name": text_name, "identity": lm.identity,
                "ref_identity": ref.identity if ref is not None else None, "stats": stats, "lower": lower,
                "ref": rstats, "same_tokenizer": lm.same_tokenizer(ref) if ref is not None else True,
                "first_token_default": scores_first_token(lm, StatsSettings()),
            }
            st.session_state.pop("inspect_neighbours", None)
            slot.empty()
        except MiaError as e:
            show_error(e)

res = st.session_state.get("inspect_result")
if res is None or lm is None or res["identity"] != lm.identity:
    st.info("Press **Analyse** to score the text with the target model.")
    st.stop()
if source == "Paste a paragraph" and text.strip() and text_hash(text) != res["hash"]:
    st.caption("The text changed since the last analysis: press **Analyse** to update.")

stats, rtext = res["stats"], res["text"]
n = stats.n_tokens
p = np.exp(stats.logprob.astype(np.float64))
c = st.columns(4)
c[0].metric("Tokens", f"{n:,}")
body_loss = scored_tokens([stats])[0].loss  # tokens 2..n, as the attacks score them (attacks.base)
c[1].metric("Loss (mean NLL)", fmt_num(body_loss),
            help="Mean negative log-likelihood of tokens 2..n, the tokens the attacks score (the papers and MIMIR "
                 f"leave out the first token). Over every token: {fmt_num(stats.loss)}.")
c[2].metric("Perplexity", fmt_num(math.exp(body_loss)) if body_loss < 50 else "> 10²¹")
c[3].metric("Median token probability", fmt_pct(float(np.nanmedian(p))))

# ------------------------------------------------------------------ per-token view
st.subheader("Per-token view")
norm = st.radio("Colour by", list(tokens.NORMS), format_func=tokens.NORMS.get, horizontal=True, key="inspect_norm")
try:
    counts, corpus_note = reference_counts(lm, corpus, corpus_upload, stats)
except MiaError as e:
    show_error(e)
    counts, corpus_note = np.bincount(stats.token_ids.astype(np.int64), minlength=lm.vocab_size), "this text itself"
rtf, seen = token_frequency(counts)
st.caption(f"Token frequencies from {corpus_note}.")
values = tokens.token_values(stats.logprob, stats.max_logprob, stats.token_ids, norm, rtf)
pieces = tokens.token_pieces(lm.tokenizer, rtext, stats.token_ids)
st.html(tokens.legend_html(norm))
if n <= tokens.LONG_TEXT_TOKENS:
    st.html(tokens.tokens_html(pieces, stats, values, norm, lm.tokenizer, rtf=rtf, seen=seen))
else:
    window = max(25, int(math.ceil(n / 400)))
    ylabel = "probability" if norm == "prob" else ("RatioNorm log10" if norm == "ratio" else "MaxNorm log10")
    st.plotly_chart(plots.token_strip(values, window=window, ylabel=ylabel, percent=norm == "prob"),
                    key="inspect_strip_chart")
    seg = 1000
    starts = list(range(0, n, seg))
    s0 = st.select_slider("Show the tokens of one segment", options=starts,
                          format_func=lambda s: f"{s + 1:,}–{min(s + seg, n):,}", key="inspect_segment")
    st.html(tokens.tokens_html(pieces, stats, values, norm, lm.tokenizer, rtf=rtf, seen=seen, start=s0, stop=s0 + seg))

# ------------------------------------------------------------------ attack scores
st.subheader("Attack scores for this text")
run_list = calibration_runs(lm.identity)
run = None
if run_list:
    ids = [m["id"] for m in run_list]
    rid = st.selectbox("Calibration run to compare with", ids, key="inspect_run",
                       format_func=lambda i: next(f"{m['name']} ({m['created']})" for m in run_list if m["id"] == i))
    from mia_core.runs import load_run

    try:
        run = load_run(rid)
    except MiaError as e:
        show_error(e)
else:
    other = related_run(lm.identity)
    if other is None:
        st.caption("No calibration run on this exact model yet: run one on the **Calibration run** page to see "
                   "where this text's scores fall among known members and non-members.")
    else:
        t = other.get("target") or {}
        st.info(f"No calibration run on this exact model ({lm.name}, {lm.dtype}/{lm.quantize}) yet. The newest run, "
                f"**{other['name']}** ({other['created']}), was on **{t.get('name', '?')}** "
                f"({t.get('dtype', '?')}/{t.get('quantize', '?')}): switch the target to it to see where this text's "
                "scores fall among that run's members and non-members.")
        if target_choice(t.get("source")) is not None and st.button(
                f"Switch the target to {t.get('name', 'that model')} and compare", key="inspect_switch"):
            switch_target(t.get("source"), t.get("dtype"), t.get("quantize"),
                          reference=(other.get("reference") or {}).get("source"))
            st.session_state["inspect_autorun"] = True
            st.rerun()
scores, notes = attack_scores(res, run)
for note in notes:
    st.caption(note)
rows = placement_rows(scores, run, ref_identity=res["ref_identity"])
st.table(pd.DataFrame([{k: v for k, v in r.items() if not k.startswith("_") and k != "key"} for r in rows])
         .set_index("Attack"))
if run is not None:
    st.caption("Percentile: the share of the run's texts that score below this one. Decisions: a text is called a "
               "member when its score reaches the threshold that flags 1 % (or 5 %) of the run's non-members.")
    placed = [r["key"] for r in rows if r.get("_placed")]
    if placed:
        a = st.selectbox("Show the distributions for", placed, key="inspect_place_attack",
                         format_func=lambda k: next(r["Attack"] for r in rows if r["key"] == k))
        r = next(r for r in rows if r["key"] == a)
        st.plotly_chart(plots.placement_figure(r["_members"], r["_nonmembers"], r["_value"], thresholds=r["_thresholds"],
                                               title=f"{r['Attack']}: this text vs the calibration run"),
                        key="inspect_place_chart")

# ------------------------------------------------------------------ neighbours
st.subheader("Neighbours")
neighbour_section(lm, res, run)
