"""Before anything loads: which attacks run, with which settings, on which inputs.

:func:`check_config` checks every setting of a run (``SettingsError``, one line naming it);
:func:`plan_attacks` decides which of the requested attacks the inputs at hand allow (an attack named
explicitly that lacks an input stops the run; with ``all`` it is skipped with the reason);
:func:`check_population` keeps the known non-members apart from the audited texts.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ..attacks import DEFAULT_ATTACKS, REGISTRY, check_params
from ..attacks.base import OPTIONAL_INPUTS
from ..data import Dataset
from ..errors import DataError, SettingsError, Worded
from .config import RunConfig


def parse_attacks(spec: str | Sequence[str] | None) -> list[str]:
    """``"all"``, a comma list, or a sequence -> validated attack names (None: the default list)."""
    if spec is None:
        return list(DEFAULT_ATTACKS)
    names = [str(s).strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if str(s).strip()]
    if not names:
        raise SettingsError(f"no attack given; choose from {', '.join(REGISTRY)} or 'all'")
    if names == ["all"] or "all" in names:
        return list(REGISTRY)
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise SettingsError(f"unknown attack(s) {', '.join(unknown)}; choose from {', '.join(REGISTRY)} or 'all'")
    return names


def check_config(cfg: RunConfig) -> RunConfig:
    """The run's settings checked before any model pass (``run_attacks`` calls it first; a caller can
    call it before loading a model): the attacks, every attack parameter against its declared domain
    (:func:`mia_core.attacks.check_params`) and the run's numbers. Returns the configuration with the
    parameters coerced to their types; ``SettingsError``, one line naming the setting, otherwise."""
    from .options import RunOptions

    parse_attacks(list(cfg.attacks))
    params = check_params(cfg.params)
    for where, name, value in (  # the run's declared options (RunOptions), by their RunConfig names
        ("n_bootstrap", "n_bootstrap", cfg.n_bootstrap),
        ("seed", "seed", cfg.seed),
        ("split_seed", "seed", cfg.split_seed),  # a seed here (prepare_run puts the seed in for None)
        ("population_alpha", "alpha", cfg.population_alpha),
        ("split", "split", cfg.split or None),  # 0 / None: no split
        ("stats.context", "context", cfg.stats.context),  # 0 / None: the model's
        ("stats.batch_tokens", "batch_tokens", cfg.stats.batch_tokens),  # 0 / None: the device's
    ):
        RunOptions.domain(name).check(value, f"RunConfig.{where}")
    return replace(cfg, params=params)


def available_inputs(*, reference=None, labels: bool = False, population: Dataset | None = None) -> set[str]:
    """The optional run inputs at hand (``plan_attacks``' ``have``): "reference", "labels" (a training
    set or a split), "population" (known non-members, when there is at least one)."""
    have = {"reference"} if reference is not None else set()
    if labels:
        have.add("labels")
    if population is not None and len(population):
        have.add("population")
    return have


def plan_attacks(spec: str | Sequence[str] | None, *, have: set[str] | Sequence[str],
                 params: dict | None = None) -> tuple[list[str], dict[str, str]]:
    """Which of the requested attacks can run with the inputs at hand, before anything loads.

    ``have``: the optional run inputs available: "reference" (a reference model),
    "labels" (a training set or a split), "population" (known non-members). An attack named
    explicitly that lacks an input stops the run (``SettingsError``, one line, naming what to
    give); with ``all`` such attacks are skipped and returned with the reason, so that
    ``--attacks all`` runs every attack its inputs allow.

    Returns ``(names to run, {skipped name: reason})``.
    """
    names = parse_attacks(spec)
    params = check_params(params)  # every parameter in its declared domain, before anything loads
    raw = [str(x).strip() for x in (spec.split(",") if isinstance(spec, str) else (spec or []))]
    all_mode = "all" in raw
    have = set(have)
    run, skipped, errors = [], {}, []
    for n in names:
        missing = sorted(REGISTRY[n].inputs_needed((params or {}).get(n)) - have)
        if not missing:
            run.append(n)
            continue
        reason = _joined([Worded(*OPTIONAL_INPUTS[m]) for m in missing], "; ")  # names its options
        if all_mode:
            skipped[n] = reason
        else:
            errors.append(Worded(f"{REGISTRY[n].label} ({n}) {reason.template}", reason.options))
    if errors:
        e = _joined(errors, "; ")
        raise SettingsError(e.template, options=e.options)
    if not run:
        e = _joined([Worded(f"{n}: {r.template}", r.options) for n, r in skipped.items()], "; ")
        raise SettingsError("none of the attacks can run with these inputs: " + e.template, options=e.options)
    return run, skipped


def check_tokenizers(spec, names: list[str], skipped: dict, target, reference, *,
                     optional: Sequence[str] = ()) -> tuple[list[str], dict]:
    """Once both models are loaded and before any pass: an attack that compares the two models token by token
    (``Attack.one_tokenizer``: WBC) with a reference of another tokenizer stops the run when named explicitly
    (``SettingsError``, one line naming {reference}), and is skipped with the reason under ``all`` (in ``spec``,
    or ``optional``: the attacks a front end's ``all`` became). Returns ``(names, skipped)`` for the run."""
    bound = [n for n in names if REGISTRY[n].one_tokenizer]
    if not bound or reference is None or target.same_tokenizer(reference):
        return names, skipped
    raw = [str(x).strip() for x in (spec.split(",") if isinstance(spec, str) else (spec or []))]
    why = "compares the models token by token and needs a reference with the target's tokenizer ({reference})"
    if "all" not in raw and not set(bound) <= set(optional):
        labels = ", ".join(f"{REGISTRY[n].label} ({n})" for n in bound)
        raise SettingsError(f"{labels} {why}; this reference's tokenizer differs (for a fine-tune, give its base "
                            "model)", options=("reference",))
    kept = [n for n in names if n not in bound]
    if not kept:
        raise SettingsError("none of the attacks can run with these inputs: " + why, options=("reference",))
    return kept, {**skipped, **{n: Worded(why, ("reference",)) for n in bound}}


def _joined(parts: list[Worded], sep: str) -> Worded:
    return Worded(sep.join(p.template for p in parts), tuple(dict.fromkeys(o for p in parts for o in p.options)))


def skip_notes(skipped: dict[str, str]) -> list[str]:
    """One note per attack ``plan_attacks`` skipped, with the reason (a :class:`~mia_core.errors.Worded`
    note where the reason names options)."""
    return [Worded(f"skipped {REGISTRY[n].label} ({n}): it {getattr(why, 'template', why)}",
                   getattr(why, "options", ())) for n, why in skipped.items()]


def uses_reference(names: Sequence[str], params: dict | None = None) -> bool:
    """Whether any of the attacks ``names`` uses the run's reference model (the reference pass,
    or an attack that loads it itself with these parameters, e.g. offline RMIA)."""
    return any("reference" in REGISTRY[n].needs or "reference" in REGISTRY[n].inputs_needed((params or {}).get(n))
               for n in names)


def check_population(population: Dataset | None, texts: Sequence[str]) -> None:
    """The population (known non-members) must be disjoint from every audited text."""
    if population is None or not len(population):
        return
    overlap = set(population.texts) & set(texts)
    if overlap:
        raise DataError(f"{len(overlap)} population text(s) also appear in the audited sets; they must be disjoint")
