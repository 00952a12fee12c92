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
``Pr(x) = 1/2 ((1 + a) Pr_OUT(x) + (1 - a))`` with ``Pr_OUT`` the mean over the references
(with 4 or more, the mean of the largest half, as ML Privacy Meter's ``get_out_ref_signals``
keeps ``k // 2``; ``out_refs="mean"`` averages them all).
Population texts z get the same estimator from the references that did **not** train on z
(ML Privacy Meter's ``get_out_ref_signals`` keeps the OUT models of each sample), read from
the record ``make-references`` writes (``reference_members.json`` in every reference folder;
``mia_core.targets``; a reference without it is OUT for every text). A text seen by every
reference gets ``Pr_OUT = (Pr_IN - (1 - a)) / a`` (that linear model inverted, as ML Privacy
Meter does for a single reference); at language-model likelihoods that estimate is negative and
the text scores 0, as in Privacy Meter (not NaN; the run counts them in a note).

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
the paper's ``>=`` is used here, ties have measure zero); ``a``: unset (default) = **tuned as
Privacy Meter does** (``modules/mia/attack.py``, ``tune_offline_a``: the AUC of RMIA against a
*paired* model whose members are known, for a in 0, 0.1, ..., 1, the best kept; :func:`tune_a`
says how the paired attack is set up here) whenever 3 or more references carry a
``make-references`` membership record, else 0.3 (Privacy Meter's commented-out fallback), said in
the run's notes; a number fixes it. For language models sequence likelihoods are small, the
constant ``(1 - a)/2`` then dominates ``Pr(x)`` and a = 0.3 scores about like LOSS (the run warns
when RMIA's ranking has Spearman >= 0.99 with the target's likelihood alone); a = 1 keeps the
reference ratio: demo AUC 0.85 at a = 0.3 vs 0.98 (base reference) and 0.999 (two population
references) at a = 1, docs/gradnorm-rmia.md. ``n_z``: how many population texts (a seeded random subset;
default all), ``seed``, ``online`` (default False, see above), ``out_refs`` (``pm``: Privacy
Meter's largest half with 4+ references; ``mean``).

**Where.** This module is the method: the likelihoods, the marginal ``Pr(x)``, the score, the tuning of ``a``
and the attack's ``prepare``/``score``; :mod:`mia_core.attacks.rmia_references` is its model side (reference
folders, the population sample, each reference's passes).

**Cost.** One statistics pass per reference model over the audited and population texts
(cached, batched), plus the target pass over the population; the score itself is a sort.
Population texts are the z's, so RMIA does not score them for the population threshold
(``population_ok=False``).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..errors import SettingsError
from .base import AttackInputs, register, scored_tokens
from ..options import check_values, flag, number, one_of, text, whole
from .rmia_references import population_sample, reference_list, reference_passes

DEFAULTS = {"references": None, "gamma": 1.0, "a": None, "n_z": None, "seed": 0, "online": False, "out_refs": "pm"}
FALLBACK_A = 0.3  # Privacy Meter's offline_a when it is not tuned (a commented-out fallback in modules/mia/attack.py)
A_GRID = tuple(round(0.1 * i, 1) for i in range(11))  # Privacy Meter's tune_offline_a: np.arange(0, 1.1, 0.1)
MIN_TUNING_CLASS = 3  # population texts per class (IN / OUT for the paired reference) needed to tune a


def _check_references(value: str) -> None:
    """Reference model specs (a comma list): a path among them may not be a device, a FIFO or under
    /dev, /proc or /sys (whether a spec names a model is found out when it is resolved)."""
    from ..options import special_reason

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
    "a": number(0, 1, optional=True, words=("auto", "tune"),
                note="offline estimate Pr(x) = ((1 + a) Pr_OUT(x) + 1 - a) / 2 (none/auto/tune: tuned on a paired "
                     "reference as Privacy Meter does when the references allow it, else 0.3)"),
    "n_z": whole(1, optional=True, words=("all",), note="population texts used as z (none/all: every one)"),
    "seed": whole(0, note="seed of the n_z subset"),
    "online": flag(note="online estimate for texts with IN and OUT references"),
    "out_refs": one_of("pm", "mean", note="Pr_OUT with 4+ references: the largest half of the OUT signals (pm, "
                                          "Privacy Meter) or the mean over every OUT reference"),
}


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


def likelihoods(stats, first_token: bool, per_byte: bool) -> np.ndarray:
    """``Pr(text | model)`` per text: exp(-mean NLL over the scored tokens), or
    exp(-NLL per byte of the whole string) when ``per_byte``; NaN when nothing is scored."""
    if per_byte:
        return np.array([np.exp(-s.nll_per_byte) if s.n_predicted else np.nan for s in stats], dtype=np.float64)
    return np.array([np.exp(-s.loss) if s.n_predicted else np.nan for s in scored_tokens(stats, first_token)],
                    dtype=np.float64)


def marginal(ref_p: np.ndarray, seen: np.ndarray, a: float, online: bool = False, out_refs: str = "pm") -> np.ndarray:
    """``Pr(x)`` from reference likelihoods ``ref_p`` [n texts, k refs] and the membership
    record ``seen`` (same shape, True = that reference trained on that text).

    Offline estimate ``((1 + a) Pr_OUT + (1 - a)) / 2`` (Privacy Meter's ``run_rmia``), with
    ``Pr_OUT`` as Privacy Meter's ``get_out_ref_signals`` computes it:

    * ``k >= 4`` references and ``out_refs="pm"``: the mean of the ``k // 2`` largest OUT
      signals, IN signals counting as 0 (Privacy Meter keeps ``num_reference_models = k // 2``;
      for an audited text no reference saw, the largest half of the references' likelihoods; for
      a population text of ``make-references``' complementary halves, exactly its OUT references);
    * otherwise (or ``out_refs="mean"``): the mean over the text's OUT references. Privacy Meter
      with 2 or 3 references averages every column, an IN one replaced by the inverted linear
      model below; at language-model likelihoods (about e^-3) that value is negative, so the OUT
      references alone are averaged here;
    * a text that every reference trained on: the linear model inverted,
      ``Pr_OUT = (Pr_IN - (1 - a)) / a`` (Privacy Meter's single-reference branch; with a = 0 it
      uses 0.3's inversion, ``(Pr_IN - 0.7) / 0.3``, as Privacy Meter does). For small
      likelihoods the estimate is then negative and the text scores 0 (:func:`rmia_scores`).

    With ``online``, ``(mean_IN + mean_OUT) / 2`` for texts with both IN and OUT references.
    """
    ref_p = np.asarray(ref_p, dtype=np.float64)
    seen = np.asarray(seen, dtype=bool)
    k = ref_p.shape[1]
    n_in, n_out = seen.sum(1), (~seen).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_in = np.where(seen, ref_p, 0).sum(1) / np.maximum(n_in, 1)
        m = max(k // 2, 1)
        if out_refs == "pm" and m >= 2:
            out = -np.sort(-np.where(seen, 0.0, ref_p), axis=1)[:, :m]  # NaN sorts last (np.sort)
            p_out = out.mean(1)
        else:
            p_out = np.where(~seen, ref_p, 0).sum(1) / np.maximum(n_out, 1)
        a_inv = a if a > 0 else 0.3
        p_out = np.where(n_out == 0, (p_in - (1 - a_inv)) / a_inv, p_out)
        est = 0.5 * ((1 + a) * p_out + (1 - a))
    if online:
        est = np.where((n_in > 0) & (n_out > 0), 0.5 * (p_in + p_out), est)
    return est


def rmia_scores(px: np.ndarray, mx: np.ndarray, pz: np.ndarray, mz: np.ndarray, gamma: float) -> np.ndarray:
    """Score(x) = fraction of z with (px/mx) / (pz/mz) >= gamma, in logs.

    As in Privacy Meter (whose ratios are plain quotients counted where ``> 1``): an x whose
    estimated ``Pr(x)`` is not positive (a text every reference trained on, small likelihoods)
    has a negative ratio and scores 0; a z whose ``Pr(z)`` is not positive counts in the
    denominator and is never exceeded. NaN for an x without a likelihood (nothing scored);
    population texts without one are left out."""
    px, mx, pz, mz = (np.asarray(v, dtype=np.float64) for v in (px, mx, pz, mz))
    out = np.full(len(px), np.nan)
    z_ok = np.isfinite(pz) & np.isfinite(mz) & (pz > 0)
    z_pos = z_ok & (mz > 0)
    n_z = int(z_ok.sum())
    if not n_z:
        return out
    with np.errstate(invalid="ignore", divide="ignore"):
        rz = np.sort(np.log(pz[z_pos]) - np.log(mz[z_pos]))
        x_ok = np.isfinite(px) & np.isfinite(mx) & (px > 0)
        x_pos = x_ok & (mx > 0)
        rx = np.log(px) - np.log(mx)
    out[x_ok & ~x_pos] = 0.0
    # LR >= gamma  <=>  rz <= rx - log(gamma)
    out[x_pos] = np.searchsorted(rz, rx[x_pos] - np.log(gamma), side="right") / n_z
    return out


def _auc(labels: np.ndarray, scores: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    ok = np.isfinite(scores)
    if ok.sum() < 2 or len(set(labels[ok].tolist())) < 2:
        return float("nan")
    return float(roc_auc_score(labels[ok], scores[ok]))


def tune_a(d: dict, st: dict, names: list[str]) -> dict:
    """Privacy Meter's ``tune_offline_a``: attack a *paired* model whose members are known, with the
    other references, for a in 0, 0.1, ..., 1, and keep the a of the highest AUC (the first, on ties).

    Here the paired model is the first reference with a membership record (``make-references``:
    it trained on a known half of the population). The attacked texts are the population texts at
    least one *other* reference did not train on (IN: the paired model's half), scored against the
    audited texts as z (texts no reference trained on; for the paired model, non-members) and the
    other references as references. Privacy Meter attacks with every reference including the paired
    one, and the target's population signals as z; neither fits here (a reference cannot be its own
    calibration, and the target's z say nothing about the paired model). No label of an audited
    text is used. Returns ``{"a", "paired_model", "auc_by_a", "n_in", "n_out"}`` or ``{"reason"}``
    when the references cannot tune a (then a = 0.3)."""
    seen_z, seen_x = d["seen_z"], d["seen_x"]
    k = seen_z.shape[1]
    known = [j for j in range(k) if d["recorded"][j]]
    if k < 3 or not known:
        return {"reason": f"tuning a needs 3 or more reference models with a membership record (make-references), "
                          f"got {k} with {len(known)} record(s)"}
    j = known[0]
    others = [i for i in range(k) if i != j]
    usable = (~seen_z[:, others]).any(1) & np.isfinite(d["ref_z"][:, j])
    labels = seen_z[usable, j].astype(int)
    n_in, n_out = int(labels.sum()), int((1 - labels).sum())
    if min(n_in, n_out) < MIN_TUNING_CLASS:
        return {"reason": f"tuning a needs {MIN_TUNING_CLASS}+ population texts the paired reference trained on and "
                          f"{MIN_TUNING_CLASS}+ it did not, each seen by at most some of the others; got {n_in} and {n_out}"}
    z_ok = ~seen_x.any(1)
    px, ref_x, sx = d["ref_z"][usable, j], d["ref_z"][usable][:, others], seen_z[usable][:, others]
    pz, ref_z, sz = d["ref_x"][z_ok, j], d["ref_x"][z_ok][:, others], seen_x[z_ok][:, others]
    auc_by_a, best, best_auc = {}, FALLBACK_A, -1.0
    for a in A_GRID:
        sc = rmia_scores(px, marginal(ref_x, sx, a, st["online"], st["out_refs"]), pz,
                         marginal(ref_z, sz, a, st["online"], st["out_refs"]), st["gamma"])
        auc = _auc(labels, sc)
        auc_by_a[f"{a:.1f}"] = round(auc, 4) if np.isfinite(auc) else None
        if np.isfinite(auc) and auc > best_auc:
            best, best_auc = a, auc
    return {"a": best, "paired_model": names[j], "auc_by_a": auc_by_a, "n_in": n_in, "n_out": n_out,
            "n_z": int(z_ok.sum())}


def _a(st: dict, d: dict) -> float:
    """The a a run uses: the given one, or the tuned one (``prepare``), or 0.3."""
    if st["a"] is not None:
        return float(st["a"])
    return float(d.get("a", FALLBACK_A))


def _likelihood_table(x_stats, z_stats, ref_stats, seen_x, seen_z, described: list[dict], first_token: bool) -> dict:
    """The likelihoods RMIA scores from, in one unit (per scored token, or per byte when a tokenizer differs).

    Parameters
    ----------
    x_stats, z_stats : list of TokenStats
        The target's statistics of the audited and the population texts.
    ref_stats, seen_x, seen_z, described
        From :func:`mia_core.attacks.rmia_references.reference_passes`.
    first_token : bool
        Whether each text's first token is scored.

    Returns
    -------
    dict
        ``px``, ``pz``, ``ref_x``, ``ref_z``, ``seen_x``, ``seen_z``, ``recorded`` (``inputs.extra["rmia"]``).
    """
    per_byte = not all(d["same_tokenizer"] for d in described)
    ft = first_token
    return {
        "px": likelihoods(x_stats, ft, per_byte),
        "pz": likelihoods(z_stats, ft, per_byte),
        "ref_x": np.stack([likelihoods(rx, ft, per_byte) for rx, _ in ref_stats], 1),
        "ref_z": np.stack([likelihoods(rz, ft, per_byte) for _, rz in ref_stats], 1),
        "seen_x": np.stack(seen_x, 1), "seen_z": np.stack(seen_z, 1),
        "recorded": [d["membership_record"] for d in described],
    }


def _tuned_a(d: dict, st: dict, described: list[dict], notes: list[str]) -> tuple[float, dict | None]:
    """The ``a`` of the run: given, or tuned on a paired reference (Privacy Meter's default), else the fallback.

    Parameters
    ----------
    d : dict
        The likelihood table (:func:`_likelihood_table`); a tuned ``a`` is stored in it.
    st : dict
        The checked parameters.
    described : list of dict
        The references (their names).
    notes : list of str
        Receives the note when ``a`` could not be tuned.

    Returns
    -------
    tuple
        ``(a, tuning)``; ``tuning`` is None when ``a`` was given.
    """
    tuning = None
    if st["a"] is None:  # Privacy Meter's default: tune a on a paired reference
        tuning = tune_a(d, st, [r["model"] for r in described])
        d["a"] = tuning.get("a", FALLBACK_A)
        if "reason" in tuning:
            notes.append(f"a = {FALLBACK_A} (not tuned: {tuning['reason']})")
    return _a(st, d), tuning


def _loss_like_warning(d: dict, a: float, rho: float, a_source: str) -> str:
    """The warning when RMIA ranks the audited texts like LOSS (Spearman ``rho`` with the target's likelihood).

    Parameters
    ----------
    d : dict
        The likelihood table (its ``px``).
    a : float
        The ``a`` used.
    rho : float
        Spearman correlation with the target's likelihood alone.
    a_source : str
        ``"given"``, ``"tuned"`` or ``"fallback"``.

    Returns
    -------
    str
    """
    med = float(np.nanmedian(d["px"]))
    tip = ("Privacy Meter tunes a on a paired reference model: give 3+ references from make-references "
           "(--param rmia.references=DIR) and leave a unset" if a_source != "tuned"
           else "a was tuned on the paired reference")
    return (f"with a = {a}, RMIA ranks the audited texts like LOSS (Spearman {rho:.3f} with the "
            f"target's likelihood alone): sequence likelihoods (median {med:.3g}) are small next to "
            f"(1 - a)/2 = {(1 - a) / 2:.2f}, so the references barely count. {tip}; "
            "--param rmia.a=1 keeps the reference ratio")


def prepare(inputs: AttackInputs, ctx, **params) -> dict:
    """RMIA's preparation: the population sample, the target's and every reference's passes, the likelihoods.

    Stores the likelihood table in ``inputs.extra["rmia"]`` (what :func:`score` reads) and tunes ``a`` when it
    is not given (Zarifzadeh et al. 2024, §3; Privacy Meter's default).

    Parameters
    ----------
    inputs : AttackInputs
        The audited texts and the target's statistics.
    ctx : RunContext
        The run's context: ``population``, ``reference``, ``target``, ``compute``, ``progress``.
    **params
        RMIA's parameters (``a``, ``gamma``, ``n_z``, ``references``, ``online``, ``out_refs``, ``seed``).

    Returns
    -------
    dict
        What the run records: ``variant``, ``n_z``, ``references``, ``per_byte``, ``a``, ``a_source``
        (``a_tuning``), ``seconds``, ``spearman_with_target_likelihood``, ``notes`` and ``warning`` when any.
    """
    st = _settings(params)
    z_texts = population_sample(ctx, st)
    t0 = time.time()
    refs, variant = reference_list(ctx, st)
    z_stats = ctx.compute(ctx.target, z_texts, label="RMIA population pass (target)")
    ref_stats, seen_x, seen_z, described = reference_passes(inputs, ctx, refs, z_texts)
    per_byte = not all(r["same_tokenizer"] for r in described)
    d = inputs.extra["rmia"] = _likelihood_table(inputs.target, z_stats, ref_stats, seen_x, seen_z, described,
                                                 inputs.first_token)
    notes = []
    if any(r["audited_texts_seen"] for r in described):
        notes.append("some reference models trained on audited texts: Pr(x) of those texts uses only the "
                     "references that did not (or, with online=True, the online estimate)")
    a, tuning = _tuned_a(d, st, described, notes)
    mx = marginal(d["ref_x"], d["seen_x"], a, st["online"], st["out_refs"])
    n_zero = int((np.isfinite(mx) & (mx <= 0) & np.isfinite(d["px"])).sum())
    if n_zero:
        notes.append(f"{n_zero} audited text(s) were trained on by every reference model: their estimated Pr(x) is "
                     "not positive at these likelihoods and they score 0, as in Privacy Meter")
    rho = loss_likeness(d, st)
    out = {"variant": variant, "n_z": len(z_texts), "references": described, "per_byte": per_byte, "a": a,
           "a_source": "given" if st["a"] is not None else ("tuned" if tuning and "a" in tuning else "fallback"),
           **({"a_tuning": tuning} if tuning else {}),
           "seconds": round(time.time() - t0, 2), "spearman_with_target_likelihood": rho,
           **({"notes": notes} if notes else {})}
    if rho is not None and rho >= LOSS_LIKE:
        out["warning"] = _loss_like_warning(d, a, rho, out["a_source"])
    return out


LOSS_LIKE = 0.99  # Spearman above which RMIA is reported as ranking like LOSS


def loss_likeness(d: dict, st: dict) -> float | None:
    """Spearman correlation between RMIA's scores of the audited texts and the target's likelihood alone
    (LOSS's ranking): near 1, the reference models add nothing (a small ``a`` with small likelihoods)."""
    from scipy.stats import spearmanr

    sc = _scores(d, st)
    ok = np.isfinite(sc) & np.isfinite(d["px"])
    if ok.sum() < 3 or np.ptp(sc[ok]) == 0 or np.ptp(d["px"][ok]) == 0:
        return None
    return round(float(spearmanr(sc[ok], d["px"][ok]).statistic), 4)


@register("rmia", "RMIA", citation="Zarifzadeh et al. 2024 §3", defaults=DEFAULTS, prepare=prepare, population_ok=False,
          requires=requires, domains=DOMAINS,
          cost="a pass of each reference model over the texts and the population, and the target over the population")
def score(inputs: AttackInputs, **params) -> np.ndarray:
    """RMIA's score of every audited text: the share of population texts z it dominates (Zarifzadeh et al. 2024,
    §3), from the likelihoods :func:`prepare` stored."""
    st = _settings(params)
    d = inputs.extra.get("rmia")
    if d is None or len(d["px"]) != len(inputs.texts):
        raise SettingsError("RMIA scores only the texts it was prepared on: run it through "
                            "mia_core.pipeline.run_attacks with a population set")
    return _scores(d, st)


def _scores(d: dict, st: dict) -> np.ndarray:
    st = {**DEFAULTS, **st}
    a = _a(st, d)
    mx = marginal(d["ref_x"], d["seen_x"], a, st["online"], st["out_refs"])
    mz = marginal(d["ref_z"], d["seen_z"], a, st["online"], st["out_refs"])
    return rmia_scores(d["px"], mx, d["pz"], mz, st["gamma"])
