"""The logic behind the "Calibration run" page: read and validate the inputs, build the run, and
the job that runs it in the background and saves it to the run store.

Every check here runs *before* the long job starts, and each kind of bad input gets its own
message: nothing uploaded, empty or binary files (``mia_core.api.data``), no members / no
non-members, a text in both sets, too few texts for the blind baseline or a split, texts too
short to score, a reference attack without a reference model, parameters out of range.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mia_core.attacks import REGISTRY, check_params
from mia_core.api.data import Dataset, load_dataset, read_population, texts_from_strings
from mia_core.errors import DataError, SettingsError

UPLOAD_TYPES = ["txt", "text", "md", "csv", "tsv", "jsonl", "json", "parquet", "arrow", "feather", "zip"]
MIN_WORDS = 3  # texts shorter than this are flagged as too short to say much


@dataclass
class CalibrationInputs:
    dataset: Dataset
    population: Dataset | None
    data_info: dict
    notes: list[str] = field(default_factory=list)


def learning_attacks(names) -> list[str]:
    """Attacks that learn from labelled texts (they need a train/evaluation split)."""
    return [n for n in names if REGISTRY[n].prepare is not None and "labels" in REGISTRY[n].needs]



def read_inputs(source: str, *, demo: dict | None = None, members=None, nonmembers=None, mode: str = "auto",
                population=None, members_text: str = "", nonmembers_text: str = "") -> CalibrationInputs:
    """Members, non-members (and a population set) from the demo, a controlled experiment's split, uploads or
    paste boxes. ``demo``: the files of the demo, or of the split (``source="controlled"``: the paths the
    Controlled experiment page wrote, one text per line)."""
    if source in ("demo", "controlled"):
        if not demo:
            raise DataError("the demo set is not available in this installation." if source == "demo" else
                            "no controlled experiment in this session: build a target on that page first.")
        ds = load_dataset(members=demo["members"], nonmembers=demo["nonmembers"], mode="lines")
        pop = (read_population(demo["population"], mode="lines", dedupe=False, as_dataset=True)
               if demo.get("population") else None)
        info = {"source": "bundled demo set" if source == "demo" else "controlled experiment split",
                "members file": str(demo["members"]).rsplit("/", 1)[-1],
                "non-members file": str(demo["nonmembers"]).rsplit("/", 1)[-1]}
    elif source == "upload":
        if not members:
            raise DataError("no members file uploaded: add the texts believed to be in the training data.")
        if not nonmembers:
            raise DataError("no non-members file uploaded: add texts known not to be in the training data.")
        ds = load_dataset(members=list(members), nonmembers=list(nonmembers), mode=mode)
        pop = read_population(list(population), mode=mode, dedupe=False, as_dataset=True) if population else None
        info = {"source": "uploaded files", "members files": [f.name for f in members],
                "non-members files": [f.name for f in nonmembers]}
        if pop is not None:
            info["population files"] = [f.name for f in population]
    elif source == "paste":
        if not (members_text or "").strip():
            raise DataError("no member texts pasted: put one text per line (or blank-line-separated paragraphs).")
        if not (nonmembers_text or "").strip():
            raise DataError("no non-member texts pasted: put one text per line (or blank-line-separated paragraphs).")
        ds = texts_from_strings(members_text, nonmembers_text)
        pop = None
        info = {"source": "pasted texts"}
    else:  # pragma: no cover - the page offers only the three
        raise SettingsError(f"unknown data source {source!r}")
    if pop is not None:
        overlap = set(pop.texts) & set(ds.texts)
        if overlap:
            raise DataError(f"{len(overlap)} population text(s) also appear among the members or non-members; "
                            "the population must be disjoint from both.")
    notes = list(ds.report)
    for lab, role in ((1, "members"), (0, "non-members")):
        texts = [t for t, y in zip(ds.texts, ds.labels) if y == lab]
        short = sum(1 for t in texts if len(t.split()) < MIN_WORDS)
        if short == len(texts):
            raise DataError(f"every one of the {role} is shorter than {MIN_WORDS} words: too short to score. "
                            "Give sentences or paragraphs.")
        if short:
            notes.append(f"{role}: {short} text(s) shorter than {MIN_WORDS} words; their scores are very noisy.")
    info.update({"members": ds.n_members, "non-members": ds.n_nonmembers,
                 "mean words per text": round(float(np.mean([len(t.split()) for t in ds.texts])), 1)})
    return CalibrationInputs(ds, pop, info, notes)


def build_request(attacks, params: dict, *, split: float | None, n_bootstrap: int, seed: int,
                  context: int | None, blind: bool, dataset: Dataset, reference, population: Dataset | None = None,
                  model=None, first_token: bool | None = None, quantize: str = "none", modify=None):
    """The page's run through the front door (:func:`mia_core.api.request.prepare_run`, as the CLI's ``mia run``
    and :func:`mia_core.audit` build theirs), after the page's own checks in its own words; a
    :class:`~mia_core.api.request.RunRequest` or a clear one-line error, before any model loads.

    ``reference``: the reference model, or anything not None when one will be loaded (the page checks before
    loading models); ``model``: the target (a loaded model or its spec), for a ``make-target`` folder's base;
    ``first_token``: True scores each text's first token, None as the model was trained; ``modify``: the
    one-word modifications of the members to evaluate too (SMIA §5.2). An attack that compares the two models
    token by token (WBC) is skipped with a note, not refused, when the reference's tokenizer turns out to differ:
    the page ticks it with every reference, before either model is loaded."""
    from mia_core.api.request import prepare_run

    attacks = list(attacks)
    if not attacks:
        raise SettingsError("choose at least one attack.")
    unknown = [a for a in attacks if a not in REGISTRY]
    if unknown:
        raise SettingsError(f"unknown attack(s): {', '.join(unknown)}.")
    # every parameter in its declared domain, the same check as the CLI's and the API's
    params = check_params({a: p for a, p in params.items() if a in attacks})
    needs_ref = [REGISTRY[a].label for a in attacks if "reference" in REGISTRY[a].inputs_needed(params.get(a))]
    if needs_ref and reference is None:
        raise SettingsError(f"{', '.join(needs_ref)} needs a reference model: choose one in the sidebar "
                            "(for a fine-tuned target, its base model), or untick the attack.")
    needs_pop = [REGISTRY[a].label for a in attacks if "population" in REGISTRY[a].inputs_needed(params.get(a))]
    if needs_pop and (population is None or not len(population)):
        raise SettingsError(f"{', '.join(needs_pop)} needs known non-member texts: upload them under "
                            "'Population set', or untick the attack.")
    learns = learning_attacks(attacks)
    if learns:
        if split is None or not 0 < split < 1:
            raise SettingsError(f"{', '.join(REGISTRY[a].label for a in learns)} learns from labelled texts: "
                                "set a train/evaluation split between 0 and 1.")
        if dataset.n_members < 4 or dataset.n_nonmembers < 4:
            raise DataError("a train/evaluation split needs at least 4 members and 4 non-members.")
    else:
        split = None
    if blind and (dataset.n_members < 2 or dataset.n_nonmembers < 2):
        raise DataError("the blind baseline needs at least 2 members and 2 non-members: add texts, "
                        "or switch the blind baseline off under Advanced.")
    if n_bootstrap < 0:
        raise SettingsError("the number of bootstrap resamples cannot be negative.")
    if context is not None and context < 16:
        raise SettingsError("the context window must be at least 16 tokens (0 = the model's default).")
    return prepare_run(dataset, model=model, reference=reference, attacks=attacks, params=params,
                       population=population, split=split, context=context, first_token=first_token,
                       n_bootstrap=int(n_bootstrap), seed=int(seed), blind=bool(blind), quantize=quantize,
                       modify=modify, optional=[a for a in attacks if REGISTRY[a].one_tokenizer])


def build_config(attacks, params: dict, **settings):
    """The checked configuration of :func:`build_request` (same arguments): a
    :class:`mia_core.pipeline.RunConfig` or a clear one-line error."""
    return build_request(attacks, params, **settings).config


def run_estimate(inputs: CalibrationInputs, attacks, params: dict, *, n_params: float | None = None,
                 device: str = "cpu", tokenizer=None, modify_variants=(), target=None, reference=None,
                 context: int | None = None) -> str:
    """The line shown before Run: the texts the cache lacks x passes x this machine's measured speed, from the
    one plan the CLI and the API make (``mia_core.api.plan_run``). ``target``/``reference``: the loaded models
    (None when not loaded yet: the line then says it does not know the cache); ``context``: the run's window
    (None: the default), part of the cache key."""
    plan = _plan(inputs, attacks, params, n_params=n_params, device=device, tokenizer=tokenizer,
                 modify_variants=modify_variants, target=target, reference=reference, context=context)
    return plan.estimate if plan is not None else ""


def run_expected(inputs: CalibrationInputs, attacks, params: dict, *, modify_variants=(), target=None,
                 reference=None, context: int | None = None) -> dict | None:
    """What the run is expected to take, for the job (``dashboard.jobs.Job.expected``): the estimate's seconds in
    all, those of the passes over the audited texts and how many of them have texts to score (the loaded models
    check the cache). None when there is nothing to estimate."""
    plan = _plan(inputs, attacks, params, modify_variants=modify_variants, target=target, reference=reference,
                 context=context, device=getattr(target, "device", "cpu") or "cpu")
    if plan is None or not plan.seconds:
        return None
    return {"seconds": plan.seconds, "pass_seconds": plan.pass_seconds, "passes": plan.todo_passes}


def _plan(inputs: CalibrationInputs, attacks, params: dict, *, n_params: float | None = None, device: str = "cpu",
          tokenizer=None, modify_variants=(), target=None, reference=None, context: int | None = None):
    """The one plan the CLI and the API make (``mia_core.api.plan_run``) for these inputs; None without attacks."""
    from mia_core.api import plan_run
    from mia_core.stats import StatsSettings

    attacks = [a for a in attacks if a in REGISTRY]
    if not attacks:
        return None
    pop = list(inputs.population.texts) if inputs.population is not None else []
    # the estimate covers what was ticked: the inputs are checked when Run is pressed (build_request)
    return plan_run(attacks, texts=list(inputs.dataset.texts), population=pop, params=params, n_params=n_params,
                    device=device, tokenizer=tokenizer, modify_variants=modify_variants, check_inputs=False,
                    target_model=target, reference_model=reference, settings=StatsSettings(context=context or None))


def make_job(request, inputs: CalibrationInputs, target, reference, *, name: str | None = None):
    """The background work: the request's passes (:func:`mia_core.api.request.execute_run` on the models the page
    loaded), the modified members it asks for (:func:`mia_core.api.request.execute_modified`, SMIA §5.2), and the
    run saved.

    Returns a function ``work(progress) -> {"id": run id, "unchanged": bool}`` for
    ``dashboard.jobs.JobRegistry.start`` (``unchanged``: a re-run identical to the newest saved run, which
    is then not saved again: ``mia_core.runs.save_run``).
    """
    from mia_core import runs
    from mia_core.api.request import execute_modified, execute_run

    def work(progress):
        result = execute_run(request, target=target, reference=reference, progress=progress,
                             partial=getattr(progress, "partial", None))
        result.report = list(dict.fromkeys(inputs.notes + list(result.report)))
        if request.modify:  # the blind baseline does not change with one-word edits worth re-running per variant
            result.extra["modified"] = execute_modified(request, target, reference, progress=progress,
                                                        verbatim=result.metrics, blind=False)
        stored = runs.save_run(result, name=name or None, data=inputs.data_info)
        return {"id": stored.id, "unchanged": bool(stored.meta.get("unchanged"))}

    return work


def model_line(use_demo_models: bool, panel) -> str:
    """The line beside Run: the model the run tests and its reference, in words, before anything loads (issue 53:
    with the demo's models the sidebar's model is not the one tested)."""
    if use_demo_models:
        return ("**Model tested:** the demo target (SmolLM2-135M fine-tuned on the demo's members), not the sidebar's "
                "model. **Reference:** its base, SmolLM2-135M.")
    from mia_core.api.request import reference_spec

    target = panel.target_spec
    tested = "the embedded SmolLM2-135M" if target in (None, "", "smollm2") else f"{target}"
    ref = panel.reference_spec
    base = None if ref or target in (None, "") else reference_spec(target)  # a make-target folder's base
    return (f"**Model tested:** {tested} (the sidebar's model). **Reference:** "
            + (f"{ref}." if ref else f"its base, {base}." if base else
               "none (the attacks that need one cannot run)."))


SIG_WORDS = {"data": "the data", "model": "the model", "settings": "the attacks or settings"}


def input_signature(*, source: str, members, nonmembers, population, members_text: str, nonmembers_text: str,
                    mode: str, demo_population: bool, use_demo_models: bool, panel, attacks, params: dict,
                    settings: tuple) -> dict:
    """What a calibration result depends on, in three parts (``data``, ``model``, ``settings``;
    :func:`dashboard.stale.signature`: uploads by name, size and upload id, long pasted texts by their hash, nothing
    read): a result whose signature is not the page's came from other inputs (issue 53 item 3; its parts in words:
    :data:`SIG_WORDS`)."""
    from .stale import signature

    model = ("demo",) if use_demo_models else (panel.target_spec, panel.reference_spec, panel.dtype, panel.quantize)
    return signature(data=(source, members, nonmembers, population, mode, bool(demo_population), members_text,
                           nonmembers_text),
                     model=model, settings=(tuple(attacks), params, settings))

