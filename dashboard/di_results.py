"""The Dataset inference page's result, drawn under the inputs it came from (``dashboard.dataset_inference``
keeps the inputs, reads the sets and runs the test): the verdict and its reason, the p-values and the self-check,
the blind baseline, which texts or books stand out (with each text's first words), the charts and the weights. A
result whose inputs differ from the page's is labelled and folded away (:func:`show_result`)."""
from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from mia_core.api.inference import combination_words
from mia_core.formatting import counted

from .dataset_inference import _SHOWN_SHAPES, CORRECTIONS, changed
from .stale import result_box

def books_frame(summary: dict) -> pd.DataFrame:
    """One row per suspect book: its passages, its own (conformal) p-value, the adjusted p-value across the
    suspect books and whether it is flagged; sorted by adjusted p-value, then p-value, flagged books first."""
    rows = [{"Book": str(b.get("book")), "Passages": b.get("n_passages"), "p-value": b.get("p_value"),
             "Adjusted p-value": b.get("p_adjusted"), "Flagged": "✔ flagged" if b.get("flagged") else "–"}
            for b in summary.get("books") or []]
    df = pd.DataFrame(rows, columns=["Book", "Passages", "p-value", "Adjusted p-value", "Flagged"])
    if df.empty:
        return df
    df["_f"] = df["Flagged"] != "–"
    df = df.sort_values(["_f", "Adjusted p-value", "p-value", "Book"], ascending=[False, True, True, True],
                        kind="stable", na_position="last")
    return df.drop(columns="_f").reset_index(drop=True)


def floor_note(result) -> str | None:
    """The note that the floor ``1 / (1 + validation books)`` keeps every book from being flagged: the run's
    own (``verdict.unit_p_values``; older runs worded it otherwise), else worked out from the summary."""
    s = result.summary
    unit = "book" if s.get("mode") == "books" else "text"
    own = next((n for n in result.report if f"no single {unit}" in n), None)
    if own or s.get("unit_p_floor") is None:
        return own
    floor, m, alpha = float(s["unit_p_floor"]), int(s.get("n_suspect") or 0), float(s["alpha"])
    best = floor if s.get("correction", "bh") == "bh" else min(1.0, m * floor)
    if best <= alpha:
        return None
    return (f"no single {unit} can be flagged: a {unit}'s own p-value cannot go below 1 / (1 + validation "
            f"{unit}s) = {floor:.3g} > alpha {alpha}; the collection test is not limited this way")


def _p(s: dict, key: str, bound_key: str | None = None) -> str:
    from mia_core.formatting import p_number

    v = s.get(key)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return p_number(float(v), bool(s.get(bound_key)) if bound_key else False)


def inputs_caption(stored: dict, *, plain: bool = False) -> str:
    """What the result came from, in one line: source, sizes, model, the test's settings, time, where saved
    (Markdown that shows exactly these words; ``plain``: the words, for a label that escapes them itself)."""
    from dashboard.ui import fmt_seconds, md_text

    esc = str if plain else md_text

    s, inp = stored["result"].summary, stored.get("inputs") or {}
    unit = "books" if s.get("mode") == "books" else "texts"
    parts = [inp.get("source_label") or "inputs not recorded (an earlier session)",
             f"{s.get('n_suspect')} suspect vs {s.get('n_validation')} validation {unit}"]
    if unit == "books" and s.get("passages_per_book") is not None:
        parts.append(f"{s['passages_per_book']} passage(s) of {s.get('passage_words')} words a book")
    if inp.get("files"):
        more = len(inp["files"]) - 4
        parts.append("files " + ", ".join(inp["files"][:4]) + (f" (+{more})" if more > 0 else ""))
    model = inp.get("model") or s.get("model") or stored.get("model")
    if model:
        parts.append(f"model {model}" + (f", reference {inp['reference']}" if inp.get("reference") else ""))
    parts.append(f"α = {s.get('alpha')}")
    if s.get("n_permutations"):
        parts.append(f"{int(s['n_permutations']):,} permutations")
    if stored.get("seconds") is not None:
        parts.append(fmt_seconds(stored["seconds"]))
    text = esc(" · ".join(str(p) for p in parts))
    if stored.get("saved"):
        how = "reopened from" if stored.get("reopened") else "saved as"
        text += f" · {how} run {esc(stored['saved'])}" + (f" “{esc(stored['name'])}”" if stored.get("name")
                                                              else "") + " (Runs page)"
    return text


def show_result(stored: dict, now: dict) -> None:
    """The stored result, under the inputs it came from; when the page's inputs have changed since, it is
    labelled as the previous inputs' result and folded away (never shown as the answer to the new ones)."""
    from dashboard.ui import md_text

    from dashboard.results import DI_VERDICT_WORDS, verdict_words

    diff = changed(stored, now)
    if not diff:
        st.subheader("3 · Verdict")
        if stored.get("reopened"):  # issue 53 item 2: a saved run's sets are not the page's, and Run tests the page's
            inp = stored.get("inputs") or {}
            st.info(f"**Reopened from the Runs page:** {md_text(inp.get('source_label') or 'a saved run')}. Its sets "
                    "are not restored here: the sets and the model above are the page's own, and **Run dataset "
                    "inference** tests those, not this run's. Its unit and test settings were put back.",
                    icon=":material/history:")
    s = stored["result"].summary
    # changed inputs: labelled and folded away, never shown as the answer to the new ones (dashboard.stale)
    box = result_box(diff, button="Run dataset inference",
                     title=f"{verdict_words(s.get('verdict'), DI_VERDICT_WORDS)} — {inputs_caption(stored, plain=True)}")
    with box:
        try:
            _draw(stored)
        except _SHOWN_SHAPES as e:  # a saved run of another version that got past the checks: one line
            st.error(md_text(f"This result cannot be shown in full (saved by another version, or damaged): "
                             f"{type(e).__name__}: {e}"))


def _draw(stored: dict) -> None:
    from mia_core.api.inference import inference_notes
    from dashboard.ui import md_text

    res = stored["result"]
    s = res.summary
    verdict, words = s["verdict"], inference_notes(s)
    {"used": st.warning, "not_shown": st.info, "refused": st.error}[verdict](
        f"**{words['verdict']}.** {md_text(words['reason'])}")
    st.caption(inputs_caption(stored))
    if words["blind"]:
        st.caption(md_text(words["blind"]))
    if "null_p_value" in s or "p_value_crossfit_ttest" in s:
        st.warning("This run was saved by an earlier version, before the test was made one-sided and valid for "
                   "sets of unequal spread or size (issue 38): its p-value and verdict come from that test. Run the "
                   "same sets again for the current one.", icon=":material/history:")
    shown = None
    if verdict == "refused" and s.get("control_p_value") is not None:
        st.caption(md_text(f"Negative control {s.get('control_model')}: the same test on its own features gave "
                           f"p = {_p(s, 'control_p_value')}; the target's features were not tested."))
    elif verdict == "refused":
        st.caption(md_text(f"Blind baseline AUC {_fmt(s.get('blind_auc'))}: no model pass was made."))
    elif s.get("mode") == "books":
        shown = _book_part(res)
    else:
        _text_part(res)
    for n, said in zip(res.report, inference_notes(s, res.report)["notes"]):
        if n != shown:
            st.caption(md_text(said))
    from mia_core.runs.results import csv_text

    st.download_button(f"Download the per-{'book' if s.get('mode') == 'books' else 'text'} features and scores (CSV)",
                       csv_text(res.scores).encode("utf-8"), file_name="dataset_inference_scores.csv",
                       mime="text/csv", key="go_di_download")


def feature_names(weights: dict) -> dict:
    """``{feature id: weight}`` keyed by the features' display names ("Min-K%++ (k = 60 %)", as the rest of the
    product names the attacks: ``mia_core.api.inference.inference_feature_label``)."""
    from mia_core.api.inference import inference_feature_label

    return {inference_feature_label(k): v for k, v in weights.items()}


def _fmt(v, digits: int = 3) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{float(v):.{digits}f}"


def _self_check(s: dict) -> None:
    from dashboard.ui import md_text

    if s.get("self_check_p_value") is not None:
        st.caption(md_text(f"Self-check (the same test on two random halves of the validation set, exchangeable by "
                           f"construction: it checks the code path, not the data): p = "
                           f"{_p(s, 'self_check_p_value', 'self_check_p_value_is_bound')}."))
    elif s.get("null_p_value") is not None:  # runs saved before issue 38
        st.caption(md_text(f"Null check of the earlier version (two random halves of the validation set): p = "
                           f"{_p(s, 'null_p_value', 'null_p_value_is_bound')}."))


def _primary_metric(col, s: dict, unit: str) -> None:
    col.metric("p-value (one-sided test)", _p(s, "p_value", "p_value_is_bound"),
               help=f"Is the suspect set more member-like than the validation set? A permutation test, over {unit}, "
                    f"of the Welch t of the combined scores ({combination_words(s.get('combination'))}, "
                    f"{s.get('folds', '?')} folds, "
                    f"{int(s.get('n_permutations') or 0):,} permutations), reported as the largest of its p-value, "
                    "the Welch t-test's and the bootstrap-t's: exact when the sets are exchangeable, and valid when "
                    "they differ only in spread or size, a small set skewed included. The primary figure."
                    + (f" Every feature is the target's minus the negative control's ({s['control_model']}: a model "
                       "that never saw either set)." if s.get("control_model") else " No negative control.")
                    + (" Every feature is adjusted for text length." if s.get("adjust_length") else ""))


def _blind_metric(col, s: dict) -> None:
    col.metric("Blind baseline AUC", _fmt(s.get("blind_auc")),
               help="A text classifier that never queries the model, suspect vs validation, with a permutation "
                    "p-value (the IID guard: refused at p <= 0.05). Far below 0.5 happens by chance on small sets.")


def _text_part(res) -> None:
    s = res.summary
    m1, m2, m3, m4 = st.columns(4)
    _primary_metric(m1, s, "texts")
    m2.metric("p-value (paper's t-test)", _p(s, "p_value_ttest"),
              help="Maini et al.'s procedure: a linear model on half the texts, a t-test on the other half. It "
                   "learns the direction, so it is not one-sided: shown beside, never deciding.")
    m3.metric("Texts that stand out", "–" if s.get("n_flagged") is None else f"{s['n_flagged']} of {s['n_suspect']}",
              help="Each suspect text's conformal p-value against the validation set, adjusted by "
                   "Benjamini-Hochberg (false-discovery rate at alpha). A weak target shifts the whole set a "
                   "little and flags few or no single texts: the collection test is the stronger claim.")
    _blind_metric(m4, s)
    _self_check(s)
    _charts(res, power=True)
    if "p_adjusted" in res.scores and "text_id" in res.scores:
        sus = res.scores[(res.scores["set"] == "suspect") & ~res.scores["excluded"]]
        st.markdown(f"**Which texts stand out?** Each suspect text's conformal p-value against the validation set "
                    f"(a label-free score: exact for a text that is like the validation texts), adjusted across "
                    f"the {counted(len(sus), 'suspect texts')} ({CORRECTIONS.get(s.get('correction'), 'Benjamini-Hochberg')}). "
                    f"A text's p-value cannot go below 1 / (1 + validation texts) = "
                    f"{float(s.get('unit_p_floor') or 0):.2g}; on a weak target few or no single texts stand out "
                    "even when the collection does. Text s0001 is the first suspect text (after empty and duplicate "
                    "texts are dropped).")
        st.dataframe(unit_table(sus, getattr(res, "texts", None) or {}), hide_index=True, key="di_units")


UNIT_COLUMNS = {"text_id": "Text", "label_free_score": "Score (higher: more member-like)", "p_value": "p-value",
                "p_adjusted": "Adjusted p-value", "flagged": "Stands out"}


def unit_table(sus, texts: dict, n: int = 50):
    """The per-text table in words (issue 53 item 6): the text's id and its first words (when the run's texts are at
    hand: not for a run reopened from the store, which keeps ids only), its label-free score, p-value, adjusted
    p-value and whether it stands out; the ``n`` lowest p-values first."""
    import pandas as pd

    top = sus.sort_values("p_value").head(n)
    out = pd.DataFrame({UNIT_COLUMNS[c]: top[c].to_numpy() for c in UNIT_COLUMNS if c in top})
    if texts:
        out.insert(1, "Begins", [_snippet(texts.get(i, "")) for i in top["text_id"]])
    if "Stands out" in out:
        out["Stands out"] = ["✔ yes" if bool(f) else "–" for f in out["Stands out"]]
    return out


def _snippet(text: str, words: int = 12) -> str:
    w = str(text).split()
    return " ".join(w[:words]) + (" …" if len(w) > words else "")


def _book_part(res) -> str | None:
    """The book result: the metrics that make sense for books, the per-book table with the floor beside it,
    the charts. Returns the note shown beside the table (not repeated among the notes)."""
    from dashboard.ui import md_text

    s = res.summary
    m1, m2, m3, m4 = st.columns(4)
    _primary_metric(m1, s, "books")
    m2.metric("Books that stand out", "–" if s.get("n_flagged") is None else f"{s['n_flagged']} of {s['n_suspect']}",
              help="Each suspect book's conformal p-value against the validation books, adjusted across the "
                   f"suspect books ({CORRECTIONS.get(s.get('correction'), s.get('correction'))}).")
    m3.metric("Passages a book", "–" if s.get("passages_per_book") is None else
              f"{s['passages_per_book']} × {s.get('passage_words')} words",
              help="Every book is read as the same number of passages (the shortest book's count, at most the "
                   "maximum), spread over the book: equal counts keep the books exchangeable under the null.")
    _blind_metric(m4, s)
    _self_check(s)
    note = floor_note(res)
    st.markdown(f"**Which books stand out?** Each suspect book's own p-value against the validation books, and "
                f"adjusted across the {s.get('n_suspect')} suspect books "
                f"({CORRECTIONS.get(s.get('correction'), s.get('correction'))}); flagged: adjusted p at most "
                f"α = {s.get('alpha')}.")
    c1, c2 = st.columns([3, 2])
    table = books_frame(s)
    c1.dataframe(table, hide_index=True, key="di_books", width="stretch",
                 height=35 * (min(len(table), 25) + 1) + 3)  # every book up to 25 without scrolling
    with c2:
        if note:
            why = note.split(": ", 1)[1] if note.startswith("no single book can be flagged:") else note
            st.warning(f"**No single book can be flagged:** {md_text(why)}. With n validation books a book's "
                       "p-value can reach 1 / (n + 1): add validation books to test single books.",
                       icon=":material/block:")
        elif s.get("unit_p_floor") is not None:
            st.caption(md_text(f"A book's own p-value cannot go below 1 / (1 + validation books) = "
                               f"{float(s['unit_p_floor']):.3g}."))
    _charts(res, power=False)
    return note


def _charts(res, *, power: bool) -> None:
    """The combined scores of both sets, the power curve (texts: descriptive, the same data) and the weights;
    books have no power curve, their weights go beside the histogram."""
    from mia_core.api.inference import inference_notes
    from mia_core.reports import plots

    s = res.summary
    scores = res.scores[~res.scores["excluded"]]
    hist = plots.di_score_histogram(scores.loc[scores["set"] == "suspect", "score"],
                                    scores.loc[scores["set"] == "validation", "score"],
                                    title=plots.di_score_title(s.get("combination")))
    side = plots.di_power_curve(s["power_curve"], alpha=s["alpha"], n_permutations=s.get("n_permutations")) \
        if power and s.get("power_curve") else None
    weights = plots.di_weights(feature_names(s["weights"])) if s.get("weights") else None
    c1, c2 = st.columns(2)
    c1.plotly_chart(hist, key="di_hist")
    if side is not None:
        c2.plotly_chart(side, key="di_power")
        c2.caption(inference_notes(s)["power_floor"] or "")  # the curve's floor against the headline's
    elif weights is not None:  # half a page wide: a shorter axis title
        c2.plotly_chart(weights.update_xaxes(title_text="weight (non-negative: higher = more member-like)"),
                        key="di_weights")
        weights = None
    if weights is not None:
        st.plotly_chart(weights, key="di_weights")
    if s.get("combination") == "nonneg":
        st.caption("Weights of the test's combination on standardised features, fitted on all units and kept "
                   "non-negative: every feature is oriented so that higher means more member-like, and the combined "
                   "score can only rise with a feature. Correlated features (Min-K% at neighbouring k) share weight; "
                   "a weight of 0 means the feature adds nothing the others do not.")
    else:
        st.caption("Weights of the test's combination on standardised features, set before the run (no label is "
                   "read): every feature is oriented so that higher means more member-like, and "
                   + ("each attack counts once, its weight shared by its columns (Min-K% at seven k)."
                      if s.get("combination") == "families" else "every feature counts equally."))
