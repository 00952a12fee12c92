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


_WORDS = {"likelihood_ratio": "likelihood ratio", "loss": "loss"}


def _store():
    from ..runs.kinds import SCORED, KindStore

    return KindStore("_masked_lm", "masked-LM audit run", SCORED)


def _describe(result) -> dict:
    """The Runs page's line: the target and reference, the three sets, the likelihood ratio's AUC."""
    s, models = result.settings, result.models or {}
    target, ref = (models.get("target") or {}).get("name") or "model", (models.get("reference") or {}).get("name")
    data = (f"{s.get('n_members')} members + {s.get('n_nonmembers')} non-members, "
            f"{s.get('n_population')} population texts, K = {s.get('k')}")
    auc = _headline(result)
    shown = "AUC n/a" if auc is None or auc != auc else f"AUC {auc:.3f}"
    return {"name": f"{target} vs {ref} · {data} · {shown} (likelihood ratio)",
            "model": f"{target} (reference {ref})" if ref else target,
            "model_identity": (models.get("target") or {}).get("identity"), "data": data,
            "headline": None if auc is None or auc != auc else float(auc), "headline_label": "likelihood ratio",
            "n_members": s.get("n_members"), "n_nonmembers": s.get("n_nonmembers")}


def _figures(result) -> dict:
    """Each attack's AUC, and its precision and recall at the population threshold."""
    out = {}
    for a, m in result.metrics.items():
        pt = m.get("population_threshold") or {}
        w = _WORDS.get(a, a)
        out.update({f"AUC, {w}": m.get("auc"), f"precision at the population threshold, {w}": pt.get("precision"),
                    f"recall at the population threshold, {w}": pt.get("recall")})
    return out


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
    headline=_headline,
    store=_store,
    describe=_describe,
    figures=_figures))
