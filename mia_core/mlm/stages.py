"""The masked-LM audit as named stages: :func:`check_inputs` and :func:`text_sets` (settings and texts, no model),
:func:`load_models` (the shared tokenizer, :func:`mia_core.mlm.tokenizers.check_same_tokenizer`),
:func:`energy_passes` (one set of masks, both models), :func:`attack_scores`, :func:`threshold_metrics`
(population threshold, groups, ``mu``), :func:`leak_stage` and :func:`assemble_result`; :func:`run_stages` runs
those that read the models (:func:`mia_core.mlm.audit.run_mlm_audit` all of them)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from ..cache import text_hash
from ..errors import DataError
from ..models import MaskedLM, load_masked_lm
from ..progress import Progress, noop
from .energy import energies
from .leak import _leak_table, token_counts
from .masking import (DEFAULT_RATE, DEFAULT_RECIPE, RECIPES, MaskPlan, _check_settings, _subplan, check_recipe,
                      plan_masks, recipe_k)
from .options import DEFAULT_ALPHA, MlmOptions
from .result import MlmAuditResult
from .tokenizers import check_same_tokenizer


# --------------------------------------------------------------------------------------
# the audit, as stages: settings and texts (no model) -> models -> energies -> scores -> thresholds
# (-> groups) -> leak features -> result
# --------------------------------------------------------------------------------------
def _as_model(m, device, dtype, trust_remote_code, progress) -> MaskedLM:
    if isinstance(m, MaskedLM):
        return m
    return load_masked_lm(m, device=device, dtype=dtype, trust_remote_code=trust_remote_code, progress=progress)


def _texts(name: str, xs) -> list[str]:
    xs = [] if xs is None else [str(x) for x in xs]
    if any(not x.strip() for x in xs):
        raise DataError(f"the {name} contain empty texts; remove them.")
    return xs


def _groups(name: str, groups, n: int, prefix: str) -> list[str] | None:
    if groups is None:
        return None
    g = list(groups)
    if len(g) != n:
        raise DataError(f"got {len(g)} group ids for {n} {name}; give one per text.")
    # a text without a group is a group of its own
    return [f"{prefix}{i}" if (x is None or str(x) == "" or (isinstance(x, float) and math.isnan(x))) else str(x)
            for i, x in enumerate(g)]


def _sub(p: Progress, lo: float, hi: float) -> Progress:
    return lambda msg, f: p(msg, lo + (hi - lo) * max(0.0, min(1.0, f)))


def check_inputs(members: Sequence[str], nonmembers: Sequence[str], population: Sequence[str], *,
                 alpha: float = DEFAULT_ALPHA, k: int | None = None, seed: int = 0,
                 rate: float = DEFAULT_RATE, recipe: str = DEFAULT_RECIPE) -> tuple[list[str], list[str], list[str]]:
    """The texts and settings :func:`run_mlm_audit` checks before it loads a model: one-line ``DataError`` /
    ``SettingsError`` for an empty set, a population that overlaps the evaluated texts, a text in both sets,
    settings out of range. Returns the (members, non-members, population) texts. A front end that loads the
    models itself (the dashboard page) calls it first, so bad input is named before any model loads. ``k`` None:
    the recipe's default ``K``; an unknown ``recipe`` is a one-line ``SettingsError``."""
    check_recipe(recipe)  # one line describing each recipe
    MlmOptions.check_some(alpha=alpha)
    _check_settings(recipe_k(recipe, k), seed, rate)
    mem, non, pop = _texts("members", members), _texts("non-members", nonmembers), _texts("population texts", population)
    if not mem:
        raise DataError("no members given: the audit needs texts believed to be in the training data.")
    if not non:
        raise DataError("no non-members given: the audit needs texts known not to be in the training data.")
    if not pop:
        raise DataError("no population texts given: the threshold needs texts known not to be in the training "
                        "data, other than the evaluated non-members.")
    eval_hashes = {text_hash(t) for t in mem + non}
    overlap = [t for t in pop if text_hash(t) in eval_hashes]
    if overlap:
        n_m = len({text_hash(t) for t in overlap} & {text_hash(t) for t in mem})
        raise DataError(f"{len(overlap)} population text{'s' if len(overlap) != 1 else ''} also appear"
                        f"{'' if len(overlap) != 1 else 's'} among the evaluated texts ({n_m} among the members); "
                        "the population must be disjoint from the members and non-members, or the precision "
                        "and recall would be measured on the data that set the threshold.")
    both = {text_hash(t) for t in mem} & {text_hash(t) for t in non}
    if both and len(both) == len({text_hash(t) for t in mem}) == len({text_hash(t) for t in non}):
        raise DataError(f"the members and the non-members are the same {len(both)} texts (the same file or list "
                        f"given twice?): {len(both)} texts are both members and non-members. An audit compares two "
                        "different sets: give texts known not to be trained on as the non-members.")
    if both:
        raise DataError(f"{len(both)} text{'s' if len(both) != 1 else ''} are both members and non-members; "
                        "remove them from one of the sets.")
    return mem, non, pop


def _not_verified(models: dict) -> list[str]:
    from ..pipeline import not_verified_notes

    return not_verified_notes(models)


def _k(recipe, k):
    """``K`` as the recipe gives it (``k`` None) or as given; None for an unknown recipe (refused by the checks)."""
    if k is None and isinstance(recipe, str) and recipe in RECIPES:
        return recipe_k(recipe)
    return k


@dataclass
class MlmSettings:
    """The checked settings of a masked-LM audit (:func:`check_inputs`' settings, ``k`` resolved by the recipe)."""

    k: int
    seed: int = 0
    rate: float = DEFAULT_RATE
    alpha: float = DEFAULT_ALPHA
    recipe: str = DEFAULT_RECIPE
    batch_tokens: int = 8192
    n_bootstrap: int = 1000
    cache: bool = True


@dataclass
class MlmTexts:
    """The texts of a masked-LM audit (:func:`text_sets`): evaluated (members, then non-members), population,
    training samples; their ids and groups."""

    members: list[str]
    nonmembers: list[str]
    population: list[str]
    train: list[str]
    ids: list[str]  # one per evaluated text
    groups: list[str] | None  # one per evaluated text, or None
    population_groups: list[str] | None

    @property
    def evaluated(self) -> list[str]:
        """Members, then non-members."""
        return self.members + self.nonmembers

    @property
    def labels(self) -> np.ndarray:
        """1 for a member, 0 for a non-member, in the order of :attr:`evaluated`."""
        return np.r_[np.ones(len(self.members), dtype=np.int64), np.zeros(len(self.nonmembers), dtype=np.int64)]

    @property
    def n_scored(self) -> int:
        """Evaluated plus population texts (those the reference scores too)."""
        return len(self.members) + len(self.nonmembers) + len(self.population)


def text_sets(members: Sequence[str], nonmembers: Sequence[str], population: Sequence[str], *,
              settings: MlmSettings, train_samples: Sequence[str] | None = None, member_ids=None, nonmember_ids=None,
              member_groups=None, nonmember_groups=None, population_groups=None) -> MlmTexts:
    """The audit's texts checked (:func:`check_inputs`), with their ids and groups; no model is loaded.

    Parameters
    ----------
    members, nonmembers, population : sequence of str
        The evaluated texts and the population (known non-members, disjoint from them).
    settings : MlmSettings
        The settings :func:`check_inputs` checks with the texts.
    train_samples : sequence of str, optional
        Known training texts (the loss attack's ``mu`` threshold, §3.4).
    member_ids, nonmember_ids : sequence, optional
        The evaluated texts' ids (default ``m0001``..., ``n0001``...).
    member_groups, nonmember_groups, population_groups : sequence, optional
        One group id per text (§4.2; a missing id makes the text its own group).

    Returns
    -------
    MlmTexts

    Raises
    ------
    DataError, SettingsError
        As :func:`check_inputs`; ids or groups that do not match the texts.
    """
    s = settings
    mem, non, pop = check_inputs(members, nonmembers, population, alpha=s.alpha, k=s.k, seed=s.seed, rate=s.rate,
                                 recipe=s.recipe)
    train = _texts("training samples", train_samples) if train_samples is not None else []
    ids = list(member_ids) if member_ids is not None else [f"m{i + 1:04d}" for i in range(len(mem))]
    ids += list(nonmember_ids) if nonmember_ids is not None else [f"n{i + 1:04d}" for i in range(len(non))]
    if len(ids) != len(mem) + len(non):
        raise DataError("give one id per member and per non-member text.")
    mg = _groups("members", member_groups, len(mem), "_m")
    ng = _groups("non-members", nonmember_groups, len(non), "_n")
    if (mg is None) != (ng is None):
        raise DataError("give groups for both the members and the non-members (or for neither).")
    return MlmTexts(members=mem, nonmembers=non, population=pop, train=train, ids=ids,
                    groups=None if mg is None else mg + ng,
                    population_groups=_groups("population texts", population_groups, len(pop), "_p"))


def load_models(target, reference, *, device: str = "auto", dtype: str = "fp32", trust_remote_code: bool = False,
                vocab_only: bool = False, progress: Progress = noop) -> tuple[MaskedLM, MaskedLM, list[str]]:
    """The target and the reference loaded (or as given), checked to share a tokenizer (§2.2).

    Parameters
    ----------
    target, reference : MaskedLM or str
        Loaded models or specs for :func:`~mia_core.models.load_masked_lm`.
    device, dtype, trust_remote_code
        How they load.
    vocab_only : bool
        Accept the same vocabulary with another text normalisation (:func:`check_same_tokenizer`).
    progress : callable
        This stage reports 0 to 0.1.

    Returns
    -------
    tuple
        ``(target, reference, warnings)``.
    """
    t = _as_model(target, device, dtype, trust_remote_code, _sub(progress, 0.0, 0.05))
    r = _as_model(reference, device, dtype, trust_remote_code, _sub(progress, 0.05, 0.1))
    return t, r, check_same_tokenizer(t, r, vocab_only=vocab_only)


@dataclass
class Energies:
    """Both models' energies on one set of masks (:func:`energy_passes`); NaN for the reference on the training
    samples (the loss attack alone reads them)."""

    plan: MaskPlan
    target: np.ndarray
    reference: np.ndarray
    max_length: int
    warnings: list[str] = field(default_factory=list)


def energy_passes(t: MaskedLM, r: MaskedLM, texts: MlmTexts, settings: MlmSettings,
                  progress: Progress = noop) -> Energies:
    """Tokenise once with the target's tokenizer, draw the K masks (§2.3), and score them under both models.

    Parameters
    ----------
    t, r : MaskedLM
        The target and the reference.
    texts : MlmTexts
        Evaluated, population and training texts (the reference skips the training samples).
    settings : MlmSettings
        ``k``, ``seed``, ``rate``, ``recipe``, ``batch_tokens``, ``cache``.
    progress : callable
        This stage reports 0.1 to 0.95.

    Returns
    -------
    Energies
        With a warning when texts were truncated to the models' maximum length.
    """
    s = settings
    warnings: list[str] = []
    max_len = min(t.max_length, r.max_length)
    all_texts = texts.evaluated + texts.population + texts.train
    plan = plan_masks(t.tokenizer, all_texts, k=s.k, seed=s.seed, rate=s.rate, max_length=max_len, recipe=s.recipe)
    if plan.n_truncated:
        warnings.append(f"{plan.n_truncated} text{'s' if plan.n_truncated != 1 else ''} longer than {max_len} "
                        f"tokens {'were' if plan.n_truncated != 1 else 'was'} truncated: only the first "
                        f"{max_len} tokens (special tokens included) are scored.")
    e_t = energies(t, k=s.k, seed=s.seed, rate=s.rate, batch_tokens=s.batch_tokens, cache=s.cache, plan=plan,
                   progress=_sub(progress, 0.1, 0.55))
    # the reference is not needed for the training samples (loss attack only)
    plan_r = _subplan(plan, range(texts.n_scored))
    e_r = np.r_[energies(r, k=s.k, seed=s.seed, rate=s.rate, batch_tokens=s.batch_tokens, cache=s.cache, plan=plan_r,
                         progress=_sub(progress, 0.55, 0.95)), np.full(len(texts.train), np.nan)]
    return Energies(plan=plan, target=e_t, reference=e_r, max_length=max_len, warnings=warnings)


def attack_scores(e: Energies, recipe: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Both attacks' scores on every text: the likelihood ratio ``-(E_target - E_reference)`` and the loss.

    §3.4: the loss baseline is the target's mean loss per masked token: E / l with the "sum" recipe (that
    energy sums over the l masked tokens of each pattern, so it grows with the text's length), E itself with the
    "released" one (already a mean per masked token).

    Parameters
    ----------
    e : Energies
        Both models' energies.
    recipe : str
        The energy recipe.

    Returns
    -------
    tuple
        ``({"likelihood_ratio": ..., "loss": ...}, loss per masked token)``.
    """
    n_mask = e.plan.n_masked
    per_token = RECIPES[recipe]["energy"] == "mean"
    with np.errstate(invalid="ignore", divide="ignore"):
        loss_t = np.where(n_mask > 0, e.target if per_token else e.target / np.maximum(n_mask, 1), np.nan)
    return {"likelihood_ratio": -(e.target - e.reference), "loss": -loss_t}, loss_t


def _group_metrics(s: np.ndarray, labels: np.ndarray, texts: MlmTexts, thr: float, settings: MlmSettings) -> dict:
    """One attack's group-level figures (§4.2): mean score per group, the threshold from the population groups
    (or, without them, the text-level population threshold)."""
    from .. import metrics as M

    n_eval = len(labels)
    ev, pv = slice(0, n_eval), slice(n_eval, texts.n_scored)
    alpha = settings.alpha
    gids, gs, gl = M.group_scores(s[ev], labels, texts.groups, how="mean")
    gm = M.evaluate(gl, gs, n_bootstrap=settings.n_bootstrap, seed=settings.seed)
    if texts.population_groups is not None:
        _, pgs, _ = M.group_scores(s[pv], np.zeros(len(texts.population), dtype=np.int64), texts.population_groups,
                                   how="mean")
        gthr, how = M.population_threshold(pgs, alpha), "population groups"
        npop = int(np.sum(~np.isnan(pgs)))
    else:
        gthr, how, npop = thr, "population texts (no population groups given)", int(np.sum(~np.isnan(s[pv])))
    gm["population_threshold"] = {**M.decisions_at(gl, gs, gthr), "alpha": float(alpha),
                                  "threshold_from": how, "n_population": npop}
    gm["n_groups"] = len(gids)
    return gm


def threshold_metrics(scores: dict[str, np.ndarray], loss_t: np.ndarray, texts: MlmTexts,
                      settings: MlmSettings) -> tuple[dict, dict | None, dict[str, np.ndarray]]:
    """AUC and TPR with CIs, and the decisions at the population threshold (§2.4), per attack and per group.

    Parameters
    ----------
    scores : dict
        :func:`attack_scores`' scores (evaluated, population, training texts in a row).
    loss_t : numpy.ndarray
        The loss per masked token (the ``mu`` threshold's, §3.4, with training samples).
    texts : MlmTexts
        Labels, groups, the population's size and the training samples.
    settings : MlmSettings
        ``alpha``, ``n_bootstrap``, ``seed``.

    Returns
    -------
    tuple
        ``(metrics, group_metrics, flagged)``: ``group_metrics`` None without groups; ``flagged[attack]`` the
        evaluated texts at or above the population threshold.
    """
    from .. import metrics as M

    labels = texts.labels
    ev, pv = slice(0, len(labels)), slice(len(labels), texts.n_scored)
    alpha = settings.alpha
    metrics, group_metrics, flagged = {}, ({} if texts.groups is not None else None), {}
    for name, s in scores.items():
        m = M.evaluate(labels, s[ev], n_bootstrap=settings.n_bootstrap, seed=settings.seed)
        thr = M.population_threshold(s[pv], alpha)
        m["population_threshold"] = {**M.decisions_at(labels, s[ev], thr), "alpha": float(alpha),
                                     "n_population": int(np.sum(~np.isnan(s[pv])))}
        flagged[name] = np.where(np.isnan(s[ev]), False, s[ev] >= thr)
        metrics[name] = m
        if texts.groups is not None:
            group_metrics[name] = _group_metrics(s, labels, texts, thr, settings)
    if texts.train:
        mu = float(np.nanmean(loss_t[texts.n_scored:]))
        metrics["loss"]["mu_threshold"] = {**M.decisions_at(labels, scores["loss"][ev], -mu), "mu": mu,
                                           "n_train_samples": len(texts.train)}
    return metrics, group_metrics, flagged


def leak_stage(plan: MaskPlan, texts: MlmTexts, metrics: dict, flagged: dict) -> dict:
    """§4.6: which members leak: the features of the members each attack flags at the population threshold
    against those it misses.

    Parameters
    ----------
    plan : MaskPlan
        The tokenisation (token counts over the evaluated and population texts).
    texts : MlmTexts
        The members.
    metrics, flagged
        :func:`threshold_metrics`' metrics and flags.

    Returns
    -------
    dict
        ``{attack: {"flagged": {feature: mean}, "unflagged": {...}, ..., "threshold": ...}}``.
    """
    freq = token_counts(plan, range(texts.n_scored))
    n_mem = len(texts.members)
    member_idx = np.arange(n_mem)
    return {name: {**_leak_table(plan, member_idx, flagged[name][:n_mem], freq),
                   "threshold": metrics[name]["population_threshold"]["threshold"]}
            for name in flagged}


def _score_rows(texts: MlmTexts, e: Energies, scores: dict, flagged: dict) -> pd.DataFrame:
    """One row per evaluated text (``MlmAuditResult.scores``)."""
    rows, labels, plan = [], texts.labels, e.plan
    for i in range(len(labels)):
        # in the order scores.csv has them (MlmAuditResult.save): the scores first, as a reader looks for them
        row = {"text_id": texts.ids[i], "label": int(labels[i]), "text_hash": plan.hashes[i],
               "likelihood_ratio": float(scores["likelihood_ratio"][i]), "loss": float(scores["loss"][i])}
        if texts.groups is not None:
            row["group"] = texts.groups[i]
        row.update({"n_tokens": int(plan.n_tokens[i]), "n_masked": int(plan.n_masked[i]),
                    "energy_target": float(e.target[i]), "energy_reference": float(e.reference[i]),
                    "flagged_likelihood_ratio": bool(flagged["likelihood_ratio"][i]),
                    "flagged_loss": bool(flagged["loss"][i])})
        rows.append(row)
    return pd.DataFrame(rows)


def assemble_result(t: MaskedLM, r: MaskedLM, texts: MlmTexts, e: Energies, scores: dict, loss_t: np.ndarray,
                    measured: tuple[dict, dict | None, dict], settings: MlmSettings,
                    warnings: list[str]) -> MlmAuditResult:
    """The stages' results as one :class:`MlmAuditResult`.

    Parameters
    ----------
    t, r : MaskedLM
        The models (described in the result).
    texts, e, scores, loss_t
        The texts, energies, scores and loss per masked token.
    measured : tuple
        :func:`threshold_metrics`' ``(metrics, group_metrics, flagged)``.
    settings : MlmSettings
        Recorded in ``settings``.
    warnings : list of str
        The earlier stages' warnings (the not-verified notes are added).

    Returns
    -------
    MlmAuditResult
    """
    metrics, group_metrics, flagged = measured
    n_eval, ne = len(texts.labels), texts.n_scored
    ev, pv = slice(0, n_eval), slice(n_eval, ne)
    s = settings
    return MlmAuditResult(
        metrics=metrics,
        group_metrics=group_metrics,
        scores=_score_rows(texts, e, scores, flagged),
        population_scores={n: v[pv].tolist() for n, v in scores.items()},
        leak_features=leak_stage(e.plan, texts, metrics, flagged),
        energies={"target": e.target[ev].tolist(), "reference": e.reference[ev].tolist(),
                  "population_target": e.target[pv].tolist(), "population_reference": e.reference[pv].tolist(),
                  "train_target": e.target[ne:].tolist(), "train_loss_per_token": loss_t[ne:].tolist()},
        settings={"recipe": s.recipe, "k": int(s.k), "seed": int(s.seed), "rate": float(s.rate),
                  "alpha": float(s.alpha), "max_length": int(e.max_length), "batch_tokens": int(s.batch_tokens),
                  "n_members": len(texts.members), "n_nonmembers": len(texts.nonmembers),
                  "n_population": len(texts.population), "n_train_samples": len(texts.train)},
        models={"target": t.describe(), "reference": r.describe()},
        warnings=warnings + _not_verified({"target": t.describe(), "reference": r.describe()}),
        plan=e.plan,
    )


def run_stages(texts: MlmTexts, target, reference, settings: MlmSettings, *, device: str = "auto",
               dtype: str = "fp32", trust_remote_code: bool = False, vocab_only: bool = False,
               progress: Progress | None = None) -> MlmAuditResult:
    """The stages that read the models, in a row: load -> energies -> scores -> thresholds -> leaks -> result.

    Parameters
    ----------
    texts : MlmTexts
        From :func:`text_sets`.
    target, reference : MaskedLM or str
        The models, or specs to load.
    settings : MlmSettings
        The checked settings.
    device, dtype, trust_remote_code, vocab_only
        As :func:`load_models`.
    progress : callable, optional
        ``progress(message, fraction)``.

    Returns
    -------
    MlmAuditResult
    """
    progress = progress or noop
    t, r, warnings = load_models(target, reference, device=device, dtype=dtype, trust_remote_code=trust_remote_code,
                                 vocab_only=vocab_only, progress=progress)
    e = energy_passes(t, r, texts, settings, progress)
    progress("metrics: AUC, thresholds, bootstrap", 0.95)
    scores, loss_t = attack_scores(e, settings.recipe)
    measured = threshold_metrics(scores, loss_t, texts, settings)
    result = assemble_result(t, r, texts, e, scores, loss_t, measured, settings, warnings + e.warnings)
    progress("metrics: done", 1.0)
    return result
