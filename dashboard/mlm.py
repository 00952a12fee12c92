"""The logic behind the "Masked-LM audit" page (Mireshghallah et al. 2022, "Quantifying Privacy Risks of Masked
Language Models Using Membership Inference Attacks").

:func:`models_section`, :func:`texts_section` and :func:`settings_section` draw the page's inputs;
:func:`build_job` turns them into a checked request through the API's front door
(:func:`mia_core.api.mlm.prepare_mlm`: every bad input one red line before any model loads), loads the two models
here (a model that does not load is one line too) and returns the background job that runs the audit;
:func:`show_results` draws what it found (per attack: AUC, precision and recall at the population threshold, the
score histogram; the tables at the threshold, per group, the leaking members' features and the per-text scores).
"""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from mia_core.reports import plots
from mia_core.api.mlm import (MlmOptions, estimate_mlm, execute_mlm, mlm_choices, mlm_demo, prepare_mlm,
                              read_mlm_files)
from mia_core.errors import DataError, MiaError, SettingsError
from mia_core.metrics import decision_cis, metrics_rows
from mia_core.models import load_masked_lm
from mia_core.runs.results import csv_text

from .audit_jobs import AuditJob, save_finished
from .engine import engine_for, engine_widgets
from .ui import fmt_auc, fmt_num, fmt_pct, fmt_rate_ci, fmt_seconds, md_text, stage_progress, upload_files

RESULT_KEY = "mlm_audit_result"
STARTED_SIG_KEY = "mlm_started_sig"  # the inputs of the run this tab started last (dashboard.stale)
SIG_WORDS = {"data": "the texts", "model": "the models", "settings": "the settings"}
UPLOAD_TYPES = ["txt", "text", "csv", "tsv", "jsonl", "json", "parquet", "arrow", "feather", "zip"]
SHORT = {"likelihood_ratio": "Likelihood ratio", "loss": "Loss"}
ATTACKS = {"likelihood_ratio": "Likelihood ratio (target vs reference)", "loss": "Loss (target energy only)"}
RECIPE_LABELS = {"sum": "Sum over the masked tokens (default)",
                 "released": "Mean per masked token (authors' released code)"}


def models_section() -> dict:
    """Section 1: the target and reference masked LMs (specs typed by the user).

    Returns
    -------
    dict
        ``target`` and ``reference``, the typed specs (stripped; empty when not given).
    """
    st.subheader("1 · Masked language models")
    st.info("The sidebar's models are causal LMs and are not used here. One masked LM ships with the dashboard: "
            "`embedded` (the all-MiniLM-L6-v2 encoder with a masked-LM head trained on public-domain books, the "
            "neighbour proposer; bert-base-uncased's WordPiece vocabulary), usable as the reference of a target with "
            "that tokenizer. The **bundled demo** (section 2) brings its own pair: leave both boxes empty to use it. "
            "Otherwise give a Hugging Face hub id (needs network access) or a local folder holding a masked LM "
            "(config, weights and tokenizer), e.g. one saved with `save_pretrained`. Both models must share a "
            "tokenizer.", icon=":material/info:")
    c1, c2 = st.columns(2)
    target = c1.text_input("Target masked LM (the audited model)", key="mlm_target",
                           placeholder="/path/to/fine-tuned-bert or a hub id")
    reference = c2.text_input("Reference masked LM (e.g. the pre-trained model it was fine-tuned from)",
                              key="mlm_reference", placeholder="bert-base-uncased or /path/to/model")
    return {"target": target.strip(), "reference": reference.strip()}


def texts_section() -> dict:
    """Section 2: where the texts come from (the bundled demo, uploads, or pasted lines).

    Returns
    -------
    dict
        ``source``, ``demo`` (its files or None), the uploads (``mem_up``, ``non_up``, ``pop_up``) with ``mode``,
        ``text_column`` and ``group_column``, or the pasted texts (``mem_txt``, ``non_txt``, ``pop_txt``).
    """
    st.subheader("2 · Texts")
    demo = mlm_demo()
    source = st.radio("Texts from", (["demo"] if demo else []) + ["upload", "paste"], horizontal=True,
                      key="mlm_source", format_func={"demo": "Bundled demo", "upload": "Upload files",
                                                     "paste": "Paste texts"}.get, label_visibility="collapsed")
    out = {"source": source, "demo": demo, "mem_up": None, "non_up": None, "pop_up": None, "mem_txt": "",
           "non_txt": "", "pop_txt": "", "mode": "auto", "text_column": None, "group_column": None}
    if source == "demo":
        st.caption("Demo with ground truth: 100 member, 100 non-member and 100 population passages from five "
                   "public-domain novels (the calibration demo's texts). Reference: the embedded masked LM, trained "
                   "on eight other novels. Target: that model trained further on the 100 members "
                   "(`python -m mia_core build-proposer --mlm-demo-target`); it never saw the non-members or the "
                   "population. Leave the model boxes above empty to use this pair.")
    elif source == "upload":
        _upload_widgets(out)
    else:
        p1, p2, p3 = st.columns(3)
        out["mem_txt"] = p1.text_area("Members: one text per line", key="mlm_members_text", height=160)
        out["non_txt"] = p2.text_area("Non-members: one text per line", key="mlm_nonmembers_text", height=160)
        out["pop_txt"] = p3.text_area("Population: one text per line (disjoint from the other two)",
                                      key="mlm_population_text", height=160)
    return out


def _upload_widgets(out: dict) -> None:
    """The upload boxes and how their files are read, into ``out``."""
    u1, u2, u3 = st.columns(3)
    out["mem_up"] = upload_files(u1, "Members (believed to be in the training data)", type=UPLOAD_TYPES,
                                 key="mlm_members_up")
    out["non_up"] = upload_files(u2, "Non-members (known not to be)", type=UPLOAD_TYPES, key="mlm_nonmembers_up")
    out["pop_up"] = upload_files(u3, "Population (other known non-members: set the threshold)", type=UPLOAD_TYPES,
                                 key="mlm_population_up")
    o1, o2, o3 = st.columns(3)
    out["mode"] = o1.selectbox(".txt files hold", ["auto", "lines", "blank"], key="mlm_mode",
                               format_func={"auto": "auto-detect", "lines": "one text per line",
                                            "blank": "blank-line paragraphs"}.get,
                               help="auto-detect: paragraphs separated by blank lines when the file has them, else one "
                                    "text per line.")
    out["text_column"] = o2.text_input("Text column of tables (blank: auto)", key="mlm_text_column").strip() or None
    out["group_column"] = o3.text_input("Group column (e.g. patient id; blank: none)", key="mlm_group_column",
                                        help="§4.2: a group's score is the mean of its texts' scores.").strip() or None


def _recipe_changed() -> None:
    """A new recipe brings its own K (10 or 20); K can still be changed afterwards (an explicit K wins)."""
    st.session_state["mlm_k"] = mlm_choices()["k"][st.session_state["mlm_recipe"]]


def settings_section() -> dict:
    """Section 3: the attack's settings (energy recipe, α, K, seed, bootstrap resamples, the engine).

    Returns
    -------
    dict
        ``recipe``, ``alpha``, ``k``, ``seed``, ``n_boot``, ``engine``.
    """
    choices = mlm_choices()
    st.subheader("3 · Attack settings")
    recipe = st.radio("Energy recipe", list(choices["recipes"]), horizontal=True, key="mlm_recipe",
                      index=list(choices["recipes"]).index(choices["recipe"]), format_func=RECIPE_LABELS.get,
                      on_change=_recipe_changed,
                      help="§2.3. Sum: ⌈0.15·T⌉ masked tokens per pattern, K = 10, the energy sums their "
                           "log-probabilities (this project's reading of the paper's eq. 2). Released: ⌊0.15·T⌋ "
                           "masked tokens (at least 1), K = 20, the energy is the mean loss per masked token, as an "
                           "independent review (issue 28) found in the authors' released code. The two rank texts "
                           "of different lengths differently.")
    st.session_state.setdefault("mlm_k", choices["k"][recipe])  # the widget takes its value from here (no default)
    a1, a2, a3, a4 = st.columns(4)
    out = {"recipe": recipe}
    out["alpha"] = a1.number_input("α: share of the population flagged", **MlmOptions.widget_limits("alpha"),
                                   value=choices["alpha"], step=0.01, format="%.3f", key="mlm_alpha",
                                   help="§2.4: the threshold is the (1-α) quantile of the population's scores.")
    out["k"] = a2.number_input("K: masking patterns per text", **MlmOptions.widget_limits("k"), key="mlm_k",
                               help="§2.3: 15% of the tokens masked in each of K patterns. The recipe's K (10 for "
                                    "sum, 20 for released) is set when the recipe is chosen; a K typed here wins.")
    out["seed"] = a3.number_input("Seed", **MlmOptions.widget_limits("seed"), value=MlmOptions.default("seed"),
                                  key="mlm_seed")
    out["n_boot"] = a4.number_input("Bootstrap resamples (AUC CI)", **MlmOptions.widget_limits("n_bootstrap"),
                                    value=MlmOptions.default("n_bootstrap"), step=100, key="mlm_bootstrap")
    with st.expander("Advanced"):
        out["engine"] = engine_widgets("mlm")
    return out


def model_line(models: dict, texts: dict) -> str:
    """The line beside Run: the masked LM the audit tests and its reference, in words, before anything loads
    (the demo's own pair where the boxes are empty)."""
    demo = texts["source"] == "demo"
    target = models["target"] or ("the demo's target (the embedded masked LM trained further on the demo's "
                                  "members)" if demo else "not given yet")
    reference = models["reference"] or ("the demo's reference (the embedded masked LM)" if demo else "not given yet")
    return f"**Model tested:** {target}. **Reference:** {reference}."


def input_signature(models: dict, texts: dict, cfg: dict, panel) -> dict:
    """What a masked-LM result depends on, in three parts (``dashboard.stale``): the texts (source, uploads, pasted
    texts, how files are read), the models (target and reference, at the sidebar's precision) and the settings (not
    the engine: where the passes run never changes a number)."""
    from .stale import signature

    return signature(data={k: v for k, v in texts.items() if k != "demo"},
                     model=(models, getattr(panel, "dtype", None)),
                     settings={k: v for k, v in cfg.items() if k != "engine"})


def _lines(text: str) -> list[str]:
    return [t.strip() for t in (text or "").splitlines() if t.strip()]


def _inputs(models: dict, texts: dict) -> dict:
    """Keyword arguments for ``prepare_mlm``: the texts (with ids, groups and the reading's ``notes``) and the
    model specs; raises MiaError for what the page itself checks (nothing uploaded or pasted, no model given)."""
    if texts["source"] == "demo":
        return dict(demo=True, model=models["target"] or None, reference=models["reference"] or None, notes=[])
    if not models["target"]:
        raise SettingsError("give the target masked LM: a local folder or a hub id.")
    if not models["reference"]:
        raise SettingsError("give the reference masked LM: a local folder or a hub id (e.g. the target's base model).")
    specs = dict(model=models["target"], reference=models["reference"])
    if texts["source"] == "paste":
        mem, non, pop = _lines(texts["mem_txt"]), _lines(texts["non_txt"]), _lines(texts["pop_txt"])
        for role, v in (("members", mem), ("non-members", non), ("population texts", pop)):
            if not v:
                raise DataError(f"no {role} given: paste one text per line.")
        return dict(members=mem, nonmembers=non, population=pop, notes=[], **specs)
    if not texts["mem_up"] or not texts["non_up"]:
        raise DataError("upload the member and the non-member files.")
    if not texts["pop_up"]:
        raise DataError("upload the population file: texts known not to be in the training data, other than the "
                        "non-members, to set the threshold.")
    read = read_mlm_files(members=list(texts["mem_up"]), nonmembers=list(texts["non_up"]),
                          population=list(texts["pop_up"]), mode=texts["mode"], text_column=texts["text_column"],
                          group_column=texts["group_column"])
    read.pop("train_samples")
    return {**read, **specs}


ESTIMATE_MAX_BYTES = 5 * 2**20  # uploads above this are not re-read on every change of the page just to estimate


def _request(models: dict, texts: dict, cfg: dict, panel, kw: dict | None = None):
    """The checked request (every cheap check: texts, settings), nothing loaded; ``kw``: :func:`_inputs`'s, when
    already read."""
    kw = _inputs(models, texts) if kw is None else kw
    return prepare_mlm(k=int(cfg["k"]), seed=int(cfg["seed"]), alpha=float(cfg["alpha"]),
                       n_bootstrap=int(cfg["n_boot"]), recipe=cfg["recipe"], device=panel.device, dtype=panel.dtype,
                       trust_remote_code=panel.trust_remote_code, **kw)


def estimate_line(models: dict, texts: dict, cfg: dict, panel) -> str:
    """The line shown before Run (``mia_core.api.mlm.estimate_mlm``): K passes of every text through each model at
    this machine's measured speed, scaled to the models' sizes. Empty on bad input (Run says why) and for uploads
    over 5 MB."""
    ups = [f for k in ("mem_up", "non_up", "pop_up") for f in (texts.get(k) or [])]
    if sum(getattr(f, "size", 0) or 0 for f in ups) > ESTIMATE_MAX_BYTES:
        return ""
    try:
        return estimate_mlm(_request(models, texts, cfg, panel))[0]
    except (MiaError, OSError, ValueError):
        return ""


def build_job(models: dict, texts: dict, cfg: dict, panel) -> AuditJob:
    """The checked request, the two models loaded here, and the job that runs the audit, for the Run button.

    Parameters
    ----------
    models, texts, cfg : dict
        :func:`models_section`'s, :func:`texts_section`'s and :func:`settings_section`'s values.
    panel
        The sidebar's model panel (its device, dtype and ``trust_remote_code``).

    Returns
    -------
    AuditJob

    Raises
    ------
    MiaError
        Bad input, an engine that cannot start, a model that does not load; before anything runs.
    """
    # every cheap check first (texts, settings, the Ray cluster), then the two models, here, so that a bad
    # input or a model that does not load is one line on the page before anything runs in the background
    kw = _inputs(models, texts)
    for n_ in kw["notes"]:  # input notes (e.g. a file read as Windows-1252), kept when a later step fails
        st.caption(md_text(n_))
    request = _request(models, texts, cfg, panel, kw)
    engine = engine_for(cfg["engine"])  # Ray started or joined here: its errors before any model loads
    slot = st.empty()
    cb = stage_progress(slot.container())
    for role in ("model", "reference"):
        name = "target" if role == "model" else "reference"
        setattr(request, role, load_masked_lm(getattr(request, role), device=panel.device, dtype=panel.dtype,
                                              trust_remote_code=panel.trust_remote_code,
                                              progress=lambda m, f, name=name: cb(f"loading the {name}: {m}", f)))
    slot.empty()

    def work(progress):
        t0 = time.time()
        res = execute_mlm(request, progress=lambda m, f: progress(f"masked-LM audit: {m}", f))
        res.plan = None  # tokenisation and masks: large, not needed for display
        # saved by the job itself, once, whichever tab (or none) watches it
        return {"result": res, "notes": request.notes, "seconds": time.time() - t0,
                "record": save_finished("mlm", res)}

    # the whole run's time left starts from the estimate with the loaded models (their tokenizer and size); the
    # audit's reports give the whole audit's share done (one stage), so its own pace revises it
    seconds = estimate_mlm(request, target=request.model, reference=request.reference)[1]
    return AuditJob(f"Masked-LM audit: {len(request.members)} members + {len(request.nonmembers)} "
                    f"non-members, K = {int(cfg['k'])}, recipe {cfg['recipe']}", work, engine,
                    expected={"seconds": seconds, "fraction_is_whole": True} if seconds > 0 else None)


def _histogram(res, attack: str):
    """Members, non-members and population scores with the population threshold (the paper's Figure 3)."""
    scores = res.scores
    pt = res.metrics[attack]["population_threshold"]
    return plots.population_histogram(
        scores.loc[scores["label"] == 1, attack], scores.loc[scores["label"] == 0, attack],
        pd.Series(res.population_scores[attack], dtype=float), threshold=pt.get("threshold"),
        threshold_label=f"threshold: flags {fmt_pct(pt['alpha'])} of the population", title=ATTACKS[attack])


def metrics_table(metrics: dict, group: bool = False) -> pd.DataFrame:
    """The engine's metrics rows (AUC [CI], TPR at 1 % FPR) with the decisions at the population threshold.

    Parameters
    ----------
    metrics : dict
        ``{attack: metrics}`` (text or group level).
    group : bool
        Add the number of groups.

    Returns
    -------
    pandas.DataFrame
    """
    rows = []
    for r in metrics_rows(metrics, fprs=(0.01,)):
        name, m = r["attack"], metrics[r["attack"]]
        pt = m["population_threshold"]
        row = {"attack": SHORT.get(name, name)}
        if group:
            row["groups"] = m.get("n_groups")
        row.update({
            "AUC [95% CI]": r["auc_ci_text"],
            "TPR at 1% FPR": r["tpr_text"]["0.01"],
            "precision [95% CI]": fmt_rate_ci(pt.get("precision"), decision_cis(pt)["precision"]),
            "recall [95% CI]": fmt_rate_ci(pt.get("recall"), decision_cis(pt)["recall"]),
            "FPR [95% CI]": fmt_rate_ci(pt.get("fpr"), decision_cis(pt)["fpr"]),
            "flagged": f"{pt.get('n_flagged')} of {pt.get('n_members', 0) + pt.get('n_nonmembers', 0)}",
            "threshold": fmt_num(pt.get("threshold")),
        })
        rows.append(row)
    return pd.DataFrame(rows)


def show_results(stored: dict) -> None:
    """Section 4: everything the audit found.

    Parameters
    ----------
    stored : dict
        The job's result: ``result`` (``MlmAuditResult``), ``notes`` (the reading's) and ``seconds``.
    """
    res = stored["result"]
    st.subheader("4 · Results")
    for w in res.warnings:
        st.warning(md_text(w))
    for n in stored["notes"]:
        st.caption(md_text(n))
    s = res.settings
    took = "" if stored.get("seconds") is None else f" · {fmt_seconds(stored['seconds'])}"  # None: reopened
    st.caption(f"{s['n_members']} members · {s['n_nonmembers']} non-members · {s['n_population']} population texts · "
               f"K = {s['k']} · recipe {s.get('recipe', mlm_choices()['recipe'])} · α = {fmt_pct(s['alpha'])}{took}")
    _attack_columns(res)
    st.markdown("**At the population threshold**")
    st.dataframe(metrics_table(res.metrics), hide_index=True, key="mlm_metrics_table", width="stretch")
    if res.group_metrics:
        g0 = next(iter(res.group_metrics.values()))
        st.markdown(f"**Group level** (mean score per group; threshold from the "
                    f"{g0['population_threshold'].get('threshold_from', 'population')}; §4.2)")
        st.dataframe(metrics_table(res.group_metrics, group=True), hide_index=True, key="mlm_group_table",
                     width="stretch")
    _leaks(res.leak_features or {})
    scores = res.scores
    with st.expander("Per-text scores"):
        st.dataframe(scores, hide_index=True, key="mlm_scores_table")
    st.download_button("Download the per-text scores (CSV)", csv_text(scores).encode("utf-8"),
                       file_name="mlm_scores.csv", mime="text/csv", key="go_mlm_download")


def _attack_columns(res) -> None:
    """One column per attack: AUC, precision and recall at the population threshold, its histogram."""
    cols = st.columns(len(res.metrics))
    for col, (name, m) in zip(cols, res.metrics.items()):
        pt = m["population_threshold"]
        with col:
            st.markdown(f"**{ATTACKS.get(name, name)}**")
            x1, x2, x3 = st.columns(3)
            x1.metric("AUC", fmt_auc(m.get("auc")), help=f"95% bootstrap CI: {fmt_auc(m.get('auc'), m.get('auc_ci'))}")
            cis = decision_cis(pt)
            x2.metric("Precision", fmt_pct(pt.get("precision")),
                      help="Of the texts flagged at the population threshold, the share that are members.")
            x3.metric("Recall", fmt_pct(pt.get("recall")), help="Share of the members flagged.")
            st.caption(f"AUC {fmt_auc(m.get('auc'), m.get('auc_ci'))} · precision "
                       f"{fmt_rate_ci(pt.get('precision'), cis['precision'])} · recall "
                       f"{fmt_rate_ci(pt.get('recall'), cis['recall'])} (95 % Wilson intervals)")
            st.plotly_chart(_histogram(res, name), key=f"mlm_hist_{name}")


def _leaks(leaks: dict) -> None:
    """§4.6: the features of the flagged vs the unflagged members, per attack."""
    if not leaks:
        return
    with st.expander("Which members leak (§4.6): features of flagged vs unflagged members"):
        for name, lk in leaks.items():
            fl, un = lk.get("flagged") or {}, lk.get("unflagged") or {}
            feats = sorted(set(fl) | set(un))
            if feats:
                st.markdown(ATTACKS.get(name, name))
                st.dataframe(pd.DataFrame({"feature": feats, "flagged members": [fmt_num(fl.get(f)) for f in feats],
                                           "unflagged members": [fmt_num(un.get(f)) for f in feats]}),
                             hide_index=True, key=f"mlm_leak_{name}")
