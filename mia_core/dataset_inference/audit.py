"""Dataset inference over texts end to end, as stages (``stages``): check -> guard -> load models -> features ->
tests -> per-text p-values -> result.

:func:`check_text_run` makes every model-free check once (a :class:`~mia_core.dataset_inference.stages.Checked`);
:func:`infer_texts` runs the stages after it; :func:`run_dataset_inference` is the two in a row, or the second
alone on checks already made (``checked=``: ``mia_core.api.inference.prepare_inference`` /
``execute_inference``, what ``mia infer-dataset``, ``mia_core.infer_dataset`` and the page call).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import DataError, safe_text
from ..formatting import counted
from ..progress import Progress, noop
from ..runs.results import AuditResult, json_default, write_csv
from . import features as F
from .guards import check_sets, nfkc
from .significance import (COMBINATION_WORDS, DEFAULT_COMBINATION, DEFAULT_FOLDS, DEFAULT_PERMUTATIONS, format_p,
                           p_number, power_curve)
from .stages import (Checked, check_correction, check_test_settings, control_refusal, control_stage,  # noqa: F401
                     feature_attacks, feature_stage, folds_used, guard_stage, load_stage, model_name, rests_on,
                     run_config, tested_notes, units_frame)
from .options import InferenceOptions
from .options import DEFAULT_ALPHA
from .verdict import test_stage

VERDICTS = ("used", "not_shown", "refused")
RESULT_FILE = "dataset_inference.json"


@dataclass
class DatasetInferenceResult(AuditResult):
    """``summary``: what ``dataset_inference.json`` holds (``p_value``, ``p_value_ttest``, ``verdict``,
    ``n_suspect``, ``n_validation``, ``alpha``, ``blind_auc``, ``self_check_p_value``, ``weights``, ...);
    ``scores``: one row per text (set, features, the combined out-of-fold score); ``metrics``: the two
    tests and the null check; ``report``: notes; ``inputs``: what was audited as the front end names it (``model``,
    ``model_identity``, ``source``: demo, demo_null, paste, upload or files, ``suspect_files``,
    ``validation_files``), for the report's header and a saved run's name (not in ``dataset_inference.json``;
    the run store keeps it in ``meta.json``)."""

    summary: dict
    scores: pd.DataFrame
    metrics: dict = field(default_factory=dict)
    report: list = field(default_factory=list)
    inputs: dict = field(default_factory=dict)
    # {text id: text} of a text run, in memory only (never written: scores.csv keeps ids), for a front end's
    # snippets; empty for books and for a run read back from the store
    texts: dict = field(default_factory=dict, repr=False)

    def summary_text(self) -> str:
        """The report ``mia infer-dataset`` prints: the sets' sizes and alpha; unless the run was refused, the
        features, the one-sided permutation test's p-value (primary), the paper's split t-test (Maini et al. 2024),
        the self-check on the validation set, the power curve, the per-book p-values (books) or the count of
        texts that stand out on their own, and the IID guard (blind baseline); then the verdict and the notes.
        """
        s = self.summary
        books = s.get("mode") == "books"
        unit = "books" if books else "texts"
        lines = [f"dataset inference: {s['n_suspect']} suspect vs {s['n_validation']} validation {unit}, "
                 f"alpha = {s['alpha']}" + (f" ({s['n_passages']} passages of {s['passage_words']} words)" if books else "")]
        if s["verdict"] == "refused":
            lines.append(f"VERDICT [refused]: {s['verdict_reason']}")
        else:
            lines += [
                f"features ({len(s['features'])}"
                + (", each the target's minus the negative control's" if s.get("control_model") else "")
                + (", adjusted for length" if s.get("adjust_length") else "") + f"): {', '.join(s['features'])}",
                f"one-sided permutation test over {unit} (Welch t of the combined scores, "
                f"{COMBINATION_WORDS.get(s.get('combination'), 'non-negative weights')}, "
                f"{s['folds']} folds, {s['n_permutations']:,} permutations): "
                f"{format_p(s['p_value'], s['p_value_is_bound'])}   (primary; the largest of the permutation "
                f"p {p_number(s['p_value_permutation'], s['p_value_permutation'] <= s['p_value_resolution'])}, "
                f"the Welch t-test's {p_number(s['p_value_welch'])} and the bootstrap-t's "
                f"{p_number(s.get('p_value_bootstrap', s['p_value_welch']))})",
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
                lines.append(f"  book {safe_text(b['book'])}: p = {b['p_value']:.3g}, {s['correction']}-adjusted "
                             f"{b['p_adjusted']:.3g}"
                             + ("  FLAGGED" if b["flagged"] else ""))
            if not books:
                lines.append(f"texts that stand out on their own ({s['correction']}-adjusted conformal p <= alpha): "
                             f"{s.get('n_flagged', 0)} of {s['n_suspect']}")
            lines += [f"IID guard: blind baseline AUC {s['blind_auc']:.3f}, permutation p = {s.get('blind_p_value', 1):.3g}"
                      + (f"; word count AUC {s['length_auc']:.3f}, permutation p = {s['length_p_value']:.3g}"
                         if s.get("length_auc") is not None else "")
                      if s.get("blind_auc") is not None else "IID guard: blind baseline skipped",
                      (f"negative control: {s['control_model']} (the same test on its own features: "
                       f"{format_p(s['control_p_value'])}); the features tested are the target's minus the control's"
                       if s.get("control_model") and s.get("control_p_value") is not None
                       else "negative control: none"),
                      f"VERDICT [{s['verdict']}]: {s['verdict_reason']}"]
        lines += [f"note: {n}" for n in self.report]
        return "\n".join(lines)

    def to_json(self) -> dict:
        """What ``dataset_inference.json`` holds: the summary, the tests (``tests``) and the notes (``notes``)."""
        return {**self.summary, "tests": self.metrics, "notes": self.report}

    # save(out_dir, overwrite=False): AuditResult.save, the rules of --out (mia_core.runs.outputs.save_output)
    def _write(self, out: Path) -> dict[str, Path]:
        """``dataset_inference.json``, ``scores.csv`` and ``report.html`` into the folder ``out``."""
        from .report import dataset_inference_report

        paths = {"summary": out / RESULT_FILE, "scores": out / "scores.csv", "report": out / "report.html"}
        paths["summary"].write_text(json.dumps(self.to_json(), indent=2, default=json_default))
        write_csv(self.scores, paths["scores"])
        paths["report"].write_text(dataset_inference_report(self), encoding="utf-8")
        return paths



def _clean_texts(texts: Sequence[str], what: str, notes: list) -> list[str]:
    out = [str(t).strip() for t in texts]
    out = [t for t in out if t]
    uniq = list(dict.fromkeys(out))
    if len(uniq) < len(out):
        notes.append(f"{what}: {counted(len(out) - len(uniq), 'duplicate texts')} dropped")
    return uniq


def check_inputs(suspect: Sequence[str], validation: Sequence[str], *, features="default", reference: bool = False,
                 population: Sequence[str] = (), alpha: float = DEFAULT_ALPHA, folds: int = DEFAULT_FOLDS,
                 n_permutations: int = DEFAULT_PERMUTATIONS,
                 combination: str = DEFAULT_COMBINATION) -> tuple[list[str], list[str], list[str], list[str]]:
    """Every check of the sets that needs no model (one line each): settings, sizes, overlap, features.

    Parameters
    ----------
    suspect, validation : list of str
        The two sets.
    features, reference, population
        The feature families asked for, whether a reference model is given, known non-members.
    alpha, folds, n_permutations, combination
        The test's settings.

    Returns
    -------
    tuple
        The cleaned suspect and validation texts (stripped, empty and duplicate texts dropped), the feature
        families and the notes.

    Raises
    ------
    SettingsError, DataError
        One line: a setting, too few texts, a text in both sets, a population text among them, a feature.
    """
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


def check_text_run(suspect: Sequence[str], validation: Sequence[str], *, reference: bool = False,
                   population: Sequence[str] = (), features="default", alpha: float = DEFAULT_ALPHA,
                   folds: int = DEFAULT_FOLDS, n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0,
                   combination: str = DEFAULT_COMBINATION, correction: str = "bh", params: dict | None = None,
                   prefix: str = "auto", use_cache: bool = True, iid_check: bool = True, control: str = "auto",
                   adjust_length: bool = True) -> Checked:
    """The check stage of a run over texts: the correction, :func:`check_inputs` and the scoring configuration.

    Parameters
    ----------
    suspect, validation : list of str
        The two sets.
    reference : bool
        A reference model is given (the ``ref`` feature can run).
    population, features, alpha, folds, n_permutations, seed, combination, correction, params, prefix,
    use_cache, iid_check, control, adjust_length
        As :func:`run_dataset_inference` takes them.

    Returns
    -------
    mia_core.dataset_inference.stages.Checked
        ``mode = "texts"``; what :func:`infer_texts` runs on.
    """
    check_correction(correction)
    InferenceOptions.check_some(control=control, adjust_length=adjust_length)
    s, v, fams, notes = check_inputs(suspect, validation, features=features, reference=reference,
                                     population=population, alpha=alpha, folds=folds, n_permutations=n_permutations,
                                     combination=combination)
    cfg = run_config(fams, params=params, prefix=prefix, use_cache=use_cache)
    folds = folds_used(folds, len(s) + len(v), "texts", notes)
    settings = {"alpha": alpha, "folds": folds, "n_permutations": n_permutations, "seed": seed,
                "combination": combination, "correction": correction, "prefix": prefix, "iid_check": iid_check,
                "control": control, "adjust_length": adjust_length}
    return Checked("texts", s, v, fams, cfg, settings, notes,
                   population=[str(t).strip() for t in population if str(t).strip()])


def run_dataset_inference(suspect: Sequence[str], validation: Sequence[str], target, *, reference=None,
                          population: Sequence[str] = (), features="default", alpha: float = DEFAULT_ALPHA,
                          folds: int = DEFAULT_FOLDS, n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0,
                          combination: str = DEFAULT_COMBINATION, correction: str = "bh",
                          params: dict | None = None, prefix: str = "auto", use_cache: bool = True,
                          iid_check: bool = True, control: str = "auto", adjust_length: bool = True,
                          checked: Checked | None = None, load=None,
                          progress: Progress | None = None) -> DatasetInferenceResult:
    """Was the suspect set used to train ``target``? (Maini et al. 2024, NeurIPS, "LLM Dataset
    Inference: Did you train on my dataset?").

    Parameters
    ----------
    suspect : list of str
        The texts in question.
    validation : list of str
        Texts of the same distribution known not to be trained on (e.g. written after the model's cut-off, or
        held back before a release).
    target, reference : LoadedModel or str
        Loaded models, or specs that ``load(spec)`` loads once the model-free checks have passed.
    population : list of str
        Optional known non-members besides the validation set (ReCaLL's prefix).
    features : str or list of str
        :func:`mia_core.dataset_inference.features.parse_features`.
    alpha, folds, n_permutations, seed
        The verdict's level, the cross-fitting folds, the permutations and the seed.
    combination : str
        How the features are combined (``significance.COMBINATIONS``).
    correction : str
        Across the per-text p-values (``bh`` or ``holm``).
    params, prefix, use_cache
        The feature attacks' parameters, the prefix, the statistics cache.
    iid_check : bool
        False skips the blind-baseline guard (recorded; for tests on synthetic sets only).
    control : str
        The negative control (``control.control_spec``): ``"auto"`` (the reference if given, else the target's
        base, else the embedded SmolLM2) or ``"none"``.
    adjust_length : bool
        Adjust every feature for text length (``control.length_adjust``).
    checked : Checked, optional
        The check stage already made for these inputs (:func:`check_text_run`, which
        ``mia_core.api.inference.prepare_inference`` keeps in its request): not made again, and its sets and
        settings are the run's (the arguments above are then not read).
    load : callable, optional
        ``load(spec) -> LoadedModel``.
    progress : callable, optional
        ``progress(message, fraction)``.

    Returns
    -------
    DatasetInferenceResult
        The verdict is ``used`` when the one-sided p-value is at most ``alpha``, ``not_shown`` otherwise,
        ``refused`` when the IID guard finds the sets differ without the model (no model pass is then made) or the
        negative control alone scores the suspect texts as more member-like.
    """
    if checked is None:
        checked = check_text_run(suspect, validation, reference=reference is not None, population=population,
                                 features=features, alpha=alpha, folds=folds, n_permutations=n_permutations,
                                 seed=seed, combination=combination, correction=correction, params=params,
                                 prefix=prefix, use_cache=use_cache, iid_check=iid_check, control=control,
                                 adjust_length=adjust_length)
    return infer_texts(checked, target, reference=reference, load=load, progress=progress)


def _text_summary(c: Checked) -> dict:
    """The summary a run over texts starts from (filled in by each stage)."""
    st = c.settings
    return {"n_suspect": len(c.suspect), "n_validation": len(c.validation), "alpha": float(st["alpha"]),
            "folds": int(st["folds"]), "n_permutations": int(st["n_permutations"]), "seed": int(st["seed"]),
            "p_value": None, "p_value_ttest": None, "self_check_p_value": None, "blind_auc": None, "weights": {},
            "features": [], "combination": st["combination"], "correction": st["correction"],
            "control": st.get("control", "auto"), "adjust_length": bool(st.get("adjust_length", True))}


def _text_tests(X: np.ndarray, y: np.ndarray, ok: np.ndarray, st: dict, notes: list, progress: Progress,
                names=None) -> dict:
    """The tests stage over texts (``verdict.test_stage``) on the texts with every feature, and their notes."""
    Xk, yk = X[ok], y[ok]
    if yk.sum() < 2 or (1 - yk).sum() < 2:
        raise DataError("fewer than 2 suspect or validation texts have every feature: nothing to test")
    progress("permutation test", 0.92)
    tested = test_stage(Xk, yk, alpha=st["alpha"], folds=st["folds"], n_permutations=st["n_permutations"],
                        seed=st["seed"], combination=st["combination"], correction=st["correction"], unit="text",
                        names=names)
    tested_notes(tested, st["alpha"], notes)
    return tested


def infer_texts(checked: Checked, target, *, reference=None, load=None,
                progress: Progress | None = None) -> DatasetInferenceResult:
    """The stages of a run over texts after the check: guard -> load models -> features -> tests -> per-text
    p-values -> result.

    Parameters
    ----------
    checked : Checked
        :func:`check_text_run`'s result (``mode = "texts"``).
    target, reference, load, progress
        As :func:`run_dataset_inference` takes them.

    Returns
    -------
    DatasetInferenceResult
    """
    progress = progress or noop
    t0 = time.time()
    c, st, notes = checked, checked.settings, list(checked.notes)
    summary = _text_summary(c)
    ids = [f"s{i + 1:04d}" for i in range(len(c.suspect))] + [f"v{i + 1:04d}" for i in range(len(c.validation))]
    y = np.r_[np.ones(len(c.suspect), int), np.zeros(len(c.validation), int)]
    df = pd.DataFrame({"text_id": ids, "set": np.where(y == 1, "suspect", "validation")})
    if not guard_stage(c.suspect, c.validation, seed=st["seed"], iid_check=st["iid_check"], summary=summary,
                       notes=notes, progress=progress, adjust_length=st.get("adjust_length", True)):
        summary["seconds"] = round(time.time() - t0, 2)
        return DatasetInferenceResult(summary=summary, scores=df, metrics={}, report=notes)
    target, reference = load_stage(target, reference, load)
    summary.update(model=model_name(target), reference_model=None if reference is None else model_name(reference))
    control, cfg, attacks = control_stage(target, reference, c, load, summary, notes)
    fs = feature_stage(c.suspect + c.validation, y, ids, target, reference=control if control is not None else reference,
                       population=c.population, cfg=cfg, attacks=attacks, notes=notes, progress=progress,
                       control=control is not None, adjust_length=st.get("adjust_length", True))
    names, X, ok = fs.names, fs.X, fs.ok
    summary.update(length_r2=fs.length_r2)
    if control_refusal(fs, y, st, summary, notes):
        summary["seconds"] = round(time.time() - t0, 2)
        return DatasetInferenceResult(summary=summary, scores=df, metrics={}, report=notes)
    tested = _text_tests(X, y, ok, st, notes, progress, names)
    progress("power curve", 0.97)
    summary.update(tested["summary"], features=names, weights=dict(zip(names, tested["perm"]["weights"])),
                   power_curve=power_curve(X[ok], y[ok], folds=st["folds"], seed=st["seed"],
                                           combination=st["combination"], names=names),
                   n_excluded=int((~ok).sum()), iid_check=bool(st["iid_check"]), seconds=round(time.time() - t0, 2),
                   scored_tokens={"prefix": st["prefix"]})
    rests_on(summary, fs, st.get("adjust_length", True))
    progress("done", 1.0)
    return DatasetInferenceResult(summary=summary, scores=units_frame(df, names, X, ok, tested),
                                  metrics=tested["metrics"], report=notes,
                                  texts=dict(zip(ids, [*c.suspect, *c.validation])))
