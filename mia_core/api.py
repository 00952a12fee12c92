"""The Python API: the engine's audits as functions, for a notebook or a script.

Everything here is exported from ``mia_core`` itself (lazily: ``import mia_core`` stays light)::

    from mia_core import score, audit, plan_run

* :func:`score` -- per-text membership scores of unlabelled texts (no labels, no metrics);
* :func:`audit` -- members vs non-members: scores, AUC and TPR at low FPR with CIs, the blind
  baseline, population thresholds (the CLI's ``mia run``);
* :func:`audit_documents` -- document-level MIA on books (Meeus et al. 2024; ``mia documents``);
* :func:`audit_mlm` -- the masked-LM likelihood ratio (Mireshghallah et al. 2022; ``mia mlm``);
* :func:`infer_dataset` -- was a whole collection used? One p-value (dataset inference, Maini et
  al. 2024; ``mia infer-dataset``);
* :func:`plan_run` -- what a run would do before anything loads: the attacks that can run, those
  skipped and why, the model passes, warnings and the time estimate;
* :func:`load` -- a saved run folder back as the result :func:`audit` returned (``result.save(dir)``).

Models are given as a loaded model or a spec: a hub id, a local folder, ``"smollm2"`` (the
embedded default) or a ``make-target`` folder (``mia_core.models.load_causal_lm``). Bad input
raises a :class:`mia_core.errors.MiaError` subclass with a one-line message before any model pass.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

__all__ = ["RunPlan", "audit", "audit_documents", "audit_mlm", "infer_dataset", "load", "plan_run", "score"]


def _model(spec, *, dtype: str = "auto", device: str = "auto", quantize: str = "none",
           trust_remote_code: bool = False):
    """A loaded causal LM from a spec (None: the embedded default), or the model itself."""
    from .models import LoadedModel, load_causal_lm

    if isinstance(spec, LoadedModel):
        return spec
    return load_causal_lm(spec, dtype=dtype, device=device, quantize=quantize, trust_remote_code=trust_remote_code)


def _texts(texts, what: str) -> list[str]:
    from .errors import DataError

    if texts is None:
        return []
    if isinstance(texts, (str, Path)):
        from .data import read_texts

        return [r.text for r in read_texts(texts)]
    items = list(texts)  # once: a generator is read here, not exhausted by the check below
    if any(not isinstance(t, str) for t in items):
        raise DataError(f"{what}: give texts (strings) or a file path")
    return items


def _config(attacks, params, *, prefix: str, first_token, cache: bool, n_bootstrap: int = 0, seed: int = 0,
            split=None, blind: bool = True, population_alpha: float = 0.1):
    from .attacks import DEFAULT_ATTACKS
    from .pipeline import RunConfig
    from .stats import StatsSettings

    names = list(DEFAULT_ATTACKS) if attacks is None else attacks.split(",") if isinstance(attacks, str) else list(attacks)
    return RunConfig(attacks=names, params=dict(params or {}), stats=StatsSettings(prefix=prefix), use_cache=cache,
                     n_bootstrap=n_bootstrap, seed=seed, split=split, blind=blind, population_alpha=population_alpha,
                     score_first_token=first_token)


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


def plan_run(attacks=None, *, texts: Sequence[str] = (), reference: bool = False, population: Sequence[str] = (),
             labels: bool = False, params: dict | None = None, n_params: float | None = None, device: str = "cpu",
             tokenizer=None, modify_variants: Sequence[str] = (), check_inputs: bool = True) -> RunPlan:
    """What a run of ``attacks`` would do, before any model loads.

    Parameters
    ----------
    attacks : str or list of str, optional
        Attack names, a comma list, or ``"all"`` (every attack the inputs allow; the others are
        skipped with the reason). None: the default list (``mia_core.attacks.default_attacks``).
    texts : list of str
        The texts the run will score (for the estimate; the population counts too).
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

    Returns
    -------
    RunPlan

    Raises
    ------
    SettingsError
        An attack named explicitly that cannot run with these inputs, an unknown attack, or a
        parameter outside its domain (one line).
    """
    from .attacks import REGISTRY, default_attacks
    from .estimate import count_tokens, describe_estimate, estimate_seconds
    from .pipeline import plan_attacks
    from .formatting import fmt_seconds

    params = dict(params or {})
    spec = attacks if attacks is not None else default_attacks(have_reference=bool(reference))
    have = ({"reference"} if reference else set()) | ({"labels"} if labels else set()) | (
        {"population"} if len(population) else set())
    if check_inputs:
        names, skipped = plan_attacks(spec, have=have, params=params)
    else:
        from .pipeline import parse_attacks

        names, skipped = parse_attacks(spec), {}
    needs = {n for a in names for n in REGISTRY[a].needs}
    passes = ["target"] + (["target lower-cased"] if "target_lower" in needs else []) + (
        ["reference"] if "reference" in needs else [])
    warnings: list[str] = []
    texts, pop = list(texts), list(population)
    estimate, seconds = "", None
    if texts:
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
    if "rmia" in names and not REGISTRY["rmia"].kwargs(params).get("references"):
        warnings.append("RMIA with the run's single reference cannot tune a (it needs 3+ make-references models): "
                        "a = 0.3, which ranks like LOSS at language-model likelihoods")
    return RunPlan(attacks=names, skipped=skipped, passes=passes, warnings=warnings, estimate=estimate,
                   seconds=seconds)


def score(texts, model=None, attacks=None, reference=None, *, population=None, params: dict | None = None,
          prefix: str = "auto", first_token: bool | None = None, cache: bool = True, dtype: str = "auto",
          device: str = "auto", progress=None):
    """Membership scores of unlabelled texts, one row per text (higher = more likely a member).

    Parameters
    ----------
    texts : list of str or path
        The texts to score (a path: read as ``mia run`` reads a file).
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

    Returns
    -------
    pandas.DataFrame
        ``text_id``, ``text_hash`` and one column per attack; ``df.attrs["report"]`` holds the notes.

    References
    ----------
    Yeom et al. 2018 (LOSS); Carlini et al. 2021 (zlib, lowercase, reference); Shi et al. 2024
    (Min-K%); Zhang et al. 2024 (Min-K%++); and each attack's citation in ``mia_core.attacks``.
    """
    from .data import Dataset
    from .pipeline import score_texts

    texts = _texts(texts, "texts")
    pop = _texts(population, "population")
    cfg = _config(attacks, params, prefix=prefix, first_token=first_token, cache=cache)
    from .pipeline import check_config

    cfg = check_config(cfg)  # before any model loads
    target = _model(model, dtype=dtype, device=device)
    ref = _model(reference, dtype=dtype, device=device) if reference is not None else None
    population_ds = Dataset(texts=pop, labels=[0] * len(pop), ids=[f"p{i + 1:04d}" for i in range(len(pop))]) \
        if pop else None
    return score_texts(texts, target, reference=ref, config=cfg, population=population_ds,
                       progress=progress or _noop())


def audit(members=None, nonmembers=None, model=None, attacks=None, reference=None, *, labelled=None,
          text_column: str | None = None, label_column: str = "label", population=None,
          params: dict | None = None, split: float | None = None, n_bootstrap: int = 1000, seed: int = 0,
          prefix: str = "auto", first_token: bool | None = None, blind: bool = True, alpha: float = 0.1,
          cache: bool = True, dtype: str = "auto", device: str = "auto", progress=None):
    """Members vs non-members: every attack's scores and metrics (the CLI's ``mia run``).

    Parameters
    ----------
    members, nonmembers : list of str or path
        Texts known to be in (out of) the model's training data.
    labelled : path, optional
        Instead of ``members``/``nonmembers``: one labelled table, the way MIA benchmarks ship them
        (.csv, .tsv, .jsonl, .json, .parquet, .arrow, .feather, a folder written by
        ``datasets.Dataset.save_to_disk``, or ``"hf:ID[:config][@split]"``: a hub dataset's parquet
        conversion, from the local Hugging Face cache when offline), with ``label_column``
        (1 = member) and ``text_column`` (found by itself when None). WikiMIA's jsonl (``input``,
        ``label``) needs nothing more, nor does ``"hf:swj0419/WikiMIA:default@WikiMIA_length32"``.
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
        Bootstrap resamples for the CIs (0: none) and their seed.
    prefix, first_token, cache
        As in :func:`score`.
    blind : bool
        Also train the model-free blind baseline (is there a distribution shift a text classifier sees?).

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
    from .data import Dataset, texts_from_strings
    from .pipeline import check_config, check_population, run_attacks

    if labelled is not None:
        from .data import load_dataset
        from .errors import DataError

        if members is not None or nonmembers is not None:
            raise DataError("give either labelled= or members and non-members, not both")
        ds = load_dataset(labelled=labelled, text_column=text_column, label_column=label_column)
    else:
        ds = texts_from_strings(_texts(members, "members"), _texts(nonmembers, "nonmembers"))
    pop = _texts(population, "population")
    population_ds = Dataset(texts=pop, labels=[0] * len(pop), ids=[f"p{i + 1:04d}" for i in range(len(pop))]) \
        if pop else None
    check_population(population_ds, ds.texts)
    ref_spec = reference
    if ref_spec is None:
        ref_spec = _base_of(model)
    if attacks is None:
        from .attacks import default_attacks

        attacks = default_attacks(have_reference=ref_spec is not None)
    plan = plan_run(attacks, reference=ref_spec is not None, population=pop, labels=bool(split), params=params)
    cfg = check_config(_config(plan.attacks, params, prefix=prefix, first_token=first_token, cache=cache,
                               n_bootstrap=n_bootstrap, seed=seed, split=split, blind=blind, population_alpha=alpha))
    target = _model(model, dtype=dtype, device=device)
    from .pipeline import uses_reference

    ref = _model(ref_spec, dtype=dtype, device=device) if ref_spec is not None and uses_reference(
        plan.attacks, cfg.params) else None
    result = run_attacks(ds, target, reference=ref, config=cfg, population=population_ds, progress=progress or _noop())
    if plan.skipped:
        result.config["skipped"] = plan.skipped
        result.report += [f"skipped {n}: it {why}" for n, why in plan.skipped.items()]
    return result


def _base_of(model):
    """The base of a ``make-target`` folder (its record), else None: nothing is loaded."""
    import json

    from .models import LoadedModel

    if model is None or isinstance(model, LoadedModel):
        return None
    try:
        from .models.causal import TARGET_MARKER, resolve_spec

        ms = resolve_spec(str(model))
        if ms.kind == "target":
            return json.loads((Path(ms.location) / TARGET_MARKER).read_text()).get("base")
    except Exception:  # noqa: BLE001 - an unreadable target is reported when it is loaded
        return None
    return None


def audit_documents(members, nonmembers, model=None, *, reference=None, dtype: str = "auto", device: str = "auto",
                    **kwargs):
    """Document-level membership inference on whole books (Meeus et al. 2024, USENIX Security).

    ``members``/``nonmembers``: lists of :class:`mia_core.documents.Document`, of texts, or of paths
    (files or folders, read as ``mia documents`` reads them). Keyword arguments go to
    :func:`mia_core.documents.run_document_audit` (``normalizations``, ``features``, ``folds``,
    ``n_bins``, ``agg_count``, ``hist_outside``, ``partial_lengths``, ...). Returns its
    ``DocumentAuditResult`` (``.metrics``, ``.scores``, ``.summary_text()``, ``.save(dir)``).

    References
    ----------
    Meeus, Jain, Rei & de Montjoye 2024, "Did the Neurons Read your Book? Document-level Membership
    Inference for Large Language Models", USENIX Security.
    """
    from .documents import run_document_audit

    docs = [_documents(members, "members"), _documents(nonmembers, "nonmembers")]
    lm = _model(model, dtype=dtype, device=device)
    ref = _model(reference, dtype=dtype, device=device) if reference is not None else None
    return run_document_audit(docs[0], docs[1], lm, reference=ref, progress=kwargs.pop("progress", None) or _noop(),
                              **kwargs)


def _documents(items, what: str):
    from .documents import Document, load_documents

    items = list(items) if not isinstance(items, (str, Path)) else [items]
    if all(isinstance(d, Document) for d in items):
        return items
    if all(isinstance(d, (str, Path)) and Path(str(d)).exists() for d in items):
        return load_documents([str(d) for d in items])
    return [Document(name=f"{what[0]}{i + 1:04d}", text=str(t), source=f"{what} text {i + 1}", strip={})
            for i, t in enumerate(items)]


def audit_mlm(members, nonmembers, population, model, reference, **kwargs):
    """The masked-LM likelihood-ratio audit (Mireshghallah et al. 2022, EMNLP) of ``model`` against
    ``reference`` (masked LMs sharing a tokenizer; specs or loaded ``MaskedLM``). ``population``:
    known non-members for the thresholds. Keyword arguments go to :func:`mia_core.mlm.run_mlm_audit`
    (``recipe``, ``k``, ``seed``, ``alpha``, groups...). Returns its ``MlmAuditResult``.

    References
    ----------
    Mireshghallah, Goyal, Uniyal, Berg-Kirkpatrick & Shokri 2022, "Quantifying Privacy Risks of Masked
    Language Models Using Membership Inference Attacks", EMNLP.
    """
    from .mlm import run_mlm_audit

    return run_mlm_audit(_texts(members, "members"), _texts(nonmembers, "nonmembers"),
                         _texts(population, "population"), model, reference, **kwargs)


def infer_dataset(suspect, validation, model=None, reference=None, *, population=None, features="default",
                  alpha: float = 0.01, folds: int = 5, n_permutations: int = 10_000, seed: int = 0,
                  params: dict | None = None, prefix: str = "auto", cache: bool = True, dtype: str = "auto",
                  device: str = "auto", books: bool = False, passage_words: int = 256, max_passages: int = 40,
                  correction: str = "bh", progress=None):
    """Was the suspect collection used to train the model? Dataset inference with a p-value.

    Parameters
    ----------
    suspect : list of str or path
        The texts in question.
    validation : list of str or path
        Texts of the same distribution known not to be trained on (the test's assumption: the two
        sets are exchangeable unless the suspect set was trained on; checked by the IID guard).
    model, reference : LoadedModel or str, optional
        The audited causal LM (None: the embedded SmolLM2-135M) and an optional reference model (adds
        the reference attack as a feature). Loaded only once the model-free checks have passed.
    population : list of str or path, optional
        Known non-members besides the validation set (ReCaLL's prefix feature).
    features : str or list of str
        ``"default"``, ``"all"`` or attack families (``mia_core.dataset_inference.features``).
    alpha : float
        Significance level of the verdict.
    folds, n_permutations, seed
        The cross-fitted permutation test's folds, label permutations and seed.
    books : bool
        ``suspect`` and ``validation`` are books (Documents, texts or paths of files/folders, one book per
        file): each is cut into passages of ``passage_words`` words (at most ``max_passages``), the book is
        the unit of the test, and each suspect book gets its own p-value, adjusted across the books
        (``correction``: ``"bh"`` or ``"holm"``; ``mia_core.dataset_inference.books``).

    Returns
    -------
    mia_core.dataset_inference.DatasetInferenceResult
        ``.summary`` (``p_value``, ``p_value_ttest``, ``verdict``: ``used`` / ``not_shown`` /
        ``refused``, ``blind_auc``, ``null_p_value``, ``weights`` ...), ``.scores``, ``.save(dir)``.

    References
    ----------
    Maini, Jia, Papernot & Dziedzic 2024, "LLM Dataset Inference: Did you train on my dataset?",
    NeurIPS. Phipson & Smyth 2010, "Permutation P-values Should Never Be Zero".
    """
    from .dataset_inference import run_dataset_inference

    if books:
        from .dataset_inference.books import run_book_inference

        return run_book_inference(
            _documents(suspect, "suspect"), _documents(validation, "validation"), model, reference=reference,
            features=features, alpha=alpha, folds=folds, n_permutations=n_permutations, seed=seed, params=params,
            prefix=prefix, use_cache=cache, passage_words=passage_words, max_passages=max_passages,
            correction=correction, load=lambda spec: _model(spec, dtype=dtype, device=device), progress=progress)
    return run_dataset_inference(
        _texts(suspect, "suspect"), _texts(validation, "validation"), model, reference=reference,
        population=_texts(population, "population"), features=features, alpha=alpha, folds=folds,
        n_permutations=n_permutations, seed=seed, params=params, prefix=prefix, use_cache=cache,
        load=lambda spec: _model(spec, dtype=dtype, device=device), progress=progress)


def load(path):
    """A saved run folder read back, as the dashboard's run store reads its runs.

    Parameters
    ----------
    path : str or Path
        A folder written by ``result.save(dir)``, ``mia run --out`` or the run store.

    Returns
    -------
    mia_core.runs.StoredRun
        The :class:`mia_core.pipeline.RunResult` it was (``.scores``, ``.metrics``, ``.config``,
        ``.models``, ``.timings``, ``.shift``, ``.report``...), plus ``.id`` (the folder's name),
        ``.meta`` (its ``meta.json`` when the run store wrote it, else ``{}``) and ``.path``.

    Raises
    ------
    DataError
        One line, for a folder that holds no saved run (document and masked-LM folders are not read
        back yet) or a damaged one: a file a link, not JSON, or of another shape than a run's.
    """
    from .runs import read_run

    return read_run(path)


def _noop():
    from .progress import noop

    return noop
