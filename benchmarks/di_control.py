"""Dataset inference's negative control and length adjustment (issue 51): the evidence in docs/dataset-inference.md.

1. **Real never-trained splits**: the demo's 200 never-trained texts (non-members + population) split at the median
   of a property (words, tokens, punctuation per word, mean word length), each half in turn the suspect set; the
   primary test's p-value (the ``nonneg`` combination, as measured first) on the control's own features (SmolLM2),
   the target's raw features and the calibrated ones (target minus SmolLM2), each with no length adjustment,
   tokens only, and tokens + words + characters; and the calibrated ones with each text's WBC against SmolLM2
   (issue 52: the product's features with a control that shares the target's tokenizer).
2. **Power on weak fine-tunes** (one LoRA epoch of SmolLM2 on 400 AG News texts, ``make-target``, seeds 0 and 1):
   per-draw p-values of 10 random draws at 25 / 50 / 100 texts a set, per candidate features and combination
   (9,999 permutations).
3. **False positives on real held-out texts**: 200 random halves of each target's 400 held-out texts, the
   calibrated, length-adjusted test with WBC (the default combination) and the control's own check (999 permutations).

Feature matrices are computed once (``run_dataset_inference`` with no control and no adjustment, for the target
and for SmolLM2, on the same texts) and kept in ``--work``. Needs ``../shared/data`` for AG News (these machines
only). Prints the CPU and the fp32 matmul roof of the same run.

    python benchmarks/di_control.py [--work /tmp/di51] [--seeds 0 1]
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent


def _features(texts_s, texts_v, model):
    from mia_core.dataset_inference import run_dataset_inference

    res = run_dataset_inference(texts_s, texts_v, model, iid_check=False, n_permutations=99, control="none",
                                adjust_length=False)
    return res.scores[res.summary["features"]].to_numpy(float), res.summary["features"], ~res.scores["excluded"].to_numpy()


def matrices(work: Path, name: str, members, others, target, base) -> dict:
    """The target's and SmolLM2's features on ``members + others`` (kept in ``work/name.npz``)."""
    p = work / f"{name}.npz"
    if not p.exists():
        XT, nT, okT = _features(members, others, target)
        XC, nC, okC = _features(members, others, base)
        ntok = [len(base.tokenizer(t, add_special_tokens=False).input_ids) for t in members + others]
        np.savez(p, XT=XT, XC=XC, namesT=np.array(nT), namesC=np.array(nC), ok=okT & okC, ntok=np.array(ntok),
                 y=np.r_[np.ones(len(members), int), np.zeros(len(others), int)], texts=np.array(members + others))
    d = dict(np.load(p))
    nT, nC = list(d["namesT"]), list(d["namesC"])
    shared = [n for n in nT if n in nC]
    d["raw"] = d["XT"][:, [nT.index(n) for n in shared]]
    d["control"] = d["XC"][:, [nC.index(n) for n in shared]]
    d["cal"] = d["raw"] - d["control"]
    d["names"] = shared
    w = work / f"{name}_wbc.npy"  # each text's WBC, target against SmolLM2 (issue 52): a feature with a control
    if not w.exists():
        from mia_core.attacks import REGISTRY
        from mia_core.pipeline.stages import text_passes

        inputs = text_passes([str(t) for t in d["texts"]], target, reference=base)
        np.save(w, np.asarray(REGISTRY["wbc"].score(inputs, **REGISTRY["wbc"].params), float))
    d["calw"] = np.c_[d["cal"], np.load(w)]
    d["namesw"] = [*shared, "wbc"]
    return d


def _adjust(X, d, idx, how):
    from mia_core.dataset_inference.control import length_adjust, text_lengths

    if how == "none":
        return X
    L = text_lengths([str(t) for t in d["texts"][idx]], d["ntok"][idx])
    return length_adjust(X, L[:, :1] if how == "tok" else L)[0]


def splits(d) -> None:
    from mia_core.dataset_inference.significance import permutation_test

    idx = np.flatnonzero(d["ok"] & (d["y"] == 0))
    texts = [str(t) for t in d["texts"][idx]]
    words = [t.split() for t in texts]
    props = {"words": np.array([len(w) for w in words], float), "tokens": d["ntok"][idx].astype(float),
             "punctuation": np.array([len(re.findall(r"[,;:!?\"'()-]", t)) / len(w) for t, w in zip(texts, words)]),
             "word length": np.array([np.mean([len(x) for x in w]) for w in words])}
    print(f"\n1. real never-trained splits ({len(idx)} texts; p of the primary test, 999 permutations; "
          "length adjusted for none / tokens / tokens + words + characters)")
    for prop, v in props.items():
        for side, pick in (("above", v > np.median(v)), ("below", v <= np.median(v))):
            y = pick.astype(int)
            cells = []
            for which in ("control", "raw", "cal", "calw"):
                ps = [permutation_test(_adjust(d[which][idx], d, idx, how), y, n_permutations=999,
                                       combination="nonneg")["p_value"]
                      for how in ("none", "tok", "all")]
                cells.append(f"{which} " + " / ".join(f"{p:.2g}" for p in ps))
            print(f"  {prop:12s} {side}: " + " | ".join(cells), flush=True)


def power(d, name: str, sizes=(25, 50, 100), draws: int = 10) -> None:
    from mia_core.dataset_inference.significance import permutation_test

    si, vi = np.flatnonzero(d["ok"] & (d["y"] == 1)), np.flatnonzero(d["ok"] & (d["y"] == 0))
    ref = d["XT"][:, [list(d["namesT"]).index("ref")]] if "ref" in list(d["namesT"]) else d["cal"][:, :1]
    cands = {"before: raw, no reference (nonneg)": ("raw", "none", "nonneg"),
             "before: raw + base as reference (nonneg)": ("raw+ref", "none", "nonneg"),
             "target - base, adjusted, nonneg": ("cal", "all", "nonneg"),
             "target - base, adjusted, mean": ("cal", "all", "mean"),
             "target - base, adjusted, families": ("cal", "all", "families"),
             "now: target - base + WBC, adjusted, families": ("calw", "all", "families")}
    print(f"\n2. power, {name} (per-draw p, 9,999 permutations)")
    for n in sizes:
        for label, (which, how, comb) in cands.items():
            ps = []
            for r in range(draws):
                g = np.random.default_rng([r, n])
                idx = np.r_[g.choice(si, n, replace=False), g.choice(vi, n, replace=False)]
                X = np.c_[d["raw"][idx], ref[idx]] if which == "raw+ref" else d[which][idx]
                names = ([*d["names"], "ref"] if which == "raw+ref" else d["namesw"] if which == "calw"
                         else d["names"])
                ps.append(permutation_test(_adjust(X, d, idx, how), np.r_[np.ones(n, int), np.zeros(n, int)],
                                           n_permutations=9999, seed=r, combination=comb, names=names)["p_value"])
            ps = np.array(ps)
            print(f"  n={n:3d} {label:32s} below 1e-3 in {(ps < 1e-3).sum()}/{draws}: "
                  + " ".join(f"{p:.1g}" for p in ps), flush=True)


def false_positives(d, name: str, splits_n: int = 200) -> None:
    from mia_core.dataset_inference.significance import permutation_test

    vi = np.flatnonzero(d["ok"] & (d["y"] == 0))
    X, C = _adjust(d["calw"][vi], d, vi, "all"), _adjust(d["control"][vi], d, vi, "all")
    ps, cs = [], []
    for r in range(splits_n):
        y = np.zeros(len(vi), int)
        y[np.random.default_rng([r, 99]).permutation(len(vi))[: len(vi) // 2]] = 1  # not the folds' stream
        ps.append(permutation_test(X, y, n_permutations=999, seed=r, names=d["namesw"])["p_value"])
        cs.append(permutation_test(C, y, n_permutations=999, seed=r + 11, names=d["names"])["p_value"])
    ps, cs = np.array(ps), np.array(cs)
    print(f"\n3. {name}: {splits_n} random halves of {len(vi)} held-out texts: p <= 0.05 in {np.mean(ps <= 0.05):.3f}, "
          f"<= 0.01 in {np.mean(ps <= 0.01):.3f}; the control refuses (p <= 0.01) in {np.mean(cs <= 0.01):.3f}",
          flush=True)


def weak_target(work: Path, seed: int) -> tuple[list[str], list[str], Path]:
    """The weak fine-tune of a seed (one LoRA epoch of SmolLM2 on ``prefix_cost._texts(400, seed)``'s 400 members,
    ``make-target``), trained into ``work/target_s{seed}`` unless it is there: ``(members, held-out, folder)``.
    ``benchmarks/wbc.py`` uses the same targets."""
    from mia_core.targets import make_target
    from prefix_cost import _texts

    mem, held = _texts(400, seed=seed)
    out = work / f"target_s{seed}"
    if not (out / "mia_target.json").exists():
        t0 = time.perf_counter()
        make_target(mem, base="smollm2", out_dir=str(out), epochs=1, heldout_texts=held, seed=seed)
        print(f"trained seed {seed} in {time.perf_counter() - t0:.0f} s", flush=True)
    return mem, held, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default=tempfile.mkdtemp(prefix="mia-di-control-"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("MIA_CACHE_DIR", str(work / "cache"))
    sys.path.insert(0, str(ROOT))
    from cache_verify import _cpu, _roof

    from mia_core.models import load_causal_lm
    from mia_core.paths import ASSETS

    print(f"CPU: {_cpu()}, {os.cpu_count()} logical CPUs; fp32 matmul roof {_roof():.0f} GFLOP/s", flush=True)
    base = load_causal_lm(None)
    demo = ASSETS / "demo"
    lines = [t.strip() for f in ("members.txt", "nonmembers.txt", "population.txt")
             for t in (demo / f).read_text().splitlines() if t.strip()]
    d = matrices(work, "demo", lines[:100], lines[100:], load_causal_lm(str(demo / "target")), base)
    splits(d)
    for seed in args.seeds:
        mem, held, out = weak_target(work, seed)
        d = matrices(work, f"ag_s{seed}", mem[:200], held[:400], load_causal_lm(str(out)), base)
        power(d, f"seed {seed}")
        false_positives(d, f"seed {seed}")


if __name__ == "__main__":
    main()
