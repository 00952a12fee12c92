"""The masked-LM likelihood ratio (Mireshghallah et al. 2022; ``mia mlm``; the Masked-LM audit page): energy over K
masking patterns, target minus reference, a threshold set on a population, text and group level."""
from __future__ import annotations

from .base import Audit, Known, register


def _options():
    from ..mlm.options import MlmOptions

    return MlmOptions


def _prepare(**inputs):
    from ..api.mlm import prepare_mlm

    return prepare_mlm(**inputs)


def _execute(request, *, progress=None):
    from ..api.mlm import execute_mlm

    return execute_mlm(request, progress=progress)


def _result():
    from ..mlm.result import MlmAuditResult

    return MlmAuditResult


def _request():
    from ..api.mlm import MlmRequest

    return MlmRequest


def _load(folder):
    from ..mlm.result import MlmAuditResult

    return MlmAuditResult.load(folder)


def _example(known: Known) -> dict:
    """The tiny masked LMs on 12 + 12 texts and a population of 12, five masks each, a small bootstrap."""
    return {"members": known.members[:12], "nonmembers": known.nonmembers[:12], "population": known.population[:12],
            "model": known.masked, "reference": known.masked_reference, "k": 5, "n_bootstrap": 50}


def _headline(result):
    return result.metrics["likelihood_ratio"].get("auc")


AUDIT = register(Audit(
    name="mlm",
    title="Masked-LM audit",
    citation="Mireshghallah et al. 2022",
    sets=("members", "nonmembers", "population"),
    options=_options,
    prepare=_prepare,
    execute=_execute,
    result=_result,
    load=_load,
    marker="curves.json",
    request=_request,
    example=_example,
    page="pages/4_Masked_LM_audit.py",
    headline=_headline))
