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
from .guards import check_sets, iid_guard, nfkc
from .significance import (DEFAULT_COMBINATION, DEFAULT_FOLDS, DEFAULT_PERMUTATIONS, check_settings, format_p, p_number,
                           power_curve)
from .verdict import CORRECTIONS, test_stage

DEFAULT_ALPHA = 0.01
VERDICTS = ("used", "not_shown", "refused")
RESULT_FILE = "dataset_inference.json"


@dataclass
class DatasetInferenceResult(AuditResult):
    """``summary``: what ``dataset_inference.json`` holds (``p_value``, ``p_value_ttest``, ``verdict``,
    ``n_suspect``, ``n_validation``, ``alpha``, ``blind_auc``, ``self_check_p_value``, ``weights``, ...);
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
                f"one-sided permutation test over {unit} (Welch t of the combined scores, non-negative weights, "
                f"{s['folds']} folds, {s['n_permutations']:,} permutations): "
                f"{format_p(s['p_value'], s['p_value_is_bound'])}   (primary; the larger of the permutation "
                f"p {p_number(s['p_value_permutation'], s['p_value_permutation'] <= s['p_value_resolution'])} "
                f"and the Welch t-test's {p_number(s['p_value_welch'])})",
            ]
            if s.get("p_value_ttest") is not None:
                lines.append(f"paper's procedure (Maini et al. 2024: half to train, Student t-test on the other half; "
                             f"it learns the direction, so it is not one-sided): {format_p(s['p_value_ttest'])}")
            lines.append(f"self-check (the same test on two random halves of the validation set: uniform by "
                         f"construction, checks the code path): "
                         f"{format_p(s['self_check_p_value'], s.get('self_check_p_value_is_bound', False))}")
            if s.get("power_curve"):
                lines.append("power, descriptive (median p on random subsets of n suspect + n validation "
                             f"{unit}, the same data): " + ", ".join(f"n={c['n']}: {c['median_p']:.2g}"
                                                                     for c in s["power_curve"]))
            for b in s.get("books") or []:
                lines.append(f"  book {b['book']}: p = {b['p_value']:.3g}, {s['correction']}-adjusted {b['p_adjusted']:.3g}"
                             + ("  FLAGGED" if b["flagged"] else ""))
            if not books:
                lines.append(f"texts that stand out on their own ({s['correction']}-adjusted conformal p <= alpha): "
                             f"{s.get('n_flagged', 0)} of {s['n_suspect']}")
            lines += [f"IID guard: blind baseline AUC {s['blind_auc']:.3f}, permutation p = {s.get('blind_p_value', 1):.3g}"
                      if s.get("blind_auc") is not None else "IID guard: blind baseline skipped",
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


def check_test_settings(*, alpha, folds, n_permutations, combination=DEFAULT_COMBINATION) -> None:
    """The test's settings (one line each, naming the option), before anything is read or loaded."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)) or not 0 < alpha < 1:
        raise SettingsError(f"{{alpha}} must be a number between 0 and 1, got {alpha!r}", options=("alpha",))
    check_settings(folds=folds, n_permutations=n_permutations, combination=combination)


def check_inputs(suspect: Sequence[str], validation: Sequence[str], *, features="default", reference: bool = False,
                 population: Sequence[str] = (), alpha: float = DEFAULT_ALPHA, folds: int = DEFAULT_FOLDS,
                 n_permutations: int = DEFAULT_PERMUTATIONS,
                 combination: str = DEFAULT_COMBINATION) -> tuple[list[str], list[str], list[str], list[str]]:
    """Every check that needs no model (one line each): settings, sizes, overlap. Returns the cleaned
    suspect and validation texts, the feature families and the notes."""
    check_test_settings(alpha=alpha, folds=folds, n_permutations=n_permutations, combination=combination)
    notes: list[str] = []
    s = _clean_texts(suspect, "suspect", notes)
    v = _clean_texts(validation, "validation", notes)
    notes += check_sets(s, v)
    pop = [str(t).strip() for t in population if str(t).strip()]
    if pop and ({nfkc(t) for t in pop} & {nfkc(t) for t in (*s, *v)}):
        raise DataError("the population texts (ReCaLL's prefix) must not appear in the suspect or validation set")
    fams = F.parse_features(features, reference=reference, population=bool(pop))
    return s, v, fams, notes


def guard_stage(suspect: list[str], validation: list[str], *, seed: int, iid_check: bool, summary: dict,
                notes: list, progress: Progress) -> bool:
    """The IID guard (``guards.iid_guard``) into ``summary`` and ``notes``; False when the verdict is refused."""
    if not iid_check:
        notes.append("the IID guard (blind baseline) was switched off: the p-value assumes the sets are exchangeable")
        return True
    progress("IID guard: blind baseline", 0.02)
    g = iid_guard(suspect, validation, seed=seed)
    summary.update(blind_auc=g["blind_auc"], blind_p_value=g["blind_p_value"], blind_detectable_auc=g["detectable_auc"],
                   blind_message=g["message"])
    notes += g["notes"]
    if not g["ok"]:
        summary.update(verdict="refused", verdict_reason=g["message"])
        return False
    notes.append(f"IID guard: {g['message']}")
    return True


def units_frame(df: pd.DataFrame, names, X, ok, tested: dict) -> pd.DataFrame:
    """``df`` (one row per unit: its id and ``set``) with the features, the primary's combined score, the
    label-free score and (suspect units) the conformal p-value, its adjusted value and whether it is flagged."""
    y = (df["set"] == "suspect").to_numpy()
    for n, c in zip(names, X.T):
        df[n] = c
    cols = {k: np.full(len(y), np.nan) for k in ("score", "label_free_score", "p_value", "p_adjusted")}
    cols["score"][ok] = tested["perm"]["scores"]
    u = tested["units"]
    cols["label_free_score"][ok] = u["score"]
    sus = np.flatnonzero(ok & y)
    cols["p_value"][sus], cols["p_adjusted"][sus] = u["p_value"], u["p_adjusted"]
    for k, v in cols.items():
        df[k] = v
    df["flagged"] = df["p_adjusted"] <= tested["summary"]["alpha"]
    df["excluded"] = ~ok
    return df


def run_dataset_inference(suspect: Sequence[str], validation: Sequence[str], target, *, reference=None,
                          population: Sequence[str] = (), features="default", alpha: float = DEFAULT_ALPHA,
                          folds: int = DEFAULT_FOLDS, n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0,
                          combination: str = DEFAULT_COMBINATION, correction: str = "bh",
                          params: dict | None = None, prefix: str = "auto", use_cache: bool = True,
                          iid_check: bool = True, load=None, progress: Progress | None = None) -> DatasetInferenceResult:
    """Was the suspect set used to train ``target``? (Maini et al. 2024, NeurIPS, "LLM Dataset
    Inference: Did you train on my dataset?").

    ``suspect``: the texts in question; ``validation``: texts of the same distribution known not to be
    trained on (e.g. written after the model's cut-off, or held back before a release). ``target`` and
    ``reference``: loaded models, or specs that ``load(spec)`` loads once the model-free checks have
    passed. ``population``: optional known non-members besides the validation set (ReCaLL's prefix).
    ``features``: :func:`mia_core.dataset_inference.features.parse_features`. ``combination``: how the
    features are combined (``significance.COMBINATIONS``). ``correction``: across the per-text
    p-values (``bh`` or ``holm``). ``iid_check=False`` skips the blind-baseline guard (recorded; for
    tests on synthetic sets only).

    Returns a :class:`DatasetInferenceResult`; the verdict is ``used`` when the one-sided p-value is at
    most ``alpha``, ``not_shown`` otherwise, ``refused`` when the IID guard finds the sets differ
    without the model (no model pass is then made).
    """
    from ..attacks import REGISTRY
    from ..pipeline import RunConfig, check_config
    from ..stats import StatsSettings

    progress = progress or noop
    t0 = time.time()
    if correction not in CORRECTIONS:
        raise SettingsError(f"{{correction}} must be one of {', '.join(CORRECTIONS)}, got {correction!r}",
                            options=("correction",))
    s, v, fams, notes = check_inputs(suspect, validation, features=features, reference=reference is not None,
                                     population=population, alpha=alpha, folds=folds, n_permutations=n_permutations,
                                     combination=combination)
    cfg = check_config(RunConfig(attacks=fams, params=dict(params or {}), stats=StatsSettings(prefix=prefix),
                                 use_cache=use_cache, n_bootstrap=0, blind=False))
    summary = {"n_suspect": len(s), "n_validation": len(v), "alpha": float(alpha), "folds": int(folds),
               "n_permutations": int(n_permutations), "seed": int(seed), "p_value": None, "p_value_ttest": None,
               "self_check_p_value": None, "blind_auc": None, "weights": {}, "features": [],
               "combination": combination, "correction": correction}
    ids = [f"s{i + 1:04d}" for i in range(len(s))] + [f"v{i + 1:04d}" for i in range(len(v))]
    y = np.r_[np.ones(len(s), int), np.zeros(len(v), int)]
    if not guard_stage(s, v, seed=seed, iid_check=iid_check, summary=summary, notes=notes, progress=progress):
        summary["seconds"] = round(time.time() - t0, 2)
        df = pd.DataFrame({"text_id": ids, "set": np.where(y == 1, "suspect", "validation")})
        return DatasetInferenceResult(summary=summary, scores=df, metrics={}, report=notes)
    if load is not None:
        target = load(target)
        reference = load(reference) if reference is not None else None
    summary.update(model=model_name(target), reference_model=None if reference is None else model_name(reference))
    pop = [str(t).strip() for t in population if str(t).strip()]
    names, X, ok = feature_stage(s + v, y, ids, target, reference=reference, population=pop, cfg=cfg,
                                 attacks=[REGISTRY[n] for n in fams], notes=notes, progress=progress)
    Xk, yk = X[ok], y[ok]
    if yk.sum() < 2 or (1 - yk).sum() < 2:
        raise DataError("fewer than 2 suspect or validation texts have every feature: nothing to test")
    progress("permutation test", 0.92)
    tested = test_stage(Xk, yk, alpha=alpha, folds=folds, n_permutations=n_permutations, seed=seed,
                        combination=combination, correction=correction, unit="text")
    _tested_notes(tested, alpha, notes)
    progress("power curve", 0.97)
    summary.update(tested["summary"], features=names, weights=dict(zip(names, tested["perm"]["weights"])),
                   power_curve=power_curve(Xk, yk, folds=folds, seed=seed, combination=combination),
                   n_excluded=int((~ok).sum()), iid_check=bool(iid_check), seconds=round(time.time() - t0, 2),
                   scored_tokens={"prefix": prefix})
    progress("done", 1.0)
    df = pd.DataFrame({"text_id": ids, "set": np.where(y == 1, "suspect", "validation")})
    return DatasetInferenceResult(summary=summary, scores=units_frame(df, names, X, ok, tested),
                                  metrics=tested["metrics"], report=notes)


def model_name(m) -> str:
    """How the result names a model: a loaded model's name, else its spec."""
    return str(getattr(m, "name", None) or m)


def _tested_notes(tested: dict, alpha: float, notes: list) -> None:
    s = tested["summary"]
    if tested["unit_note"]:
        notes.append(tested["unit_note"])
    if s["self_check_p_value"] <= alpha:
        notes.append(f"the self-check (two random halves of the validation set) gave "
                     f"{format_p(s['self_check_p_value'])} <= alpha: this happens with probability alpha by chance "
                     "(the halves are exchangeable by construction; it checks the code path, not the data)")
    if s["p_value_ttest"] is not None and s["p_value_ttest"] <= alpha and s["verdict"] != "used":
        notes.append("the paper's split t-test is small but the primary test is not: the paper's classifier learns "
                     "the direction on half A, so it also reacts to a suspect set that is *less* member-like")


def feature_stage(texts: list[str], y: np.ndarray, ids: list[str], target, *, reference, population: list[str], cfg,
                  attacks: list, notes: list, progress: Progress) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The features of every text from one scoring stage (``features``): names, matrix, mask of texts kept."""
    from ..data import Dataset
    from ..pipeline import score_stage

    pop_ds = (Dataset(texts=population, labels=[0] * len(population), ids=[f"p{i + 1:04d}" for i in range(len(population))])
              if population else None)
    st = score_stage(texts, target, reference=reference, cfg=cfg, attacks=attacks, population=pop_ds,
                     progress=lambda m, f: progress(m, 0.05 + 0.85 * f),
                     dataset=Dataset(texts=texts, labels=y, ids=ids, report=[]), train_mask=np.zeros(len(y), bool))
    notes += st.report
    names, X, ok, fnotes = F.clean(F.feature_columns(st.inputs, attacks, cfg.params, st.scores))
    notes += fnotes
    return names, X, ok
