"""Modified members (SMIA, Mozaffari & Marathe 2024 §5.2): are attacks robust to one-word edits?

An auditor rarely holds the exact string a model was trained on. SMIA §5.2 evaluates attacks
on members changed by one word -- a word **duplicated**, **deleted**, or **added** -- next to
the verbatim members, with the non-members unchanged. :func:`run_modified` does the same for
every attack of a run: each variant re-runs :func:`mia_core.pipeline.run_attacks` with the
evaluated members replaced by their modified copies; the training part (for SMIA) is left
untouched, so a trained attack is always evaluated on texts it never saw.

* ``duplicate``: a random word is repeated right after itself (``the old man`` ->
  ``the old old man``);
* ``delete``: a random word and one neighbouring space are removed;
* ``add``: a word is inserted before a random lower-case word that follows a space; the
  word is the neighbour generator's first proposal for that gap (the offline generator's
  causal LM proposes it from the left context and re-ranks with the right context; a
  masked LM fills a mask token; T5 fills a sentinel).

Positions are drawn with ``numpy.random.default_rng([seed, text hash, variant])``, so the
same member always gets the same edit.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from .data import Dataset
from .errors import DataError, SettingsError
from .neighbours import NeighbourSettings, make_generator
from .neighbours.words import Word, text_rng, words
from .progress import Progress, noop

VARIANTS = ("duplicate", "delete", "add")


@dataclass(frozen=True)
class Modification:
    text: str  # the modified text (the original when no edit was possible)
    variant: str
    word_index: int  # index (in the original's words) of the word duplicated / deleted / inserted before
    word: str  # the word duplicated, deleted or added
    ok: bool = True


def _rng(seed: int, text: str, variant: str) -> np.random.Generator:
    return text_rng(seed, text, VARIANTS.index(variant))


def _free(text: str, w: Word) -> bool:
    """A plain alphabetic word delimited by spaces/punctuation (not inside ``well-known``)."""
    before = text[w.start - 1] if w.start > 0 else " "
    after = text[w.end] if w.end < len(text) else " "
    return w.text.isalpha() and not (before.isalnum() or before in "-_'’" or after.isalnum() or after in "-_'’")


def duplicate_word(text: str, i: int) -> str:
    w = words(text)[i]
    return text[: w.end] + " " + w.text + text[w.end :]


def delete_word(text: str, i: int) -> str:
    w = words(text)[i]
    if w.end < len(text) and text[w.end] == " ":
        return text[: w.start] + text[w.end + 1 :]
    if w.start > 0 and text[w.start - 1] == " ":
        return text[: w.start - 1] + text[w.end :]
    return text[: w.start] + text[w.end :]


def insert_word(text: str, before: int, word: str) -> str:
    w = words(text)[before]
    return text[: w.start] + word + " " + text[w.start :]


def _deletable(text: str, ws: list[Word], i: int) -> bool:
    w = ws[i]
    if not _free(text, w):
        return False
    left = text[w.start - 1] if w.start > 0 else ""
    right = text[w.end] if w.end < len(text) else ""
    # one side must be a space we can remove, and removing must not glue two words together
    return right == " " or left == " "


def modify_texts(texts: Sequence[str], variant: str, *, seed: int = 0, generator=None,
                 neighbours: NeighbourSettings | None = None) -> list[Modification]:
    """One-word edit of each text. ``generator`` (or ``neighbours`` settings) proposes added words."""
    if variant not in VARIANTS:
        raise SettingsError(f"unknown modification {variant!r}: choose from {', '.join(VARIANTS)}")
    out: list[Modification | None] = [None] * len(texts)
    add_jobs: list[tuple[int, int]] = []
    for k, t in enumerate(texts):
        ws = words(t)
        rng = _rng(seed, t, variant)
        if variant == "duplicate":
            cand = [i for i, w in enumerate(ws) if _free(t, w)]
        elif variant == "delete":
            cand = [i for i in range(len(ws)) if _deletable(t, ws, i)] if len(ws) > 1 else []
        else:
            cand = [i for i, w in enumerate(ws) if i > 0 and w.text.islower() and w.text.isalpha()
                    and w.start > 0 and t[w.start - 1] == " "]
        if not cand:
            out[k] = Modification(t, variant, -1, "", ok=False)
            continue
        i = int(rng.choice(cand))
        if variant == "duplicate":
            out[k] = Modification(duplicate_word(t, i), variant, i, ws[i].text)
        elif variant == "delete":
            out[k] = Modification(delete_word(t, i), variant, i, ws[i].text)
        else:
            add_jobs.append((k, i))
    if add_jobs:
        gen = generator or make_generator(neighbours or NeighbourSettings())
        props = gen.propose_insertions([texts[k] for k, _ in add_jobs], [i for _, i in add_jobs])
        for (k, i), w in zip(add_jobs, props):
            if w:
                out[k] = Modification(insert_word(texts[k], i, w), variant, i, w)
            else:
                out[k] = Modification(texts[k], variant, i, "", ok=False)
    return out  # type: ignore[return-value]


def run_modified(dataset: Dataset, target, *, variants: Sequence[str] = VARIANTS, reference=None, config=None,
                 train: Dataset | None = None, population: Dataset | None = None,
                 neighbours: NeighbourSettings | None = None, seed: int = 0, progress: Progress = noop,
                 verbatim: dict | None = None) -> dict:
    """Every attack's metrics on the verbatim members and on each one-word variant.

    Returns ``{"verbatim": metrics, "duplicate": metrics, ..., "modifications": {variant:
    [{"id", "word_index", "word", "ok"}, ...]}, "n_unmodified": {variant: count}}`` where
    ``metrics`` is ``RunResult.metrics`` (AUC, TPR at low FPR with CIs per attack). When
    ``config.split`` is set, the split is made once and the same training part is used for
    every variant. ``verbatim``: metrics of the verbatim run with the same settings, when
    already computed (skips that run).
    """
    from .pipeline import RunConfig, run_attacks, split_mask

    cfg = config or RunConfig()
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        raise SettingsError(f"unknown modification(s) {', '.join(bad)}: choose from {', '.join(VARIANTS)}")
    if train is not None and cfg.split:
        raise SettingsError("give either a separate training set or a split fraction, not both")
    if cfg.split:
        mask = split_mask(np.asarray(dataset.labels, dtype=int), cfg.split, cfg.split_seed)
        train, evaluated = dataset.subset(mask), dataset.subset(~mask)
        cfg = replace(cfg, split=None)
    else:
        evaluated = dataset
    if evaluated.n_members == 0:
        raise DataError("no evaluated members to modify")
    if neighbours is None:
        for name in ("smia", "neighbourhood"):
            if name in cfg.params:
                from .attacks.neighbourhood import settings_from

                neighbours = settings_from(cfg.params[name])
                break
    steps = ["verbatim", *variants]
    out: dict = {"modifications": {}, "n_unmodified": {}}
    mem_idx = [i for i, y in enumerate(evaluated.labels) if y == 1]
    for s_i, variant in enumerate(steps):
        def sub(msg: str, frac: float, s_i=s_i, variant=variant) -> None:
            progress(f"{variant}: {msg}", (s_i + frac) / len(steps))

        if variant == "verbatim":
            if verbatim is not None:
                out["verbatim"] = verbatim
                continue
            ds = evaluated
        else:
            mods = modify_texts([evaluated.texts[i] for i in mem_idx], variant, seed=seed, neighbours=neighbours)
            texts = list(evaluated.texts)
            for i, m in zip(mem_idx, mods):
                texts[i] = m.text
            ds = Dataset(texts=texts, labels=evaluated.labels, ids=list(evaluated.ids), groups=evaluated.groups,
                         sources=list(evaluated.sources), report=[])
            out["modifications"][variant] = [
                {"id": evaluated.ids[i], "word_index": m.word_index, "word": m.word, "ok": m.ok}
                for i, m in zip(mem_idx, mods)
            ]
            out["n_unmodified"][variant] = sum(not m.ok for m in mods)
        res = run_attacks(ds, target, reference=reference, config=cfg, train=train, population=population,
                          progress=sub)
        out[variant] = res.metrics
    return out


def summary_table(results: dict, fpr: str = "0.01") -> str:
    """Plain-text table: AUC (and TPR at ``fpr``) per attack and variant."""
    variants = [v for v in ("verbatim", *VARIANTS) if v in results]
    attacks = [a for a in results["verbatim"] if a != "blind"]
    head = f"{'attack':<16}" + "".join(f"{v:>22}" for v in variants)
    lines = [head, "-" * len(head)]
    for a in attacks:
        cells = []
        for v in variants:
            m = results[v].get(a, {})
            tpr = m.get("tpr_at_fpr", {}).get(fpr)
            cells.append(f"{m.get('auc', float('nan')):.3f} / {tpr if tpr is not None else float('nan'):.3f}")
        lines.append(f"{a:<16}" + "".join(f"{c:>22}" for c in cells))
    lines.append(f"(AUC / TPR at {float(fpr):.0%} FPR on the evaluated texts; members modified, non-members verbatim)")
    return "\n".join(lines)
