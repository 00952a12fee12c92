"""What an audit is and how audits are registered (the pattern of :mod:`mia_core.attacks`).

An audit takes sets of texts (or books) and a model, and answers one question about membership with a result
(:class:`mia_core.runs.results.AuditResult`). Each is declared once, as an :class:`Audit`:

* its **options** (an :class:`mia_core.options.Options` class: every setting's default, domain and help; the one
  check of those settings, whoever gives them, and the source of the CLI's flags, the pages' limits and the docs'
  tables);
* its **sets**: the names of the sets it reads, in order (``members, nonmembers`` ...), and how each is read;
* ``prepare(**inputs) -> request``: everything checked and read before any model loads (a bad option is one line
  naming it);
* ``execute(request, progress=None) -> result``: the model passes and the statistics;
* its **result** class: ``save(folder)``, ``summary_text()`` (the report) and ``to_json()`` (the figures the saved
  files hold); ``load(folder)``: the same result back from what ``save`` wrote;
* for an audit without a command or page of its own: ``about`` (what it asks, in words) and ``models`` (the causal
  LMs ``prepare`` takes by keyword, with ``dtype``, ``device``, ``quantize`` and ``trust_remote_code``): the command
  ``mia NAME`` is then made from the declaration (:mod:`mia_core.cli.audit_command`: a flag per set and per option),
  and so is the page (:mod:`dashboard.audit_page`);
* ``example(known)``: tiny inputs of known membership for the contract test (``tests/test_audit_contract.py``),
  from :class:`Known` sets and tiny models a test trains;
* its place in the **run store** (:mod:`mia_core.audits.saved`): ``store()`` (a
  :class:`mia_core.runs.kinds.KindStore`: the folder and the words of its saved runs; None for the calibration run,
  whose store is :mod:`mia_core.runs`), ``describe(result)`` (what the Runs page lists: the run's default name, the
  model, the data in words, the headline figure) and ``figures(result)`` (the figures two saved runs are compared
  on).

:func:`register` adds one to :data:`AUDITS`; ``mia_core/audits/__init__.py`` imports each audit's module (one line
each). Nothing heavy is imported here: an audit's functions import their engine package when called.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Known:
    """Sets of known membership and tiny models, as the contract test builds them: ``causal`` (a causal LM folder)
    and ``masked`` / ``masked_reference`` (masked LM folders sharing a tokenizer) trained on ``members`` (the
    references on other texts); ``nonmembers`` and ``population`` were never trained on."""

    members: list
    nonmembers: list
    population: list
    causal: str
    causal_reference: str
    masked: str
    masked_reference: str


@dataclass(frozen=True)
class Audit:
    """One registered audit (see the module docstring)."""

    name: str  # the CLI's command and the run store's kind ("run", "documents", "mlm", "infer-dataset")
    title: str  # in words, for pages, lists and reports
    citation: str
    sets: tuple  # the sets it reads, in order (prepare's keywords)
    options: Callable  # () -> the Options class
    prepare: Callable  # (**inputs) -> request, checked before any model loads
    execute: Callable  # (request, *, progress=None) -> result
    result: Callable  # () -> the result class (save, summary_text, to_json)
    load: Callable  # (folder) -> the result its save wrote there, read back
    marker: str  # the file its saved folders hold and no other audit's do (how mia_core.load knows the kind)
    request: Callable  # () -> the request class prepare returns
    example: Callable  # (Known) -> prepare's keywords: tiny inputs of known membership
    page: str = ""  # the dashboard page that runs it (pages/...)
    about: str = ""  # what it asks, in a sentence or two: a generated command's and page's description
    models: tuple = ()  # the causal-LM keywords prepare takes ("model",): a generated command's and page's models
    demo: Callable = field(default=lambda: None)  # () -> {"words", "inputs": prepare's keywords} of the bundled demo, or None
    demo_words: str = ""  # the demo in words, read without reading the demo (a command's --demo help): "" for none
    headline: Callable = field(default=lambda result: None)  # (result) -> the AUC a front end shows first, or None
    store: Callable = field(default=lambda: None)  # () -> its runs' KindStore (None: the calibration run's own store)
    describe: Callable = field(default=lambda result: {})  # (result) -> meta.json's name, model, data, headline...
    figures: Callable = field(default=lambda result: {})  # (result) -> {figure in words: number}, for comparing runs
    keep: Callable = field(default=lambda result, folder: result.save(folder))  # (result, folder): what the store keeps
    steps: Callable = field(default=lambda: {})  # () -> {step: Options class} of the steps before it (traps: make, insert)


AUDITS: dict[str, Audit] = {}


def register(audit: Audit) -> Audit:
    """Add ``audit`` to :data:`AUDITS` (its ``name`` must be new)."""
    if audit.name in AUDITS:
        raise ValueError(f"audit {audit.name!r} is registered twice")
    AUDITS[audit.name] = audit
    return audit
