"""Dataset inference end to end: guards, features from one scoring stage, both tests, the null check.

:func:`run_dataset_inference` is what ``mia infer-dataset`` and ``mia_core.infer_dataset`` call.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import DataError, SettingsError
from ..progress import Progress, noop
from ..results import AuditResult, json_default, write_csv
from . import features as F
from .guards import check_sets, iid_guard
from .significance import DEFAULT_FOLDS, DEFAULT_PERMUTATIONS, format_p, paper_test, permutation_test, power_curve

DEFAULT_ALPHA = 0.01
VERDICTS = ("used", "not_shown", "refused")
RESULT_FILE = "dataset_inference.json"


@dataclass
class DatasetInferenceResult(AuditResult):
    """``summary``: what ``dataset_inference.json`` holds (``p_value``, ``p_value_ttest``, ``verdict``,
    ``n_suspect``, ``n_validation``, ``alpha``, ``blind_auc``, ``null_p_value``, ``weights``, ...);
    ``scores``: one row per text (set, features, the combined out-of-fold score); ``metrics``: the two
    tests and the null check; ``report``: notes."""

    summary: dict
    scores: pd.DataFrame
    metrics: dict = field(default_factory=dict)
    report: list = field(default_factory=list)

    def summary_text(self) -> str:
        s = self.summary
        books = s.get("mode") == "books"
        unit = "books" if books else "texts"
        lines = [f"dataset inference: {s['n_suspect']} suspect vs {s['n_validation']} validation {unit}, "
                 f"alpha = {s['alpha']}" + (f" ({s['n_passages']} passages of {s['passage_words']} words)" if books else "")]
        if s["verdict"] == "refused":
            lines.append(f"VERDICT [refused]: {s['verdict_reason']}")
        else:
            lines += [
                f"features ({len(s['features'])}): {', '.join(s['features'])}",
                f"cross-fitted permutation test over {unit} ({s['folds']} folds, {s['n_permutations']:,} permutations): "
                f"{format_p(s['p_value'], s['p_value_is_bound'])}   (primary)",
                f"  Welch t-test on the same out-of-fold scores: {format_p(s['p_value_crossfit_ttest'])}",
            ]
            if s.get("p_value_ttest") is not None:
                lines.append(f"paper's procedure (Maini et al. 2024: half to train, Student t-test on the other half): "
                             f"{format_p(s['p_value_ttest'])}")
            lines.append(f"null check (two random halves of the validation set, the same test): "
                         f"{format_p(s['null_p_value'], s.get('null_p_value_is_bound', False))}")
            if s.get("power_curve"):
                lines.append("power (median p of the permutation test on random subsets of n suspect + n validation "
                             "texts): " + ", ".join(f"n={c['n']}: {c['median_p']:.2g}" for c in s["power_curve"]))
            for b in s.get("books") or []:
                lines.append(f"  book {b['book']}: p = {b['p_value']:.3g}, {s['correction']}-adjusted {b['p_adjusted']:.3g}"
                             + ("  FLAGGED" if b["flagged"] else ""))
            lines += [f"IID guard: blind baseline AUC {s['blind_auc']:.3f}" if s.get("blind_auc") is not None else
                      "IID guard: blind baseline skipped",
                      f"VERDICT [{s['verdict']}]: {s['verdict_reason']}"]
        lines += [f"note: {n}" for n in self.report]
        return "\n".join(lines)

    # save(out_dir, overwrite=False): AuditResult.save, the rules of --out (mia_core.outputs.save_output)
    def _write(self, out: Path) -> dict[str, Path]:
        """``dataset_inference.json``, ``scores.csv`` and ``report.html`` into the folder ``out``."""
        from .report import dataset_inference_report

        paths = {"summary": out / RESULT_FILE, "scores": out / "scores.csv", "report": out / "report.html"}
        paths["summary"].write_text(json.dumps({**self.summary, "tests": self.metrics, "notes": self.report},
                                               indent=2, default=json_default))
        write_csv(self.scores, paths["scores"])
        paths["report"].write_text(dataset_inference_report(self), encoding="utf-8")
        return paths


def _clean_texts(texts: Sequence[str], what: str, notes: list) -> list[str]:
    out = [str(t).strip() for t in texts]
    out = [t for t in out if t]
    uniq = list(dict.fromkeys(out))
    if len(uniq) < len(out):
        notes.append(f"{what}: {len(out) - len(uniq)} duplicate text(s) dropped")
    return uniq


def check_inputs(suspect: Sequence[str], validation: Sequence[str], *, features="default", reference: bool = False,
                 population: Sequence[str] = (), alpha: float = DEFAULT_ALPHA, folds: int = DEFAULT_FOLDS,
                 n_permutations: int = DEFAULT_PERMUTATIONS) -> tuple[list[str], list[str], list[str], list[str]]:
    """Every check that needs no model (one line each): settings, sizes, overlap. Returns the cleaned
    suspect and validation texts, the feature families and the notes."""
    if not 0 < float(alpha) < 1:
        raise SettingsError(f"alpha must be between 0 and 1, got {alpha}")
    if int(folds) < 2:
        raise SettingsError(f"folds must be at least 2, got {folds}")
    if int(n_permutations) < 99:
        raise SettingsError(f"n_permutations must be at least 99 (p-values down to 0.01), got {n_permutations}")
    notes: list[str] = []
    s = _clean_texts(suspect, "suspect", notes)
    v = _clean_texts(validation, "validation", notes)
    notes += check_sets(s, v)
    pop = [str(t).strip() for t in population if str(t).strip()]
    if pop and (set(pop) & (set(s) | set(v))):
        raise DataError("the population texts (ReCaLL's prefix) must not appear in the suspect or validation set")
    fams = F.parse_features(features, reference=reference, population=bool(pop))
    return s, v, fams, notes


def run_dataset_inference(suspect: Sequence[str], validation: Sequence[str], target, *, reference=None,
                          population: Sequence[str] = (), features="default", alpha: float = DEFAULT_ALPHA,
                          folds: int = DEFAULT_FOLDS, n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0,
                          params: dict | None = None, prefix: str = "auto", use_cache: bool = True,
                          iid_check: bool = True, load=None, progress: Progress | None = None) -> DatasetInferenceResult:
    """Was the suspect set used to train ``target``? (Maini et al. 2024, NeurIPS, "LLM Dataset
    Inference: Did you train on my dataset?").

    ``suspect``: the texts in question; ``validation``: texts of the same distribution known not to be
    trained on (e.g. written after the model's cut-off, or held back before a release). ``target`` and
    ``reference``: loaded models, or specs that ``load(spec)`` loads once the model-free checks have
    passed. ``population``: optional known non-members besides the validation set (ReCaLL's prefix).
    ``features``: :func:`mia_core.dataset_inference.features.parse_features`. ``iid_check=False``
    skips the blind-baseline guard (recorded; for tests on synthetic sets only).

    Returns a :class:`DatasetInferenceResult`; the verdict is ``used`` when the permutation p-value is
    at most ``alpha``, ``not_shown`` otherwise, ``refused`` when the IID guard finds the sets differ
    without the model (no model pass is then made).
    """
    from ..attacks import REGISTRY
    from ..data import Dataset
    from ..pipeline import RunConfig, check_config, score_stage
    from ..stats import StatsSettings

    progress = progress or noop
    t0 = time.time()
    s, v, fams, notes = check_inputs(suspect, validation, features=features, reference=reference is not None,
                                     population=population, alpha=alpha, folds=folds, n_permutations=n_permutations)
    cfg = check_config(RunConfig(attacks=fams, params=dict(params or {}), stats=StatsSettings(prefix=prefix),
                                 use_cache=use_cache, n_bootstrap=0, blind=False))
    summary = {"n_suspect": len(s), "n_validation": len(v), "alpha": float(alpha), "folds": int(folds),
               "n_permutations": int(n_permutations), "seed": int(seed), "p_value": None, "p_value_ttest": None,
               "null_p_value": None, "blind_auc": None, "weights": {}, "features": []}
    guard = None
    if iid_check:
        progress("IID guard: blind baseline", 0.02)
        guard = iid_guard(s, v, seed=seed)
        summary.update(blind_auc=guard["blind_auc"], blind_auc_ci=guard["blind_auc_ci"])
        if not guard["ok"]:
            summary.update(verdict="refused", verdict_reason=guard["message"], seconds=round(time.time() - t0, 2))
            df = pd.DataFrame({"text_id": [f"s{i + 1:04d}" for i in range(len(s))] + [f"v{i + 1:04d}" for i in range(len(v))],
                               "set": ["suspect"] * len(s) + ["validation"] * len(v)})
            return DatasetInferenceResult(summary=summary, scores=df, metrics={}, report=notes)
        if guard["caution"]:
            notes.append(f"IID guard: {guard['message']}")
    else:
        notes.append("the IID guard (blind baseline) was switched off: the p-value assumes the sets are exchangeable")
    if load is not None:
        target = load(target)
        reference = load(reference) if reference is not None else None
    texts = s + v
    y = np.r_[np.ones(len(s), int), np.zeros(len(v), int)]
    ids = [f"s{i + 1:04d}" for i in range(len(s))] + [f"v{i + 1:04d}" for i in range(len(v))]
    pop = [str(t).strip() for t in population if str(t).strip()]
    pop_ds = Dataset(texts=pop, labels=[0] * len(pop), ids=[f"p{i + 1:04d}" for i in range(len(pop))]) if pop else None
    attacks = [REGISTRY[n] for n in fams]
    st = score_stage(texts, target, reference=reference, cfg=cfg, attacks=attacks, population=pop_ds,
                     progress=lambda m, f: progress(m, 0.05 + 0.85 * f),
                     dataset=Dataset(texts=texts, labels=y, ids=ids, report=[]), train_mask=np.zeros(len(y), bool))
    notes += st.report
    cols = F.feature_columns(st.inputs, attacks, cfg.params, st.scores)
    names, X, ok, fnotes = F.clean(cols)
    notes += fnotes
    Xk, yk = X[ok], y[ok]
    if yk.sum() < 2 or (1 - yk).sum() < 2:
        raise DataError("fewer than 2 suspect or validation texts have every feature: nothing to test")
    progress("permutation test", 0.92)
    perm = permutation_test(Xk, yk, folds=folds, n_permutations=n_permutations, seed=seed)
    paper = paper_test(Xk[yk == 1], Xk[yk == 0], seed=seed)
    # the null check: the same test between two random halves of the validation set
    Xv = Xk[yk == 0]
    half = np.zeros(len(Xv), int)
    half[np.random.default_rng([seed, 2]).permutation(len(Xv))[: len(Xv) // 2]] = 1
    null = permutation_test(Xv, half, folds=folds, n_permutations=n_permutations, seed=seed + 1)
    progress("power curve", 0.97)
    curve = power_curve(Xk, yk, folds=folds, seed=seed)
    p = perm["p_value"]
    verdict = "used" if p <= alpha else "not_shown"
    reason = (f"the suspect texts score as trained-on more than the validation texts ({format_p(p, perm['p_value_is_bound'])} "
              f"<= alpha {alpha}): evidence that the suspect set was used to train the model, valid if the two sets "
              "were drawn from one distribution" if verdict == "used" else
              f"no significant difference ({format_p(p, perm['p_value_is_bound'])} > alpha {alpha}): not shown that "
              "the suspect set was used (which is not evidence that it was not: more texts give more power)")
    if null["p_value"] <= alpha:
        notes.append(f"the null check found a difference between two random halves of the validation set "
                     f"({format_p(null['p_value'])} <= alpha): this happens with probability alpha by chance; "
                     "if it repeats, the validation set is not homogeneous")
    summary.update(
        verdict=verdict, verdict_reason=reason, features=names, p_value=p, p_value_is_bound=perm["p_value_is_bound"],
        p_value_resolution=perm["resolution"], p_value_crossfit_ttest=perm["p_value_welch"],
        p_value_ttest=paper["p_value"], p_value_ttest_welch=paper["p_value_welch"], null_p_value=null["p_value"],
        null_p_value_is_bound=null["p_value_is_bound"], weights=dict(zip(names, perm["weights"])),
        power_curve=curve, n_excluded=int((~ok).sum()), iid_check=bool(iid_check),
        seconds=round(time.time() - t0, 2),
        scored_tokens={"prefix": prefix})
    df = pd.DataFrame({"text_id": ids, "set": np.where(y == 1, "suspect", "validation")})
    for n, c in zip(names, X.T):
        df[n] = c
    score = np.full(len(y), np.nan)
    score[ok] = perm["oof_scores"]
    df["score"] = score
    df["excluded"] = ~ok
    metrics = {"permutation": {k: v for k, v in perm.items() if k != "oof_scores"},
               "paper": paper, "null": {k: v for k, v in null.items() if k != "oof_scores"}}
    progress("done", 1.0)
    return DatasetInferenceResult(summary=summary, scores=df, metrics=metrics, report=notes)
