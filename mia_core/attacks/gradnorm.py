"""Gradient-norm attack (white-box): the norm of the loss gradient with respect to the weights.

A model trained on a text sits near a minimum of that text's loss, so the gradient of the
loss there is small; on an unseen text the loss still pulls the weights, and the gradient is
larger. Used as a membership signal on image classifiers (Nasr et al. 2019 §3, white-box
"gradient" features; Rezaei & Liu 2021, "On the Difficulty of Membership Inference Attacks",
CVPR, gradient-norm attack) and evaluated on LLM pre-training data by Duan et al. 2024 ("Do
Membership Inference Attacks Work on Large Language Models?", COLM; MIMIR's
``mimir/attacks/gradnorm.py``)::

    L(x) = -(1/T) sum_{t=2..n} log p_theta(x_t | x_<t)
    score(x) = -|| grad_theta L(x) ||_p

(higher = more likely member: members have the smaller gradients). Defaults: ``p = "l2"``,
``aggregate = "global"``: the L2 norm of the whole gradient vector over every parameter tensor.

**MIMIR's GradNorm is not this score with other parameters: its sign is the opposite.** MIMIR's
``mimir/attacks/gradnorm.py`` (which cites arXiv:2402.17012 for the attack) averages the per-tensor
norms with p = infinity and returns ``-norm`` as its raw score; MIMIR then negates every raw score
before its metrics (its scores are "lower = member"), so its member score is ``+norm``: larger
gradients count as members, and its AUC is 1 minus the AUC of the same norm here. This project keeps
the sign the argument above gives (and that Rezaei & Liu use); ``--param gradnorm.variant=mimir``
gives MIMIR's exact member score (``+`` the mean per-tensor L-infinity norm, whatever ``p`` and
``aggregate`` say), for comparisons with MIMIR's tables. The same norm with this project's sign is
``--param gradnorm.p=linf --param gradnorm.aggregate=mean``.

The gradients come from ``mia_core.stats.gradients`` (the one place a backward pass runs): all
parameters, LoRA targets with the adapter merged (see there), texts windowed like the
statistics pass, results cached. Cost: one forward + backward pass per text, unbatched
(measured figures in docs/gradnorm-rmia.md); population texts are handled on demand.
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from ..errors import SettingsError
from ..stats.gradients import NORMS, compute_grad_norms
from .base import AttackInputs, register
from ..options import one_of

DEFAULTS = {"p": "l2", "aggregate": "global", "variant": "default"}
AGGREGATES = ("global", "mean")
VARIANTS = ("default", "mimir")
DOMAINS = {
    "p": one_of(*NORMS, note="the norm of the gradient"),
    "aggregate": one_of(*AGGREGATES, note="global: one norm over every parameter; mean: the mean per-tensor norm"),
    "variant": one_of(*VARIANTS, note="default: -norm (smaller gradient = member); mimir: MIMIR's exact score, "
                                      "+ mean per-tensor L-infinity norm (larger = member; its sign is reversed)"),
}


def _check(p: str, aggregate: str) -> None:
    DOMAINS["p"].check(p, "gradnorm.p")
    DOMAINS["aggregate"].check(aggregate, "gradnorm.aggregate")


def _norms(inputs: AttackInputs, ctx=None, texts=None):
    """Gradient norms of ``texts`` (default: the prepared texts), computed where missing."""
    if ctx is not None:
        inputs.extra["run_context"] = ctx
    ctx = ctx or inputs.extra.get("run_context")
    texts = list(inputs.texts if texts is None else texts)
    store = inputs.extra.setdefault("gradnorm_store", {})
    missing = [t for t in dict.fromkeys(texts) if t not in store]
    if missing:
        if ctx is None:
            raise SettingsError("gradient norms are missing and no target model is at hand: run the attack "
                                "through mia_core.pipeline.run_attacks")
        got = compute_grad_norms(ctx.target, missing, ctx.config.stats, first_token=inputs.first_token,
                                 use_cache=ctx.config.use_cache, progress=ctx.progress)
        store.update(zip(missing, got))
    return [store[t] for t in texts]


def prepare(inputs: AttackInputs, ctx, **params) -> dict:
    """Compute (or read from the cache) the gradient norms of the audited texts (``mia_core.stats.gradients``).

    Parameters
    ----------
    inputs : AttackInputs
        The audited texts.
    ctx : RunContext
        The run's context (target model, configuration, progress; :class:`mia_core.pipeline.RunContext`).
    **params
        The attack's parameters (``p``, ``aggregate``, ``variant``).

    Returns
    -------
    dict
        The report: texts, parameter tensors, seconds (per text), and the five tensors with the largest mean
        L2 gradient norm.

    Raises
    ------
    SettingsError
        ``p`` or ``aggregate`` outside its domain.
    """
    p = {**DEFAULTS, **params}
    _check(str(p["p"]), str(p["aggregate"]))
    t0 = time.time()
    n_before = len(inputs.extra.get("gradnorm_store", {}))
    got = _norms(inputs, ctx)
    seconds = time.time() - t0
    n_new = len(inputs.extra["gradnorm_store"]) - n_before
    first = next((g for g in got if g.n_scored), None)
    report = {
        "n_texts": len(got),
        "n_parameter_tensors": int(len(first.names)) if first is not None else 0,
        "seconds": round(seconds, 2),
        "seconds_per_text": round(seconds / n_new, 3) if n_new else None,
        "note": "one forward + backward pass per text over all parameters (mia_core.stats.gradients)",
    }
    if first is not None:  # which tensors carry the gradient, on average (per-layer view)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a tensor no loss reaches is NaN throughout
            l2 = np.nanmean([g.l2 for g in got if g.n_scored], axis=0)
        top = [i for i in np.argsort(np.where(np.isfinite(l2), -l2, np.inf))[:5] if np.isfinite(l2[i])]
        report["largest_tensors_l2"] = {str(first.names[i]): float(l2[i]) for i in top}
    return report


@register("gradnorm", "Gradient norm",
          citation="Rezaei & Liu 2021; MIMIR's variant (arXiv:2402.17012, Duan et al. 2024) has the opposite sign",
          defaults=DEFAULTS, prepare=prepare, domains=DOMAINS,
          cost="a forward and a backward pass of the target per text (about 3 passes)")
def score(inputs: AttackInputs, **params) -> np.ndarray:
    """Gradient-norm scores: ``-||grad L(x)||_p`` per text (Rezaei & Liu 2021), or MIMIR's ``+`` mean per-tensor
    L-infinity norm with ``variant="mimir"`` (Duan et al. 2024).

    Parameters
    ----------
    inputs : AttackInputs
        The texts (norms of texts not prepared are computed on demand).
    **params
        ``p`` (the norm), ``aggregate`` (``global`` or ``mean``), ``variant`` (``default`` or ``mimir``).

    Returns
    -------
    numpy.ndarray
        One score per text, higher = more likely member for ``default``.

    Raises
    ------
    SettingsError
        A parameter outside its domain, or norms missing with no target model at hand.
    """
    p = {**DEFAULTS, **params}
    _check(str(p["p"]), str(p["aggregate"]))
    if DOMAINS["variant"].check(p["variant"], "gradnorm.variant") == "mimir":  # MIMIR's member score, sign and all
        return np.array([g.norm("linf", "mean") for g in _norms(inputs)], dtype=float)
    return np.array([-g.norm(str(p["p"]), str(p["aggregate"])) for g in _norms(inputs)], dtype=float)
