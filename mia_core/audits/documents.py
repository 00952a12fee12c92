"""Document-level MIA (Meeus et al., USENIX Security 2024; ``mia documents``; the Document audit page): per-token
probabilities over whole books, rarity normalisations, aggregate and histogram features, a random forest, k folds."""
from __future__ import annotations

from .base import Audit, Known, register


def _options():
    from ..documents.options import DocumentOptions

    return DocumentOptions


def _prepare(**inputs):
    from ..api.documents import prepare_documents

    return prepare_documents(**inputs)


def _execute(request, *, progress=None):
    from ..api.documents import execute_documents

    return execute_documents(request, progress=progress)


def _result():
    from ..documents.result import DocumentAuditResult

    return DocumentAuditResult


def _request():
    from ..api.documents import DocumentRequest

    return DocumentRequest


def _books(texts: list, n: int, per: int) -> list:
    return ["\n\n".join(texts[i * per:(i + 1) * per]) for i in range(n)]


def _load(folder):
    from ..documents.result import DocumentAuditResult

    return DocumentAuditResult.load(folder)


def _example(known: Known) -> dict:
    """Eight member and eight non-member "books" of three paragraphs each, two folds, a short context, one partial
    length, two sequence-level baselines."""
    return {"members": _books(known.members, 8, 3), "nonmembers": _books(known.nonmembers, 8, 3),
            "model": known.causal, "folds": 2, "context": 64, "n_bins": 20, "n_estimators": 20,
            "partial_lengths": [64], "baseline_attacks": ["loss", "zlib"], "baseline_seq_len": 32,
            "normalizations": ["nonorm", "maxnorm_tf"]}


def _headline(result):
    return result.metrics[result.best_pipeline]["auc_mean"]


def _store():
    from ..runs.kinds import SCORED, KindStore

    return KindStore("_documents", "document-audit run", SCORED)


def _describe(result) -> dict:
    """The Runs page's line: the model, the books, the best pipeline's mean AUC over the folds."""
    from ..documents.normalization import pipeline_words

    n_m = int(sum(int(x) for x in result.labels))
    n_n = len(result.labels) - n_m
    model = (result.model or {}).get("name") or "model"
    best = result.best_pipeline
    auc = _headline(result)
    data = f"{n_m} member + {n_n} non-member books, {result.settings.get('folds')} folds"
    shown = "AUC n/a" if auc is None or auc != auc else f"AUC {auc:.3f}"
    return {"name": f"{model} · {data} · {shown} ({pipeline_words(best)})", "model": model,
            "model_identity": (result.model or {}).get("identity"), "data": data,
            "headline": None if auc is None or auc != auc else float(auc),
            "headline_label": f"best pipeline: {pipeline_words(best)}", "n_members": n_m, "n_nonmembers": n_n}


def _figures(result) -> dict:
    """Each pipeline's mean AUC over the folds, by the paper's names."""
    from ..documents.normalization import pipeline_words

    return {f"AUC, {pipeline_words(p)}": m.get("auc_mean") for p, m in result.metrics.items()}


def _keep(result, folder) -> None:
    result.save(folder, token_values=False)  # the per-token strips stay with the result in memory (large)


AUDIT = register(Audit(
    name="documents",
    title="Document-level audit",
    citation="Meeus et al. 2024 (USENIX Security)",
    sets=("members", "nonmembers"),
    options=_options,
    prepare=_prepare,
    execute=_execute,
    result=_result,
    load=_load,
    marker="document_metrics.json",
    request=_request,
    example=_example,
    page="pages/3_Document_audit.py",
    headline=_headline,
    store=_store,
    describe=_describe,
    figures=_figures,
    keep=_keep))
