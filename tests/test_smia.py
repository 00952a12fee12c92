"""Neighbourhood attack and SMIA on a tiny causal LM the test trains itself.

A 2-layer Llama with the embedded SmolLM2 tokenizer memorises 24 short member texts from
``tests/data/paragraphs.jsonl``; 24 other texts are non-members. Neighbours come from the
default generator (the embedded independent proposer, ``masked-lm:embedded``) with n = 4,
embeddings from the embedded all-MiniLM-L6-v2. Membership is ground truth, so LOSS, the neighbourhood attack and SMIA
must all separate members from non-members on the held-out half.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers import assert_one_error
from mia_core.attacks import REGISTRY
from mia_core.attacks.smia import PAPER_CONFIGURATION, configuration, load_smia
from mia_core.data import Dataset
from mia_core.errors import SettingsError
from mia_core.models import converted_gguf_dir, embedded_gguf_path, load_causal_lm
from mia_core.neighbours import word_diff
from mia_core.pipeline import RunConfig, run_attacks

from mia_core.stats import StatsSettings as _StatsSettings

pytestmark = pytest.mark.slow

ALWAYS = _StatsSettings(prefix="always")  # the prefix the by-hand computations here put in front

DATA = Path(__file__).resolve().parent / "data"
N_NEIGHBOURS = 4
N_EACH = 24


def short_texts(n: int, offset: int, words: int = 28) -> list[str]:
    rows = [json.loads(line) for line in (DATA / "paragraphs.jsonl").read_text(encoding="utf-8").splitlines()]
    picked = rows[offset::7][:n]
    return [" ".join(r["text"].split()[:words]) for r in picked]


def train_tiny_target(members: list[str], out: Path, epochs: int = 30) -> Path:
    """2-layer Llama with the SmolLM2 tokenizer, trained until it fits the members."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(str(converted_gguf_dir(embedded_gguf_path())))
    torch.manual_seed(0)
    eos = tok.eos_token_id
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256,
                      tie_word_embeddings=True, bos_token_id=eos, eos_token_id=eos, pad_token_id=eos)
    model = LlamaForCausalLM(cfg)
    seqs = [[eos] + tok(t, add_special_tokens=False)["input_ids"] for t in members]
    L = max(map(len, seqs))
    ids = torch.full((len(seqs), L), eos)
    labels = torch.full((len(seqs), L), -100)
    mask = torch.zeros((len(seqs), L), dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, : len(s)], labels[r, : len(s)], mask[r, : len(s)] = torch.tensor(s), torch.tensor(s), 1
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    model.train()
    for _ in range(epochs):
        for b in range(0, len(seqs), 12):
            loss = model(input_ids=ids[b : b + 12], attention_mask=mask[b : b + 12], labels=labels[b : b + 12]).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def setup(neighbours_env):
    load_causal_lm()  # the embedded SmolLM2 (neighbour proposals)
    members, nonmembers = short_texts(N_EACH, 0), short_texts(N_EACH, 3)
    folder = train_tiny_target(members, neighbours_env / "tiny-target")
    target = load_causal_lm(str(folder))
    texts = members + nonmembers
    ds = Dataset(texts=texts, labels=[1] * N_EACH + [0] * N_EACH, ids=[f"t{i:02d}" for i in range(len(texts))])
    population = Dataset(texts=short_texts(4, 5), labels=[0] * 4, ids=[f"p{i}" for i in range(4)])
    return {"ds": ds, "target": target, "population": population, "dir": neighbours_env}


def config(**smia) -> RunConfig:
    nb = {"n": N_NEIGHBOURS}
    return RunConfig(stats=ALWAYS, attacks=("loss", "neighbourhood", "smia"),
                     params={"neighbourhood": nb, "smia": {**nb, "epochs": 40, **smia}},
                     split=0.5, split_seed=0, n_bootstrap=50, blind=False)


@pytest.fixture(scope="module")
def run(setup):
    save = setup["dir"] / "smia-model"
    res = run_attacks(setup["ds"], setup["target"], config=config(save=str(save)), population=setup["population"])
    return res, save


def test_loss_neighbourhood_and_smia_separate_members(run):
    res, _ = run
    aucs = {k: res.metrics[k]["auc"] for k in ("loss", "neighbourhood", "smia")}
    assert aucs["loss"] >= 0.8, aucs
    assert aucs["neighbourhood"] >= 0.8, aucs
    assert aucs["smia"] >= 0.8, aucs
    # every attack is reported on the same held-out half
    for k in aucs:
        assert res.metrics[k]["n_members"] == N_EACH // 2 and res.metrics[k]["n_nonmembers"] == N_EACH // 2
    assert (res.scores["split"] == "eval").sum() == N_EACH


def test_neighbour_report_and_smia_curves(run):
    res, _ = run
    nb = res.extra["neighbourhood"]
    assert len(nb["neighbours"]) == 2 * N_EACH
    assert all(len(x) == N_NEIGHBOURS for x in nb["neighbours"])
    ex = nb["examples"][0]
    for n in ex["neighbours"]:
        diff = word_diff(ex["text"], n["text"])
        assert len(diff) == 1 and diff[0][0] == "replace" and len(diff[0][1]) == len(diff[0][2]) == 1
    sm = res.extra["smia"]
    c = sm["curves"]
    assert len(c["train_loss"]) == len(c["val_loss"]) == 40
    assert c["val_loss"][c["best_epoch"] - 1] == min(c["val_loss"])
    assert sm["training"]["n_val_texts"] >= 2 and sm["training"]["n_train_texts"] >= 2
    pairs = sm["pairs"]
    assert len(pairs["cosine"]) == 2 * N_EACH * N_NEIGHBOURS
    assert all(0.3 < x < 1.0 for x in pairs["cosine"])  # one word changed: close but not identical
    # the population set was scored (neighbours made on demand) and gives thresholds
    for k in ("neighbourhood", "smia"):
        assert "error" not in res.population["attacks"][k], res.population["attacks"][k]


def test_smia_model_round_trips_with_identical_scores(run, setup):
    res, save = run
    assert (save / "smia.safetensors").exists() and (save / "smia.json").exists()
    meta = json.loads((save / "smia.json").read_text())
    assert meta["trained_with"]["target"] == setup["target"].identity
    assert meta["trained_with"]["neighbours"]["n"] == N_NEIGHBOURS
    model = load_smia(save)
    assert model.dim == 384
    again = run_attacks(setup["ds"], setup["target"], config=config(load=str(save)))
    np.testing.assert_allclose(again.scores["smia"].to_numpy(), res.scores["smia"].to_numpy(), rtol=0, atol=1e-6)
    assert again.extra["smia"]["loaded_from"] == str(save)


def test_smia_refuses_a_model_trained_with_other_settings(run, setup):
    _, save = run
    cfg = config(load=str(save))
    cfg.params["smia"]["seed"] = 1  # other neighbours
    with pytest.raises(SettingsError, match="trained with other settings"):
        run_attacks(setup["ds"], setup["target"], config=cfg)
    with pytest.raises(SettingsError, match="not a saved SMIA model"):
        load_smia(setup["dir"])


def fewer_for_one(setup, monkeypatch) -> tuple[Dataset, str]:
    """Six texts of the run, a short one and one without words; the first text's neighbours are cut to
    2 of 4 (the generator keeps its identity, so a saved SMIA model still applies)."""
    import mia_core.attacks.neighbourhood as nbh

    texts = list(setup["ds"].texts[:3]) + list(setup["ds"].texts[-3:]) + ["It was.", "!!! ???"]
    cut = texts[0]
    real = nbh.make_generator

    class FewerForOne:
        def __init__(self, gen):
            self.gen, self.identity = gen, gen.identity

        def generate(self, items, **kw):
            return [ns[:2] if t == cut else ns for t, ns in zip(items, self.gen.generate(items, **kw))]

    monkeypatch.setattr(nbh, "make_generator", lambda settings: FewerForOne(real(settings)))
    return Dataset(texts=texts, labels=[1, 1, 1, 0, 0, 0, 1, 0], ids=[f"s{i}" for i in range(len(texts))]), cut


def test_texts_that_allow_fewer_than_n_neighbours_get_nan_and_a_note(setup, monkeypatch):
    """Never a silently smaller n: a text with fewer neighbours than n is scored NaN, whether it
    has none (no replaceable word) or some (here one text's neighbours are cut to 2 of 4)."""
    ds, _ = fewer_for_one(setup, monkeypatch)
    res = run_attacks(ds, setup["target"], config=RunConfig(stats=ALWAYS, attacks=("loss", "neighbourhood"),
                                                            params={"neighbourhood": {"n": N_NEIGHBOURS}},
                                                            n_bootstrap=20, blind=False))
    nb = res.scores["neighbourhood"].to_numpy()
    assert np.isnan(nb[0]) and np.isfinite(nb[1:6]).all() and np.isnan(nb[6:]).all()
    assert np.isfinite(res.scores["loss"].to_numpy()[[0, 6]]).all()  # LOSS still scores them
    note = res.extra["neighbourhood"]["note"]
    assert f"3 text(s) allow fewer than n = {N_NEIGHBOURS} neighbours (2 with no replaceable word; as few as 0)" in note
    assert any(line.startswith("neighbourhood: 3 text(s) allow fewer") for line in res.report)
    # fewer=average (MIMIR's behaviour): the text with 2 of 4 neighbours is scored over those 2; none stays NaN
    res2 = run_attacks(ds, setup["target"], config=RunConfig(stats=ALWAYS, attacks=("loss", "neighbourhood"),
                                                             params={"neighbourhood": {"n": N_NEIGHBOURS,
                                                                                       "fewer": "average"}},
                                                             n_bootstrap=20, blind=False))
    nb2 = res2.scores["neighbourhood"].to_numpy()
    losses = res2.extra["neighbourhood"]["neighbour_loss_mean"]
    assert np.isfinite(nb2[0]) and nb2[0] == pytest.approx(res2.scores["loss"][0] + losses[0], rel=1e-6)  # -(L - mean)
    np.testing.assert_allclose(nb2[1:6], nb[1:6])
    assert "fewer=average" in res2.extra["neighbourhood"]["note"]


def test_smia_fewer_average_scores_over_the_neighbours_a_text_has(run, setup, monkeypatch):
    """SMIA takes the neighbourhood attack's fewer: NaN by default, or (fewer=average) the mean network
    output over the neighbours a text has; a text with none stays NaN. The saved network is applied, so
    nothing is trained here."""
    from mia_core.stats.embeddings import embed, load_embedder

    _, save = run
    ds, cut = fewer_for_one(setup, monkeypatch)

    def go(**smia):
        return run_attacks(ds, setup["target"], config=RunConfig(
            stats=ALWAYS, attacks=("loss", "neighbourhood", "smia"), params={
                "neighbourhood": {"n": N_NEIGHBOURS}, "smia": {"n": N_NEIGHBOURS, "load": str(save), **smia}},
            n_bootstrap=20, blind=False))

    res = go()
    sm = res.scores["smia"].to_numpy()
    assert np.isnan(sm[0]) and np.isfinite(sm[1:6]).all() and np.isnan(sm[6:]).all()
    rep = res.extra["smia"]
    assert rep["fewer"] == "nan" and rep["texts_with_fewer_neighbours"] == 3
    assert f"3 text(s) allow fewer than n = {N_NEIGHBOURS} neighbours (2 with no replaceable word" in rep["note"]
    assert "get no smia score (NaN)" in rep["note"]
    assert any(line.startswith("smia: SMIA-style (") and "3 text(s) allow fewer" in line for line in res.report)

    res2 = go(fewer="average")
    sm2 = res2.scores["smia"].to_numpy()
    np.testing.assert_allclose(sm2[1:6], sm[1:6])
    assert np.isfinite(sm2[0]) and np.isnan(sm2[6:]).all()
    assert "fewer=average" in res2.extra["smia"]["note"] and "2 with none get NaN" in res2.extra["smia"]["note"]
    # the value: the saved network's mean output over the text's 2 neighbours, computed here by hand
    ex = res2.extra["neighbourhood"]["examples"][0]
    assert ex["text"] == cut and len(ex["neighbours"]) == 2
    e = embed([cut] + [n["text"] for n in ex["neighbours"]], load_embedder("minilm"))
    loss_x = -float(res2.scores["loss"][0])
    probs = load_smia(save).probabilities(e[0][None, :] - e[1:],
                                          np.array([loss_x - n["loss"] for n in ex["neighbours"]]))
    assert sm2[0] == pytest.approx(float(probs.mean()), rel=1e-5)


def test_smia_configuration_label():
    """SMIA (paper configuration) only with T5 neighbours and preset paper; the default is SMIA-style."""
    default = configuration(REGISTRY["smia"].params["generator"], REGISTRY["smia"].params["preset"])
    assert default["configuration"] == "smia-style"
    assert default["configuration_label"].startswith("SMIA-style (masked-LM neighbours from masked-lm:embedded, "
                                                     "preset project;")
    paper = {"lr": 5e-6, "epochs": 20, "batch_size": 64, "batch_texts": 4, "standardise": False}
    assert configuration("t5:t5-base", "paper", paper) == {"configuration": "paper",
                                                           "configuration_label": PAPER_CONFIGURATION}
    assert configuration("t5:t5-base", "paper", {**paper, "lr": 1e-6})["configuration_label"] == \
        "SMIA (paper configuration) with lr 1e-06 instead of the paper's"
    for gen, preset in (("t5:t5-base", "project"), ("masked-lm:roberta-base", "paper"), ("offline", "paper")):
        assert configuration(gen, preset)["configuration"] == "smia-style"


def test_smia_configuration_in_the_run_report(run):
    res, _ = run
    sm = res.extra["smia"]
    assert sm["configuration"] == "smia-style" and sm["fewer"] == "nan"
    assert sm["configuration_label"].startswith("SMIA-style (masked-LM neighbours from masked-lm:embedded, preset "
                                                "project, epochs 40;")
    assert sm["note"].startswith(sm["configuration_label"])


def test_smia_fewer_bad_value_is_one_line_before_any_model(tmp_path, monkeypatch, capsys):
    import mia_core.models as models
    from mia_core.cli import main

    def boom(*a, **k):
        raise AssertionError("a model was loaded for a parameter that should be refused first")

    monkeypatch.setattr(models, "load_causal_lm", boom)
    (tmp_path / "m.txt").write_text("A member text.\nAnother member.\n")
    (tmp_path / "n.txt").write_text("A non-member text.\nAnother non-member.\n")
    rc = main(["run", "--members", str(tmp_path / "m.txt"), "--nonmembers", str(tmp_path / "n.txt"), "--quiet",
               "--attacks", "smia", "--split", "0.5", "--out", str(tmp_path / "out"),
               "--param", "smia.fewer=sometimes"])
    line = assert_one_error(rc, capsys.readouterr().err, "--param smia.fewer")
    assert "nan, average" in line and "sometimes" in line
    assert REGISTRY["smia"].params["fewer"] == REGISTRY["neighbourhood"].params["fewer"] == "nan"
    assert REGISTRY["smia"].domains["fewer"].choices == REGISTRY["neighbourhood"].domains["fewer"].choices
