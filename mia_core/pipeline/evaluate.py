"""The last stage of a run: the metrics on the evaluation part.

* :func:`attack_metrics`: per attack, AUC and TPR at low FPR with bootstrap CIs (``mia_core.metrics``);
* :func:`blind_baseline`: the model-free baseline (``mia_core.metrics.blind_baseline``, a distribution-shift check: a
  bag-of-words classifier that tells members from non-members without the model);
* :func:`group_metrics`: the same on the mean score per group when texts carry groups
  (Mireshghallah et al. 2022 §4.2, "patient-level");
* :func:`population_decisions`: precision and recall at the threshold fitted on a population of known
  non-members at FPR ``population_alpha`` (Mireshghallah et al. 2022 §2.4);
* :class:`EarlyResults`: AUC and TPR (no bootstrap) of the attacks that need no preparation, as soon
  as the passes they read are done (``run_attacks``' ``partial``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .. import metrics as M
from ..attacks import REGISTRY, AttackInputs
from ..errors import DataError, SettingsError
from .config import RunConfig
from .stages import Assembled


class EarlyResults:
    """``on_pass`` of :func:`mia_core.pipeline.stages.score_stage` that hands ``partial`` ``{attack: metrics}``
    (AUC, TPR and ROC without bootstrap CIs) for every attack that needs no preparation once the passes
    it reads are done; the scores computed for that are kept in :attr:`scores` (the stage's ``early``)."""

    def __init__(self, attacks: list, run: Assembled, params: dict, partial: Callable[[dict], None] | None):
        self.attacks, self.run, self.params, self.partial = attacks, run, params, partial
        self.scores: dict[str, np.ndarray] = {}

    def __call__(self, done: set, inputs: AttackInputs) -> None:
        if self.partial is None:
            return
        ev, labels = self.run.eval_mask, self.run.labels
        out = {}
        for a in self.attacks:
            if a.name in self.scores or a.prepare is not None or not set(a.needs) <= done:
                continue
            try:
                self.scores[a.name] = np.asarray(a.score(inputs, **a.kwargs(self.params)), dtype=float)
                m = M.evaluate(labels[ev], self.scores[a.name][ev], n_bootstrap=0)
            except (DataError, SettingsError, ValueError):
                continue
            out[a.name] = {**m, "label": a.label}
        if out:
            try:
                self.partial(out)
            except Exception:  # noqa: BLE001 - a display callback never stops the run
                pass


@dataclass
class Evaluation:
    """What :func:`evaluate` produced (``RunResult``'s fields of the same names)."""

    metrics: dict
    shift: dict | None = None
    group_metrics: dict | None = None
    report: list[str] = field(default_factory=list)


def evaluate(scores: dict[str, np.ndarray], run: Assembled, cfg: RunConfig) -> Evaluation:
    """Every figure on the evaluation part: the attacks' metrics, the blind baseline (``cfg.blind``) and
    the group-level metrics (texts with groups)."""
    metrics = attack_metrics(scores, run, cfg)
    shift, notes = blind_baseline(run, metrics, cfg.seed, use_cache=cfg.use_cache) if cfg.blind else (None, [])
    return Evaluation(metrics, shift, group_metrics(scores, run, cfg) if any(run.groups) else None, notes)


def attack_metrics(scores: dict[str, np.ndarray], run: Assembled, cfg: RunConfig) -> dict:
    """``{attack: metrics}`` of the evaluated texts' scores, labelled and cited."""
    ev = run.eval_mask
    metrics: dict = {}
    for n, s in scores.items():
        m = M.evaluate(run.labels[ev], s[ev], n_bootstrap=cfg.n_bootstrap, seed=cfg.seed)
        m["label"] = REGISTRY[n].label
        m["citation"] = REGISTRY[n].citation
        metrics[n] = m
    return metrics


def blind_baseline(run: Assembled, metrics: dict, seed: int, *, use_cache: bool = False) -> tuple[dict | None, list[str]]:
    """The blind-baseline report (``mia_core.metrics.blind_baseline.shift_report`` on the evaluated texts) and a note when
    it cannot be made; its figures are added to ``metrics`` as ``"blind"``.

    With ``use_cache`` (the run's ``RunConfig.use_cache``) the baseline of the same texts, in the same order, with
    the same settings is read from the cache's ``blind`` namespace (and stored there when it is not); the
    verdict, which reads the attacks' metrics, and the overlap statistics are computed every time.
    """
    ev = run.eval_mask
    ev_texts = [t for t, e in zip(run.texts, ev) if e]
    ev_labels = run.labels[ev]
    mem = [t for t, l in zip(ev_texts, ev_labels) if l == 1]
    non = [t for t, l in zip(ev_texts, ev_labels) if l == 0]
    try:
        from ..metrics.blind_baseline import shift_report

        shift = shift_report(mem, non, seed=seed, attack_metrics=metrics, cache=use_cache)
    except DataError as e:
        return None, [f"blind baseline skipped: {e}"]
    except ImportError:  # a library of the baseline missing: no baseline
        return None, []
    blind = dict(shift["blind"])
    blind.pop("oof_scores", None)
    blind["label"] = "Blind baseline (no model)"
    metrics["blind"] = blind
    return shift, []


def group_metrics(scores: dict[str, np.ndarray], run: Assembled, cfg: RunConfig) -> dict:
    """``{attack: metrics}`` of the mean score per group (an ``error`` entry where they cannot be had)."""
    ev = run.eval_mask
    g_ev = [g for g, e in zip(run.groups, ev) if e]
    out: dict = {}
    for n, s in scores.items():
        gid, gs, gl = M.group_scores(s[ev], run.labels[ev], g_ev)
        try:
            out[n] = M.evaluate(gl, gs, n_bootstrap=cfg.n_bootstrap, seed=cfg.seed, keep_roc=False)
            out[n]["n_groups"] = len(gid)
        except DataError as e:
            out[n] = {"error": str(e)}
    return out


def population_decisions(attacks: list, pop_inputs: AttackInputs, n_population: int, scores: dict, run: Assembled,
                         cfg: RunConfig, metrics: dict) -> dict:
    """Per attack, the decisions on the evaluated texts at the threshold its population scores give
    (FPR ``cfg.population_alpha`` on the population); also put in ``metrics[attack]["population_threshold"]``.
    An attack that cannot score population texts is reported with its error."""
    ev = run.eval_mask
    pop = {"alpha": cfg.population_alpha, "n_population": n_population, "attacks": {}}
    for a in attacks:
        if a.prepare is not None and not getattr(a, "population_ok", True):
            continue
        try:
            ps = np.asarray(a.score(pop_inputs, **a.kwargs(cfg.params)), dtype=float)
        except Exception as e:  # noqa: BLE001 - an attack that cannot score population texts is reported
            pop["attacks"][a.name] = {"error": str(e)}
            continue
        thr = M.population_threshold(ps, cfg.population_alpha)
        d = M.decisions_at(run.labels[ev], scores[a.name][ev], thr)
        pop["attacks"][a.name] = d
        metrics[a.name]["population_threshold"] = d
    return pop
