"""Dataset inference's front door (Maini et al. 2024): one request, built the same way by the CLI
(``mia infer-dataset``), the API (:func:`infer_dataset`) and the dashboard's Dataset inference page.

* :func:`read_inference_sets` reads the sets as the front ends give them: files (or, for books, files and
  folders of ``.txt`` books, ``.zip`` files, uploads), the bundled demo or its null case;
* :func:`prepare_inference` makes every check that needs no model, once: the settings, the sizes and overlap
  of the sets, the features and the attacks' parameters, every book cut into passages. It returns an
  :class:`InferenceRequest` (with the checks' notes and the time the permutation tests will take);
* :func:`execute_inference` runs it: the IID guard, the models loaded, the features, the tests, the per-unit
  p-values (``mia_core.dataset_inference``), on the checks already made.

A bad input is therefore one line before any model loads, whichever front end it came from.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

# the run's declared options, and the share of its progress the model passes report, for the front ends
from ..dataset_inference.control import is_named
from ..dataset_inference.options import SCORING_SHARE, InferenceOptions  # noqa: F401
from ..errors import DataError, SettingsError
from ..inputs import (
    check_flag, check_callable, check_column, check_device, check_documents, check_dtype, check_mapping, checked_model,
    check_model_spec, check_names, bad_value, check_request, shown_value, check_texts
)

DEMOS = ("demo", "demo_null")
DEFAULT_ALPHA = 0.01  # mia_core.dataset_inference.DEFAULT_ALPHA (a test holds them equal), without importing it
ESTIMATE_NOTE_SECONDS = 10  # the time of the tests is said before the run from this many seconds


@dataclass
class InferenceSets:
    """The sets of a dataset-inference run as read (:func:`read_inference_sets`).

    Attributes
    ----------
    suspect, validation : list
        Texts (strings) or books (``mia_core.documents.Document``).
    population : list of str
        Known non-members (texts only; ReCaLL's prefix).
    notes : list of str
        The readers' notes (encodings, texts dropped; books: Project Gutenberg headers, encodings).
    target : str or None
        The demo's target (a demo), else None.
    """

    suspect: list
    validation: list
    population: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    target: str | None = None


def _read_texts(paths, *, mode: str, text_column: str | None, notes: list) -> list[str]:
    """The texts of ``paths`` (files, ``hf:`` specs or uploads), the reader's notes appended to ``notes``."""
    from ..data import read_texts

    out: list[str] = []
    for path in paths or []:
        out += [r.text for r in read_texts(path, mode=mode, text_column=text_column, notes=notes)]
    return out


def _demo_sets(demo: str, *, books: bool, mode: str, text_column: str | None) -> InferenceSets:
    """The bundled demo: its members (``demo``) or its population (``demo_null``) against its non-members; books:
    the document demo's members against its non-members, or alternate non-member documents on each side (every
    novel on both sides, never trained on). The readers' notes of the demo are not kept."""
    from ..targets.demo import demo_paths

    d = demo_paths()
    if books:
        from ..documents.books import demo_documents

        members, nonmembers = demo_documents()
        pair = (nonmembers[::2], nonmembers[1::2]) if demo == "demo_null" else (members, nonmembers)
        return InferenceSets(*pair, target=str(d["target"]))
    read = dict(mode=mode, text_column=text_column, notes=[])
    suspect = _read_texts([d["population"] if demo == "demo_null" else d["members"]], **read)
    return InferenceSets(suspect, _read_texts([d["nonmembers"]], **read), target=str(d["target"]))


def read_inference_sets(suspect=None, validation=None, population=None, *, demo: str | None = None,
                        books: bool = False, mode: str = "auto", text_column: str | None = None,
                        strip: bool = True) -> InferenceSets:
    """The sets of a dataset-inference run, read as ``mia infer-dataset`` and the Dataset inference page read them.

    Parameters
    ----------
    suspect, validation : list, optional
        Texts: files (``.txt``, ``.csv``, ``.jsonl`` ..., ``hf:ID[:config][@split]``) or uploaded files, their
        texts in order. Books: ``.txt`` files (one book per file), folders of them, ``.zip`` files or uploads
        (``mia_core.documents.load_documents``). Not read with a ``demo``.
    population : list, optional
        Texts only: files of known non-members (ReCaLL's prefix), read with a demo too; not read for books.
    demo : {"demo", "demo_null"}, optional
        The bundled demo instead of ``suspect`` and ``validation`` (:func:`_demo_sets`).
    books : bool
        Read books, not texts.
    mode, text_column
        How text files are read (``mia_core.data.read_texts``).
    strip : bool
        Books: remove Project Gutenberg headers and footers.

    Returns
    -------
    InferenceSets

    Raises
    ------
    DataError
        A file that cannot be read (one line).
    """
    if demo is not None and demo not in DEMOS:
        raise SettingsError(f"demo must be one of {', '.join(DEMOS)}, got {demo!r}")
    if demo is None:
        for name, value in (("suspect", suspect), ("validation", validation)):
            if value is None or (isinstance(value, (list, tuple)) and not value):
                raise DataError(f"{{{name}}} is missing: give its files (or a demo)", options=(name,))
    if books:
        if demo is not None:
            return _demo_sets(demo, books=True, mode=mode, text_column=text_column)
        from ..documents import load_documents

        s, v = load_documents(list(suspect), strip=strip), load_documents(list(validation), strip=strip)
        return InferenceSets(s, v, notes=[n for d in [*s, *v] for n in ((d.strip or {}).get("notes") or [])])
    notes: list[str] = []  # the demo's own reader notes are not kept; the population's are
    read = dict(mode=mode, text_column=text_column, notes=notes)
    if demo is not None:
        sets = _demo_sets(demo, books=False, mode=mode, text_column=text_column)
    else:
        sets = InferenceSets(_read_texts(suspect, **read), _read_texts(validation, **read))
    sets.population, sets.notes = _read_texts(population, **read), notes
    return sets


def inference_demo() -> dict | None:
    """The bundled demo as dataset inference uses it: ``{"target": spec, "books": bool}`` (``books``: the document
    demo is installed too); None when the demo is not installed (a front end then offers none).

    Returns
    -------
    dict or None
    """
    from ..targets.demo import DEMO_DIR, installed_demo

    d = installed_demo()
    if not d:
        return None
    return {"target": str(d["target"]), "books": (DEMO_DIR / "documents.json").is_file()}


def estimate_inference(suspect: Sequence, validation: Sequence, *, books: bool = False, features="default",
                       reference: bool = False, n_permutations: int = 10_000, passage_words: int = 256,
                       max_passages: int = 40, target_model=None, reference_model=None,
                       control: str = "auto") -> tuple:
    """What a run of these sets would cost, before any check: the features' model passes and the permutation tests.

    Parameters
    ----------
    suspect, validation : list
        Texts, or books (``mia_core.documents.Document``: the passes are over their passages, every book cut into
        the same number).
    books, features, reference, n_permutations, passage_words, max_passages
        As :func:`prepare_inference` takes them (``reference``: whether a reference model is given).
    target_model, reference_model : LoadedModel, optional
        The models when loaded already: only the texts (passages) the disk cache lacks count, at the model's own
        measured speed (:func:`mia_core.api.plan.plan_run`); without them the line says it does not know the cache.
    control : str
        The negative control (``"auto"``: without a reference model, the base model's pass over the same texts is
        counted too; ``"none"``; or a named model, whose pass is counted the same way).

    Returns
    -------
    tuple
        ``(plan, tests_seconds)``: the passes' :class:`~mia_core.api.plan.RunPlan` (its ``estimate`` line, at this
        machine's measured speed) and about how long the permutation tests take after them.

    Raises
    ------
    MiaError
        Features these inputs cannot compute, books without words.
    """
    from ..dataset_inference import parse_features
    from ..dataset_inference.significance import estimate_seconds
    from .plan import plan_run

    families = parse_features(features, reference=reference, population=False)
    if books:
        from ..dataset_inference.books import equal_passages

        cut, _ = equal_passages([*suspect, *validation], passage_words, max_passages)
        texts = [p for c in cut for p in c]
    else:
        texts = [*suspect, *validation]
    tests = estimate_seconds(len(suspect) + len(validation), n_permutations=int(n_permutations))
    plan = plan_run(families, texts=texts, check_inputs=False, target_model=target_model,
                    reference_model=reference_model)
    return _with_control(plan, control if not reference else "none", named=is_named(control)), tests


def _with_control(plan, control: str, *, named: bool = False):
    """``plan`` with the negative control's pass added (``control`` "auto" without a reference: the same texts
    through the target's base model, or the embedded one, for the features the verdict subtracts): counted as long
    as the target's own pass and with texts to score when the target's pass has some (the control is not loaded
    before Run, so its cache is not read)."""
    import dataclasses

    from ..formatting import fmt_seconds

    if control == "none" or not plan.seconds or not plan.todo_passes:
        return plan
    each = float(plan.pass_seconds or 0.0) / plan.todo_passes
    head, sep, tail = plan.estimate.partition(" Lowercase (not ticked")  # the passes' part, then the notes
    through = f"the named model {control}" if named else "the base model"
    line = (f"{head} Plus about {fmt_seconds(each)} for the negative control's pass (the same texts through "
            f"{through}).{sep}{tail}")
    return dataclasses.replace(plan, estimate=line, seconds=plan.seconds + each,
                               pass_seconds=(plan.pass_seconds or 0.0) + each, todo_passes=plan.todo_passes + 1)


@dataclass
class InferenceRequest:
    """A checked dataset-inference run: everything :func:`execute_inference` needs, nothing loaded yet.

    Attributes
    ----------
    checked : mia_core.dataset_inference.stages.Checked
        The model-free checks' result: the sets as the run reads them (``suspect``, ``validation``,
        ``population``, texts cleaned or books), the feature families, the scoring configuration, the test's
        settings and the checks' notes.
    model, reference : str or LoadedModel or None
        The audited model's spec (None: the embedded SmolLM2-135M) and the reference's (None: none).
    settings : dict
        The settings as asked for (``features``, ``alpha``, ``folds``, ``n_permutations``, ``seed``, ``params``,
        ``prefix``, ``cache``, ``correction``, ``combination``; books: ``passage_words``, ``max_passages``).
    load : dict
        How the models load: ``dtype``, ``device``, ``trust_remote_code``.
    read_notes : list of str
        The readers' notes, kept first among the result's notes.
    tests_seconds : float
        About how long the permutation tests take after the model passes
        (``mia_core.dataset_inference.significance.estimate_seconds``).
    """

    checked: object
    model: object = None
    reference: object = None
    settings: dict = field(default_factory=dict)
    load: dict = field(default_factory=dict)
    read_notes: list = field(default_factory=list)
    tests_seconds: float = 0.0

    @property
    def books(self) -> bool:
        """The book is the unit of the test."""
        return self.checked.mode == "books"

    @property
    def suspect(self) -> list:
        """The suspect texts (cleaned) or books."""
        return self.checked.suspect

    @property
    def validation(self) -> list:
        """The validation texts (cleaned) or books."""
        return self.checked.validation

    @property
    def population(self) -> list:
        """Known non-members (texts only)."""
        return self.checked.population

    @property
    def notes(self) -> list:
        """The model-free checks' notes (a note on the lengths, duplicates dropped, the books' passages)."""
        return list(self.checked.notes)

    @property
    def estimate_note(self) -> str | None:
        """The time of the permutation tests, said before the run when it reaches 10 s; else None."""
        if self.tests_seconds < ESTIMATE_NOTE_SECONDS:
            return None
        return (f"the permutation tests ({int(self.settings['n_permutations']):,} permutations) will take about "
                f"{self.tests_seconds:.0f} s after the model passes")


def _check(suspect, validation, *, books: bool, reference: bool, population, s: dict):
    """The check stage of ``mia_core.dataset_inference`` (texts or books) on the settings ``s``."""
    common = dict(reference=reference, features=s["features"], alpha=s["alpha"], folds=s["folds"],
                  n_permutations=s["n_permutations"], seed=s["seed"], params=s["params"], prefix=s["prefix"],
                  use_cache=s["cache"], correction=s["correction"], combination=s["combination"],
                  control=s["control"], adjust_length=s["adjust_length"])
    if books:
        from ..dataset_inference.books import check_book_run

        if population:
            raise SettingsError("{population} is not used with {books}: the book test has no ReCaLL feature",
                                options=("population", "books"))
        from ..documents import Document

        for name, xs in (("suspect", suspect), ("validation", validation)):
            bad = next((x for x in xs if not isinstance(x, Document)), None) if isinstance(xs, (list, tuple)) else xs
            if bad is not None:
                raise DataError(f"{{{name}}} must be books (mia_core.documents.Document, as read_inference_sets "
                                f"reads them) with {{books}}, got {shown_value(bad)}", options=(name, "books"))
        return check_book_run(suspect, validation, passage_words=s["passage_words"],
                              max_passages=s["max_passages"], **common)
    from ..dataset_inference.audit import check_text_run

    return check_text_run(suspect, validation, population=list(population or ()), **common)


def prepare_inference(suspect: Sequence, validation: Sequence, *, model=None, reference=None,
                      population: Sequence[str] | None = None, books: bool = False, features="default",
                      alpha: float = DEFAULT_ALPHA, folds: int = 5, n_permutations: int = 10_000, seed: int = 0,
                      params: dict | None = None, prefix: str = "auto", cache: bool = True,
                      passage_words: int = 256, max_passages: int = 40, correction: str = "bh",
                      combination: str = "families", control: str = "auto", adjust_length: bool = True,
                      read_notes: Sequence[str] = (), dtype: str = "auto",
                      device: str = "auto", trust_remote_code: bool = False) -> InferenceRequest:
    """Every check of a dataset-inference run that needs no model, once, before any model loads.

    Parameters
    ----------
    suspect, validation : list
        Texts (strings) or, with ``books``, ``mia_core.documents.Document`` (:func:`read_inference_sets`).
    model, reference : str or LoadedModel, optional
        The audited model (None: the embedded SmolLM2-135M) and a reference model (adds the reference feature).
    population : list of str, optional
        Texts only: known non-members besides the validation set (ReCaLL's prefix).
    books : bool
        The book is the unit of the test (``mia_core.dataset_inference.books``).
    features, alpha, folds, n_permutations, seed, params, prefix, cache, passage_words, max_passages,
    correction, combination, control, adjust_length
        As :func:`infer_dataset` takes them (``params``: ``{attack: {name: value}}``, already checked against
        the attacks' domains, e.g. by :func:`mia_core.cli.common.parse_params`).
    read_notes : list of str
        The readers' notes (:attr:`InferenceSets.notes`), kept first among the result's notes.
    dtype, device, trust_remote_code
        How :func:`execute_inference` loads the models when it is not given a loader.

    Returns
    -------
    InferenceRequest

    Raises
    ------
    SettingsError, DataError
        One line: a setting, too few texts or books, a text or book in both sets, a population text among
        them, a feature these inputs cannot compute.
    """
    from ..dataset_inference.significance import estimate_seconds

    if isinstance(read_notes, (str, bytes)) or not isinstance(read_notes, (list, tuple)) or not all(
            isinstance(n, str) for n in read_notes):
        raise bad_value("read_notes", "a list of notes (strings)", read_notes)
    if isinstance(features, (list, tuple)) and all(isinstance(f, str) for f in features):
        features = ",".join(features)  # a list of names is the comma list
    o = InferenceOptions.check(features=features, alpha=alpha, folds=folds, n_permutations=n_permutations, seed=seed,
                               prefix=prefix, cache=cache, correction=correction, combination=combination,
                               control=control, adjust_length=adjust_length, passage_words=passage_words,
                               max_passages=max_passages)
    features, alpha, folds, n_permutations, seed = o.features, o.alpha, o.folds, o.n_permutations, o.seed
    passage_words, max_passages = o.passage_words, o.max_passages
    from ..dataset_inference.control import named_control

    named_control(o.control, model, reference)  # a named control: it exists, is not the target, is the reference
    settings = {"features": features, "alpha": alpha, "folds": folds, "n_permutations": n_permutations,
                "seed": seed, "params": dict(params or {}), "prefix": o.prefix, "cache": o.cache,
                "correction": o.correction, "combination": o.combination, "control": o.control,
                "adjust_length": o.adjust_length,
                **({"passage_words": passage_words, "max_passages": max_passages} if books else {})}
    checked = _check(suspect, validation, books=books, reference=reference is not None, population=population,
                     s={**settings, "passage_words": passage_words, "max_passages": max_passages})
    tests = estimate_seconds(len(suspect) + len(validation), n_permutations=n_permutations, combination=o.combination)
    return InferenceRequest(checked=checked, model=model, reference=reference, settings=settings,
                            load={"dtype": dtype, "device": device, "trust_remote_code": trust_remote_code},
                            read_notes=list(read_notes), tests_seconds=tests)


def _loader(request: InferenceRequest, progress):
    """``load(spec)``: a loaded model as it is, a spec loaded as the request says (``progress`` follows it)."""
    from ..models import LoadedModel, load_causal_lm

    def load(spec):
        if isinstance(spec, LoadedModel):
            return spec
        return load_causal_lm(spec, dtype=request.load.get("dtype", "auto"), device=request.load.get("device", "auto"),
                              trust_remote_code=request.load.get("trust_remote_code", False),
                              **({"progress": progress} if progress is not None else {}))

    return load


def execute_inference(request: InferenceRequest, *, progress=None, load=None, target=None, reference=None):
    """Run a prepared request on its checks: the IID guard, the models, the features, the tests, the per-unit
    p-values.

    Parameters
    ----------
    request : InferenceRequest
        From :func:`prepare_inference`.
    progress : callable, optional
        ``progress(message, fraction)`` (``mia_core.progress``); it also follows the models' loading when
        ``load`` is not given.
    load : callable, optional
        ``load(spec) -> LoadedModel``; None: ``mia_core.models.load_causal_lm`` with the request's ``load``
        settings (a loaded model is used as it is).
    target, reference : LoadedModel, optional
        Models already loaded (the page's), used instead of the request's specs.

    Returns
    -------
    mia_core.dataset_inference.DatasetInferenceResult
        Its notes start with the request's reader notes.
    """
    check_request(request, InferenceRequest, "prepare_inference")
    from .. import dataset_inference as di

    model = request.model if target is None else target
    ref = request.reference if reference is None else reference
    load = load or _loader(request, progress)
    if request.books:
        from ..dataset_inference import books as di_books

        res = di_books.run_book_inference(request.suspect, request.validation, model, reference=ref,
                                          checked=request.checked, load=load, progress=progress)
    else:
        res = di.run_dataset_inference(request.suspect, request.validation, model, reference=ref,
                                       population=request.population, checked=request.checked, load=load,
                                       progress=progress)
    res.report[:0] = [n for n in request.read_notes if n not in res.report]  # kept with the result
    return res


def _features(value):
    """The features asked for (None: ``"default"``)."""
    value = check_names("features", value)
    return "default" if value is None else value


def _checked_arguments(a: dict) -> dict:
    """:func:`infer_dataset`'s arguments checked (type and range, one line naming the parameter), in order: the
    run's options by their declared domains (:class:`~mia_core.dataset_inference.options.InferenceOptions`), the
    rest (models, attack parameters, how the models load, the sets' column) here."""
    from ..attacks import check_params

    features = _features(a["features"])
    names = tuple(InferenceOptions.declared())
    o = InferenceOptions.check(**{**{n: a[n] for n in names},
                                  "features": ",".join(features) if isinstance(features, list) else features})
    return {"model": check_model_spec("model", a["model"]), "reference": check_model_spec("reference", a["reference"]),
            **o.as_dict(), "params": check_params(check_mapping("params", a["params"])), "dtype": check_dtype(a["dtype"]),
            "device": check_device(a["device"]), "books": check_flag("books", a["books"]),
            "progress": check_callable("progress", a["progress"]), "text_column": check_column("text_column", a["text_column"])}


def _read_arguments(suspect, validation, population, *, books: bool, text_column: str | None):
    """:func:`infer_dataset`'s sets: books as Documents, texts as lists of strings (one line naming the parameter
    for anything else)."""
    if books:
        if population is not None:
            raise SettingsError("{population} is not used with {books}: the book test has no ReCaLL feature",
                                options=("population", "books"))
        return (check_documents(suspect, "suspect", text_column=text_column),
                check_documents(validation, "validation", text_column=text_column), None)
    return (check_texts(suspect, "suspect", text_column=text_column), check_texts(validation, "validation", text_column=text_column),
            check_texts(population, "population", text_column=text_column))


def infer_dataset(suspect, validation, model=None, reference=None, *, population=None, features="default",
                  alpha: float = 0.01, folds: int = 5, n_permutations: int = 10_000, seed: int = 0,
                  params: dict | None = None, prefix: str = "auto", cache: bool = True, dtype: str = "auto",
                  device: str = "auto", books: bool = False, passage_words: int = 256, max_passages: int = 40,
                  correction: str = "bh", combination: str = "families", control: str = "auto",
                  adjust_length: bool = True, progress=None, text_column: str | None = None):
    """Was the suspect collection used to train the model? Dataset inference with a p-value.

    Parameters
    ----------
    suspect : list of str, path or DataFrame
        The texts in question (a pandas DataFrame or Series: its text column, ``text_column`` or found as
        in a .csv file).
    validation : list of str, path or DataFrame
        Texts of the same distribution known not to be trained on (the test's assumption: the two
        sets are exchangeable unless the suspect set was trained on; checked by the IID guard).
    model, reference : LoadedModel or str, optional
        The audited causal LM (None: the embedded SmolLM2-135M) and an optional reference model (adds
        the reference attack as a feature). Loaded only once the model-free checks have passed.
    population : list of str, path or DataFrame, optional
        Known non-members besides the validation set (ReCaLL's prefix feature).
    features : str or list of str
        ``"default"``, ``"all"`` or attack families (``mia_core.dataset_inference.features``).
    alpha : float
        Significance level of the verdict, in (0, 0.5].
    folds, n_permutations, seed
        The one-sided permutation test's folds (2 to 20), label permutations (99 to 1,000,000) and seed
        (every option's domain: :class:`~mia_core.dataset_inference.options.InferenceOptions`).
    combination : str
        How the oriented features are combined, always with non-negative weights: ``"families"`` (the default:
        the mean over attack families of their standardised features, each attack counted once, reading no
        label), ``"nonneg"`` (fitted by cross-fitting) or ``"mean"`` (every feature equally, reads no label);
        ``mia_core.dataset_inference.significance``.
    correction : str
        Across the suspect texts' (or books') own conformal p-values: ``"bh"`` (Benjamini-Hochberg, the
        false-discovery rate) or ``"holm"`` (the family-wise error rate).
    control : str
        The negative control, a model that never saw either set: ``"auto"`` (the reference if given, else a
        ``make-target`` target's base, else the embedded SmolLM2; every feature is then read target minus
        control, and the verdict is refused when the control alone separates the sets) or ``"none"``
        (``mia_core.dataset_inference.control``). The verdict then assumes the control responds to the sets'
        length, style and topic as the target would; ``.summary["assumptions"]`` says so.
    adjust_length : bool
        Adjust every feature for text length (its residual from one pooled, label-free fit on the texts' lengths in
        tokens, words and characters).
    books : bool
        ``suspect`` and ``validation`` are books (Documents, texts or paths of files/folders, one book per
        file): each is cut into passages of ``passage_words`` words (at least 16; at most ``max_passages``),
        the book is the unit of the test, and each suspect book gets its own p-value, adjusted across the
        books (``mia_core.dataset_inference.books``).
    text_column : str, optional
        The text column of a table (file or DataFrame) given as a set.

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
    mia_core.dataset_inference.DatasetInferenceResult
        ``.summary`` (``p_value``, ``p_value_ttest``, ``verdict``: ``used`` / ``not_shown`` /
        ``refused``, ``blind_auc``, ``blind_p_value``, ``self_check_p_value``, ``n_flagged``, ``weights`` ...),
        ``.scores`` (per text: features, scores, conformal and adjusted p-values), ``.save(dir)``.

    References
    ----------
    Maini, Jia, Papernot & Dziedzic 2024, "LLM Dataset Inference: Did you train on my dataset?",
    NeurIPS. Phipson & Smyth 2010, "Permutation P-values Should Never Be Zero".
    """
    a = _checked_arguments(dict(locals()))  # every argument, by its name
    s, v, pop = _read_arguments(suspect, validation, population, books=a["books"], text_column=a["text_column"])
    request = prepare_inference(
        s, v, model=a["model"], reference=a["reference"], population=pop, books=a["books"], features=a["features"],
        alpha=a["alpha"], folds=a["folds"], n_permutations=a["n_permutations"], seed=a["seed"], params=a["params"],
        prefix=a["prefix"], cache=a["cache"], passage_words=a["passage_words"], max_passages=a["max_passages"],
        correction=a["correction"], combination=a["combination"], control=a["control"],
        adjust_length=a["adjust_length"], dtype=a["dtype"], device=a["device"])
    return execute_inference(request, progress=a["progress"],
                             load=lambda spec: checked_model(spec, dtype=a["dtype"], device=a["device"]))


# ----------------------------------------------------------------------------- saved runs
def save_inference_run(result, *, name: str | None = None, model: str | None = None,
                       inputs: dict | None = None) -> dict:
    """Save a dataset-inference result as a new run beside the calibration runs (``<runs dir>/_dataset_inference``,
    :mod:`mia_core.dataset_inference.store`).

    Parameters
    ----------
    result : mia_core.dataset_inference.DatasetInferenceResult
        What :func:`execute_inference` / :func:`infer_dataset` returned.
    name, model : str, optional
        The run's name and the model's name, as the Runs page lists them; the default name is
        :func:`inference_run_name` (the model, the data and the verdict).
    inputs : dict, optional
        What was audited, as the front end names it (``model``, ``model_identity``, ``reference``, ``source``:
        ``demo``, ``demo_null``, ``paste``, ``upload`` or ``files``, ``suspect_files``, ``validation_files``):
        set on the result (its report's header names them) and kept in the run's ``meta.json``.

    Returns
    -------
    dict
        The run's meta (``id``, ``name``, ``created``, ``model``, ``model_identity``, ``data``, the verdict, the
        p-value, the sizes).
    """
    from ..dataset_inference import store

    if inputs:
        result.inputs = {**(result.inputs or {}), **inputs}
    return store.save(result, name=name, model=model)


def inference_run_name(summary: dict, inputs: dict | None = None) -> str:
    """A dataset-inference run's name: the model's short name, the data and the verdict, e.g. ``"demo target ·
    demo null: 100 suspect vs 100 validation texts — not shown (p = 0.4100)"``
    (:func:`mia_core.dataset_inference.report.run_name`).

    Parameters
    ----------
    summary : dict
        The result's summary.
    inputs : dict, optional
        What was audited (see :func:`save_inference_run`).

    Returns
    -------
    str
        The name.
    """
    from ..dataset_inference.report import run_name

    return run_name(summary, inputs)


def inference_feature_label(name: str) -> str:
    """A dataset-inference feature by the attack's display name: ``"min_k_pp@0.6"`` -> ``"Min-K%++ (k = 60 %)"``
    (:func:`mia_core.dataset_inference.features.feature_label`).

    Parameters
    ----------
    name : str
        The feature's id, as in the summary's ``features`` and ``weights``.

    Returns
    -------
    str
        Its display name.
    """
    from ..dataset_inference.features import feature_label

    return feature_label(name)


def combination_words(name) -> str:
    """How a result's ``combination`` combined the features, in words ("the mean over attack families, each counted
    once"); a run saved before a name existed reads "non-negative weights".

    Parameters
    ----------
    name : str or None
        ``summary["combination"]``.

    Returns
    -------
    str
    """
    from ..dataset_inference.significance import COMBINATION_WORDS

    return COMBINATION_WORDS.get(name, "non-negative weights")


def control_words(model=None, reference=None, control: str = "auto") -> str:
    """The negative control a run of these models would use, in words, before anything loads: the rule of
    ``mia_core.dataset_inference.control.control_spec`` on the specs (the reference model; else a ``make-target``
    folder's base, as :func:`mia_core.api.request.reference_spec` reads it; else the embedded SmolLM2, unless the
    target is that model).

    Parameters
    ----------
    model, reference : str or None
        The target's and the reference's specs (None: the embedded model; no reference).
    control : str
        ``"auto"`` or ``"none"``.

    Returns
    -------
    str
        E.g. ``"the target's base model (smollm2)"``.
    """
    from .request import reference_spec

    if control == "none":
        return "none (the verdict then assumes the sets differ in nothing a model sees but training)"
    if is_named(control):
        return f"the named model ({control})" + (", also the reference model" if reference else "")
    if reference:
        return f"the reference model ({reference})"
    base = reference_spec(model) if model not in (None, "") else None
    if base:
        return f"the target's base model ({base}), the target before it saw anything"
    if model in (None, "", "smollm2"):
        return "none: the target is the embedded SmolLM2-135M itself (give a reference model to have one)"
    return "the embedded SmolLM2-135M (no reference model or base known)"


def inference_notes(summary: dict, notes: Sequence[str] = ()) -> dict:
    """The sentences a result's figures need, in words (:mod:`mia_core.dataset_inference.report`): ``verdict``
    (Used, Not shown, Refused), ``reason`` (the verdict's reason as a sentence), ``blind`` (a blind-baseline AUC
    far below 0.5, or None), ``power_floor`` (the power curve's floor against the headline p, or None) and
    ``notes`` (``notes``, each as a sentence, in their order).

    Parameters
    ----------
    summary : dict
        The result's summary.
    notes : sequence of str, optional
        The result's notes (its ``report``).

    Returns
    -------
    dict
        The five entries.
    """
    from ..dataset_inference import report as r

    curve = summary.get("power_curve") and summary.get("verdict") != "refused"
    return {"verdict": r.VERDICT_WORDS.get(summary.get("verdict"), str(summary.get("verdict"))),
            "reason": r.sentence(summary.get("verdict_reason")), "blind": r.blind_note(summary),
            "power_floor": r.power_floor_note(summary) if curve else None,
            "notes": [r.sentence(n) for n in notes]}


def delete_inference_run(run_id: str) -> None:
    """Delete a saved dataset-inference run: only a folder of the run store that holds the run's ``meta.json``
    (``mia_core.dataset_inference.store.delete``: nothing else is removed); ``DataError`` in one line otherwise.

    Parameters
    ----------
    run_id : str
        The run's id (``list_inference_runs``).
    """
    from ..dataset_inference.store import delete

    delete(run_id)


def list_inference_runs() -> list[dict]:
    """Every saved dataset-inference run's meta, newest first; a damaged run is listed with its reason
    (``damaged``), never hides the others (:func:`mia_core.dataset_inference.store.list_runs`)."""
    from ..dataset_inference import store

    return store.list_runs()


def inference_report(run_id: str) -> bytes:
    """The HTML report of a saved dataset-inference run, read only as a regular file inside its run folder (a link
    or anything else is one ``DataError`` line)."""
    from ..dataset_inference import store

    return store.read_report(run_id)


def load_inference_run(run_id: str):
    """A saved dataset-inference run read back as a ``DatasetInferenceResult``, every file checked (a damaged run
    is one ``DataError`` line; :func:`mia_core.dataset_inference.store.load_result`)."""
    from ..dataset_inference import store

    return store.load_result(run_id)
