"""The self-contained HTML report of a dataset-inference result (``report.html`` of
``mia infer-dataset`` and of :meth:`DatasetInferenceResult.save`): the verdict, both p-values, the
guards, the feature weights, the score histograms and the power curve (Maini et al. 2024, LLM Dataset
Inference, NeurIPS). It uses the run report's HTML helpers (``mia_core.reports.report``).
"""
from __future__ import annotations

import time

import pandas as pd

from ..reports.report import _CSS, _df_html, _e, _kv_table
from .significance import format_p


def dataset_inference_report(result, *, title: str = "Dataset inference") -> str:
    """A self-contained HTML report of a dataset-inference result
    (``mia_core.dataset_inference.DatasetInferenceResult``): the verdict, both p-values, the guards, the
    feature weights, the score histograms and the power curve."""
    from ..reports import plots

    s = result.summary
    level = {"used": "shift", "not_shown": "ok", "refused": "caution"}[s["verdict"]]
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_e(title)}</title>",
             f"<style>{_CSS}</style></head><body><h1>{_e(title)}</h1>",
             f"<p class='muted'>report written {_e(time.strftime('%Y-%m-%d %H:%M'))} by mia-dashboard · Maini et al. "
             "2024, LLM Dataset Inference (NeurIPS)</p>",
             f"<div class='banner {level}'><b>Verdict: {_e(s['verdict'])}.</b> {_e(s['verdict_reason'])}</div>"]
    unit = "books" if s.get("mode") == "books" else "texts"
    rows = {"audited model": s.get("model"), f"suspect {unit}": s["n_suspect"], f"validation {unit}": s["n_validation"],
            "alpha": s["alpha"],
            "IID guard (blind baseline, permutation test)": None if s.get("blind_auc") is None else
            f"AUC {s['blind_auc']:.3f}" + ("" if s.get("blind_p_value") is None else
                                          f", permutation p = {s['blind_p_value']:.3g} (refused at p <= 0.05)")}
    if s["verdict"] != "refused":
        rows.update({
            "p-value, one-sided permutation test (primary)": format_p(s["p_value"], s["p_value_is_bound"]),
            "  its parts: permutation p · Welch t-test p (the larger is reported)":
                f"{format_p(s['p_value_permutation'], s['p_value_permutation'] <= s['p_value_resolution'])} · "
                f"{format_p(s['p_value_welch'])}",
            "p-value, the paper's split t-test (Student; learns the direction, not one-sided)":
                None if s.get("p_value_ttest") is None else format_p(s["p_value_ttest"]),
            "self-check (two halves of the validation set; checks the code path)":
                format_p(s["self_check_p_value"], s.get("self_check_p_value_is_bound", False)),
            "folds · permutations": f"{s['folds']} · {s['n_permutations']:,}",
            f"suspect {unit} flagged on their own": f"{s.get('n_flagged', 0)} of {s['n_suspect']} "
                                                    f"({'Benjamini-Hochberg' if s.get('correction') == 'bh' else 'Holm'})",
            "features": ", ".join(s["features"]), f"{unit} excluded (a feature missing)": s.get("n_excluded")})
    parts.append(_kv_table(rows))
    if s.get("books"):
        parts.append("<h2>Per book</h2><p>Each suspect book's out-of-fold score ranked among the validation "
                     "books' (a conformal p-value), adjusted across the suspect books ("
                     f"{'Benjamini-Hochberg' if s.get('correction') == 'bh' else 'Holm'}).</p>")
        parts.append(_df_html(pd.DataFrame(s["books"])))
    if s["verdict"] != "refused":
        sc = result.scores[~result.scores["excluded"]]
        figs = [plots.di_score_histogram(sc.loc[sc["set"] == "suspect", "score"],
                                         sc.loc[sc["set"] == "validation", "score"])]
        if s.get("power_curve"):
            figs.append(plots.di_power_curve(s["power_curve"], alpha=s["alpha"]))
        figs.append(plots.di_weights(s["weights"]))
        for i, fig in enumerate(figs):
            parts.append(fig.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False}))
    if result.report:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in result.report) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)
