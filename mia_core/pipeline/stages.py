"""The stages of a run that read the models: assemble -> passes -> prepare -> score.

* :func:`assemble`: which texts are scored (the audited set, plus a separate training set), which
  train an attack that learns (SMIA) and which are evaluated (a stratified split when asked).
* :func:`model_passes`: the passes the chosen attacks need (target on the texts, target on the
  lower-cased texts, reference on the texts), each run once through the cached one-pass statistics
  (``mia_core.stats``); :func:`population_pass` does the same for the population set.
* :func:`prepare_attacks`: the ``prepare`` hooks of attacks that need more (neighbours, embeddings,
  a trained SMIA network), on the training part when a split is used.
* :func:`score_attacks`: every text scored by every attack (cheap functions of the statistics).

:func:`score_stage` is the passes, the hooks and the scores in a row; labels are not read there, so
``score_texts`` and dataset inference score unlabelled texts the same way.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..attacks import AttackInputs
from ..data import Dataset, split_mask
from ..engines import current_engine
from ..errors import DataError, SettingsError
from ..models import LoadedModel
from ..progress import Progress, noop
from ..stats import compute_stats, scores_first_token, settings_for
from .config import RunConfig, RunContext


@dataclass
class Assembled:
    """Which texts a run scores (:func:`assemble`): the audited set, then a separate training set."""

    texts: list[str]
    labels: np.ndarray
    ids: list[str]
    groups: list[str]  # "" for a text without a group
    train_mask: np.ndarray  # True: texts an attack that learns may train on (labels known to it)
    dataset: Dataset  # every scored text (what ``prepare`` hooks see)

    @property
    def eval_mask(self) -> np.ndarray:
        """The texts every figure is computed on."""
        return ~self.train_mask


def assemble(dataset: Dataset, train: Dataset | None, cfg: RunConfig) -> Assembled:
    """The scored texts: ``dataset``, plus ``train`` (a separate labelled set, its ids prefixed
    ``train-``) or a stratified, seeded split of ``dataset`` (``cfg.split``) as the training part."""
    if train is not None and cfg.split:
        raise SettingsError("give either a separate training set or a split fraction, not both")
    if train is None:
        labels = dataset.labels.astype(int)
        train_mask = split_mask(labels, cfg.split, cfg.split_seed) if cfg.split else np.zeros(len(labels), bool)
        groups = list(dataset.groups) if dataset.groups else [""] * len(dataset)
        return Assembled(list(dataset.texts), labels, list(dataset.ids), groups, train_mask, dataset)
    overlap = set(train.texts) & set(dataset.texts)
    if overlap:
        raise DataError(f"{len(overlap)} text(s) appear in both the training and the evaluation sets")
    texts = list(dataset.texts) + list(train.texts)
    labels = np.concatenate([dataset.labels, train.labels]).astype(int)
    ids = list(dataset.ids) + [f"train-{i}" for i in train.ids]
    groups = (list(dataset.groups) if dataset.groups else [""] * len(dataset)) + [""] * len(train)
    full = Dataset(texts=texts, labels=labels, ids=ids, groups=groups if any(groups) else None,
                   sources=list(dataset.sources) + list(train.sources), report=[])
    return Assembled(texts, labels, ids, groups, np.r_[np.zeros(len(dataset), bool), np.ones(len(train), bool)], full)


def stats_computer(target: LoadedModel, cfg: RunConfig, progress: Progress) -> Callable[..., list]:
    """``compute(lm, texts, label=..., settings=None)`` -> the texts' token statistics under ``lm``, with
    the run's settings and cache; a reference (or RMIA's references) scores the tokens the target scores,
    with the target's prefix."""
    def compute(lm, texts, label="token statistics", settings=None):
        st = settings_for(lm, target, settings or cfg.stats)
        return compute_stats(lm, texts, st, use_cache=cfg.use_cache, progress=progress, label=label)

    return compute


def _one_job_per_model(compute, target, reference, needs, texts: list[str], population) -> None:
    """On an engine whose workers hold one model at a time (``loads_per_call``: Ray), every pass of one
    model (texts, lower-cased, population) as one job: its workers load the model once instead of once per
    pass. The passes then read the cache. The early results (``partial``) come after the whole job rather
    than after each pass. The numbers are the same either way: only the grouping of the texts differs."""
    base = list(texts) + (list(population.texts) if population is not None and len(population) else [])
    lower = [t.lower() for t in base] if "target_lower" in needs else []
    compute(target, base + lower, "target passes")
    if "reference" in needs and reference is not None:
        compute(reference, base, "reference passes")


def model_passes(texts: list[str], target: LoadedModel, *, reference, cfg: RunConfig, needs: set, population,
                 compute: Callable, on_pass: Callable[[set, AttackInputs], None] | None = None,
                 ) -> tuple[AttackInputs, dict, list[str]]:
    """The model passes ``needs`` asks for, each once: ``(inputs, timings, notes)``. ``on_pass(done,
    inputs)`` is called after each pass with the passes done so far."""
    timings: dict[str, float] = {}
    report: list[str] = []

    def passed(done: set) -> None:
        if on_pass is not None:
            on_pass(done, inputs)

    first_token = scores_first_token(target, cfg.stats) if cfg.score_first_token is None else bool(cfg.score_first_token)
    inputs = AttackInputs(texts=texts, first_token=first_token)
    t0 = time.time()
    if cfg.use_cache and current_engine().loads_per_call:
        _one_job_per_model(compute, target, reference, needs, texts, population)
    inputs.target = compute(target, texts, "target pass")
    timings["target_pass"] = time.time() - t0
    passed({"target"})
    if "target_lower" in needs:
        t0 = time.time()
        inputs.target_lower = compute(target, [t.lower() for t in texts], "target pass (lower-cased)")
        timings["target_lower_pass"] = time.time() - t0
        passed({"target", "target_lower"})
    if "reference" in needs:
        t0 = time.time()
        inputs.reference = compute(reference, texts, "reference pass")
        inputs.same_tokenizer = target.same_tokenizer(reference)
        if reference.identity == target.identity:
            report.append("the reference model is the target model itself: the reference attack scores 0 for every text")
        if not inputs.same_tokenizer:
            report.append("target and reference tokenizers differ: the reference attack compares NLL per byte")
        timings["reference_pass"] = time.time() - t0
        passed({"target", "target_lower", "reference"})
    short = sum(1 for s in inputs.scored() if s.n_predicted == 0)
    if short:
        report.append(f"{short} text(s) too short to score (no predicted token): left out of the figures")
    return inputs, timings, report


def text_passes(texts: list[str], target: LoadedModel, *, reference: LoadedModel | None = None, lower: bool = False,
                progress: Progress = noop) -> AttackInputs:
    """The passes a run makes, for a few texts and no attack (the Inspect page): the target's statistics,
    with ``lower`` those of the lower-cased texts, with ``reference`` the reference's on the tokens the
    target scores; default settings and the cache, as a calibration run."""
    cfg = RunConfig()
    needs = {"target"} | ({"target_lower"} if lower else set()) | ({"reference"} if reference is not None else set())
    return model_passes(list(texts), target, reference=reference, cfg=cfg, needs=needs, population=None,
                        compute=stats_computer(target, cfg, progress))[0]


def prepare_attacks(attacks: list, inputs: AttackInputs, ctx: RunContext) -> tuple[dict, dict, list[str]]:
    """The ``prepare`` hooks (neighbours, embeddings, training), once each: ``(extra, timings, notes)``,
    ``extra`` holding each hook's artefacts and ``notes`` its warning or note."""
    extra: dict = {}
    timings: dict[str, float] = {}
    report: list[str] = []
    for a in attacks:
        if a.prepare is None:
            continue
        t0 = time.time()
        extra[a.name] = a.prepare(inputs, ctx, **a.kwargs(ctx.config.params)) or {}
        timings[f"{a.name}_prepare"] = time.time() - t0
        for kind in ("warning", "note"):
            msg = extra[a.name].get(kind) if isinstance(extra[a.name], dict) else None
            if msg and f"{a.name}: {msg}" not in report:
                report.append(f"{a.name}: {msg}")
    return extra, timings, report


def score_attacks(attacks: list, inputs: AttackInputs, params: dict, early: dict | None = None) -> tuple[dict, dict]:
    """Every attack's score for every text: ``({attack: scores}, timings)``; scores already in ``early``
    (shown while the run went on) are kept."""
    early = early or {}
    scores: dict[str, np.ndarray] = {}
    timings: dict[str, float] = {}
    for a in attacks:
        t0 = time.time()
        scores[a.name] = early[a.name] if a.name in early else np.asarray(a.score(inputs, **a.kwargs(params)),
                                                                          dtype=float)
        timings[f"{a.name}_score"] = time.time() - t0
    return scores, timings


@dataclass
class _Scored:
    """What the scoring stage produced (:func:`score_stage`)."""

    inputs: AttackInputs
    scores: dict
    extra: dict
    timings: dict
    report: list
    compute: Callable
    first_token: bool


def score_stage(texts: list[str], target: LoadedModel, *, reference, cfg: RunConfig, attacks: list, population,
                progress: Progress, dataset: Dataset, train_mask: np.ndarray,
                on_pass: Callable[[set, AttackInputs], None] | None = None, early: dict | None = None) -> _Scored:
    """The scoring stage of a run: the model passes the attacks need (each once, through the cached
    statistics), the attacks' ``prepare`` hooks, then every attack's score for every text. Labels are
    not read here (an attack that learns reads ``dataset``'s labels where ``train_mask`` is True), so
    unlabelled texts are scored the same way (``mia_core.pipeline.score_texts``). ``on_pass(done,
    inputs)`` is called after each pass; scores it put in ``early`` are kept."""
    compute = stats_computer(target, cfg, progress)
    inputs, timings, report = model_passes(texts, target, reference=reference, cfg=cfg, needs=needs_of(attacks),
                                           population=population, compute=compute, on_pass=on_pass)
    ctx = RunContext(target, reference, cfg, dataset, train_mask, progress, compute, population=population)
    extra, prepared, notes = prepare_attacks(attacks, inputs, ctx)
    scores, scored = score_attacks(attacks, inputs, cfg.params, early)
    return _Scored(inputs, scores, extra, {**timings, **prepared, **scored}, report + notes, compute,
                   inputs.first_token)


def needs_of(attacks: list) -> set[str]:
    """The inputs the attacks need together (the passes to run: ``Attack.needs``)."""
    return {n for a in attacks for n in a.needs}


def population_pass(population: Dataset, scored: _Scored, target: LoadedModel, reference, needs: set) -> AttackInputs:
    """The population texts' statistics under the passes the attacks read, with the run's artefacts
    (``inputs.extra``: neighbours, trained models) so that they are scored as the audited texts were."""
    compute = scored.compute
    pop_inputs = AttackInputs(texts=list(population.texts), first_token=scored.first_token)
    pop_inputs.target = compute(target, pop_inputs.texts, "population pass")
    if "target_lower" in needs:
        pop_inputs.target_lower = compute(target, [t.lower() for t in pop_inputs.texts], "population pass (lower)")
    if "reference" in needs:
        pop_inputs.reference = compute(reference, pop_inputs.texts, "population reference pass")
        pop_inputs.same_tokenizer = scored.inputs.same_tokenizer
    pop_inputs.extra = scored.inputs.extra
    return pop_inputs
