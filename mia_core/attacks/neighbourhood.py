"""Neighbourhood attack (Mattern et al. 2023, "Membership Inference Attacks against Language
Models via Neighbourhood Comparison", ACL Findings, §2).

A reference-free calibration: instead of a reference model, compare the target's loss on a
text with its losses on ``n`` *neighbours* -- copies of the text with one word replaced by a
plausible substitute (``mia_core.neighbours``). A text the model was trained on sits in a
dip of the loss landscape, so its neighbours score noticeably worse; a text it never saw
scores about as well as its neighbours (§2.1)::

    score(x) = -( L(x) - (1/n) sum_j L(x~_j) )

(higher = more likely member; L is the mean NLL per token over tokens t = 2..T of the text or
neighbour, as LOSS; every token with ``first_token=True``, ``attacks.base``). The paper
thresholds ``L(x) - mean_j L(x~_j)``; its best neighbours came from a masked LM with
embedding dropout 0.7, n = 100 neighbours, m = 1 replaced word (§2.2, §4).

Neighbour losses come from the one batched, cached forward path (``ctx.compute`` ->
``mia_core.stats.compute_stats``) in a single pass over all neighbours of all texts, so the
attack costs about ``n + 1`` times LOSS (plus neighbour generation, cached too). Texts
outside the prepared set (the population set used for thresholds) get their neighbours
generated and scored on demand.
"""
from __future__ import annotations

import json
import time

import numpy as np

from ..cache import text_hash
from ..errors import SettingsError
from ..neighbours import DEFAULT_GENERATOR, Neighbour, NeighbourSettings, make_generator, parse_generator_spec
from .base import AttackInputs, register, scored_tokens
from ..options import number, one_of, text, whole

DEFAULTS = {"generator": DEFAULT_GENERATOR, "n": 25, "m": 1, "dropout": 0.7, "seed": 0}
DOMAINS = {
    "generator": text(validate=parse_generator_spec, what="masked-lm:embedded, masked-lm:MODEL, t5:MODEL or offline",
                      note="the neighbour generator"),
    "n": whole(1, note="neighbours per text"),
    "m": whole(1, note="words replaced per neighbour"),
    "dropout": number(0, 1, hi_open=True, note="embedding dropout of the masked-LM proposer"),
    "seed": whole(0, note="seed of the neighbour positions and samples"),
}
# how the attack itself scores (not how neighbours are made, so not part of the neighbour settings and not in
# the neighbour store's key): a text with fewer than n neighbours gets NaN (the attack the run asked for, over n
# neighbours), or with fewer="average" the mean over the neighbours it has (at least one), as MIMIR does. SMIA
# takes the same parameter (its mean network output over the neighbours a text has): fewer_rule, fewer_note
SCORE_DEFAULTS = {"fewer": "nan"}
SCORE_DOMAINS = {"fewer": one_of("nan", "average", note="a text with fewer than n neighbours: NaN, or the mean over "
                                                        "those it has (MIMIR's behaviour)")}
N_EXAMPLES = 3  # texts whose full neighbours are put in the run's report


def settings_from(params: dict, attack: str = "neighbourhood") -> NeighbourSettings:
    """Neighbour settings from attack parameters (``generator``, ``n``, ``m``, ``dropout``, ``seed``),
    checked against their domains (``SettingsError`` naming ``attack.NAME``)."""
    p = {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS and v is not None}}
    p = {k: DOMAINS[k].check(p[k], f"{attack}.{k}") for k in DEFAULTS}
    return NeighbourSettings(generator=str(p["generator"]), n=int(p["n"]), m=int(p["m"]),
                             dropout=float(p["dropout"]), seed=int(p["seed"])).validate()


def ensure_neighbours(inputs: AttackInputs, settings: NeighbourSettings, ctx=None,
                      texts: list[str] | None = None) -> list[tuple[list[Neighbour], np.ndarray]]:
    """Neighbours of each text and their target losses, generated and scored where missing.

    Results are kept in ``inputs.extra["neighbour_store"]`` (shared by the neighbourhood
    attack and SMIA, and by the population pass, which re-uses ``inputs.extra``); the run
    context given to ``prepare`` is kept too, so population texts can be handled later.
    The store is keyed by the neighbour settings and holds each neighbour's loss both ways
    (tokens 2..T and every token, from the same statistics); the losses returned are those
    of ``inputs.first_token``, so the two rules never mix.
    """
    texts = list(inputs.texts if texts is None else texts)
    if ctx is not None:
        inputs.extra["run_context"] = ctx
    ctx = ctx or inputs.extra.get("run_context")
    store = inputs.extra.setdefault("neighbour_store", {})
    by_hash = store.setdefault(json.dumps(settings.to_dict(), sort_keys=True), {})
    missing = list(dict.fromkeys(t for t in texts if text_hash(t) not in by_hash))
    if missing:
        if ctx is None:
            raise SettingsError("neighbour losses are missing and no target model is at hand: run the attack "
                                "through mia_core.pipeline.run_attacks")
        t0 = time.time()
        gen = make_generator(settings)
        nbs = gen.generate(missing, use_cache=ctx.config.use_cache, progress=ctx.progress)
        t1 = time.time()
        flat = [n.text for ns in nbs for n in ns]
        stats = ctx.compute(ctx.target, flat, label="neighbour pass") if flat else []
        losses = {ft: np.array([s.loss for s in scored_tokens(stats, ft)], dtype=float) for ft in (False, True)}
        k = 0
        for t, ns in zip(missing, nbs):
            by_hash[text_hash(t)] = (ns, {ft: ls[k : k + len(ns)] for ft, ls in losses.items()})
            k += len(ns)
        timing = inputs.extra.setdefault("neighbour_timing", {"generate_s": 0.0, "score_s": 0.0, "n_texts": 0})
        timing["generate_s"] += t1 - t0
        timing["score_s"] += time.time() - t1
        timing["n_texts"] += len(missing)
    ft = bool(inputs.first_token)
    return [(ns, ls[ft]) for ns, ls in (by_hash[text_hash(t)] for t in texts)]


def prepare(inputs: AttackInputs, ctx, **params) -> dict:
    """Generate the neighbours of the audited texts and score them with the target (both cached).

    Parameters
    ----------
    inputs : AttackInputs
        The audited texts; the neighbours and their losses go to ``inputs.extra``.
    ctx : RunContext
        The run's context (target model, configuration, progress; :class:`mia_core.pipeline.RunContext`).
    **params
        The attack's parameters (``generator``, ``n``, ``m``, ``dropout``, ``seed``, ``fewer``).

    Returns
    -------
    dict
        The report: settings, generator identity, neighbour counts and losses per text, a few full examples,
        timing, and notes on short texts and on a proposer coupled to the target.

    Raises
    ------
    SettingsError
        A parameter outside its domain.
    """
    settings = settings_from(params)
    data = ensure_neighbours(inputs, settings, ctx)
    counts = np.array([len(ns) for ns, _ in data])
    report = {
        "settings": settings.to_dict(),
        "generator_identity": make_generator(settings).identity,
        "n_neighbours_mean": float(counts.mean()) if len(counts) else 0.0,
        "texts_without_neighbours": int((counts == 0).sum()),
        "neighbour_loss_mean": [float(np.nanmean(l)) if len(l) else None for _, l in data],
        # compact per-text record: the replaced words and each neighbour's loss
        "neighbours": [
            [{"replaced": [list(r) for r in n.replaced], "loss": float(l)} for n, l in zip(ns, ls)] for ns, ls in data
        ],
        "examples": [
            {"text": t, "neighbours": [{"text": n.text, "replaced": [list(r) for r in n.replaced], "loss": float(l)}
                                       for n, l in zip(ns, ls)]}
            for t, (ns, ls) in list(zip(inputs.texts, data))[:N_EXAMPLES]
        ],
        "timing": dict(inputs.extra.get("neighbour_timing", {})),
    }
    report["texts_with_fewer_neighbours"] = int((counts < settings.n).sum())
    note = fewer_note(counts, settings.n, fewer_rule(params, "neighbourhood"), "neighbourhood",
                      "scored over those they have", ", MIMIR's behaviour")
    if note:
        report["note"] = note
    coupled = coupling_warning(settings, ctx.target)
    if coupled:
        report["warning"] = coupled
    return report


def fewer_rule(params: dict, attack: str) -> str:
    """The ``fewer`` parameter of a neighbour attack (``SCORE_DOMAINS``: ``"nan"`` or ``"average"``),
    checked (``SettingsError`` naming ``attack.fewer``)."""
    return SCORE_DOMAINS["fewer"].check(params.get("fewer", SCORE_DEFAULTS["fewer"]), f"{attack}.fewer")


def neighbours_needed(rule: str, n: int) -> int:
    """The fewest neighbours a text needs to be scored: all ``n`` (``fewer="nan"``) or one (``"average"``)."""
    return 1 if rule == "average" else int(n)


def fewer_note(counts: np.ndarray, n: int, rule: str, attack: str, averaged: str, source: str = "") -> str | None:
    """The note for texts that allow fewer than ``n`` neighbours under ``rule`` (None when there are
    none): NaN (``short_note``), or with ``"average"`` how they are scored (``averaged``) and how many
    have no neighbour at all (NaN either way)."""
    counts = np.asarray(counts)
    short = counts < n
    if not short.any():
        return None
    if rule != "average":
        return short_note(counts, n, attack)
    return (f"{int(short.sum())} text(s) allow fewer than n = {n} neighbours: {averaged} (fewer=average{source}; "
            f"{int((counts == 0).sum())} with none get NaN)")


def short_note(counts: np.ndarray, n: int, attack: str) -> str:
    """The note for texts that allow fewer than ``n`` neighbours (they are scored NaN: a score
    over fewer neighbours would not be the attack the run asked for)."""
    short = counts < n
    none = int((counts == 0).sum())
    worst = int(counts[short].min()) if short.any() else n
    return (f"{int(short.sum())} text(s) allow fewer than n = {n} neighbours ({none} with no replaceable word; "
            f"as few as {worst}) and get no {attack} score (NaN); lower the number of neighbours to score them")


def run_coupling_warning(attacks, params: dict, target) -> str | None:
    """``attack: warning`` for the first neighbour attack among ``attacks`` whose proposer shares a
    base with the target (``params``: the run's per-attack parameters); None otherwise. Shown by
    the CLI and the calibration page before the neighbours are made."""
    from .base import REGISTRY

    for name in ("neighbourhood", "smia"):
        if name in attacks:
            w = coupling_warning(settings_from(REGISTRY[name].kwargs(params), name), target)
            return f"{name}: {w}" if w else None
    return None


def coupling_warning(settings: NeighbourSettings, target) -> str | None:
    """A warning when the neighbour proposer shares weights with the target (Mattern et al. draw
    neighbours from an independent masked LM; a proposer built on the target's base picks words
    the target already likes). None when they are independent."""
    from ..neighbours import shares_base

    gen = make_generator(settings)
    if target is None or not shares_base(gen, target):
        return None
    return (f"the neighbour proposer ({settings.generator}) shares its base model with the target, so the neighbours "
            "are the words the target already likes and the reference they give is coupled to the model under audit; "
            "use an independent proposer (the default masked-lm:embedded, or masked-lm:MODEL)")


@register("neighbourhood", "Neighbourhood", needs=("target", "neighbours"), citation="Mattern et al. 2023 §2",
          defaults={**DEFAULTS, **SCORE_DEFAULTS}, prepare=prepare, domains={**DOMAINS, **SCORE_DOMAINS},
          cost="n neighbours per text from a masked LM, each scored by the target (about n + 1 target passes)")
def score(inputs: AttackInputs, **params) -> np.ndarray:
    """Neighbourhood scores: ``-(L(x) - mean_j L(x~_j))`` per text (Mattern et al. 2023 §2).

    Parameters
    ----------
    inputs : AttackInputs
        The texts (neighbours of texts not prepared are made and scored on demand).
    **params
        The attack's parameters (as :func:`prepare`).

    Returns
    -------
    numpy.ndarray
        One score per text, higher = more likely member; NaN for a text without a scored token or with
        fewer neighbours than ``fewer`` allows.

    Raises
    ------
    SettingsError
        A parameter outside its domain, or neighbour losses missing with no target model at hand.
    """
    data = ensure_neighbours(inputs, settings_from(params))
    need = neighbours_needed(fewer_rule(params, "neighbourhood"), settings_from(params).n)
    out = np.full(len(inputs.texts), np.nan)
    for i, (s, (ns, losses)) in enumerate(zip(inputs.scored(), data)):
        ok = losses[np.isfinite(losses)] if len(losses) else losses
        if s.n_predicted == 0 or len(ns) < need or len(ok) == 0:
            continue
        out[i] = -(s.loss - float(ok.mean()))
    return out
