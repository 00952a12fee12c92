"""``plan_run``: what a members-vs-non-members run would do before any model loads (the attacks that run, those
skipped and why, the model passes, warnings, the time estimate). The front door (:mod:`mia_core.api.request`) plans
every run with it; the pages show its estimate before Run is pressed."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..inputs import (
    bad_value, check_flag, check_column, check_device, check_mapping, check_names, check_number, check_texts
)


# a neighbour is scored from where it differs from its text: about this share of the text's tokens each (the estimate's
# rule; the proposer's own passes are not counted)
NEIGHBOUR_SHARE = 0.6

@dataclass
class RunPlan:
    """What a run would do (:func:`plan_run`): ``attacks`` to run, ``skipped`` ``{attack: why}``, the
    model ``passes``, ``warnings``, the ``estimate`` line and its ``seconds`` (None without texts); of those seconds,
    ``pass_seconds`` are the model passes over the audited texts, ``todo_passes`` of which have texts the cache
    lacks (the rest, population, neighbours and modified members, come after them)."""

    attacks: list[str]
    skipped: dict[str, str] = field(default_factory=dict)
    passes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    estimate: str = ""
    seconds: float | None = None
    pass_seconds: float | None = None
    todo_passes: int = 0

    def __str__(self) -> str:
        lines = [f"attacks: {', '.join(self.attacks)}"]
        lines += [f"skipped {n}: it {why}" for n, why in self.skipped.items()]
        lines += [f"passes: {', '.join(self.passes)}"] + ([self.estimate] if self.estimate else [])
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def _pass_cost(lm, texts: list[str], st, *, n_params, device, tokenizer, target) -> tuple[int, int, float]:
    """One pass over ``texts``: ``(texts cached, tokens still to score, their seconds)``. With ``lm`` loaded the
    cache is checked (:func:`mia_core.stats.speed.cached_texts`, the run's key) and the speed is that model's own
    when measured; without it nothing counts as cached and the speed is ``n_params``'s."""
    from ..estimate import count_tokens, estimate_seconds
    from ..stats.speed import cached_texts

    if lm is None:
        n = count_tokens(texts, tokenizer)
        return 0, n, estimate_seconds(n, n_params, device)[0]
    from ..stats import settings_for

    hit = cached_texts(lm, texts, settings_for(lm, target, st) if target is not None else st)
    n = count_tokens([t for t, h in zip(texts, hit) if not h], lm.tokenizer)
    return sum(hit), n, estimate_seconds(n, lm.n_params, lm.device, lm.identity)[0]


def _estimate(names: list[str], passes: list[str], texts: list[str], pop: list[str], *, params: dict,
              n_params, device: str, tokenizer, modify_variants, target=None, reference=None,
              stats=None) -> tuple[str, float | None, tuple]:
    """The estimate line and its seconds: the texts x the passes at this machine's measured speed, plus the
    population, the neighbours and the modified members; and ``(seconds of the passes over the audited texts, how
    many of them have texts to score)``. ``("", None, (None, 0))`` without texts. With the ``target``
    (and ``reference``) loaded, only the texts the cache lacks count, at that model's own measured speed."""
    from ..attacks import REGISTRY
    from ..estimate import count_tokens, describe_estimate, estimate_seconds
    from ..formatting import fmt_seconds
    from ..stats import StatsSettings

    if not texts:
        return "", None, (None, 0)
    st = stats or StatsSettings()
    if target is not None:
        n_params, device, tokenizer = target.n_params, target.device, target.tokenizer
    needs = {n for a in names for n in REGISTRY[a].needs}
    lower = [t.lower() for t in texts]
    runs = {"target": (target, texts), "target lower-cased": (target, lower),
            "reference": (reference if target is not None else None, texts)}

    def cost(name: str, items: list[str]) -> tuple[int, int, float]:
        lm = runs[name][0]
        return _pass_cost(lm, items, st, n_params=n_params if lm is None or lm is target else None,
                          device=device, tokenizer=tokenizer, target=target)

    done = [cost(p, runs[p][1]) for p in passes]
    n_tok = count_tokens(texts, tokenizer)
    known = target is not None and ("reference" not in passes or reference is not None)
    seconds = sum(c[2] for c in done)
    main = (seconds, sum(1 for c in done if c[1] > 0))  # the audited texts' passes: their seconds, those with work
    estimate = describe_estimate(len(texts), passes, n_tok, n_params, device,
                                 sum(c[0] for c in done) if known else None, todo_tokens=sum(c[1] for c in done),
                                 model=target.identity if target is not None else None, seconds=seconds)
    extra, parts = 0.0, []
    if pop:
        pop_runs = {"target": pop, "target lower-cased": [t.lower() for t in pop], "reference": pop}
        extra += sum(cost(p, pop_runs[p])[2] for p in passes)
        parts.append("the population set")
    model = target.identity if target is not None else None
    if "neighbours" in needs:  # each neighbour scored from where it differs from its text
        n = max(int(REGISTRY[a].kwargs(params).get("n") or 25) for a in names if "neighbours" in REGISTRY[a].needs)
        extra += estimate_seconds(int(NEIGHBOUR_SHARE * n * n_tok), n_params, device, model)[0]
        parts.append("neighbours")
    if modify_variants:  # only the members are modified
        extra += estimate_seconds(int(len(modify_variants) * n_tok * len(passes) / 2), n_params, device, model)[0]
        parts.append("modified members")
    if (target is not None) and ("neighbours" in needs or modify_variants):
        parts[-1] += " (new texts, not checked against the cache)"
    if extra:
        seconds += extra
        estimate += f" Plus about {fmt_seconds(extra)} for {', '.join(parts)}."
    if "lowercase" in REGISTRY and "lowercase" not in names:
        estimate += (f" Lowercase (not ticked by default) would add a pass over the lower-cased texts: about "
                     f"{fmt_seconds(cost('target lower-cased', lower)[2])}.")
    return estimate, seconds, main


def _variants(value) -> list[str]:
    """``modify_variants`` checked: a list of names, or a comma list."""
    value = check_names("modify_variants", value) or []
    return [v for v in value.split(",") if v.strip()] if isinstance(value, str) else value


def _passes(names: list[str], params: dict) -> tuple[list[str], list[str]]:
    """The model passes ``names`` need, and the plan's warnings."""
    from ..attacks import REGISTRY

    needs = {n for a in names for n in REGISTRY[a].needs}
    passes = ["target"] + (["target lower-cased"] if "target_lower" in needs else []) + (
        ["reference"] if "reference" in needs else [])
    warnings: list[str] = []
    if "rmia" in names and not REGISTRY["rmia"].kwargs(params).get("references"):
        warnings.append("RMIA with the run's single reference cannot tune a (it needs 3+ make-references models): "
                        "a = 0.3, which ranks like LOSS at language-model likelihoods")
    return passes, warnings


def plan_run(attacks=None, *, texts: Sequence[str] = (), reference: bool = False, population: Sequence[str] = (),
             labels: bool = False, params: dict | None = None, n_params: float | None = None, device: str = "cpu",
             tokenizer=None, modify_variants: Sequence[str] = (), check_inputs: bool = True,
             text_column: str | None = None, target_model=None, reference_model=None, settings=None) -> RunPlan:
    """What a run of ``attacks`` would do, before any model loads.

    Parameters
    ----------
    attacks : str or list of str, optional
        Attack names, a comma list, or ``"all"`` (every attack the inputs allow; the others are
        skipped with the reason). None: the default list (``mia_core.attacks.default_attacks``).
    texts : list of str, path or DataFrame
        The texts the run will score (for the estimate; the population counts too). A DataFrame or a
        Series is read by its text column (``text_column``, else found as in a .csv file).
    reference : bool
        Whether a reference model will be given.
    population : list of str
        Known non-members (ReCaLL's prefix, RMIA's z, the population threshold).
    labels : bool
        Whether labelled training texts will be given (``split`` or a training set: SMIA).
    params : dict, optional
        ``{attack: {name: value}}``; every value is checked against its declared domain.
    n_params, device, tokenizer
        For the time estimate: the model's parameter count, where it runs, its tokenizer (exact
        token counts; otherwise estimated from characters).
    modify_variants : list of str
        Modified-member variants (SMIA §5.2) that will be evaluated too.
    check_inputs : bool
        False: plan the attacks as given without checking that their inputs will be there (a page's
        estimate of what is ticked; the run itself checks).
    text_column : str, optional
        The text column of a table (file or DataFrame) given as ``texts`` or ``population``.
    target_model, reference_model : LoadedModel, optional
        The models when they are loaded already: the estimate then counts only the texts the disk cache
        lacks for each pass (:func:`mia_core.stats.speed.cached_texts`) at the model's own measured speed, and
        takes ``n_params``, ``device`` and ``tokenizer`` from ``target_model``. Without them it does not
        know the cache (the line says so).
    settings : mia_core.stats.StatsSettings, optional
        The passes' settings (window, prefix: part of the cache key); None: the defaults.

    Returns
    -------
    RunPlan

    Raises
    ------
    SettingsError
        An attack named explicitly that cannot run with these inputs, an unknown attack, a parameter
        outside its domain, or an argument of the wrong type (one line naming it).
    DataError
        ``texts`` or ``population`` that are not texts (one line naming the parameter).
    """
    from ..attacks import default_attacks
    from ..pipeline import plan_attacks

    attacks = check_names("attacks", attacks)
    reference, labels = check_flag("reference", reference), check_flag("labels", labels)
    params = check_mapping("params", params)
    n_params = check_number("n_params", n_params, 0, optional=True)
    device = check_device(device)
    if tokenizer is not None and not callable(tokenizer):
        raise bad_value("tokenizer", "a tokenizer (callable) or None", tokenizer)
    modify_variants = _variants(modify_variants)
    check_inputs, text_column = check_flag("check_inputs", check_inputs), check_column("text_column", text_column)
    texts = check_texts(texts, "texts", text_column=text_column)
    population = check_texts(population, "population", text_column=text_column)
    spec = attacks if attacks is not None else default_attacks(have_reference=reference)
    have = {k for k, on in (("reference", reference), ("labels", labels), ("population", len(population))) if on}
    if check_inputs:
        names, skipped = plan_attacks(spec, have=have, params=params)
    else:
        from ..pipeline import parse_attacks

        names, skipped = parse_attacks(spec), {}
    passes, warnings = _passes(names, params)
    estimate, seconds, main = _estimate(names, passes, list(texts), list(population), params=params,
                                        n_params=n_params, device=device, tokenizer=tokenizer,
                                        modify_variants=modify_variants, target=target_model,
                                        reference=reference_model, stats=settings)
    return RunPlan(attacks=names, skipped=skipped, passes=passes, warnings=warnings, estimate=estimate,
                   seconds=seconds, pass_seconds=main[0], todo_passes=main[1])


def measure_speed(lm, texts: Sequence[str]) -> float | None:
    """This machine's speed for ``lm`` measured once and recorded for the estimates
    (:func:`mia_core.stats.speed.measure` on ``texts``: an untimed first text, then about 600 tokens, nothing cached);
    None, and nothing run, when that model's speed was measured here before or the texts hold too few tokens.

    Parameters
    ----------
    lm : LoadedModel
        The loaded model.
    texts : sequence of str
        Short texts (e.g. the bundled demo's).

    Returns
    -------
    float or None
        The tokens per second measured.
    """
    from .. import estimate
    from ..stats.speed import measure

    if estimate.measured(lm.device, lm.identity):
        return None
    return measure(lm, texts)
