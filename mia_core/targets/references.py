"""``make-references``: reference models for RMIA (Zarifzadeh et al. 2024), each on a random half of a population.

The stages, each a short function: :func:`check_population` -> :func:`prepare_folder` ->
:func:`train_reference` for each of the :func:`reference_splits` -> :func:`references_record`, written
as ``references.json``. Every reference is a ``make-target`` target folder (:func:`.target.make_target`,
the same recipe), ``ref-0 .. ref-<k-1>``, with the record of which population texts it saw
(``reference_members.json``).
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import DataError, SettingsError
from ..models import EMBEDDED_NAME
from ..progress import Progress, noop
from .recipe import base_record, prepare_out, texts_sha256, threads
from .target import make_target

REFERENCES_INDEX = "references.json"  # the folder's record: which texts every reference trained on
REFERENCE_MEMBERS = "reference_members.json"  # in every reference folder: hashes of its training texts


def reference_splits(n: int, k: int, seed: int = 0) -> list[list[int]]:
    """Indices of the population texts each of ``k`` reference models trains on.

    Reference models come in pairs trained on complementary random halves (ML Privacy Meter's
    ``split_dataset_for_training``): every text is IN for exactly one model of each pair, so
    with an even ``k`` every population text has exactly ``k/2`` references that never saw it
    (RMIA estimates ``Pr(z)`` from those). An odd ``k`` ends with one random half.
    Seeded (``numpy.random.default_rng(seed)``); the indices of each half are sorted.
    """
    rng = np.random.default_rng(seed)
    out: list[list[int]] = []
    perm = None
    for i in range(k):
        if i % 2 == 0:
            perm = rng.permutation(n)
            out.append(sorted(int(j) for j in perm[: n // 2]))
        else:
            out.append(sorted(int(j) for j in perm[n // 2 :]))
    return out


def check_population(population_texts: Sequence[str], k: int) -> list[str]:
    """The distinct, stripped, non-empty population texts in order.

    Parameters
    ----------
    population_texts
        The population set.
    k
        The number of reference models (a whole number >= 1, else ``SettingsError``).

    Returns
    -------
    list of str
        The texts; ``DataError`` when fewer than 2 remain.
    """
    if not isinstance(k, int) or k < 1:
        raise SettingsError(f"k (the number of reference models) must be a whole number >= 1, got {k!r}.")
    texts = list(dict.fromkeys(str(t).strip() for t in population_texts if str(t).strip()))
    if len(texts) < 2:
        raise DataError(f"the population needs at least 2 distinct texts to split in halves, got {len(texts)}.")
    return texts


def prepare_folder(out: Path, overwrite: bool) -> None:
    """Check ``out`` (:func:`.recipe.prepare_out` for a reference folder), create it and mark it as this
    tool's, without ``references.json`` until every reference is written."""
    from ..runs.outputs import write_marker

    prepare_out(out, overwrite, marker=REFERENCES_INDEX, kind="reference")
    out.mkdir(parents=True, exist_ok=True)
    write_marker(out, kind="references")  # a partial folder (a stopped run) stays recognisably ours
    (out / REFERENCES_INDEX).unlink(missing_ok=True)  # written again at the end: a partial folder has none


def train_reference(texts: list[str], idx: list[int], i: int, k: int, out: Path, base: str | None, epochs: int,
                    seed: int, progress: Progress, target_kwargs: dict) -> dict:
    """Train reference ``i`` on the population texts at ``idx`` (the others held out) into ``out/ref-<i>``.

    Parameters
    ----------
    texts, idx
        The population and the indices of this reference's half.
    i, k
        This reference's number and how many there are (for progress).
    out
        The references folder.
    base, epochs, seed
        As :func:`make_references` takes them; this reference trains with seed ``seed + i``.
    progress
        ``progress(message, fraction)`` of the whole run.
    target_kwargs
        ``overwrite``, ``command``, ``data_files`` and the training options, passed to ``make_target``.

    Returns
    -------
    dict
        The reference's entry in ``references.json``.
    """
    from ..cache import text_hash

    members = [texts[j] for j in idx]
    chosen = set(idx)
    heldout = [t for j, t in enumerate(texts) if j not in chosen]

    def sub(msg: str, frac: float) -> None:
        progress(f"reference {i + 1}/{k}: {msg}", (i + min(frac, 1.0)) / k)

    t0 = time.time()
    log = make_target(members, base=base, out_dir=out / f"ref-{i}", epochs=epochs, seed=seed + i,
                      heldout_texts=heldout, progress=sub, **target_kwargs)
    (out / f"ref-{i}" / REFERENCE_MEMBERS).write_text(json.dumps(
        {"text_hashes": [text_hash(t) for t in members], "indices": idx, "n_population": len(texts)}))
    return {"dir": f"ref-{i}", "seed": seed + i, "n_members": len(members), "seconds": round(time.time() - t0, 1),
            "final": log["final"], "n_trainable_params": log["n_trainable_params"]}


def references_record(texts: list[str], base: str | None, k: int, seed: int, epochs: int, refs: list[dict],
                      seconds: float, command: str | None, data_files: dict | None, train_kwargs: dict) -> dict:
    """The record written to ``references.json``: the population's hash, the split, the options and every
    reference with the seconds it took."""
    return {
        "k": k,
        "base": base_record(base),
        "n_population": len(texts),
        "population_sha256": texts_sha256(texts),
        "split": "complementary random halves in pairs (ML Privacy Meter), numpy default_rng(seed)",
        "seed": seed,
        "epochs": epochs,
        "train_options": {kk: v for kk, v in train_kwargs.items() if isinstance(v, (int, float, str, type(None)))},
        "references": refs,
        "seconds": round(seconds, 1),
        "seconds_per_reference": round(seconds / k, 1),
        "threads": threads(),
        "command": command,
        "data_files": data_files or {},
    }


def make_references(
    population_texts: Sequence[str],
    base: str | None = EMBEDDED_NAME,
    out_dir: str | Path = "references",
    k: int = 4,
    epochs: int = 1,
    seed: int = 0,
    progress: Progress | None = None,
    *,
    overwrite: bool = False,
    command: str | None = None,
    data_files: dict | None = None,
    **train_kwargs,
) -> dict:
    """Train ``k`` reference models for RMIA, each on a random half of ``population_texts``.

    Every reference is trained exactly like a ``make-target`` target (:func:`make_target`, same
    recipe and options in ``train_kwargs``: method, lr, max_length, batch_size, LoRA rank...)
    on its half (:func:`reference_splits`; the other half is its held-out set), with seed
    ``seed + i``, and written to ``out_dir/ref-<i>`` (a target folder any command loads), with
    ``reference_members.json`` (the SHA-256-based hashes of the texts it trained on, as
    ``mia_core.cache.text_hash`` computes them, and their indices). ``out_dir/references.json``
    lists them with the seconds each took. Cost: ``k`` fine-tunes on ``N/2`` texts each.

    Returns
    -------
    dict
        The record written to ``references.json``, with ``out_dir``.
    """
    progress = progress or noop
    texts = check_population(population_texts, k)
    out = Path(out_dir).expanduser()
    prepare_folder(out, overwrite)
    target_kwargs = dict(overwrite=overwrite, command=command, data_files=data_files, **train_kwargs)
    t_start = time.time()
    refs = [train_reference(texts, idx, i, k, out, base, epochs, seed, progress, target_kwargs)
            for i, idx in enumerate(reference_splits(len(texts), k, seed))]
    record = references_record(texts, base, k, seed, epochs, refs, time.time() - t_start, command, data_files,
                               train_kwargs)
    (out / REFERENCES_INDEX).write_text(json.dumps(record, indent=2))
    progress(f"{k} reference models written to {out}", 1.0)
    record["out_dir"] = str(out)
    return record
