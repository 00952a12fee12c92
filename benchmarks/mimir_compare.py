"""Per-text comparison of the baselines with MIMIR, the reference implementation.

MIMIR (Duan et al. 2024, github.com/iamgroot42/mimir) is the attack code most MIA papers on
LLMs compare with. This script re-implements its formulas from a raw Hugging Face forward
pass, exactly as its code computes them, and compares them text by text with ``mia_core``:

* ``Model.get_probabilities`` (``mimir/models.py``): ``tokenizer(text)`` (no BOS for SmolLM2 or
  GPT-NeoX), one forward pass, ``log_softmax(logits[:-1])`` at the next token: the
  log-probabilities of tokens 2..n, conditioned on the text alone;
* ``get_ll`` = ``-mean(probs)`` (the mean NLL); LOSS attack = ``get_ll``;
* zlib (``attacks/zlib.py``) = ``get_ll / len(zlib.compress(bytes(text, "utf-8")))``;
* Min-K% (``attacks/min_k.py``, window 1) = ``-mean(sorted(probs)[: int(len(probs) * k)])``;
* Min-K%++ (``attacks/min_k_plus_plus.py``): ``mu = sum(p * logp)``,
  ``sigma = sqrt(sum(p * logp²) - mu²)`` over the vocabulary, ``-mean(sorted((probs - mu) /
  sigma)[: int(len * k)])``;
* reference (``attacks/reference.py``) = ``get_ll(target) - get_ll(reference)``.

**Sign convention.** MIMIR's scores are *lower = member* (``get_roc_metrics`` negates them
before ``roc_curve``); ``mia_core``'s are *higher = member*. The comparison negates MIMIR's.

Two ``mia_core`` settings are compared (both score tokens 2..n, the default since issue 12):

* ``prefix`` (the default): a BOS/EOS token is put in front of every text, so token t is
  predicted from ``[prefix, x_1..x_{t-1}]`` -- a slightly different context from MIMIR's;
* ``no prefix`` (``--no-prefix``): the context is MIMIR's; the scores should agree to float
  rounding.

Usage: python benchmarks/mimir_compare.py [--n 40] [--k 0.2] [--model DEMO_TARGET] [--reference smollm2]
(``--n`` texts: half demo members, half demo non-members.)
"""
from __future__ import annotations

import argparse
import os
import zlib

import numpy as np


def mimir_token_values(lm, text: str):
    """MIMIR's ``get_probabilities`` (plus the full-distribution moments for Min-K%++) from a raw
    forward pass: log p of tokens 2..n given the text before them, mu_t and sigma_t."""
    import torch

    ids = lm.tokenizer(text, return_tensors="pt").input_ids.to(lm.device)
    with torch.no_grad():
        logits = lm.model(ids).logits[0, :-1].float()
    logp = torch.log_softmax(logits, dim=-1)
    p = logp.exp()
    mu = (p * logp).sum(-1)
    sigma = ((p * logp.square()).sum(-1) - mu.square()).sqrt()
    target = logp[torch.arange(ids.shape[1] - 1), ids[0, 1:]]
    return target.cpu().numpy().astype(np.float64), mu.cpu().numpy().astype(np.float64), \
        sigma.cpu().numpy().astype(np.float64)


def mimir_scores(lm, ref, text: str, k: float) -> dict:
    """MIMIR's attack scores (lower = member)."""
    lp, mu, sigma = mimir_token_values(lm, text)
    ll = -np.mean(lp)
    ll_ref = -np.mean(mimir_token_values(ref, text)[0])
    z = (lp - mu) / sigma
    with np.errstate(all="ignore"):
        return {
            "loss": ll,
            "zlib": ll / len(zlib.compress(bytes(text, "utf-8"))),
            "min_k": -np.mean(sorted(lp)[: int(len(lp) * k)]) if int(len(lp) * k) else float("nan"),
            "min_k_pp": -np.mean(sorted(z)[: int(len(z) * k)]) if int(len(z) * k) else float("nan"),
            "ref": ll - ll_ref,
        }


def mia_scores(lm, ref, texts, k: float, prefix: bool) -> dict:
    from mia_core.attacks import REGISTRY, AttackInputs
    from mia_core.stats import StatsSettings, compute_stats

    st = StatsSettings(prefix=prefix)
    inputs = AttackInputs(texts, target=compute_stats(lm, texts, st, use_cache=True),
                          reference=compute_stats(ref, texts, st, use_cache=True),
                          same_tokenizer=lm.same_tokenizer(ref))
    out = {}
    for name in ("loss", "zlib", "min_k", "min_k_pp", "ref"):
        kw = {"k": k} if name.startswith("min_k") else {}
        out[name] = np.asarray(REGISTRY[name].score(inputs, **kw), dtype=float)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40, help="texts (half members, half non-members of the demo)")
    ap.add_argument("--k", type=float, default=0.2)
    ap.add_argument("--model", default=None, help="target (default: the demo target, a LoRA on SmolLM2)")
    ap.add_argument("--reference", default="smollm2")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    import torch
    from scipy.stats import spearmanr
    from sklearn.metrics import roc_auc_score

    from mia_core.demo import demo_dataset, demo_paths
    from mia_core.models import load_causal_lm

    torch.set_num_threads(args.threads)
    ds = demo_dataset()
    half = args.n // 2
    lab = np.asarray(ds.labels)
    idx = list(np.flatnonzero(lab == 1)[:half]) + list(np.flatnonzero(lab == 0)[:half])
    texts = [ds.texts[i] for i in idx]
    labels = lab[idx]
    lm = load_causal_lm(args.model or str(demo_paths()["target"]))
    ref = load_causal_lm(args.reference)
    print(f"target {lm.name}, reference {ref.name}; {len(texts)} demo texts ({half} members), k = {args.k}")
    bos = lm.tokenizer("a").input_ids[0] == lm.tokenizer.bos_token_id
    print(f"MIMIR tokenisation: tokenizer(text){' adds BOS' if bos else ' adds no BOS'}; tokens 2..n scored")

    mimir = {name: [] for name in ("loss", "zlib", "min_k", "min_k_pp", "ref")}
    for t in texts:
        for name, v in mimir_scores(lm, ref, t, args.k).items():
            mimir[name].append(v)
    mimir = {n: -np.asarray(v, dtype=float) for n, v in mimir.items()}  # higher = member, as mia_core

    for prefix in (True, False):
        ours = mia_scores(lm, ref, texts, args.k, prefix)
        print(f"\nmia_core {'with the BOS/EOS prefix (default)' if prefix else 'without prefix (--no-prefix)'}:")
        print(f"{'attack':<10} {'max |diff|':>12} {'max rel diff':>13} {'Spearman':>9} {'AUC mia_core':>13} {'AUC MIMIR':>10}")
        for name in mimir:
            a, b = ours[name], mimir[name]
            ok = np.isfinite(a) & np.isfinite(b)
            d = np.abs(a[ok] - b[ok])
            rel = d / np.maximum(np.abs(b[ok]), 1e-12)
            rho = spearmanr(a[ok], b[ok]).correlation
            auc_a = roc_auc_score(labels[ok], a[ok])
            auc_b = roc_auc_score(labels[ok], b[ok])
            print(f"{name:<10} {d.max():>12.2e} {rel.max():>13.2e} {rho:>9.4f} {auc_a:>13.4f} {auc_b:>10.4f}"
                  + ("" if ok.all() else f"  ({(~ok).sum()} NaN)"))


if __name__ == "__main__":
    main()
