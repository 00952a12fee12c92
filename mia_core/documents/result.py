"""``DocumentAuditResult``: what a document-level audit (Meeus et al. 2024) produced, its summary and its files.

:func:`mia_core.documents.run_document_audit` returns it; the CLI prints :meth:`DocumentAuditResult.summary_text`
and writes :meth:`DocumentAuditResult.save`; the dashboard's Document audit page draws its tables and strips.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import SettingsError
from ..metrics import NOT_ESTIMABLE
from ..runs.outputs import save_output
from ..runs.results import AuditResult, write_csv
from ..stats import TokenStats
from .dictionaries import ReferenceDictionaries
from .features import LABELS as FEATURE_LABELS
from .normalization import LABELS as NORM_LABELS, normalized_values, parse_normalizations


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
    :class:`mia_core.runs.results.AuditResult` (``metrics`` per pipeline, ``scores`` per document)."""

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
        """The documents' names (unique), in the order of ``labels``."""
        return [d["name"] for d in self.documents]

    @property
    def pipelines(self) -> list[str]:
        """The pipelines run, as ``"normalisation+features"``."""
        return list(self.metrics)

    @property
    def best_pipeline(self) -> str:
        """The pipeline with the highest mean fold AUC (descriptive: chosen on the same folds)."""
        def auc(p):  # NaN in memory, null in a result read back from its files
            v = self.metrics[p]["auc_mean"]
            return -1 if v is None or math.isnan(v) else v

        return max(self.metrics, key=auc)

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
        """One row per pipeline: labels, mean ± std AUC and TPR at 1 % / 10 % FPR over the folds, pooled AUC."""
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
        """One row per baseline attack and scaling (§6.2): mean ± std AUC, mean TPR at 1 % / 10 % FPR."""
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
        self._check_strips()
        if not 0 <= doc_index < len(self._stats):
            raise SettingsError(f"document index {doc_index} out of range (0..{len(self._stats) - 1})")
        dicts = self._fold_dicts[int(self._fold_of_doc[doc_index])] if self._fold_dicts else None
        return normalized_values(self._stats[doc_index], norm, dicts)

    def token_stats(self, doc_index: int) -> TokenStats:
        """The token statistics of one document (the target's one pass)."""
        self._check_strips()
        return self._stats[doc_index]

    @property
    def has_strips(self) -> bool:
        """Whether the per-token values are in memory (a result read back from its files has none)."""
        return bool(self._stats) or not len(self.documents)

    def _check_strips(self) -> None:
        if not self.has_strips:
            raise SettingsError("this document audit was read back from its files: its per-token values are not in "
                                "memory (a folder saved with them holds them in token_values/, one .npz per "
                                "document)")

    def token_strings(self, doc_index: int) -> list[str]:
        """Each token decoded on its own (for drawing a document's strip)."""
        ids = self._stats[doc_index].token_ids
        return self._tokenizer.batch_decode([[int(t)] for t in ids], clean_up_tokenization_spaces=False)

    def summary_text(self) -> str:
        """The report the CLI prints: the pipelines' table, the baselines, the partial-document curve, warnings."""
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
        """The content of ``document_metrics.json`` (NaN and infinities as null)."""
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
        rules of ``--out`` (:meth:`mia_core.runs.results.AuditResult.save`: a new or empty folder, or with
        ``overwrite`` one this tool wrote; published in one rename)."""
        return save_output(out_dir, lambda out: self._write(out, token_values=bool(token_values)), overwrite=overwrite)

    @classmethod
    def load(cls, out_dir) -> "DocumentAuditResult":
        """The result :meth:`save` wrote into ``out_dir``, read back: ``document_metrics.json`` (settings, models,
        documents and their labels, every pipeline's fold metrics and ROC curves, the baselines, notes, timings),
        ``document_scores.csv`` and ``partial_documents.csv``; its tables, report (:meth:`summary_text`) and
        :meth:`to_json` are the saved run's. The per-token strips are not restored (``token_values/`` holds them as
        files of their own): :meth:`token_values` of a result read back says so in one line. JSON and CSV are parsed,
        never unpickled; ``DataError`` in one line for a folder that holds no saved document audit or a damaged one.
        """
        from ..runs.folder import read_saved_json
        from ..runs.results import read_csv

        out = Path(out_dir).expanduser()
        raw = read_saved_json(out, "document_metrics.json", "document audit",
                              needs=("settings", "model", "documents", "pipelines"))
        try:
            scores = read_csv(out / "document_scores.csv", dtype={"name": str})
            partial = (read_csv(out / "partial_documents.csv", dtype={"pipeline": str})
                       if (out / "partial_documents.csv").is_file() else None)
            labels = np.array([int(d["label"]) for d in raw["documents"]], dtype=int)
        except (ValueError, OSError, KeyError, TypeError) as e:
            from ..errors import DataError

            raise DataError(f"{out}: the saved document audit cannot be read ({e})") from None
        return cls(documents=raw["documents"], labels=labels, settings=raw["settings"], model=raw["model"],
                   metrics=raw["pipelines"], scores=scores, partial=partial, baselines=raw.get("baselines"),
                   baseline_notes=list(raw.get("baseline_notes") or []), warnings=list(raw.get("warnings") or []),
                   timings=raw.get("timings") or {}, reference_model=raw.get("reference_model"))

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
