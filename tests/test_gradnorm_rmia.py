"""GradNorm and RMIA (issue 12) against hand computations on tiny real models, and
``make-references`` end to end.

* GradNorm (``mia_core.stats.gradients`` / ``attacks.gradnorm``): the global L2 norm of the gradient
  of the mean NLL over tokens 2..n equals torch autograd on the raw model with the same
  tokens, also for a text cut into windows and with the first token scored; the model's
  ``requires_grad`` flags are restored and no gradient is left behind.
* RMIA (``attacks.rmia``): scores equal a numpy computation from per-text NLLs (raw forward
  passes) for the offline variant (one reference, Pr(x) = ((1+a) Pr_ref + 1 - a) / 2) and
  for k = 2 references trained by ``make-references`` on complementary halves of the
  population (Pr(z) from the IN and the OUT model, Pr(x) offline from both).
* A missing population is a one-line ``SettingsError`` (and a one-line CLI error) before
  any model pass.

Models: the random 2-layer Llama of ``helpers.save_tiny_llama`` (SmolLM2 tokenizer) as target,
a seeded perturbation of it as the offline reference; texts are short Gutenberg paragraphs.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers import ALWAYS, assert_one_error, empty_cache, mia, run_mia, save_tiny_llama
from tiny_lm import paragraphs

from mia_core.data import Dataset
from mia_core.errors import ModelError, SettingsError
from mia_core.stats.gradients import compute_grad_norms
from mia_core.models import load_causal_lm
from mia_core.pipeline import RunConfig, run_attacks
from mia_core.stats import StatsSettings, prefix_token_id

pytestmark = pytest.mark.slow



@pytest.fixture(scope="module", autouse=True)
def _env(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path_factory.mktemp("cache"))))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
    mp.undo()


@pytest.fixture(scope="module")
def texts():
    short = [t for t in paragraphs() if 15 <= len(t.split()) <= 45]
    return short[:20]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """(target folder, reference folder): the tiny Llama and a seeded perturbation of it."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    root = tmp_path_factory.mktemp("models")
    target = save_tiny_llama(root / "target")
    ref = LlamaForCausalLM.from_pretrained(target)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g))
    ref.save_pretrained(root / "reference")
    AutoTokenizer.from_pretrained(target).save_pretrained(root / "reference")
    return target, str(root / "reference")


def _seq(lm, text: str) -> list[int]:
    prefix = lm.tokenizer.convert_tokens_to_ids("<|endoftext|>")
    assert prefix == prefix_token_id(lm.tokenizer)
    return [prefix] + lm.tokenizer(text, add_special_tokens=False)["input_ids"]


def _hand_gradnorm(model, seq: list[int], context: int, first_token: bool) -> tuple[float, float]:
    """Mean NLL over the scored tokens and the global L2 gradient norm, by plain autograd:
    windows of ``context`` tokens with stride context-1, the window losses summed."""
    scored_from = 1 if first_token else 2  # sequence position of the first scored target
    starts, s = [], 0
    while True:
        starts.append(s)
        if s + context >= len(seq):
            break
        s += context - 1
    n = sum(1 for t in range(1, len(seq)) if t >= scored_from)
    model.zero_grad(set_to_none=True)
    total = torch.zeros((), dtype=torch.float64)
    for s in starts:
        w = torch.tensor(seq[s : s + context]).unsqueeze(0)
        logp = torch.log_softmax(model(input_ids=w).logits[0, :-1].float(), -1)
        nll = -logp[torch.arange(w.shape[1] - 1), w[0, 1:]]
        keep = torch.tensor([s + 1 + i >= scored_from for i in range(w.shape[1] - 1)])
        part = nll[keep].sum()
        (part / n).backward()
        total = total + part.detach().double()
    sq = sum(float(p.grad.double().pow(2).sum()) for p in model.parameters() if p.grad is not None)
    model.zero_grad(set_to_none=True)
    return float(total / n), float(np.sqrt(sq))


def test_gradnorm_equals_autograd_and_restores_the_model(models, texts):
    lm = load_causal_lm(models[0], dtype="fp32", device="cpu")
    model = lm.model
    frozen = [n for n, _ in model.named_parameters()][::3]
    for n, p in model.named_parameters():
        p.requires_grad_(n not in frozen)
    flags = {n: p.requires_grad for n, p in model.named_parameters()}
    few = texts[:3]
    got = compute_grad_norms(lm, few, ALWAYS, use_cache=False)
    got_win = compute_grad_norms(lm, few[:1], StatsSettings(prefix="always", context=9), use_cache=False)[0]
    got_first = compute_grad_norms(lm, few[:1], ALWAYS, first_token=True, use_cache=False)[0]
    # the model is left as it was: same requires_grad flags, no gradient buffers
    assert {n: p.requires_grad for n, p in model.named_parameters()} == flags
    assert all(p.grad is None for p in model.parameters())

    for p in model.parameters():
        p.requires_grad_(True)
    for t, g in zip(few, got):
        seq = _seq(lm, t)
        loss, norm = _hand_gradnorm(model, seq, context=len(seq), first_token=False)
        assert g.n_scored == len(seq) - 2
        assert g.loss == pytest.approx(loss, rel=1e-5)
        assert g.norm("l2") == pytest.approx(norm, rel=1e-4)
    seq = _seq(lm, few[0])
    assert len(seq) > 3 * 9  # several windows
    loss, norm = _hand_gradnorm(model, seq, context=9, first_token=False)
    assert got_win.loss == pytest.approx(loss, rel=1e-5) and got_win.norm("l2") == pytest.approx(norm, rel=1e-4)
    loss, norm = _hand_gradnorm(model, seq, context=len(seq), first_token=True)
    assert got_first.n_scored == len(seq) - 1
    assert got_first.loss == pytest.approx(loss, rel=1e-5) and got_first.norm("l2") == pytest.approx(norm, rel=1e-4)
    assert got_first.norm("l2") != pytest.approx(got[0].norm("l2"), rel=1e-3)  # the flag matters
    for n, p in model.named_parameters():
        p.requires_grad_(flags[n])

    # through the pipeline: score = -norm, cached on the second run, MIMIR's variant one param away
    ds = Dataset(texts=few + texts[3:5], labels=[1, 1, 1, 0, 0], ids=[f"t{i}" for i in range(5)])
    res = run_attacks(ds, lm, config=RunConfig(stats=ALWAYS, attacks=["gradnorm"], n_bootstrap=0, blind=False))
    hand = [-g.norm("l2") for g in got]
    np.testing.assert_allclose(res.scores["gradnorm"].to_numpy()[:3], hand, rtol=1e-6)
    assert res.extra["gradnorm"]["n_parameter_tensors"] == len(flags)
    res2 = run_attacks(ds, lm, config=RunConfig(stats=ALWAYS, attacks=["gradnorm"], params={"gradnorm": {"p": "linf", "aggregate": "mean"}},
                                                n_bootstrap=0, blind=False))
    assert compute_grad_norms.last_cache.hits == len(ds) and compute_grad_norms.last_cache.misses == 0
    np.testing.assert_allclose(res2.scores["gradnorm"].to_numpy()[:3], [-g.linf.mean() for g in got], rtol=1e-6)
    # MIMIR's exact member score: the same norm with the opposite sign (issue 28 item 1)
    res3 = run_attacks(ds, lm, config=RunConfig(stats=ALWAYS, attacks=["gradnorm"],
                                                params={"gradnorm": {"variant": "mimir"}}, n_bootstrap=0, blind=False))
    np.testing.assert_allclose(res3.scores["gradnorm"].to_numpy(), -res2.scores["gradnorm"].to_numpy(), rtol=1e-9)
    assert res3.metrics["gradnorm"]["auc"] == pytest.approx(1 - res2.metrics["gradnorm"]["auc"])
    with pytest.raises(SettingsError, match="p must be one of"):
        run_attacks(ds, lm, config=RunConfig(stats=ALWAYS, attacks=["gradnorm"], params={"gradnorm": {"p": "l3"}}, blind=False))


def _mean_nll(lm, text: str) -> float:
    """Mean NLL over tokens 2..n by a raw forward pass (the RMIA likelihood is exp(-this))."""
    seq = _seq(lm, text)
    with torch.no_grad():
        w = torch.tensor(seq).unsqueeze(0)
        logp = torch.log_softmax(lm.model(input_ids=w).logits[0, :-1].double(), -1)
        nll = -logp[torch.arange(len(seq) - 1), w[0, 1:]]
    return float(nll[1:].mean())


def _hand_rmia(p_target_x, p_refs_x, p_target_z, p_refs_z, in_z, a, gamma):
    """Score(x) = mean_z [ (p(x)/Pr(x)) / (p(z)/Pr(z)) >= gamma ], Pr(.) = ((1+a) P_OUT + 1 - a) / 2
    with P_OUT the mean over the references that did not train on the text."""
    pr_x = 0.5 * ((1 + a) * p_refs_x.mean(1) + (1 - a))
    pr_z = np.array([0.5 * ((1 + a) * p_refs_z[j][~in_z[j]].mean() + (1 - a)) for j in range(len(p_target_z))])
    ratio = (p_target_x / pr_x)[:, None] / (p_target_z / pr_z)[None, :]
    return (ratio >= gamma).mean(1)


def _sets(texts):
    ds = Dataset(texts=texts[:8], labels=[1] * 4 + [0] * 4, ids=[f"t{i}" for i in range(8)])
    pop = Dataset(texts=texts[8:20], labels=[0] * 12, ids=[f"p{i}" for i in range(12)])
    return ds, pop


def test_rmia_offline_equals_hand_computation(models, texts):
    target = load_causal_lm(models[0], dtype="fp32", device="cpu")
    reference = load_causal_lm(models[1], dtype="fp32", device="cpu")
    ds, pop = _sets(texts)
    px = np.exp(-np.array([_mean_nll(target, t) for t in ds.texts]))
    pz = np.exp(-np.array([_mean_nll(target, t) for t in pop.texts]))
    rx = np.exp(-np.array([[_mean_nll(reference, t)] for t in ds.texts]))
    rz = np.exp(-np.array([[_mean_nll(reference, t)] for t in pop.texts]))
    none_in = np.zeros((len(pop), 1), bool)
    for a, gamma in ((0.3, 1.0), (0.7, 1.05)):
        res = run_attacks(ds, target, reference=reference, population=pop, config=RunConfig(stats=ALWAYS, 
            attacks=["loss", "rmia"], params={"rmia": {"a": a, "gamma": gamma}}, n_bootstrap=0, blind=False))
        hand = _hand_rmia(px, rx, pz, rz, none_in, a, gamma)
        np.testing.assert_allclose(res.scores["rmia"].to_numpy(), hand)
        assert 0 < hand.sum() < len(hand)  # a non-trivial comparison
        assert res.extra["rmia"]["variant"].startswith("offline") and res.extra["rmia"]["n_z"] == len(pop)
    # n_z: a seeded subset of the population
    res = run_attacks(ds, target, reference=reference, population=pop, config=RunConfig(stats=ALWAYS, 
        attacks=["rmia"], params={"rmia": {"n_z": 5}}, n_bootstrap=0, blind=False))
    assert res.extra["rmia"]["n_z"] == 5
    assert set(np.round(res.scores["rmia"].to_numpy() * 5, 9)) <= {0.0, 1.0, 2.0, 3.0, 4.0, 5.0}


def test_rmia_needs_a_population(models, texts, tmp_path):
    target = load_causal_lm(models[0], dtype="fp32", device="cpu")
    reference = load_causal_lm(models[1], dtype="fp32", device="cpu")
    ds, _ = _sets(texts)
    with pytest.raises(SettingsError, match="population"):
        run_attacks(ds, target, reference=reference, config=RunConfig(stats=ALWAYS, attacks=["rmia"], blind=False))
    with pytest.raises(SettingsError, match="gamma must be > 0"):
        run_attacks(ds, target, reference=reference, population=_sets(texts)[1],
                    config=RunConfig(stats=ALWAYS, attacks=["rmia"], params={"rmia": {"gamma": 0}}, blind=False))
    with pytest.raises(ModelError, match="no such file or folder"):
        run_attacks(ds, target, population=_sets(texts)[1],
                    config=RunConfig(stats=ALWAYS, attacks=["rmia"], params={"rmia": {"references": str(tmp_path / "nope")}}, blind=False))
    (tmp_path / "m.txt").write_text("\n".join(ds.members()))
    (tmp_path / "n.txt").write_text("\n".join(ds.nonmembers()))
    r = mia("run", "--members", tmp_path / "m.txt", "--nonmembers", tmp_path / "n.txt", "--model", models[0],
                "--reference", models[1], "--attacks", "rmia", "--out", tmp_path / "out", "--quiet")
    assert_one_error(r.returncode, r.stderr, "population")
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def references(models, texts, tmp_path_factory):
    """``mia make-references`` with k = 2 on the tiny base (one epoch over 6 texts each)."""
    root = tmp_path_factory.mktemp("refs")
    pop = root / "population.txt"
    pop.write_text("\n".join(_sets(texts)[1].texts) + "\n")
    out = root / "refs"
    r = run_mia("make-references", "--population", pop, "--base", models[0], "--k", "2", "--epochs", "1",
                "--lr", "0.01", "--lora-r", "4", "--out", out, "--quiet", "--device", "cpu",
                env_extra={"OMP_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "2 reference models written" in r.stdout and "min per reference" in r.stdout
    return out


def test_make_references_writes_loadable_halves(references, models, texts):
    from mia_core.cache import text_hash

    index = json.loads((references / "references.json").read_text())
    pop = _sets(texts)[1].texts
    assert index["k"] == 2 and index["n_population"] == len(pop) and index["seconds_per_reference"] > 0
    seen = []
    for i, r in enumerate(index["references"]):
        folder = references / r["dir"]
        rec = json.loads((folder / "reference_members.json").read_text())
        assert rec["text_hashes"] == [text_hash(pop[j]) for j in rec["indices"]]
        seen.append(set(rec["indices"]))
        lm = load_causal_lm(str(folder), dtype="fp32", device="cpu", reuse=False)
        assert lm.info["method"] == "lora" and lm.base_spec == str(Path(models[0]).resolve())
        if i == 0:  # a LoRA folder (adapter merged, weights frozen): gradients reach every weight
            flags = [p.requires_grad for p in lm.model.parameters()]
            g = compute_grad_norms(lm, pop[:1], ALWAYS, use_cache=False)[0]
            assert len(g.names) == len(flags) and (g.l2 > 0).all() and np.isfinite(g.norm())
            assert [p.requires_grad for p in lm.model.parameters()] == flags
    # complementary halves: every population text is IN for exactly one of the pair
    assert seen[0] | seen[1] == set(range(len(pop))) and not seen[0] & seen[1]
    assert len(seen[0]) == len(pop) // 2


def test_rmia_with_k_references_equals_hand_computation(models, texts, references):
    target = load_causal_lm(models[0], dtype="fp32", device="cpu")
    ds, pop = _sets(texts)
    refs = [load_causal_lm(str(references / f"ref-{i}"), dtype="fp32", device="cpu") for i in range(2)]
    index = [set(json.loads((references / f"ref-{i}" / "reference_members.json").read_text())["indices"])
             for i in range(2)]
    px = np.exp(-np.array([_mean_nll(target, t) for t in ds.texts]))
    pz = np.exp(-np.array([_mean_nll(target, t) for t in pop.texts]))
    rx = np.exp(-np.array([[_mean_nll(r, t) for r in refs] for t in ds.texts]))
    rz = np.exp(-np.array([[_mean_nll(r, t) for r in refs] for t in pop.texts]))
    in_z = np.array([[j in index[i] for i in range(2)] for j in range(len(pop))])
    assert in_z.sum(1).tolist() == [1] * len(pop)
    # the folder stands for both references; no --reference needed
    res = run_attacks(ds, target, population=pop, config=RunConfig(stats=ALWAYS, 
        attacks=["rmia"], params={"rmia": {"references": str(references)}}, n_bootstrap=0, blind=False))
    hand = _hand_rmia(px, rx, pz, rz, in_z, 0.3, 1.0)
    np.testing.assert_allclose(res.scores["rmia"].to_numpy(), hand)
    assert 0 < hand.sum() < len(hand)
    # two references cannot tune a (Privacy Meter's paired attack needs others): 0.3, and the run says why
    assert res.extra["rmia"]["a"] == 0.3 and res.extra["rmia"]["a_source"] == "fallback"
    assert any("not tuned" in n for n in res.extra["rmia"]["notes"])
    rec = res.extra["rmia"]["references"]
    assert [d["population_texts_seen"] for d in rec] == [len(index[0]), len(index[1])]
    # the same two given one by one (comma-separated)
    res2 = run_attacks(ds, target, population=pop, config=RunConfig(stats=ALWAYS, 
        attacks=["rmia"], params={"rmia": {"references": f"{references}/ref-0,{references}/ref-1"}},
        n_bootstrap=0, blind=False))
    np.testing.assert_allclose(res2.scores["rmia"].to_numpy(), hand)


def test_rmia_says_when_a_small_a_makes_it_rank_like_loss():
    """Issue 28 item 3: at language-model sequence likelihoods (~e^-3) a = 0.3 leaves RMIA ranking texts
    like LOSS; the run says so (Spearman with the target's likelihood), a = 1 does not."""
    from mia_core.attacks.rmia import LOSS_LIKE, loss_likeness

    rng = np.random.default_rng(0)
    n, m = 60, 80
    difficulty_x, difficulty_z = rng.normal(-3, 0.5, n), rng.normal(-3, 0.5, m)
    d = {"px": np.exp(difficulty_x + rng.normal(0, 0.3, n)), "pz": np.exp(difficulty_z + rng.normal(0, 0.3, m)),
         "ref_x": np.exp(difficulty_x)[:, None], "ref_z": np.exp(difficulty_z)[:, None],
         "seen_x": np.zeros((n, 1), bool), "seen_z": np.zeros((m, 1), bool)}
    st = {"a": 0.3, "online": False, "gamma": 1.0}
    assert loss_likeness(d, st) >= LOSS_LIKE
    assert loss_likeness(d, {**st, "a": 1.0}) < 0.9  # the reference ratio: the difficulty cancels


def _pm_out_signals(ref, seen, m, a):
    """Privacy Meter's ``get_out_ref_signals`` (modules/mia/attacks/rmia.py), re-typed: IN signals
    zeroed, then the m largest kept (m > 1), or the IN ones replaced by the inverted linear model."""
    out = ref * ~seen
    if m > 1:
        return -np.sort(-out, axis=1)[:, :m]
    return out + ((ref + a - 1) / a) * seen


def test_rmia_marginal_follows_privacy_meter_with_four_references():
    """Issue 28 item 3: with k >= 4 references Pr_OUT is the mean of the k // 2 largest OUT signals
    (Privacy Meter keeps num_reference_models = k // 2); a text every reference trained on scores 0."""
    from mia_core.attacks.rmia import marginal, rmia_scores

    rng = np.random.default_rng(1)
    ref = np.exp(rng.normal(-3, 0.6, (30, 4)))
    seen = np.zeros((30, 4), bool)
    seen[:10, 0] = seen[10:20, 1] = True  # some texts IN for one reference: a zero among the OUT signals
    for a in (0.3, 0.8):
        pm = 0.5 * ((1 + a) * _pm_out_signals(ref, seen, 2, a).mean(1) + (1 - a))
        np.testing.assert_allclose(marginal(ref, seen, a), pm)
        mean_all = 0.5 * ((1 + a) * np.array([r[~s].mean() for r, s in zip(ref, seen)]) + (1 - a))
        np.testing.assert_allclose(marginal(ref, seen, a, out_refs="mean"), mean_all)
        assert not np.allclose(pm, mean_all)  # the largest half differs from the mean of all
    # one reference that trained on the text: Privacy Meter's single-reference branch (inverted model)
    one, one_seen = ref[:, :1], np.ones((30, 1), bool)
    pm1 = 0.5 * ((1 + 0.3) * _pm_out_signals(one, one_seen, 1, 0.3).mean(1) + 0.7)
    np.testing.assert_allclose(marginal(one, one_seen, 0.3), pm1)
    assert (pm1 < 0).all()  # at likelihoods of about e^-3 the estimate is negative ...
    px, pz = np.exp(rng.normal(-3, 0.5, 30)), np.exp(rng.normal(-3, 0.5, 40))
    mz = marginal(np.exp(rng.normal(-3, 0.5, (40, 1))), np.zeros((40, 1), bool), 0.3)
    sc = rmia_scores(px, pm1, pz, mz, 1.0)
    assert (sc == 0).all()  # ... and Privacy Meter's count of ratios > 1 is 0 (not NaN)
    # a z whose Pr(z) is not positive counts in the denominator and is never exceeded
    mz_bad = mz.copy()
    mz_bad[:10] = -0.5
    mx = marginal(ref[:, :1], np.zeros((30, 1), bool), 0.3)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = (px / mx)[:, None] / (pz / mz_bad)[None, :]
    np.testing.assert_allclose(rmia_scores(px, mx, pz, mz_bad, 1.0), (ratios >= 1).mean(1))


def test_rmia_tunes_a_on_a_paired_reference_as_privacy_meter():
    """Privacy Meter's tune_offline_a: RMIA against a paired model with known members, a in 0..1 by
    0.1, the best AUC kept. Synthetic likelihoods where every reference sees the same text difficulty
    and a model's own training texts are more likely: the reference ratio (a near 1) must win, and
    the AUCs must be those of a hand re-run."""
    from mia_core.attacks.rmia import A_GRID, DEFAULTS, _auc, marginal, rmia_scores, tune_a

    rng = np.random.default_rng(2)
    n_x, n_z, k = 40, 60, 4
    diff_x, diff_z = rng.normal(-3, 0.7, n_x), rng.normal(-3, 0.7, n_z)
    seen_z = np.zeros((n_z, k), bool)
    half = rng.permutation(n_z)[: n_z // 2]
    seen_z[half, 0] = True
    seen_z[:, 1] = ~seen_z[:, 0]  # complementary pairs, as make-references trains them
    half2 = rng.permutation(n_z)[: n_z // 2]
    seen_z[half2, 2] = True
    seen_z[:, 3] = ~seen_z[:, 2]
    noise = lambda shape: rng.normal(0, 0.15, shape)  # noqa: E731
    d = {"px": np.exp(diff_x + noise(n_x)), "pz": np.exp(diff_z + noise(n_z)),
         "ref_x": np.exp(diff_x[:, None] + noise((n_x, k))),
         "ref_z": np.exp(diff_z[:, None] + noise((n_z, k)) + 0.4 * seen_z),
         "seen_x": np.zeros((n_x, k), bool), "seen_z": seen_z, "recorded": [True] * k}
    st = dict(DEFAULTS)
    got = tune_a(d, st, [f"ref-{i}" for i in range(k)])
    assert got["paired_model"] == "ref-0" and got["n_in"] == got["n_out"] == n_z // 2
    hand = {}
    for a in A_GRID:  # the hand re-run: paired model ref-0, the other three as references, audited texts as z
        sc = rmia_scores(d["ref_z"][:, 0], marginal(d["ref_z"][:, 1:], seen_z[:, 1:], a), d["ref_x"][:, 0],
                         marginal(d["ref_x"][:, 1:], d["seen_x"][:, 1:], a), 1.0)
        hand[f"{a:.1f}"] = round(_auc(seen_z[:, 0].astype(int), sc), 4)
    assert got["auc_by_a"] == hand
    assert got["a"] == float(max(hand, key=lambda a: (hand[a], -float(a))))  # the first best, as Privacy Meter
    assert got["a"] >= 0.7 and hand["1.0"] > hand["0.3"] + 0.1
    # too few references with a record: not tuned, 0.3, and the reason is given
    small = {**d, "ref_x": d["ref_x"][:, :2], "ref_z": d["ref_z"][:, :2], "seen_x": d["seen_x"][:, :2],
             "seen_z": seen_z[:, :2], "recorded": [True, True]}
    assert "3 or more reference models" in tune_a(small, st, ["a", "b"])["reason"]


def test_rmia_a_domain():
    from mia_core.attacks.rmia import _settings

    assert _settings({"a": "tune"})["a"] is None and _settings({"a": "auto"})["a"] is None
    assert _settings({"a": "0.5"})["a"] == 0.5 and _settings({})["a"] is None
    with pytest.raises(SettingsError, match="rmia.a"):
        _settings({"a": 1.5})
    with pytest.raises(SettingsError, match="rmia.out_refs"):
        _settings({"out_refs": "top"})


def test_rmia_tunes_a_end_to_end(models, texts, references):
    """The tuning runs inside a real run: three references with membership records (the pair, and the
    first again: the paired model's other references are then its complement and a copy of itself),
    the tuned a recorded and used for the scores."""
    from mia_core.attacks.rmia import A_GRID

    target = load_causal_lm(models[0], dtype="fp32", device="cpu")
    ds, pop = _sets(texts)
    spec = f"{references}/ref-0,{references}/ref-1,{references}/ref-0"
    res = run_attacks(ds, target, population=pop, config=RunConfig(stats=ALWAYS, attacks=["rmia"],
                      params={"rmia": {"references": spec}}, n_bootstrap=0, blind=False))
    rec = res.extra["rmia"]
    assert rec["a_source"] == "tuned" and rec["a"] in A_GRID and len(rec["a_tuning"]["auc_by_a"]) == 11
    assert rec["a_tuning"]["n_in"] == rec["a_tuning"]["n_out"] == len(pop) // 2
    fixed = run_attacks(ds, target, population=pop, config=RunConfig(stats=ALWAYS, attacks=["rmia"],
                        params={"rmia": {"references": spec, "a": rec["a"]}}, n_bootstrap=0, blind=False))
    np.testing.assert_allclose(res.scores["rmia"].to_numpy(), fixed.scores["rmia"].to_numpy())
    assert fixed.extra["rmia"]["a_source"] == "given" and "a_tuning" not in fixed.extra["rmia"]


def test_gradnorm_leaves_out_tensors_no_loss_reaches(models, texts):
    """A tensor without a gradient (an unused head) is NaN, not 0, and left out of every aggregate, as
    MIMIR's GradNormAttack averages only the tensors with a gradient (found by benchmarks/mimir_compare)."""
    lm = load_causal_lm(models[0], dtype="fp32", device="cpu", reuse=False)
    plain = compute_grad_norms(lm, texts[:1], ALWAYS, use_cache=False)[0]
    lm.model.register_parameter("unused_head", torch.nn.Parameter(torch.ones(4, 4)))
    try:
        got = compute_grad_norms(lm, texts[:1], ALWAYS, use_cache=False)[0]
    finally:
        del lm.model.unused_head
    assert len(got.names) == len(plain.names) + 1 and np.isnan(got.linf).sum() == 1
    for p, agg in (("linf", "mean"), ("l2", "global"), ("l1", "global"), ("linf", "global"), ("l2", "mean")):
        assert got.norm(p, agg) == pytest.approx(plain.norm(p, agg), rel=1e-6)
    assert got.norm("linf", "mean") != pytest.approx(np.nan_to_num(got.linf).mean(), rel=1e-3)  # zeros would count
