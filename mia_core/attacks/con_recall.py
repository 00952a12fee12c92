"""Con-ReCall: ReCaLL with contrasting member and non-member prefixes (Wang, Wang, Hooi, Cai, Peng & Chang 2024,
"Con-ReCall: Detecting Pre-training Data in LLMs via Contrastive Decoding", arXiv:2409.03363, §3; shipped beside
WBC in github.com/Stry233/WBC).

ReCaLL (``attacks.recall``) puts known non-members in front of a text and measures how much its likelihood drops.
Con-ReCall adds the opposite context, known *members*, and contrasts the two, as contrastive decoding contrasts an
expert with an amateur::

    Con-ReCall(x) = ( LL(x | P_non) - gamma * LL(x | P_mem) ) / LL(x)

with ``LL`` the mean log-likelihood per scored token (negative), ``P_non`` the non-member prefix (ReCaLL's, by
ReCaLL's rules: ``prefix`` file, else the run's population; ``n_shots`` texts joined with ``separator``),
``P_mem`` the member prefix and ``gamma`` the contrast strength. A member's likelihood falls under non-member
context and holds (or rises) under member context, so the numerator is more negative than ``(1 - gamma) LL(x)``
and the ratio higher: **higher = more likely member**, ReCaLL's orientation; ``gamma = 0`` is ReCaLL itself.

The member prefix: the file or folder given as ``member_prefix``, else the first ``n_shots`` members of the run's
**labelled training part** (``--split``, or a separate training set: the texts an attack that learns may read;
every figure is computed on the held-out rest). Known members are what Con-ReCall needs that ReCaLL does not; a
run without either stops before any model loads (one line). ``gamma`` defaults to 0.5: the paper treats it as a
hyper-parameter and reports results over a range of values rather than one default, and the reference code could
not be read from these machines; ``gamma`` is a parameter (``--param con_recall.gamma=…``), and ``gamma = 0`` gives
ReCaLL. A prefix text that is also an evaluated text is refused (``DataError``): it would leak the answer.

Computation: two conditional passes of the target (``StatsSettings.condition``: the non-member prefix, whose
pass is the same cache entry as ReCaLL's with the same shots, and the member prefix), over the same scored
tokens as the unconditional pass (``AttackInputs.scored``); a prefix too long for the context window is cut from
the left (``mia_core.stats.kept_condition_tokens``), as for ReCaLL.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..cache import text_hash
from ..errors import DataError, SettingsError
from .base import AttackInputs, register, scored_tokens
from . import recall
from ..options import check_values, number, path

DEFAULTS = {**recall.DEFAULTS, "member_prefix": None, "gamma": 0.5}
DOMAINS = {**recall.DOMAINS,
           "member_prefix": path("read", note="a file or folder of known member texts for the member prefix (none: "
                                              "the members of the labelled training part)"),
           "gamma": number(0, 10, note="the contrast strength: how much the member prefix's likelihood is "
                                       "subtracted (0: ReCaLL)")}
EXTRA_NON, EXTRA_MEM = "con_recall_nonmember", "con_recall_member"


def check_params(params: dict) -> dict:
    """The parameters checked against their domains (before any model is loaded)."""
    return check_values("con_recall", DOMAINS, {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}})


def requires(params: dict) -> set:
    """Known non-members (the population) unless a ``prefix`` file is given, and labelled training texts unless a
    ``member_prefix`` file is given; checks the parameters first."""
    p = check_params(params)
    need = recall.requires({k: v for k, v in p.items() if k in recall.DEFAULTS})
    if recall._prefix_path({"prefix": p.get("member_prefix")}) is None:
        need.add("labels")
    return need


def member_texts(params: dict, ctx) -> tuple[list[str], str]:
    """(the member prefix's shots, where they came from): the ``member_prefix`` file, else the first (or, with
    ``shots="random"``, ``n_shots`` random) members of the run's labelled training part."""
    import random

    p = check_params(params)
    n = p["n_shots"]
    file = recall._prefix_path({"prefix": p.get("member_prefix")})
    if file is not None:
        from ..data import read_population

        pool, source = [r.text for r in read_population(file, role="Con-ReCall member prefix")], str(file)
    else:
        labels = np.asarray(ctx.dataset.labels, int)
        train = np.asarray(ctx.train_mask, bool)
        pool = [t for t, y, m in zip(ctx.dataset.texts, labels, train) if m and y == 1]
        source = "labelled training part"
        if not pool:
            raise SettingsError("Con-ReCall needs known member texts for its member prefix: give labelled training "
                                "texts ({split} or {train_members}) or a member prefix file ({con_recall.member_prefix})",
                                options=("split", "train_members", "con_recall.member_prefix"))
    if p["shots"] == "random" and len(pool) > n:
        return random.Random(int(p["seed"]) + 1).sample(pool, n), f"{source} (random, seed {int(p['seed'])})"
    return pool[:n], source


def _evaluated(inputs: AttackInputs, ctx) -> set:
    mask = getattr(ctx, "train_mask", None)
    if mask is None or len(mask) != len(inputs.texts):
        return set(inputs.texts)
    return {t for t, m in zip(inputs.texts, mask) if not m}


def prepare(inputs: AttackInputs, ctx, **params) -> dict:
    """The two conditional passes (non-member prefix, member prefix) of the target over the audited texts,
    stored in ``inputs.extra``; returns the report (sources, shots, prefix tokens and hashes).

    Raises
    ------
    SettingsError
        No known non-members or members, or a parameter outside its domain.
    DataError
        A prefix text that is also an evaluated text, or an empty prefix.
    """
    from ..stats import tokenize

    p = check_params(params)
    non, non_source = recall.prefix_texts({k: v for k, v in p.items() if k in recall.DEFAULTS},
                                          getattr(ctx, "population", None))
    mem, mem_source = member_texts(p, ctx)
    evaluated = _evaluated(inputs, ctx)
    for role, shots in (("non-member", non), ("member", mem)):
        clash = [i for i, t in enumerate(shots) if t in evaluated]
        if clash:
            raise DataError(f"{len(clash)} Con-ReCall {role} prefix text(s) (shot "
                            f"{', '.join(str(i + 1) for i in clash[:5])}) are also evaluated texts; the prefixes "
                            "must be known texts outside the evaluated sets")
    sep = "" if p.get("separator") is None else str(p["separator"])
    report = {"gamma": float(p["gamma"])}
    for key, role, shots, source in ((EXTRA_NON, "non-member", non, non_source), (EXTRA_MEM, "member", mem, mem_source)):
        condition = sep.join(shots)
        if not condition.strip():
            raise DataError(f"Con-ReCall's {role} prefix texts are empty")
        settings = dataclasses.replace(ctx.config.stats, condition=condition)
        inputs.extra[key] = ctx.compute(ctx.target, inputs.texts, label=f"Con-ReCall {role} pass", settings=settings)
        report[role.replace("-", "_")] = {"source": source, "n_shots": len(shots),
                                           "prefix_tokens": len(tokenize(ctx.target, condition)),
                                           "prefix_hash": text_hash(condition)}
    return report


@register("con_recall", "Con-ReCall", citation="Wang et al. 2024 (Con-ReCall) §3", defaults=DEFAULTS, prepare=prepare,
          population_ok=False, requires=requires, domains=DOMAINS,
          cost="two more target passes, each with a prefix in front (the non-member one is ReCaLL's, cached)")
def score(inputs: AttackInputs, gamma: float = 0.5, **params) -> np.ndarray:
    """Con-ReCall scores: ``(LL(x | P_non) - gamma * LL(x | P_mem)) / LL(x)`` per text (Wang et al. 2024 §3).

    Parameters
    ----------
    inputs : AttackInputs
        The texts, their target statistics and the two conditional passes :func:`prepare` stored.
    gamma : float
        The contrast strength (0: ReCaLL).
    **params
        The prefixes' parameters (used by :func:`prepare`).

    Returns
    -------
    numpy.ndarray
        One score per text, higher = more likely member; NaN where a pass has no scored token or ``LL(x)`` is 0.

    Raises
    ------
    SettingsError
        A conditional pass is missing (the attack was not prepared by the pipeline).
    """
    non, mem = inputs.extra.get(EXTRA_NON), inputs.extra.get(EXTRA_MEM)
    if non is None or mem is None:
        raise SettingsError("Con-ReCall's conditional passes are missing: run it through mia_core.pipeline.run_attacks")
    g = float(gamma)
    out = np.full(len(inputs.texts), np.nan)
    rows = zip(inputs.scored(), scored_tokens(non, inputs.first_token), scored_tokens(mem, inputs.first_token))
    for i, (u, a, b) in enumerate(rows):
        if min(u.n_predicted, a.n_predicted, b.n_predicted) == 0 or u.loss == 0:
            continue
        out[i] = (-a.loss - g * -b.loss) / -u.loss
    return out
