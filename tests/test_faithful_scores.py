"""The baseline scores equal the papers' formulas, computed here by hand from raw model logits.

Issue 12 (items 1-4): attacks score tokens 2..n of each text, as the papers and MIMIR do (the
first token, predicted from the BOS/EOS prefix alone, only with ``score_first_token``);
Min-K% / Min-K%++ keep ``floor(k·n)`` tokens (at least one); the reference attack is a
log-likelihood difference by default, the ratio of log-perplexities on request; the masked-LM
loss baseline is the mean loss per masked token.

Every expected value comes from a direct ``model(input_ids)`` forward pass and a
``log_softmax`` in this file, never from ``mia_core.stats`` or ``mia_core.mlm.energy``; the
values under test come from ``run_attacks`` / ``run_mlm_audit``, the code paths of ``mia run``
and ``mia mlm``. Models: two random 2-layer Llamas with the embedded SmolLM2 tokenizer (target
and reference) and two random 2-layer BERTs.
"""
from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

from helpers import ALWAYS, assert_one_error, mia
from tiny_lm import paragraphs

from mia_core.attacks import REGISTRY, AttackInputs
from mia_core.cache import text_hash
from mia_core.errors import SettingsError
from mia_core.stats import StatsSettings

K = 0.2
BASELINES = ["loss", "zlib", "lowercase", "ref", "min_k", "min_k_pp"]
RTOL = 2e-4  # float32 forward passes, batched/padded in mia_core, one text at a time here


def _tiny_llama(out, seed: int) -> str:
    """A random 2-layer Llama (hidden 32) with the embedded SmolLM2 tokenizer, saved as a HF folder.

    The (tied) embeddings are scaled up 30x so that the next-token distributions are about as
    peaked as a trained model's (σ_t around 2.5 nats, as SmolLM2's): a freshly initialised model
    is nearly uniform (σ_t around 0.1), where the float32 second moment of ``mia_core.stats``
    (E[log p²] - μ², two numbers near 117) keeps only ~2 digits of σ_t."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from mia_core.models import converted_gguf_dir, embedded_gguf_path

    tok = AutoTokenizer.from_pretrained(str(converted_gguf_dir(embedded_gguf_path())), local_files_only=True)
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256,
                      tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        model.model.embed_tokens.weight.mul_(30.0)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def _texts() -> tuple[list[str], list[str]]:
    """Short paragraphs (under 200 tokens) cut to a few lengths, so that floor(k·n) and
    ceil(k·n) differ for most of them; one text of 5 tokens: 4 scored, floor(0.2·4) = 0 -> 1 kept."""
    paras = [p for p in paragraphs() if 20 < len(p.split()) < 90][:8]
    cut = [" ".join(p.split()[:w]) for p, w in zip(paras, (9, 13, 17, 22, 26, 31, 38, 45))]
    return cut[:4] + ["The Quick Brown fox."], cut[4:]


class ByHand:
    """Per-token values of one model, from a raw forward pass (no mia_core.stats)."""

    def __init__(self, folder: str):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        # the prefix token mia_core puts in front of every text (SmolLM2: <|endoftext|>, no BOS added)
        self.prefix = self.tok.convert_tokens_to_ids("<|endoftext|>")

    def tokens(self, text: str) -> dict:
        import torch

        ids = self.tok(text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = self.model(torch.tensor([[self.prefix] + ids])).logits[0, :-1].double()
        logp = torch.log_softmax(logits, dim=-1)
        p = logp.exp()
        mu = (p * logp).sum(-1)
        sigma = ((p * logp * logp).sum(-1) - mu * mu).clamp_min(0).sqrt()
        lp = logp[torch.arange(len(ids)), torch.tensor(ids)]
        return {"lp": lp.numpy(), "mu": mu.numpy(), "sigma": sigma.numpy(), "n_bytes": len(text.encode("utf-8"))}


def _scored(v: np.ndarray, first_token: bool) -> np.ndarray:
    return v if first_token else v[1:]


def _lowest_mean(v: np.ndarray, k: float) -> float:
    n = max(1, int(len(v) * k))  # floor, at least one (Shi et al.'s code / MIMIR: int(len * k))
    return float(np.mean(np.sort(v)[:n]))


def expected_scores(t: ByHand, r: ByHand, text: str, *, first_token: bool, form: str = "difference") -> dict:
    a, low, b = t.tokens(text), t.tokens(text.lower()), r.tokens(text)
    lt = -np.mean(_scored(a["lp"], first_token))
    lr = -np.mean(_scored(b["lp"], first_token))
    z = (a["lp"] - a["mu"]) / a["sigma"]
    return {
        "loss": -lt,
        "zlib": -lt / len(zlib.compress(text.encode("utf-8"))),
        "lowercase": -np.mean(_scored(low["lp"], first_token)) / lt,
        "ref": -(lt - lr) if form == "difference" else -lt / lr,
        "min_k": _lowest_mean(_scored(a["lp"], first_token), K),
        "min_k_pp": _lowest_mean(_scored(z, first_token), K),
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    import torch

    from mia_core.models import load_causal_lm

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    d = tmp_path_factory.mktemp("faithful")
    tf, rf = _tiny_llama(d / "target", 0), _tiny_llama(d / "reference", 1)
    mem, non = _texts()
    yield {"mem": mem, "non": non, "texts": mem + non, "target": load_causal_lm(tf), "reference": load_causal_lm(rf),
           "t": ByHand(tf), "r": ByHand(rf), "folders": (tf, rf), "dir": d}
    torch.set_num_threads(threads)


def _run(world, **cfg):
    from mia_core.data import texts_from_strings
    from mia_core.pipeline import RunConfig, run_attacks

    # the formulas by hand put <|endoftext|> in front (ByHand): the explicit "always" prefix; the default
    # ("auto": nothing in front for this tokenizer) is checked per text against MIMIR in test_scored_tokens.py
    cfg = {"attacks": BASELINES, "n_bootstrap": 0, "blind": False, "use_cache": True, "stats": ALWAYS, **cfg}
    res = run_attacks(texts_from_strings(world["mem"], world["non"]), world["target"], reference=world["reference"],
                      config=RunConfig(**cfg))
    return res.scores.set_index("text_hash")


# --------------------------------------------------------------------------------------
# causal-LM baselines
# --------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_texts_tell_floor_from_ceil(world):
    """The test texts are of lengths where keeping floor(k·n) or ceil(k·n) tokens differs."""
    n = [len(world["t"].tok(x, add_special_tokens=False)["input_ids"]) - 1 for x in world["texts"]]
    assert sum(math.floor(K * m) != math.ceil(K * m) for m in n) >= 6, n
    assert min(n) * K < 1  # the 5-token text keeps one token (floor would keep none)


@pytest.mark.parametrize("first_token", [False, True], ids=["tokens_2_to_n", "score_first_token"])
def test_baselines_equal_the_formulas_by_hand(world, first_token):
    got = _run(world, score_first_token=first_token)
    for text in world["texts"]:
        want = expected_scores(world["t"], world["r"], text, first_token=first_token)
        row = got.loc[text_hash(text)]
        for name, v in want.items():
            assert row[name] == pytest.approx(v, rel=RTOL, abs=1e-7), (name, first_token, text[:30])


def test_the_first_token_rule_changes_the_scores(world):
    """Both rules come from one cached pass and differ (the first token is scored or not)."""
    a, b = _run(world), _run(world, score_first_token=True)
    for name in BASELINES:
        assert not np.allclose(a[name], b[name]), name
    # LOSS with the first token = the whole-string mean NLL
    h = world["t"].tokens(world["texts"][0])
    assert b.loc[text_hash(world["texts"][0]), "loss"] == pytest.approx(np.mean(h["lp"]), rel=RTOL)
    assert a.loc[text_hash(world["texts"][0]), "loss"] == pytest.approx(np.mean(h["lp"][1:]), rel=RTOL)


def test_min_k_keeps_floor_of_k_n(world):
    got = _run(world)
    for text in world["texts"]:
        lp = world["t"].tokens(text)["lp"][1:]
        n = len(lp)
        floor_v = float(np.mean(np.sort(lp)[:max(1, math.floor(K * n))]))
        ceil_v = float(np.mean(np.sort(lp)[:max(1, math.ceil(K * n))]))
        assert got.loc[text_hash(text), "min_k"] == pytest.approx(floor_v, rel=RTOL)
        if not math.isclose(floor_v, ceil_v, rel_tol=1e-3):
            assert got.loc[text_hash(text), "min_k"] != pytest.approx(ceil_v, rel=1e-3)


def test_reference_ratio_form(world):
    got = _run(world, attacks=["ref"], params={"ref": {"form": "ratio"}})
    diff = _run(world, attacks=["ref"])
    for text in world["texts"]:
        want = expected_scores(world["t"], world["r"], text, first_token=False, form="ratio")["ref"]
        assert got.loc[text_hash(text), "ref"] == pytest.approx(want, rel=RTOL)
        assert want != pytest.approx(diff.loc[text_hash(text), "ref"], rel=1e-3)


def test_reference_across_tokenizers_keeps_whole_string_nll_per_byte(world):
    """Different tokenizers: NLL of the whole string (every token, the first included) per byte,
    whatever the first-token rule says."""
    t, r = world["t"], world["r"]
    text = world["texts"][3]
    a, b = t.tokens(text), r.tokens(text)
    ts, rs = world["target"], world["reference"]
    from mia_core.stats import compute_stats

    inputs = AttackInputs([text], target=compute_stats(ts, [text], ALWAYS, use_cache=False),
                          reference=compute_stats(rs, [text], ALWAYS, use_cache=False), same_tokenizer=False)
    want = -(-a["lp"].sum() / a["n_bytes"] - (-b["lp"].sum() / b["n_bytes"]))
    for ft in (False, True):
        inputs.first_token = ft
        assert REGISTRY["ref"].score(inputs)[0] == pytest.approx(want, rel=RTOL)
        ratio = REGISTRY["ref"].score(inputs, form="ratio")[0]
        assert ratio == pytest.approx(-a["lp"].sum() / b["lp"].sum(), rel=RTOL)


@pytest.mark.slow
def test_reference_form_is_checked(world, tmp_path):
    from mia_core.pipeline import plan_attacks

    with pytest.raises(SettingsError, match="form"):
        REGISTRY["ref"].score(AttackInputs(["x"], target=[], reference=[]), form="quotient")
    with pytest.raises(SettingsError, match="form"):  # before anything loads
        plan_attacks(["ref"], have={"reference"}, params={"ref": {"form": "quotient"}})
    m, n = tmp_path / "m.txt", tmp_path / "n.txt"
    m.write_text("\n".join(world["mem"]) + "\n", encoding="utf-8")
    n.write_text("\n".join(world["non"]) + "\n", encoding="utf-8")
    tf, rf = world["folders"]
    p = mia("run", "--members", m, "--nonmembers", n, "--mode", "lines", "--model", tf, "--reference", rf,
                "--attacks", "ref", "--param", "ref.form=quotient", "--out", tmp_path / "out")
    assert_one_error(p.returncode, p.stderr, "form")
    assert not (tmp_path / "out").exists()


def test_neighbourhood_losses_follow_the_rule(world):
    """The text's loss and its neighbours' losses both leave out the first token (or both keep it)."""
    from mia_core.data import texts_from_strings
    from mia_core.pipeline import RunConfig, run_attacks

    mem, non = world["mem"][3:4], world["non"][2:3]
    got = {}
    for ft in (False, True):
        res = run_attacks(texts_from_strings(mem, non), world["target"],
                          config=RunConfig(attacks=["neighbourhood"], params={"neighbourhood": {"n": 2}},
                                           n_bootstrap=0, blind=False, score_first_token=ft, stats=ALWAYS))
        got[ft] = res
        for ex in res.extra["neighbourhood"]["examples"]:
            assert ex["neighbours"], "no neighbour generated"
            nb = [-np.mean(_scored(world["t"].tokens(x["text"])["lp"], ft)) for x in ex["neighbours"]]
            np.testing.assert_allclose([x["loss"] for x in ex["neighbours"]], nb, rtol=RTOL)
            own = -np.mean(_scored(world["t"].tokens(ex["text"])["lp"], ft))
            score = res.scores.set_index("text_hash").loc[text_hash(ex["text"]), "neighbourhood"]
            assert score == pytest.approx(-(own - np.mean(nb)), rel=RTOL, abs=1e-7)
    assert not np.allclose(got[False].scores["neighbourhood"], got[True].scores["neighbourhood"])


def test_inspect_scores_follow_the_calibration_run(world):
    """The Inspect page's per-attack scores use the run's first-token rule (old runs: every token)."""
    from types import SimpleNamespace

    from dashboard.inspect import attack_scores, run_first_token
    from mia_core.stats import compute_stats

    text = world["texts"][2]
    res = {"text": text, "stats": compute_stats(world["target"], [text], ALWAYS)[0]}
    assert run_first_token(None) is False
    assert run_first_token(SimpleNamespace(config={"score_first_token": False})) is False
    assert run_first_token(SimpleNamespace(config={"params": {}})) is True  # saved before the rule
    for ft in (False, True):
        run = SimpleNamespace(config={"score_first_token": ft, "params": {}})
        scores, _ = attack_scores(res, run)
        want = expected_scores(world["t"], world["r"], text, first_token=ft)
        for name in ("loss", "zlib", "min_k", "min_k_pp"):
            assert scores[name][1] == pytest.approx(want[name], rel=RTOL), (name, ft)


# --------------------------------------------------------------------------------------
# masked-LM loss baseline (Mireshghallah et al. 2022 §3.4)
# --------------------------------------------------------------------------------------
def test_mlm_loss_baseline_is_the_mean_loss_per_masked_token(tmp_path):
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from golden_outputs import _tiny_berts
    from mia_core.mlm import run_mlm_audit

    paras = paragraphs()
    mem, non, pop = paras[:4], paras[4:8], paras[8:14]
    tf, rf = _tiny_berts(mem + non + pop, tmp_path / "berts")
    res = run_mlm_audit(mem, non, pop, tf, rf, k=3, seed=0, n_bootstrap=0, cache=False)
    plan = res.plan
    energy = {}
    for name, folder in (("target", tf), ("reference", rf)):
        model = AutoModelForMaskedLM.from_pretrained(folder).eval()
        mask_id = AutoTokenizer.from_pretrained(folder).mask_token_id
        e = []
        for i in range(len(mem) + len(non)):
            sums = []
            for pos in plan.positions(i):  # the K patterns both models scored (mia_core.mlm.masking)
                ids = torch.tensor(plan.ids[i])
                x = ids.clone()
                x[pos] = mask_id
                with torch.no_grad():
                    logp = torch.log_softmax(model(x[None]).logits[0].double(), -1)
                sums.append(float(logp[torch.tensor(pos), ids[pos]].sum()))
            e.append(-np.mean(sums))
        energy[name] = np.array(e)
    n_masked = np.array([plan.masks[i].shape[1] for i in range(len(mem) + len(non))])
    assert (n_masked == [math.ceil(round(0.15 * t, 9)) for t in plan.n_tokens[: len(n_masked)]]).all()
    assert len(set(n_masked)) > 1  # texts of different lengths: the per-token average is not a rescaled energy
    np.testing.assert_allclose(res.scores["n_masked"], n_masked)
    np.testing.assert_allclose(res.scores["loss"], -energy["target"] / n_masked, rtol=1e-5)
    # the likelihood ratio keeps the energies (sums over the masked tokens) as the paper defines them
    np.testing.assert_allclose(res.scores["likelihood_ratio"], -(energy["target"] - energy["reference"]), rtol=1e-5,
                               atol=1e-5)  # a difference of two energies of ~100 nats computed in float32
