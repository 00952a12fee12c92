"""Dataset inference over books: was this collection of books used, and which of them?

The Meeus et al. 2024 setting (whole books; ``mia_core.documents``) answered as a test instead of an
AUC. Each book is cut into passages (:func:`passages`: ``passage_words`` words, at most
``max_passages`` spread over the book), every passage gets the features of
:mod:`mia_core.dataset_inference.features` from one scoring stage, and a book's features are the
means over its passages.

**The unit is the book, not the passage.** Passages of one book share its author, topic and names:
under the null hypothesis (the suspect books were not trained on) a suspect book's passages are
*not* exchangeable with other books' passages, so a passage-level test would "detect" any book that
merely differs from the validation books. Books drawn from one distribution are exchangeable, so:

* **Every book has the same number of passages**: the shortest book's count (at most
  ``max_passages``), spread evenly over each book. A book's mean over 2 passages varies more than one
  over 40; with unequal counts a set of short suspect books would look "different" under the null
  (measured: 12 % at alpha = 0.05 for 5 suspect books of 2 passages against 30 of 40). With equal
  counts the books' features are exchangeable under the null, and the test is exact.
* **Collection test**: the one-sided permutation test (``significance.permutation_test``) on book
  features, suspect books against validation books, through the stage texts use
  (``verdict.test_stage``). With few books the p-value cannot go below ``1 / C(n_s + n_v, n_s)``.
* **Per-book p-values** (conformal, label-free score; ``verdict.unit_p_values``): exact for a book
  exchangeable with the validation books, adjusted by Benjamini-Hochberg (``correction="bh"``, the
  default) or Holm. A book's p-value cannot go below ``1 / (1 + n_v)``: with 20 validation books no
  single book can be flagged at alpha = 0.01 (the run says so).

The run is the stages of ``stages`` (check -> guard -> load models -> features -> tests -> per-book p-values ->
result): :func:`check_book_run` makes every model-free check once, :func:`infer_books` runs the rest, and
:func:`run_book_inference` is the two in a row (or the second alone, ``checked=``).

Not done here: the paper's split t-test (with a handful of books, half of them only train) and the
power curve over books.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ..errors import DataError
from ..formatting import counted
from ..progress import Progress, noop
from . import features as F
from .audit import DEFAULT_ALPHA, DatasetInferenceResult
from .guards import near_duplicates
from .options import MAX_PASSAGES, PASSAGE_WORDS, InferenceOptions
from .stages import (Checked, Features, check_correction, check_test_settings, control_refusal,  # noqa: F401
                     control_stage, feature_attacks, feature_stage, folds_used, guard_stage, load_stage, model_name,
                     rests_on, run_config, tested_notes, units_frame)
from .significance import DEFAULT_COMBINATION, DEFAULT_FOLDS, DEFAULT_PERMUTATIONS
from .verdict import CORRECTIONS, benjamini_hochberg, holm, test_stage  # noqa: F401 - the names books used to hold

MIN_BOOKS = 5


def passages(text: str, words: int = PASSAGE_WORDS, max_passages: int = MAX_PASSAGES) -> list[str]:
    """The book cut into consecutive passages of ``words`` words (a last one shorter than half that is
    dropped), at most ``max_passages`` of them, evenly spread over the book."""
    w = str(text).split()
    chunks = [" ".join(w[i:i + words]) for i in range(0, len(w), words)]
    if len(chunks) > 1 and len(chunks[-1].split()) < words / 2:
        chunks.pop()
    if len(chunks) > max_passages:
        idx = np.unique(np.linspace(0, len(chunks) - 1, max_passages).round().astype(int))
        chunks = [chunks[i] for i in idx]
    return chunks


def check_books(suspect, validation, *, passage_words: int, max_passages: int) -> list[str]:
    """Sizes and overlap of the two book sets (``DataError``, one line); returns notes."""
    for name, s in (("suspect", suspect), ("validation", validation)):
        if len(s) < MIN_BOOKS:
            raise DataError(f"the {name} set has {counted(len(s), 'books')}; the book test needs at least {MIN_BOOKS} in each "
                            "set (the book is the unit of the test)")
    InferenceOptions.check_some(passage_words=passage_words, max_passages=max_passages)
    near = near_duplicates([d.text for d in suspect], [d.text for d in validation])
    if near:
        i, j = near[0]
        raise DataError(f"{len(near)} suspect/validation book pair(s) overlap (e.g. {suspect[i].name!r} and "
                        f"{validation[j].name!r}); the sets must be disjoint")
    empty = [d.name for d in [*suspect, *validation] if not passages(d.text, passage_words, max_passages)]
    if empty:
        raise DataError(f"no words in {counted(len(empty), 'books')} (e.g. {empty[0]!r})")
    return []


def unique_names(suspect: list, validation: list, notes: list) -> tuple[list, list]:
    """The books with names unique across both sets (a repeated name gets ``_2``, ``_3``..., as the document audit
    names them), so that each book's line and p-value can be told apart; a note says how many were renamed.
    Six zip members of one name were six books of one name."""
    from dataclasses import replace

    seen: dict[str, int] = {}
    out, renamed = [], 0
    for d in [*suspect, *validation]:
        k = seen.get(d.name, 0)
        seen[d.name] = k + 1
        if k:
            renamed += 1
            d = replace(d, name=f"{d.name}_{k + 1}")
        out.append(d)
    if renamed:
        notes.append(f"{counted(renamed, 'books')} shared a name with another book: numbered (_2, _3...) to tell them "
                     "apart")
    return out[:len(suspect)], out[len(suspect):]


def equal_passages(books, passage_words: int, max_passages: int) -> tuple[list[list[str]], int]:
    """Every book cut into the same number of passages: the shortest book's count, at most ``max_passages``."""
    m = min(len(passages(d.text, passage_words, max_passages)) for d in books)
    return [passages(d.text, passage_words, m) for d in books], m


def check_book_run(suspect, validation, *, reference: bool = False, features="default", alpha: float = DEFAULT_ALPHA,
                   folds: int = DEFAULT_FOLDS, n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0,
                   passage_words: int = PASSAGE_WORDS, max_passages: int = MAX_PASSAGES, params: dict | None = None,
                   prefix: str = "auto", use_cache: bool = True, iid_check: bool = True, correction: str = "bh",
                   combination: str = DEFAULT_COMBINATION, control: str = "auto", adjust_length: bool = True) -> Checked:
    """The check stage of a run over books: settings, the two sets of books (:func:`check_books`), the
    features, the scoring configuration, and every book cut into the same number of passages.

    Parameters
    ----------
    suspect, validation : list of mia_core.documents.Document
        The two sets of books.
    reference : bool
        A reference model is given (the ``ref`` feature can run).
    features, alpha, folds, n_permutations, seed, passage_words, max_passages, params, prefix, use_cache,
    iid_check, correction, combination, control, adjust_length
        As :func:`run_book_inference` takes them.

    Returns
    -------
    mia_core.dataset_inference.stages.Checked
        ``mode = "books"``, with ``cut`` (each book's passages) and a note when the books are read as fewer
        passages than ``max_passages``.
    """
    check_correction(correction)
    check_test_settings(alpha=alpha, folds=folds, n_permutations=n_permutations, combination=combination)
    InferenceOptions.check_some(control=control, adjust_length=adjust_length)
    notes = check_books(suspect, validation, passage_words=passage_words, max_passages=max_passages)
    fams = F.parse_features(features, reference=reference, population=False)
    cfg = run_config(fams, params=params, prefix=prefix, use_cache=use_cache)
    cut, m = equal_passages([*suspect, *validation], passage_words, max_passages)
    if m < max_passages:
        notes.append(f"every book is read as {m} passage(s) of {passage_words} words, spread over the book (the "
                     f"shortest book has {m}): equal counts keep the books exchangeable under the null")
    folds = folds_used(folds, len(suspect) + len(validation), "books", notes)
    settings = {"alpha": alpha, "folds": folds, "n_permutations": n_permutations, "seed": seed,
                "combination": combination, "correction": correction, "prefix": prefix, "iid_check": iid_check,
                "passage_words": passage_words, "max_passages": max_passages, "passages_per_book": m,
                "control": control, "adjust_length": adjust_length}
    suspect, validation = unique_names(list(suspect), list(validation), notes)
    return Checked("books", suspect, validation, fams, cfg, settings, notes, cut=cut)


def run_book_inference(suspect, validation, target, *, reference=None, features="default",
                       alpha: float = DEFAULT_ALPHA, folds: int = DEFAULT_FOLDS,
                       n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0,
                       passage_words: int = PASSAGE_WORDS, max_passages: int = MAX_PASSAGES, params: dict | None = None,
                       prefix: str = "auto", use_cache: bool = True, iid_check: bool = True,
                       correction: str = "bh", combination: str = DEFAULT_COMBINATION, control: str = "auto",
                       adjust_length: bool = True, checked: Checked | None = None,
                       load=None, progress: Progress | None = None) -> DatasetInferenceResult:
    """Dataset inference over books (module docstring).

    Parameters
    ----------
    suspect, validation : list of mia_core.documents.Document
        The books in question and books of the same kind known not to be trained on.
    target, reference : LoadedModel or str
        Loaded models, or specs that ``load(spec)`` loads once the model-free checks have passed.
    features, alpha, folds, n_permutations, seed, params, prefix, use_cache, iid_check, correction, combination,
    control, adjust_length
        As ``audit.run_dataset_inference`` takes them.
    passage_words, max_passages
        Words per passage (at least 16) and passages per book at most.
    checked : Checked, optional
        The check stage already made for these inputs (:func:`check_book_run`): not made again, and its sets
        and settings are the run's.
    load, progress
        ``load(spec) -> LoadedModel``; ``progress(message, fraction)``.

    Returns
    -------
    DatasetInferenceResult
        Its summary has ``mode = "books"`` and ``books`` (one entry per suspect book: ``p_value``,
        ``p_adjusted``, ``flagged``).
    """
    if checked is None:
        checked = check_book_run(suspect, validation, reference=reference is not None, features=features, alpha=alpha,
                                 folds=folds, n_permutations=n_permutations, seed=seed, passage_words=passage_words,
                                 max_passages=max_passages, params=params, prefix=prefix, use_cache=use_cache,
                                 iid_check=iid_check, correction=correction, combination=combination,
                                 control=control, adjust_length=adjust_length)
    return infer_books(checked, target, reference=reference, load=load, progress=progress)


def _book_summary(c: Checked) -> dict:
    """The summary a run over books starts from (filled in by each stage)."""
    st = c.settings
    return {"mode": "books", "n_suspect": len(c.suspect), "n_validation": len(c.validation),
            "alpha": float(st["alpha"]), "folds": int(st["folds"]), "n_permutations": int(st["n_permutations"]),
            "seed": int(st["seed"]), "passage_words": int(st["passage_words"]),
            "max_passages": int(st["max_passages"]), "passages_per_book": int(st["passages_per_book"]),
            "n_passages": int(sum(map(len, c.cut))), "p_value": None, "p_value_ttest": None,
            "self_check_p_value": None, "blind_auc": None, "weights": {}, "features": [], "power_curve": [],
            "books": [], "combination": st["combination"], "correction": st["correction"],
            "control": st.get("control", "auto"), "adjust_length": bool(st.get("adjust_length", True))}


def _book_features(c: Checked, yb: np.ndarray, target, control, cfg, attacks: list, notes: list,
                   progress: Progress, *, calibrated: bool):
    """The features stage over books: every passage's features from one scoring stage (calibrated against the
    control and adjusted for length as the run says), a book's the means over its passages with every feature.
    Returns the stage's :class:`~mia_core.dataset_inference.stages.Features` with the books' rows (``ok``: the
    books kept)."""
    texts = [p for cut in c.cut for p in cut]
    owner = np.repeat(np.arange(len(c.cut)), [len(cut) for cut in c.cut])
    fs = feature_stage(texts, yb[owner], [f"p{i + 1:05d}" for i in range(len(texts))], target, reference=control,
                       population=[], cfg=cfg, attacks=attacks, notes=notes, progress=progress, control=calibrated,
                       adjust_length=c.settings.get("adjust_length", True))

    def means(X):
        Xb = np.full((len(c.cut), X.shape[1]), np.nan)
        for b in range(len(c.cut)):
            sel = fs.ok & (owner == b)
            if sel.any():
                Xb[b] = X[sel].mean(0)
        return Xb

    Xb = means(fs.X)
    cXb = None if fs.control_X is None else means(fs.control_X)
    kept = np.isfinite(Xb).all(1)
    if (~kept).any():
        notes.append(f"{counted(int((~kept).sum()), 'books')} excluded: no passage with every feature")
    ntok = np.array([fs.n_tokens[owner == b].sum() for b in range(len(c.cut))])
    return Features(fs.names, Xb, kept, ntok, fs.control_names, cXb, fs.length_r2)


def _book_tests(Xb: np.ndarray, yb: np.ndarray, kept: np.ndarray, st: dict, notes: list, progress: Progress,
                names=None) -> dict:
    """The tests stage over books (``verdict.test_stage``, no split t-test) on the books kept, and its note."""
    if yb[kept].sum() < 2 or (1 - yb[kept]).sum() < 2:
        raise DataError("fewer than 2 suspect or validation books have usable passages: nothing to test")
    progress("permutation test over books", 0.93)
    tested = test_stage(Xb[kept], yb[kept], alpha=st["alpha"], folds=st["folds"], n_permutations=st["n_permutations"],
                        seed=st["seed"], combination=st["combination"], correction=st["correction"], paper=False,
                        unit="book", names=names)
    tested_notes(tested, st["alpha"], notes, paper=False)
    return tested


def _per_book(c: Checked, yb: np.ndarray, kept: np.ndarray, tested: dict) -> list[dict]:
    """The per-book p-values stage: each suspect book kept, its passages, label-free score, conformal p-value,
    adjusted p-value and whether it is flagged."""
    books, u = [*c.suspect, *c.validation], tested["units"]
    sus = np.flatnonzero((yb == 1) & kept)
    return [{"book": books[i].name, "n_passages": len(c.cut[i]), "score": float(sc), "p_value": float(p),
             "p_adjusted": float(pa), "flagged": bool(f)}
            for i, sc, p, pa, f in zip(sus, u["score"][yb[kept] == 1], u["p_value"], u["p_adjusted"], u["flagged"])]


def infer_books(checked: Checked, target, *, reference=None, load=None,
                progress: Progress | None = None) -> DatasetInferenceResult:
    """The stages of a run over books after the check: guard -> load models -> features -> tests -> per-book
    p-values -> result.

    Parameters
    ----------
    checked : Checked
        :func:`check_book_run`'s result (``mode = "books"``).
    target, reference, load, progress
        As :func:`run_book_inference` takes them.

    Returns
    -------
    DatasetInferenceResult
    """
    progress = progress or noop
    t0 = time.time()
    c, st, notes = checked, checked.settings, list(checked.notes)
    summary, n_s = _book_summary(c), len(c.suspect)
    yb = np.r_[np.ones(n_s, int), np.zeros(len(c.validation), int)]
    df = pd.DataFrame({"book": [d.name for d in [*c.suspect, *c.validation]],
                       "set": np.where(yb == 1, "suspect", "validation")})
    if not guard_stage([" ".join(p) for p in c.cut[:n_s]], [" ".join(p) for p in c.cut[n_s:]], seed=st["seed"],
                       iid_check=st["iid_check"], summary=summary, notes=notes, progress=progress,
                       adjust_length=st.get("adjust_length", True)):
        summary["seconds"] = round(time.time() - t0, 2)
        return DatasetInferenceResult(summary=summary, scores=df, report=notes)
    if st["iid_check"]:
        notes.append("with few books the blind baseline has little power: it cannot rule out a shift between "
                     "the two sets of books, only catch a large one")
    target, reference = load_stage(target, reference, load)
    summary.update(model=model_name(target), reference_model=None if reference is None else model_name(reference))
    control, cfg, attacks = control_stage(target, reference, c, load, summary, notes)
    fs = _book_features(c, yb, target, control if control is not None else reference, cfg, attacks, notes, progress,
                        calibrated=control is not None)
    names, Xb, kept = fs.names, fs.X, fs.ok
    summary.update(length_r2=fs.length_r2)
    if control_refusal(fs, yb, st, summary, notes, unit="books"):
        summary["seconds"] = round(time.time() - t0, 2)
        return DatasetInferenceResult(summary=summary, scores=df, report=notes)
    tested = _book_tests(Xb, yb, kept, st, notes, progress, names)
    summary.update(tested["summary"], features=names, weights=dict(zip(names, tested["perm"]["weights"])),
                   books=_per_book(c, yb, kept, tested), n_excluded=int((~kept).sum()),
                   iid_check=bool(st["iid_check"]), seconds=round(time.time() - t0, 2),
                   scored_tokens={"prefix": st["prefix"]})
    rests_on(summary, fs, st.get("adjust_length", True))
    df["n_passages"] = [len(p) for p in c.cut]
    df = units_frame(df, names, Xb, kept, tested)
    progress("done", 1.0)
    return DatasetInferenceResult(summary=summary, scores=df, metrics=tested["metrics"], report=notes)
