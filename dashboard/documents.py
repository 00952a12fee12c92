"""The logic behind the "Document audit" page (Meeus et al. 2024, "Did the Neurons Read your Book?").

:func:`books_section` and :func:`settings_section` draw the page's inputs; :func:`build_job` turns them into a
checked request through the API's front door (:func:`mia_core.api.documents.prepare_documents`: every bad input
one red line before any model loads) and the background job that runs it; :func:`show_results` draws what the
audit found (headline, the normalisation x feature extractor table, ROC per fold, the partial-document curve,
the baselines, the precision table, the per-book scores and a book's token strip).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from mia_core.reports import plots
from mia_core.api.documents import (
    PASS_SHARE, DocumentOptions, demo_books, document_choices, document_demo, document_precision, documents_expected,
    execute_documents, pipeline_words, prepare_documents, read_documents,
)
from mia_core.errors import MiaError, SettingsError
from mia_core.formatting import NOT_ESTIMABLE
from mia_core.runs.results import csv_text

from .audit_jobs import AuditJob, save_finished
from .engine import engine_for, engine_widgets
from .loaders import load_with_progress
from .ui import fmt_num, fmt_pct, fmt_seconds, md_text, show_error, upload_files

RESULT_KEY = "doc_audit_result"
PRECISION_KEY = "doc_audit_precision"
SAVED_KEY = "doc_audit_saved"  # where the run store keeps it (dashboard.audit_jobs.save_finished)
SIG_KEY = "doc_audit_sig"  # the inputs the shown result came from (dashboard.stale); None: unknown
STARTED_SIG_KEY = "doc_started_sig"  # the inputs of the run this tab started last
SIG_WORDS = {"data": "the books", "model": "the model", "settings": "the settings"}
DOC_TYPES = ["txt", "text", "md", "zip"]


def fmt_pm(mean, std, pct: bool = False) -> str:
    """``mean ± std`` as a percentage or an AUC (3 decimals); the std left out when missing.

    Parameters
    ----------
    mean, std : float or None
        The figures.
    pct : bool
        As percentages (a TPR) rather than an AUC.

    Returns
    -------
    str
    """
    f = fmt_pct if pct else (lambda v: fmt_num(v, 3) if v is None or not math.isfinite(v) else f"{v:.3f}")  # AUC: 3 decimals
    s = f(mean)
    if std is not None and not (isinstance(std, float) and math.isnan(std)):
        s += f" ± {f(std)}"
    return s


def _read_docs(role: str, uploads, paths_text: str, strip: bool):
    """Documents from uploads or from paths typed one per line; raises MiaError."""
    if uploads:
        return read_documents(list(uploads), strip=strip)
    paths = [p.strip() for p in (paths_text or "").splitlines() if p.strip()]
    if not paths:
        raise SettingsError(f"give the {role} books: upload .txt files or a .zip, or type a folder or file path.")
    return read_documents(paths, strip=strip)


def books_section() -> dict:
    """Section 1: where the books come from (the bundled demo, uploads, or paths on this machine).

    Returns
    -------
    dict
        ``source``, ``demo`` (the demo's files or None), ``mem_up``, ``non_up``, ``mem_paths``, ``non_paths``,
        ``use_demo_model``, ``strip``.
    """
    st.subheader("1 · Books")
    demo = document_demo()
    source = st.radio("Books from", (["demo"] if demo else []) + ["upload", "paths"], horizontal=True,
                      key="doc_source", format_func={"demo": "Bundled demo", "upload": "Upload files",
                                                     "paths": "Folders or files on this machine"}.get,
                      label_visibility="collapsed")
    c1, c2 = st.columns(2)
    out = {"source": source, "demo": demo, "mem_up": None, "non_up": None, "mem_paths": "", "non_paths": "",
           "use_demo_model": False, "strip": True}
    if source == "demo":
        st.caption("Demo with ground truth: 20 member and 20 non-member documents, each five passages (about 250 "
                   "words) of one of five public-domain novels in reading order. The demo target was fine-tuned on "
                   "the member passages and never saw the non-member ones. Short documents rather than whole books, "
                   "so that the demo runs in minutes on a CPU (151 s from nothing cached on an idle 2-core AMD "
                   "EPYC, the partial-document curve included; a busy machine takes longer); the method is the same "
                   "at any length.")
        out["use_demo_model"] = st.checkbox("Use the demo target (instead of the sidebar's model)", value=True,
                                            key="doc_demo_model")
    elif source == "upload":
        out["mem_up"] = upload_files(c1, "Member books (believed to be in the training data): .txt files or a .zip",
                                     type=DOC_TYPES, key="doc_members_up")
        out["non_up"] = upload_files(c2, "Non-member books (known not to be): .txt files or a .zip",
                                     type=DOC_TYPES, key="doc_nonmembers_up")
    else:
        out["mem_paths"] = c1.text_area("Member books: one .txt file, folder of .txt files or .zip per line",
                                        key="doc_members_paths", height=90)
        out["non_paths"] = c2.text_area("Non-member books: one .txt file, folder of .txt files or .zip per line",
                                        key="doc_nonmembers_paths", height=90)
    if source != "demo":
        out["strip"] = st.checkbox("Strip Project Gutenberg headers and footers", value=True, key="doc_strip")
        st.caption("Each file is one book. Non-members should come from the same kind of source and era as the "
                   "members, or the classifier learns the difference in style, not membership.")
    return out


def input_signature(books: dict, cfg: dict, panel) -> dict:
    """What a document audit's result depends on, in three parts (``dashboard.stale``): the books (source, uploads,
    paths, stripping), the model (the demo target, or the sidebar's target and reference at their precision) and
    the settings (not the engine: where the passes run never changes a number)."""
    from .stale import signature

    data = {k: v for k, v in books.items() if k not in ("demo", "use_demo_model")}
    model = "demo target" if books.get("use_demo_model") else (
        getattr(panel, "target_spec", None), getattr(panel, "reference_spec", None), getattr(panel, "dtype", None),
        getattr(panel, "quantize", None))
    return signature(data=data, model=model, settings={k: v for k, v in cfg.items() if k != "engine"})


def settings_section() -> dict:
    """Section 2: the method's settings (context, feature extractors, folds, normalisations, and more).

    Returns
    -------
    dict
        The widgets' values: ``context``, ``feat_choice``, ``folds``, ``norms``, ``n_bins``, ``n_trees``,
        ``seed``, ``agg_count``, ``hist_outside``, ``do_partial``, ``do_baselines``, ``do_precision``, ``engine``.
    """
    choices = document_choices()
    norm_labels = choices["normalizations"]
    st.subheader("2 · Settings")
    s1, s2, s3 = st.columns(3)
    out = {"context": s1.number_input(
        "Context C (tokens per window)", **DocumentOptions.widget_limits("context"), value=choices["context"], step=64,
        key="doc_context", help="§4.1: windows of C tokens with stride C-1. The paper uses 128, 1024 and 2048.")}
    out["feat_choice"] = s2.radio(
        "Feature extractor", ["both", "hist", "agg"], key="doc_features", horizontal=True,
        format_func={"both": "both", "hist": "HistFE", "agg": "AggFE"}.get,
        help="§4.3: HistFE = histogram of the normalised values (N_b bins); AggFE = 13 summary statistics.")
    out["folds"] = s3.number_input("Folds (k)", **DocumentOptions.widget_limits("folds"),
                                   value=DocumentOptions.default("folds"), key="doc_folds",
                                   help="§5.2.4: stratified k-fold cross-validation, k = 5 in the paper.")
    out["norms"] = st.multiselect("Normalisations (§4.2)", list(norm_labels), default=list(norm_labels),
                                  format_func=lambda n: norm_labels.get(n, n), key="doc_norms")
    with st.expander("More settings"):
        _more_settings(out, choices)
    return out


def _more_settings(out: dict, choices: dict) -> None:
    """The "More settings" expander's widgets, into ``out``."""
    a1, a2, a3 = st.columns(3)
    out["n_bins"] = a1.number_input("Histogram bins N_b", **DocumentOptions.widget_limits("n_bins"), value=choices["n_bins"],
                                    key="doc_bins", help="The paper uses 1,000 bins; fewer suit a handful of books.")
    out["n_trees"] = a2.number_input("Random-forest trees", **DocumentOptions.widget_limits("n_estimators"),
                                     value=DocumentOptions.default("n_estimators"), key="doc_trees",
                                     help="§4.4: 500 trees of depth 5.")
    out["seed"] = a3.number_input("Seed", **DocumentOptions.widget_limits("seed"), value=DocumentOptions.default("seed"),
                                 key="doc_seed")
    b1, b2 = st.columns(2)
    out["agg_count"] = b1.checkbox("AggFE: add the token count (as the authors' code)", value=False,
                                   key="doc_agg_count",
                                   help="Off by default: document length is no membership signal and can confound "
                                        "members and non-members.")
    out["hist_outside"] = b2.radio("HistFE: held-out values outside the fitted bins", ["clip", "drop"],
                                   horizontal=True, key="doc_hist_outside",
                                   format_func={"clip": "clip into the end bins", "drop": "drop (authors' code)"}.get,
                                   help="clip: fractions that sum to 1 (default); drop: the authors' "
                                        "numpy.histogram(density=True), which leaves them out.")
    out["do_partial"] = st.checkbox("Partial-document curve (AUC vs tokens seen per book, §6.4)", value=True,
                                    key="doc_partial")
    out["do_baselines"] = st.checkbox("Sequence-level baselines scaled to documents (§6.2; another model pass)",
                                      value=False, key="doc_baselines")
    out["do_precision"] = st.checkbox("Precision table: re-run at fp32 / bf16 / int8 / int4 (§6.4, Table 5; reloads "
                                      "the model four times, slow on a CPU)", value=False, key="doc_precision")
    out["engine"] = engine_widgets("doc")


def _request(books: dict, cfg: dict, show_notes: bool = True):
    """The books read (their reading notes shown, unless ``show_notes`` is False) and the checked request
    (overlap, then enough books for the folds: the engine's checks, worded with the page's labels)."""
    if not cfg["norms"]:
        raise SettingsError("choose at least one normalisation.")
    if books["source"] == "demo":
        members, nonmembers = demo_books()
    else:
        members = _read_docs("member", books["mem_up"], books["mem_paths"], books["strip"])
        nonmembers = _read_docs("non-member", books["non_up"], books["non_paths"], books["strip"])
    for d in (members + nonmembers) if show_notes else ():  # e.g. a book read as Windows-1252
        for n_ in (d.strip or {}).get("notes") or []:
            st.caption(md_text(n_))
    feats = ("hist", "agg") if cfg["feat_choice"] == "both" else (cfg["feat_choice"],)
    request = prepare_documents(
        members, nonmembers, context=int(cfg["context"]), normalizations=tuple(cfg["norms"]),
        features=feats, folds=int(cfg["folds"]), n_bins=int(cfg["n_bins"]), seed=int(cfg["seed"]),
        agg_count=bool(cfg["agg_count"]), hist_outside=cfg["hist_outside"],
        partial_lengths=document_choices()["partial_lengths"] if cfg["do_partial"] else None,
        baselines=bool(cfg["do_baselines"]), n_estimators=int(cfg["n_trees"]))
    return request


ESTIMATE_MAX_BYTES = 5 * 2**20  # books above this are not re-read on every change of the page just to estimate


def _books_bytes(books: dict) -> int:
    """The size of the books the page would read (uploads, or the files under the typed paths)."""
    import os

    if books["source"] == "demo":
        return 0
    if books["source"] == "upload":
        return sum(getattr(f, "size", 0) or 0 for f in [*(books["mem_up"] or []), *(books["non_up"] or [])])
    total = 0
    for line in f"{books['mem_paths']}\n{books['non_paths']}".splitlines():
        p = os.path.expanduser(line.strip())
        if os.path.isfile(p):
            total += os.path.getsize(p)
        elif os.path.isdir(p):
            total += sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(p) for f in fs)
    return total


def estimate_line(books: dict, cfg: dict, panel) -> str:
    """The line shown before Run (``mia_core.api.documents.estimate_documents``): the books' pass the cache
    lacks at this machine's measured speed for the model, the baselines when ticked, the k-fold; the model the
    run would use is looked up among those loaded already (never loaded here). Empty until the books are there,
    on bad input (Run says why) and for books over 5 MB (they would be re-read on every change of the page)."""
    from mia_core.api.documents import estimate_documents

    from .loaders import loaded

    if _books_bytes(books) > ESTIMATE_MAX_BYTES:
        return ""
    try:
        request = _request(books, cfg, show_notes=False)
    except (MiaError, OSError, ValueError):
        return ""
    if books["use_demo_model"]:
        target = loaded(str(books["demo"]["target"]), panel.dtype, panel.quantize, panel.device,
                        panel.trust_remote_code)
        reference = None
    else:
        target, reference = panel.target, panel.reference
    return estimate_documents(request, target=target, reference=reference)[0]


def model_line(books: dict, panel) -> str:
    """The line beside Run: the model the audit tests and its reference, in words, before anything loads (the
    demo target when its box is ticked, not the sidebar's model)."""
    if books.get("use_demo_model"):
        return ("**Model tested:** the demo target (SmolLM2-135M fine-tuned on the demo's member passages), not the "
                "sidebar's model. **Reference:** none.")
    target = panel.target_spec
    tested = "the embedded SmolLM2-135M" if target in (None, "", "smollm2") else f"{target}"
    return (f"**Model tested:** {tested} (the sidebar's model). **Reference:** "
            + (f"{panel.reference_spec}." if panel.reference_spec else "none."))


def build_job(books: dict, cfg: dict, panel) -> AuditJob:
    """The checked request and the job that runs it (and the precision table when asked), for the Run button.

    Parameters
    ----------
    books, cfg : dict
        :func:`books_section`'s and :func:`settings_section`'s values.
    panel
        The sidebar's model panel (its loaded target and reference, dtype, device...).

    Returns
    -------
    AuditJob

    Raises
    ------
    MiaError
        Bad input, an engine that cannot start, a target that is not loaded; before anything runs.
    """
    request = _request(books, cfg)  # cheap checks first (settings, books), the model last
    engine = engine_for(cfg["engine"])  # Ray started or joined here: its errors before any model loads
    demo, use_demo_model = books["demo"], books["use_demo_model"]
    target = panel.target
    if use_demo_model:
        target = load_with_progress(str(demo["target"]), panel.dtype, panel.quantize, panel.device,
                                    panel.trust_remote_code, label="Loading the demo target")
    elif target is None:
        raise SettingsError(f"the target model is not loaded: {panel.target_error or 'choose one in the sidebar'}.")
    reference = None if use_demo_model else panel.reference
    precision_spec = str(demo["target"]) if use_demo_model else panel.target_spec

    last = {"pass": None}  # the books pass's last message, until it is closed (then None: closed)

    def report(progress, m: str, f: float) -> None:
        # the pass over the books is a stage of its own (its share of the audit's progress, PASS_SHARE, as its
        # whole), so the whole run's time left follows the pass's own pace; then the rest of the audit (the
        # baselines' pass, the forests, the partial documents), once the pass is closed as done with its last
        # message (a pass's "... windows" report, or "all ... cached": not a pass, dashboard.ui.whole_run_left)
        if f < PASS_SHARE:
            last["pass"] = m
            progress(f"books' model pass: {m}", f / PASS_SHARE)
            return
        if last["pass"] is not None:
            progress(f"books' model pass: {last['pass']}", 1.0)
            last["pass"] = None
        progress(f"document audit: {m}", (f - PASS_SHARE) / (1 - PASS_SHARE))

    def work(progress):
        # one stage per part, each with its elapsed time and time left (the audit's own messages name the
        # book and window; they become the stage's message, not a stage each)
        res = execute_documents(request, target=target, reference=reference,
                                progress=lambda m, f: report(progress, m, f))
        prec = None
        if cfg["do_precision"]:
            prec = document_precision(request, precision_spec, device=panel.device,
                                      progress=lambda m, f: progress(f"precision table: {m}", f))
        # saved by the job itself, once, whichever tab (or none) watches it; the per-token strips and the
        # precision table stay with the result in memory (mia_core.audits.documents: what the store keeps)
        return {"result": res, "precision": prec, "record": save_finished("documents", res)}

    # the whole run's time left starts from the estimate before Run (not with the precision table: its four
    # loads and passes are not estimated; each of its stages shows its own time left)
    expected = None if cfg["do_precision"] else documents_expected(request, target=target, reference=reference)
    return AuditJob(f"Document audit: {len(request.members)} member + {len(request.nonmembers)} non-member "
                    f"documents, target {target.name}", work, engine, expected=expected)


def show_results(res, prec) -> None:
    """Section 3: everything the audit found.

    Parameters
    ----------
    res : mia_core.documents.DocumentAuditResult
        The audit's result.
    prec : pandas.DataFrame or None
        The precision table, when it was asked for.
    """
    st.subheader("3 · Results")
    est = res.tpr_estimable  # TPR at an FPR below 1/(held-out non-members per fold) is not estimable

    def tpr(k, mean, std=None):
        return fmt_pm(mean, std, pct=True) if est.get(k, True) else NOT_ESTIMABLE

    for w in res.warnings:
        st.warning(md_text(w))
    _headline(res, tpr)
    _pipelines(res, tpr)
    _roc(res)
    _partial(res, tpr)
    _baselines(res, tpr)
    _precision(prec)
    _scores(res)
    _strip(res)


FEATURE_WORDS = {"hist": "HistFE", "agg": "AggFE"}  # the paper's names (mia_core.api.documents.pipeline_words)


def _headline(res, tpr) -> None:
    n_m = int(res.labels.sum())
    best = res.best_pipeline
    bm = res.metrics[best]
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Member + non-member books", f"{n_m} + {len(res.labels) - n_m}")
    m2.metric(f"Best AUC ({pipeline_words(best)})", fmt_pm(bm["auc_mean"], bm["auc_std"]))
    m3.metric("TPR at 1% FPR", tpr("0.01", bm["tpr_at_fpr_mean"]["0.01"], bm["tpr_at_fpr_std"]["0.01"]))
    m4.metric("TPR at 10% FPR", tpr("0.1", bm["tpr_at_fpr_mean"]["0.1"], bm["tpr_at_fpr_std"]["0.1"]))
    st.caption(f"Model {res.model.get('name')} · context {res.settings['context']} · {res.settings['folds']} folds · "
               f"{res.timings.get('tokens', 0):,} tokens in {fmt_seconds(res.timings.get('total_s'))}. The best "
               "pipeline is chosen on the same folds: treat its figure as descriptive.")


def _pipelines(res, tpr) -> None:
    st.markdown("**Normalisation × feature extractor** (mean ± std over the folds)")
    tab = res.table()
    shown = pd.DataFrame({
        "normalisation": [pipeline_words(n) for n in tab["normalization"]],
        "features": [FEATURE_WORDS.get(f, f) for f in tab["features"]],
        "AUC": [fmt_pm(a, s) for a, s in zip(tab["auc_mean"], tab["auc_std"])],
        "TPR at 1% FPR": [tpr("0.01", a, s) for a, s in zip(tab["tpr_1_mean"], tab["tpr_1_std"])],
        "TPR at 10% FPR": [tpr("0.1", a, s) for a, s in zip(tab["tpr_10_mean"], tab["tpr_10_std"])],
        "pooled AUC": [fmt_num(v) for v in tab["pooled_auc"]],
    })
    # a TPR column that is n/e in every row says nothing the caption above does not (issue 53 item 9)
    shown = shown[[c for c in shown.columns if not (c.startswith("TPR") and (shown[c] == NOT_ESTIMABLE).all())]]
    st.dataframe(shown, hide_index=True, width="stretch", key="doc_table")


def _roc(res) -> None:
    pipe = st.selectbox("Pipeline for the ROC curves", res.pipelines, index=res.pipelines.index(res.best_pipeline),
                        format_func=pipeline_words, key="doc_roc_pipeline")
    fold_metrics = {
        f"fold {i + 1}": {"roc": f.get("roc"), "auc": f.get("auc"), "label": f"Fold {i + 1}",
                          "colour": plots.PALETTE[i % len(plots.PALETTE)]}  # one colour per fold, none repeated
        for i, f in enumerate(res.metrics[pipe].get("folds", []))
    }
    log_axes = st.toggle("Log-log axes", value=False, key="doc_roc_log")
    st.plotly_chart(plots.roc_figure(fold_metrics, log=log_axes, title=f"ROC per fold — {pipeline_words(pipe)}"),
                    key="doc_roc_chart")


def _partial(res, tpr) -> None:
    if res.partial is None or not len(res.partial):
        return
    st.markdown("**Partial documents** (§6.4): how much of each book the auditor needs. Each book is cut "
                "to its first L tokens and the dictionaries, histogram bins and meta-classifier are re-fitted "
                "at each L on the same folds; the curves are the paper's MaxNormTF + HistFE and this audit's "
                "best full-document pipeline.")
    roles = {"paper": "paper", "best": "best full-document", "paper+best": "paper, best full-document"}
    named = res.partial.assign(pipeline=[f"{pipeline_words(p)} ({roles[r]})" if r in roles else pipeline_words(p)
                                         for p, r in zip(res.partial["pipeline"], res.partial["role"])])
    st.plotly_chart(plots.partial_documents_figure(named), key="doc_partial_chart")
    st.dataframe(pd.DataFrame({
        "tokens per book": res.partial["n_tokens"], "pipeline": named["pipeline"],
        "AUC": [fmt_pm(a, s) for a, s in zip(res.partial["auc_mean"], res.partial["auc_std"])],
        "TPR at 1% FPR": [tpr("0.01", v) for v in res.partial["tpr_1_mean"]],
        "TPR at 10% FPR": [tpr("0.1", v) for v in res.partial["tpr_10_mean"]],
        "books truncated": res.partial["n_truncated"],
    }), hide_index=True, key="doc_partial_table")


def _baselines(res, tpr) -> None:
    bt = res.baseline_table()
    if not len(bt):
        return
    st.markdown("**Sequence-level baselines scaled to documents** (§6.2)")
    st.dataframe(pd.DataFrame({
        "attack": bt["attack"], "scaling": bt["scaling"],
        "AUC": [fmt_pm(a, s) for a, s in zip(bt["auc_mean"], bt["auc_std"])],
        "TPR at 1% FPR": [tpr("0.01", v) for v in bt["tpr_1_mean"]],
        "TPR at 10% FPR": [tpr("0.1", v) for v in bt["tpr_10_mean"]],
    }), hide_index=True, key="doc_baseline_table")
    for n in res.baseline_notes:
        st.caption(n)


def _precision(prec) -> None:
    if prec is None or not len(prec):
        return
    st.markdown("**Model precision** (§6.4, Table 5)")
    st.dataframe(pd.DataFrame({
        "precision": prec["precision"],
        "AUC": [fmt_pm(a, s) for a, s in zip(prec["auc_mean"], prec["auc_std"])],
        "TPR at 1% FPR": [fmt_pct(v) for v in prec["tpr_1_mean"]],
        "TPR at 10% FPR": [fmt_pct(v) for v in prec["tpr_10_mean"]],
        "time": [fmt_seconds(v) for v in prec["seconds"]],
        "memory (MB)": [fmt_num(v) for v in prec["memory_mb"]],
        "error": prec["error"],
    }), hide_index=True, key="doc_precision_table")


def _scores(res) -> None:
    st.markdown("**Per-book membership probability** (out of fold: each book scored by a forest that never saw it)")
    sc = res.scores
    prob_cols = [c for c in sc.columns if c.startswith("prob:")]
    scores_shown = pd.DataFrame({"book": sc["document"], "member": sc["label"].map({1: "yes", 0: "no"}),
                                 "fold": sc["fold"] + 1, "tokens": sc["n_tokens"]})
    for c in prob_cols:
        scores_shown[c[5:]] = [fmt_pct(v) for v in sc[c]]
    st.dataframe(scores_shown, hide_index=True, key="doc_scores_table")
    st.download_button("Download the per-book scores (CSV)", csv_text(sc).encode("utf-8"),
                       file_name="document_scores.csv", mime="text/csv", key="go_doc_download")


def _strip(res) -> None:
    labels = document_choices()["normalizations"]
    st.markdown("**Normalised token values along a book**")
    if not res.has_strips:
        st.caption("Not kept with a saved run (one value per token of every book): run the audit again to draw a "
                   "book's strip.")
        return
    t1, t2, t3 = st.columns([2, 1, 1])
    doc_i = t1.selectbox("Book", range(len(res.names)), format_func=lambda i: res.names[i], key="doc_strip_book")
    strip_norm = t2.selectbox("Normalisation", res.settings["normalizations"], key="doc_strip_norm",
                              format_func=lambda n: labels.get(n, n))
    n_tok = int(res.documents[doc_i]["n_tokens"])
    window = t3.number_input("Window (tokens)", min_value=1, max_value=max(1, n_tok), key="doc_strip_window",
                             value=max(1, min(200, n_tok // 50 or 1)))
    try:
        vals = res.token_values(int(doc_i), strip_norm)
        name = labels.get(strip_norm, strip_norm)
        st.plotly_chart(plots.token_strip(vals, window=int(window), ylabel=name,
                                          title=f"{res.names[doc_i]}: mean {name} "
                                                f"per {int(window)}-token window (higher = less expected)"),
                        key="doc_strip_chart")
        finite = vals[np.isfinite(vals)]
        st.caption(f"{n_tok:,} tokens · median {fmt_num(np.median(finite) if finite.size else None)} · "
                   f"the book was held out in fold {int(res.scores['fold'].iloc[doc_i]) + 1}; values use that "
                   "fold's dictionaries.")
    except MiaError as e:
        show_error(e)
