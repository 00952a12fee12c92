"""The calibration run (``mia run``; the Calibration page): every attack's scores on members vs non-members, AUC and
TPR at low FPR with CIs, the blind baseline, the population threshold."""
from __future__ import annotations

from .base import Audit, Known, register


def _options():
    from ..pipeline.options import RunOptions

    return RunOptions


def _prepare(*, members, nonmembers, population=None, text_column: str | None = None, **settings):
    """:func:`mia_core.api.prepare_run` on the two sets (texts, paths or DataFrames, read as :func:`mia_core.audit`
    reads them) and the population (known non-members), ``settings`` its keywords."""
    from ..inputs import check_column, check_texts
    from ..api.request import population_set, prepare_run
    from ..data import texts_from_strings

    text_column = check_column("text_column", text_column)
    data = texts_from_strings(check_texts(members, "members", text_column=text_column),
                              check_texts(nonmembers, "nonmembers", text_column=text_column))
    pop = population_set(texts=check_texts(population, "population", text_column=text_column))
    return prepare_run(data, population=pop, **settings)


def _execute(request, *, progress=None):
    from ..api.request import execute_run

    return execute_run(request, progress=progress)


def _result():
    from ..runs.results import RunResult

    return RunResult


def _request():
    from ..api.request import RunRequest

    return RunRequest


def _load(folder):
    """The run saved in ``folder`` (``result.save``, ``mia run --out`` or the run store), checked as the run store
    reads its runs: a :class:`mia_core.runs.StoredRun` (the RunResult, its folder's id and meta)."""
    from ..runs import read_run

    return read_run(folder)


def _example(known: Known) -> dict:
    """The tiny causal LM on 12 + 12 texts, LOSS and the reference attack, a small bootstrap."""
    return {"members": known.members[:12], "nonmembers": known.nonmembers[:12], "population": known.population[:12],
            "model": known.causal, "reference": known.causal_reference, "attacks": ["loss", "ref"],
            "n_bootstrap": 50}


def _headline(result):
    m = result.metrics.get("loss") or {}
    return m.get("auc")


def _figures(result) -> dict:
    """Each attack's AUC (the Runs page compares two calibration runs with paired bootstrap CIs instead)."""
    return {f"AUC, {(m or {}).get('label') or k}": (m or {}).get("auc") for k, m in result.metrics.items()}


AUDIT = register(Audit(
    name="run",
    title="Calibration run",
    citation="Carlini et al. 2022 (metrics); Das et al. 2024 (blind baseline)",
    sets=("members", "nonmembers", "population"),
    options=_options,
    prepare=_prepare,
    execute=_execute,
    result=_result,
    load=_load,
    marker="run.json",
    request=_request,
    example=_example,
    page="pages/2_Calibration_run.py",
    headline=_headline,
    figures=_figures))
