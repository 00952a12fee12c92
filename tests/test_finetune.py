"""Controlled targets (mia_core.targets, ``make-target``): a model fine-tuned on known members
must show the membership (LOSS attack AUC well above chance), load back as a target folder
with its base recorded, and be bit-for-bit reproducible under a seed.

To stay fast on a CPU the base is a tiny random 2-layer Llama (hidden 64) with a small
byte-level BPE vocabulary (1,000 tokens) trained here on the test paragraphs, saved as a
normal Hugging Face folder; members and non-members are real Gutenberg paragraphs.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from mia_core.attacks import REGISTRY, AttackInputs
from mia_core.cli import main as cli_main
from mia_core.errors import DataError, SettingsError
from mia_core.targets import TRAINING_LOG, make_target, texts_sha256
from mia_core.metrics import evaluate
from mia_core.models import TARGET_MARKER, load_causal_lm
from mia_core.stats import compute_stats

DATA = Path(__file__).parent / "data"
N = 24  # members and non-members each


@pytest.fixture(scope="module", autouse=True)
def _offline(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("MIA_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def split():
    rows = [json.loads(line) for line in (DATA / "paragraphs.jsonl").read_text(encoding="utf-8").splitlines()]
    short = [r["text"] for r in rows if len(r["text"].split()) <= 60]
    idx = np.random.default_rng(0).permutation(len(short))
    return [short[i] for i in idx[:N]], [short[i] for i in idx[N : 2 * N]], short


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory, split):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(split[2], trainers.BpeTrainer(
        vocab_size=1000, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                  pad_token="<|endoftext|>")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      initializer_range=0.2, tie_word_embeddings=True, bos_token_id=tok.bos_token_id,
                      eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    out = tmp_path_factory.mktemp("tiny_base")
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def _loss_auc(folder, members, nonmembers):
    lm = load_causal_lm(str(folder), reuse=False)
    texts = members + nonmembers
    stats = compute_stats(lm, texts, use_cache=False)
    scores = REGISTRY["loss"].score(AttackInputs(texts, target=stats))
    return lm, evaluate([1] * len(members) + [0] * len(nonmembers), scores, n_bootstrap=0)["auc"]


@pytest.fixture(scope="module")
def full_target(tiny_base, split, tmp_path_factory):
    out = tmp_path_factory.mktemp("targets") / "full"
    log = make_target(split[0], base=str(tiny_base), out_dir=out, method="full", epochs=2, lr=3e-3, seed=0,
                      heldout_texts=split[1])
    return out, log


@pytest.fixture(scope="module")
def lora_target(tiny_base, split, tmp_path_factory):
    out = tmp_path_factory.mktemp("targets") / "lora"
    fractions = []
    log = make_target(split[0], base=str(tiny_base), out_dir=out, method="lora", epochs=2, lr=1e-2, seed=0,
                      heldout_texts=split[1], progress=lambda m, f: fractions.append(f))
    return out, log, fractions


def test_full_fine_tune_shows_membership(full_target, split, tiny_base):
    out, log = full_target
    assert {"config.json", "model.safetensors", "tokenizer.json", TARGET_MARKER, TRAINING_LOG} <= {
        p.name for p in out.iterdir()}
    meta = json.loads((out / TARGET_MARKER).read_text())
    assert meta["method"] == "full" and meta["base"] == str(Path(tiny_base).resolve())
    assert meta["members_sha256"] == texts_sha256(split[0])
    assert [h["epoch"] for h in log["history"]] == [1, 2]
    assert log["history"][1]["train_loss"] < log["history"][0]["train_loss"]
    assert log["final"]["train_loss"] < log["final"]["heldout_loss"]
    lm, auc = _loss_auc(out, split[0], split[1])
    assert lm.base_spec == meta["base"] and lm.info["method"] == "full"
    assert auc >= 0.75, auc


def test_lora_fine_tune_shows_membership(lora_target, split, tiny_base):
    out, log, fractions = lora_target
    names = {p.name for p in out.iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors", TARGET_MARKER, TRAINING_LOG} <= names
    assert "model.safetensors" not in names  # only the adapter is stored
    cfg = json.loads((out / "adapter_config.json").read_text())
    assert cfg["base_model_name_or_path"] == str(Path(tiny_base).resolve())
    assert set(cfg["target_modules"]) == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    saved = json.loads((out / TRAINING_LOG).read_text())
    assert saved["lora"]["r"] == 16 and saved["seed"] == 0 and len(saved["history"]) == 2
    assert all(h["heldout_loss"] is not None for h in saved["history"])
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    lm, auc = _loss_auc(out, split[0], split[1])
    assert lm.base_spec == str(Path(tiny_base).resolve()) and lm.info["method"] == "lora"
    assert auc >= 0.75, auc
    # the merged target differs from its base: members got likelier
    base = load_causal_lm(str(tiny_base), reuse=False)
    b = np.mean([s.loss for s in compute_stats(base, split[0], use_cache=False)])
    t = np.mean([s.loss for s in compute_stats(lm, split[0], use_cache=False)])
    assert t < b - 0.05, (t, b)


def test_same_seed_same_weights_cli_and_api(tiny_base, split, tmp_path):
    members = split[0][:8]
    (tmp_path / "m.txt").write_text("\n".join(members) + "\n", encoding="utf-8")
    a = make_target(members, base=str(tiny_base), out_dir=tmp_path / "a", method="lora", epochs=1, lr=1e-2, seed=3)
    rc = cli_main(["make-target", "--members", str(tmp_path / "m.txt"), "--base", str(tiny_base), "--epochs", "1",
                   "--lr", "0.01", "--seed", "3", "--out", str(tmp_path / "b")])
    assert rc == 0
    c = make_target(members, base=str(tiny_base), out_dir=tmp_path / "c", method="lora", epochs=1, lr=1e-2, seed=4)
    wa, wb, wc = (load_file(str(tmp_path / d / "adapter_model.safetensors")) for d in "abc")
    assert wa.keys() == wb.keys() and len(wa) > 0
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert not all(torch.equal(wa[k], wc[k]) for k in wa)  # another seed, another adapter
    b_log = json.loads((tmp_path / "b" / TRAINING_LOG).read_text())
    assert [h["train_loss"] for h in b_log["history"]] == [h["train_loss"] for h in a["history"]]
    assert b_log["command"].startswith("python -m mia_core make-target ")
    assert b_log["data_files"]["members"]["sha256"] and b_log["final"]["heldout_loss"] is None


def test_bad_inputs_are_one_line_errors(tiny_base, split, tmp_path, capsys):
    with pytest.raises(DataError, match="also in the member set"):
        make_target(split[0][:4], base=str(tiny_base), out_dir=tmp_path / "x", heldout_texts=split[0][3:5])
    with pytest.raises(SettingsError, match="method"):
        make_target(split[0][:4], base=str(tiny_base), out_dir=tmp_path / "x", method="qlora")
    with pytest.raises(DataError, match="no member"):
        make_target(["", "  "], base=str(tiny_base), out_dir=tmp_path / "x")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    (tmp_path / "m.txt").write_text("one text\n")
    rc = cli_main(["make-target", "--members", str(tmp_path / "m.txt"), "--base", str(tiny_base),
                   "--out", str(tmp_path / "busy")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err[-1].startswith("error:") and "not empty" in err[-1]
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
    rc = cli_main(["make-target", "--members", str(tmp_path / "missing.txt"), "--out", str(tmp_path / "y")])
    assert rc == 2 and "not found" in capsys.readouterr().err
