"""Sequence-level attacks scaled to documents (Meeus et al. 2024, §6.2).

The privacy literature's sequence-level attacks (LOSS, zlib, lowercase, reference model,
Min-K % and, where available, the neighbourhood attack) score short sequences. To compare
them with the document-level pipeline, each document is cut into sequences of
``seq_len`` = 128 tokens (the authors' ``compute_baselines.py`` uses every 128-token window
with stride 127; here up to ``max_per_doc`` non-overlapping 128-token sequences are
sampled per document, seeded, to bound the cost on long books — ``None`` takes them all).
Each sequence is decoded to text and scored with the registered attack
(``mia_core.attacks.REGISTRY``; statistics from ``compute_stats``, so the disk cache
applies), and the scores are scaled to documents three ways, each evaluated on the same
stratified folds as the meta-classifier:

* **sequence level**: AUC of the held-out fold's sequences, each labelled with its
  document's membership;
* **document average**: a document's score is the mean of its sequences' scores;
* **document threshold**: a threshold is fitted on the training folds' sequences (the one
  maximising Youden's J = TPR - FPR, i.e. balanced accuracy); a held-out document's score is
  the fraction of its sequences scoring at or above it.

The neighbourhood attack (Mattern et al. 2023; ``mia_core.attacks.neighbourhood``) costs
about n + 1 times LOSS per sequence (n neighbours, 25 by default) plus neighbour
generation, so it is off unless asked for (``neighbours=True`` or a dict of its parameters,
e.g. ``{"n": 10, "generator": "offline"}``); its ``prepare`` hook gets a minimal run context
(target model, cache switch, progress, and a ``compute`` that calls ``compute_stats``).

Higher = more likely member throughout (the attacks' convention).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable, Sequence

import numpy as np
from sklearn.metrics import roc_curve

from ..attacks import REGISTRY, AttackInputs
from ..models import LoadedModel
from ..stats import StatsSettings, TokenStats, compute_stats
from .meta import fold_figures, summarize_folds
from .options import DEFAULT_MAX_PER_DOC, DEFAULT_SEQ_LEN, PAPER_BASELINES  # noqa: F401 - declared with the options

SCALINGS = ("sequence", "document_average", "document_threshold")


@dataclass
class SequenceSample:
    """The sequences sampled from the documents (:func:`sample_sequences`).

    Attributes
    ----------
    texts : list of str
        Each sequence decoded to text.
    doc : numpy.ndarray
        The index of each sequence's document.
    spans : list of (int, int)
        Each sequence's token span ``[start, end)`` in its document.
    """

    texts: list[str]
    doc: np.ndarray  # document index of each sequence
    spans: list[tuple[int, int]]  # token span in the document


@dataclass
class BaselineResult:
    """The sequence-level attacks scaled to documents (:func:`run_baselines`; Meeus et al. 2024, §6.2).

    Attributes
    ----------
    metrics : dict
        ``{attack: {scaling: fold summary}}`` for the scalings ``sequence``, ``document_average`` and
        ``document_threshold`` (:func:`mia_core.documents.meta.summarize_folds`).
    doc_scores : dict
        ``{attack: {scaling: out-of-fold score per document}}`` for the two document scalings.
    notes : list of str
        The attacks skipped, and why.
    n_sequences, seq_len : int
        How many sequences were scored, and their length in tokens.
    """

    metrics: dict[str, dict]  # attack -> scaling -> fold summary
    doc_scores: dict[str, dict[str, np.ndarray]]  # attack -> scaling -> out-of-fold document score
    notes: list[str] = field(default_factory=list)
    n_sequences: int = 0
    seq_len: int = DEFAULT_SEQ_LEN


def sample_sequences(
    stats: Sequence[TokenStats],
    tokenizer,
    *,
    seq_len: int = DEFAULT_SEQ_LEN,
    max_per_doc: int | None = DEFAULT_MAX_PER_DOC,
    seed: int = 0,
) -> SequenceSample:
    """Up to ``max_per_doc`` non-overlapping ``seq_len``-token sequences of each document, decoded."""
    rng = np.random.default_rng(seed)
    texts, docs, spans = [], [], []
    for d, s in enumerate(stats):
        n = s.n_tokens
        starts = np.arange(0, max(1, n - seq_len + 1), seq_len) if n >= seq_len else np.array([0])
        if max_per_doc is not None and len(starts) > max_per_doc:
            starts = np.sort(rng.choice(starts, size=max_per_doc, replace=False))
        for a in starts:
            b = min(n, int(a) + seq_len)
            ids = [int(t) for t in s.token_ids[int(a):b]]
            texts.append(tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False))
            docs.append(d)
            spans.append((int(a), b))
    return SequenceSample(texts=texts, doc=np.asarray(docs, dtype=int), spans=spans)


def sequence_scores(
    lm: LoadedModel,
    sample: SequenceSample,
    *,
    reference: LoadedModel | None = None,
    attacks: Sequence[str] = PAPER_BASELINES,
    use_cache: bool = True,
    batch_tokens: int | None = None,
    neighbours: bool | dict = False,
    progress: Callable[[str, float], None] | None = None,
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Score every sampled sequence with each available attack; notes say what was skipped."""
    notes: list[str] = []
    have = {"target"}
    want = []
    for a in attacks:
        att = REGISTRY.get(a)
        if att is None:
            notes.append(f"{a}: not available in this installation (skipped)")
            continue
        if "reference" in att.needs and reference is None:
            notes.append(f"{a}: needs a reference model (skipped)")
            continue
        extra = set(att.needs) - {"target", "target_lower", "reference"}
        if extra == {"neighbours"} and att.prepare is not None:
            if not neighbours:
                notes.append(f"{a}: off by default (about n + 1 times the LOSS cost per sequence); "
                             "turn it on with neighbours=True / --neighbours N")
                continue
        elif extra:
            notes.append(f"{a}: needs {', '.join(sorted(extra))}, which the document audit does not generate (skipped)")
            continue
        want.append(att)
        have.update(att.needs)
    st = StatsSettings(context=None)
    if batch_tokens:
        st.batch_tokens = int(batch_tokens)
    passes = [p for p in ("target", "target_lower", "reference") if p in have]
    inputs = AttackInputs(texts=list(sample.texts))
    for k, p in enumerate(passes):
        def prog(msg, frac, k=k):
            if progress:
                progress(f"baselines ({p}): {msg}", (k + frac) / len(passes))
        if p == "target":
            inputs.target = compute_stats(lm, sample.texts, st, use_cache=use_cache, progress=prog, label="sequences")
        elif p == "target_lower":
            inputs.target_lower = compute_stats(
                lm, [t.lower() for t in sample.texts], st, use_cache=use_cache, progress=prog, label="lower-cased sequences"
            )
        else:
            inputs.reference = compute_stats(reference, sample.texts, st, use_cache=use_cache, progress=prog, label="reference")
            inputs.same_tokenizer = lm.same_tokenizer(reference)
    scores = {}
    for att in want:
        given = neighbours if att.prepare is not None and isinstance(neighbours, dict) else None  # neighbour settings
        params = att.kwargs({att.name: given})
        if att.prepare is not None:

            def compute(model, texts, label="token statistics", settings=None):
                return compute_stats(model, texts, settings or st, use_cache=use_cache,
                                     progress=lambda m, f: progress(f"{att.name}: {m}", f) if progress else None,
                                     label=label)

            ctx = SimpleNamespace(target=lm, reference=reference, config=SimpleNamespace(use_cache=use_cache),
                                  progress=(lambda m, f: progress(f"{att.name}: {m}", f)) if progress else (lambda m, f: None),
                                  compute=compute)
            att.prepare(inputs, ctx, **params)
        scores[att.name] = np.asarray(att.score(inputs, **params), dtype=float)
    return scores, notes


def youden_threshold(y: np.ndarray, s: np.ndarray) -> float:
    """The score threshold maximising TPR - FPR on (y, s) (NaN scores ignored)."""
    ok = ~np.isnan(s)
    y, s = y[ok], s[ok]
    if len(np.unique(y)) < 2:
        return float(np.median(s)) if s.size else float("nan")
    fpr, tpr, thr = roc_curve(y, s, drop_intermediate=False)
    j = tpr - fpr
    j[~np.isfinite(thr)] = -np.inf
    return float(thr[int(np.argmax(j))])


def scale_to_documents(
    seq_scores: dict[str, np.ndarray],
    seq_doc: np.ndarray,
    labels: Sequence[int],
    folds: list[tuple[np.ndarray, np.ndarray]],
) -> tuple[dict[str, dict], dict[str, dict[str, np.ndarray]]]:
    """Sequence-level, document-average and document-threshold figures for each attack (§6.2)."""
    y = np.asarray(labels, dtype=int)
    n_docs = len(y)
    seq_y = y[seq_doc]
    metrics: dict[str, dict] = {}
    doc_scores: dict[str, dict[str, np.ndarray]] = {}
    for name, s in seq_scores.items():
        s = np.asarray(s, dtype=float)
        # document average: no fitting, the same for every fold
        avg = np.full(n_docs, np.nan)
        for d in range(n_docs):
            v = s[(seq_doc == d) & ~np.isnan(s)]
            if v.size:
                avg[d] = v.mean()
        frac = np.full(n_docs, np.nan)
        per = {k: [] for k in SCALINGS}
        for tr, te in folds:
            in_tr = np.isin(seq_doc, tr)
            in_te = np.isin(seq_doc, te)
            per["sequence"].append(fold_figures(seq_y[in_te], s[in_te]))
            per["document_average"].append(fold_figures(y[te], avg[te]))
            thr = youden_threshold(seq_y[in_tr], s[in_tr])
            for d in te:
                v = s[(seq_doc == d) & ~np.isnan(s)]
                if v.size:
                    frac[d] = float((v >= thr).mean())
            per["document_threshold"].append(fold_figures(y[te], frac[te]))
        metrics[name] = {
            "sequence": summarize_folds(per["sequence"]),
            "document_average": summarize_folds(per["document_average"], y, avg),
            "document_threshold": summarize_folds(per["document_threshold"], y, frac),
        }
        doc_scores[name] = {"document_average": avg, "document_threshold": frac}
    return metrics, doc_scores


def run_baselines(
    lm: LoadedModel,
    stats: Sequence[TokenStats],
    labels: Sequence[int],
    folds: list[tuple[np.ndarray, np.ndarray]],
    *,
    reference: LoadedModel | None = None,
    attacks: Sequence[str] = PAPER_BASELINES,
    seq_len: int = DEFAULT_SEQ_LEN,
    max_per_doc: int | None = DEFAULT_MAX_PER_DOC,
    seed: int = 0,
    use_cache: bool = True,
    batch_tokens: int | None = None,
    neighbours: bool | dict = False,
    progress: Callable[[str, float], None] | None = None,
) -> BaselineResult:
    """The sequence-level attacks on the documents, scaled to documents (Meeus et al. 2024, §6.2).

    Samples up to ``max_per_doc`` ``seq_len``-token sequences per document (:func:`sample_sequences`),
    scores them with each available attack (:func:`sequence_scores`) and scales the scores to documents on the
    meta-classifier's folds (:func:`scale_to_documents`).

    Parameters
    ----------
    lm : LoadedModel
        The target model.
    stats : list of TokenStats
        The documents' target statistics (their token ids are cut into sequences).
    labels : list of int
        1 for a member document, 0 for a non-member, as ``stats``.
    folds : list of (numpy.ndarray, numpy.ndarray)
        ``(train_idx, test_idx)`` of document indices, the meta-classifier's folds.
    reference : LoadedModel, optional
        A reference model (the ``ref`` attack; skipped without one).
    attacks : list of str
        Registered attack names (default :data:`PAPER_BASELINES`).
    seq_len, max_per_doc, seed
        The sequences' length in tokens, how many per document at most (None: all), the sampling seed.
    use_cache, batch_tokens
        The statistics pass's disk cache and batch size.
    neighbours : bool or dict
        Run the neighbourhood attack (off by default: about n + 1 times the LOSS cost), or its parameters.
    progress : callable, optional
        ``progress(message, fraction)``.

    Returns
    -------
    BaselineResult
    """
    sample = sample_sequences(stats, lm.tokenizer, seq_len=seq_len, max_per_doc=max_per_doc, seed=seed)
    scores, notes = sequence_scores(
        lm, sample, reference=reference, attacks=attacks, use_cache=use_cache, batch_tokens=batch_tokens,
        neighbours=neighbours, progress=progress,
    )
    metrics, doc_scores = scale_to_documents(scores, sample.doc, labels, folds)
    return BaselineResult(metrics=metrics, doc_scores=doc_scores, notes=notes, n_sequences=len(sample.texts), seq_len=seq_len)
