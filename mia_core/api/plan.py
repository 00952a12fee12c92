"""``plan_run``: what a members-vs-non-members run would do before any model loads (the attacks that run, those
skipped and why, the model passes, warnings, the time estimate). The front door (:mod:`mia_core.api.request`) plans
every run with it; the pages show its estimate before Run is pressed."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .checks import _bad, _bool, _column, _device, _mapping, _names, _num, _texts


@dataclass
class RunPlan:
    """What a run would do (:func:`plan_run`): ``attacks`` to run, ``skipped`` ``{attack: why}``, the
    model ``passes``, ``warnings``, the ``estimate`` line and its ``seconds`` (None without texts)."""

    attacks: list[str]
    skipped: dict[str, str] = field(default_factory=dict)
    passes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    estimate: str = ""
    seconds: float | None = None

    def __str__(self) -> str:
        lines = [f"attacks: {', '.join(self.attacks)}"]
        lines += [f"skipped {n}: it {why}" for n, why in self.skipped.items()]
        lines += [f"passes: {', '.join(self.passes)}"] + ([self.estimate] if self.estimate else [])
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def _estimate(names: list[str], passes: list[str], texts: list[str], pop: list[str], *, params: dict,
              n_params, device: str, tokenizer, modify_variants) -> tuple[str, float | None]:
    """The estimate line and its seconds: the texts x the passes at this machine's measured speed, plus the
    population, the neighbours and the modified members; ``("", None)`` without texts."""
    from ..attacks import REGISTRY
    from ..estimate import count_tokens, describe_estimate, estimate_seconds
    from ..formatting import fmt_seconds

    if not texts:
        return "", None
    needs = {n for a in names for n in REGISTRY[a].needs}
    n_tok = count_tokens(texts, tokenizer)
    extra = count_tokens(pop, tokenizer) * len(passes) if pop else 0.0
    if "neighbours" in needs:
        n = max(int(REGISTRY[a].kwargs(params).get("n") or 25) for a in names if "neighbours" in REGISTRY[a].needs)
        extra += 0.6 * n * n_tok  # each neighbour scored from where it differs from its text
    if modify_variants:
        extra += len(modify_variants) * n_tok * len(passes) / 2  # only the members are modified
    estimate = describe_estimate(len(texts), passes, n_tok, n_params, device)
    seconds = estimate_seconds(n_tok * len(passes), n_params, device)[0]
    if extra:
        sec, _ = estimate_seconds(int(extra), n_params, device)
        seconds += sec
        parts = (["the population set"] if pop else []) + (["neighbours"] if "neighbours" in needs else []) + (
            ["modified members"] if modify_variants else [])
        estimate += f" Plus about {fmt_seconds(sec)} for {', '.join(parts)}."
    if "lowercase" in REGISTRY and "lowercase" not in names:
        sec, _ = estimate_seconds(n_tok, n_params, device)
        estimate += (f" Lowercase (not ticked by default) would add a pass over the lower-cased texts: about "
                     f"{fmt_seconds(sec)}.")
    return estimate, seconds


def plan_run(attacks=None, *, texts: Sequence[str] = (), reference: bool = False, population: Sequence[str] = (),
             labels: bool = False, params: dict | None = None, n_params: float | None = None, device: str = "cpu",
             tokenizer=None, modify_variants: Sequence[str] = (), check_inputs: bool = True,
             text_column: str | None = None) -> RunPlan:
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
    from ..attacks import REGISTRY, default_attacks
    from ..pipeline import plan_attacks

    attacks = _names("attacks", attacks)
    reference, labels = _bool("reference", reference), _bool("labels", labels)
    params = _mapping("params", params)
    n_params = _num("n_params", n_params, 0, optional=True)
    device = _device(device)
    if tokenizer is not None and not callable(tokenizer):
        raise _bad("tokenizer", "a tokenizer (callable) or None", tokenizer)
    modify_variants = _names("modify_variants", modify_variants) or []
    if isinstance(modify_variants, str):
        modify_variants = [v for v in modify_variants.split(",") if v.strip()]
    check_inputs, text_column = _bool("check_inputs", check_inputs), _column("text_column", text_column)
    texts = _texts(texts, "texts", text_column=text_column)
    population = _texts(population, "population", text_column=text_column)
    spec = attacks if attacks is not None else default_attacks(have_reference=reference)
    have = {k for k, on in (("reference", reference), ("labels", labels), ("population", len(population))) if on}
    if check_inputs:
        names, skipped = plan_attacks(spec, have=have, params=params)
    else:
        from ..pipeline import parse_attacks

        names, skipped = parse_attacks(spec), {}
    needs = {n for a in names for n in REGISTRY[a].needs}
    passes = ["target"] + (["target lower-cased"] if "target_lower" in needs else []) + (
        ["reference"] if "reference" in needs else [])
    warnings: list[str] = []
    estimate, seconds = _estimate(names, passes, list(texts), list(population), params=params, n_params=n_params,
                                  device=device, tokenizer=tokenizer, modify_variants=modify_variants)
    if "rmia" in names and not REGISTRY["rmia"].kwargs(params).get("references"):
        warnings.append("RMIA with the run's single reference cannot tune a (it needs 3+ make-references models): "
                        "a = 0.3, which ranks like LOSS at language-model likelihoods")
    return RunPlan(attacks=names, skipped=skipped, passes=passes, warnings=warnings, estimate=estimate,
                   seconds=seconds)
