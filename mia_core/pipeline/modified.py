"""Modified members (SMIA, Mozaffari & Marathe 2024 §5.2): are attacks robust to one-word edits?

An auditor rarely holds the exact string a model was trained on. SMIA §5.2 evaluates attacks
on members changed by one word -- a word **duplicated**, **deleted**, or **added** -- next to
the verbatim members, with the non-members unchanged. :func:`run_modified` does the same for
every attack of a run: each variant re-runs :func:`mia_core.pipeline.run_attacks` with the
evaluated members replaced by their modified copies; the training part (for SMIA) is left
untouched, so a trained attack is always evaluated on texts it never saw. :func:`summary_table`
prints the result.

The edits themselves (:func:`modify_texts`, :data:`VARIANTS`, :class:`Modification`) are text
operations next to the neighbour edits, in :mod:`mia_core.neighbours.edits`; they are
re-exported here.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from ..data import Dataset, split_mask
from ..errors import DataError, SettingsError
from ..neighbours import NeighbourSettings
from ..neighbours.edits import (VARIANTS, Modification, delete_word, duplicate_word, insert_word,  # noqa: F401
                               modify_texts)
from ..progress import Progress, noop


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
    from . import RunConfig, run_attacks

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
                from ..attacks.neighbourhood import settings_from

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
