"""``run_document_audit``: the whole document-level membership inference of Meeus et al. 2024.

See the package docstring (``mia_core.documents``) for the method; this module wires the
steps together, keeps what the dashboard and the CLI need, and writes the outputs.
"""
from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..engines import current_engine
from ..errors import DataError, SettingsError
from ..metrics import NOT_ESTIMABLE
from ..models import LoadedModel, describe
from ..outputs import save_output
from ..stats import StatsSettings, TokenStats, compute_stats
from .baselines import DEFAULT_MAX_PER_DOC, DEFAULT_SEQ_LEN, PAPER_BASELINES, run_baselines
from .books import Document, check_document_overlap, load_documents
from .dictionaries import ReferenceDictionaries
from .features import DEFAULT_BINS, LABELS as FEATURE_LABELS, check_options, option_settings, parse_features
from .meta import fold_warnings, make_folds
from .normalization import LABELS as NORM_LABELS, NORMALIZATIONS, normalized_values, parse_normalizations
from .partial import DEFAULT_LENGTHS, DICTIONARIES as PARTIAL_DICTIONARIES, POSITIONS, partial_curve
from .pipeline import cross_validate
from ..progress import Progress, noop
from ..results import AuditResult, write_csv

DEFAULT_CONTEXT = 128  # §4.1; the paper also uses 1024 and 2048
PAPER_BEST = ("maxnorm_tf", "hist")  # the paper's best pipeline for books (§5.3)


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


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return None if math.isnan(v) or math.isinf(v) else v
    if isinstance(x, np.integer):
        return int(x)
    return x


def _safe_filename(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "document"
    return s[:120]


@dataclass
class DocumentAuditResult(AuditResult):
    """Everything a document-level audit produced (see ``run_document_audit``); an
    :class:`mia_core.results.AuditResult` (``metrics`` per pipeline, ``scores`` per document)."""

    documents: list[dict]  # name, label, source, n_tokens, n_chars, strip report
    labels: np.ndarray
    settings: dict
    model: dict
    metrics: dict[str, dict]  # pipeline -> {auc_mean, auc_std, tpr_at_fpr_mean/std, pooled_auc, folds[{auc, tpr_at_fpr, roc}]}
    scores: pd.DataFrame  # one row per document: name, label, fold, n_tokens, out-of-fold probability per pipeline
    partial: pd.DataFrame | None = None
    baselines: dict | None = None  # attack -> scaling -> fold summary
    baseline_notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    reference_model: dict | None = None
    _stats: list[TokenStats] = field(default_factory=list, repr=False)
    _fold_of_doc: np.ndarray | None = field(default=None, repr=False)
    _fold_dicts: list[ReferenceDictionaries] = field(default_factory=list, repr=False)
    _tokenizer: object = field(default=None, repr=False)

    # ------------------------------------------------------------------ views
    @property
    def names(self) -> list[str]:
        return [d["name"] for d in self.documents]

    @property
    def pipelines(self) -> list[str]:
        return list(self.metrics)

    @property
    def best_pipeline(self) -> str:
        """The pipeline with the highest mean fold AUC (descriptive: chosen on the same folds)."""
        return max(self.metrics, key=lambda p: -1 if math.isnan(self.metrics[p]["auc_mean"]) else self.metrics[p]["auc_mean"])

    @property
    def tpr_estimable(self) -> dict[str, bool]:
        """``{"0.01": bool, "0.1": bool}``: whether every fold held out enough non-members for TPR
        at that FPR (all pipelines, the partial curve and the baselines share the folds)."""
        est = {"0.01": True, "0.1": True}
        for m in self.metrics.values():
            for k, v in (m.get("tpr_estimable") or {}).items():
                est[k] = est.get(k, True) and bool(v)
        return est

    def table(self) -> pd.DataFrame:
        rows = []
        for p, m in self.metrics.items():
            norm, feat = p.split("+")
            rows.append({
                "pipeline": p,
                "normalization": NORM_LABELS[norm],
                "features": FEATURE_LABELS[feat],
                "auc_mean": m["auc_mean"],
                "auc_std": m["auc_std"],
                "tpr_1_mean": m["tpr_at_fpr_mean"]["0.01"],
                "tpr_1_std": m["tpr_at_fpr_std"]["0.01"],
                "tpr_10_mean": m["tpr_at_fpr_mean"]["0.1"],
                "tpr_10_std": m["tpr_at_fpr_std"]["0.1"],
                "tpr_1_estimable": (m.get("tpr_estimable") or {}).get("0.01", True),
                "tpr_10_estimable": (m.get("tpr_estimable") or {}).get("0.1", True),
                "pooled_auc": m.get("pooled_auc"),
            })
        return pd.DataFrame(rows)

    def baseline_table(self) -> pd.DataFrame:
        rows = []
        for a, by in (self.baselines or {}).items():
            for scaling, m in by.items():
                rows.append({
                    "attack": a, "scaling": scaling, "auc_mean": m["auc_mean"], "auc_std": m["auc_std"],
                    "tpr_1_mean": m["tpr_at_fpr_mean"]["0.01"], "tpr_10_mean": m["tpr_at_fpr_mean"]["0.1"],
                })
        return pd.DataFrame(rows, columns=["attack", "scaling", "auc_mean", "auc_std", "tpr_1_mean", "tpr_10_mean"])

    def token_values(self, doc_index: int, normalization: str = "maxnorm_tf") -> np.ndarray:
        """F(t) of every token of one document (float64, NaN where not predicted), normalised with
        the dictionary of the fold in which that document was held out (so its own tokens are not
        in R(t)). ``normalization`` as in ``parse_normalizations`` (e.g. ``"maxnorm-tf"``)."""
        (norm,) = parse_normalizations(normalization)
        if not 0 <= doc_index < len(self._stats):
            raise SettingsError(f"document index {doc_index} out of range (0..{len(self._stats) - 1})")
        dicts = self._fold_dicts[int(self._fold_of_doc[doc_index])] if self._fold_dicts else None
        return normalized_values(self._stats[doc_index], norm, dicts)

    def token_stats(self, doc_index: int) -> TokenStats:
        return self._stats[doc_index]

    def token_strings(self, doc_index: int) -> list[str]:
        """Each token decoded on its own (for drawing a document's strip)."""
        ids = self._stats[doc_index].token_ids
        return self._tokenizer.batch_decode([[int(t)] for t in ids], clean_up_tokenization_spaces=False)

    def summary_text(self) -> str:
        def f(v, pct=False):
            if v is None or (isinstance(v, float) and math.isnan(v)):
                return "-"
            return f"{100 * v:.1f}%" if pct else f"{v:.3f}"

        n_m = int(self.labels.sum())
        lines = [
            f"Document-level membership inference (Meeus et al. 2024) — {n_m} members, "
            f"{len(self.labels) - n_m} non-members, {self.settings['folds']} folds, context {self.settings['context']}",
            f"model: {self.model.get('name')} ({self.model.get('dtype')}, {self.model.get('quantize')})",
        ]
        if "agg_count" in self.settings:
            lines.append("feature options: AggFE " + ("with the token count (as the authors' code)"
                                                      if self.settings["agg_count"] else "without the token count")
                         + "; HistFE held-out values outside the fitted bins "
                         + ("dropped, densities (as the authors' code)" if self.settings["hist_outside"] == "drop"
                            else "clipped into the end bins, fractions"))
        lines += [
            "",
            f"{'normalisation':<13} {'features':<8} {'AUC mean ± std':>16} {'TPR@1%FPR':>16} {'TPR@10%FPR':>16}",
        ]
        for _, r in self.table().iterrows():
            tprs = [f"{f(r[f'tpr_{x}_mean'], True):>7} ± {f(r[f'tpr_{x}_std'], True):<6}" if r[f"tpr_{x}_estimable"]
                    else f"{NOT_ESTIMABLE:>7}   {'':<6}" for x in (1, 10)]
            lines.append(f"{r['normalization']:<13} {r['features']:<8} {f(r['auc_mean']):>7} ± {f(r['auc_std']):<6} "
                         + " ".join(tprs))
        bt = self.baseline_table()
        if len(bt):
            lines += ["", "Sequence-level baselines scaled to documents (§6.2): AUC mean ± std",
                      f"{'attack':<11} {'sequence':>16} {'doc average':>16} {'doc threshold':>16}"]
            for a in bt["attack"].unique():
                cells = []
                for sc in ("sequence", "document_average", "document_threshold"):
                    r = bt[(bt.attack == a) & (bt.scaling == sc)].iloc[0]
                    cells.append(f"{f(r['auc_mean']):>7} ± {f(r['auc_std']):<6}")
                lines.append(f"{a:<11} " + " ".join(cells))
        for n in self.baseline_notes:
            lines.append(f"  note: {n}")
        if self.partial is not None and len(self.partial):
            where = ("the first L tokens" if self.settings.get("partial_position", "start") == "start"
                     else "a random excerpt of L tokens")
            dicts = ("R(t) from the full training documents"
                     if self.settings.get("partial_dictionaries") == "full" else "R^TF counted at length L")
            lines += ["", f"Partial documents (§6.4): AUC mean ± std vs L tokens per document ({where} of each; "
                          f"{dicts}, bins and meta-classifier re-fitted at each L on the same folds)"]
            role_text = {"paper": "paper's pipeline", "best": "best full-document pipeline",
                         "paper+best": "paper's pipeline, also the best full-document one", "requested": "requested"}
            for p in self.partial["pipeline"].unique():
                sub = self.partial[self.partial.pipeline == p]
                role = role_text.get(str(sub["role"].iloc[0]), "") if "role" in sub else ""
                full = self.metrics.get(p, {}).get("auc_mean")
                lines.append(f"  {p}" + (f" ({role})" if role else "") + ": "
                             + ", ".join(f"{int(r.n_tokens)}: {f(r.auc_mean)} ± {f(r.auc_std)}" for r in sub.itertuples())
                             + (f", full: {f(full)}" if full is not None else ""))
        for w in self.warnings:
            lines.append(f"warning: {w}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ output
    def to_json(self) -> dict:
        return _jsonable({
            "method": "Meeus et al. 2024, Did the Neurons Read your Book? (USENIX Security)",
            "settings": self.settings,
            "model": self.model,
            "reference_model": self.reference_model,
            "documents": self.documents,
            "pipelines": self.metrics,
            "best_pipeline": self.best_pipeline,
            "baselines": self.baselines,
            "baseline_notes": self.baseline_notes,
            "partial": None if self.partial is None else self.partial.to_dict(orient="records"),
            "warnings": self.warnings,
            "timings": self.timings,
        })

    def save(self, out_dir, *, token_values: bool = True, overwrite: bool = False) -> dict[str, Path]:
        """Write ``document_metrics.json``, ``document_scores.csv``, ``partial_documents.csv`` (if
        any), ``baselines.csv`` (if any) and ``token_values/<doc>.npz`` (per-token ``token_ids``,
        ``token_text``, ``logprob``, ``max_logprob``, one float32 array per normalisation named after
        it, and ``fold``) with ``token_values/index.json`` mapping document names to files; under the
        rules of ``--out`` (:meth:`mia_core.results.AuditResult.save`: a new or empty folder, or with
        ``overwrite`` one this tool wrote; published in one rename)."""
        return save_output(out_dir, lambda out: self._write(out, token_values=bool(token_values)), overwrite=overwrite)

    def _write(self, out: Path, *, token_values: bool = True) -> dict[str, Path]:
        paths = {"metrics": out / "document_metrics.json", "scores": out / "document_scores.csv"}
        paths["metrics"].write_text(json.dumps(self.to_json(), indent=2, allow_nan=False))
        write_csv(self.scores, paths["scores"])  # document names as text, never as spreadsheet formulas
        if self.partial is not None and len(self.partial):
            paths["partial"] = out / "partial_documents.csv"
            write_csv(self.partial, paths["partial"])
        if self.baselines:
            paths["baselines"] = out / "baselines.csv"
            write_csv(self.baseline_table(), paths["baselines"])
        if token_values and self._stats:
            tv = out / "token_values"
            tv.mkdir(exist_ok=True)
            index, used = {}, set()
            norms = self.settings["normalizations"]
            for i, name in enumerate(self.names):
                fn = _safe_filename(name)
                if fn.lower() in used:
                    fn = f"{fn}_{i}"
                used.add(fn.lower())
                s = self._stats[i]
                arrays = {
                    "token_ids": s.token_ids.astype(np.int32),
                    "token_text": np.array(self.token_strings(i), dtype=str),
                    "logprob": s.logprob.astype(np.float32),
                    "max_logprob": s.max_logprob.astype(np.float32),
                    "fold": np.array(int(self._fold_of_doc[i])),
                    "label": np.array(int(self.labels[i])),
                }
                for n in norms:
                    arrays[n] = self.token_values(i, n).astype(np.float32)
                np.savez_compressed(tv / f"{fn}.npz", **arrays)
                index[name] = f"{fn}.npz"
            (tv / "index.json").write_text(json.dumps(index, indent=2))
            paths["token_values"] = tv
        return paths


def learned_nothing_warning(oof: dict, split, labels) -> str | None:
    """One warning naming the pipelines whose meta-classifier learned nothing: in every fold each
    held-out document got the same probability, so their AUC of 0.5 is no measurement."""
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


def _check_partial_settings(pipelines, position: str, dictionaries: str) -> None:
    if position not in POSITIONS:
        raise SettingsError(f"unknown partial-document position {position!r}: choose {' or '.join(POSITIONS)}")
    if dictionaries not in PARTIAL_DICTIONARIES:
        raise SettingsError(f"unknown partial-document dictionaries {dictionaries!r}: "
                            f"choose {' or '.join(PARTIAL_DICTIONARIES)}")
    for n, f in pipelines or ():
        if n not in NORMALIZATIONS or f not in ("hist", "agg"):
            raise SettingsError(f"unknown partial-document pipeline {n}+{f}")


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

    ``member_docs``/``nonmember_docs``: ``mia_core.documents.Document`` objects (``load_documents``),
    plain texts, or a path/list of paths ``load_documents`` reads. ``lm``: the target model
    (``load_causal_lm``). Every document is scored once with ``compute_stats`` (context
    ``context``, stride context-1, §4.1; cached and resumable). Then, over ``folds`` stratified
    folds, each normalisation (``"all"`` or names such as ``"maxnorm-tf"``, §4.2) × feature
    extractor (``"hist"``, ``"agg"``, §4.3) pipeline trains the random forest (§4.4) and gives
    every document an out-of-fold membership probability. Optional: the sequence-level baselines
    scaled to documents (§6.2; ``reference`` adds the reference-model attack,
    ``baseline_neighbours=True`` or a dict of its parameters the neighbourhood attack) and the
    partial-document curve (§6.4; ``partial_lengths=None`` or ``()`` turns it off): at each length L
    the documents are cut to their first L tokens (``partial_position="random"``: a random excerpt)
    and dictionaries, histogram bins and forest are re-fitted on the same folds at that length
    (``partial_dictionaries="full"`` takes R^TF/R^GP from the full training documents instead);
    ``partial_pipelines`` defaults to MaxNormTF+HistFE, the paper's best for books, and the pipeline
    with the best full-document AUC of this audit (column ``role`` of ``result.partial``).
    ``n_bins`` defaults to the paper's 1,000 histogram bins; ``n_estimators`` to its 500 trees.
    ``agg_count=True`` feeds AggFE the token count too, as the authors' code (off by default: length
    can confound members and non-members); ``hist_outside="drop"`` makes HistFE the authors'
    ``numpy.histogram(density=True)``, which drops held-out values outside the fitted bins (default
    ``"clip"``: counted in the end bins, fractions); see ``mia_core.documents.features``. Both are
    recorded in ``settings`` (``agg_count``, ``hist_outside``) when either differs from its default.
    Raises ``DataError``/``SettingsError``/``ModelError`` with one sentence for bad input.
    """
    progress = progress or noop
    t_start = time.time()
    norms = parse_normalizations(normalizations)
    feats = parse_features(features)
    agg_count, hist_outside = check_options(agg_count, hist_outside)
    if int(context) < 2:
        raise SettingsError(f"the context length must be at least 2 tokens, got {context}")
    members = _as_documents(member_docs, "member")
    nonmembers = _as_documents(nonmember_docs, "nonmember")
    docs = members + nonmembers
    labels = np.array([1] * len(members) + [0] * len(nonmembers), dtype=int)
    if not members or not nonmembers:
        raise DataError("the document audit needs member and non-member documents")
    check_document_overlap(members, nonmembers)
    make_folds(labels, int(folds), seed)  # validate before the long model pass
    if partial_lengths:
        _check_partial_settings(partial_pipelines, partial_position, partial_dictionaries)
    names = _unique_names([d.name for d in docs])
    warnings: list[str] = []

    st = StatsSettings(context=int(context), vocab_probs=True)
    if batch_tokens:
        st.batch_tokens = int(batch_tokens)
    resolved = st.resolved_context(lm)
    if resolved < int(context):
        warnings.append(f"context {context} is longer than the model's maximum; using {resolved}")
    # book-sized texts: score one document per call so progress shows document by document; on an engine whose
    # workers load the model at each call (Ray), one call for all books, their windows spread over the workers
    stats: list[TokenStats] = []
    t0 = time.time()
    total_chars = sum(len(d.text) for d in docs) or 1
    done_chars = 0
    if current_engine().loads_per_call:
        stats = compute_stats(lm, [d.text for d in docs], st, use_cache=use_cache,
                              progress=lambda m, f: progress(m, 0.6 * f), label="documents")
    for i, d in enumerate(docs if not stats else []):
        def prog(msg, frac, i=i, base=done_chars, n=len(d.text)):
            progress(f"document {i + 1}/{len(docs)} ({names[i]}): {msg}", 0.6 * (base + frac * n) / total_chars)
        stats.append(compute_stats(lm, [d.text], st, use_cache=use_cache, progress=prog, label="token statistics")[0])
        done_chars += len(d.text)
    t_stats = time.time() - t0
    too_short = [names[i] for i, s in enumerate(stats) if s.n_predicted < 2]
    if too_short:
        raise DataError(f"{len(too_short)} document(s) have fewer than 2 tokens to score: {', '.join(too_short[:5])}")
    n_tokens = np.array([s.n_tokens for s in stats])

    vocab = lm.vocab_size
    t0 = time.time()
    split = make_folds(labels, int(folds), seed)
    cv = cross_validate(
        stats, labels, norms, feats, vocab_size=vocab, folds=split, seed=seed, n_bins=n_bins,
        n_estimators=n_estimators, n_jobs=n_jobs, agg_count=agg_count, hist_outside=hist_outside,
        progress=lambda m, f: progress(m, 0.6 + 0.15 * f),
    )
    t_cv = time.time() - t0
    warnings += fold_warnings([(int(labels[te].sum()), int((labels[te] == 0).sum())) for _, te in split])
    flat = learned_nothing_warning(cv.oof, split, labels)
    if flat:
        warnings.append(flat)

    base_metrics, base_notes, base_scores = None, [], {}
    t0 = time.time()
    if baselines:
        br = run_baselines(
            lm, stats, labels, split, reference=reference, attacks=baseline_attacks, seq_len=baseline_seq_len,
            max_per_doc=baseline_max_sequences, seed=seed, use_cache=use_cache, batch_tokens=batch_tokens,
            neighbours=baseline_neighbours, progress=lambda m, f: progress(m, 0.75 + 0.15 * f),
        )
        base_metrics, base_notes, base_scores = br.metrics, br.notes, br.doc_scores
    t_base = time.time() - t0

    part = None
    t0 = time.time()
    if partial_lengths:
        pp, roles = _partial_pipelines(partial_pipelines, norms, feats, cv.metrics)
        part = partial_curve(
            stats, labels, split, pp, vocab_size=vocab, lengths=partial_lengths, position=partial_position,
            dictionaries=partial_dictionaries, roles=roles, full_metrics=cv.metrics, seed=seed, n_bins=n_bins,
            n_estimators=n_estimators, n_jobs=n_jobs, agg_count=agg_count, hist_outside=hist_outside,
            progress=lambda m, f: progress(m, 0.9 + 0.1 * f),
        )
    t_part = time.time() - t0

    df = pd.DataFrame({
        "document": names,
        "label": labels,
        "fold": cv.fold_of_doc,
        "n_tokens": n_tokens,
        "source": [d.source for d in docs],
    })
    for p, v in cv.oof.items():
        df[f"prob:{p}"] = v
    for a, by in base_scores.items():
        for sc, v in by.items():
            df[f"baseline:{a}:{sc}"] = v

    documents = [
        {"name": names[i], "label": int(labels[i]), "source": d.source, "n_tokens": int(n_tokens[i]),
         "n_chars": len(d.text), "strip": d.strip}
        for i, d in enumerate(docs)
    ]
    n_strip = sum(1 for d in docs if (d.strip or {}).get("stripped"))
    if n_strip:
        warnings.append(f"Project Gutenberg header/footer removed from {n_strip} of {len(docs)} documents")
    settings = {
        "context": resolved, "stride": resolved - 1, "normalizations": list(norms), "features": list(feats),
        "folds": int(folds), "n_bins": int(n_bins), "seed": int(seed),
        "n_estimators": int(n_estimators or 500), "max_depth": 5, "min_samples_leaf": 3,
        "partial_lengths": list(partial_lengths or []), "partial_position": partial_position,
        "partial_dictionaries": partial_dictionaries, "baselines": bool(baselines),
        "baseline_seq_len": baseline_seq_len, "baseline_max_sequences": baseline_max_sequences,
        "baseline_neighbours": baseline_neighbours,
        # AggFE's token count and HistFE's out-of-range rule: both keys when either is not the default
        **option_settings(agg_count, hist_outside),
    }
    progress("document audit done", 1.0)
    from ..pipeline import not_verified_notes

    warnings.extend(not_verified_notes({"target": describe(lm),
                                        "reference": describe(reference) if reference is not None else None}))
    return DocumentAuditResult(
        documents=documents, labels=labels, settings=settings, model=describe(lm), metrics=cv.metrics, scores=df,
        partial=part, baselines=base_metrics, baseline_notes=base_notes, warnings=warnings,
        timings={"stats_s": round(t_stats, 2), "meta_classifier_s": round(t_cv, 2), "baselines_s": round(t_base, 2),
                 "partial_s": round(t_part, 2), "total_s": round(time.time() - t_start, 2),
                 "tokens": int(n_tokens.sum())},
        reference_model=describe(reference) if reference is not None else None,
        _stats=stats, _fold_of_doc=cv.fold_of_doc, _fold_dicts=cv.fold_dicts, _tokenizer=lm.tokenizer,
    )
