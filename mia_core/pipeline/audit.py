"""Run a set of attacks on a labelled dataset (:func:`run_attacks`), or score unlabelled texts
(:func:`score_texts`): the stages of :mod:`mia_core.pipeline` in a row."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..attacks import REGISTRY
from ..cache import text_hash
from ..data import Dataset
from ..errors import DataError
from ..models import LoadedModel, describe
from ..progress import Progress, noop
from ..runs.results import RunResult
from ..stats import resolve_prefix
from .config import RunConfig
from .evaluate import EarlyResults, evaluate, population_decisions
from .plan import (available_inputs, check_config, check_population, check_tokenizers, plan_attacks, skip_notes,
                   uses_reference)
from .stages import Assembled, assemble, needs_of, population_pass, score_stage


def not_verified_notes(models: dict) -> list[str]:
    """A warning for every model audited although its weights did not match its checkpoint (asked for with
    ``--accept-weight-mismatch``): the numbers are about that model as loaded, not its checkpoint."""
    return [f"WARNING: the {role} model {d.get('name')} was audited although its weights do not match its "
            f"checkpoint (asked for): {d['weights_not_verified']}"
            for role, d in (models or {}).items() if isinstance(d, dict) and d.get("weights_not_verified")]


def run_attacks(dataset: Dataset, target: LoadedModel, **kwargs) -> RunResult:
    """Score ``dataset`` with the configured attacks and report metrics (:func:`_run_attacks` has the
    parameters). Cache entries that were rejected on read, or could not be stored, are in the
    result's notes (``report``)."""
    from ..cache import collect_notes

    from ..targets import demo

    with collect_notes() as notes:
        result = _run_attacks(dataset, target, **kwargs)
    result.report.extend(notes)
    result.report.extend(not_verified_notes(result.models))
    reference = kwargs.get("reference")
    if demo.is_demo_run(dataset, target, reference, kwargs.get("config")):
        result.extra["known_truth"] = demo.known_truth(result.metrics, reference)
    return result


def _run_attacks(
    dataset: Dataset,
    target: LoadedModel,
    *,
    reference: LoadedModel | None = None,
    config: RunConfig | None = None,
    train: Dataset | None = None,
    population: Dataset | None = None,
    progress: Progress = noop,
    partial: Callable[[dict], None] | None = None,
    optional: Sequence[str] = (),
) -> RunResult:
    """Score ``dataset`` with the configured attacks and report metrics.

    ``train``: a separate labelled set for attacks that learn (SMIA); alternatively
    ``config.split`` splits ``dataset`` (stratified, seeded) and every attack is then
    reported on the same held-out part. ``population``: non-member texts disjoint from the
    evaluation set, used to fit a decision threshold at FPR ``config.population_alpha``.
    ``partial``: called with ``{attack: metrics}`` (AUC, TPR and ROC without bootstrap CIs) for
    the attacks that need no preparation as soon as the passes they read are done (the one-pass
    attacks after the target pass, lowercase after its pass, ref after the reference pass), so a
    front end can show results while the rest runs; the final metrics are the returned ones.
    ``optional``: attacks skipped with the reason, not refused, when the loaded models cannot run them (asked for
    by ``all`` in a front end that expanded it: ``plan.check_tokenizers``).
    """
    cfg = check_config(config or RunConfig())  # every setting before any model pass
    if dataset.n_members == 0 or dataset.n_nonmembers == 0:
        raise DataError("need at least one member and one non-member text")
    cfg, names, skipped = _planned(cfg, target, available_inputs(
        reference=reference, labels=train is not None or bool(cfg.split), population=population))
    names, skipped = check_tokenizers(list(cfg.attacks), names, skipped, target, reference, optional=optional)
    attacks = [REGISTRY[n] for n in names]
    run = assemble(dataset, train, cfg)
    check_population(population, run.texts)
    target_prefix = resolve_prefix(target, cfg.stats)
    early = EarlyResults(attacks, run, cfg.params, partial)
    st = score_stage(run.texts, target, reference=reference, cfg=cfg, attacks=attacks, population=population,
                     progress=progress, dataset=run.dataset, train_mask=run.train_mask, on_pass=early,
                     early=early.scores)
    progress("metrics", 0.95)
    ev = evaluate(st.scores, run, cfg)
    pop = None
    if population is not None and len(population):
        pop_inputs = population_pass(population, st, target, reference, needs_of(attacks))
        pop = population_decisions(attacks, pop_inputs, len(population), st.scores, run, cfg, ev.metrics)
    models = {"target": describe(target)}
    if reference is not None and uses_reference(names, cfg.params):
        models["reference"] = describe(reference)
    progress("done", 1.0)
    return RunResult(
        scores=_scores_frame(run, st.scores),
        metrics=ev.metrics,
        config=_config_record(cfg, names, target_prefix, st.first_token, skipped),
        models=models,
        timings={k: round(v, 3) for k, v in st.timings.items()},
        shift=ev.shift,
        population=pop,
        group_metrics=ev.group_metrics,
        extra=st.extra,
        report=[*dataset.report, *skip_notes(skipped), *st.report, *ev.report],
    )


def _planned(cfg: RunConfig, target: LoadedModel, have: set[str]) -> tuple[RunConfig, list[str], dict[str, str]]:
    """The attacks to run, those skipped with the reason (:func:`plan_attacks`), and the configuration
    with the batch size this device gets by default (recorded with the run; it changes no number)."""
    names, skipped = plan_attacks(list(cfg.attacks), have=have, params=cfg.params)
    return replace(cfg, stats=replace(cfg.stats, batch_tokens=cfg.stats.resolved_batch_tokens(target))), names, skipped


def _config_record(cfg: RunConfig, names: list[str], prefix_token_id, first_token: bool, skipped: dict) -> dict:
    """The configuration a result records: the settings, the attacks run (and skipped) and the tokens scored."""
    return {**cfg.to_dict(), "attacks": names, **({"skipped": skipped} if skipped else {}),
            "scored_tokens": {"prefix": cfg.stats.prefix, "prefix_token_id": prefix_token_id,
                              "first_token": first_token}}


def _scores_frame(run: Assembled, scores: dict[str, np.ndarray]) -> pd.DataFrame:
    """One row per scored text: ``text_id``, ``label``, ``text_hash``, [``split``], [``group``], one column
    per attack."""
    df = pd.DataFrame({"text_id": run.ids, "label": run.labels, "text_hash": [text_hash(t) for t in run.texts]})
    if run.train_mask.any():
        df["split"] = np.where(run.train_mask, "train", "eval")
    if any(run.groups):
        df["group"] = run.groups
    for n, s in scores.items():
        df[n] = s
    return df


def score_texts(texts: Sequence[str], target: LoadedModel, *, reference: LoadedModel | None = None,
                config: RunConfig | None = None, population: Dataset | None = None,
                progress: Progress = noop) -> pd.DataFrame:
    """Score unlabelled ``texts`` with the configured attacks: the scoring stage of :func:`run_attacks`
    (the same passes, cache, ``prepare`` hooks and scores; no labels, no metrics).

    Attacks that learn from labelled texts (SMIA) cannot run here (one ``SettingsError`` line).
    Returns one row per text (``text_id``, ``text_hash``, one column per attack, higher = more likely
    a member); ``df.attrs`` holds ``report`` (notes), ``extra`` (attack artefacts), ``config`` and
    ``skipped``.
    """
    from ..cache import collect_notes

    cfg = check_config(config or RunConfig())
    texts = [str(t) for t in texts]
    if not texts:
        raise DataError("no texts to score")
    cfg, names, skipped = _planned(cfg, target, available_inputs(reference=reference, population=population))
    names, skipped = check_tokenizers(list(cfg.attacks), names, skipped, target, reference)
    check_population(population, texts)
    ids = [f"t{i + 1:04d}" for i in range(len(texts))]
    # the prepare hooks' view of the texts: no label is known (none is read: nothing trains here)
    dataset = Dataset(texts=texts, labels=np.zeros(len(texts), dtype=int), ids=ids, report=[])
    with collect_notes() as notes:
        st = score_stage(texts, target, reference=reference, cfg=cfg, attacks=[REGISTRY[n] for n in names],
                         population=population, progress=progress, dataset=dataset,
                         train_mask=np.zeros(len(texts), bool))
    df = pd.DataFrame({"text_id": ids, "text_hash": [text_hash(t) for t in texts]})
    for n, s in st.scores.items():
        df[n] = s
    df.attrs.update({"report": [*skip_notes(skipped), *st.report, *notes], "extra": st.extra, "skipped": skipped,
                     "config": _config_record(cfg, names, resolve_prefix(target, cfg.stats), st.first_token, {})})
    progress("done", 1.0)
    return df
