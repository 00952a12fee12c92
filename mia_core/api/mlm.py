"""The masked-LM audit's front door (Mireshghallah et al. 2022): one request, built the same way by the CLI
(``mia mlm``), the API (:func:`audit_mlm`) and the dashboard's Masked-LM audit page.

:func:`prepare_mlm` does everything that needs no model: it resolves the model specs (the bundled demo's pair
when asked), reads the texts (:func:`read_mlm_files` reads files as ``mia mlm`` does), checks every setting and
the texts (empty sets, a population that overlaps the evaluated texts, ids and groups) and returns an
:class:`MlmRequest`; :func:`execute_mlm` then loads the models and runs the audit
(:func:`mia_core.mlm.run_mlm_audit`). A bad setting is one line before any model loads, whichever front end.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ..errors import MiaError
from ..mlm.options import MlmOptions
from ..inputs import (
    check_flag, check_callable, check_column, check_device, check_dtype, check_kwargs, check_model_spec, check_request,
    check_sequence, check_texts
)


def _mlm_checks() -> dict:
    """The check of each keyword :func:`prepare_mlm` takes: the audit's options by their declared domains
    (:class:`~mia_core.mlm.options.MlmOptions`; the recipe by its own check, which describes each recipe), the ids
    and groups (sequences) and how the models load here."""
    def declared(name):
        return lambda v: MlmOptions.check_some(**{name: v})[name]

    return {
        **{n: declared(n) for n in MlmOptions.declared()},
        "recipe": lambda v: MlmOptions.check_some(recipe=check_recipe(v))["recipe"],
        "member_groups": lambda v: check_sequence("member_groups", v),
        "nonmember_groups": lambda v: check_sequence("nonmember_groups", v),
        "population_groups": lambda v: check_sequence("population_groups", v),
        "member_ids": lambda v: check_sequence("member_ids", v),
        "nonmember_ids": lambda v: check_sequence("nonmember_ids", v),
        "device": check_device,
        "dtype": check_dtype,
        "trust_remote_code": lambda v: check_flag("trust_remote_code", v),
        "progress": lambda v: check_callable("progress", v),
    }


def check_recipe(recipe) -> str:
    """The energy recipe's name, or a one-line ``SettingsError`` naming the known ones (before anything is read).

    Parameters
    ----------
    recipe : str
        ``"sum"`` or ``"released"`` (:data:`mia_core.mlm.RECIPES`).

    Returns
    -------
    str
    """
    from ..mlm.masking import check_recipe as check

    return check(recipe)


@dataclass
class MlmRequest:
    """A checked masked-LM audit: everything :func:`execute_mlm` needs, nothing loaded yet.

    Attributes
    ----------
    members, nonmembers, population : list of str
        The evaluated texts and the population (known non-members, disjoint from them).
    model, reference : str or MaskedLM
        The target's and the reference's specs (or the models themselves).
    settings : dict
        The other keywords of :func:`mia_core.mlm.run_mlm_audit`, checked (``k``, ``seed``, ``rate``, ``alpha``,
        ``recipe``, ids, groups, ``train_samples``, ``batch_tokens``, ``n_bootstrap``, ``cache``, ``device``,
        ``dtype``, ``trust_remote_code``, ``vocab_only``).
    notes : list of str
        What reading the files noted (a file read as Windows-1252...).
    """

    members: list[str]
    nonmembers: list[str]
    population: list[str]
    model: object
    reference: object
    settings: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def k(self) -> int:
        """``K``, the masking patterns per text (the recipe's unless given)."""
        from ..mlm import recipe_k

        return recipe_k(self.settings.get("recipe", "sum"), self.settings.get("k"))


def mlm_demo(*, required: bool = False) -> dict | None:
    """The bundled masked-LM demo's files and models (``mia_core.targets.demo.mlm_demo_paths``).

    Parameters
    ----------
    required : bool
        Raise the one-line error that says what is missing instead of returning None.

    Returns
    -------
    dict or None
        ``members``, ``nonmembers``, ``population`` (one text per line), ``target`` and ``reference``; None when
        the demo is not installed (unless ``required``).
    """
    from ..targets.demo import mlm_demo_paths

    if required:
        return mlm_demo_paths()
    try:
        return mlm_demo_paths()
    except (ImportError, MiaError):
        return None


def mlm_choices() -> dict:
    """What a front end offers for a masked-LM audit: the defaults and the recipes with their ``K``.

    Returns
    -------
    dict
        ``alpha`` and ``recipe`` (the defaults), ``recipes`` (their names, :data:`mia_core.mlm.RECIPES`) and
        ``k`` (``{recipe: K}``, the masks per text each recipe takes unless ``k`` is given).
    """
    from ..mlm import DEFAULT_ALPHA, DEFAULT_RECIPE, RECIPES, recipe_k

    return {"alpha": DEFAULT_ALPHA, "recipe": DEFAULT_RECIPE, "recipes": tuple(RECIPES),
            "k": {r: recipe_k(r) for r in RECIPES}}


def read_mlm_files(*, members=None, nonmembers=None, labelled=None, population=None, train_samples=None,
                   mode: str = "auto", text_column: str | None = None, label_column: str = "label",
                   group_column: str | None = None) -> dict:
    """Members, non-members, population (and training samples) read from files or uploads, as ``mia mlm`` reads them.

    Parameters
    ----------
    members, nonmembers, labelled
        Paths or uploads (``mia_core.data.load_dataset``): two inputs, or one labelled table.
    population, train_samples
        Paths or uploads (``mia_core.data.read_population``); the group column is used when they have it.
    mode, text_column, label_column, group_column
        How the files are read.

    Returns
    -------
    dict
        Keywords for :func:`prepare_mlm`: ``members``, ``nonmembers``, ``population``, ``member_ids``,
        ``nonmember_ids``, the groups when there are any, ``train_samples`` and ``notes`` (the reading's notes).
    """
    from ..data import load_dataset, read_population

    ds = load_dataset(members=members, nonmembers=nonmembers, labelled=labelled, mode=mode, text_column=text_column,
                      label_column=label_column, group_column=group_column)
    notes = list(ds.report)
    pop = read_population(population, mode=mode, text_column=text_column, group_column=group_column, notes=notes,
                          role="population")
    train = (read_population(train_samples, mode=mode, text_column=text_column, group_column=group_column,
                             notes=notes, role="training samples") if train_samples else None)
    mi = [i for i in range(len(ds)) if ds.labels[i] == 1]
    ni = [i for i in range(len(ds)) if ds.labels[i] == 0]
    out = {"members": [ds.texts[i] for i in mi], "nonmembers": [ds.texts[i] for i in ni],
           "population": [r.text for r in pop], "member_ids": [ds.ids[i] for i in mi],
           "nonmember_ids": [ds.ids[i] for i in ni], "notes": notes,
           "train_samples": None if train is None else [r.text for r in train]}
    if ds.groups is not None:
        out["member_groups"] = [ds.groups[i] for i in mi]
        out["nonmember_groups"] = [ds.groups[i] for i in ni]
    if group_column and any(r.group is not None for r in pop):
        out["population_groups"] = [r.group for r in pop]
    return out


def _demo_texts(demo: dict | None, role: str) -> list[str]:
    """One of the demo's files, one text per line (what the dashboard's demo reads)."""
    from ..data import read_texts
    from ..errors import DataError

    if not demo:
        raise DataError("the masked-LM demo is not available in this installation.")
    return [r.text for r in read_texts(demo[role], mode="lines")]


def prepare_mlm(members=None, nonmembers=None, population=None, model=None, reference=None, *, demo: bool = False,
                text_column: str | None = None, train_samples=None, notes=None, **settings) -> MlmRequest:
    """Everything a masked-LM audit needs, checked before any model loads.

    Parameters
    ----------
    members, nonmembers, population
        Texts: lists of strings, paths, or pandas DataFrames read by ``text_column`` (as :func:`mia_core.score`
        reads them). ``population``: known non-members for the thresholds, disjoint from the evaluated texts.
    model, reference : str or MaskedLM
        The target and the reference (masked LMs sharing a tokenizer).
    demo : bool
        The bundled demo: its texts (each one text per line) for those not given, its target and reference for
        the models not given.
    text_column : str, optional
        The text column of DataFrames and tables.
    train_samples : optional
        Known training texts (the loss attack's ``mu`` threshold, §3.4), read like ``members``.
    notes : list of str, optional
        Notes from reading the files (:func:`read_mlm_files`), kept in the request.
    **settings
        The keywords of :func:`mia_core.mlm.run_mlm_audit` (``recipe``, ``k``, ``seed``, ``rate``, ``alpha``,
        ids, groups, ``batch_tokens``, ``n_bootstrap``, ``cache``, ``device``, ``dtype``, ``trust_remote_code``,
        ``vocab_only``), each checked; an unknown one is refused.

    Returns
    -------
    MlmRequest

    Raises
    ------
    SettingsError, DataError
        A wrong type or value, an unknown keyword, empty or overlapping sets, ids or groups that do not match.
    """
    from ..mlm.audit import run_mlm_audit
    from ..mlm.stages import MlmSettings, _k, text_sets

    box = mlm_demo() if demo else None
    if demo:
        model = model or str(_demo_or_none(box, "target"))
        reference = reference or _demo_or_none(box, "reference")
    model = check_model_spec("model", model, optional=False, masked=True)
    reference = check_model_spec("reference", reference, optional=False, masked=True)
    text_column = check_column("text_column", text_column)
    settings = check_kwargs("prepare_mlm", run_mlm_audit, settings, _mlm_checks(),
                       skip=("members", "nonmembers", "population", "target", "reference", "train_samples",
                             "progress"))
    read = {}
    for role, value in (("members", members), ("nonmembers", nonmembers), ("population", population)):
        read[role] = (_demo_texts(box, role) if demo and value is None
                      else check_texts(value, role, text_column=text_column))
    if train_samples is not None:
        settings["train_samples"] = check_texts(train_samples, "train_samples", text_column=text_column) or None
    recipe = settings.get("recipe", "sum")
    checked = MlmSettings(k=_k(recipe, settings.get("k")), seed=settings.get("seed", 0),
                          rate=settings.get("rate", MlmSettings.rate), alpha=settings.get("alpha", MlmSettings.alpha),
                          recipe=recipe)
    text_sets(read["members"], read["nonmembers"], read["population"], settings=checked,
              train_samples=settings.get("train_samples"),
              **{k: settings.get(k) for k in ("member_ids", "nonmember_ids", "member_groups", "nonmember_groups",
                                              "population_groups")})
    return MlmRequest(members=read["members"], nonmembers=read["nonmembers"], population=read["population"],
                      model=model, reference=reference, settings=settings, notes=list(notes or []))


def estimate_mlm(request: MlmRequest, *, target=None, reference=None) -> tuple[str, float]:
    """What a masked-LM audit will cost, before it runs: K forward passes of each text through each model (the
    target scores the evaluated texts, the population and any training samples; the reference all but the training
    samples), each pass over the text's tokens (capped at the model's longest input), at this machine's measured speed
    scaled to the model's size (:func:`mia_core.estimate.speed`: a masked LM's pass costs what a causal LM's of its
    size does). Energies already cached are not counted (their key needs the loaded models): a re-run is quicker.

    Parameters
    ----------
    request : MlmRequest
        From :func:`prepare_mlm`.
    target, reference : MaskedLM, optional
        The loaded models (their tokenizer, size and longest input); else their specs' ``config.json`` when they
        are local folders (sizes only; tokens estimated from characters).

    Returns
    -------
    tuple
        ``(line, seconds)``.
    """
    from ..estimate import count_tokens, speed
    from ..formatting import fmt_seconds

    check_request(request, MlmRequest, "prepare_mlm")
    k = request.k
    scored = list(request.members) + list(request.nonmembers) + list(request.population)
    train = list(request.settings.get("train_samples") or [])
    device = request.settings.get("device") or "cpu"
    parts, total, how = [], 0.0, None
    for role, m, texts in (("target", target if target is not None else request.model, scored + train),
                           ("reference", reference if reference is not None else request.reference, scored)):
        tok = getattr(m, "tokenizer", None)
        cap = int(getattr(m, "max_length", None) or 512)
        n_tok = sum(min(cap, count_tokens([t], tok)) for t in texts)
        n_params = getattr(m, "n_params", None) or _spec_params(m)
        per, _, words = speed(n_params, device if device != "auto" else "cpu", None)
        seconds = k * n_tok * per
        total += seconds
        how = words if n_params else words + " (the model's size is not known before it loads: 135M assumed)"
        parts.append(f"the {role}: {len(texts):,} texts × K = {k} masks, about {k * n_tok:,} tokens, about "
                     f"{fmt_seconds(seconds)}")
    return (f"About {fmt_seconds(total)} in all: " + "; ".join(parts) + f" ({how}; energies already cached are not "
            "counted)."), total


def _spec_params(spec) -> int | None:
    """The parameter count a local model folder's ``config.json`` declares (nothing loaded), or None; the embedded
    masked LM and a delta on it (a folder with the proposer's files, as the demo's target) have its encoder's."""
    from pathlib import Path

    if not isinstance(spec, (str, Path)):
        return None
    folder = Path(spec).expanduser()
    if str(spec).strip().lower() == "embedded" or (folder / "proposer.json").is_file():
        try:
            from ..models.proposer import _encoder_folder

            folder = _encoder_folder()
        except Exception:  # noqa: BLE001 - the embedder's package missing: the size is then not known
            return None
    return _folder_params(str(folder))


@lru_cache(maxsize=32)
def _folder_params(folder: str) -> int | None:
    import json
    from pathlib import Path

    from ..models.verify import config_params

    f = Path(folder) / "config.json"
    try:
        if not f.is_file() or f.stat().st_size > 2**20:
            return None
        from types import SimpleNamespace

        return config_params(SimpleNamespace(**json.loads(f.read_text())))
    except (OSError, ValueError, TypeError):
        return None


def _demo_or_none(box: dict | None, key: str):
    """The demo's ``key`` (its target or reference), or a one-line error when the demo is not installed."""
    from ..errors import DataError

    if not box:
        raise DataError("the masked-LM demo is not available in this installation.")
    return box[key]


def execute_mlm(request: MlmRequest, *, progress=None):
    """Run a prepared masked-LM audit: load the models (unless the request holds them), then every stage.

    Parameters
    ----------
    request : MlmRequest
        From :func:`prepare_mlm`.
    progress : callable, optional
        ``progress(message, fraction)``.

    Returns
    -------
    mia_core.mlm.MlmAuditResult
    """
    check_request(request, MlmRequest, "prepare_mlm")
    from .. import mlm  # looked up here: mlm.run_mlm_audit is what is called

    kw = dict(request.settings)
    if progress is not None:
        kw["progress"] = progress
    return mlm.run_mlm_audit(request.members, request.nonmembers, request.population, request.model,
                             request.reference, **kw)


def audit_mlm(members=None, nonmembers=None, population=None, model=None, reference=None, *,
              text_column: str | None = None, dtype: str = "fp32", device: str = "auto", cache: bool = True,
              progress=None, **kwargs):
    """The masked-LM likelihood-ratio audit (Mireshghallah et al. 2022, EMNLP) of ``model`` against ``reference``.

    Parameters
    ----------
    members, nonmembers, population
        Texts as for :func:`mia_core.score` (lists of strings, paths, or pandas DataFrames read by
        ``text_column``); ``population``: known non-members for the thresholds.
    model, reference : str or MaskedLM
        Masked LMs sharing a tokenizer (specs or loaded); keywords, or positional after the three sets.
    text_column : str, optional
        The text column of DataFrames.
    dtype, device, cache, progress
        How the models load, the energy cache, ``progress(message, fraction)``.
    **kwargs
        The other keywords of :func:`mia_core.mlm.run_mlm_audit` (``recipe``, ``k``, ``seed``, ``alpha``, groups,
        ``train_samples``...); each is checked, and an unknown one refused, before anything is read or loaded.

    Returns
    -------
    mia_core.mlm.MlmAuditResult

    References
    ----------
    Mireshghallah, Goyal, Uniyal, Berg-Kirkpatrick & Shokri 2022, "Quantifying Privacy Risks of Masked
    Language Models Using Membership Inference Attacks", EMNLP.
    """
    from ..mlm.audit import run_mlm_audit as declared  # its keywords

    kwargs = check_kwargs("audit_mlm", declared, {"dtype": dtype, "device": device, "cache": cache, **kwargs}, _mlm_checks(),
                     skip=("members", "nonmembers", "population", "target", "reference", "progress"))
    progress = check_callable("progress", progress) if progress is not None else None
    request = prepare_mlm(members, nonmembers, population, model, reference, text_column=text_column, **kwargs)
    return execute_mlm(request, progress=progress)
