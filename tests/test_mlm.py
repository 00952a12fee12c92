"""Masked-LM likelihood-ratio audit (Mireshghallah et al. 2022) on tiny BERTs trained here.

Controlled design of the paper (§3): a target masked LM is trained (standard 15 % MLM) on
member paragraphs until it fits them; a reference of the same architecture is trained on a
disjoint split of the same distribution. The evaluated non-members and the population set
(which only sets the threshold) are two further disjoint splits. Both models use a WordPiece
tokenizer cut down from the embedded MiniLM's vocabulary (the tokens the paragraphs use, so
tokenisation is unchanged) and are saved to disk and loaded by path, as a user's checkpoint
would be.
"""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest

from mia_core import mlm as M
from mia_core.cache import text_hash
from mia_core.errors import DataError, ModelError, SettingsError
from mia_core.mlm import energy as mlm_energy, stages as mlm_stages
from mia_core.models import MaskedLM, load_masked_lm
from mia_core.models.masked import forget_loaded
from tiny_lm import minilm_dir as _minilm_dir, small_bert_tokenizer as _small_tokenizer, train_tiny_mlm as _train_mlm

DATA = Path(__file__).resolve().parent / "data"
N_MEM, N_NON, N_POP, N_REF = 60, 60, 60, 160
K = 5  # masking patterns in the tests (default 10); fewer keeps the suite fast
MAX_POS = 128  # the tiny models take 128 tokens, so the longest paragraphs exercise truncation (tiny_lm.MLM_MAX_POS)


def _paragraphs() -> list[str]:
    return [json.loads(line)["text"] for line in (DATA / "paragraphs.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    import torch

    # One thread: the matrices are tiny, and when other processes share the cores OpenMP's
    # spin-waiting costs several times what a second thread saves. Restored afterwards.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("mlm")
    old_cache = os.environ.get("MIA_CACHE_DIR")
    os.environ["MIA_CACHE_DIR"] = str(root / "cache")
    forget_loaded()
    texts = _paragraphs()
    order = np.random.default_rng(0).permutation(len(texts))
    cuts = np.cumsum([N_MEM, N_NON, N_POP, N_REF])
    mem, non, pop, ref = ([texts[i] for i in order[a:b]] for a, b in zip(np.r_[0, cuts[:-1]], cuts))
    tok = _small_tokenizer(texts, root / "tok")
    reference = _train_mlm(ref, tok, root / "reference", epochs=8, seed=2)
    target = _train_mlm(mem, tok, root / "target", epochs=25, seed=1)
    res = M.run_mlm_audit(mem, non, pop, str(target), str(reference), k=K, seed=0, n_bootstrap=200)
    yield {"root": root, "mem": mem, "non": non, "pop": pop, "ref": ref, "target": target, "reference": reference,
           "tok": tok, "res": res}
    forget_loaded()
    torch.set_num_threads(threads)
    if old_cache is None:
        os.environ.pop("MIA_CACHE_DIR", None)
    else:
        os.environ["MIA_CACHE_DIR"] = old_cache


# --------------------------------------------------------------------------------------
# the attack on models with known membership
# --------------------------------------------------------------------------------------
@pytest.mark.slow
def test_likelihood_ratio_beats_loss_on_controlled_models(world):
    res = world["res"]
    lr, loss = res.metrics["likelihood_ratio"], res.metrics["loss"]
    assert lr["auc"] >= 0.8, lr["auc"]
    assert lr["auc"] > loss["auc"], (lr["auc"], loss["auc"])
    assert lr["n_members"] == N_MEM and lr["n_nonmembers"] == N_NON
    d = lr["population_threshold"]
    assert d["n_members"] == N_MEM and d["n_nonmembers"] == N_NON and d["n_population"] == N_POP
    assert d["precision"] is not None and d["precision"] >= 0.7 and d["recall"] >= 0.5
    assert d["alpha"] == 0.1
    # scores follow the convention: higher = member; -L = E_ref - E_target
    rows = res.scores
    e_t = rows["energy_target"].to_numpy()
    e_r = rows["energy_reference"].to_numpy()
    np.testing.assert_allclose(rows["likelihood_ratio"], e_r - e_t)
    # the loss baseline is the mean loss per masked token (§3.4): -E / l, l = ceil(0.15 T)
    assert rows["n_masked"].tolist() == [M.n_masked(int(t)) for t in rows["n_tokens"]]
    np.testing.assert_allclose(rows["loss"], -e_t / rows["n_masked"].to_numpy())
    lab = rows["label"].to_numpy()
    assert np.mean(e_t[lab == 1]) < np.mean(e_t[lab == 0])  # the target fits its members


def test_threshold_is_set_on_population_only_and_decisions_on_held_out_rows(world):
    res = world["res"]
    rows = res.scores
    pop_hashes = {text_hash(t) for t in world["pop"]}
    assert len(rows) == N_MEM + N_NON
    assert not pop_hashes & set(rows["text_hash"])
    for name in M.ATTACKS:
        pop_scores = np.array(res.population_scores[name])
        assert pop_scores.size == N_POP
        d = res.metrics[name]["population_threshold"]
        # the threshold flags alpha of the population ...
        assert np.mean(pop_scores >= d["threshold"]) == pytest.approx(0.1, abs=1.5 / N_POP)
        # ... and precision/recall are counted on the evaluated rows only
        s = rows[name].to_numpy()
        lab = rows["label"].to_numpy()
        flagged = s >= d["threshold"]
        assert d["n_flagged"] == int(flagged.sum())
        assert d["recall"] == pytest.approx(flagged[lab == 1].mean())
        assert d["fpr"] == pytest.approx(flagged[lab == 0].mean())
        assert rows[f"flagged_{name}"].tolist() == flagged.tolist()


def test_population_overlapping_the_evaluation_is_refused(world):
    mem, non, pop = world["mem"], world["non"], world["pop"]
    for leaked in (non[:2], mem[:1]):
        with pytest.raises(DataError, match="population"):
            M.run_mlm_audit(mem, non, pop + leaked, str(world["target"]), str(world["reference"]), k=K)
    with pytest.raises(DataError, match="population"):
        M.run_mlm_audit(mem, non, [], str(world["target"]), str(world["reference"]), k=K)


def test_group_level_attack(world):
    mem, non, pop = world["mem"], world["non"], world["pop"]
    size = 4
    mg = [f"pm{i // size}" for i in range(len(mem))]
    ng = [f"pn{i // size}" for i in range(len(non))]
    pg = [f"pp{i // size}" for i in range(len(pop))]
    res = M.run_mlm_audit(mem, non, pop, str(world["target"]), str(world["reference"]), k=K, n_bootstrap=200,
                          member_groups=mg, nonmember_groups=ng, population_groups=pg)
    sample_auc = res.metrics["likelihood_ratio"]["auc"]
    g = res.group_metrics["likelihood_ratio"]
    assert g["n_groups"] == (N_MEM + N_NON) // size
    assert g["n_members"] == N_MEM // size and g["n_nonmembers"] == N_NON // size
    assert g["auc"] >= 0.8 and g["auc"] >= sample_auc - 0.02, (g["auc"], sample_auc)
    assert g["population_threshold"]["threshold_from"] == "population groups"
    assert g["population_threshold"]["n_population"] == N_POP // size
    # group score = mean of its texts' scores
    s = res.scores.loc[res.scores["group"] == "pm0", "likelihood_ratio"].to_numpy()
    assert s.size == size
    # without population groups, the text-level population threshold is applied to group means
    res2 = M.run_mlm_audit(mem, non, pop, str(world["target"]), str(world["reference"]), k=K, n_bootstrap=0,
                           member_groups=mg, nonmember_groups=ng)
    g2 = res2.group_metrics["likelihood_ratio"]["population_threshold"]
    assert g2["threshold"] == res2.metrics["likelihood_ratio"]["population_threshold"]["threshold"]
    assert g2["threshold_from"].startswith("population texts")


def test_loss_mu_threshold_and_leak_features(world):
    mem, non, pop = world["mem"], world["non"], world["pop"]
    res = M.run_mlm_audit(mem, non, pop, str(world["target"]), str(world["reference"]), k=K, n_bootstrap=0,
                          train_samples=mem[:30])
    mu = res.metrics["loss"]["mu_threshold"]
    # mu: the training samples' mean loss per masked token (§3.4), energy / l
    per_token = -res.scores["loss"].to_numpy()
    assert mu["mu"] == pytest.approx(np.mean(res.energies["train_loss_per_token"]))
    assert mu["mu"] == pytest.approx(np.mean(per_token[:30]))  # same texts, same masks
    np.testing.assert_allclose(per_token, np.array(res.energies["target"]) / res.scores["n_masked"].to_numpy())
    lab = np.r_[np.ones(N_MEM), np.zeros(N_NON)]
    assert mu["recall"] == pytest.approx(np.mean(per_token[lab == 1] <= mu["mu"]))
    # §4.6: features of flagged vs unflagged members
    lf = res.leak_features["likelihood_ratio"]
    assert lf["n_flagged"] + lf["n_unflagged"] == N_MEM
    flagged = res.scores["flagged_likelihood_ratio"].to_numpy()[:N_MEM]
    assert lf["n_flagged"] == int(flagged.sum())
    plan = res.plan
    if flagged.any():
        assert lf["flagged"]["n_tokens"] == pytest.approx(plan.n_tokens_full[:N_MEM][flagged].mean())
        digits = np.array([sum(c.isdigit() for c in t) for t in mem])
        assert lf["flagged"]["n_digits"] == pytest.approx(digits[flagged].mean())
        assert lf["flagged"]["rarest_token_freq"] >= 1


def test_truncation_is_counted(world):
    res = world["res"]
    plan = res.plan
    too_long = int(np.sum(plan.n_tokens_full[:N_MEM + N_NON + N_POP] > MAX_POS - 2))
    assert too_long > 0  # the data has paragraphs longer than the tiny models take
    assert plan.n_truncated == too_long
    assert max(plan.n_tokens) == MAX_POS - 2
    assert any("truncated" in w for w in res.warnings)


# --------------------------------------------------------------------------------------
# masks: seeded, shared by target and reference
# --------------------------------------------------------------------------------------
def test_masking_patterns_are_seeded():
    h = text_hash("some text")
    a = M.masking_patterns(40, 10, 0, h)
    assert a.shape == (10, 6)  # ceil(0.15 * 40) = 6
    assert np.array_equal(a, M.masking_patterns(40, 10, 0, h))
    assert not np.array_equal(a, M.masking_patterns(40, 10, 1, h))
    assert not np.array_equal(a, M.masking_patterns(40, 10, 0, text_hash("other text")))
    for row in a:
        assert np.all(np.diff(row) > 0) and row.min() >= 0 and row.max() < 40
    assert [M.n_masked(t) for t in (1, 6, 7, 20, 100)] == [1, 1, 2, 3, 15]
    with pytest.raises(SettingsError):
        M.masking_patterns(40, 0, 0, h)


def test_energy_deterministic_given_seed(world):
    lm = load_masked_lm(str(world["target"]))
    texts = world["mem"][:6] + world["non"][:6]
    e0 = M.energies(lm, texts, k=K, seed=0, cache=False)
    e0b = M.energies(lm, list(reversed(texts)), k=K, seed=0, cache=False, batch_tokens=300)
    np.testing.assert_allclose(e0, e0b[::-1], rtol=1e-5)  # batch order and batch size do not matter
    e1 = M.energies(lm, texts, k=K, seed=1, cache=False)
    assert np.all(np.isfinite(e0)) and np.all(e0 > 0)
    assert not np.allclose(e0, e1)
    # one text scored by hand: E = -(1/K) sum_k sum_{i in I_k} log p(s_i | masked s)
    import torch

    plan = M.plan_masks(lm.tokenizer, texts[:1], k=K, seed=0, max_length=lm.max_length)
    total = 0.0
    for pos in plan.positions(0):
        ids = torch.tensor(plan.ids[0])[None].clone()
        ids[0, pos] = lm.mask_token_id
        with torch.no_grad():
            logp = torch.log_softmax(lm.model(input_ids=ids).logits[0].double(), -1)
        total += float(logp[pos, torch.tensor(plan.ids[0][pos])].sum())
    assert e0[0] == pytest.approx(-total / K, rel=1e-4)


def test_target_and_reference_score_identical_masks(world, monkeypatch):
    seen = []
    real = mlm_stages.energies

    def spy(mlm, *args, **kw):
        seen.append((mlm.name, kw["plan"]))
        return real(mlm, *args, **kw)

    monkeypatch.setattr(mlm_stages, "energies", spy)
    mem, non, pop = world["mem"][:10], world["non"][:10], world["pop"][:10]
    M.run_mlm_audit(mem, non, pop, str(world["target"]), str(world["reference"]), k=K, n_bootstrap=0)
    assert [name for name, _ in seen] == ["target", "reference"]
    pt, pr = seen[0][1], seen[1][1]
    assert len(pr.texts) == 30
    for i in range(30):
        assert pt.masks[i] is pr.masks[i]  # the very same arrays: masks are drawn once per text
        assert np.array_equal(pt.ids[i], pr.ids[i])
        expect = M.masking_patterns(pt.content[i].size, K, 0, text_hash(pt.texts[i]))
        assert np.array_equal(pt.masks[i], expect)


def test_rerun_uses_the_cache_and_makes_no_model_call(world, monkeypatch):
    def boom(*a, **k):
        raise AssertionError("the model was called although every energy is cached")

    monkeypatch.setattr(mlm_energy, "_score_batch", boom)
    res = M.run_mlm_audit(world["mem"], world["non"], world["pop"], str(world["target"]), str(world["reference"]),
                          k=K, seed=0, n_bootstrap=200)
    assert res.metrics["likelihood_ratio"]["auc"] == world["res"].metrics["likelihood_ratio"]["auc"]
    assert res.scores["likelihood_ratio"].tolist() == world["res"].scores["likelihood_ratio"].tolist()


@pytest.mark.parametrize("arch", ["bert", "roberta", "distilbert", "modernbert"])
def test_masked_positions_only_head_matches_full_logits(arch):
    """The vocabulary projection is computed only at the masked positions (a pre-hook on the
    output layer); it must give the log-probabilities of the full logits, for each family."""
    import torch
    import transformers as T

    from mia_core.mlm.energy import _forward_logprobs

    v = 300
    small = dict(num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    cfg = {
        "bert": lambda: T.BertConfig(vocab_size=v, hidden_size=32, **small),
        "roberta": lambda: T.RobertaConfig(vocab_size=v, hidden_size=32, **small),
        "distilbert": lambda: T.DistilBertConfig(vocab_size=v, dim=32, n_layers=1, n_heads=2, hidden_dim=64),
        "modernbert": lambda: T.ModernBertConfig(vocab_size=v, hidden_size=32, pad_token_id=0, bos_token_id=1,
                                                 eos_token_id=2, cls_token_id=1, sep_token_id=2, **small),
    }[arch]()
    torch.manual_seed(0)
    model = T.AutoModelForMaskedLM.from_config(cfg).eval()
    ids = torch.randint(5, v, (3, 12))
    att = torch.ones_like(ids)
    att[2, 9:] = 0
    rows, cols = torch.tensor([0, 0, 1, 2]), torch.tensor([1, 5, 3, 8])
    targets = ids[rows, cols].clone()
    ids[rows, cols] = 4
    shapes = []
    hook = model.get_output_embeddings().register_forward_hook(lambda m, i, o: shapes.append(tuple(o.shape)))
    with torch.no_grad():
        got = _forward_logprobs(model, ids, att, rows, cols, targets)
        hook.remove()
        full = torch.log_softmax(model(input_ids=ids, attention_mask=att).logits.float(), -1)[rows, cols]
    assert shapes == [(4, v)]  # 4 masked positions projected, not 3 x 12
    torch.testing.assert_close(got, full.gather(1, targets[:, None])[:, 0], atol=1e-5, rtol=1e-5)


# --------------------------------------------------------------------------------------
# models: tokenizer agreement and loading errors
# --------------------------------------------------------------------------------------
def _fake(tok, name):
    return MaskedLM(model=None, tokenizer=tok, name=name, identity=name, device="cpu", dtype="fp32",
                      max_length=128, n_params=0)


def test_tokenizer_mismatch_raises(world, tmp_path):
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    small = world["tok"]
    full = AutoTokenizer.from_pretrained(str(_minilm_dir()))
    M.check_same_tokenizer(_fake(small, "a"), _fake(AutoTokenizer.from_pretrained(str(world["target"])), "b"))
    with pytest.raises(SettingsError, match="vocabularies differ"):
        M.check_same_tokenizer(_fake(small, "a"), _fake(full, "b"))
    cased = _small_tokenizer(_paragraphs(), tmp_path / "cased", lowercase=False)
    with pytest.raises(SettingsError, match="tokenise text differently"):
        M.check_same_tokenizer(_fake(small, "a"), _fake(cased, "b"))
    # same vocabulary, other normalisation: accepted on request, with a warning
    assert M.check_same_tokenizer(_fake(small, "a"), _fake(cased, "b"), vocab_only=True)
    with pytest.raises(SettingsError, match="vocabularies differ"):
        M.check_same_tokenizer(_fake(small, "a"), _fake(full, "b"), vocab_only=True)
    # end to end: a reference with another vocabulary is refused before any scoring
    torch.manual_seed(0)
    other = BertForMaskedLM(BertConfig(vocab_size=len(full), hidden_size=16, num_hidden_layers=1,
                                       num_attention_heads=1, intermediate_size=32, max_position_embeddings=64))
    other.save_pretrained(str(tmp_path / "other"))
    full.save_pretrained(str(tmp_path / "other"))
    with pytest.raises(SettingsError, match="do not share a tokenizer"):
        M.run_mlm_audit(world["mem"][:5], world["non"][:5], world["pop"][:5], str(world["target"]),
                        str(tmp_path / "other"), k=K)


def test_model_loading_errors(tmp_path, monkeypatch):
    from transformers import GPT2Config, GPT2LMHeadModel

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelError, match="not found locally"):
        load_masked_lm("no-such-org/no-such-masked-lm")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="no config.json"):
        load_masked_lm(str(tmp_path / "empty"))
    with pytest.raises(ModelError, match="no such folder"):
        load_masked_lm(str(tmp_path / "missing"))
    GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=16, n_layer=1, n_head=1, n_positions=32)).save_pretrained(
        str(tmp_path / "causal"))
    with pytest.raises(ModelError, match="not a masked language model"):
        load_masked_lm(str(tmp_path / "causal"))


# --------------------------------------------------------------------------------------
# CLI end to end
# --------------------------------------------------------------------------------------
def _write_csv(path: Path, texts, groups):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "group"])
        for t, g in zip(texts, groups):
            w.writerow([t, g])


def test_cli_end_to_end(world, tmp_path, capsys):
    from mia_core.cli import main

    mem, non, pop = world["mem"][:24], world["non"][:24], world["pop"][:24]
    _write_csv(tmp_path / "members.csv", mem, [f"m{i // 3}" for i in range(24)])
    _write_csv(tmp_path / "nonmembers.csv", non, [f"n{i // 3}" for i in range(24)])
    (tmp_path / "population.txt").write_text("\n".join(pop) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["mlm", "--members", str(tmp_path / "members.csv"), "--nonmembers", str(tmp_path / "nonmembers.csv"),
            "--population", str(tmp_path / "population.txt"), "--model", str(world["target"]),
            "--reference", str(world["reference"]), "--masks", str(K), "--alpha", "0.1", "--seed", "0",
            "--group-column", "group", "--bootstrap", "50", "--out", str(out), "--quiet"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "likelihood_ratio" in printed and "precision" in printed and "group level" in printed
    with open(out / "scores.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 48
    assert list(rows[0])[:6] == ["text_id", "label", "text_hash", "likelihood_ratio", "loss", "group"]
    assert {r["label"] for r in rows} == {"0", "1"}
    metrics = json.loads((out / "metrics.json").read_text())
    for attack in ("likelihood_ratio", "loss"):
        m = metrics[attack]
        assert 0.0 <= m["auc"] <= 1.0 and "roc" not in m
        assert set(m["population_threshold"]) >= {"threshold", "precision", "recall", "fpr"}
        assert metrics["group"][attack]["n_groups"] == 16
    assert metrics["group"]["likelihood_ratio"]["population_threshold"]["threshold_from"].startswith("population texts")
    # the same run through the library gives the same scores (the CLI adds nothing of its own)
    lib = M.run_mlm_audit(mem, non, pop, str(world["target"]), str(world["reference"]), k=K, n_bootstrap=0)
    np.testing.assert_allclose([float(r["likelihood_ratio"]) for r in rows],
                               lib.scores["likelihood_ratio"], rtol=1e-9)

    # a population that overlaps the evaluated texts: one line, exit 2
    (tmp_path / "bad_pop.txt").write_text("\n".join(pop + non[:1]) + "\n", encoding="utf-8")
    bad = list(args)
    bad[bad.index(str(tmp_path / "population.txt"))] = str(tmp_path / "bad_pop.txt")
    bad[bad.index(str(out))] = str(tmp_path / "out_bad")  # a used --out would be refused first
    assert main(bad) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and "population" in err[-1]


# --------------------------------------------------------------------------------------
# energy recipes: "sum" (default) and "released" (issue 28)
# --------------------------------------------------------------------------------------
def test_released_recipe_masks_int_not_ceil_and_keys_the_cache_apart(tmp_path):
    # l = ceil(0.15 T) by default; int(0.15 T), at least 1, with the released recipe
    ts = (1, 6, 7, 13, 14, 20, 21, 40, 100, 101)
    assert [M.n_masked(t) for t in ts] == [1, 1, 2, 2, 3, 3, 4, 6, 15, 16]
    assert [M.n_masked(t, recipe="released") for t in ts] == [1, 1, 1, 1, 2, 3, 3, 6, 15, 15]
    h = text_hash("some text")
    assert M.masking_patterns(21, 4, 0, h).shape == (4, 4)
    assert M.masking_patterns(21, 4, 0, h, recipe="released").shape == (4, 3)
    with pytest.raises(SettingsError, match="unknown energy recipe 'mean'"):
        M.n_masked(20, recipe="mean")
    # the cache key: the default recipe's settings are those of earlier versions (its entries stay valid);
    # the released recipe's masks differ (other l), so its key differs even at the same K
    tok = _small_tokenizer(_paragraphs()[:5], tmp_path / "tok")
    texts = _paragraphs()[:3]
    p_sum = M.plan_masks(tok, texts, k=4, seed=0, max_length=128)
    p_rel = M.plan_masks(tok, texts, k=4, seed=0, max_length=128, recipe="released")
    assert p_sum.settings() == {"k": 4, "seed": 0, "rate": 0.15, "max_length": 128}
    assert p_rel.settings() == {**p_sum.settings(), "mask_count": "floor"}
    assert p_sum.recipe == "sum" and p_rel.recipe == "released"
    assert p_rel.n_masked.tolist() == [M.n_masked(int(t), recipe="released") for t in p_rel.n_tokens]
    assert (p_rel.n_masked <= p_sum.n_masked).all() and (p_rel.n_masked < p_sum.n_masked).any()
    lm = _fake(tok, "x")
    assert mlm_energy._cache_for(lm, p_sum, False).key != mlm_energy._cache_for(lm, p_rel, False).key
    # K: 20 by default with the released recipe, 10 with the default one; an explicit k wins
    assert M.plan_masks(tok, texts, recipe="released").k == 20 and M.plan_masks(tok, texts).k == 10
    assert M.plan_masks(tok, texts, k=3, recipe="released").k == 3
    assert M.recipe_k("released") == 20 and M.recipe_k("released", 7) == 7 and M.recipe_k() == M.DEFAULT_K


def test_released_energy_is_the_mean_loss_per_masked_token(world):
    import torch

    lm = load_masked_lm(str(world["target"]))
    texts = world["mem"][:4] + world["non"][:4]
    plan = M.plan_masks(lm.tokenizer, texts, k=K, seed=0, max_length=lm.max_length, recipe="released")
    e, sums = M.energies(lm, plan=plan, cache=False, return_patterns=True)
    l = plan.n_masked
    assert len(set(l.tolist())) > 1  # texts of different lengths
    # from the per-pattern sums: the mean over the patterns of each pattern's mean loss per masked token
    np.testing.assert_allclose(e, np.mean(-sums / l[:, None], axis=1), rtol=1e-12)
    np.testing.assert_allclose(e, -sums.mean(axis=1) / l, rtol=1e-12)
    # and by hand, as the released code computes it: cross-entropy averaged over the masked tokens
    # of a pattern, then averaged over the patterns
    ce = []
    for pos in plan.positions(0):
        ids = torch.tensor(plan.ids[0])[None].clone()
        ids[0, pos] = lm.mask_token_id
        with torch.no_grad():
            logits = lm.model(input_ids=ids).logits[0].double()
        ce.append(float(torch.nn.functional.cross_entropy(logits[pos], torch.tensor(plan.ids[0][pos]))))
    assert len(ce) == K and e[0] == pytest.approx(np.mean(ce), rel=1e-4)
    # the recipe's default K (20) when k is not given; a plan of another recipe is refused
    e20, s20 = M.energies(lm, texts[:2], recipe="released", cache=False, return_patterns=True)
    assert s20.shape == (2, 20)
    with pytest.raises(SettingsError, match="drawn for the 'released' recipe"):
        M.energies(lm, plan=plan, recipe="sum", cache=False)


@pytest.mark.slow
def test_recipes_rank_texts_of_different_lengths_differently_and_are_recorded(world):
    mem, non, pop = world["mem"], world["non"], world["pop"]
    res_sum = world["res"]  # recipe "sum", k = K
    res_rel = M.run_mlm_audit(mem, non, pop, str(world["target"]), str(world["reference"]), k=K, seed=0,
                              n_bootstrap=0, recipe="released")
    assert res_sum.settings["recipe"] == "sum" and res_rel.settings["recipe"] == "released"
    assert res_rel.settings["k"] == K  # the explicit k wins over the recipe's 20
    assert res_rel.to_json()["settings"]["recipe"] == "released"
    assert "recipe 'released'" in res_rel.summary_text() and "recipe 'sum'" in res_sum.summary_text()
    rel, sm = res_rel.scores, res_sum.scores
    assert rel["text_hash"].tolist() == sm["text_hash"].tolist()
    l = rel["n_masked"].to_numpy()
    assert l.tolist() == [M.n_masked(int(t), recipe="released") for t in rel["n_tokens"]]
    # released: score = -(E_t - E_r) with per-token energies, and the loss baseline is -E_t itself
    np.testing.assert_allclose(rel["likelihood_ratio"], rel["energy_reference"] - rel["energy_target"])
    np.testing.assert_allclose(rel["loss"], -rel["energy_target"])
    # on the same masks, the summed ratio is the per-token one times l: the order of two texts of
    # different lengths can flip between the two (this would fail if the recipe only rescaled)
    lr_rel = rel["likelihood_ratio"].to_numpy()
    lr_same_masks_summed = lr_rel * l

    def flipped(a, b):
        return [(i, j) for i in range(len(a)) for j in range(i + 1, len(a))
                if l[i] != l[j] and (a[i] - a[j]) * (b[i] - b[j]) < 0]

    assert flipped(lr_rel, lr_same_masks_summed)
    # between the two recipes' runs (other l, other aggregation): pairs of different lengths change order
    lr_sum = sm["likelihood_ratio"].to_numpy()
    assert flipped(lr_rel, lr_sum)
    from scipy.stats import spearmanr

    rho = spearmanr(lr_rel, lr_sum).statistic
    assert 0.5 < rho < 1.0, rho  # related, not the same ranking
    assert res_rel.metrics["likelihood_ratio"]["auc"] >= 0.8


def test_unknown_recipe_is_one_line_before_any_model_loads(world, tmp_path, monkeypatch, capsys):
    from mia_core.cli import main

    def boom(*a, **k):
        raise AssertionError("a model was loaded before the recipe was checked")

    monkeypatch.setattr(mlm_stages, "load_masked_lm", boom)
    with pytest.raises(SettingsError, match="unknown energy recipe 'paper'"):
        M.run_mlm_audit(world["mem"][:3], world["non"][:3], world["pop"][:3], "no/such-target", "no/such-reference",
                        recipe="paper")
    with pytest.raises(SettingsError, match="unknown energy recipe"):
        mlm_stages.check_inputs(world["mem"][:3], world["non"][:3], world["pop"][:3], recipe=None)
    out = tmp_path / "out"
    assert main(["mlm", "--demo", "--recipe", "mean", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: unknown energy recipe 'mean'")
    assert "Traceback" not in err[0] and "'released'" in err[0]
    assert not out.exists()


def test_cli_records_the_recipe(world, tmp_path, capsys):
    from mia_core.cli import main

    d = tmp_path / "in"
    d.mkdir()
    for name, texts in (("m", world["mem"][:12]), ("n", world["non"][:12]), ("p", world["pop"][:12])):
        (d / f"{name}.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    base = ["mlm", "--members", str(d / "m.txt"), "--nonmembers", str(d / "n.txt"), "--population", str(d / "p.txt"),
            "--model", str(world["target"]), "--reference", str(world["reference"]), "--bootstrap", "0", "--quiet"]
    assert main(base + ["--recipe", "released", "--masks", "2", "--out", str(tmp_path / "rel")]) == 0
    assert "recipe 'released': K=2" in capsys.readouterr().out
    settings = json.loads((tmp_path / "rel" / "metrics.json").read_text())["settings"]
    assert settings["recipe"] == "released" and settings["k"] == 2
    assert main(base + ["--masks", "2", "--out", str(tmp_path / "sum")]) == 0
    assert json.loads((tmp_path / "sum" / "metrics.json").read_text())["settings"]["recipe"] == "sum"
