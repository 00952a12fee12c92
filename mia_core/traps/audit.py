"""``mia traps test``: every trap of a sealed record scored on the model, and the pre-registered test
(:mod:`.permutation`) of the inserted traps against the held-out ones, overall and per repetition level.

The score of a trap is its mean loss per token under the model minus under the reference (the log of the ratio of
their perplexities, Meeus et al. 2024, §4; the reference is the record's generator unless another is named, none
for the loss alone), computed the same way for every trap, with the model's own tokenizer, from its start token;
membership score = minus that. What the coin flip decided is read only after every trap is scored.
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError, SettingsError
from ..progress import Progress, noop
from .options import TrapsOptions
from .permutation import exposure, floor_notes, holm, stratified_rank_test

FPRS = (0.01, 0.1)


def score_traps(lm, texts: list[str], opts: TrapsOptions, *, progress: Progress = noop, label: str = "traps"):
    """Each text's mean loss per token under ``lm`` (every token predicted, from the start token)."""
    from ..stats import StatsSettings, compute_stats
    from ..stats.settings import tokenize

    longest = max(len(tokenize(lm, t)) for t in texts)
    if longest + 1 > lm.max_context:
        raise DataError(f"a trap of {longest} tokens (under {lm.name}'s tokenizer) is longer than its context "
                        f"({lm.max_context} tokens, the start token included)", options=("traps",))
    st = StatsSettings(prefix="always", batch_tokens=opts.batch_tokens)
    stats = compute_stats(lm, texts, st, use_cache=opts.cache, progress=progress, label=label)
    return np.array([s.loss for s in stats], dtype=float)


def generator_matches(lm, gen: dict) -> bool:
    """Whether ``lm`` is the record's generator: its tokenizer's digest and its weights' (the identity string
    first, cheaply)."""
    from .generate import model_digests

    if lm.identity == gen.get("identity"):
        return True
    try:
        d = model_digests(lm)
    except Exception:  # noqa: BLE001 - a model whose weights cannot be read back is not the same one
        return False
    return d["weights_sha256"] == gen.get("weights_sha256") and d["tokenizer_sha256"] == gen.get("tokenizer_sha256")


def run_traps_audit(rec: dict, lm, ref, opts: TrapsOptions, *, reference_words: str, progress: Progress = noop):
    """The audit on a loaded model ``lm`` and reference ``ref`` (None: the loss alone) for the sealed record
    ``rec`` (:func:`mia_core.traps.record.read_record`). Returns a :class:`~.result.TrapsResult`."""
    import pandas as pd

    from ..metrics import evaluate
    from .generate import model_digests
    from .result import TrapsResult

    sealed = rec["sealed"]
    gen = sealed["generator"]
    traps = sealed["traps"]
    texts = [t["text"] for t in traps]
    notes = []
    tok_same = model_digests(lm)["tokenizer_sha256"] == gen.get("tokenizer_sha256")
    if not tok_same:
        notes.append(f"{lm.name}'s tokenizer is not the generator's: the traps are scored as text, each tokenized by "
                     "the model's own tokenizer (the test stays exact; the generator's token ids are not used)")
    if ref is not None and ref.identity == lm.identity:
        raise SettingsError("the model under test is its own reference: every trap's score would be 0; give "
                            "{reference} none to test it on the loss alone (the test of the generator itself)",
                            options=("reference",))
    loss = score_traps(lm, texts, opts, progress=lambda m, f: progress(m, 0.05 + 0.5 * f), label=f"traps on {lm.name}")
    ref_loss = (score_traps(ref, texts, opts, progress=lambda m, f: progress(m, 0.55 + 0.35 * f),
                            label=f"traps on the reference {ref.name}") if ref is not None else np.zeros(len(texts)))
    diff = loss - ref_loss
    member_score = -diff
    if not np.isfinite(member_score).all():
        raise DataError("a trap got no score (a text of no token under the model's tokenizer?)", options=("traps",))
    # what the coin flip decided: read only now that every trap is scored
    group = np.array([t["group"] for t in traps])
    copies = np.array([int(t["copies"]) for t in traps])
    strata = np.array([int(t["bucket"]) for t in traps])
    inserted, held = group == "inserted", group == "held_out"
    plan = sealed["test"]
    B, alpha = int(plan["permutations"]), float(plan["alpha"])
    progress("traps: the permutation test", 0.92)
    overall = stratified_rank_test(member_score, inserted, strata, permutations=B, seed=opts.seed)
    labels = inserted.astype(int)
    overall_m = evaluate(labels, member_score, n_bootstrap=opts.n_bootstrap, seed=opts.seed)
    levels = sorted(set(copies[inserted].tolist()))
    per, raw_p = {}, {}
    for r in levels:
        keep = (copies == r) | held
        t = stratified_rank_test(member_score[keep], inserted[keep], strata[keep], permutations=B, seed=opts.seed + r)
        m = evaluate(labels[keep], member_score[keep], n_bootstrap=opts.n_bootstrap, seed=opts.seed)
        ex = exposure(member_score[copies == r], member_score[held])
        per[str(r)] = {"copies": r, "n_inserted": int((copies == r).sum()), "test": t, "metrics": m,
                       "exposure_mean": float(ex.mean()), "exposure_max_bits": float(np.log2(held.sum() + 1))}
        raw_p[str(r)] = t["p_value"]
    adjusted = holm(raw_p)
    for r, v in per.items():
        v["p_value"] = v["test"]["p_value"]
        v["p_holm"] = adjusted[r]
        v["verdict"] = "used" if adjusted[r] < alpha else "not_shown"
    ex_all = exposure(member_score[inserted], member_score[held])
    leaks = sorted({x for e in rec.get("insertions", []) for x in e.get("leaks", [])})
    if leaks:
        notes.append(f"{len(leaks)} held-out trap(s) were found in the documents at insertion ({', '.join(leaks[:5])}): "
                     "if they reached the training data they look member-like too, so the p-value is conservative "
                     "(too large, never too small)")
    if not rec.get("insertions"):
        notes.append("the record logs no insertion (`mia traps insert`): the traps' copies may have been placed by "
                     "other means")
    floors, floor_said = floor_notes(strata, group, copies, B, alpha)
    notes += floor_said
    p = overall["p_value"]
    verdict = "used" if p < alpha else "not_shown"
    scores = pd.DataFrame({"trap_id": [t["id"] for t in traps], "group": group, "copies": copies, "bucket": strata,
                           "generator_perplexity": [np.nan if t.get("perplexity") is None else float(t["perplexity"]) for t in traps],
                           "loss": loss, "reference_loss": ref_loss if ref is not None else np.nan,
                           "score": member_score, "exposure_bits": np.where(inserted, 0.0, np.nan)})
    scores.loc[inserted, "exposure_bits"] = ex_all
    summary = {"p_value": p, "verdict": verdict, "alpha": alpha, "auc": overall_m.get("auc"),
               "auc_ci": overall_m.get("auc_ci"),
               "tpr_at_fpr": {f"{f:g}": (overall_m.get("tpr_at_fpr") or {}).get(str(f)) for f in FPRS},
               "statistic": overall["statistic"], "expected": overall["expected"], "method": overall["method"],
               "permutations": overall["permutations"], "n_inserted": int(inserted.sum()),
               "n_held_out": int(held.sum()), "exposure_mean": float(ex_all.mean()),
               "exposure_max_bits": float(np.log2(held.sum() + 1)), "seal": rec["seal"], "leaks": leaks,
               "tokenizer_matches_generator": bool(tok_same), "p_floor": floors["overall"],
               "p_floor_levels": floors["levels"]}
    progress("traps: done", 1.0)
    return TrapsResult(summary=summary, levels=per, metrics={"overall": overall_m}, scores=scores,
                       model={"name": lm.name, "identity": lm.identity},
                       reference={"words": reference_words, "name": getattr(ref, "name", None),
                                  "identity": getattr(ref, "identity", None)},
                       settings={**opts.as_dict(), "test": plan, "record": rec.get("path"),
                                 "generator": {k: gen.get(k) for k in ("spec", "name", "identity")}},
                       notes=notes)
