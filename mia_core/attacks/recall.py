"""ReCaLL: relative conditional log-likelihood (Xie, Wang, Huang, Zhang, Ge, Pei, Gong & Dhingra
2024, "ReCaLL: Membership Inference via Relative Conditional Log-Likelihoods", EMNLP 2024,
arXiv:2406.15968, §3; official code github.com/ruoyuxie/recall, ``src/run.py``; MIMIR
``mimir/attacks/recall.py``).

Put known *non-member* texts in front of the audited text and see how much its likelihood
drops. Conditioning on non-member context changes the model's predictive distribution (much
like in-context fine-tuning); that hurts a memorised member more than a text the model never
saw, which it predicts about as poorly with or without the context (§3, §6)::

    ReCaLL(x) = LL(x | P) / LL(x),     P = p_1 + p_2 + ... + p_n   (n non-member "shots")

with ``LL`` the mean log-likelihood per token of ``x`` (negative), ``LL(x | P)`` that of the
same tokens of ``x`` when the prefix ``P`` comes before it. Both are negative, so a larger
drop under the prefix gives a larger ratio: **higher = more likely member**, the paper's
orientation ("a higher ReCaLL score indicates ... a member"), used as is (no sign flip).

Prefix ``P``: the first ``n_shots`` texts of the run's population set (known non-members,
``mia run --population``; the population upload on the calibration page), or of the file
given as param ``prefix`` (read with ``mia_core.data.read_population``), joined with
``separator`` (the official code joins the shots with ``""``). ``n_shots = 12`` is the
official code's default (``--num_shots 12``). With neither a population nor a prefix file
the attack refuses to run (``SettingsError`` from :func:`requires`, before any model is
loaded); a prefix text that is also an audited text is refused (``DataError``): a member in
the prefix would leak the answer. The population texts being the prefix, ReCaLL is not
scored on them for the population threshold (``population_ok=False``).

Computation: one extra statistics pass of the target over the audited texts with
``StatsSettings.condition = P`` (``mia_core.stats``: ``[prefix token] + P + text``, only the
text's tokens kept; a prefix too long for the context window is truncated from the left,
see :func:`mia_core.stats.kept_condition_tokens`), cached like every pass. Both LLs are
means over the scored tokens (2..n of the text, ``AttackInputs.scored``; all of them with
``--score-first-token``), the same tokens in both passes. The official code compares the
conditional LL of tokens 1..n with the unconditional LL of tokens 2..n; here the two
averages cover the same tokens.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from ..cache import text_hash
from ..errors import DataError, SettingsError
from .base import AttackInputs, register, scored_tokens
from ..options import check_values, one_of, path, text, whole

DEFAULTS = {"n_shots": 12, "prefix": None, "separator": "", "shots": "first", "seed": 0}
DOMAINS = {
    "n_shots": whole(1, note="non-member texts in the prefix"),
    "shots": one_of("first", "random", note="which known non-members make the prefix: the first n_shots, or "
                                            "n_shots drawn at random as the official code does"),
    "seed": whole(0, note="the draw of shots=random"),
    "prefix": path("read", note="a file or folder of known non-member texts for the prefix (none: the population)"),
    "separator": text(optional=True, note="text put between the prefix shots (none: nothing)"),
}
EXTRA_KEY = "recall_conditional"
MISSING = ("ReCaLL needs known non-member texts for its prefix: give a population set ({population}; "
           "its first n_shots texts are used) or a prefix file ({recall.prefix})")


def _prefix_path(params: dict) -> Path | None:
    p = params.get("prefix")
    if p is None or (isinstance(p, str) and p.strip().lower() in ("", "none")):
        return None
    return Path(str(p).strip()).expanduser()


def check_params(params: dict) -> dict:
    """The parameters checked against their domains (before any model is loaded)."""
    return check_values("recall", DOMAINS, {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}})


def requires(params: dict) -> set:
    """The population set, unless a prefix file is given; checks the parameters first."""
    check_params(params)
    return set() if _prefix_path(params) is not None else {"population"}


def prefix_texts(params: dict, population=None) -> tuple[list[str], str]:
    """(the prefix shots, where they came from): the prefix file, else the population set; its first
    ``n_shots`` texts, or (``shots="random"``) ``n_shots`` of them drawn with ``random.Random(seed)``, as the
    official ReCaLL code draws its shots from the non-members at random."""
    import random

    p = check_params(params)
    n = p["n_shots"]
    prefix = _prefix_path(params)
    if prefix is not None:
        from ..data import read_population

        pool, source = [r.text for r in read_population(prefix, role="ReCaLL prefix")], str(prefix)
    elif population is not None and len(population):
        pool, source = list(population.texts), "population"
    else:
        raise SettingsError(MISSING, options=("population", "recall.prefix"))
    if p["shots"] == "random" and len(pool) > n:
        return random.Random(int(p["seed"])).sample(pool, n), f"{source} (random, seed {int(p['seed'])})"
    return pool[:n], source


def prepare(inputs: AttackInputs, ctx, **params) -> dict:
    """The conditional pass: the target's statistics of each audited text with the non-member prefix ``P`` in
    front (Xie et al. 2024 §3), stored in ``inputs.extra``.

    Parameters
    ----------
    inputs : AttackInputs
        The audited texts.
    ctx : RunContext
        The run's context (target model, configuration, progress; :class:`mia_core.pipeline.RunContext`).
    **params
        The attack's parameters (``n_shots``, ``prefix``, ``separator``, ``shots``, ``seed``).

    Returns
    -------
    dict
        The report: the prefix's source, shots, tokens and hash, the context window, texts whose prefix was
        truncated, a preview of the shots, notes.

    Raises
    ------
    SettingsError
        No population and no prefix file, or a parameter outside its domain.
    DataError
        A prefix text that is also an audited text, or an empty prefix.
    """
    from ..stats import kept_condition_tokens, resolve_prefix, tokenize

    shots, source = prefix_texts(params, getattr(ctx, "population", None))
    audited = set(inputs.texts)
    clash = [i for i, t in enumerate(shots) if t in audited]
    if clash:
        raise DataError(f"{len(clash)} ReCaLL prefix text(s) (shot {', '.join(str(i + 1) for i in clash[:5])}) "
                        "are also audited texts; the prefix must be known non-members outside the audited sets")
    sep = "" if params.get("separator") is None else str(params.get("separator"))
    condition = sep.join(shots)
    if not condition.strip():
        raise DataError("ReCaLL's prefix texts are empty")
    settings = dataclasses.replace(ctx.config.stats, condition=condition)
    cond = ctx.compute(ctx.target, inputs.texts, label="ReCaLL conditional pass", settings=settings)
    inputs.extra[EXTRA_KEY] = cond
    n_cond = len(tokenize(ctx.target, condition))
    context = settings.resolved_context(ctx.target)
    has_prefix = resolve_prefix(ctx.target, settings) is not None
    kept = [kept_condition_tokens(n_cond, s.n_tokens, context, has_prefix) for s in cond]
    truncated = sum(1 for k, s in zip(kept, cond) if s.n_tokens and k < n_cond)
    report = {"source": source, "n_shots": len(shots), "prefix_tokens": n_cond, "prefix_hash": text_hash(condition),
              "context": context, "texts_with_truncated_prefix": truncated,
              "shots_preview": [t[:80] for t in shots[:3]]}
    if len(shots) < int(params.get("n_shots", DEFAULTS["n_shots"])):
        report["note"] = f"only {len(shots)} prefix text(s) available (n_shots {params.get('n_shots')})"
    if truncated:
        report["note_truncated"] = (f"the {n_cond}-token prefix did not fit the {context}-token window for {truncated} "
                                    "text(s): it was cut from the left (stats.kept_condition_tokens)")
    return report


@register("recall", "ReCaLL", citation="Xie et al. 2024 §3", defaults=DEFAULTS, prepare=prepare, population_ok=False,
          requires=requires, domains=DOMAINS, cost="one more target pass with the prefix in front (longer inputs)")
def score(inputs: AttackInputs, **params) -> np.ndarray:
    """ReCaLL scores: ``LL(x | P) / LL(x)`` per text (Xie et al. 2024 §3), in the paper's orientation.

    Parameters
    ----------
    inputs : AttackInputs
        The texts, their target statistics and the conditional statistics :func:`prepare` stored.
    **params
        The attack's parameters (used by :func:`prepare`).

    Returns
    -------
    numpy.ndarray
        One score per text, higher = more likely member; NaN where either pass has no scored token or
        ``LL(x)`` is 0.

    Raises
    ------
    SettingsError
        The conditional pass is missing (the attack was not prepared by the pipeline).
    """
    cond = inputs.extra.get(EXTRA_KEY)
    if cond is None:
        raise SettingsError("ReCaLL's conditional pass is missing: run it through mia_core.pipeline.run_attacks")
    out = np.full(len(inputs.texts), np.nan)
    for i, (u, c) in enumerate(zip(inputs.scored(), scored_tokens(cond, inputs.first_token))):
        if u.n_predicted == 0 or c.n_predicted == 0:
            continue
        ll_u, ll_c = -u.loss, -c.loss
        if ll_u != 0:
            out[i] = ll_c / ll_u
    return out
