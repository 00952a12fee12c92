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

Not done here: the paper's split t-test (with a handful of books, half of them only train) and the
power curve over books.
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import DataError, SettingsError
from ..progress import Progress, noop
from . import features as F
from .audit import (DEFAULT_ALPHA, DatasetInferenceResult, check_test_settings, feature_stage, guard_stage,
                    model_name, units_frame)
from .guards import near_duplicates
from .significance import DEFAULT_COMBINATION, DEFAULT_FOLDS, DEFAULT_PERMUTATIONS
from .verdict import CORRECTIONS, benjamini_hochberg, holm, test_stage  # noqa: F401 - the names books used to hold

PASSAGE_WORDS = 256
MAX_PASSAGES = 40
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
            raise DataError(f"the {name} set has {len(s)} book(s); the book test needs at least {MIN_BOOKS} in each "
                            "set (the book is the unit of the test)")
    if int(passage_words) < 16 or int(max_passages) < 1:
        raise DataError("passages need at least 16 words, and at least one passage per book")
    near = near_duplicates([d.text for d in suspect], [d.text for d in validation])
    if near:
        i, j = near[0]
        raise DataError(f"{len(near)} suspect/validation book pair(s) overlap (e.g. {suspect[i].name!r} and "
                        f"{validation[j].name!r}); the sets must be disjoint")
    empty = [d.name for d in [*suspect, *validation] if not passages(d.text, passage_words, max_passages)]
    if empty:
        raise DataError(f"{len(empty)} book(s) hold no words (e.g. {empty[0]!r})")
    return []


def equal_passages(books, passage_words: int, max_passages: int) -> tuple[list[list[str]], int]:
    """Every book cut into the same number of passages: the shortest book's count, at most ``max_passages``."""
    m = min(len(passages(d.text, passage_words, max_passages)) for d in books)
    return [passages(d.text, passage_words, m) for d in books], m


def run_book_inference(suspect, validation, target, *, reference=None, features="default",
                       alpha: float = DEFAULT_ALPHA, folds: int = DEFAULT_FOLDS,
                       n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0,
                       passage_words: int = PASSAGE_WORDS, max_passages: int = MAX_PASSAGES, params: dict | None = None,
                       prefix: str = "auto", use_cache: bool = True, iid_check: bool = True,
                       correction: str = "bh", combination: str = DEFAULT_COMBINATION, load=None,
                       progress: Progress | None = None) -> DatasetInferenceResult:
    """Dataset inference over books (module docstring). ``suspect`` / ``validation``: lists of
    :class:`mia_core.documents.Document`. Returns a :class:`DatasetInferenceResult` whose summary has
    ``mode = "books"`` and ``books`` (one entry per suspect book: ``p_value``, ``p_adjusted``, ``flagged``)."""
    if correction not in CORRECTIONS:
        raise SettingsError(f"{{correction}} must be one of {', '.join(CORRECTIONS)}, got {correction!r}",
                            options=("correction",))
    check_test_settings(alpha=alpha, folds=folds, n_permutations=n_permutations, combination=combination)
    from ..attacks import REGISTRY
    from ..pipeline import RunConfig, check_config
    from ..stats import StatsSettings

    progress = progress or noop
    t0 = time.time()
    notes = check_books(suspect, validation, passage_words=passage_words, max_passages=max_passages)
    fams = F.parse_features(features, reference=reference is not None, population=False)
    cfg = check_config(RunConfig(attacks=fams, params=dict(params or {}), stats=StatsSettings(prefix=prefix),
                                 use_cache=use_cache, n_bootstrap=0, blind=False))
    books = [*suspect, *validation]
    yb = np.r_[np.ones(len(suspect), int), np.zeros(len(validation), int)]
    cut, m = equal_passages(books, passage_words, max_passages)
    if m < max_passages:
        notes.append(f"every book is read as {m} passage(s) of {passage_words} words, spread over the book (the "
                     f"shortest book has {m}): equal counts keep the books exchangeable under the null")
    summary = {"mode": "books", "n_suspect": len(suspect), "n_validation": len(validation), "alpha": float(alpha),
               "folds": int(folds), "n_permutations": int(n_permutations), "seed": int(seed),
               "passage_words": int(passage_words), "max_passages": int(max_passages), "passages_per_book": int(m),
               "n_passages": int(sum(map(len, cut))), "p_value": None, "p_value_ttest": None,
               "self_check_p_value": None, "blind_auc": None, "weights": {}, "features": [], "power_curve": [],
               "books": [], "combination": combination, "correction": correction}
    if not guard_stage([" ".join(c) for c in cut[:len(suspect)]], [" ".join(c) for c in cut[len(suspect):]],
                       seed=seed, iid_check=iid_check, summary=summary, notes=notes, progress=progress):
        summary["seconds"] = round(time.time() - t0, 2)
        df = pd.DataFrame({"book": [d.name for d in books], "set": np.where(yb == 1, "suspect", "validation")})
        return DatasetInferenceResult(summary=summary, scores=df, report=notes)
    if iid_check:
        notes.append("with few books the blind baseline has little power: it cannot rule out a shift between "
                     "the two sets of books, only catch a large one")
    if load is not None:
        target = load(target)
        reference = load(reference) if reference is not None else None
    summary.update(model=model_name(target), reference_model=None if reference is None else model_name(reference))
    texts = [p for c in cut for p in c]
    owner = np.repeat(np.arange(len(books)), [len(c) for c in cut])
    names, X, ok = feature_stage(texts, yb[owner], [f"p{i + 1:05d}" for i in range(len(texts))], target,
                                 reference=reference, population=[], cfg=cfg, attacks=[REGISTRY[n] for n in fams],
                                 notes=notes, progress=progress)
    Xb = np.full((len(books), len(names)), np.nan)
    for b in range(len(books)):
        sel = ok & (owner == b)
        if sel.any():
            Xb[b] = X[sel].mean(0)
    kept = np.isfinite(Xb).all(1)
    if (~kept).any():
        notes.append(f"{int((~kept).sum())} book(s) excluded: no passage with every feature")
    if yb[kept].sum() < 2 or (1 - yb[kept]).sum() < 2:
        raise DataError("fewer than 2 suspect or validation books have usable passages: nothing to test")
    progress("permutation test over books", 0.93)
    tested = test_stage(Xb[kept], yb[kept], alpha=alpha, folds=folds, n_permutations=n_permutations, seed=seed,
                        combination=combination, correction=correction, paper=False, unit="book")
    if tested["unit_note"]:
        notes.append(tested["unit_note"])
    u = tested["units"]
    sus = np.flatnonzero((yb == 1) & kept)
    per_book = [{"book": books[i].name, "n_passages": len(cut[i]), "score": float(sc), "p_value": float(p),
                 "p_adjusted": float(pa), "flagged": bool(f)}
                for i, sc, p, pa, f in zip(sus, u["score"][yb[kept] == 1], u["p_value"], u["p_adjusted"], u["flagged"])]
    summary.update(tested["summary"], features=names, weights=dict(zip(names, tested["perm"]["weights"])),
                   books=per_book, n_excluded=int((~kept).sum()), iid_check=bool(iid_check),
                   seconds=round(time.time() - t0, 2), scored_tokens={"prefix": prefix})
    df = pd.DataFrame({"book": [d.name for d in books], "set": np.where(yb == 1, "suspect", "validation"),
                       "n_passages": [len(c) for c in cut]})
    df = units_frame(df, names, Xb, kept, tested)
    progress("done", 1.0)
    return DatasetInferenceResult(summary=summary, scores=df, metrics=tested["metrics"], report=notes)
