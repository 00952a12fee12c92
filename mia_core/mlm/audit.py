"""``run_mlm_audit``: the masked-LM audit of Mireshghallah et al. 2022, and its result.

See the package docstring (``mia_core.mlm``) for the method; this module checks that the two
models share a tokenizer (§2.2), wires masking, energies, thresholds and leak features
together, and returns an :class:`MlmAuditResult` (the project's one result type,
:class:`mia_core.runs.results.AuditResult`), which prints the CLI's report and writes its files.

The audit runs as named stages: :func:`check_inputs` and :func:`text_sets` (settings and texts, no model),
:func:`load_models` (the shared tokenizer), :func:`energy_passes` (one set of masks, both models),
:func:`attack_scores`, :func:`threshold_metrics` (population threshold, groups, ``mu``), :func:`leak_stage` and
:func:`assemble_result`; :func:`run_stages` runs those that read the models, :func:`run_mlm_audit` all of them.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..cache import text_hash
from ..errors import DataError, SettingsError
from ..formatting import fmt_pct
from ..models import MaskedLM, load_masked_lm
from ..runs.outputs import save_output
from ..progress import Progress, noop
from ..runs.results import AuditResult, neutralise_cell
from .energy import energies
from .leak import _leak_table, token_counts
from .masking import (DEFAULT_RATE, DEFAULT_RECIPE, RECIPES, MaskPlan, _check_settings, _subplan, check_recipe,
                      plan_masks, recipe_k)

DEFAULT_ALPHA = 0.1
ATTACKS = ("likelihood_ratio", "loss")
_PROBE = "Membership inference: 1234 naïve Résumé, ~zß! The QUICK brown fox."


def check_same_tokenizer(target: MaskedLM, reference: MaskedLM, *, vocab_only: bool = False) -> list[str]:
    """Raise ``SettingsError`` unless both models share a tokenizer; returns warnings.

    The likelihood ratio compares the two models' probabilities of the *same* token ids at the
    *same* masked positions (§2.2), so the vocabularies (token -> id maps), the mask token and
    the tokenisation of a probe string (case, accents, digits, punctuation) must all agree.
    Both models are always fed the ids made by the *target's* tokenizer. With ``vocab_only``,
    a difference in text normalisation alone (e.g. a cased vocabulary that one tokenizer
    lowercases) is accepted with a warning: the reference then sees text normalised as the
    target's tokenizer does it, which can bias its energies.
    """
    a, b = target.tokenizer, reference.tokenizer
    why = None
    va, vb = a.get_vocab(), b.get_vocab()
    if va != vb:
        missing = len(set(va) - set(vb))
        renumbered = sum(1 for tok, i in va.items() if tok in vb and vb[tok] != i)
        why = (f"their vocabularies differ ({len(va):,} vs {len(vb):,} tokens; {missing:,} of the target's "
               f"tokens are missing from the reference and {renumbered:,} have another id)")
    elif a.mask_token_id != b.mask_token_id:
        why = "their mask tokens differ"
    else:
        ea = a(_PROBE).input_ids
        eb = b(_PROBE).input_ids
        if ea != eb:
            why = (f"they tokenise text differently (the probe {_PROBE!r} gets different token ids: one "
                   "tokenizer may lowercase or strip accents and the other not)")
            if vocab_only:
                return [f"the target and the reference share a vocabulary but {why}; both are fed the target's "
                        "tokenisation (vocab_only), which the reference may find unusual."]
    if why:
        raise SettingsError(
            f"the target ({target.name}) and the reference ({reference.name}) do not share a tokenizer: {why}. "
            "The likelihood-ratio attack needs a reference with the target's tokenizer, such as the "
            "general-domain model the target was trained from."
            + (" (Same vocabulary, different normalisation only? {vocab_only} accepts that.)"
               if why.startswith("they tokenise") else ""), options=("vocab_only",))
    return []


# --------------------------------------------------------------------------------------
# the result
# --------------------------------------------------------------------------------------
def _pct(v) -> str:
    return "n/a" if v is None else fmt_pct(v)


def _decision_line(name: str, d: dict, what: str) -> str:
    return (f"  {name:<17} precision {_pct(d['precision']):>6}  recall {_pct(d['recall']):>6}  "
            f"FPR {_pct(d['fpr']):>6}  ({d['n_flagged']} flagged; threshold {d['threshold']:.4g} {what})")


def _json_metrics(m: dict) -> dict:
    return {k: v for k, v in m.items() if k != "roc"}


@dataclass
class MlmAuditResult(AuditResult):
    """Everything a masked-LM audit produced (see :func:`run_mlm_audit`).

    ``metrics``: ``{"likelihood_ratio": evaluate(...) + {"population_threshold": decisions,
    "alpha"}, "loss": ... (+ "mu_threshold" with training samples)}``; ``group_metrics``: the
    same per attack at group level (§4.2), or ``None``; ``scores``: one row per evaluated text
    (``text_id``, ``label``, ``text_hash``, [``group``], ``n_tokens``, ``n_masked`` (``l``, the
    tokens each pattern masks), ``likelihood_ratio``, ``loss`` (minus the target's mean loss per
    masked token, ``-E/l``), ``energy_target``, ``energy_reference``, ``flagged_likelihood_ratio``,
    ``flagged_loss``; the energies follow ``settings["recipe"]``); ``population_scores``: ``{attack: [...]}``;
    ``leak_features``:
    ``{attack: {"flagged": {feature: mean}, "unflagged": {...}, ...}}`` (§4.6); ``energies``:
    ``{"target": [...], "reference": [...], "population_target": [...], ...}``; ``settings``,
    ``models`` (``{"target": {...}, "reference": {...}}``) and ``warnings``. ``plan``: the
    tokenisation and masks both models scored (:class:`MaskPlan`; not written by :meth:`save`).
    """

    metrics: dict
    group_metrics: dict | None
    scores: pd.DataFrame
    population_scores: dict
    leak_features: dict
    energies: dict
    settings: dict
    models: dict
    warnings: list[str] = field(default_factory=list)
    plan: MaskPlan | None = field(default=None, repr=False, compare=False)

    def summary_text(self) -> str:
        """The human-readable summary printed by the CLI."""
        from ..metrics import summarize_table

        s = self.settings
        recipe = s.get("recipe", DEFAULT_RECIPE)
        how = ("mean loss per masked token, l = int" if RECIPES.get(recipe, {}).get("energy") == "mean"
               else "summed over the masked tokens, l = ceil")
        lines = [
            f"target: {self.models['target']['name']}; reference: {self.models['reference']['name']} "
            f"(recipe '{recipe}': K={s['k']} masks of {s['rate']:.0%} of the tokens, energy {how}({s['rate']:g} T); "
            f"max {s['max_length']} tokens)",
            f"{s['n_members']} members, {s['n_nonmembers']} non-members, {s['n_population']} population texts",
            "",
            summarize_table(self.metrics),
            "",
            f"at the population threshold (flags {s['alpha']:.0%} of the population; §2.4):",
        ]
        for name, m in self.metrics.items():
            lines.append(_decision_line(name, m["population_threshold"], "on the score"))
        mu = self.metrics.get("loss", {}).get("mu_threshold")
        if mu:
            lines.append(f"loss attack at the mean training-sample loss per masked token mu = {mu['mu']:.4g} "
                         f"({mu['n_train_samples']} training samples; §3.4):")
            lines.append(_decision_line("loss (mu)", mu, "on -loss"))
        if self.group_metrics:
            g0 = next(iter(self.group_metrics.values()))
            lines += ["", f"group level (mean score per group, {g0['n_groups']} groups; §4.2):",
                      summarize_table(self.group_metrics),
                      f"at the group threshold (from the {g0['population_threshold']['threshold_from']}):"]
            for name, m in self.group_metrics.items():
                lines.append(_decision_line(name, m["population_threshold"], "on the group mean"))
        lf = self.leak_features.get("likelihood_ratio")
        if lf:
            lines += ["", f"members flagged by the likelihood ratio ({lf['n_flagged']}) vs. not flagged "
                          f"({lf['n_unflagged']}), feature means (§4.6):"]
            for f in lf["features"]:
                a, b = lf["flagged"][f], lf["unflagged"][f]
                lines.append(f"  {f:<18} {'-' if a is None else f'{a:.1f}':>8}  {'-' if b is None else f'{b:.1f}':>8}")
        for w in self.warnings:
            lines.append(f"note: {w}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        """The content of ``metrics.json``: metrics without ROC curves (``group`` for the group
        level), leak features, settings, models and warnings."""
        metrics = {name: _json_metrics(m) for name, m in self.metrics.items()}
        if self.group_metrics:
            metrics["group"] = {name: _json_metrics(m) for name, m in self.group_metrics.items()}
        metrics["leak_features"] = self.leak_features
        metrics["settings"] = self.settings
        metrics["models"] = self.models
        metrics["warnings"] = self.warnings
        return metrics

    def save(self, out_dir, *, extra: dict | None = None, overwrite: bool = False) -> dict[str, Path]:
        """Write ``scores.csv`` (one row per evaluated text; ``text_id``, ``label``, ``text_hash``,
        ``likelihood_ratio``, ``loss`` [, ``group``] first) and ``metrics.json`` (:meth:`to_json`,
        updated with ``extra``, e.g. the CLI's ``data_notes``), under the rules of ``--out``
        (:meth:`mia_core.runs.results.AuditResult.save`: a new or empty folder, or with ``overwrite`` one this tool
        wrote; published in one rename)."""
        if extra is not None and not isinstance(extra, dict):
            # an API-only parameter (no flag, no widget): named as it is
            raise SettingsError(f"extra must be a dict (added to metrics.json), got {type(extra).__name__}")
        return save_output(out_dir, lambda out: self._write(out, extra=extra), overwrite=overwrite)

    def _write(self, out: Path, *, extra: dict | None = None) -> dict[str, Path]:
        paths = {"scores": out / "scores.csv", "metrics": out / "metrics.json"}
        rows = self.scores.to_dict(orient="records")
        cols = ["text_id", "label", "text_hash", "likelihood_ratio", "loss"]
        if rows and "group" in rows[0]:
            cols.append("group")
        cols += [c for c in rows[0] if c not in cols] if rows else []
        with open(paths["scores"], "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            for r in rows:
                w.writerow({c: neutralise_cell(r.get(c)) for c in cols})  # text ids never as spreadsheet formulas
        metrics = self.to_json()
        if extra:
            metrics.update(extra)
        paths["metrics"].write_text(json.dumps(metrics, indent=2, allow_nan=True))
        return paths


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
    check_recipe(recipe)
    if not 0.0 < float(alpha) < 1.0:
        raise SettingsError(f"alpha (the share of the population flagged) must be between 0 and 1, got {alpha}.")
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
        row = {"text_id": texts.ids[i], "label": int(labels[i]), "text_hash": plan.hashes[i]}
        if texts.groups is not None:
            row["group"] = texts.groups[i]
        row.update({"n_tokens": int(plan.n_tokens[i]), "n_masked": int(plan.n_masked[i]),
                    "likelihood_ratio": float(scores["likelihood_ratio"][i]),
                    "loss": float(scores["loss"][i]),
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


def run_mlm_audit(members: Sequence[str], nonmembers: Sequence[str], population: Sequence[str], target, reference, *,
                  k: int | None = None, seed: int = 0, rate: float = DEFAULT_RATE, alpha: float = DEFAULT_ALPHA,
                  recipe: str = DEFAULT_RECIPE,
                  member_groups=None, nonmember_groups=None, population_groups=None,
                  train_samples: Sequence[str] | None = None, member_ids=None, nonmember_ids=None,
                  batch_tokens: int = 8192, n_bootstrap: int = 1000, cache: bool = True, device: str = "auto",
                  dtype: str = "fp32", trust_remote_code: bool = False, vocab_only: bool = False,
                  progress: Progress | None = None) -> MlmAuditResult:
    """The masked-LM audit of Mireshghallah et al. 2022 on members vs non-members.

    The texts and settings are checked before any model loads (:func:`text_sets`), then :func:`run_stages`.
    Group level (§4.2): a group's score is the mean of its texts' scores; its threshold flags ``alpha`` of the
    *population groups* when ``population_groups`` is given, else the text-level threshold applies to the means.

    Parameters
    ----------
    members, nonmembers : sequence of str
        The evaluated texts.
    population : sequence of str
        Texts known not to be in the target's training data, **disjoint** from the evaluated texts (``DataError``
        otherwise), used only to set the thresholds (§2.4): a fraction ``alpha`` of the population is flagged.
    target, reference : MaskedLM or str
        Models or specs for :func:`load_masked_lm`; they must share a tokenizer (``SettingsError`` otherwise;
        ``vocab_only`` accepts the same vocabulary with another normalisation, :func:`check_same_tokenizer`).
    k, seed, rate, recipe
        ``recipe`` (``RECIPES``): ``"sum"`` (default; ``l = ceil(0.15 T)``, ``K = 10``, energy summed over the
        masked tokens) or ``"released"`` (the authors' released code as issue 28 describes it: ``l = int(0.15
        T)``, at least 1, ``K = 20``, mean loss per masked token); ``k`` None: the recipe's ``K``.
    alpha : float
        The share of the population flagged.
    member_groups, nonmember_groups, population_groups : sequence, optional
        One group id per text (a missing id makes the text its own group).
    train_samples : sequence of str, optional
        Known training texts for the loss attack's ``mu`` threshold (§3.4; member iff loss <= ``mu``).
    member_ids, nonmember_ids : sequence, optional
        Ids of the evaluated texts.
    batch_tokens, n_bootstrap, cache, device, dtype, trust_remote_code, progress
        Padded tokens per pass, bootstrap resamples, the energy cache, how the models load, the progress callback.

    Returns
    -------
    MlmAuditResult
        ``metrics``, ``group_metrics``, ``scores`` (one row per evaluated text; ``loss`` is ``-E/l``, ``-E`` with
        ``"released"``), ``population_scores``, ``leak_features``, ``energies``, ``settings``, ``models``,
        ``warnings`` and ``plan`` (the tokenisation and masks both models scored; not JSON).
    """
    settings = MlmSettings(k=_k(recipe, k), seed=seed, rate=rate, alpha=alpha,
                           recipe=recipe, batch_tokens=batch_tokens, n_bootstrap=n_bootstrap, cache=cache)
    texts = text_sets(members, nonmembers, population, settings=settings, train_samples=train_samples,
                      member_ids=member_ids, nonmember_ids=nonmember_ids, member_groups=member_groups,
                      nonmember_groups=nonmember_groups, population_groups=population_groups)
    return run_stages(texts, target, reference, settings, device=device, dtype=dtype,
                      trust_remote_code=trust_remote_code, vocab_only=vocab_only, progress=progress)
