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

* **Collection test**: the cross-fitted permutation test (``significance.permutation_test``) on
  book-level features, suspect books against validation books: exact under exchangeability of the
  books. With few books the p-value cannot go below ``1 / C(n_s + n_v, n_s)`` whatever the signal.
* **Per-book p-values** (conformal): a suspect book's out-of-fold combined score ranked among the
  validation books' out-of-fold scores, ``p_b = (1 + #{v: s_v >= s_b}) / (1 + n_v)`` (Bates, Candes,
  Lei, Romano & Sesia 2023, "Testing for outliers with conformal p-values", Ann. Statist.). The scores
  of different folds come from different fitted models, so this is exact only approximately; read it
  as a ranking on a calibrated scale. It cannot go below ``1 / (1 + n_v)``: with 20 validation books
  no single book can be flagged at alpha = 0.01 (the run says so). **Benjamini-Hochberg** across the
  suspect books (``correction="bh"``, the default: the false-discovery rate among the flagged books,
  valid for conformal p-values, which are positively dependent: Bates et al. 2023, Thm 2) or
  **Holm** (``correction="holm"``: the family-wise error rate, valid under any dependence, and
  stricter); a book is flagged when its adjusted p is at most alpha.

Not done here: the paper's split t-test (with a handful of books, half of them only train) and the
power curve over books.
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import DataError
from ..progress import Progress, noop
from . import features as F
from .audit import DEFAULT_ALPHA, DatasetInferenceResult
from .guards import iid_guard, near_duplicates
from .significance import DEFAULT_FOLDS, DEFAULT_PERMUTATIONS, format_p, permutation_test

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


def benjamini_hochberg(p: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (the step-up FDR procedure, Benjamini & Hochberg 1995)."""
    p = np.asarray(p, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adj = np.empty(m)
    running = 1.0
    for rank in range(m - 1, -1, -1):
        i = order[rank]
        running = min(running, p[i] * m / (rank + 1))
        adj[i] = min(running, 1.0)
    return adj


CORRECTIONS = {"bh": benjamini_hochberg}


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979): family-wise error control under any dependence."""
    p = np.asarray(p, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adj = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adj[i] = running
    return adj


CORRECTIONS["holm"] = holm


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


def run_book_inference(suspect, validation, target, *, reference=None, features="default",
                       alpha: float = DEFAULT_ALPHA, folds: int = DEFAULT_FOLDS,
                       n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0,
                       passage_words: int = PASSAGE_WORDS, max_passages: int = MAX_PASSAGES, params: dict | None = None,
                       prefix: str = "auto", use_cache: bool = True, iid_check: bool = True,
                       correction: str = "bh", load=None, progress: Progress | None = None) -> DatasetInferenceResult:
    """Dataset inference over books (module docstring). ``suspect`` / ``validation``: lists of
    :class:`mia_core.documents.Document`. Returns a :class:`DatasetInferenceResult` whose summary has
    ``mode = "books"`` and ``books`` (one entry per suspect book: ``p_value``, ``p_adjusted``, ``flagged``)."""
    from ..errors import SettingsError

    if correction not in CORRECTIONS:
        raise SettingsError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
    from ..attacks import REGISTRY
    from ..data import Dataset
    from ..pipeline import RunConfig, check_config, score_stage
    from ..stats import StatsSettings

    progress = progress or noop
    t0 = time.time()
    notes = check_books(suspect, validation, passage_words=passage_words, max_passages=max_passages)
    fams = F.parse_features(features, reference=reference is not None, population=False)
    cfg = check_config(RunConfig(attacks=fams, params=dict(params or {}), stats=StatsSettings(prefix=prefix),
                                 use_cache=use_cache, n_bootstrap=0, blind=False))
    books = [*suspect, *validation]
    yb = np.r_[np.ones(len(suspect), int), np.zeros(len(validation), int)]
    cut = [passages(d.text, passage_words, max_passages) for d in books]
    summary = {"mode": "books", "n_suspect": len(suspect), "n_validation": len(validation), "alpha": float(alpha),
               "folds": int(folds), "n_permutations": int(n_permutations), "seed": int(seed),
               "passage_words": int(passage_words), "max_passages": int(max_passages),
               "n_passages": int(sum(map(len, cut))), "p_value": None, "p_value_ttest": None, "null_p_value": None,
               "blind_auc": None, "weights": {}, "features": [], "power_curve": [], "books": []}
    if iid_check:
        progress("IID guard: blind baseline over the books", 0.02)
        guard = iid_guard([" ".join(c) for c in cut[:len(suspect)]], [" ".join(c) for c in cut[len(suspect):]],
                          seed=seed)
        summary.update(blind_auc=guard["blind_auc"], blind_auc_ci=guard["blind_auc_ci"])
        if not guard["ok"]:
            summary.update(verdict="refused", verdict_reason=guard["message"], seconds=round(time.time() - t0, 2))
            df = pd.DataFrame({"book": [d.name for d in books], "set": np.where(yb == 1, "suspect", "validation")})
            return DatasetInferenceResult(summary=summary, scores=df, report=notes)
        if guard["caution"]:
            notes.append(f"IID guard: {guard['message']}")
        notes.append("with few books the blind baseline has little power: it cannot rule out a shift between "
                     "the two sets of books, only catch a large one")
    if load is not None:
        target = load(target)
        reference = load(reference) if reference is not None else None
    texts = [p for c in cut for p in c]
    owner = np.repeat(np.arange(len(books)), [len(c) for c in cut])
    attacks = [REGISTRY[n] for n in fams]
    st = score_stage(texts, target, reference=reference, cfg=cfg, attacks=attacks, population=None,
                     progress=lambda m, f: progress(m, 0.05 + 0.85 * f),
                     dataset=Dataset(texts=texts, labels=yb[owner], ids=[f"p{i + 1:05d}" for i in range(len(texts))],
                                     report=[]), train_mask=np.zeros(len(texts), bool))
    notes += st.report
    names, X, ok, fnotes = F.clean(F.feature_columns(st.inputs, attacks, cfg.params, st.scores))
    notes += fnotes
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
    perm = permutation_test(Xb[kept], yb[kept], folds=folds, n_permutations=n_permutations, seed=seed)
    Xv = Xb[kept & (yb == 0)]
    half = np.zeros(len(Xv), int)
    half[np.random.default_rng([seed, 2]).permutation(len(Xv))[: len(Xv) // 2]] = 1
    null = permutation_test(Xv, half, folds=min(folds, len(Xv)), n_permutations=n_permutations, seed=seed + 1)
    score = np.full(len(books), np.nan)
    score[kept] = perm["oof_scores"]
    sv = score[(yb == 0) & kept]
    sus = np.flatnonzero((yb == 1) & kept)
    p_book = np.array([(1 + (sv >= score[i]).sum()) / (1 + len(sv)) for i in sus])
    p_adj = CORRECTIONS[correction](p_book) if len(p_book) else p_book
    per_book = [{"book": books[i].name, "n_passages": len(cut[i]), "score": float(score[i]), "p_value": float(p),
                 "p_adjusted": float(pa), "flagged": bool(pa <= alpha)} for i, p, pa in zip(sus, p_book, p_adj)]
    floor = 1 / (1 + len(sv))
    if floor > alpha:
        notes.append(f"a book's own p-value cannot go below 1 / (1 + {len(sv)} validation books) = {floor:.3g} > alpha "
                     f"{alpha}: no single book can be flagged with so few validation books (the collection test is "
                     "not limited this way)")
    p = perm["p_value"]
    verdict = "used" if p <= alpha else "not_shown"
    reason = (f"the suspect books score as trained-on more than the validation books "
              f"({format_p(p, perm['p_value_is_bound'])} <= alpha {alpha}); {sum(b['flagged'] for b in per_book)} of "
              f"{len(per_book)} book(s) flagged individually ({correction.upper() if correction == 'bh' else 'Holm'}-adjusted)" if verdict == "used" else
              f"no significant difference between the books ({format_p(p, perm['p_value_is_bound'])} > alpha {alpha}): "
              "not shown that the suspect books were used (more books give more power)")
    summary.update(verdict=verdict, verdict_reason=reason, features=names, p_value=p,
                   p_value_is_bound=perm["p_value_is_bound"], p_value_resolution=perm["resolution"],
                   p_value_crossfit_ttest=perm["p_value_welch"], null_p_value=null["p_value"],
                   null_p_value_is_bound=null["p_value_is_bound"], weights=dict(zip(names, perm["weights"])),
                   books=per_book, correction=correction, n_excluded=int((~kept).sum()), iid_check=bool(iid_check),
                   seconds=round(time.time() - t0, 2), scored_tokens={"prefix": prefix})
    df = pd.DataFrame({"book": [d.name for d in books], "set": np.where(yb == 1, "suspect", "validation"),
                       "n_passages": [len(c) for c in cut]})
    for n, c in zip(names, Xb.T):
        df[n] = c
    df["score"] = score
    df["excluded"] = ~kept
    col_p, col_a = np.full(len(books), np.nan), np.full(len(books), np.nan)
    col_p[sus], col_a[sus] = p_book, p_adj
    df["p_value"], df["p_adjusted"] = col_p, col_a
    metrics = {"permutation": {k: v for k, v in perm.items() if k != "oof_scores"},
               "null": {k: v for k, v in null.items() if k != "oof_scores"}}
    progress("done", 1.0)
    return DatasetInferenceResult(summary=summary, scores=df, metrics=metrics, report=notes)
