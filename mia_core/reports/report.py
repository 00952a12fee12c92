"""Result tables and the self-contained HTML report of a run.

* Formatting lives in ``mia_core.formatting`` (:func:`fmt_pct`, :func:`fmt_num`, :func:`fmt_auc`,
  :func:`fmt_rate_ci`, :func:`fmt_seconds`, :func:`fmt_bytes`, :func:`fpr_label`), re-exported here.
* Tables: :func:`metrics_table` (one row per attack: AUC [95 % CI], TPR at each FPR of
  ``metrics.FPR_GRID`` with CIs, set sizes: the rows of ``mia_core.metrics.metrics_rows``),
  :func:`compare_table` (two runs side by side with differences), :func:`population_table`,
  :func:`modified_table`.
* :func:`build_report` turns a stored run (a :class:`mia_core.runs.StoredRun`: a ``RunResult`` with its
  ``id`` and ``meta``) into one HTML file: settings, models, data summary, blind-baseline verdict,
  tables and plotly figures, with plotly.js embedded once, so the file opens offline and can be
  mailed as it is. The HTML helpers
  (``_CSS``, ``_e``, ``_kv_table``, ``_df_html``) serve the dataset-inference report too
  (``mia_core.dataset_inference.report``).

Plain Python + plotly; user-supplied strings are HTML-escaped.
"""
from __future__ import annotations

import html
import json
import time
from typing import Sequence

import pandas as pd

from ..formatting import (  # noqa: F401 - re-exported: the pages and tests read them here
    NOT_ESTIMABLE, finite, fmt_auc, fmt_bytes, fmt_num, fmt_pct, fmt_rate_ci, fmt_seconds, fpr_label,
)
from ..metrics import FPR_GRID, fpr_key, metrics_frame, table_attacks, tpr_estimable

# --------------------------------------------------------------------------- tables


def metrics_table(metrics: dict, *, fprs: Sequence[float] = FPR_GRID, include_blind: bool = True,
                  with_ci: bool = True) -> pd.DataFrame:
    """One row per attack (strings, formatted for people): AUC [CI], TPR@FPR [CI], n
    (``mia_core.metrics.metrics_frame``)."""
    return metrics_frame(metrics, fprs=fprs, include_blind=include_blind, with_ci=with_ci)


def numeric_table(metrics: dict, *, fprs: Sequence[float] = FPR_GRID, include_blind: bool = True) -> pd.DataFrame:
    """The same figures as numbers (index: attack name; columns ``auc``, ``tpr@0.001`` ...)."""
    rows = {}
    for n in table_attacks(metrics, include_blind):
        m = metrics[n]
        t = m.get("tpr_at_fpr") or {}
        rows[n] = {"auc": finite(m.get("auc")), **{f"tpr@{fpr_key(f)}": finite(t.get(fpr_key(f))) for f in fprs}}
    return pd.DataFrame.from_dict(rows, orient="index")


def compare_table(a: dict, b: dict, *, label_a: str = "A", label_b: str = "B",
                  fprs: Sequence[float] = (0.01, 0.1), scores_a=None, scores_b=None,
                  n_bootstrap: int = 1000) -> pd.DataFrame:
    """Two runs' metrics side by side: for each attack in either run, AUC and TPR@FPR as
    "A → B", and B − A (AUC as a number, rates in percentage points). With both runs' score
    tables (``StoredRun.scores``), each difference gets a 95 % bootstrap CI: paired when the two
    runs evaluated the same texts (:func:`paired_scores`), else the runs resampled on their own."""
    from ..metrics import delta_ci

    names = list(dict.fromkeys([*table_attacks(a, True), *table_attacks(b, True)]))
    rows = []
    for n in names:
        ma, mb = a.get(n) or {}, b.get(n) or {}
        row = {"Attack": ma.get("label") or mb.get("label") or n}
        va, vb = finite(ma.get("auc")), finite(mb.get("auc"))
        d = None
        if scores_a is not None and scores_b is not None and va is not None and vb is not None:
            pair = paired_scores(scores_a, scores_b, n)
            if pair is not None:
                try:
                    d = delta_ci(pair[0], pair[1], fprs, paired=pair[2], n_bootstrap=n_bootstrap)
                except Exception:  # noqa: BLE001 - a CI that cannot be drawn is left out, the figures stay
                    d = None
        row[f"AUC {label_a} → {label_b}"] = f"{fmt_auc(va)} → {fmt_auc(vb)}"
        row["ΔAUC"] = (f"{vb - va:+.3f}" + (f" [{d['auc'][0]:+.3f}, {d['auc'][1]:+.3f}]" if d else "")
                       if va is not None and vb is not None else "–")
        for f in fprs:
            k = fpr_key(f)
            ta, tb = finite((ma.get("tpr_at_fpr") or {}).get(k)), finite((mb.get("tpr_at_fpr") or {}).get(k))
            ea, eb = tpr_estimable(f, ma.get("n_nonmembers")), tpr_estimable(f, mb.get("n_nonmembers"))
            row[f"TPR@{fpr_label(f)} {label_a} → {label_b}"] = (f"{fmt_pct(ta) if ea else NOT_ESTIMABLE} → "
                                                              f"{fmt_pct(tb) if eb else NOT_ESTIMABLE}")
            ok = ta is not None and tb is not None and ea and eb
            ci = (d or {}).get("tpr_at_fpr", {}).get(k) if ok else None
            row[f"Δ TPR@{fpr_label(f)}"] = (f"{(tb - ta) * 100:+.1f} pp" + (f" [{ci[0] * 100:+.1f}, {ci[1] * 100:+.1f}]"
                                                                          if ci else "") if ok else "–")
        rows.append(row)
    return pd.DataFrame(rows)


def paired_scores(scores_a, scores_b, attack: str):
    """``((labels, scores A), (labels, scores B), paired)`` of ``attack`` on each run's evaluated
    texts (``split`` eval when there is one); ``paired`` when both evaluated exactly the same
    texts (by text hash) with the same labels: then B is put in A's order. None when a run lacks
    the attack."""
    import numpy as np

    def ev(df):
        if attack not in df.columns:
            return None
        return df[df["split"] == "eval"] if "split" in df.columns else df

    da, db = ev(scores_a), ev(scores_b)
    if da is None or db is None or not len(da) or not len(db):
        return None
    la, lb = da["label"].to_numpy(dtype=int), db["label"].to_numpy(dtype=int)
    A = (la, da[attack].to_numpy(dtype=float))
    if "text_hash" in da.columns and "text_hash" in db.columns:
        ha, hb = da["text_hash"].astype(str).tolist(), db["text_hash"].astype(str).tolist()
        if len(set(ha)) == len(ha) and set(ha) == set(hb) and len(hb) == len(ha):
            pos = {h: i for i, h in enumerate(hb)}
            order = np.array([pos[h] for h in ha])
            if np.array_equal(lb[order], la):
                return A, (la, db[attack].to_numpy(dtype=float)[order]), True
    return A, (lb, db[attack].to_numpy(dtype=float)), False


def population_table(pop: dict, labels: dict | None = None) -> pd.DataFrame:
    """Decisions at a population threshold (``RunResult.population``): one row per attack,
    precision, recall and FPR on the evaluated texts, each with a 95 % Wilson interval."""
    from ..metrics import decision_cis

    labels = labels or {}
    rows = []
    for n, d in (pop.get("attacks") or {}).items():
        if "error" in d:
            rows.append({"Attack": labels.get(n, n), "Precision [95% CI]": d["error"], "Recall [95% CI]": "",
                         "FPR on evaluated non-members [95% CI]": ""})
            continue
        c = decision_cis(d)
        rows.append({"Attack": labels.get(n, n),
                     "Precision [95% CI]": fmt_rate_ci(d.get("precision"), c["precision"]),
                     "Recall [95% CI]": fmt_rate_ci(d.get("recall"), c["recall"]),
                     "FPR on evaluated non-members [95% CI]": fmt_rate_ci(d.get("fpr"), c["fpr"])})
    return pd.DataFrame(rows)


def modified_table(modified: dict, *, fpr: float = 0.01) -> pd.DataFrame:
    """Attacks on verbatim vs one-word-modified members (``mia_core.pipeline.modified.run_modified`` output):
    one row per attack, AUC and TPR at ``fpr`` for each variant."""
    variants = [v for v in ("verbatim", "duplicate", "delete", "add") if isinstance(modified.get(v), dict)]
    variants += [v for v in modified if v not in variants and v not in ("modifications", "n_unmodified")
                 and isinstance(modified[v], dict)]
    if not variants:
        return pd.DataFrame()
    names = [a for a in modified[variants[0]] if a != "blind" and isinstance(modified[variants[0]][a], dict)]
    k = fpr_key(fpr)
    rows = []
    for a in names:
        row = {"Attack": modified[variants[0]][a].get("label") or a}
        for v in variants:
            m = modified[v].get(a) or {}
            row[f"AUC {v}"] = fmt_auc(m.get("auc"))
        for v in variants:
            m = modified[v].get(a) or {}
            row[f"TPR@{fpr_label(fpr)} {v}"] = fmt_pct((m.get("tpr_at_fpr") or {}).get(k))
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- HTML report

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em;margin-bottom:.2em} h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em} th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4} .muted{color:#666;font-size:.9em}
.banner{padding:.8em 1em;border-radius:6px;margin:1em 0} .ok{background:#e8f5e9;border:1px solid #a5d6a7}
.caution{background:#fff8e1;border:1px solid #ffd54f} .shift{background:#ffebee;border:1px solid #ef9a9a}
.neutral{background:#eceff1;border:1px solid #b0bec5}
code{background:#f4f4f4;padding:1px 4px;border-radius:3px}
"""

_EXPLAIN = (
    "Each attack gives every text a score (higher = more likely that the model was trained on it). "
    "The AUC is the probability that a random member scores above a random non-member: 0.5 means the "
    "attack cannot tell the two sets apart (chance), 1.0 means it separates them perfectly. "
    "TPR at a low FPR is the share of members caught while wrongly flagging only that share of "
    "non-members; it is the figure that matters for confident claims (Carlini et al. 2022)."
)


def _e(s) -> str:
    return html.escape(str(s), quote=True)


def _kv_table(d: dict) -> str:
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in d.items() if v not in (None, "", [], {}))
    return f"<table>{rows}</table>"


def _df_html(df: pd.DataFrame) -> str:
    return df.to_html(index=False, escape=True, border=0)


def _model_line(d: dict | None) -> dict:
    if not d:
        return {}
    return {
        "name": d.get("name"), "identity": d.get("identity"), "dtype": d.get("dtype"), "quantisation": d.get("quantize"),
        "device": d.get("device"), "parameters": f"{d['n_params']:,}" if d.get("n_params") else None,
        "load time": fmt_seconds(d.get("load_seconds")) if d.get("load_seconds") is not None else None,
        "memory": f"{d['memory_mb']:.0f} MiB" if d.get("memory_mb") else None, "base model": d.get("base"),
    }


def smia_summary(sm: dict) -> str:
    """One line on how SMIA's network was trained and whether it learned anything that generalises."""
    tr = sm.get("training") or {}
    c = sm.get("curves") or {}
    best = tr.get("best_epoch")
    chance = c.get("chance_val_loss")
    line = (f"Preset {tr.get('preset', 'project')}: lr {tr.get('lr', float('nan')):g}, {tr.get('epochs')} epochs, "
            f"{tr.get('n_train_texts')} training and {tr.get('n_val_texts')} validation texts; epoch {best} kept "
            f"(lowest validation loss {tr.get('best_val_loss', float('nan')):.3f}).")
    if chance is not None and tr.get("best_val_loss") is not None and tr["best_val_loss"] >= chance - 1e-3:
        line += (" The validation loss never went below the constant predictor's (ln 2): the network learned "
                 "nothing that generalises to texts it did not train on, so its scores are close to chance.")
    sweep = [x for x in (sm.get("sweep") or []) if x.get("auc") is not None]
    if len(sweep) > 1:
        line += " AUC with the first k neighbours at inference (Table 5 of the paper): " + ", ".join(
            f"k = {x['n']}: {fmt_auc(x['auc'], x.get('auc_ci'))}" for x in sweep) + "."
    return line


def _head(run, meta: dict, title: str) -> list[str]:
    """The page's head, title, run line and the short explanation of the figures."""
    return [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_e(title)}</title>",
            f"<style>{_CSS}</style></head><body>",
            f"<h1>{_e(title)}</h1>",
            f"<p class='muted'>Run {_e(run.id)} · {_e(meta.get('created', ''))} · report written "
            f"{_e(time.strftime('%Y-%m-%d %H:%M'))} by mia-dashboard</p>",
            f"<p>{_e(_EXPLAIN)}</p>"]


def _verdict_banner(v: dict | None) -> list[str]:
    """The blind baseline's verdict as a coloured banner (none without a verdict)."""
    if not v:
        return []
    level = v.get("level", "caution")
    head = {"ok": "No sign of distribution shift", "caution": "Caution: the sets differ slightly",
            "shift": "Distribution shift: AUCs here do not measure membership"}.get(level, level)
    return [f"<div class='banner {_e(level)}'><b>Blind baseline — {_e(head)}.</b> {_e(v.get('message', ''))}</div>"]


def _results(metrics: dict) -> list[str]:
    """The metrics table and the attacks' warnings, merged."""
    from ..metrics import merge_warnings

    parts = ["<h2>Results</h2>", _df_html(metrics_table(metrics))]
    warns = merge_warnings(dict.fromkeys(w for m in metrics.values() if isinstance(m, dict)
                                         for w in (m.get("warnings") or [])))
    if warns:
        parts.append("<p class='muted'><b>Warnings:</b></p><ul class='muted'>"
                     + "".join(f"<li>{_e(w)}</li>" for w in warns) + "</ul>")
    return parts


def _has_smia_curves(sm) -> bool:
    return isinstance(sm, dict) and bool((sm.get("curves") or {}).get("epoch"))


def _figures(run, metrics: dict, attacks: list[str], labels: dict) -> list[str]:
    """ROC curves (linear, log-log), score histograms and SMIA's learning curve; plotly.js embedded once."""
    from . import plots

    figs = []
    if any((metrics.get(a) or {}).get("roc") for a in attacks):
        figs.append(plots.roc_figure(metrics, log=False))
        figs.append(plots.roc_figure(metrics, log=True))
    scores = run.scores
    if scores is not None and len(scores) and attacks:
        figs.append(plots.score_histograms(scores, attacks, labels=labels))
    sm = run.extra.get("smia")
    if _has_smia_curves(sm):
        figs.append(plots.smia_learning_curve(sm["curves"]))
    parts = [fig.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False})
             for i, fig in enumerate(figs)]
    if _has_smia_curves(sm):
        parts.append(f"<p>SMIA training: {_e(smia_summary(sm))}</p>")
    return parts


def _modified_section(run) -> list[str]:
    """The attacks on one-word-modified members (none when the run has none)."""
    mod = run.extra.get("modified")
    if not (isinstance(mod, dict) and isinstance(mod.get("verbatim"), dict)):
        return []
    return ["<h2>Modified members</h2><p>The same attacks with each evaluated member changed by one word "
            "(duplicated, deleted or added; Mozaffari &amp; Marathe 2024 §5.2); non-members unchanged.</p>",
            _df_html(modified_table(mod))]


def _population_section(pop: dict | None, labels: dict) -> list[str]:
    """Decisions at the population threshold (none when the run has none)."""
    if not (pop and pop.get("attacks")):
        return []
    return [f"<h2>Decisions at a threshold fitted on a population set</h2><p>Threshold flags "
            f"{_e(fmt_pct(pop.get('alpha')))} of {_e(pop.get('n_population'))} known non-members "
            "(Mireshghallah et al. 2022 §2.4).</p>",
            _df_html(population_table(pop, labels))]


def _models_section(models: dict) -> list[str]:
    """The target and reference models' records."""
    parts = ["<h2>Models</h2>"]
    for role in ("target", "reference"):
        if models.get(role):
            parts.append(f"<h3>{role.capitalize()}</h3>" + _kv_table(_model_line(models[role])))
    return parts


def _data_section(run, meta: dict) -> list[str]:
    """Set sizes, the texts used for training, the data files and the reading notes."""
    scores = run.scores
    data = dict(meta.get("data") or {})
    summary = {"members": meta.get("n_members"), "non-members": meta.get("n_nonmembers"),
               "texts evaluated": meta.get("n_eval")}
    if scores is not None and "split" in scores.columns:
        summary["texts used for training (split)"] = int((scores["split"] == "train").sum())
    summary.update({k: (", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v) for k, v in data.items()})
    parts = ["<h2>Data</h2>", _kv_table(summary)]
    if run.report:
        parts.append("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in run.report) + "</ul>")
    return parts


def _settings_section(cfg: dict, metrics: dict, attacks: list[str], labels: dict) -> list[str]:
    """The attacks (with their papers), their parameters and the run's settings."""
    settings = {
        "attacks": ", ".join(f"{labels.get(a, a)} ({(metrics.get(a) or {}).get('citation', '')})" for a in attacks),
        "attack parameters": json.dumps(cfg.get("params") or {}),
        "token statistics": json.dumps(cfg.get("stats") or {}),
        "bootstrap resamples": cfg.get("n_bootstrap"), "seed": cfg.get("seed"),
        "train/eval split": cfg.get("split"), "blind baseline": cfg.get("blind"),
    }
    return ["<h2>Settings</h2>", _kv_table(settings)]


def build_report(run, *, title: str | None = None) -> str:
    """A self-contained HTML report of a stored run.

    Parameters
    ----------
    run
        A ``mia_core.runs.StoredRun`` (its meta, metrics, scores, config, models, verdict, extras).
    title
        The page's title (default: "Membership-inference audit: <run name or id>").

    Returns
    -------
    str
        The page: head, verdict banner, results and warnings, figures, modified members, population
        decisions, models, data, settings and timings.
    """
    meta, metrics = run.meta or {}, run.metrics or {}
    attacks = run.attack_names()
    labels = {a: (metrics.get(a) or {}).get("label", a) for a in attacks}
    title = title or f"Membership-inference audit: {meta.get('name') or run.id}"
    parts = [*_head(run, meta, title), *_verdict_banner(run.verdict), *_results(metrics),
             *_figures(run, metrics, attacks, labels), *_modified_section(run),
             *_population_section(run.population, labels), *_models_section(run.models), *_data_section(run, meta),
             *_settings_section(run.config, metrics, attacks, labels)]
    if run.timings:
        parts.append("<h2>Timings</h2>" + _kv_table({k: fmt_seconds(v) for k, v in run.timings.items()}))
    parts.append("</body></html>")
    return "\n".join(parts)
