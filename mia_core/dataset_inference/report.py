"""The self-contained HTML report of a dataset-inference result (``report.html`` of
``mia infer-dataset`` and of :meth:`DatasetInferenceResult.save`): what was audited (the model, the data,
the verdict), the verdict, both p-values, the guards, the feature weights, the score histograms and the
power curve (Maini et al. 2024, LLM Dataset Inference, NeurIPS). It uses the run report's HTML helpers
(``mia_core.reports.report``).

The words every front end shares live here too: a saved run's default name (:func:`run_name`: the model,
the data and the verdict), the verdict as a sentence (:func:`sentence`), the sentence a blind-baseline AUC
far below 0.5 needs (:func:`blind_note`) and the power curve's floor against the headline p-value
(:func:`power_floor_note`).
"""
from __future__ import annotations

import time

import pandas as pd

from ..reports.report import _CSS, _df_html, _e, _kv_table
from .features import feature_label
from .significance import format_p


VERDICT_WORDS = {"used": "Used", "not_shown": "Not shown", "refused": "Refused"}
SOURCE_WORDS = {"demo": "demo", "demo_null": "demo null", "paste": "pasted", "upload": "files", "files": "files"}


def sentence(text) -> str:
    """``text`` as a sentence: its first word capitalised when it is a plain lowercase word (the guard's
    message and older notes start lowercase); a leading code name (``dc_pdd: ...``) is left as it is."""
    text = str(text or "").strip()
    first = text.split(" ", 1)[0]
    return text[:1].upper() + text[1:] if " " in text and first.isalpha() and first.islower() else text


def verdict_words(summary: dict) -> str:
    """The verdict in a few words for a run's name: ``"used (p <= 1.0e-04)"``, ``"not shown (p = 0.3100)"``,
    ``"refused (the sets differ without the model)"`` (``≤``: the permutations' floor, the true p may be smaller).

    Parameters
    ----------
    summary : dict
        A result's summary (``verdict``, ``p_value``, ``p_value_is_bound``).

    Returns
    -------
    str
        The verdict and its p-value.
    """
    v = summary.get("verdict")
    if v == "refused":
        return "refused (the sets differ without the model)"
    word = VERDICT_WORDS.get(v, str(v)).lower()
    p = summary.get("p_value")
    if p is None:
        return word
    return f"{word} ({format_p(float(p), bool(summary.get('p_value_is_bound'))).replace('<=', '≤')})"


def _names(files, room: int = 2) -> str:
    files = [str(f) for f in files or []]
    more = len(files) - room
    return ", ".join(files[:room]) + (f" (+{more})" if more > 0 else "")


def data_words(summary: dict, inputs: dict | None = None) -> str:
    """The audited data in one line: where the sets came from and their sizes, e.g. ``"demo: 100 suspect vs 100
    validation texts"``, ``"pasted: 12 suspect vs 12 validation texts"``, ``"files s.txt vs v.txt: 50 suspect
    vs 50 validation texts"``; the sizes alone when the source was not recorded (runs saved before issue 40).

    Parameters
    ----------
    summary : dict
        A result's summary (``n_suspect``, ``n_validation``, ``mode``).
    inputs : dict, optional
        What the front end recorded (``DatasetInferenceResult.inputs``: ``source``, ``suspect_files``,
        ``validation_files``).

    Returns
    -------
    str
        The line.
    """
    books = summary.get("mode") == "books"
    sizes = f"{summary.get('n_suspect')} suspect vs {summary.get('n_validation')} validation " \
            f"{'books' if books else 'texts'}"
    inputs = inputs or {}
    source = inputs.get("source")
    if source not in SOURCE_WORDS:
        return sizes
    where = ("book " if books and source.startswith("demo") else "") + SOURCE_WORDS[source]
    if source in ("upload", "files") and (inputs.get("suspect_files") or inputs.get("validation_files")):
        where += f" {_names(inputs.get('suspect_files'))} vs {_names(inputs.get('validation_files'))}"
    return f"{where}: {sizes}"


def run_name(summary: dict, inputs: dict | None = None) -> str:
    """A saved run's default name: the model's short name, the data and the verdict, e.g. ``"demo target ·
    demo null: 100 suspect vs 100 validation texts — not shown (p = 0.4100)"``.

    Parameters
    ----------
    summary : dict
        A result's summary.
    inputs : dict, optional
        What the front end recorded (``model``, ``source``, the file names); without it the name is the sizes,
        the model the summary names and the verdict.

    Returns
    -------
    str
        The name.
    """
    model = (inputs or {}).get("model") or summary.get("model")
    return (f"{model} · " if model else "") + f"{data_words(summary, inputs)} — {verdict_words(summary)}"


def blind_note(summary: dict) -> str | None:
    """The sentence a blind-baseline AUC below 0.45 needs (a newcomer reads it as a finding): below 0.5 happens
    by chance out of fold, more so on small sets, and is not evidence of anything. None otherwise.

    Parameters
    ----------
    summary : dict
        A result's summary (``blind_auc``, ``blind_p_value``, ``blind_auc_ci`` of older runs, the sizes).

    Returns
    -------
    str or None
        The sentence.
    """
    auc = summary.get("blind_auc")
    if not isinstance(auc, (int, float)) or auc != auc or auc >= 0.45:
        return None
    unit = "books" if summary.get("mode") == "books" else "texts"
    ci, p = summary.get("blind_auc_ci"), summary.get("blind_p_value")
    extra = [f"95 % CI {ci[0]:.2f}-{ci[1]:.2f}"] if isinstance(ci, (list, tuple)) and len(ci) == 2 else []
    extra += [f"permutation p = {p:.2g}"] if isinstance(p, (int, float)) else []
    return (f"The blind baseline's AUC is {auc:.3f} on {summary.get('n_suspect')} + {summary.get('n_validation')} "
            f"{unit}" + (f" ({', '.join(extra)})" if extra else "") + ", below 0.5. Out-of-fold AUCs below 0.5 "
            "happen by chance, the more so the smaller the sets (each fold's classifier learns from the other folds): "
            "it is not evidence of anything. Only an AUC well above 0.5 would mean the sets differ.")


def power_floor_note(summary: dict) -> str:
    """What the power curve's dotted floor is, against the headline p-value (both are the largest of the
    permutation p, the Welch t-test's and the bootstrap-t's; ``significance.power_curve``: 999 permutations a
    point).

    Parameters
    ----------
    summary : dict
        A text result's summary (``power_curve``, ``n_permutations``, ``p_value_resolution``).

    Returns
    -------
    str
        The sentence.
    """
    curve = summary.get("power_curve") or [{}]
    floor = curve[0].get("floor") or 1 / 1000
    perms = round(1 / floor) - 1
    n, unit = summary.get("n_permutations"), "books" if summary.get("mode") == "books" else "texts"
    head = (f"the headline p-value uses {int(n):,} permutations on all the {unit}, so it can go down to "
            f"1 / ({int(n):,} + 1) = {1 / (int(n) + 1):.1g}") if n and int(n) != perms else \
        f"the headline p-value, on all the {unit}, has the same floor"
    return (f"Each point of the power curve is the test's p-value (the largest of the permutation p-value, the "
            f"Welch t-test's and the bootstrap-t's) on random subsets, with {perms:,} permutations: it cannot go below 1 / ({perms:,} + 1) "
            f"= {floor:.2g}, the dotted floor; {head}.")


BOOK_COLUMNS = {"book": "Book", "n_passages": "Passages", "score": "Score (higher: more member-like)",
                "p_value": "p-value", "p_adjusted": "Adjusted p-value", "flagged": "Stands out"}


def books_table(books: list) -> pd.DataFrame:
    """The per-book rows in words (issue 53 item 6: the report showed ``n_passages`` and ``False``)."""
    df = pd.DataFrame(books)
    if "flagged" in df:
        df["flagged"] = ["yes" if bool(f) else "–" for f in df["flagged"]]
    return df.rename(columns=BOOK_COLUMNS)


def _audited(result) -> str:
    """The report's header: which model and which data were audited, and the verdict."""
    s, inputs = result.summary, getattr(result, "inputs", None) or {}
    unit = "books" if s.get("mode") == "books" else "texts"
    source = inputs.get("source")
    rows = {"model": inputs.get("model") or s.get("model") or "not recorded",
            "model identity (source | precision | quantisation | weight fingerprint: what reproduces it)":
                inputs.get("model_identity") or inputs.get("model_spec"),
            "reference model": inputs.get("reference") or s.get("reference_model"),
            "data": {"demo": "the bundled demo (members vs non-members)",
                     "demo_null": "the bundled demo's null case (never-trained-on texts on both sides)",
                     "paste": "texts pasted on the Dataset inference page",
                     "upload": "uploaded files", "files": "files"}.get(source, "not recorded"),
            f"suspect {unit}": f"{s.get('n_suspect')}" + (f" from {_names(inputs['suspect_files'], 6)}"
                                                           if inputs.get("suspect_files") else ""),
            f"validation {unit}": f"{s.get('n_validation')}" + (f" from {_names(inputs['validation_files'], 6)}"
                                                                 if inputs.get("validation_files") else ""),
            "verdict": verdict_words(s)}
    return "<h2>What was audited</h2>" + _kv_table(rows)


def _result_rows(s: dict) -> dict:
    """The report's table of the test: alpha, the guard, the two p-values, the self-check, the features."""
    unit = "books" if s.get("mode") == "books" else "texts"
    rows = {"alpha": s["alpha"],
            "IID guard (blind baseline, permutation test)": None if s.get("blind_auc") is None else
            f"AUC {s['blind_auc']:.3f}" + ("" if s.get("blind_p_value") is None else
                                          f", permutation p = {s['blind_p_value']:.3g} (refused at p <= 0.05)")}
    if s["verdict"] == "refused":
        return rows
    rows.update({
        "p-value, one-sided permutation test (primary)": format_p(s["p_value"], s["p_value_is_bound"]),
        "  its parts: permutation p · Welch t-test p · bootstrap-t p (the largest is reported)":
            f"{format_p(s['p_value_permutation'], s['p_value_permutation'] <= s['p_value_resolution'])} · "
            f"{format_p(s['p_value_welch'])}" + ("" if s.get("p_value_bootstrap") is None else
                                                 f" · {format_p(s['p_value_bootstrap'])}"),
        "p-value, the paper's split t-test (Student; learns the direction, not one-sided)":
            None if s.get("p_value_ttest") is None else format_p(s["p_value_ttest"]),
        "self-check (two halves of the validation set; checks the code path)":
            format_p(s["self_check_p_value"], s.get("self_check_p_value_is_bound", False)),
        "folds · permutations": f"{s['folds']} · {s['n_permutations']:,}",
        f"suspect {unit} flagged on their own": f"{s.get('n_flagged', 0)} of {s['n_suspect']} "
                                                f"({'Benjamini-Hochberg' if s.get('correction') == 'bh' else 'Holm'})",
        "features": ", ".join(feature_label(f) for f in s["features"]),
        f"{unit} excluded (a feature missing)": s.get("n_excluded")})
    return rows


def _figures(result) -> list[str]:
    """The score histograms, the power curve (texts) and the weights (display names of the features)."""
    from ..reports import plots

    s = result.summary
    sc = result.scores[~result.scores["excluded"]]
    figs = [plots.di_score_histogram(sc.loc[sc["set"] == "suspect", "score"],
                                     sc.loc[sc["set"] == "validation", "score"],
                                     title=plots.di_score_title(s.get("combination")))]
    if s.get("power_curve"):
        figs.append(plots.di_power_curve(s["power_curve"], alpha=s["alpha"], n_permutations=s.get("n_permutations")))
    figs.append(plots.di_weights({feature_label(k): v for k, v in s["weights"].items()}))
    return [fig.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False})
            for i, fig in enumerate(figs)]


def dataset_inference_report(result, *, title: str = "Dataset inference") -> str:
    """A self-contained HTML report of a dataset-inference result
    (``mia_core.dataset_inference.DatasetInferenceResult``): what was audited (the model, the data, the verdict),
    the verdict's reason, both p-values, the guards, the feature weights, the score histograms and the power
    curve; features by their display names (:func:`mia_core.dataset_inference.features.feature_label`)."""
    s = result.summary
    # not shown is no all-clear (issue 53 item 6: a green box read as one): a neutral banner
    level = {"used": "shift", "not_shown": "neutral", "refused": "caution"}[s["verdict"]]
    name = run_name(s, getattr(result, "inputs", None))
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_e(title)}: {_e(name)}</title>",
             f"<style>{_CSS}</style></head><body><h1>{_e(title)}</h1><p><b>{_e(name)}</b></p>",
             f"<p class='muted'>report written {_e(time.strftime('%Y-%m-%d %H:%M'))} by mia-dashboard · Maini et al. "
             "2024, LLM Dataset Inference (NeurIPS)</p>",
             f"<div class='banner {level}'><b>{_e(VERDICT_WORDS[s['verdict']])}.</b> "
             f"{_e(sentence(s['verdict_reason']))}</div>", _audited(result), "<h2>The test</h2>",
             _kv_table(_result_rows(s))]
    if (blind := blind_note(s)) is not None:
        parts.append(f"<p>{_e(blind)}</p>")
    if s.get("power_curve") and s["verdict"] != "refused":
        parts.append(f"<p>{_e(power_floor_note(s))}</p>")
    if s.get("books"):
        parts.append("<h2>Per book</h2><p>Each suspect book's out-of-fold score ranked among the validation "
                     "books' (a conformal p-value), adjusted across the suspect books ("
                     f"{'Benjamini-Hochberg' if s.get('correction') == 'bh' else 'Holm'}).</p>")
        parts.append(_df_html(books_table(s["books"])))
    if s["verdict"] != "refused":
        parts += _figures(result)
    if result.report:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(sentence(n))}</li>" for n in result.report) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)
