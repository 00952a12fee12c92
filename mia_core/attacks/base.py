"""What an attack sees and how attacks are registered.

Every attack is a cheap function of precomputed statistics: ``score(inputs, **params)``
returns one float per text, **higher = more likely member**, NaN where a text cannot be
scored (e.g. too short). The passes an attack needs are declared in ``needs`` so the
pipeline runs each model pass once for all attacks:

* ``"target"``: target-model token statistics of the texts,
* ``"target_lower"``: target-model statistics of the lower-cased texts,
* ``"reference"``: reference-model statistics of the texts,
* ``"neighbours"``: target-model losses of each text's neighbours (neighbour attacks),
* ``"labels"``: the attack learns from labelled training texts (SMIA).

**Which tokens are scored.** Every token the model predicts as it did in training. The statistics
pass puts in front of each text what the model saw there in training (``StatsSettings.prefix="auto"``,
``mia_core.stats.resolve_prefix``), and :attr:`AttackInputs.first_token` follows it
(``mia_core.stats.scores_first_token``, set by the pipeline):

=====================================  ====================  ============================
tokenizer (or ``make-target`` folder)  put in front          tokens scored
=====================================  ====================  ============================
Llama style (adds a BOS itself)        its BOS               1..n (MIMIR: the same)
GPT-2 style (adds nothing)             nothing               2..n (MIMIR: the same)
``make-target`` folder                 what it trained with  1..n with a prefix, else 2..n
``--prefix always``                    BOS, else EOS         2..n (``--score-first-token``: 1..n)
=====================================  ====================  ============================

The papers (Carlini et al. 2021, Shi et al. 2024, Zhang et al. 2024) and MIMIR's code score the tokens
the model predicts given ``tokenizer(text)`` with its own special tokens: tokens 2..n for GPT-2-style
tokenizers, 1..n after a Llama-style BOS. ``tests/test_scored_tokens.py`` checks LOSS against MIMIR's
recipe per text on a tiny model of each family. ``first_token=True`` (``--score-first-token``) forces
the first token in wherever it has a prediction; ``False`` leaves it out.

Attacks that need more than statistics (neighbours, embeddings, a trained network) set a
``prepare(inputs, ctx, **params)`` hook; the pipeline calls it once before scoring, and it
stores what ``score`` needs in ``inputs.extra`` (and may return artefacts for the report).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..stats import TokenStats


@dataclass
class AttackInputs:
    """What an attack's ``score`` (and ``prepare``) sees: the texts and the statistics of each model pass.

    Attributes
    ----------
    texts : list of str
        The texts to score.
    target, target_lower, reference : list of TokenStats or None
        Per-text token statistics of the target on the texts, of the target on the lower-cased texts, and of
        the reference model on the texts; None for a pass no attack of the run needs.
    same_tokenizer : bool
        Whether the target and the reference share a tokenizer.
    extra : dict
        What ``prepare`` hooks leave for ``score`` (neighbour losses, embeddings, trained models...).
    first_token : bool
        Also score each text's first token (set by the pipeline: see the module docstring).
    """

    texts: list[str]
    target: list[TokenStats] | None = None
    target_lower: list[TokenStats] | None = None
    reference: list[TokenStats] | None = None
    same_tokenizer: bool = True  # target and reference share a tokenizer
    extra: dict = field(default_factory=dict)  # neighbour losses, embeddings, trained models...
    first_token: bool = False  # also score each text's first token (set by the pipeline: see the module docstring)

    def scored(self, which: str = "target") -> list[TokenStats]:
        """The statistics of pass ``which`` ("target", "target_lower", "reference") restricted
        to the tokens attacks score: tokens 2..n of each text, or all of them when
        ``first_token`` (see the module docstring; a token without a prediction never counts)."""
        return scored_tokens(getattr(self, which), self.first_token)


@dataclass(frozen=True)
class Attack:
    """A registered attack: its ``score`` function, the passes it needs and its parameters (:func:`register`).

    Attributes
    ----------
    name : str
        What ``--attacks`` and ``--param NAME.x`` use.
    label : str
        Its name in tables and plots.
    needs : tuple of str
        The passes and inputs it needs: ``"target"``, ``"target_lower"``, ``"reference"``, ``"neighbours"``,
        ``"labels"`` (see the module docstring).
    score : callable
        ``score(inputs, **params)``: one float per text, higher = more likely member, NaN where unscorable.
    citation : str
        The paper it implements.
    params : dict
        Default parameters.
    prepare : callable or None
        ``prepare(inputs, ctx, **params)``, called once before scoring; it stores what ``score`` needs in
        ``inputs.extra`` and may return artefacts for the report.
    population_ok : bool
        Whether it can score texts outside the prepared set (population thresholds).
    requires : callable or None
        ``requires(params)``: the optional run inputs (``"reference"``, ``"labels"``, ``"population"``) it
        needs with these parameters; None: those in ``needs``.
    choices, types : dict
        ``{param: allowed values}`` and ``{param: bool | int | float}`` (for parameters whose default is None),
        filled in from ``domains``.
    domains : dict
        ``{param: Domain}``: the values each parameter may take (``mia_core.options``).
    one_tokenizer : bool
        It compares the target and the reference token by token, so both must share a tokenizer.
    cost : str
        What it costs beyond the target's one pass over the texts, in words ("" for nothing).
    """

    name: str
    label: str  # for tables and plots
    needs: tuple[str, ...]
    score: Callable[..., np.ndarray]
    citation: str
    params: dict = field(default_factory=dict)  # default parameters
    prepare: Callable[..., dict | None] | None = None
    population_ok: bool = True  # can score texts outside the prepared set (population thresholds)
    # which of the run's optional inputs ("reference", "labels", "population") the attack needs
    # with these parameters; None: the ones in ``needs``
    requires: Callable[[dict], set] | None = None
    choices: dict = field(default_factory=dict)  # {param: allowed values}; filled in from ``domains``
    # {param: bool | int | float} for parameters whose default is None ("from a preset"), so the
    # CLI and the page coerce what the user types; filled in from ``domains``
    types: dict = field(default_factory=dict)
    # {param: Domain}: the values each parameter may take (``mia_core.options``), declared in the
    # attack's module next to its defaults; every parameter has one (``attacks.register``)
    domains: dict = field(default_factory=dict)
    # compares the target and the reference token by token: a reference with another tokenizer is refused
    # (named explicitly) or skipped (``all``) once both models are loaded, before any pass (``pipeline.plan``)
    one_tokenizer: bool = False
    # what it costs beyond the target's one pass over the texts, in words (the page's list, --list-params);
    # "" for an attack read from that pass alone
    cost: str = ""

    def __post_init__(self):
        for name, d in self.domains.items():
            if d.kind == "choice":
                self.choices.setdefault(name, d.choices)
            if self.params.get(name) is None and d.kind in ("int", "float", "bool"):
                self.types.setdefault(name, d.type)

    def param_type(self, name: str):
        """The type of parameter ``name``: its domain's (else its default's, else ``types[name]``)."""
        if name in self.domains:
            return self.domains[name].type
        d = self.params.get(name)
        return type(d) if d is not None else self.types.get(name, str)

    def kwargs(self, run_params: dict | None = None) -> dict:
        """The keyword arguments this attack runs with: its defaults overridden by its entry in a run's
        ``{attack: {name: value}}`` (the one place the two are merged)."""
        return {**self.params, **((run_params or {}).get(self.name) or {})}

    def check_params(self, params: dict | None, *, prefix: str = "") -> dict:
        """``params`` (this attack's ``{name: value}``) checked against the declared domains and
        coerced; ``SettingsError`` (one line naming ``[prefix]attack.name``, the value and the
        domain) for an unknown name or a value outside its domain."""
        from ..options import check_values

        return check_values(self.name, self.domains, dict(params or {}), prefix=prefix)

    def inputs_needed(self, params: dict | None = None) -> set:
        """The optional run inputs this attack needs with ``params`` (registered defaults
        filled in): a subset of {"reference", "labels", "population"}."""
        if self.requires is not None:
            return set(self.requires(self.kwargs({self.name: params})))
        return {n for n in self.needs if n in OPTIONAL_INPUTS}


# optional inputs of a run, and what to give when one is missing: ``(message, options)``, each option
# written ``{name}`` (``mia_core.errors``: each front end names it its own way)
OPTIONAL_INPUTS = {
    "reference": ("needs a reference model ({reference})", ("reference",)),
    "labels": ("learns from labelled texts: give {train_members}/{train_nonmembers} or {split} 0.5",
               ("train_members", "train_nonmembers", "split")),
    "population": ("needs known non-member texts: give {population} (ReCaLL also takes {recall.prefix})",
                   ("population", "recall.prefix")),
}


NEEDS_WORDS = {"reference": "a reference model", "labels": "labelled texts to learn from (a split or a training set)",
               "population": "known non-member texts (a population)"}


def short_label(name: str) -> str:
    """An attack's name for people, short: its label without the parenthesis (``"ref"`` -> ``"Reference model"``,
    ``"wbc"`` -> ``"WBC"``, ``"min_k"`` -> ``"Min-K%"``); a name that is not registered is returned as it is."""
    a = REGISTRY.get(name)
    return a.label.split(" (")[0] if a is not None else str(name)


def needs_line(attack: Attack, params: dict | None = None) -> str:
    """One line on what ``attack`` needs besides the target and what it costs beyond the target's one pass,
    e.g. ``needs a reference model (with the target's tokenizer); costs the reference model's pass, shared with
    ref`` (the calibration page's list, ``mia run --list-params``)."""
    needs = [NEEDS_WORDS[n] for n in ("reference", "labels", "population") if n in attack.inputs_needed(params)]
    if attack.one_tokenizer and needs and needs[0] == NEEDS_WORDS["reference"]:
        needs[0] += " with the target's tokenizer"
    head = "needs " + " and ".join(needs) if needs else "needs only the target"
    return f"{head}; costs {attack.cost or 'nothing beyond the target pass'}"


def scored_tokens(stats: list[TokenStats], first_token: bool = False) -> list[TokenStats]:
    """``stats`` without each text's first token (unless ``first_token``)."""
    if stats is None or first_token:
        return stats
    return [s.slice(1, s.n_tokens) if s.n_tokens else s for s in stats]


def per_text(stats: list[TokenStats], fn: Callable[[TokenStats], float]) -> np.ndarray:
    """Apply ``fn`` to each text's statistics; NaN where the text has no predicted token."""
    out = np.full(len(stats), np.nan)
    for i, s in enumerate(stats):
        if s.n_predicted > 0:
            out[i] = fn(s)
    return out


# ---------------------------------------------------------------------------- the registry
REGISTRY: dict[str, Attack] = {}  # in registration order (attacks/__init__.py imports the modules in that order)


def register(name, label: str | None = None, *, needs: tuple = ("target",), citation: str = "", defaults=None,
             domains=None, prepare=None, requires=None, population_ok: bool = True, one_tokenizer: bool = False,
             cost: str = ""):
    """Register an attack: ``@register("loss", "LOSS", citation=...)`` on its module's ``score`` function (the
    one line an attack file needs), or ``register(Attack(...))``.

    Every parameter must have a declared domain (``DOMAINS`` in the attack's module, ``mia_core.options``) and
    its default must lie in it. A name is registered once: a second attack under a taken name is refused
    (``ValueError`` naming both), unless it is the same module's same function again (a module reloaded).

    Parameters
    ----------
    name : str or Attack
        The attack's name (what ``--attacks`` and ``--param NAME.x`` use), or a whole :class:`Attack`.
    label : str, optional
        Its name in tables and plots (default: ``name``).
    needs, citation, defaults, domains, prepare, requires, population_ok, one_tokenizer, cost
        The :class:`Attack` fields of the same names (``defaults`` is ``params``).

    Returns
    -------
    Attack or callable
        The registered attack (``register(Attack(...))``), else the decorator, which returns ``score`` itself.
    """
    if isinstance(name, Attack):
        return _add(name)

    def decorate(score):
        _add(Attack(name, label or name, tuple(needs), score, citation, dict(defaults or {}), prepare=prepare,
                    population_ok=population_ok, requires=requires, domains=dict(domains or {}),
                    one_tokenizer=one_tokenizer, cost=cost))
        return score

    return decorate


def origin(attack: Attack) -> str:
    """Where an attack's ``score`` is defined: ``module.qualname`` (what a registration clash names)."""
    fn = attack.score
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"


def _add(attack: Attack) -> Attack:
    taken = REGISTRY.get(attack.name)
    if taken is not None and origin(taken) != origin(attack):
        raise ValueError(f"attack {attack.name!r} is registered twice: by {origin(taken)} and by {origin(attack)}; "
                         "give one of them another name")
    undeclared = sorted(set(attack.params) ^ set(attack.domains))
    if undeclared:
        raise ValueError(f"attack {attack.name}: parameters and declared domains differ: {', '.join(undeclared)}")
    attack.check_params(attack.params)  # a default outside its domain is a bug here, not the user's
    REGISTRY[attack.name] = attack
    return attack
