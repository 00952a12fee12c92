"""RMIA: relative membership inference (Zarifzadeh, Liu, Chang, Shokri 2024, "Low-Cost
High-Power Membership Inference Attacks", ICML; the strongest population-based attack of
ML Privacy Meter, ``modules/mia/attacks/rmia.py``).

A text x is compared with population texts z (known non-members) through a pairwise
likelihood ratio: how much more the target likes x than the references do, relative to how
much more it likes z than the references do (§3)::

    LR(x, z)  = ( Pr(x | theta) / Pr(x) ) / ( Pr(z | theta) / Pr(z) )
    score(x)  = Pr_z[ LR(x, z) >= gamma ]          (the fraction of population texts z)

where ``Pr(.)`` is the probability under the reference models ("the marginal over models
trained on population data"), estimated from k reference models. The audited texts are seen
by no reference, so their ``Pr(x)`` can only come from OUT models: the offline approximation
of §3 ("offline" RMIA; a linear model of the unseen IN likelihood from the OUT one),
``Pr(x) = 1/2 ((1 + a) Pr_OUT(x) + (1 - a))`` with ``Pr_OUT`` the mean over the references.
Population texts z get the same estimator from the references that did **not** train on z
(ML Privacy Meter's ``get_out_ref_signals`` keeps the OUT models of each sample), read from
the record ``make-references`` writes (``reference_members.json`` in every reference folder;
``mia_core.finetune``; a reference without it is OUT for every text). A text seen by every
reference gets ``Pr_OUT = (Pr_IN - (1 - a)) / a`` (that linear model inverted, as ML Privacy
Meter does for a single reference).

Why not the online estimate ``1/2 (mean_IN + mean_OUT)`` for population texts seen by half
the references: x and z would then be on different scales (the offline constant term
dominates when sequence likelihoods are small; on the tiny test model every score came out
0). ``online=True`` uses it for every text with both IN and OUT references, the paper's
online setting, which is only sound when the audited texts too were IN for half the
references (references trained on random halves of audited + population texts).

**Likelihood of a text.** ``Pr(x | theta) = exp(-mean NLL)`` over the scored tokens (tokens
2..n, ``AttackInputs.scored``): the geometric-mean token probability, the sequence signal ML
Privacy Meter computes for causal LMs (``get_signals.get_softmax``: exp of the mean
true-token log-probability). When a reference's tokenizer differs from the target's, the
per-byte form ``exp(-NLL(whole string) / bytes)`` is used on both sides instead.

**Variants.** ``references=None`` (default): offline RMIA with the run's single reference
model (``--reference``; for a ``make-target`` target, its base). ``references="A,B,..."``:
k reference models (model specs, loaded with the target's dtype and device), or one folder
written by ``mia make-references`` (all its ``ref-*`` models and their membership record).

**Parameters** (ML Privacy Meter defaults): ``gamma = 1`` (Privacy Meter counts ratios > 1;
the paper's ``>=`` is used here, ties have measure zero), ``a = 0.3`` (Privacy Meter's
``offline_a``; the paper tunes it on a pair of reference models, 0.3 is its default; for
language models sequence likelihoods are small, the constant ``(1 - a)/2`` then dominates
``Pr(x)`` and a = 0.3 scores about like LOSS; a = 1 keeps the reference ratio: demo AUC 0.85 at
a = 0.3 vs 0.98 (base reference) and 0.999 (two population references) at a = 1, README),
``n_z``: how many population texts (a seeded random subset; default all), ``seed``,
``online`` (default False, see above).

**Cost.** One statistics pass per reference model over the audited and population texts
(cached, batched), plus the target pass over the population; the score itself is a sort.
Population texts are the z's, so RMIA does not score them for the population threshold
(``population_ok=False``).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ..cache import text_hash
from ..errors import SettingsError
from ..finetune import REFERENCE_MEMBERS, REFERENCES_INDEX
from .base import AttackInputs, scored_tokens
from .domains import check_values, flag, number, text, whole

DEFAULTS = {"references": None, "gamma": 1.0, "a": 0.3, "n_z": None, "seed": 0, "online": False}


def _check_references(value: str) -> None:
    """Reference model specs (a comma list): a path among them may not be a device, a FIFO or under
    /dev, /proc or /sys (whether a spec names a model is found out when it is resolved)."""
    from .domains import special_reason

    for spec in (s.strip() for s in value.split(",")):
        if spec:
            bad = special_reason(Path(spec).expanduser().absolute())
            if bad:
                raise SettingsError(f"{spec!r} cannot name a reference model ({bad})")


DOMAINS = {
    "references": text(optional=True, validate=_check_references,
                       what="model specs (hub ids or folders), comma-separated; no device, /dev, /proc or /sys path",
                       note="reference models, or a make-references folder (none: the run's --reference)"),
    # the likelihood-ratio threshold: finite (gamma = inf counts no z and scores every text 0) and > 0
    "gamma": number(0, lo_open=True, note="threshold on the pairwise likelihood ratio"),
    "a": number(0, 1, note="offline estimate Pr(x) = ((1 + a) Pr_OUT(x) + 1 - a) / 2"),
    "n_z": whole(1, optional=True, words=("all",), note="population texts used as z (none/all: every one)"),
    "seed": whole(0, note="seed of the n_z subset"),
    "online": flag(note="online estimate for texts with IN and OUT references"),
}
MEMBERS_FILE = REFERENCE_MEMBERS  # written by make-references into every reference folder
INDEX_FILE = REFERENCES_INDEX  # written by make-references into its output folder


def requires(params: dict) -> set:
    """The run inputs RMIA needs: the population, and the run's reference model when no
    ``references`` are given (offline variant)."""
    st = _settings(params)  # bad values are refused here, before any model is loaded
    need = {"population"}
    if not st["references"]:
        need.add("reference")
    return need


def _settings(params: dict) -> dict:
    p = {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}}
    p = check_values("rmia", DOMAINS, p)
    refs = [r.strip() for r in p["references"].split(",") if r.strip()] if p["references"] else []
    return {**p, "references": refs}


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


def likelihoods(stats, first_token: bool, per_byte: bool) -> np.ndarray:
    """``Pr(text | model)`` per text: exp(-mean NLL over the scored tokens), or
    exp(-NLL per byte of the whole string) when ``per_byte``; NaN when nothing is scored."""
    if per_byte:
        return np.array([np.exp(-s.nll_per_byte) if s.n_predicted else np.nan for s in stats], dtype=np.float64)
    return np.array([np.exp(-s.loss) if s.n_predicted else np.nan for s in scored_tokens(stats, first_token)],
                    dtype=np.float64)


def marginal(ref_p: np.ndarray, seen: np.ndarray, a: float, online: bool = False) -> np.ndarray:
    """``Pr(x)`` from reference likelihoods ``ref_p`` [n texts, k refs] and the membership
    record ``seen`` (same shape, True = that reference trained on that text): the offline
    estimate from the OUT references of each text (see the module docstring); with
    ``online``, ``1/2 (mean_IN + mean_OUT)`` for texts with both IN and OUT references."""
    ref_p = np.asarray(ref_p, dtype=np.float64)
    seen = np.asarray(seen, dtype=bool)
    n_in, n_out = seen.sum(1), (~seen).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_in = np.where(seen, ref_p, 0).sum(1) / np.maximum(n_in, 1)
        p_out = np.where(~seen, ref_p, 0).sum(1) / np.maximum(n_out, 1)
        if a > 0:  # only IN references: invert the linear model
            p_out = np.where(n_out == 0, (p_in - (1 - a)) / a, p_out)
        else:
            p_out = np.where(n_out == 0, p_in, p_out)
        est = 0.5 * ((1 + a) * p_out + (1 - a))
    if online:
        est = np.where((n_in > 0) & (n_out > 0), 0.5 * (p_in + p_out), est)
    return est


def rmia_scores(px: np.ndarray, mx: np.ndarray, pz: np.ndarray, mz: np.ndarray, gamma: float) -> np.ndarray:
    """Score(x) = fraction of z with (px/mx) / (pz/mz) >= gamma, in logs; NaN for x that
    cannot be scored; population texts that cannot be scored are left out."""
    rx = np.log(px) - np.log(mx)
    rz = np.log(pz) - np.log(mz)
    rz = np.sort(rz[np.isfinite(rz)])
    out = np.full(len(rx), np.nan)
    if not len(rz):
        return out
    ok = np.isfinite(rx)
    # LR >= gamma  <=>  rz <= rx - log(gamma)
    out[ok] = np.searchsorted(rz, rx[ok] - np.log(gamma), side="right") / len(rz)
    return out


def prepare(inputs: AttackInputs, ctx, **params) -> dict:
    st = _settings(params)
    pop = getattr(ctx, "population", None)
    if pop is None or not len(pop):
        raise SettingsError("RMIA (rmia) needs known non-member texts: give --population")
    z_texts = list(pop.texts)
    if st["n_z"] is not None and st["n_z"] < len(z_texts):
        idx = np.sort(np.random.default_rng(st["seed"]).permutation(len(z_texts))[: st["n_z"]])
        z_texts = [z_texts[i] for i in idx]
    t0 = time.time()
    target = ctx.target
    if st["references"]:
        from ..models import resolve_spec

        refs = expand_references(st["references"])
        for spec, _ in refs:  # a missing folder or file: one-line error before any model pass
            resolve_spec(spec)
        variant = f"{len(refs)} reference model(s)"
    else:
        if ctx.reference is None:
            raise SettingsError("RMIA (rmia) without references= needs a reference model (--reference ID|PATH|smollm2)")
        refs = [(None, None)]
        variant = "offline, the run's reference model"

    x_stats = inputs.target
    z_stats = ctx.compute(target, z_texts, label="RMIA population pass (target)")
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
    # one unit for every likelihood: per scored token, or per byte when a tokenizer differs
    per_byte = not all(d["same_tokenizer"] for d in described)
    ft = inputs.first_token
    inputs.extra["rmia"] = {
        "px": likelihoods(x_stats, ft, per_byte),
        "pz": likelihoods(z_stats, ft, per_byte),
        "ref_x": np.stack([likelihoods(rx, ft, per_byte) for rx, _ in ref_stats], 1),
        "ref_z": np.stack([likelihoods(rz, ft, per_byte) for _, rz in ref_stats], 1),
        "seen_x": np.stack(seen_x, 1), "seen_z": np.stack(seen_z, 1),
    }
    notes = []
    if any(d["audited_texts_seen"] for d in described):
        notes.append("some reference models trained on audited texts: Pr(x) of those texts uses only the "
                     "references that did not (or, with online=True, the online estimate)")
    rho = loss_likeness(inputs.extra["rmia"], st)
    out = {"variant": variant, "n_z": len(z_texts), "references": described, "per_byte": per_byte,
           "seconds": round(time.time() - t0, 2), "spearman_with_target_likelihood": rho,
           **({"notes": notes} if notes else {})}
    if rho is not None and rho >= LOSS_LIKE:
        med = float(np.nanmedian(inputs.extra["rmia"]["px"]))
        out["warning"] = (f"with a = {st['a']}, RMIA ranks the audited texts like LOSS (Spearman {rho:.3f} with the "
                          f"target's likelihood alone): sequence likelihoods (median {med:.3g}) are small next to "
                          f"(1 - a)/2 = {(1 - st['a']) / 2:.2f}, so the references barely count. Privacy Meter tunes a "
                          "on a paired reference model (not done here); --param rmia.a=1 keeps the reference ratio")
    return out


LOSS_LIKE = 0.99  # Spearman above which RMIA is reported as ranking like LOSS


def loss_likeness(d: dict, st: dict) -> float | None:
    """Spearman correlation between RMIA's scores of the audited texts and the target's likelihood alone
    (LOSS's ranking): near 1, the reference models add nothing (a small ``a`` with small likelihoods)."""
    from scipy.stats import spearmanr

    mx = marginal(d["ref_x"], d["seen_x"], st["a"], st["online"])
    mz = marginal(d["ref_z"], d["seen_z"], st["a"], st["online"])
    sc = rmia_scores(d["px"], mx, d["pz"], mz, st["gamma"])
    ok = np.isfinite(sc) & np.isfinite(d["px"])
    if ok.sum() < 3 or np.ptp(sc[ok]) == 0 or np.ptp(d["px"][ok]) == 0:
        return None
    return round(float(spearmanr(sc[ok], d["px"][ok]).statistic), 4)


def score(inputs: AttackInputs, **params) -> np.ndarray:
    st = _settings(params)
    d = inputs.extra.get("rmia")
    if d is None or len(d["px"]) != len(inputs.texts):
        raise SettingsError("RMIA scores only the texts it was prepared on: run it through "
                            "mia_core.pipeline.run_attacks with a population set")
    mx = marginal(d["ref_x"], d["seen_x"], st["a"], st["online"])
    mz = marginal(d["ref_z"], d["seen_z"], st["a"], st["online"])
    return rmia_scores(d["px"], mx, d["pz"], mz, st["gamma"])
