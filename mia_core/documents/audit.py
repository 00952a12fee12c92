"""``run_document_audit``: the whole document-level membership inference of Meeus et al. 2024.

See the package docstring (``mia_core.documents``) for the method. The audit runs as named stages
(:mod:`mia_core.documents.stages`: check settings -> documents -> model pass -> classifier and folds ->
baselines -> partial documents -> result); its result is :class:`~mia_core.documents.result.DocumentAuditResult`.
"""
from __future__ import annotations

import time
from typing import Sequence

from ..models import LoadedModel
from ..progress import Progress
from .baselines import DEFAULT_MAX_PER_DOC, DEFAULT_SEQ_LEN, PAPER_BASELINES
from .features import DEFAULT_BINS
from .partial import DEFAULT_LENGTHS
from .result import DocumentAuditResult
from .options import DEFAULT_CONTEXT
from .stages import (PAPER_BEST, check_settings, document_set, learned_nothing_warning,  # noqa: F401
                     run_stages)

__all__ = ["DEFAULT_CONTEXT", "PAPER_BEST", "DocumentAuditResult", "learned_nothing_warning", "run_document_audit"]


def run_document_audit(
    member_docs,
    nonmember_docs,
    lm: LoadedModel,
    *,
    reference: LoadedModel | None = None,
    context: int = DEFAULT_CONTEXT,
    normalizations=("all",),
    features=("hist", "agg"),
    folds: int = 5,
    n_bins: int = DEFAULT_BINS,
    agg_count: bool = False,
    hist_outside: str = "clip",
    seed: int = 0,
    partial_lengths: Sequence[int] | None = DEFAULT_LENGTHS,
    partial_pipelines: Sequence[tuple[str, str]] | None = None,
    partial_position: str = "start",
    partial_dictionaries: str = "partial",
    baselines: bool = True,
    baseline_attacks: Sequence[str] = PAPER_BASELINES,
    baseline_seq_len: int = DEFAULT_SEQ_LEN,
    baseline_max_sequences: int | None = DEFAULT_MAX_PER_DOC,
    baseline_neighbours: bool | dict = False,
    n_estimators: int | None = None,
    n_jobs: int | None = None,
    batch_tokens: int | None = None,
    use_cache: bool = True,
    progress: Progress | None = None,
) -> DocumentAuditResult:
    """Document-level membership inference of Meeus et al. 2024 on known members and non-members.

    Every document is scored once (``compute_stats``; context C, stride C-1, §4.1; cached and resumable); over
    ``folds`` stratified folds each normalisation (§4.2) x feature extractor (§4.3) pipeline trains the random
    forest (§4.4) and gives every document an out-of-fold membership probability. Optional: the sequence-level
    baselines scaled to documents (§6.2) and the partial-document curve (§6.4) (:mod:`~mia_core.documents.stages`).

    Parameters
    ----------
    member_docs, nonmember_docs
        ``Document`` objects (``load_documents``), plain texts, or a path / list of paths ``load_documents`` reads.
    lm, reference : LoadedModel
        The target (``load_causal_lm``); optionally the reference-model baseline's reference.
    context, normalizations, features, folds, seed
        C; ``"all"`` or names such as ``"maxnorm-tf"``; ``"hist"`` / ``"agg"``; the folds and their seed.
    n_bins, n_estimators, n_jobs
        The paper's 1,000 histogram bins and 500 trees by default; the forest's workers.
    agg_count, hist_outside
        ``agg_count=True`` feeds AggFE the token count too, as the authors' code (off: length can confound);
        ``hist_outside="drop"`` is the authors' ``numpy.histogram(density=True)`` (default ``"clip"``: counted in
        the end bins, fractions); recorded in ``settings`` when either differs from its default.
    partial_lengths, partial_pipelines, partial_position, partial_dictionaries
        The curve's lengths L (None or ``()``: off); its pipelines (default MaxNormTF+HistFE, the paper's best for
        books, and this audit's best; column ``role``); ``"random"``: a random excerpt instead of the first L
        tokens; ``"full"``: R^TF/R^GP from the full training documents. Dictionaries, bins and forest are
        re-fitted on the same folds at each L.
    baselines, baseline_attacks, baseline_seq_len, baseline_max_sequences, baseline_neighbours
        The §6.2 baselines (``reference`` adds the reference-model attack; ``baseline_neighbours=True`` or a dict
        of its parameters the neighbourhood attack).
    batch_tokens, use_cache, progress
        Tokens per forward batch, the statistics cache, ``progress(message, fraction)``.

    Returns
    -------
    DocumentAuditResult

    Raises
    ------
    DataError, SettingsError, ModelError
        One sentence for bad input; settings and documents are checked before the model pass.
    """
    t_start = time.time()
    options = check_settings(
        context=context, normalizations=normalizations, features=features, agg_count=agg_count,
        hist_outside=hist_outside, folds=folds, n_bins=n_bins, seed=seed, partial_lengths=partial_lengths,
        partial_pipelines=partial_pipelines, partial_position=partial_position, partial_dictionaries=partial_dictionaries,
        baselines=baselines, baseline_attacks=baseline_attacks, baseline_seq_len=baseline_seq_len,
        baseline_max_sequences=baseline_max_sequences, baseline_neighbours=baseline_neighbours,
        n_estimators=n_estimators, n_jobs=n_jobs, batch_tokens=batch_tokens, use_cache=use_cache)
    documents = document_set(member_docs, nonmember_docs, options)
    return run_stages(documents, lm, options, reference=reference, progress=progress, started=t_start)
