"""Document-level membership inference for books and long documents.

Meeus, Jain, Rei & de Montjoye, "Did the Neurons Read your Book? Document-level Membership
Inference for Large Language Models", USENIX Security 2024 (arXiv:2310.15007). The method,
step by step, with the module that holds each step:

0. **Loading books** — ``books``: ``load_documents`` reads one document per ``.txt`` file
   (a file, a folder, a ``.zip``, uploads) into ``Document`` objects, with Project
   Gutenberg headers and footers removed by ``strip_gutenberg`` (decoding and size checks
   from ``mia_core.data``).
1. **Querying (§4.1)** — every token of a document gets its predicted probability P(t) and
   the maximum predicted probability over the vocabulary at that position, from windows of
   C tokens with stride C-1 (C = 128 by default; the paper also uses 1024 and 2048). This
   is ``mia_core.stats.compute_stats`` (the project's one forward pass: bounded memory,
   disk cache, resumable long texts), with ``vocab_probs=True`` to also sum the predicted
   distributions for R^GP.
2. **Normalisation dictionaries (§4.2.1)** — ``dictionaries``: token frequency R^TF and
   general probability R^GP from the reference documents of one fold (its training
   members ∪ training non-members; never a held-out document); ``token_frequency`` turns
   counts into R^TF.
3. **Normalisations (§4.2.2)** — ``normalization``: NoNorm, RatioNormTF/GP
   (-log P/R), MaxNormTF/GP (-log (1 - (P_max - P)) / R); ``normalize`` holds the formulas
   (also behind the dashboard's per-token colours), ``normalized_values`` applies them.
4. **Feature extraction (§4.3)** — ``features``: AggFE (13 statistics; ``agg_count=True``
   adds the token count, as the authors' code) and HistFE (N_b equal-width bins fitted on the
   training fold; paper: 1,000; ``hist_outside="drop"``: the authors' density histogram, which
   drops held-out values outside the bins, instead of clipping them into the end bins).
5. **Meta-classifier (§4.4, §5.2.4)** — ``meta`` and ``pipeline``: random forest (500
   trees, depth 5, ≥ 3 samples per leaf) under stratified k-fold cross-validation (k = 5);
   mean ± std AUC and TPR at 1 %/10 % FPR over folds, ROC per fold, out-of-fold
   probability per document.
6. **Baselines (§6.2)** — ``baselines``: LOSS, zlib, lowercase, reference model, Min-K %
   (and neighbourhood when registered) on 128-token sequences, scaled to documents at
   sequence level, by document average and by a fitted threshold.
7. **Mitigations (§6.4)** — ``partial``: AUC versus the number L of tokens seen per
   document (each document cut to its first L tokens; dictionaries, bins and forest re-fitted
   at each L on the same folds; the paper's pipeline and the audit's best one);
   ``precision``: the audit at fp32 / bf16 / int8 / int4 (Table 5).

``audit.run_document_audit`` runs 1-7 (7 partially: the precision table loads several
models and is a separate call) and returns a ``DocumentAuditResult``. The CLI is
``mia documents`` (``mia_core.cli.documents``).
"""
# Each name is imported from its module when first asked for (PEP 562): ``mia_core.documents.options`` (the audit's
# declared options, read by the command-line parser and the pages) loads without scikit-learn, pandas or torch.
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what static readers (the API reference, IDEs) follow; at run time __getattr__ imports
    from .audit import DEFAULT_CONTEXT, PAPER_BEST, DocumentAuditResult, run_document_audit  # noqa: F401
    from .baselines import PAPER_BASELINES, run_baselines, sample_sequences, scale_to_documents  # noqa: F401
    from .books import Document, check_document_overlap, demo_documents, load_documents, strip_gutenberg  # noqa: F401
    from .dictionaries import ReferenceDictionaries, build_dictionaries, token_counts, token_frequency  # noqa: F401
    from .features import AGG_NAMES, AGG_NAMES_COUNT, DEFAULT_BINS, OUTSIDE, HistogramFeatures, agg_features, parse_features  # noqa: F401
    from .meta import RF_PARAMS, make_folds, random_forest  # noqa: F401
    from .normalization import NORMALIZATIONS, normalize, normalized_values, parse_normalizations  # noqa: F401
    from .partial import DEFAULT_LENGTHS, excerpts, partial_cross_validation, partial_curve, partial_documents, prefixes  # noqa: F401
    from .pipeline import CrossValidation, cross_validate, pipeline_name  # noqa: F401
    from .precision import DEFAULT_PRECISIONS, precision_table  # noqa: F401

_WHERE = {
    **dict.fromkeys(('DEFAULT_CONTEXT', 'PAPER_BEST', 'DocumentAuditResult', 'run_document_audit'), "audit"),
    **dict.fromkeys(('PAPER_BASELINES', 'run_baselines', 'sample_sequences', 'scale_to_documents'), "baselines"),
    **dict.fromkeys(('Document', 'check_document_overlap', 'demo_documents', 'load_documents', 'strip_gutenberg'), "books"),
    **dict.fromkeys(('ReferenceDictionaries', 'build_dictionaries', 'token_counts', 'token_frequency'), "dictionaries"),
    **dict.fromkeys(('AGG_NAMES', 'AGG_NAMES_COUNT', 'DEFAULT_BINS', 'OUTSIDE', 'HistogramFeatures', 'agg_features', 'parse_features'), "features"),
    **dict.fromkeys(('RF_PARAMS', 'make_folds', 'random_forest'), "meta"),
    **dict.fromkeys(('NORMALIZATIONS', 'normalize', 'normalized_values', 'parse_normalizations'), "normalization"),
    **dict.fromkeys(('DEFAULT_LENGTHS', 'excerpts', 'partial_cross_validation', 'partial_curve', 'partial_documents', 'prefixes'), "partial"),
    **dict.fromkeys(('CrossValidation', 'cross_validate', 'pipeline_name'), "pipeline"),
    **dict.fromkeys(('DEFAULT_PRECISIONS', 'precision_table'), "precision"),
}


def __getattr__(name: str):
    if name in _WHERE:
        import importlib

        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AGG_NAMES", "AGG_NAMES_COUNT", "DEFAULT_BINS", "DEFAULT_CONTEXT", "DEFAULT_LENGTHS", "DEFAULT_PRECISIONS", "NORMALIZATIONS", "OUTSIDE",
    "PAPER_BASELINES", "PAPER_BEST", "RF_PARAMS", "CrossValidation", "Document", "DocumentAuditResult",
    "HistogramFeatures", "ReferenceDictionaries", "agg_features", "build_dictionaries", "check_document_overlap", "cross_validate", "demo_documents", "excerpts",
    "load_documents", "make_folds", "normalize", "normalized_values", "parse_features", "parse_normalizations",
    "partial_cross_validation", "partial_curve", "partial_documents", "pipeline_name", "prefixes", "precision_table", "random_forest", "run_baselines", "run_document_audit",
    "sample_sequences", "scale_to_documents", "strip_gutenberg", "token_counts", "token_frequency",
]
