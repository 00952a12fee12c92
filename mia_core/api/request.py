"""The front door of a members-vs-non-members run: one request, built the same way by the CLI (``mia run``),
the API (:func:`mia_core.audit`, :func:`mia_core.score`) and the dashboard's Calibration page.

:func:`prepare_run` does everything that needs no model: it resolves the reference model's spec (given, or
a ``make-target`` folder's base), checks that the population is disjoint from the audited texts, plans the
attacks (those that cannot run with these inputs are skipped with the reason, or refused when named), and
checks every setting. It returns a :class:`RunRequest`; :func:`execute_run` then loads the models and runs
the passes. A bad setting is therefore one line before any model loads, whichever front end it came from.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..errors import DataError, SettingsError, Worded
from ..pipeline.options import (  # a run's declared options: prepare_run checks them, the CLI and page read them
    RunOptions
)
from ..inputs import check_request, shown_value


@dataclass
class RunRequest:
    """A checked, planned run: everything :func:`execute_run` needs, nothing loaded yet.

    Attributes
    ----------
    data : mia_core.data.Dataset
        The labelled members and non-members.
    model, reference : str or LoadedModel or None
        The target's spec (or the model itself); the reference's, None when no attack uses one.
    config : mia_core.pipeline.RunConfig
        The checked configuration (attacks as planned, parameters coerced to their domains).
    skipped : dict
        ``{attack: why}`` for attacks asked for (``"all"``) that these inputs cannot run.
    optional : list of str
        Attacks asked for by ``"all"``: skipped with the reason, not refused, when the loaded models turn out
        unable to run them (WBC with a reference of another tokenizer: ``pipeline.plan.check_tokenizers``).
    population, train : mia_core.data.Dataset or None
        Known non-members; SMIA's separate labelled training set.
    load : dict
        How the models load: ``dtype``, ``device``, ``quantize``, ``trust_remote_code``.
    modify : list of str
        One-word modifications of the members to evaluate too (SMIA §5.2; :func:`execute_modified`).
    """

    data: object
    model: object
    config: object
    reference: object = None
    skipped: dict = field(default_factory=dict)
    population: object = None
    train: object = None
    load: dict = field(default_factory=dict)
    modify: list = field(default_factory=list)
    optional: list = field(default_factory=list)

    @property
    def attacks(self) -> list[str]:
        """The attacks that will run, in order."""
        return list(self.config.attacks)


def reference_spec(model, reference=None):
    """The reference model a run would load, without loading anything.

    Parameters
    ----------
    model : str or LoadedModel or None
        The target (a spec or a loaded model).
    reference : str or LoadedModel, optional
        The reference asked for.

    Returns
    -------
    str or LoadedModel or None
        ``reference`` when given; else the base model recorded in a ``make-target`` folder; else None (an
        unreadable target folder is reported when it loads, not here).
    """
    if reference is not None:
        return reference
    from ..models import LoadedModel

    if model is None or isinstance(model, LoadedModel):
        return None
    try:
        from ..models.causal import TARGET_MARKER, resolve_spec

        ms = resolve_spec(str(model))
        if ms.kind == "target":
            return json.loads((Path(ms.location) / TARGET_MARKER).read_text()).get("base")
    except Exception:  # noqa: BLE001 - an unreadable target is reported when it is loaded
        return None
    return None


def population_set(*, texts: Sequence[str] | None = None, paths=None, mode: str = "auto",
                   text_column: str | None = None):
    """The population set (known non-members) as a Dataset, from texts or from files; None when empty.

    Parameters
    ----------
    texts : list of str, optional
        Texts already read (the API's): ids ``p0001``, ``p0002`` ...
    paths : list of paths, optional
        Files to read as ``mia run --population`` reads them (ids from an ``id`` column when it has one;
        repeats kept: a population is a sample).
    mode, text_column
        How ``paths`` are read.

    Returns
    -------
    mia_core.data.Dataset or None
    """
    from ..data import Dataset, read_population

    if paths:
        return read_population(paths, mode=mode, text_column=text_column, dedupe=False, as_dataset=True)
    texts = list(texts or [])
    if not texts:
        return None
    return Dataset(texts=texts, labels=[0] * len(texts), ids=[f"p{i + 1:04d}" for i in range(len(texts))])


def _planned(attacks, *, reference, population, labels: bool, params: dict, quantize: str):
    """The attacks to run and those skipped (``{name: why}``), from the one plan (``plan_run``); a quantized
    model cannot give GradNorm its gradients (refused when named, skipped under ``all``)."""
    from .plan import plan_run

    pop = list(population.texts) if population is not None else ()
    plan = plan_run(attacks, reference=reference is not None, labels=labels, population=pop, params=params)
    names, skipped = list(plan.attacks), dict(plan.skipped)
    if quantize != "none" and "gradnorm" in names:  # no gradients through bitsandbytes weights
        why = Worded(f"needs gradients, which a {{quantize}} {quantize} model does not give (use {{quantize}} none)",
                     ("quantize",))
        if "all" not in (attacks if isinstance(attacks, list) else str(attacks).split(",")):
            raise SettingsError(f"gradnorm {why}", options=("quantize",))
        names.remove("gradnorm")
        skipped["gradnorm"] = why
    return names, skipped


def check_attacks(attacks) -> list[str]:
    """The attack names of ``attacks`` (names, a comma list or ``"all"``) checked against the registry, before
    anything else (``mia_core.pipeline.parse_attacks``).

    Raises
    ------
    SettingsError
        An unknown attack, one line naming the known ones.
    """
    from ..pipeline import parse_attacks

    return parse_attacks(attacks)


def modify_choices() -> tuple[str, ...]:
    """The one-word modifications of members a run can evaluate (SMIA §5.2): duplicate, delete, add."""
    from ..neighbours.edits import VARIANTS

    return tuple(VARIANTS)


def check_modify(modify) -> list[str]:
    """``modify`` (a comma list or a list of variant names; None or empty: none) as a checked list.

    Raises
    ------
    SettingsError
        An unknown variant, one line naming the choices.
    """
    if not modify:
        return []
    items = modify.split(",") if isinstance(modify, str) else list(modify)
    out = [str(v).strip().lower() for v in items if str(v).strip()]
    bad = [v for v in out if v not in modify_choices()]
    if bad:
        raise SettingsError(f"{{modify}}: unknown variant(s) {', '.join(bad)}; choose from {', '.join(modify_choices())}",
                            options=("modify",))
    return out


def prepare_run(data, *, model=None, reference=None, attacks=None, params: dict | None = None, population=None,
                train=None, split: float | None = None, split_seed: int | None = None, prefix: str = "auto",
                context: int | None = None, batch_tokens: int | None = None, first_token: bool | None = None,
                cache: bool = True, n_bootstrap: int = 1000, seed: int = 0, blind: bool = True, alpha: float = 0.1,
                dtype: str = "auto", device: str = "auto", quantize: str = "none",
                trust_remote_code: bool = False, modify=None, optional=None) -> RunRequest:
    """Everything a run needs, checked and planned before any model loads.

    Parameters
    ----------
    data : mia_core.data.Dataset
        Members and non-members (``mia_core.data.load_dataset`` / ``texts_from_strings``).
    model : str or LoadedModel, optional
        The target; None: the embedded SmolLM2-135M.
    reference : str or LoadedModel, optional
        The reference; None: a ``make-target`` folder's base, if the target is one (:func:`reference_spec`).
    attacks : str or list of str, optional
        Names, a comma list or ``"all"``; None: ``mia_core.attacks.default_attacks`` (with ``ref`` and ``wbc``
        when there is a reference).
    optional : list of str, optional
        Attacks to skip with the reason, not refuse, when the loaded models turn out unable to run them (WBC with
        a reference of another tokenizer); every attack of ``"all"`` and the default list's WBC are, besides.
    params : dict, optional
        ``{attack: {name: value}}``, each value checked against its declared domain.
    population, train : mia_core.data.Dataset, optional
        Known non-members (disjoint from every audited and training text); SMIA's training set.
    split, split_seed
        Share of the labelled texts learning attacks train on, and its seed (default: ``seed``).
    prefix, context, batch_tokens, first_token, cache
        The statistics' settings (``mia_core.stats.StatsSettings``) and the on-disk cache.
    n_bootstrap, seed, blind, alpha
        Bootstrap resamples and their seed, the blind baseline, the population threshold's FPR.
    dtype, device, quantize, trust_remote_code
        How the models load (:func:`mia_core.models.load_causal_lm`).
    modify : str or list of str, optional
        One-word modifications of the members to evaluate too (:func:`check_modify`, :func:`execute_modified`).

    Returns
    -------
    RunRequest

    Raises
    ------
    SettingsError
        An unknown attack, a named attack these inputs cannot run, a parameter outside its domain.
    DataError
        A population text among the audited or training texts.
    """
    from ..attacks import default_attacks
    from ..pipeline import RunConfig, check_config, check_population, uses_reference
    from ..stats import StatsSettings

    from ..data import Dataset

    for name, value, may_be_none in (("data", data, False), ("population", population, True), ("train", train, True)):
        if not (isinstance(value, Dataset) or (may_be_none and value is None)):
            raise DataError(f"{{{name}}} must be a mia_core.data.Dataset (mia_core.data.load_dataset or "
                            f"texts_from_strings){' or None' if may_be_none else ''}, got {shown_value(value)}",
                            options=(name,))
    o = RunOptions.check(caller="prepare_run", split=split or None, split_seed=split_seed, prefix=prefix,
                         context=context, batch_tokens=batch_tokens, first_token=first_token, cache=cache,
                         n_bootstrap=n_bootstrap, seed=seed, blind=blind, alpha=alpha)
    params, modify = dict(params or {}), check_modify(modify)
    check_population(population, list(data.texts) + (list(train.texts) if train is not None else []))
    ref_spec = reference_spec(model, reference)
    by_default = attacks is None
    if by_default:  # the dashboard's default: the same tables from every front end
        attacks = default_attacks(have_reference=ref_spec is not None)
    names, skipped = _planned(attacks, reference=ref_spec, population=population,
                              labels=train is not None or bool(o.split), params=params, quantize=quantize)
    cfg = check_config(RunConfig(
        attacks=names, params=params,
        stats=StatsSettings(context=o.context, prefix=o.prefix, batch_tokens=o.batch_tokens),
        use_cache=o.cache, n_bootstrap=o.n_bootstrap, seed=o.seed, split=o.split,
        split_seed=o.seed if o.split_seed is None else o.split_seed, population_alpha=o.alpha, blind=o.blind,
        score_first_token=o.first_token))
    raw = [str(a).strip() for a in (attacks.split(",") if isinstance(attacks, str) else attacks)]
    from ..attacks import REGISTRY

    optional = list(names) if "all" in raw else [
        n for n in names if n in (optional or ()) or (by_default and REGISTRY[n].one_tokenizer)]
    return RunRequest(data=data, model=model, config=cfg, skipped=skipped, population=population, train=train,
                      optional=optional,
                      reference=ref_spec if uses_reference(names, cfg.params) else None,
                      load={"dtype": dtype, "device": device, "quantize": quantize,
                            "trust_remote_code": trust_remote_code}, modify=modify)


def load_models(request: RunRequest, *, progress=None):
    """The target and (when an attack uses it) the reference of ``request``, loaded (or as given).

    Returns
    -------
    tuple
        ``(target, reference)``; ``reference`` is None when no attack uses one.
    """
    from ..models import LoadedModel, load_causal_lm

    def load(spec, quantize: str):
        if isinstance(spec, LoadedModel):
            return spec
        return load_causal_lm(spec, dtype=request.load.get("dtype", "auto"), device=request.load.get("device", "auto"),
                              quantize=quantize, trust_remote_code=request.load.get("trust_remote_code", False),
                              **({"progress": progress} if progress is not None else {}))

    target = load(request.model, request.load.get("quantize", "none"))
    reference = load(request.reference, "none") if request.reference is not None else None
    return target, reference


def execute_run(request: RunRequest, *, target=None, reference=None, progress=None, partial=None,
                warn: Callable[[str], None] | None = None):
    """Run a prepared request: load the models (unless given), then every pass, score and metric.

    Parameters
    ----------
    request : RunRequest
        From :func:`prepare_run`.
    target, reference : LoadedModel, optional
        Already loaded models (the dashboard's); loaded from the request's specs otherwise.
    progress : callable, optional
        ``progress(message, fraction)`` (:mod:`mia_core.progress`, the one convention of every audit).
    partial : callable, optional
        Receives early results (the page's table before the reference pass).
    warn : callable, optional
        Receives the neighbour generator's coupling warning before the neighbours are made.

    Returns
    -------
    mia_core.pipeline.RunResult
        With ``config["skipped"]`` and a ``skipped ...`` note per attack the plan skipped.
    """
    check_request(request, RunRequest, "prepare_run")
    from ..attacks import REGISTRY
    from ..attacks.neighbourhood import run_coupling_warning
    from ..pipeline import run_attacks
    from ..progress import noop

    if target is None:
        target, loaded_ref = load_models(request, progress=progress)
        reference = loaded_ref if reference is None else reference
    coupled = run_coupling_warning(request.attacks, request.config.params, target)
    if coupled and warn is not None:
        warn(coupled)
    extra = {"partial": partial} if partial is not None else {}
    result = run_attacks(request.data, target, reference=reference, config=request.config, train=request.train,
                         population=request.population, progress=progress or noop, optional=request.optional, **extra)
    if request.skipped:
        result.config["skipped"] = {**request.skipped, **(result.config.get("skipped") or {})}
        result.report += [f"skipped {REGISTRY[n].label} ({n}): it {why}" for n, why in request.skipped.items()]
    return result


def execute_modified(request: RunRequest, target, reference=None, *, progress=None, verbatim: dict | None = None,
                     blind: bool = True) -> dict:
    """Every attack of the request on its one-word-modified members too (SMIA §5.2,
    :func:`mia_core.pipeline.modified.run_modified`); ``{}`` when the request has no ``modify``.

    Parameters
    ----------
    request : RunRequest
        With ``modify`` (:func:`prepare_run`).
    target, reference : LoadedModel
        The models the run used.
    progress : callable, optional
        ``progress(message, fraction)`` (:mod:`mia_core.progress`).
    verbatim : dict, optional
        The verbatim run's metrics (``RunResult.metrics``), not computed again.
    blind : bool
        Also the blind baseline per variant (False: the page's choice; it hardly moves with one word).

    Returns
    -------
    dict
        ``{"verbatim": metrics, variant: metrics, ..., "modifications": ..., "n_unmodified": ...}``.
    """
    check_request(request, RunRequest, "prepare_run")
    from dataclasses import replace

    from ..pipeline.modified import run_modified
    from ..progress import noop

    if not request.modify:
        return {}
    config = request.config if blind else replace(request.config, blind=False)
    return run_modified(request.data, target, variants=list(request.modify), reference=reference, config=config,
                        train=request.train, population=request.population, seed=request.config.seed,
                        progress=progress or noop, verbatim=verbatim)


def modified_summary(results: dict, fpr: str = "0.01") -> str:
    """:func:`execute_modified`'s results as the plain-text table ``mia run --modify`` prints."""
    from ..pipeline.modified import summary_table

    return summary_table(results, fpr)
