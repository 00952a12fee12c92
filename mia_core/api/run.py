"""``score`` and ``audit``: the members-vs-non-members run's entries in the API, each built through the one front
door (:mod:`mia_core.api.request`); ``plan_run`` (what a run would do) is :mod:`mia_core.api.plan`'s."""
from __future__ import annotations

import numbers

from ..errors import DataError
from ..inputs import (
    check_callable, check_column, check_device, check_dtype, check_mapping, check_model_spec, check_names,
    noop_progress, check_path_or_frame, check_texts
)
from .plan import RunPlan, plan_run  # noqa: F401 - plan_run and RunPlan were here: mia_core.api.run.plan_run works


def score(texts, model=None, attacks=None, reference=None, *, population=None, params: dict | None = None,
          prefix: str = "auto", first_token: bool | None = None, cache: bool = True, dtype: str = "auto",
          device: str = "auto", progress=None, text_column: str | None = None):
    """Membership scores of unlabelled texts, one row per text (higher = more likely a member).

    Parameters
    ----------
    texts : list of str, path or DataFrame
        The texts to score (a path: read as ``mia run`` reads a file; a pandas DataFrame or Series: its
        text column, ``text_column`` or found as in a .csv file; a column that holds numbers, lists or
        anything but strings is refused).
    model : LoadedModel or str, optional
        The audited causal LM or its spec; None: the embedded SmolLM2-135M.
    attacks : str or list of str, optional
        Attack names (None: ``mia_core.attacks.DEFAULT_ATTACKS``, the one-pass attacks LOSS, zlib, Min-K%,
        Min-K%++; ``ref`` is not added for a reference given). Attacks that learn
        from labels (SMIA) cannot run without labels; ``ref`` needs ``reference``; ReCaLL and RMIA need
        ``population``.
    reference : LoadedModel or str, optional
        The reference model (for ``ref``, offline ``rmia``).
    population : list of str, optional
        Known non-members, disjoint from ``texts``.
    params : dict, optional
        ``{attack: {name: value}}`` (``python -m mia_core run --list-params`` lists them).
    prefix : {"auto", "always", "none"}
        What is put in front of every text: ``"auto"`` scores texts as the model saw them in training
        (the tokenizer's own BOS, or nothing for GPT-2-style tokenizers).
    first_token : bool, optional
        Force the first text token in or out of the scored tokens (None: from ``prefix``).
    cache : bool
        Read and write the on-disk statistics cache.
    text_column : str, optional
        The text column of a table (file or DataFrame) given as ``texts`` or ``population``.

    Raises
    ------
    SettingsError
        A setting of the wrong type or out of range: one line naming the parameter, before anything is
        read or loaded.
    DataError
        Texts that are not texts (a list holding a non-string, a column of numbers or lists, a missing
        file): one line naming the parameter or the file.

    Returns
    -------
    pandas.DataFrame
        ``text_id``, ``text_hash`` and one column per attack; ``df.attrs["report"]`` holds the notes.

    References
    ----------
    Yeom et al. 2018 (LOSS); Carlini et al. 2021 (zlib, lowercase, reference); Shi et al. 2024
    (Min-K%); Zhang et al. 2024 (Min-K%++); and each attack's citation in ``mia_core.attacks``.
    """
    from ..attacks import DEFAULT_ATTACKS
    from ..pipeline import RunConfig, check_config, score_texts
    from ..stats import StatsSettings
    from .request import RunRequest, load_models, population_set

    model, reference = check_model_spec("model", model), check_model_spec("reference", reference)
    attacks, params = check_names("attacks", attacks), check_mapping("params", params)
    from ..pipeline.options import RunOptions

    o = RunOptions.check_some(prefix=prefix, first_token=first_token, cache=cache)  # the run's declared options
    prefix, first_token, cache = o["prefix"], o["first_token"], o["cache"]
    dtype, device = check_dtype(dtype), check_device(device)
    progress, text_column = check_callable("progress", progress), check_column("text_column", text_column)
    texts = check_texts(texts, "texts", text_column=text_column)
    if not texts:
        raise DataError("texts: no texts to score (an empty list)")  # score()'s own parameter: no flag, no widget
    pop = population_set(texts=check_texts(population, "population", text_column=text_column))
    names = list(DEFAULT_ATTACKS) if attacks is None else attacks.split(",") if isinstance(attacks, str) else attacks
    cfg = check_config(RunConfig(attacks=[n.strip() for n in names if n.strip()], params=dict(params or {}),
                                 stats=StatsSettings(prefix=prefix), use_cache=cache, n_bootstrap=0, seed=0,
                                 score_first_token=first_token))  # before any model
    request = RunRequest(data=None, model=model, config=cfg, reference=reference,
                         load={"dtype": dtype, "device": device})
    target, ref = load_models(request)
    return score_texts(texts, target, reference=ref, config=cfg, population=pop, progress=progress or noop_progress())


def audit(members=None, nonmembers=None, model=None, attacks=None, reference=None, *, labelled=None,
          text_column: str | None = None, label_column: str = "label", population=None,
          params: dict | None = None, split: float | None = None, n_bootstrap: int = 1000, seed: int = 0,
          prefix: str = "auto", first_token: bool | None = None, blind: bool = True, alpha: float = 0.1,
          cache: bool = True, dtype: str = "auto", device: str = "auto", progress=None):
    """Members vs non-members: every attack's scores and metrics (the CLI's ``mia run``).

    Parameters
    ----------
    members, nonmembers : list of str, path or DataFrame
        Texts known to be in (out of) the model's training data (a pandas DataFrame or Series: its text
        column, ``text_column`` or found as in a .csv file).
    labelled : path or DataFrame, optional
        Instead of ``members``/``nonmembers``: one labelled table, the way MIA benchmarks ship them
        (.csv, .tsv, .jsonl, .json, .parquet, .arrow, .feather, a folder written by
        ``datasets.Dataset.save_to_disk``, or ``"hf:ID[:config][@split]"``: a hub dataset's parquet
        conversion, from the local Hugging Face cache when offline), with ``label_column``
        (1 = member) and ``text_column`` (found by itself when None). WikiMIA's jsonl (``input``,
        ``label``) needs nothing more, nor does ``"hf:swj0419/WikiMIA:default@WikiMIA_length32"``. A pandas
        DataFrame is read the same way (its text and label columns).
    model : LoadedModel or str, optional
        The audited causal LM or its spec; None: the embedded SmolLM2-135M.
    attacks : str or list of str, optional
        Attack names, a comma list, or ``"all"``; None: the default list (the reference attack
        included when a reference is given).
    reference : LoadedModel or str, optional
        The reference model; for a ``make-target`` folder its base is used when none is given.
    population : list of str or path, optional
        Known non-members, disjoint from the audited texts: the threshold at ``alpha`` FPR, ReCaLL's
        prefix, RMIA's z.
    params : dict, optional
        ``{attack: {name: value}}``.
    split : float, optional
        Share of the labelled texts that attacks which learn (SMIA) train on; every attack is then
        reported on the held-out rest.
    n_bootstrap, seed : int
        Bootstrap resamples for the CIs (0: none; at most 1,000,000) and their seed.
    prefix, first_token, cache
        As in :func:`score`.
    blind : bool
        Also train the model-free blind baseline (is there a distribution shift a text classifier sees?).
    alpha : float
        The population threshold's false-positive rate, in (0, 1).

    Raises
    ------
    SettingsError
        A setting of the wrong type or out of range: one line naming the parameter, before anything is
        read or loaded.
    DataError
        Texts that are not texts (a list holding a non-string, a column of numbers or lists, a missing
        file): one line naming the parameter or the file.

    Returns
    -------
    mia_core.pipeline.RunResult
        ``.scores`` (DataFrame), ``.metrics`` (``{attack: {"auc", "auc_ci", "tpr_at_fpr", ...}}``),
        ``.summary_text()``, ``.save(dir)``; :func:`load` reads it back.

    References
    ----------
    AUC and TPR at low FPR: Carlini et al. 2022, "Membership Inference Attacks From First Principles".
    The blind baseline: Das et al. 2024, "Blind Baselines Beat Membership Inference Attacks for
    Foundation Models".
    """
    from .request import execute_run, population_set, prepare_run

    model, reference = check_model_spec("model", model), check_model_spec("reference", reference)
    attacks, params = check_names("attacks", attacks), check_mapping("params", params)
    text_column = check_column("text_column", text_column)
    settings = _audit_settings(split=split, n_bootstrap=n_bootstrap, seed=seed, prefix=prefix, first_token=first_token,
                               blind=blind, alpha=alpha, cache=cache, dtype=dtype, device=device)
    progress = check_callable("progress", progress)
    ds = _audit_data(members, nonmembers, labelled, text_column=text_column,
                     label_column=check_column("label_column", label_column, optional=False))
    request = prepare_run(ds, model=model, reference=reference, attacks=attacks, params=params,
                          population=population_set(texts=check_texts(population, "population", text_column=text_column)),
                          **settings)
    return execute_run(request, progress=progress or noop_progress())


def _audit_settings(*, split, n_bootstrap, seed, prefix, first_token, blind, alpha, cache, dtype, device) -> dict:
    """:func:`audit`'s run settings checked (one line naming a wrong one), as :func:`prepare_run` takes them."""
    from ..pipeline.options import RunOptions

    no_split = isinstance(split, numbers.Real) and not isinstance(split, bool) and split == 0  # 0: no split
    given = {"split": None if no_split else split, "n_bootstrap": n_bootstrap, "seed": seed, "prefix": prefix,
             "first_token": first_token, "blind": blind, "alpha": alpha, "cache": cache}
    o = RunOptions.check(caller="audit", **given)  # the run's declared options
    return {**{k: getattr(o, k) for k in given}, "dtype": check_dtype(dtype), "device": check_device(device)}


def _audit_data(members, nonmembers, labelled, *, text_column, label_column):
    """:func:`audit`'s members and non-members: one labelled table, or the two sets (texts, paths, DataFrames)."""
    from ..data import load_dataset, texts_from_strings

    labelled = check_path_or_frame("labelled", labelled)
    if labelled is not None:
        if members is not None or nonmembers is not None:
            raise DataError("give either labelled= or members and non-members, not both")
        return load_dataset(labelled=labelled, text_column=text_column, label_column=label_column)
    return texts_from_strings(check_texts(members, "members", text_column=text_column),
                              check_texts(nonmembers, "nonmembers", text_column=text_column))
