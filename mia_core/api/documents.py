"""The document-level audit's front door (Meeus et al. 2024), and ``audit_documents``, its entry in the API.

:func:`prepare_documents` does everything that needs no model, the same way for the CLI (``mia documents``), the
API (:func:`audit_documents`) and the dashboard's Document audit page: it resolves the model specs (the demo
target for the bundled demo), reads the books (or takes them as given), checks every setting
(:func:`mia_core.documents.stages.check_settings`) and the books (:func:`~mia_core.documents.stages.document_set`:
overlap, enough books for the folds, the partial-document settings), and returns a :class:`DocumentRequest`;
:func:`execute_documents` then loads the models and runs the stages. The masked-LM audit's front door is
:mod:`mia_core.api.mlm`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import DataError, SettingsError

from ..inputs import (
    check_flag, check_callable, check_choice, check_column, check_device, check_documents, check_dtype,
    check_model_spec, check_request
)
from ..neighbours.base import DEFAULT_GENERATOR  # noqa: F401 - the CLI's default neighbour generator
# the declared options (the page's widgets read them) and the share of the progress the books' pass reports
from ..documents.options import PASS_SHARE, DocumentOptions  # noqa: F401



def _options(settings: dict, *, cache=None, caller: str = "prepare_documents"):
    """``settings`` (keywords of :func:`mia_core.documents.run_document_audit`) checked by the declared options
    (:class:`mia_core.documents.options.DocumentOptions`: an unknown one, or a value outside its domain, is one line
    naming it); ``cache`` (when given) is the statistics cache's switch. Returns ``(options, the given settings
    coerced)``."""
    if cache is not None:
        settings = {**settings, "use_cache": cache}
    options = DocumentOptions.check(caller=caller, **settings)
    return options, {k: getattr(options, k) for k in settings}


@dataclass
class DocumentRequest:
    """A checked document audit: everything :func:`execute_documents` needs, nothing loaded yet.

    Attributes
    ----------
    members, nonmembers : list of mia_core.documents.Document
        The books, read.
    model, reference : str or LoadedModel or None
        The target's spec (None: the embedded SmolLM2; the demo target with ``demo``) and the reference's.
    settings : dict
        The keywords of :func:`mia_core.documents.run_document_audit`, checked (``use_cache`` for the cache).
    load : dict
        How the models load: ``dtype``, ``device``, ``quantize``, ``trust_remote_code``, ``reference_dtype``.
    """

    members: list
    nonmembers: list
    model: object = None
    reference: object = None
    settings: dict = field(default_factory=dict)
    load: dict = field(default_factory=dict)

    @property
    def n_stripped(self) -> int:
        """Books whose Project Gutenberg header or footer was removed."""
        return sum(1 for d in self.members + self.nonmembers if (d.strip or {}).get("stripped"))

    @property
    def reading_notes(self) -> list[str]:
        """What reading the books noted (e.g. a book read as Windows-1252)."""
        return [n for d in self.members + self.nonmembers for n in ((d.strip or {}).get("notes") or [])]


def check_document_settings(**settings):
    """A document audit's settings checked, nothing read or loaded (what :func:`prepare_documents` checks first).

    Parameters
    ----------
    **settings
        Keywords of :func:`mia_core.documents.run_document_audit` (``normalizations``, ``features``, ``context``...).

    Returns
    -------
    mia_core.documents.stages.DocumentOptions

    Raises
    ------
    SettingsError
        A wrong type or value, an unknown normalisation or feature extractor, an unknown keyword.
    """
    return _options(settings, caller="check_document_settings")[0]


def read_documents(files, *, strip: bool = True) -> list:
    """Books from folders, .zip or .txt files (paths or uploads), as ``mia documents --members`` reads them.

    Parameters
    ----------
    files : path or upload, or a list of them
        What to read (:func:`mia_core.documents.load_documents`).
    strip : bool
        Remove Project Gutenberg headers and footers.

    Returns
    -------
    list of mia_core.documents.Document
    """
    from ..documents import load_documents

    return load_documents(files, strip=strip)


def document_demo() -> dict | None:
    """The bundled demo's files (``mia_core.targets.demo.installed_demo``: its ``target`` among them), or None.

    Returns
    -------
    dict or None
    """
    from ..targets.demo import installed_demo

    return installed_demo()


def document_choices() -> dict:
    """What a front end offers for a document audit: the defaults and the normalisations' labels.

    Returns
    -------
    dict
        ``context``, ``n_bins``, ``partial_lengths`` (the defaults) and ``normalizations`` (``{name: label}``,
        §4.2, in the paper's order).
    """
    from ..documents import DEFAULT_BINS, DEFAULT_CONTEXT, DEFAULT_LENGTHS, NORMALIZATIONS
    from ..documents.normalization import LABELS

    return {"context": DEFAULT_CONTEXT, "n_bins": DEFAULT_BINS, "partial_lengths": DEFAULT_LENGTHS,
            "normalizations": {n: LABELS.get(n, n) for n in NORMALIZATIONS}}


def pipeline_words(name: str) -> str:
    """A document pipeline by the paper's names: ``"rationorm_tf+agg"`` -> ``"RatioNormTF + AggFE"``
    (:func:`mia_core.documents.normalization.pipeline_words`)."""
    from ..documents.normalization import pipeline_words as words

    return words(name)


def _check_files(files, name: str) -> None:
    """``files`` (``member_files``, ``nonmember_files``) is a path, an upload (``name`` and ``getvalue()``) or a list
    of them: one line naming ``name`` otherwise, before anything is read."""
    import os

    from ..inputs import bad_value

    def readable(f) -> bool:
        return isinstance(f, (str, os.PathLike)) or (hasattr(f, "getvalue") and isinstance(getattr(f, "name", None),
                                                                                             str))

    items = files if isinstance(files, (list, tuple)) else [files]
    bad = next((f for f in items if not readable(f)), None) if files else None
    if bad is not None:
        raise bad_value(name, "folders, .zip or .txt files (paths) or uploaded files (with name and getvalue()), in a list",
                   bad, DataError)


def _books(value, files, what: str, *, strip: bool, text_column: str | None):
    """Books given (Documents, texts, paths, a DataFrame: the API's reading), or ``files`` read by
    :func:`read_documents`."""
    if files:
        return read_documents(files, strip=strip)
    return check_documents(value, what, text_column=text_column)


def prepare_documents(members=None, nonmembers=None, *, model=None, reference=None, demo: bool = False,
                      member_files=None, nonmember_files=None, strip: bool = True, text_column: str | None = None,
                      dtype: str = "auto", device: str = "auto", quantize: str = "none",
                      trust_remote_code: bool = False, reference_dtype: str | None = None, cache: bool = True,
                      **settings) -> DocumentRequest:
    """Everything a document audit needs, checked before any model loads.

    Parameters
    ----------
    members, nonmembers
        Lists of :class:`mia_core.documents.Document`, of texts, or of paths (all of one kind), or a pandas
        DataFrame (one book per row of ``text_column``).
    model, reference : str or LoadedModel, optional
        The target (None: the embedded SmolLM2, or the demo target with ``demo``) and the reference-model
        baseline's reference.
    demo : bool
        The bundled demo's 20 member and 20 non-member documents (and its target unless ``model`` names another).
    member_files, nonmember_files : list, optional
        Folders, .zip or .txt files (paths or uploads) read as ``mia documents --members`` reads them
        (:func:`read_documents`), instead of ``members`` / ``nonmembers``.
    strip : bool
        Remove Project Gutenberg headers and footers from the books read from ``*_files``.
    text_column : str, optional
        The text column of DataFrames.
    dtype, device, quantize, trust_remote_code
        How the target loads (:func:`mia_core.models.load_causal_lm`).
    reference_dtype : str, optional
        The reference's dtype (None: ``dtype``).
    cache : bool
        Read and write the statistics cache.
    **settings
        The keywords of :func:`mia_core.documents.run_document_audit` (``context``, ``normalizations``,
        ``features``, ``folds``, ``n_bins``, ``partial_lengths``...), each checked; an unknown one is refused.

    Returns
    -------
    DocumentRequest

    Raises
    ------
    SettingsError, DataError
        A wrong type or value, an unknown keyword, a book in both sets, too few books for the folds.
    """
    from ..documents.stages import document_set
    from ..models.causal import QUANTIZE

    model, reference = check_model_spec("model", model), check_model_spec("reference", reference)
    dtype, device, text_column = check_dtype(dtype), check_device(device), check_column("text_column", text_column)
    quantize, trust_remote_code = check_choice("quantize", quantize, QUANTIZE), check_flag("trust_remote_code", trust_remote_code)
    if check_flag("demo", demo) and any(x is not None for x in (members, nonmembers, member_files, nonmember_files)):
        raise SettingsError("the demo brings its own members and non-members; do not give them too")
    options, settings = _options(settings, cache=check_flag("cache", cache))
    if demo:
        from ..targets.demo import demo_paths
        from ..documents import demo_documents

        docs = list(demo_documents())
        if model in (None, "smollm2"):
            model = str(demo_paths()["target"])
    else:
        _check_files(member_files, "member_files")
        _check_files(nonmember_files, "nonmember_files")
        docs = [_books(members, member_files, "members", strip=strip, text_column=text_column),
                _books(nonmembers, nonmember_files, "nonmembers", strip=strip, text_column=text_column)]
    document_set(docs[0], docs[1], options)
    return DocumentRequest(members=docs[0], nonmembers=docs[1], model=model, reference=reference, settings=settings,
                           load={"dtype": dtype, "device": device, "quantize": quantize,
                                 "trust_remote_code": trust_remote_code,
                                 "reference_dtype": dtype if reference_dtype is None else reference_dtype})


def load_document_models(request: DocumentRequest):
    """The target and (when given) the reference of ``request``, loaded (or as given).

    Returns
    -------
    tuple
        ``(target, reference)``; ``reference`` is None when the request has none.
    """
    from .. import models  # looked up here: models.load_causal_lm is what loads

    def load(spec, **kw):
        if isinstance(spec, models.LoadedModel):
            return spec
        return models.load_causal_lm(spec, device=request.load.get("device", "auto"),
                                     trust_remote_code=request.load.get("trust_remote_code", False), **kw)

    target = load(request.model, dtype=request.load.get("dtype", "auto"), quantize=request.load.get("quantize", "none"))
    reference = None
    if request.reference is not None:
        reference = load(request.reference, dtype=request.load.get("reference_dtype", "auto"))
    return target, reference


def execute_documents(request: DocumentRequest, *, target=None, reference=None, progress=None):
    """Run a prepared document audit: load the models (unless given), then every stage.

    Parameters
    ----------
    request : DocumentRequest
        From :func:`prepare_documents`.
    target, reference : LoadedModel, optional
        Already loaded models (the dashboard's); loaded from the request's specs otherwise.
    progress : callable, optional
        ``progress(message, fraction)``.

    Returns
    -------
    mia_core.documents.DocumentAuditResult
    """
    check_request(request, DocumentRequest, "prepare_documents")
    from .. import documents  # looked up here: documents.run_document_audit is what is called

    if target is None:
        target, loaded_ref = load_document_models(request)
        reference = loaded_ref if reference is None else reference
    return documents.run_document_audit(request.members, request.nonmembers, target, reference=reference,
                                        progress=progress, **request.settings)


def estimate_documents(request: DocumentRequest, *, target=None, reference=None) -> tuple[str, float]:
    """What a prepared document audit will cost, before it runs: the pass over every book the statistics cache
    lacks (windows of the request's context; :func:`mia_core.stats.speed.cached_texts` with the audit's key), at this
    machine's measured speed for the model, plus the sequence-level baselines when asked for (their sequences are
    not checked against the cache) and the random forests (the k-fold and the partial-document curve's fits, at
    :data:`TREE_SECONDS` a tree: they took a minute of the demo's 2, where this line said "a few seconds").

    Parameters
    ----------
    request : DocumentRequest
        From :func:`prepare_documents`.
    target, reference : LoadedModel, optional
        The models when loaded already: without ``target`` the line says the estimate does not know the cache
        (every book counts) and the speed is a 135M model's.

    Returns
    -------
    tuple
        ``(line, seconds)``.
    """
    line, seconds, _ = _estimate(request, target, reference)
    return line, seconds


def documents_expected(request: DocumentRequest, *, target=None, reference=None) -> dict:
    """What a prepared document audit is expected to take, for a front end's one time left for the whole run
    (``dashboard.jobs.Job.expected``): the estimate's seconds in all, those of the pass over the books the cache
    lacks, and whether that pass has books to score (1) or none (0: every book cached).

    Parameters
    ----------
    request : DocumentRequest
        From :func:`prepare_documents`.
    target, reference : LoadedModel, optional
        As :func:`estimate_documents` takes them.

    Returns
    -------
    dict
        ``{"seconds", "pass_seconds", "passes", "after"}`` (``after``: what follows the pass, in words).
    """
    _, seconds, pass_seconds = _estimate(request, target, reference)
    return {"seconds": seconds, "pass_seconds": pass_seconds, "passes": int(pass_seconds > 0),
            "after": "the random forests, the partial-document curve"}


def _estimate(request: DocumentRequest, target, reference) -> tuple[str, float, float]:
    """:func:`estimate_documents`' line and seconds, and the seconds of the books' pass alone."""
    from ..estimate import count_tokens, describe_estimate, estimate_seconds
    from ..stats.speed import cached_texts
    from ..formatting import fmt_seconds
    from ..stats import StatsSettings

    opts = _options(request.settings)[0]
    texts = [d.text for d in [*request.members, *request.nonmembers]]
    small = sum(map(len, texts)) <= 2_000_000  # larger books: tokens from their characters (no re-tokenising)
    tok = target.tokenizer if target is not None and small else None
    n_params, device, model = ((target.n_params, target.device, target.identity) if target is not None
                               else (None, "cpu", None))
    hit = (cached_texts(target, texts, StatsSettings(context=int(opts.context), vocab_probs=True))
           if target is not None else [False] * len(texts))
    todo = count_tokens([t for t, h in zip(texts, hit) if not h], tok)
    seconds = pass_seconds = estimate_seconds(todo, n_params, device, model)[0]
    line = describe_estimate(len(texts), ["target"], count_tokens(texts, tok), n_params, device,
                             sum(hit) if target is not None else None, todo_tokens=todo, model=model,
                             what="books", seconds=seconds)
    if opts.baselines:
        passes = 1 + ("lowercase" in opts.baseline_attacks) + (reference is not None and "ref" in opts.baseline_attacks)
        cap = opts.baseline_seq_len * opts.baseline_max_sequences if opts.baseline_max_sequences else None
        seq = sum(min(n, cap) if cap else n for n in (count_tokens([t], tok) for t in texts))  # the sampled sequences
        extra = estimate_seconds(seq * passes, n_params, device, model)[0]
        seconds += extra
        line += (f" Plus about {fmt_seconds(extra)} for the sequence-level baselines ({seq:,} tokens × {passes} "
                 f"pass{'es' if passes != 1 else ''}; texts scored before take less).")
    forests, words = _forest_seconds(opts)
    return line + " " + words, seconds + forests, pass_seconds


# seconds per random-forest tree, measured on the document demo (40 books, 10 pipelines x 5 folds and the partial
# curve's 7 lengths x 2 pipelines x 5 folds, 500 trees each: 60,000 trees) on a 2-core AMD EPYC: 66 s in a script
# (21.7 s for the k-fold, 44.2 s for the partial curve, whose dictionaries and features are made again at each
# length), about 110 s on the Document audit page (the dashboard's server beside it): 1.1 and 1.8 ms a tree
TREE_SECONDS = 1.5e-3


def _forest_seconds(opts) -> tuple[float, str]:
    """The random forests' time after the passes (the k-fold of every pipeline, and the partial-document curve's
    fits at each length), from :data:`TREE_SECONDS`, and the sentence that says so."""
    from ..formatting import counted, fmt_seconds

    trees = int(opts.n_estimators or 500)
    pipelines = len(opts.normalizations) * len(opts.features)
    fits = pipelines * int(opts.folds)
    parts = [f"{pipelines} pipeline{'s' if pipelines != 1 else ''} × {opts.folds} folds"]
    if opts.partial_lengths:
        curve = len(opts.partial_pipelines) if opts.partial_pipelines else 2  # the paper's and this audit's best
        fits += len(opts.partial_lengths) * curve * int(opts.folds)
        parts.append(f"the partial-document curve's {len(opts.partial_lengths)} lengths × {curve} pipelines × "
                     f"{opts.folds} folds")
    seconds = fits * trees * TREE_SECONDS
    return seconds, (f"Then the random forests, {counted(fits, 'fits')} of {trees:,} trees ({' and '.join(parts)}): "
                     f"about {fmt_seconds(seconds)} at about 1.5 ms a tree (measured on a 2-core AMD EPYC; this "
                     "machine may differ).")


def demo_books() -> tuple[list, list]:
    """The bundled demo's 20 member and 20 non-member documents (five passages each of five public-domain novels).

    Returns
    -------
    tuple
        ``(members, nonmembers)``, lists of :class:`mia_core.documents.Document`.
    """
    from ..documents import demo_documents

    members, nonmembers = demo_documents()
    return members, nonmembers


def document_precision(request: DocumentRequest, model, *, device: str = "auto", progress=None):
    """The audit re-run at fp32 / bf16 / int8 / int4 (Meeus et al. 2024, §6.4, Table 5) on the request's books.

    Parameters
    ----------
    request : DocumentRequest
        The books and the settings (context, folds, bins, seed, trees, AggFE's and HistFE's options).
    model : str
        The target's spec (loaded once per precision).
    device : str
        Where it loads.
    progress : callable, optional
        ``progress(message, fraction)``.

    Returns
    -------
    pandas.DataFrame
        One row per precision (:func:`mia_core.documents.precision_table`).
    """
    from .. import documents

    s = request.settings
    kw = {k: s[k] for k in ("context", "folds", "n_bins", "seed", "n_estimators", "agg_count", "hist_outside")
          if k in s}
    return documents.precision_table(model, request.members, request.nonmembers, device=device, progress=progress,
                                     **kw)


def audit_documents(members=None, nonmembers=None, model=None, *, reference=None, dtype: str = "auto",
                    device: str = "auto", text_column: str | None = None, cache: bool = True, progress=None,
                    **kwargs):
    """Document-level membership inference on whole books (Meeus et al. 2024, USENIX Security).

    Parameters
    ----------
    members, nonmembers
        Lists of :class:`mia_core.documents.Document`, of texts, or of paths (files or folders, read as
        ``mia documents`` reads them; all of one kind), or a pandas DataFrame (one book per row of its text
        column, ``text_column`` or found as in a .csv file).
    model, reference : str or LoadedModel, optional
        The target (None: the embedded SmolLM2) and the reference-model baseline's reference.
    dtype, device, text_column, cache, progress
        How the models load, the DataFrames' text column, the statistics cache (``use_cache``, its older name,
        is accepted too), ``progress(message, fraction)``.
    **kwargs
        The keywords of :func:`mia_core.documents.run_document_audit` (``normalizations``, ``features``,
        ``folds``, ``n_bins``, ``agg_count``, ``hist_outside``, ``partial_lengths``, ...); each is checked, and an
        unknown one refused, before anything is read or loaded (one line naming it).

    Returns
    -------
    mia_core.documents.DocumentAuditResult
        ``.metrics``, ``.scores``, ``.summary_text()``, ``.save(dir)``.

    References
    ----------
    Meeus, Jain, Rei & de Montjoye 2024, "Did the Neurons Read your Book? Document-level Membership
    Inference for Large Language Models", USENIX Security.
    """
    if "use_cache" in kwargs:  # the older name of cache
        cache = check_flag("use_cache", kwargs.pop("use_cache"))
    progress = check_callable("progress", progress)
    request = prepare_documents(members, nonmembers, model=model, reference=reference, dtype=dtype, device=device,
                                text_column=text_column, cache=cache, **kwargs)
    return execute_documents(request, progress=progress)
