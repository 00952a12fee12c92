"""RMIA's model side (Zarifzadeh et al. 2024; :mod:`mia_core.attacks.rmia` holds the method and its maths): which
reference models a run reads (a ``make-references`` folder stands for all of its models, with their membership
record), the population sample z, and each reference's statistics passes over the audited and population texts,
one reference model in memory at a time.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..cache import text_hash
from ..errors import SettingsError
from ..targets import REFERENCE_MEMBERS, REFERENCES_INDEX
from .base import AttackInputs

MEMBERS_FILE = REFERENCE_MEMBERS  # written by make-references into every reference folder
INDEX_FILE = REFERENCES_INDEX  # written by make-references into its output folder


def expand_references(specs: list[str]) -> list[tuple[str, set[str] | None]]:
    """``[(model spec, hashes of the texts it trained on, or None when unknown)]``.

    A folder written by ``make-references`` (holding ``references.json``) stands for all of
    its reference models.
    """
    out = []
    for s in specs:
        p = Path(s).expanduser()
        if p.is_dir() and (p / INDEX_FILE).exists():
            index = json.loads((p / INDEX_FILE).read_text())
            for r in index.get("references", []):
                out.extend(expand_references([str(p / r["dir"])]))
            continue
        members = None
        if p.is_dir() and (p / MEMBERS_FILE).exists():
            members = set(json.loads((p / MEMBERS_FILE).read_text()).get("text_hashes", []))
        out.append((s, members))
    return out


def population_sample(ctx, st: dict) -> list[str]:
    """The population texts z RMIA compares with (all, or ``n_z`` of them drawn with ``seed``).

    Parameters
    ----------
    ctx : RunContext
        The run's context (its ``population``).
    st : dict
        The checked parameters (:func:`mia_core.attacks.rmia._settings`).

    Returns
    -------
    list of str
        The sampled population texts, in their original order.
    """
    pop = getattr(ctx, "population", None)
    if pop is None or not len(pop):
        raise SettingsError("RMIA (rmia) needs known non-member texts: give {population}", options=("population",))
    z_texts = list(pop.texts)
    if st["n_z"] is not None and st["n_z"] < len(z_texts):
        idx = np.sort(np.random.default_rng(st["seed"]).permutation(len(z_texts))[: st["n_z"]])
        z_texts = [z_texts[i] for i in idx]
    return z_texts


def reference_list(ctx, st: dict) -> tuple[list[tuple[str | None, set[str] | None]], str]:
    """The reference models RMIA reads: ``references=`` folders (checked before any pass), else the run's reference.

    Parameters
    ----------
    ctx : RunContext
        The run's context (its ``reference``).
    st : dict
        The checked parameters (:func:`mia_core.attacks.rmia._settings`).

    Returns
    -------
    tuple
        ``(refs, variant)``: ``[(spec, members)]`` (``(None, None)`` for the run's own reference) and the
        variant's description.
    """
    if st["references"]:
        from ..models import resolve_spec

        refs = expand_references(st["references"])
        for spec, _ in refs:  # a missing folder or file: one-line error before any model pass
            resolve_spec(spec)
        return refs, f"{len(refs)} reference model(s)"
    if ctx.reference is None:
        raise SettingsError("RMIA (rmia) without references= needs a reference model ({reference})",
                            options=("reference",))
    return [(None, None)], "offline, the run's reference model"


def reference_passes(inputs: AttackInputs, ctx, refs, z_texts: list[str]) -> tuple[list, list, list, list[dict]]:
    """Each reference model's passes on the audited and the population texts, one model in memory at a time.

    Parameters
    ----------
    inputs : AttackInputs
        The audited texts.
    ctx : RunContext
        The run's context (``compute``, ``reference``, ``target``, ``progress``).
    refs : list of tuple
        From :func:`reference_list`.
    z_texts : list of str
        The population texts.

    Returns
    -------
    tuple
        ``(ref_stats, seen_x, seen_z, described)``: ``[(stats on x, stats on z)]`` per reference, which audited
        and population texts each reference trained on, and a description of each reference.
    """
    target = ctx.target
    ref_stats, seen_x, seen_z, described = [], [], [], []
    x_hash = [text_hash(t) for t in inputs.texts]
    z_hash = [text_hash(t) for t in z_texts]
    for k, (spec, members) in enumerate(refs):
        if spec is None:
            lm = ctx.reference
        else:
            from ..models import load_causal_lm

            lm = load_causal_lm(spec, dtype=target.dtype, device=target.device, progress=ctx.progress, reuse=False)
        rx = ctx.compute(lm, list(inputs.texts), label=f"RMIA reference {k + 1}/{len(refs)}")
        rz = ctx.compute(lm, z_texts, label=f"RMIA reference {k + 1}/{len(refs)} (population)")
        ref_stats.append((rx, rz))
        seen_x.append(np.array([h in members for h in x_hash]) if members else np.zeros(len(x_hash), bool))
        seen_z.append(np.array([h in members for h in z_hash]) if members else np.zeros(len(z_hash), bool))
        described.append({"model": lm.name, "identity": lm.identity, "same_tokenizer": target.same_tokenizer(lm),
                          "membership_record": members is not None,
                          "population_texts_seen": int(seen_z[-1].sum()), "audited_texts_seen": int(seen_x[-1].sum())})
        if spec is not None:
            del lm  # one reference model in memory at a time
    return ref_stats, seen_x, seen_z, described
