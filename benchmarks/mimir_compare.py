"""Per-text comparison of the attacks with MIMIR, the reference implementation.

MIMIR (Duan et al. 2024, github.com/iamgroot42/mimir) is the attack code most MIA papers on
LLMs compare with. This script re-implements its formulas from raw Hugging Face forward (and,
for GradNorm, backward) passes, exactly as its code computes them, and compares them text by
text with ``mia_core`` for every attack both have:

* ``Model.get_probabilities`` (``mimir/models.py``): ``tokenizer(text)`` (no BOS for SmolLM2 or
  GPT-NeoX), one forward pass, ``log_softmax(logits[:-1])`` at the next token: the
  log-probabilities of tokens 2..n, conditioned on the text alone;
* ``get_ll`` = ``-mean(probs)`` (the mean NLL); LOSS attack = ``get_ll``;
* zlib (``attacks/zlib.py``) = ``get_ll / len(zlib.compress(bytes(text, "utf-8")))``;
* Min-K% (``attacks/min_k.py``, window 1) = ``-mean(sorted(probs)[: int(len(probs) * k)])``;
* Min-K%++ (``attacks/min_k_plus_plus.py``): ``mu = sum(p * logp)``,
  ``sigma = sqrt(sum(p * logp²) - mu²)`` over the vocabulary, ``-mean(sorted((probs - mu) /
  sigma)[: int(len * k)])``;
* reference (``attacks/reference.py``) = ``get_ll(target) - get_ll(reference)``;
* ReCaLL (``attacks/recall.py``; prefix built in ``run.py``): the prefix is the first
  ``num_shots`` non-members (``data_nonmember[:num_shots]``), joined with ``""`` and tokenised on
  its own (``tokenizer("".join(prefix))``); ``get_conditional_ll`` runs ``prefix_ids + text_ids``
  with the prefix positions masked (``-100``) and returns ``-loss``, the mean log-likelihood of
  *all n* text tokens (the first one predicted from the prefix's last token); the raw score is
  ``ll_nonmember / get_ll(text)`` = ``-NLL(1..n | P) / NLL(2..n)`` (``get_ll`` is an NLL despite
  its name). Negated by ``get_roc_metrics``: member score ``NLL(1..n | P) / NLL(2..n)``.
  (``process_prefix`` keeps only the last shots when prefix + average text length exceed
  ``max_position_embeddings``; windows of ``max_length`` when prefix + text do: both
  re-implemented, neither happens here.) MIMIR's shots are also among its evaluated non-members;
  here they are the demo population's first ``--shots`` texts, on both sides (``mia_core``
  refuses an audited text in the prefix);
* DC-PDD (``attacks/dc_pdd.py``): ``[EOS] + tokenizer(text)``, ``get_probabilities`` on that: the
  probabilities of *all n* text tokens, the first one predicted from EOS;
  ``alpha = p * log(1 / f)`` at each token id's first occurrence, ``alpha[alpha > a] = a``
  (``a = 0.01``), raw score ``-mean(alpha)``, negated by ``get_roc_metrics``: member score
  ``mean(alpha)``. ``f`` is MIMIR's float32 Laplace smoothing ``(1 + c) / (sum(c) + len(c))``
  over ``len(tokenizer)`` ids (one more than the vocabulary: MIMIR adds a ``[PAD]`` token). The
  counts ``c`` are ``mia_core``'s (``mia_core.stats.token_frequency``, the bundled corpus or
  ``--corpus``), so that only the formula is compared: MIMIR counts 15 C4 files with
  ``fre_dis[input_ids] += 1``, which counts a token once per *document* (a repeated index in
  a tensor's ``+=`` is written once), where the official DC-PDD code and ``mia_core`` count
  every occurrence;
* GradNorm (``attacks/gradnorm.py``): ``loss = -mean(get_probabilities(text, no_grads=False))``
  (tokens 2..n), ``loss.backward()``, ``mean over parameter tensors with a gradient of
  grad.norm(p)`` with ``p = inf`` (the largest absolute entry), raw score ``-mean``, negated by
  ``get_roc_metrics``: member score ``+mean`` (larger gradients = member). Run on the target as
  ``mia_core`` loads it (a LoRA target with its adapter merged), with every parameter trainable
  as ``from_pretrained`` leaves them.

**Sign convention.** MIMIR's scores are *lower = member* (``get_roc_metrics`` negates them
before ``roc_curve``); ``mia_core``'s are *higher = member*. The comparison negates MIMIR's raw
scores, so both columns are "higher = member" and per-text differences are meaningful.

``mia_core`` settings compared (``StatsSettings.prefix``, ``AttackInputs.first_token``):

* ``default``: ``prefix="auto"``, the first token scored when a prefix is put in front
  (``stats.scores_first_token``), the reference scored with the target's prefix
  (``stats.settings_for``), as ``mia run`` does. The demo target was trained with
  ``<|endoftext|>`` in front, so it is scored with it, tokens 1..n: a different context from
  MIMIR's;
* ``no prefix`` (``prefix="none"``, tokens 2..n): MIMIR's context for LOSS, zlib, Min-K%,
  Min-K%++, reference and GradNorm (``--param gradnorm.variant=mimir``);
* ``no prefix, first token`` (ReCaLL only; ``--prefix none --score-first-token``): the
  conditional pass then also scores the first text token (predicted from the prefix) while the
  unconditional one has no prediction for it: MIMIR's ReCaLL;
* ``EOS in front, first token`` (DC-PDD only; ``--prefix <eos id> --score-first-token``):
  MIMIR's DC-PDD context (its ``eos_token_id``: ``<|im_end|>`` for SmolLM2's tokenizer, not the
  ``<|endoftext|>`` the demo target was trained with).

For each attack and setting the script prints the largest per-text absolute (and relative)
difference, the Spearman correlation and both AUCs, then a summary table; and the CPU, the
torch threads and the time spent. On 40 demo texts every attack agrees with MIMIR to float
rounding (Spearman 1.0000, largest difference 3e-5, Min-K%++'s float32 variance) in the setting
that gives MIMIR's context; the table and the reasons for the other settings' differences are in
docs/attacks.md ("Faithful to the reference code"). About 13 minutes on a shared 2-core CPU, one torch
thread (ReCaLL's full prefix + text passes and GradNorm's backward passes take most of it);
``mia_core``'s passes are cached, so a re-run spends its time on the re-implementation.

Usage: python benchmarks/mimir_compare.py [--n 40] [--k 0.2] [--model DEMO_TARGET]
       [--reference smollm2] [--attacks loss,zlib,...] [--shots 12] [--a 0.01] [--corpus FILE]
(``--n`` texts: half demo members, half demo non-members.)
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from neighbours import cpu_name  # noqa: E402 - the sibling benchmark's CPU name reader

ATTACKS = ("loss", "zlib", "min_k", "min_k_pp", "ref", "recall", "dc_pdd", "gradnorm")
BASIC = ("loss", "zlib", "min_k", "min_k_pp", "ref")


# ---------------------------------------------------------------- MIMIR, re-implemented


def mimir_get_probabilities(lm, ids):
    """MIMIR's ``Model.get_probabilities`` on the token ids ``ids`` (1 x L, one window: L is far below
    ``max_length // 2`` here), plus the full-distribution moments Min-K%++ reads: log p of tokens
    2..L given the tokens before them, mu_t and sigma_t."""
    import torch

    ids = ids.to(lm.device)
    with torch.no_grad():
        logits = lm.model(ids).logits[0, :-1].float()
    logp = torch.log_softmax(logits, dim=-1)
    p = logp.exp()
    mu = (p * logp).sum(-1)
    sigma = ((p * logp.square()).sum(-1) - mu.square()).sqrt()
    target = logp[torch.arange(ids.shape[1] - 1), ids[0, 1:]]
    return target.cpu().numpy().astype(np.float64), mu.cpu().numpy().astype(np.float64), \
        sigma.cpu().numpy().astype(np.float64)


def mimir_token_values(lm, text: str):
    """``get_probabilities(text)``: ``tokenizer(text)`` as MIMIR calls it (with the tokenizer's own
    special tokens)."""
    return mimir_get_probabilities(lm, lm.tokenizer(text, return_tensors="pt").input_ids)


def mimir_max_length(lm) -> int:
    """MIMIR's ``load_model_properties``: ``max_position_embeddings``, else ``n_positions``, else 1024."""
    c = lm.model.config
    return int(getattr(c, "max_position_embeddings", None) or getattr(c, "n_positions", None) or 1024)


def mimir_recall_prefix(lm, shots: list[str], avg_length: int) -> list[str]:
    """``ReCaLLAttack.process_prefix``: all shots when their tokens plus the average text length fit in
    ``max_length``; else as many as fit, counted from the first, taken from the end (``prefix[-max_shots:]``)."""
    max_length = mimir_max_length(lm)
    counts = [len(lm.tokenizer.encode(s)) for s in shots]
    if sum(counts) + avg_length <= max_length:
        return shots
    max_shots, cum = 0, avg_length
    for c in counts:
        if cum + c <= max_length:
            max_shots += 1
            cum += c
        else:
            break
    return shots[-max_shots:]


def mimir_conditional_ll(lm, prefix: list[str], text: str) -> float:
    """``ReCaLLAttack.get_conditional_ll``: ``-(mean NLL of the text's tokens given the joined prefix)``, from
    the model's own loss with the prefix positions masked, windows of ``max_length`` as MIMIR cuts them."""
    import torch

    tok = lm.tokenizer
    prefix_ids = tok(text="".join(prefix), return_tensors="pt").input_ids.to(lm.device)
    text_ids = tok(text=text, return_tensors="pt").input_ids.to(lm.device)
    max_length = mimir_max_length(lm)
    if prefix_ids.size(1) >= max_length:
        raise ValueError("Prefix length exceeds or equals the model's maximum context window.")
    labels = torch.cat((prefix_ids, text_ids), dim=1)
    total_length = labels.size(1)
    total_loss, total_tokens = 0.0, 0
    with torch.no_grad():
        for i in range(0, total_length, max_length):
            begin_loc, end_loc = i, min(i + max_length, total_length)
            input_ids = labels[:, begin_loc:end_loc]
            target_ids = input_ids.clone()
            if begin_loc < prefix_ids.size(1):
                target_ids[:, : min(prefix_ids.size(1) - begin_loc, max_length)] = -100
            if end_loc > total_length - text_ids.size(1):
                overlap = min(end_loc - (total_length - text_ids.size(1)), max_length)
                target_ids[:, -overlap:] = input_ids[:, -overlap:]
            if torch.all(target_ids == -100):
                continue
            loss = lm.model(input_ids, labels=target_ids).loss
            if torch.isnan(loss):
                continue
            n = int((target_ids != -100).sum().item())
            total_loss += loss.item() * n
            total_tokens += n
    return -(total_loss / total_tokens if total_tokens > 0 else 0)


def mimir_frequencies(tokenizer, counts: np.ndarray):
    """``DC_PDDAttack.fre_dis`` built from ``counts`` (``mia_core``'s): a float32 tensor of
    ``len(tokenizer)`` ids after MIMIR's ``add_special_tokens({'pad_token': '[PAD]'})`` (one more id when
    ``[PAD]`` is not in the vocabulary), Laplace-smoothed as MIMIR does, in float32."""
    import torch

    size = len(tokenizer) + (0 if "[PAD]" in tokenizer.get_vocab() else 1)
    fre = torch.zeros(max(size, len(counts)))
    fre[: len(counts)] = torch.from_numpy(np.asarray(counts, dtype=np.float64)).float()
    return (1 + fre) / (torch.sum(fre) + len(fre))


def mimir_dc_pdd(lm, text: str, fre_dis, a: float) -> float:
    """``DC_PDDAttack._attack``: EOS in front, the probabilities of all n text tokens, first occurrences,
    ``alpha = p * log(1 / f)`` capped at ``a``, ``-mean(alpha)``."""
    import torch

    tok = lm.tokenizer
    tokens_og = tok(text, return_tensors="pt").input_ids
    tokens = torch.cat([torch.tensor([[tok.eos_token_id]]), tokens_og], dim=1)
    probs = mimir_get_probabilities(lm, tokens)[0]
    x_pro = np.exp(probs)
    indexes, current = [], []
    input_ids = tokens_og[0]
    for i, input_id in enumerate(input_ids):
        if input_id not in current:
            indexes.append(i)
            current.append(input_id)
    x_pro = x_pro[indexes]
    x_fre = fre_dis[input_ids[indexes]].numpy()
    alpha = x_pro * np.log(1 / x_fre)
    alpha[alpha > a] = a
    return -np.mean(alpha)


@contextlib.contextmanager
def all_trainable(model):
    """Every parameter requires a gradient (as ``from_pretrained`` leaves them; a merged LoRA target has
    frozen ones), restored afterwards."""
    saved = [p.requires_grad for p in model.parameters()]
    try:
        for p in model.parameters():
            p.requires_grad_(True)
        yield
    finally:
        model.zero_grad(set_to_none=True)
        for p, rg in zip(model.parameters(), saved):
            p.requires_grad_(rg)


def mimir_gradnorm(lm, text: str, p=np.inf) -> tuple[float, int]:
    """``GradNormAttack._attack``: ``-mean_tensors ||grad||_p`` (p = inf) of ``-mean(log p(tokens 2..n))``;
    also the number of tensors with a gradient."""
    import torch

    model = lm.model
    model.zero_grad()
    with torch.enable_grad():
        ids = lm.tokenizer(text, return_tensors="pt").input_ids.to(lm.device)
        logits = model(ids, labels=ids).logits  # MIMIR passes labels=target_ids (= ids: one window)
        logprobs = torch.log_softmax(logits[..., :-1, :].contiguous(), dim=-1)
        all_prob = torch.stack([logprobs[0, i, t] for i, t in enumerate(ids[0, 1:])])
        loss = -torch.mean(all_prob)
        loss.backward()
    norms = [q.grad.detach().norm(p) for q in model.parameters() if q.grad is not None]
    grad_norm = torch.stack(norms).mean()
    model.zero_grad()
    return -float(grad_norm.cpu().numpy()), len(norms)


def mimir_scores(lm, ref, texts: list[str], k: float, attacks, *, shots=None, fre_dis=None, a=0.01,
                 timings: dict) -> dict:
    """MIMIR's raw attack scores (lower = member) for every text."""
    out = {name: [] for name in attacks}
    need_ref = "ref" in attacks
    recall_prefix = None
    if "recall" in attacks:  # run.py: avg_length over the evaluated records (members and non-members alike here)
        avg_length = int(np.mean([len(lm.tokenizer.encode(t)) for t in texts]))
        recall_prefix = mimir_recall_prefix(lm, shots, avg_length)
    n_grad_tensors = None

    def timed(name, fn):
        t0 = time.perf_counter()
        v = fn()
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - t0
        return v

    for t in texts:
        if set(attacks) & {*BASIC, "recall"}:
            lp, mu, sigma = timed("forward", lambda: mimir_token_values(lm, t))
            ll = -np.mean(lp)
            z = (lp - mu) / sigma
            with np.errstate(all="ignore"):
                basic = {
                    "loss": ll,
                    "zlib": ll / len(zlib.compress(bytes(t, "utf-8"))),
                    "min_k": -np.mean(sorted(lp)[: int(len(lp) * k)]) if int(len(lp) * k) else float("nan"),
                    "min_k_pp": -np.mean(sorted(z)[: int(len(z) * k)]) if int(len(z) * k) else float("nan"),
                }
            if need_ref:
                basic["ref"] = ll - (-np.mean(timed("ref", lambda: mimir_token_values(ref, t))[0]))
            for name in BASIC:
                if name in attacks:
                    out[name].append(basic[name])
            if "recall" in attacks:
                out["recall"].append(timed("recall", lambda: mimir_conditional_ll(lm, recall_prefix, t)) / ll)
        if "dc_pdd" in attacks:
            out["dc_pdd"].append(timed("dc_pdd", lambda: mimir_dc_pdd(lm, t, fre_dis, a)))
        if "gradnorm" in attacks:
            with all_trainable(lm.model):
                g, n_grad_tensors = timed("gradnorm", lambda: mimir_gradnorm(lm, t))
            out["gradnorm"].append(g)
    if n_grad_tensors is not None:
        timings["gradnorm_tensors"] = n_grad_tensors
    return {n: np.asarray(v, dtype=float) for n, v in out.items()}


# ---------------------------------------------------------------- mia_core


def mia_scores(lm, ref, texts, k: float, st, first_token, attacks, params: dict, population) -> tuple[dict, dict]:
    """``mia_core``'s scores (higher = member) under stats settings ``st``, as ``pipeline.run_attacks`` gets
    them: the reference scored with the target's prefix, ``prepare`` hooks run, then ``score``."""
    from mia_core.attacks import REGISTRY, AttackInputs
    from mia_core.pipeline import RunConfig, RunContext
    from mia_core.progress import noop
    from mia_core.stats import compute_stats, scores_first_token, settings_for

    cfg = RunConfig(attacks=list(attacks), params=params, stats=st)

    def compute(m, ts, label="token statistics", settings=None):
        return compute_stats(m, ts, settings_for(m, lm, settings or st), use_cache=True, label=label)

    ft = scores_first_token(lm, st) if first_token is None else bool(first_token)
    inputs = AttackInputs(texts=list(texts), first_token=ft)
    inputs.target = compute(lm, texts)
    if "ref" in attacks:
        inputs.reference = compute(ref, texts)
        inputs.same_tokenizer = lm.same_tokenizer(ref)
    # the three prepare hooks used here read target, config, compute, progress and population only
    ctx = RunContext(lm, ref, cfg, None, np.zeros(len(texts), bool), noop, compute, population=population)
    out, reports = {}, {"first_token": ft}
    for name in attacks:
        a = REGISTRY[name]
        kw = {**a.params, **params.get(name, {})}
        if name.startswith("min_k"):
            kw["k"] = k
        if a.prepare is not None:
            reports[name] = a.prepare(inputs, ctx, **kw)
        out[name] = np.asarray(a.score(inputs, **kw), dtype=float)
    return out, reports


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40, help="texts (half members, half non-members of the demo)")
    ap.add_argument("--k", type=float, default=0.2)
    ap.add_argument("--model", default=None, help="target (default: the demo target, a LoRA on SmolLM2)")
    ap.add_argument("--reference", default="smollm2")
    ap.add_argument("--attacks", default=",".join(ATTACKS), help=f"comma list of {', '.join(ATTACKS)}")
    ap.add_argument("--shots", type=int, default=12, help="ReCaLL: the demo population's first SHOTS texts")
    ap.add_argument("--a", type=float, default=0.01, help="DC-PDD's cap on a token's alpha")
    ap.add_argument("--corpus", default=None, help="DC-PDD frequency corpus (default: mia_core's bundled one)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    attacks = [a.strip() for a in args.attacks.split(",") if a.strip()]
    bad = [a for a in attacks if a not in ATTACKS]
    if bad:
        ap.error(f"unknown attack(s) {', '.join(bad)}; choose from {', '.join(ATTACKS)}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    t_start = time.perf_counter()

    import torch
    from scipy.stats import spearmanr
    from sklearn.metrics import roc_auc_score

    from mia_core.attacks import recall as recall_mod
    from mia_core.data import read_population
    from mia_core.targets.demo import demo_dataset, demo_paths
    from mia_core.models import load_causal_lm
    from mia_core.stats import StatsSettings, resolve_prefix
    from mia_core.stats.token_frequency import frequency_table

    torch.set_num_threads(args.threads)
    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores; torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    ds = demo_dataset()
    half = args.n // 2
    lab = np.asarray(ds.labels)
    idx = list(np.flatnonzero(lab == 1)[:half]) + list(np.flatnonzero(lab == 0)[:half])
    texts = [ds.texts[i] for i in idx]
    labels = lab[idx]
    t0 = time.perf_counter()
    lm = load_causal_lm(args.model or str(demo_paths()["target"]))
    ref = load_causal_lm(args.reference) if "ref" in attacks else None
    t_load = time.perf_counter() - t0
    tok = lm.tokenizer
    print(f"target {lm.name}" + (f", reference {ref.name}" if ref else "")
          + f"; {len(texts)} demo texts ({half} members), k = {args.k}; models loaded in {t_load:.1f}s")
    bos = tok("a").input_ids[0] == tok.bos_token_id
    print(f"MIMIR tokenisation: tokenizer(text){' adds BOS' if bos else ' adds no BOS'}; tokens 2..n scored "
          f"(DC-PDD: EOS {tok.eos_token_id} {tok.convert_ids_to_tokens(tok.eos_token_id)!r} in front, tokens 1..n)")

    # ---- shared inputs: ReCaLL's shots, DC-PDD's counts (mia_core's, fed to both sides)
    population = shots = fre_dis = None
    params: dict = {"gradnorm": {"variant": "mimir"}, "dc_pdd": {"a": args.a, "corpus": args.corpus},
                    "recall": {"n_shots": args.shots}}
    if "recall" in attacks:
        population = read_population(demo_paths()["population"], mode="lines", as_dataset=True)
        shots, source = recall_mod.prefix_texts(params["recall"], population)
        print(f"ReCaLL prefix: the first {len(shots)} texts of the demo population ({source}), joined with '' "
              f"({len(tok.encode(''.join(shots)))} tokens), on both sides")
    if "dc_pdd" in attacks:
        table = frequency_table(tok, args.corpus)
        fre_dis = mimir_frequencies(tok, table.counts)
        print(f"DC-PDD counts: mia_core's ({table.corpus}: {table.n_tokens:,} tokens, {len(table.counts)} ids), "
              f"smoothed as MIMIR does over {len(fre_dis)} ids (float32); a = {args.a}")

    # ---- MIMIR
    mt: dict = {}
    t0 = time.perf_counter()
    raw = mimir_scores(lm, ref, texts, args.k, attacks, shots=shots, fre_dis=fre_dis, a=args.a, timings=mt)
    t_mimir = time.perf_counter() - t0
    mimir = {n: -v for n, v in raw.items()}  # higher = member, as mia_core (get_roc_metrics negates)
    print(f"MIMIR re-implementation: {t_mimir:.1f}s (" + ", ".join(
        f"{k} {v:.1f}s" for k, v in mt.items() if k != "gradnorm_tensors") + ")"
        + (f"; GradNorm over {mt['gradnorm_tensors']} parameter tensors with a gradient" if "gradnorm_tensors" in mt else ""))

    # ---- mia_core, per setting
    eos = tok.eos_token_id
    settings = [
        ("default", StatsSettings(prefix="auto"), None, attacks),
        ("no prefix", StatsSettings(prefix="none"), False, attacks),
        ("no prefix, first token", StatsSettings(prefix="none"), True, [a for a in attacks if a == "recall"]),
        ("EOS in front, first token", StatsSettings(prefix=int(eos)), True, [a for a in attacks if a == "dc_pdd"]),
    ]
    summary: dict = {}
    for label, st, ft, names in settings:
        if not names:
            continue
        t0 = time.perf_counter()
        ours, rep = mia_scores(lm, ref, texts, args.k, st, ft, names, params, population)
        pre = resolve_prefix(lm, st)
        desc = "nothing" if pre is None else f"token {pre} {tok.convert_ids_to_tokens(int(pre))!r}"
        print(f"\nmia_core, {label}: prefix={st.prefix!r} ({desc} in front), "
              f"{'tokens 1..n' if rep['first_token'] else 'tokens 2..n'} scored; {time.perf_counter() - t0:.1f}s")
        print(f"{'attack':<10} {'max |diff|':>12} {'max rel diff':>13} {'Spearman':>9} {'AUC mia_core':>13} {'AUC MIMIR':>10}")
        for name in names:
            a, b = ours[name], mimir[name]
            ok = np.isfinite(a) & np.isfinite(b)
            d = np.abs(a[ok] - b[ok])
            rel = d / np.maximum(np.abs(b[ok]), 1e-12)
            rho = spearmanr(a[ok], b[ok]).correlation
            auc_a = roc_auc_score(labels[ok], a[ok])
            auc_b = roc_auc_score(labels[ok], b[ok])
            summary.setdefault(name, {})[label] = (rho, d.max())
            print(f"{name:<10} {d.max():>12.2e} {rel.max():>13.2e} {rho:>9.4f} {auc_a:>13.4f} {auc_b:>10.4f}"
                  + ("" if ok.all() else f"  ({(~ok).sum()} NaN)"))

    cols = [s[0] for s in settings if s[3]]
    print("\nsummary (Spearman / max |diff| per text, MIMIR negated to higher = member):")
    print("| attack | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for name in attacks:
        cells = [f"{summary[name][c][0]:.4f} / {summary[name][c][1]:.1e}" if c in summary.get(name, {}) else "-"
                 for c in cols]
        print(f"| `{name}` | " + " | ".join(cells) + " |")
    print(f"\ntotal {time.perf_counter() - t_start:.1f}s on {cpu_name()} ({torch.get_num_threads()} thread(s))")


if __name__ == "__main__":
    main()
