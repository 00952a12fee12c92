"""The logic behind the "Inspect a text" page (kept out of the page so it stays thin); what it computes
through the engine goes through ``mia_core.api.inspect``.

* :func:`text_section`, :func:`options_section` the text (pasted, or an uploaded file read by
  ``mia_core.api.inspect.read_text``) and the options; :func:`analyse` the passes behind the Analyse button
  (``mia_core.api.inspect.text_statistics``), kept in ``st.session_state["inspect_result"]``;
  :func:`summary_section`, :func:`token_section`, :func:`attack_section` what the page shows of them.
* :func:`attack_scores`   every sequence-level attack's score for one text (cheap functions of the
  token statistics already computed; the calibration run's attack parameters and first-token
  rule when there is one, :func:`run_first_token`, so the scores equal the run's).
* :func:`placement_rows`  each score placed on a calibration run (``mia_core.metrics.placement``: percentile
  among its members and non-members, and the decision at the thresholds that flag 1 % / 5 % of its
  non-members, Mireshghallah et al. 2022 §2.4: member iff score >= t), formatted as table rows.
* :func:`reference_counts` token counts of the R^TF reference corpus.
* :func:`neighbour_section` the neighbour table and scatter (when ``mia_core.neighbours`` exists).
"""
from __future__ import annotations

import html

import numpy as np
import streamlit as st

from mia_core.api.inspect import (estimate_analysis, estimate_neighbours, read_text, text_neighbours,
                                  text_statistics)
from mia_core.attacks import REGISTRY, AttackInputs
from mia_core.api import widget_limits
from mia_core.errors import DataError, MiaError
from mia_core.metrics.placement import DECISION_FPRS, incomparable, place_score, run_groups
from mia_core.runs import list_runs
from mia_core.targets.demo import demo_corpus_files

from .loaders import corpus_key, token_counts
from .options import worded
from .ui import fmt_num, fmt_pct, kept, show_error, stage_progress

SEQUENCE_NEEDS = {"target", "target_lower", "reference"}


def calibration_runs(target_identity: str) -> list[dict]:
    """Saved runs on exactly this model (identity includes dtype and quantisation), newest first."""
    return [m for m in list_runs() if (m.get("target") or {}).get("identity") == target_identity]


def related_run(target_identity: str) -> dict | None:
    """The newest saved run on another model (e.g. the demo target, when Inspect is on the embedded
    model), to offer switching to it; None when there is none."""
    return next((m for m in list_runs() if (m.get("target") or not m.get("damaged"))  # a damaged run without a target
                 and (m.get("target") or {}).get("identity") != target_identity), None)  # is nothing to switch to


def sequence_attacks() -> list[str]:
    return [n for n, a in REGISTRY.items() if a.prepare is None and set(a.needs) <= SEQUENCE_NEEDS]


def run_first_token(run=None, default: bool = False) -> bool:
    """Whether attacks score each text's first token, as the calibration ``run`` did
    (``mia_core.attacks.base``): what the run recorded (``scored_tokens``), else its
    ``score_first_token``. Without a run, or a run that left it to the default: ``default`` (the
    target's, ``mia_core.stats.scores_first_token``: as the model was trained). A run saved before the
    rule existed has no such setting and scored every token."""
    cfg = (run.config or {}) if run is not None else {}
    rec = cfg.get("scored_tokens")
    if isinstance(rec, dict) and isinstance(rec.get("first_token"), bool):
        return rec["first_token"]
    if run is not None and "score_first_token" not in cfg:
        return True
    ft = cfg.get("score_first_token")
    if isinstance(ft, bool):
        return ft
    return bool(default)


def attack_scores(res: dict, run=None) -> tuple[dict[str, tuple[str, float]], list[str]]:
    """{attack: (label, score)} for one analysed text, plus notes on attacks left out."""
    inputs = AttackInputs(texts=[res["text"]], target=[res["stats"]],
                          target_lower=[res["lower"]] if res.get("lower") is not None else None,
                          reference=[res["ref"]] if res.get("ref") is not None else None,
                          same_tokenizer=res.get("same_tokenizer", True),
                          first_token=run_first_token(run, res.get("first_token_default", False)))
    run_params = ((run.config if run is not None else {}) or {}).get("params") or {}
    out, notes = {}, []
    for name in sequence_attacks():
        a = REGISTRY[name]
        if "target_lower" in a.needs and inputs.target_lower is None:
            notes.append(f"{a.label}: needs the lower-cased pass (tick it under Options).")
            continue
        if "reference" in a.needs and inputs.reference is None:
            notes.append(f"{a.label}: needs a reference model (choose one in the sidebar).")
            continue
        kw = a.kwargs(run_params)
        try:
            out[name] = (a.label, float(a.score(inputs, **kw)[0]))
        except MiaError as e:
            notes.append(f"{a.label}: {worded(e)}")
    return out, notes


def placement_rows(scores: dict[str, tuple[str, float]], run=None, *, ref_identity: str | None = None) -> list[dict]:
    """One row per attack: score, and (with a run) percentiles and decisions at 1 % / 5 % FPR.

    The placement is ``mia_core.metrics.placement``'s; this formats it. Keys starting with ``_`` hold the
    arrays for the placement figure; ``key`` is the attack name.
    """
    rows = []
    df = run.scores if run is not None else None
    run_ref = ((run.models.get("reference") or {}).get("identity")) if run is not None else None
    for name, (label, s) in scores.items():
        row = {"key": name, "Attack": label, "Score": fmt_num(s)}
        if df is not None:
            why = incomparable(df, name, run_reference=run_ref, reference=ref_identity)
            if why is not None:
                row["vs non-members"] = why
            else:
                p = place_score(s, *run_groups(df, name), DECISION_FPRS)
                if p is not None:
                    thr = {f"{fpr_lbl(f)} FPR": t for f, t in p.thresholds.items()}
                    row["Above % of non-members"] = fmt_pct(p.above_nonmembers)
                    row["Above % of members"] = fmt_pct(p.above_members)
                    for f, lab in zip(p.thresholds, thr):
                        row[f"Member at {lab}?"] = p.decision(f)
                    row.update({"_placed": True, "_members": p.members, "_nonmembers": p.nonmembers, "_value": s,
                                "_thresholds": thr})
        rows.append(row)
    return rows


def fpr_lbl(f: float) -> str:
    return f"{f * 100:g}%"


def reference_counts(lm, corpus: str, upload, stats) -> tuple[np.ndarray, str]:
    """Token counts of the chosen R^TF corpus and a phrase naming it."""
    vocab = lm.vocab_size
    if corpus == "demo":
        files = demo_corpus_files()
        if files:
            texts = tuple(p.read_text(encoding="utf-8", errors="replace") for p in files)
            return (token_counts(lm.identity, corpus_key(texts), lm.tokenizer, texts, vocab),
                    f"the bundled demo corpus ({len(files)} file{'s' if len(files) != 1 else ''})")
    if corpus == "upload":
        if upload is None:
            raise DataError("no reference corpus uploaded yet: upload a .txt file, or use this text itself.")
        from mia_core.api.data import read_text_upload

        text, _ = read_text_upload(upload)  # the same size limit and decoding as every other reader
        if not text.strip():
            raise DataError(f"{upload.name} holds no text.")
        texts = (text,)
        return token_counts(lm.identity, corpus_key(texts), lm.tokenizer, texts, vocab), f"{upload.name}"
    ids = np.asarray(stats.token_ids, dtype=np.int64)
    return (np.bincount(ids, minlength=vocab)[:vocab],
            "this text itself (no reference corpus: rarities are relative to the text, a rough stand-in)")


# ------------------------------------------------------------------ neighbours

def neighbour_settings(run=None, n: int | None = None):
    """The calibration run's neighbour settings when it used a neighbour attack (so the scatter
    compares like with like), else the neighbourhood attack's defaults; ``n`` overrides."""
    from mia_core.attacks.neighbourhood import settings_from

    ran = (run.config.get("attacks") or []) if run is not None else []
    name = next((a for a in ("smia", "neighbourhood") if a in ran), "neighbourhood")
    params = REGISTRY[name].kwargs((run.config.get("params") or {}) if run is not None else None)
    if n is not None:
        params["n"] = int(n)
    return settings_from(params)


def _highlight(text: str, spans, width: int = 90) -> str:
    """HTML of ``text`` with the replaced spans in <mark>; long texts cut around the first span."""
    spans = sorted((int(a), int(b)) for a, b in (spans or []) if 0 <= int(a) <= int(b) <= len(text))
    lo, hi = 0, len(text)
    if len(text) > 3 * width and spans:
        lo, hi = max(0, spans[0][0] - width), min(len(text), spans[-1][1] + width)
    out, cur = [], lo
    for a, b in spans:
        if a < cur or b > hi:
            continue
        out.append(html.escape(text[cur:a]))
        out.append(f"<mark style='background:#ffe066'>{html.escape(text[a:b])}</mark>")
        cur = b
    out.append(html.escape(text[cur:hi]))
    return ("…" if lo > 0 else "") + "".join(out) + ("…" if hi < len(text) else "")


def run_clouds(run) -> dict | None:
    """Member / non-member (embedding distance, loss change) pairs of a run's SMIA attack.

    SMIA's report keeps every (text, neighbour) pair's cosine and ``L(x) - L(x~)``; the
    scatter's y is the loss change ``L(x~) - L(x)``, so the sign flips. Evaluation pairs only.
    """
    if run is None:
        return None
    pairs = (run.extra.get("smia") or {}).get("pairs") if isinstance(run.extra.get("smia"), dict) else None
    if not pairs or not pairs.get("cosine"):
        return None
    cos = np.asarray(pairs["cosine"], dtype=float)
    dl = -np.asarray(pairs["loss_diff"], dtype=float)
    lab = np.asarray(pairs["label"], dtype=int)
    ev = np.asarray([s == "eval" for s in pairs.get("split", ["eval"] * len(cos))], dtype=bool)
    out = {}
    for name, v in (("members", 1), ("non-members", 0)):
        sel = (lab == v) & ev
        if sel.any():
            out[name] = (1.0 - cos[sel], dl[sel])
    return out or None


def neighbour_section(lm, res: dict, run=None) -> None:
    """Generate the text's neighbours behind a button; a table with the replaced words
    highlighted, each neighbour's loss and cosine similarity; and the distance / loss-change
    scatter over the calibration run's SMIA pairs when it has them."""
    from mia_core.reports import plots

    st.caption("Neighbours are copies of the text with one word replaced by a plausible substitute. A text the "
               "model was trained on tends to have a clearly lower loss than its neighbours (Mattern et al. 2023); "
               "SMIA also looks at how far the meaning moved (embedding distance). Generating and scoring them "
               "takes a while on a CPU.")
    default = neighbour_settings(run)
    c1, c2 = st.columns([1, 3])
    n = int(c1.number_input("Neighbours", value=int(default.n), step=1, key="inspect_nb_n",
                            **widget_limits(REGISTRY["neighbourhood"].domains["n"])))  # the attack's declared domain
    c2.caption(f"Generator: {generator_words(default.generator)}, {default.m} word(s) replaced"
               + (" (the calibration run's settings)" if run is not None and default.to_dict() != neighbour_settings().to_dict() else ""))
    st.caption("Estimate: " + estimate_neighbours(lm, res["text"], n)[0])  # before the button, as on every page
    if st.button("Generate neighbours", key="go_inspect_nb"):
        slot = st.empty()
        cb = stage_progress(slot.container())
        try:
            out = text_neighbours(lm, res["text"], neighbour_settings(run, n), progress=cb,
                                     first_token=run_first_token(run, res.get("first_token_default", False)))
            st.session_state["inspect_neighbours"] = (res["hash"], lm.identity, out)
            slot.empty()
        except MiaError as e:
            show_error(e)
    got = st.session_state.get("inspect_neighbours")
    if not got or got[0] != res["hash"] or got[1] != lm.identity:
        return
    out = got[2]
    from mia_core.attacks.base import scored_tokens

    base = float(scored_tokens([res["stats"]], bool(out.get("first_token", False)))[0].loss)
    if out.get("warning"):
        st.warning(out["warning"])
    nbs = out.get("neighbours") or []
    if not nbs:
        st.warning("No neighbour could be generated: the text has no replaceable content word.")
        return
    rows = []
    for nb in sorted(nbs, key=lambda d: d["loss"]):
        swap = "; ".join(f"{o} → {w}" for _, o, w in nb.get("replaced", []))
        rows.append(f"<tr><td>{_highlight(str(nb['text']), nb.get('spans'))}</td><td>{html.escape(swap)}</td>"
                    f"<td>{fmt_num(nb['loss'])}</td>"
                    f"<td>{fmt_num(nb['loss'] - base)}</td><td>{fmt_num(nb['cosine'])}</td></tr>")
    mean_nb = float(np.nanmean([nb["loss"] for nb in nbs]))
    st.markdown(f"Loss of the text **{fmt_num(base)}**, mean over {len(nbs)} neighbours **{fmt_num(mean_nb)}** "
                f"(neighbourhood score {fmt_num(-(base - mean_nb))}; higher = more member-like).")
    st.html("<div style='max-height:420px;overflow:auto;max-width:100%'><table class='mia-neighbours' "
            "style='border-collapse:collapse;font-size:.9em;width:100%;table-layout:fixed;overflow-wrap:anywhere' "
            "border='1' cellpadding='5'><colgroup><col style='width:58%'><col style='width:16%'><col><col><col>"
            "</colgroup>"
            "<tr><th>Neighbour (replaced words highlighted)</th><th>Replaced</th><th>Loss</th><th>Loss change</th>"
            "<th>Cosine similarity</th></tr>" + "".join(rows) + "</table></div>")
    clouds = run_clouds(run)
    if run is not None and clouds is None:
        st.caption("The calibration run has no SMIA pairs to compare with (run SMIA to see its member / "
                   "non-member clouds here).")
    fig = plots.neighbour_scatter(
        [1.0 - nb["cosine"] for nb in nbs], [nb["loss"] - base for nb in nbs],
        hover=[html.escape(" ".join(f"{o} → {w}" for _, o, w in nb.get("replaced", []))) for nb in nbs],
        clouds=clouds)
    st.plotly_chart(fig, key="inspect_nb_scatter")


# ------------------------------------------------------------------ the page's sections

DEFAULT_TEXT = (
    "Alice was beginning to get very tired of sitting by her sister on the bank, and of having nothing "
    "to do: once or twice she had peeped into the book her sister was reading, but it had no pictures or "
    "conversations in it, 'and what is the use of a book,' thought Alice 'without pictures or "
    "conversations?'"
)
PASTE = "Paste a paragraph"


def read_upload(upload, strip: bool) -> tuple[str, str | None, str]:
    """An uploaded text file read by the engine (``mia_core.api.inspect.read_text``: the readers' size limit),
    its reading notes (e.g. read as Windows-1252) shown as captions.

    Parameters
    ----------
    upload : file-like
        The uploaded file.
    strip : bool
        Strip a Project Gutenberg header and footer.

    Returns
    -------
    text : str
        The text ("" when it could not be read).
    error : str or None
        Why it could not be read, worded for the page.
    name : str
        The file's name ("pasted text" when it could not be read).
    """
    try:
        notes: list[str] = []
        text = read_text(upload, strip_gutenberg=strip, notes=notes)
        for n_ in notes:
            st.caption(n_)
        return text, None, upload.name
    except MiaError as e:
        return "", worded(e), "pasted text"


def text_section() -> tuple[str, str, str | None, str]:
    """The text to inspect: a pasted paragraph (kept across pages) or an uploaded .txt file.

    Returns
    -------
    source : str
        Which of the two.
    text : str
        The text.
    error : str or None
        Why an upload could not be read.
    name : str
        The file's name, or "pasted text".
    """
    source = st.radio("Text", [PASTE, "Upload a .txt file"], horizontal=True, key="inspect_source",
                      label_visibility="collapsed")
    text, text_error, text_name = "", None, "pasted text"
    if source == PASTE:
        # kept (dashboard.ui.kept): a pasted paragraph is still there after a look at the upload option or another
        # page (and is what "switch the target and compare" analyses)
        text = kept(st.text_area, "Text to inspect", "inspect_text", DEFAULT_TEXT, height=170,
                    help="A paragraph works best; long texts are scored in windows of the model's context.")
    else:
        up = st.file_uploader("A .txt file (a whole book works: it is scored in windows)",
                              type=["txt", "text", "md"], key="inspect_upload")
        strip = st.checkbox("Strip a Project Gutenberg header and footer", value=True, key="inspect_strip")
        if up is not None:
            text, text_error, text_name = read_upload(up, strip)
    return source, text, text_error, text_name


def options_section() -> tuple[str, object, bool]:
    """The Options expander.

    Returns
    -------
    corpus : str
        Where R^TF comes from: "demo", "self" or "upload".
    corpus_upload : file-like or None
        The uploaded reference corpus.
    lower : bool
        Score the lower-cased text too.
    """
    with st.expander("Options", expanded=False):
        corpus_opts = (["demo"] if demo_corpus_files() else []) + ["self", "upload"]
        corpus_labels = {"demo": "the bundled demo corpus", "upload": "a corpus I upload (.txt)",
                         "self": "this text itself"}
        corpus = st.radio("Token frequencies R^TF (for RatioNorm, MaxNorm and rarity) come from", corpus_opts,
                          format_func=corpus_labels.get, key="inspect_corpus",
                          help="Meeus et al. 2024 §4.2.1: a token's frequency in a reference corpus of similar text.")
        corpus_upload = None
        if corpus == "upload":
            corpus_upload = st.file_uploader("Reference corpus (.txt)", type=["txt", "text", "md"],
                                             key="inspect_corpus_up")
        do_lower = st.checkbox("Score the lower-cased text too (lowercase attack; doubles the time)", value=True,
                               key="inspect_lower")
    return corpus, corpus_upload, do_lower


def analyse(panel, text: str, text_error: str | None, text_name: str, lower: bool) -> None:
    """The Analyse button's work: the text's passes (``mia_core.api.inspect.text_statistics``) kept in
    ``st.session_state["inspect_result"]``, or an error shown.

    Parameters
    ----------
    panel : dashboard.sidebar model panel
        The loaded target and reference (``target``, ``reference``, ``target_error``).
    text, text_error, text_name
        What :func:`text_section` returned.
    lower : bool
        Score the lower-cased text too.
    """
    lm, ref = panel.target, panel.reference
    if text_error:
        show_error(text_error)
    elif not text.strip():
        show_error("the text is empty: paste a paragraph or upload a .txt file first.")
    elif lm is None:
        show_error(f"no target model loaded: {panel.target_error or 'choose one in the sidebar'}")
    else:
        slot = st.empty()
        cb = stage_progress(slot.container())
        try:
            ts = text_statistics(text, lm, reference=ref, lower=lower, progress=cb)
            st.session_state["inspect_result"] = {
                "hash": ts.hash, "text": text, "name": text_name, "identity": lm.identity,
                "ref_identity": ref.identity if ref is not None else None, "stats": ts.stats, "lower": ts.lower,
                "ref": ts.reference, "same_tokenizer": ts.same_tokenizer,
                "first_token_default": ts.first_token_default,
            }
            st.session_state.pop("inspect_neighbours", None)
            slot.empty()
        except MiaError as e:
            show_error(e)


def analysis_estimate(panel, text: str, lower: bool) -> str:
    """The line before Analyse (``mia_core.api.inspect.estimate_analysis``), or "" without a loaded target or a
    text."""
    if panel.target is None or not (text or "").strip():
        return ""
    return estimate_analysis(panel.target, text, reference=panel.reference, lower=lower)[0]


def model_line(panel) -> str:
    """The line beside Analyse: the model the text is scored with, in words, before anything loads (issue 53 item 4:
    "Model tested" beside every button that runs one)."""
    target = panel.target_spec
    tested = "the embedded SmolLM2-135M" if target in (None, "", "smollm2") else f"{target}"
    return f"**Model tested:** {tested} (the sidebar's model)."


def current_result(lm, source: str, text: str) -> dict | None:
    """The last analysis when it was made with this target (a note when the pasted text changed since), else
    None with a hint to press Analyse.

    Parameters
    ----------
    lm : LoadedModel or None
        The target.
    source, text
        What :func:`text_section` returned.

    Returns
    -------
    dict or None
        ``st.session_state["inspect_result"]``.
    """
    from mia_core.api.inspect import text_hash

    res = st.session_state.get("inspect_result")
    if res is None or lm is None or res["identity"] != lm.identity:
        st.info("Press **Analyse** to score the text with the target model.")
        return None
    if source == PASTE and text.strip() and text_hash(text) != res["hash"]:
        st.caption("The text changed since the last analysis: press **Analyse** to update.")
    return res


def summary_section(res: dict) -> None:
    """The text's token count, loss, perplexity and median token probability.

    Parameters
    ----------
    res : dict
        The analysis (:func:`analyse`).
    """
    import math

    stats = res["stats"]
    p = np.exp(stats.logprob.astype(np.float64))
    c = st.columns(4)
    c[0].metric("Tokens", f"{stats.n_tokens:,}")
    body_loss, span = scored_loss(stats, bool(res.get("first_token_default", False)))  # as the attacks score it
    c[1].metric("Loss (mean NLL)", fmt_num(body_loss),
                help=f"Mean negative log-likelihood over {span}, the tokens the attacks score on this model "
                     "(LOSS = −this loss). Over every token with a prediction: "
                     f"{fmt_num(stats.loss)}.")
    c[1].caption(f"over {span}")
    c[2].metric("Perplexity", fmt_num(math.exp(body_loss)) if body_loss < 50 else "> 10²¹")
    c[3].metric("Median token probability", fmt_pct(float(np.nanmedian(p))))


def loss_note(res: dict, run=None) -> str:
    """What the LOSS score covers, beside the loss the page shows above: the same tokens unless the calibration
    ``run`` scored the first token differently (then both spans are named)."""
    default = bool(res.get("first_token_default", False))
    here = run_first_token(run, default)
    loss, span = scored_loss(res["stats"], here)
    if here == default:
        return f"LOSS = −(the loss above: the mean over {span})."
    return (f"LOSS = −(mean loss over {span}, as the calibration run scored its texts) = {fmt_num(-loss)}; the loss "
            f"above covers {scored_loss(res['stats'], default)[1]}.")


def scored_loss(stats, first_token: bool) -> tuple[float, str]:
    """The mean loss over the tokens the attacks score (``mia_core.attacks.base.scored_tokens``: tokens 2..n, or
    1..n with ``first_token``), and those tokens in words, e.g. ``"the 57 scored tokens 2..58"``.

    Parameters
    ----------
    stats : mia_core.stats.TokenStats
        The text's token statistics.
    first_token : bool
        Whether the first token is scored (``run_first_token``).

    Returns
    -------
    tuple of (float, str)
        The mean loss (the LOSS attack's score is its negative) and the tokens it covers.
    """
    from mia_core.attacks.base import scored_tokens

    body = scored_tokens([stats], first_token)[0]
    valid = np.flatnonzero(np.asarray(stats.valid)[: stats.n_tokens]) + 1  # 1-based positions with a prediction
    if first_token:
        pos = valid
    else:
        pos = valid[valid >= 2]
    if not len(pos):
        return float("nan"), "no token (the text is one token long)"
    span = f"{pos[0]}..{pos[-1]}" if len(pos) > 1 else f"{pos[0]}"
    return float(body.loss), f"the {body.n_predicted:,} scored token{'s' if body.n_predicted != 1 else ''} {span}"


def token_section(lm, res: dict, corpus: str, corpus_upload) -> None:
    """The per-token view: every token coloured by its probability, RatioNorm or MaxNorm (R^TF of the chosen
    corpus, ``mia_core.api.inspect.rarity``); a long text as a windowed strip and one segment of tokens.

    Parameters
    ----------
    lm : LoadedModel
        The target.
    res : dict
        The analysis (:func:`analyse`).
    corpus, corpus_upload
        What :func:`options_section` returned.
    """
    import math

    from mia_core.api.inspect import rarity
    from mia_core.reports import plots

    from . import tokens

    stats, n = res["stats"], res["stats"].n_tokens
    st.subheader("Per-token view")
    norm = st.radio("Colour by", list(tokens.NORMS), format_func=tokens.NORMS.get, horizontal=True,
                    key="inspect_norm")
    try:
        counts, corpus_note = reference_counts(lm, corpus, corpus_upload, stats)
    except MiaError as e:
        show_error(e)
        counts = np.bincount(stats.token_ids.astype(np.int64), minlength=lm.vocab_size)
        corpus_note = "this text itself"
    rtf, seen = rarity(counts)
    st.caption(f"Token frequencies from {corpus_note}.")
    values = tokens.token_values(stats.logprob, stats.max_logprob, stats.token_ids, norm, rtf)
    pieces = tokens.token_pieces(lm.tokenizer, res["text"], stats.token_ids)
    st.html(tokens.legend_html(norm))
    if n <= tokens.LONG_TEXT_TOKENS:
        st.html(tokens.tokens_html(pieces, stats, values, norm, lm.tokenizer, rtf=rtf, seen=seen))
        return
    window = max(25, int(math.ceil(n / 400)))
    ylabel = "probability" if norm == "prob" else ("RatioNorm log10" if norm == "ratio" else "MaxNorm log10")
    st.plotly_chart(plots.token_strip(values, window=window, ylabel=ylabel, percent=norm == "prob"),
                    key="inspect_strip_chart")
    seg = 1000
    starts = list(range(0, n, seg))
    s0 = st.select_slider("Show the tokens of one segment", options=starts,
                          format_func=lambda s: f"{s + 1:,}–{min(s + seg, n):,}", key="inspect_segment")
    st.html(tokens.tokens_html(pieces, stats, values, norm, lm.tokenizer, rtf=rtf, seen=seen, start=s0,
                               stop=s0 + seg))


def _run_choice(lm):
    """The calibration run to compare with (chosen among the runs on this model, loaded), else None with a
    pointer to the newest run on another model and a button to switch the target to it."""
    from .sidebar import switch_target, target_choice

    run_list = calibration_runs(lm.identity)
    if run_list:
        ids = [m["id"] for m in run_list]
        rid = st.selectbox("Calibration run to compare with", ids, key="inspect_run",
                           format_func=lambda i: next(f"{m['name']} ({m['created']})" for m in run_list if m["id"] == i))
        from mia_core.runs import load_run

        try:
            return load_run(rid)
        except MiaError as e:
            show_error(e)
            return None
    other = related_run(lm.identity)
    if other is None:
        st.caption("No calibration run on this exact model yet: run one on the **Calibration run** page to see "
                   "where this text's scores fall among known members and non-members.")
        return None
    t = other.get("target") or {}
    st.info(f"No calibration run on this exact model ({lm.name}, {precision_words(lm.dtype, lm.quantize)}) yet. The "
            f"newest run, **{other['name']}** ({other['created']}), was on **{t.get('name', '?')}** "
            f"({precision_words(t.get('dtype', '?'), t.get('quantize', '?'))}): switch the target to it to see where "
            "this text's scores fall among that run's members and non-members.")
    if target_choice(t.get("source")) is not None and st.button(
            f"Switch the target to {t.get('name', 'that model')} and compare", key="go_inspect_switch"):
        switch_target(t.get("source"), t.get("dtype"), t.get("quantize"),
                      reference=(other.get("reference") or {}).get("source"))
        st.session_state["inspect_autorun"] = True
        st.rerun()
    return None


def attack_section(lm, res: dict):
    """Every sequence-level attack's score for the text, placed on a calibration run on this model when there
    is one (percentiles, decisions, the distributions).

    Parameters
    ----------
    lm : LoadedModel
        The target.
    res : dict
        The analysis (:func:`analyse`).

    Returns
    -------
    mia_core.runs.RunResult or None
        The calibration run compared with.
    """
    import pandas as pd

    from mia_core.reports import plots

    st.subheader("Attack scores for this text")
    run = _run_choice(lm)
    scores, notes = attack_scores(res, run)
    for note in notes:
        st.caption(note)
    rows = placement_rows(scores, run, ref_identity=res["ref_identity"])
    st.table(pd.DataFrame([{k: v for k, v in r.items() if not k.startswith("_") and k != "key"} for r in rows])
             .set_index("Attack"))
    st.caption(loss_note(res, run))
    if run is None:
        return None
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
    return run


def generator_words(spec: str) -> str:
    """A neighbour generator's spec in words (issue 53 item 6): ``masked-lm:embedded`` -> "the embedded masked LM
    (MiniLM with a masked-LM head, no download)", ``masked-lm:roberta-base`` -> "the masked LM roberta-base",
    ``t5:…`` -> "the span-filling model …", ``offline`` -> "the embedded SmolLM2 (it shares weights with
    SmolLM2-based targets)"; anything else as it is."""
    kind, _, name = str(spec).partition(":")
    if kind == "masked-lm":
        return ("the embedded masked LM (MiniLM with a masked-LM head, no download)" if name in ("", "embedded")
                else f"the masked LM {name}")
    if kind == "t5":
        return f"the span-filling model {name}"
    if kind == "offline":
        return ("the embedded SmolLM2 (it shares weights with SmolLM2-based targets)" if not name
                else f"the causal LM {name} (offline proposer)")
    return str(spec)


def precision_words(dtype, quantize) -> str:
    """``fp32`` / ``none`` -> "fp32"; ``fp16`` / ``int8`` -> "fp16, int8-quantised" (not "fp32/none")."""
    q = str(quantize or "none")
    return f"{dtype}" + ("" if q == "none" else f", {q}-quantised")

