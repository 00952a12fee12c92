"""The stages of a document-level audit (Meeus et al. 2024), in the order they run.

* :func:`check_settings`: every setting checked and coerced (normalisations §4.2, feature extractors §4.3,
  AggFE's token count and HistFE's out-of-range rule, the context of §4.1), nothing read;
* :func:`document_set`: the member and non-member documents read (or taken as given), checked for overlap,
  for enough documents per fold and for the partial-document settings, named uniquely;
* :func:`model_pass`: every document scored once with the one-pass statistics (``mia_core.stats``; context C,
  stride C-1, cached and resumable);
* :func:`classify`: the stratified folds and, per normalisation x feature extractor, the random forest's
  out-of-fold probabilities (§4.4; :func:`mia_core.documents.pipeline.cross_validate`);
* :func:`baseline_stage`: the sequence-level attacks scaled to documents (§6.2), when asked for;
* :func:`partial_stage`: the partial-document curve (§6.4), when asked for;
* :func:`assemble_result`: the per-document table, the settings and the warnings, as a
  :class:`~mia_core.documents.result.DocumentAuditResult`.

The first two need no model: a front end calls them before it loads one (``mia_core.api.documents``), then
:func:`run_stages` for the rest. :func:`mia_core.documents.run_document_audit` is all of them in a row.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..engines import current_engine
from ..errors import DataError
from ..models import LoadedModel, describe
from ..progress import Progress, noop
from ..stats import StatsSettings, TokenStats, compute_stats
from .baselines import run_baselines
from .books import Document, check_document_overlap, load_documents
from .features import option_settings
from .meta import fold_warnings, make_folds
from .options import PASS_SHARE, DocumentOptions
from .partial import partial_curve
from .pipeline import cross_validate
from .result import DocumentAuditResult

PAPER_BEST = ("maxnorm_tf", "hist")  # the paper's best pipeline for books (§5.3)


# --------------------------------------------------------------------------------------
# settings and documents: no model
# --------------------------------------------------------------------------------------
def check_settings(**settings) -> DocumentOptions:
    """The audit's settings checked and coerced, before any document is read: :meth:`DocumentOptions.check` (the
    declared options, :mod:`mia_core.documents.options`), the settings not given at their defaults.

    Parameters
    ----------
    **settings
        Fields of :class:`DocumentOptions` (``context``, ``normalizations``, ``features``, ``folds``...); what needs
        the documents is checked by :func:`document_set`.

    Returns
    -------
    DocumentOptions

    Raises
    ------
    SettingsError
        One line naming the option: an unknown one, an unknown normalisation or feature extractor, a value outside
        its domain.
    """
    return DocumentOptions.check(**settings)


def _is_path(x) -> bool:
    if isinstance(x, Path):
        return True
    if not isinstance(x, str) or "\n" in x or len(x) > 1024:
        return False
    try:
        return Path(x).expanduser().exists()
    except OSError:
        return False


def _as_documents(docs, role: str) -> list[Document]:
    """Documents from ``Document`` objects, plain texts, or a path / list of paths (``load_documents``)."""
    if isinstance(docs, (str, Path)):
        if _is_path(docs):
            return load_documents(docs)
        raise DataError(f"{role} documents: {str(docs)[:80]!r} is not an existing file or folder")
    out = []
    for i, d in enumerate(docs):
        if isinstance(d, Document):
            out.append(d)
        elif isinstance(d, Path):
            out.extend(load_documents(d))
        elif isinstance(d, str):
            out.append(Document(name=f"{role}_{i + 1}", text=d, source="(text)", strip={"stripped": False}))
        else:
            raise DataError(f"{role} documents must be texts or mia_core.documents.Document objects, not {type(d).__name__}")
    return out


def _unique_names(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        k = seen.get(n, 0)
        seen[n] = k + 1
        out.append(n if k == 0 else f"{n}_{k + 1}")
    return out


@dataclass
class DocumentSet:
    """The audited documents (:func:`document_set`): members first, then non-members."""

    docs: list[Document]
    labels: np.ndarray  # 1 member, 0 non-member
    names: list[str]  # unique names (a repeated name gets _2, _3...)

    @property
    def members(self) -> list[Document]:
        """The member documents."""
        return [d for d, y in zip(self.docs, self.labels) if y == 1]

    @property
    def nonmembers(self) -> list[Document]:
        """The non-member documents."""
        return [d for d, y in zip(self.docs, self.labels) if y == 0]


def document_set(member_docs, nonmember_docs, options: DocumentOptions, *, check_folds: bool = True) -> DocumentSet:
    """The member and non-member documents, read and checked before the long model pass.

    Parameters
    ----------
    member_docs, nonmember_docs
        :class:`~mia_core.documents.books.Document` objects, plain texts, or a path / list of paths
        :func:`~mia_core.documents.books.load_documents` reads.
    options : DocumentOptions
        The checked settings (the folds and the seed are checked against the documents here).
    check_folds : bool
        Check that every fold gets members and non-members (False: left to the audit).

    Returns
    -------
    DocumentSet

    Raises
    ------
    DataError
        No members or no non-members, a document in both sets, a path that does not exist.
    SettingsError
        Too few documents for the folds, a bad partial-document setting.
    """
    members = _as_documents(member_docs, "member")
    nonmembers = _as_documents(nonmember_docs, "nonmember")
    docs = members + nonmembers
    labels = np.array([1] * len(members) + [0] * len(nonmembers), dtype=int)
    if not members or not nonmembers:
        raise DataError("the document audit needs member and non-member documents")
    check_document_overlap(members, nonmembers)
    if check_folds:
        make_folds(labels, int(options.folds), options.seed)  # validate before the long model pass
    return DocumentSet(docs=docs, labels=labels, names=_unique_names([d.name for d in docs]))


# --------------------------------------------------------------------------------------
# the model pass and what follows
# --------------------------------------------------------------------------------------
@dataclass
class DocumentPass:
    """Every document's token statistics (:func:`model_pass`)."""

    stats: list[TokenStats]
    context: int  # the context used (the model's maximum when C is longer)
    seconds: float
    warnings: list[str] = field(default_factory=list)

    @property
    def n_tokens(self) -> np.ndarray:
        """Tokens per document."""
        return np.array([s.n_tokens for s in self.stats])


def model_pass(documents: DocumentSet, lm: LoadedModel, options: DocumentOptions,
               progress: Progress = noop) -> DocumentPass:
    """Every document scored once (§4.1: windows of C tokens, stride C-1; cached and resumable).

    Book-sized texts are scored one document per call, so that progress shows document by document; on an
    engine whose workers hold one model at a time (Ray), in one call for all books, their windows spread
    over the workers.

    Parameters
    ----------
    documents : DocumentSet
        The documents.
    lm : LoadedModel
        The target.
    options : DocumentOptions
        ``context``, ``batch_tokens`` and ``use_cache`` are read.
    progress : callable
        ``progress(message, fraction)``; this stage reports 0 to :data:`PASS_SHARE`.

    Returns
    -------
    DocumentPass

    Raises
    ------
    DataError
        A document with fewer than 2 tokens to score.
    """
    docs, names = documents.docs, documents.names
    warnings: list[str] = []
    st = StatsSettings(context=int(options.context), vocab_probs=True)
    if options.batch_tokens:
        st.batch_tokens = int(options.batch_tokens)
    resolved = st.resolved_context(lm)
    if resolved < int(options.context):
        warnings.append(f"context {options.context} is longer than the model's maximum; using {resolved}")
    stats: list[TokenStats] = []
    t0 = time.time()
    total_chars = sum(len(d.text) for d in docs) or 1
    done_chars = 0
    if current_engine().loads_per_call:
        stats = compute_stats(lm, [d.text for d in docs], st, use_cache=options.use_cache,
                              progress=lambda m, f: progress(m, PASS_SHARE * f), label="documents")
    for i, d in enumerate(docs if not stats else []):
        def prog(msg, frac, i=i, base=done_chars, n=len(d.text)):
            progress(f"document {i + 1}/{len(docs)} ({names[i]}): {msg}", PASS_SHARE * (base + frac * n) / total_chars)
        stats.append(compute_stats(lm, [d.text], st, use_cache=options.use_cache, progress=prog,
                                   label="token statistics")[0])
        done_chars += len(d.text)
    seconds = time.time() - t0
    too_short = [names[i] for i, s in enumerate(stats) if s.n_predicted < 2]
    if too_short:
        raise DataError(f"{len(too_short)} document(s) have fewer than 2 tokens to score: {', '.join(too_short[:5])}")
    return DocumentPass(stats=stats, context=resolved, seconds=seconds, warnings=warnings)


def learned_nothing_warning(oof: dict, split, labels) -> str | None:
    """One warning naming the pipelines whose meta-classifier learned nothing.

    In every fold each held-out document got the same probability, so their AUC of 0.5 is no measurement.

    Parameters
    ----------
    oof : dict
        ``{pipeline: out-of-fold probabilities}``.
    split : list of tuple
        The folds' ``(train, test)`` indices.
    labels : numpy.ndarray
        1 member, 0 non-member.

    Returns
    -------
    str or None
    """
    flat, values = [], set()
    for name, v in oof.items():
        v = np.asarray(v, dtype=float)
        folds = [v[te][np.isfinite(v[te])] for _, te in split]
        folds = [f for f in folds if len(f)]
        if folds and all(float(f.max() - f.min()) < 1e-9 for f in folds):
            flat.append(name)
            values.update(round(float(f[0]), 2) for f in folds)
    if not flat:
        return None
    n_m = int(np.sum(labels == 1))
    n_n = int(np.sum(labels == 0))
    probs = " or ".join(f"{p:.2f}" for p in sorted(values))
    which = "every pipeline" if len(flat) == len(oof) else ", ".join(flat)
    return (f"the meta-classifier learned nothing for {which}: every held-out document got probability {probs} "
            f"({n_m} members and {n_n} non-members are too few for the random forest to split on); "
            "the AUC of 0.5 is not a measurement: add documents")


@dataclass
class Classified:
    """The folds and the meta-classifier's out-of-fold results (:func:`classify`)."""

    split: list  # [(train indices, test indices)] per fold
    cv: object  # mia_core.documents.pipeline.CrossValidation: metrics, oof, fold_of_doc, fold_dicts
    seconds: float
    warnings: list[str] = field(default_factory=list)


def classify(documents: DocumentSet, passes: DocumentPass, options: DocumentOptions, *, vocab_size: int,
             progress: Progress = noop) -> Classified:
    """The stratified folds and every normalisation x feature extractor pipeline's random forest (§4.2-4.4).

    Parameters
    ----------
    documents : DocumentSet
        Its labels.
    passes : DocumentPass
        The documents' statistics.
    options : DocumentOptions
        Folds, seed, bins, trees, pipelines, AggFE's and HistFE's options.
    vocab_size : int
        The target's vocabulary size (the dictionaries' length).
    progress : callable
        This stage reports 0.6 to 0.75.

    Returns
    -------
    Classified
        With the folds' warnings (too few held-out documents) and the learned-nothing warning.
    """
    labels = documents.labels
    t0 = time.time()
    split = make_folds(labels, int(options.folds), options.seed)
    cv = cross_validate(
        passes.stats, labels, list(options.normalizations), list(options.features), vocab_size=vocab_size,
        folds=split, seed=options.seed, n_bins=options.n_bins, n_estimators=options.n_estimators,
        n_jobs=options.n_jobs, agg_count=options.agg_count, hist_outside=options.hist_outside,
        progress=lambda m, f: progress(m, 0.6 + 0.15 * f),
    )
    seconds = time.time() - t0
    warnings = fold_warnings([(int(labels[te].sum()), int((labels[te] == 0).sum())) for _, te in split])
    flat = learned_nothing_warning(cv.oof, split, labels)
    if flat:
        warnings.append(flat)
    return Classified(split=split, cv=cv, seconds=seconds, warnings=warnings)


@dataclass
class Baselines:
    """The sequence-level baselines scaled to documents (:func:`baseline_stage`); empty when not run."""

    metrics: dict | None = None
    notes: list[str] = field(default_factory=list)
    scores: dict = field(default_factory=dict)  # attack -> scaling -> per-document score
    seconds: float = 0.0


def baseline_stage(lm: LoadedModel, reference: LoadedModel | None, documents: DocumentSet, passes: DocumentPass,
                   classified: Classified, options: DocumentOptions, progress: Progress = noop) -> Baselines:
    """The sequence-level attacks scaled to documents on the same folds (§6.2), when ``options.baselines``.

    Parameters
    ----------
    lm, reference : LoadedModel
        The target; the reference for the reference-model attack (None: that attack is left out).
    documents, passes, classified
        The earlier stages' results.
    options : DocumentOptions
        ``baselines``, ``baseline_*``, ``seed``, ``use_cache``, ``batch_tokens``.
    progress : callable
        This stage reports 0.75 to 0.9.

    Returns
    -------
    Baselines
    """
    t0 = time.time()
    if not options.baselines:
        return Baselines(seconds=time.time() - t0)
    br = run_baselines(
        lm, passes.stats, documents.labels, classified.split, reference=reference, attacks=options.baseline_attacks,
        seq_len=options.baseline_seq_len, max_per_doc=options.baseline_max_sequences, seed=options.seed,
        use_cache=options.use_cache, batch_tokens=options.batch_tokens, neighbours=options.baseline_neighbours,
        progress=lambda m, f: progress(m, 0.75 + 0.15 * f),
    )
    return Baselines(metrics=br.metrics, notes=br.notes, scores=br.doc_scores, seconds=time.time() - t0)


def _partial_pipelines(requested, norms, feats, full_metrics) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The pipelines of the partial-document curve and their roles: ``requested`` when given; else the
    paper's MaxNormTF+HistFE (``"paper"``, when this audit runs it) and the pipeline with the best
    full-document mean AUC (``"best"``; ``"paper+best"`` when they coincide)."""
    best = max(full_metrics, key=lambda p: -1 if math.isnan(full_metrics[p]["auc_mean"]) else full_metrics[p]["auc_mean"])
    paper = "+".join(PAPER_BEST)
    if requested:
        pp = [tuple(x) for x in requested]
    else:
        pp = [PAPER_BEST] if PAPER_BEST[0] in norms and PAPER_BEST[1] in feats else []
        pp.append(tuple(best.split("+")))
    pp = list(dict.fromkeys(pp))
    roles = {}
    for n, f in pp:
        name = f"{n}+{f}"
        r = [x for x, hit in (("paper", name == paper), ("best", name == best)) if hit]
        roles[name] = "+".join(r) or "requested"
    return pp, roles


def partial_stage(documents: DocumentSet, passes: DocumentPass, classified: Classified, options: DocumentOptions, *,
                  vocab_size: int, progress: Progress = noop) -> tuple[pd.DataFrame | None, float]:
    """The partial-document curve (§6.4), when ``options.partial_lengths``.

    At each length L the documents are cut (their first L tokens, or a random excerpt) and the dictionaries,
    histogram bins and forest re-fitted on the same folds.

    Parameters
    ----------
    documents, passes, classified
        The earlier stages' results (the full-document metrics choose the "best" pipeline).
    options : DocumentOptions
        ``partial_*`` and the meta-classifier's settings.
    vocab_size : int
        The target's vocabulary size.
    progress : callable
        This stage reports 0.9 to 1.

    Returns
    -------
    tuple
        ``(curve, seconds)``; ``curve`` is None when the curve is off.
    """
    t0 = time.time()
    if not options.partial_lengths:
        return None, time.time() - t0
    metrics = classified.cv.metrics
    pp, roles = _partial_pipelines(options.partial_pipelines, options.normalizations, options.features, metrics)
    part = partial_curve(
        passes.stats, documents.labels, classified.split, pp, vocab_size=vocab_size, lengths=options.partial_lengths,
        position=options.partial_position, dictionaries=options.partial_dictionaries, roles=roles,
        full_metrics=metrics, seed=options.seed, n_bins=options.n_bins, n_estimators=options.n_estimators,
        n_jobs=options.n_jobs, agg_count=options.agg_count, hist_outside=options.hist_outside,
        progress=lambda m, f: progress(m, 0.9 + 0.1 * f),
    )
    return part, time.time() - t0


def _scores_table(documents: DocumentSet, passes: DocumentPass, classified: Classified,
                  base: Baselines) -> pd.DataFrame:
    """One row per document: name, label, fold, tokens, source, each pipeline's probability, each baseline."""
    df = pd.DataFrame({
        "document": documents.names,
        "label": documents.labels,
        "fold": classified.cv.fold_of_doc,
        "n_tokens": passes.n_tokens,
        "source": [d.source for d in documents.docs],
    })
    for p, v in classified.cv.oof.items():
        df[f"prob:{p}"] = v
    for a, by in base.scores.items():
        for sc, v in by.items():
            df[f"baseline:{a}:{sc}"] = v
    return df


def _settings_record(passes: DocumentPass, options: DocumentOptions) -> dict:
    """The settings the result records (``document_metrics.json``'s ``settings``)."""
    o = options
    return {
        "context": passes.context, "stride": passes.context - 1, "normalizations": list(o.normalizations),
        "features": list(o.features), "folds": int(o.folds), "n_bins": int(o.n_bins), "seed": int(o.seed),
        "n_estimators": int(o.n_estimators or 500), "max_depth": 5, "min_samples_leaf": 3,
        "partial_lengths": list(o.partial_lengths or []), "partial_position": o.partial_position,
        "partial_dictionaries": o.partial_dictionaries, "baselines": bool(o.baselines),
        "baseline_seq_len": o.baseline_seq_len, "baseline_max_sequences": o.baseline_max_sequences,
        "baseline_neighbours": o.baseline_neighbours,
        # AggFE's token count and HistFE's out-of-range rule: both keys when either is not the default
        **option_settings(o.agg_count, o.hist_outside),
    }


def assemble_result(lm: LoadedModel, reference: LoadedModel | None, documents: DocumentSet, passes: DocumentPass,
                    classified: Classified, base: Baselines, partial: tuple[pd.DataFrame | None, float],
                    options: DocumentOptions, *, started: float) -> DocumentAuditResult:
    """The stages' results as one :class:`~mia_core.documents.result.DocumentAuditResult`.

    Parameters
    ----------
    lm, reference : LoadedModel
        The target and the reference (described in the result; the target's tokenizer draws the strips).
    documents, passes, classified, base, partial
        The stages' results (``partial``: :func:`partial_stage`'s pair).
    options : DocumentOptions
        The settings recorded.
    started : float
        When the audit started (``time.time()``), for ``timings["total_s"]``.

    Returns
    -------
    DocumentAuditResult
    """
    from ..pipeline import not_verified_notes

    docs, names, labels, n_tokens = documents.docs, documents.names, documents.labels, passes.n_tokens
    part, t_part = partial
    warnings = passes.warnings + classified.warnings
    n_strip = sum(1 for d in docs if (d.strip or {}).get("stripped"))
    if n_strip:
        warnings.append(f"Project Gutenberg header/footer removed from {n_strip} of {len(docs)} documents")
    warnings.extend(not_verified_notes({"target": describe(lm),
                                        "reference": describe(reference) if reference is not None else None}))
    cv = classified.cv
    return DocumentAuditResult(
        documents=[{"name": names[i], "label": int(labels[i]), "source": d.source, "n_tokens": int(n_tokens[i]),
                    "n_chars": len(d.text), "strip": d.strip} for i, d in enumerate(docs)],
        labels=labels, settings=_settings_record(passes, options), model=describe(lm), metrics=cv.metrics,
        scores=_scores_table(documents, passes, classified, base), partial=part, baselines=base.metrics,
        baseline_notes=base.notes, warnings=warnings,
        timings={"stats_s": round(passes.seconds, 2), "meta_classifier_s": round(classified.seconds, 2),
                 "baselines_s": round(base.seconds, 2), "partial_s": round(t_part, 2),
                 "total_s": round(time.time() - started, 2), "tokens": int(n_tokens.sum())},
        reference_model=describe(reference) if reference is not None else None,
        _stats=passes.stats, _fold_of_doc=cv.fold_of_doc, _fold_dicts=cv.fold_dicts, _tokenizer=lm.tokenizer,
    )


def run_stages(documents: DocumentSet, lm: LoadedModel, options: DocumentOptions, *,
               reference: LoadedModel | None = None, progress: Progress | None = None,
               started: float | None = None) -> DocumentAuditResult:
    """The stages that read the model, in a row: model pass -> classifier -> baselines -> partial -> result.

    Parameters
    ----------
    documents : DocumentSet
        From :func:`document_set`.
    lm : LoadedModel
        The target.
    options : DocumentOptions
        From :func:`check_settings`.
    reference : LoadedModel, optional
        The reference for the reference-model baseline.
    progress : callable, optional
        ``progress(message, fraction)``.
    started : float, optional
        When the audit started (default: now).

    Returns
    -------
    DocumentAuditResult
    """
    progress = progress or noop
    started = time.time() if started is None else started
    passes = model_pass(documents, lm, options, progress)
    classified = classify(documents, passes, options, vocab_size=lm.vocab_size, progress=progress)
    base = baseline_stage(lm, reference, documents, passes, classified, options, progress)
    part = partial_stage(documents, passes, classified, options, vocab_size=lm.vocab_size, progress=progress)
    progress("document audit done", 1.0)
    return assemble_result(lm, reference, documents, passes, classified, base, part, options, started=started)
