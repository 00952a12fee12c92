"""Texts are scored as the model saw them in training (issue 28): the default prefix follows the tokenizer.

Per text against MIMIR's recipe (``tokenizer(text)`` with the tokenizer's own special tokens, the model's
mean cross-entropy over every predicted token), on a tiny model of each tokenizer family:

* GPT-2 style (SmolLM2's tokenizer adds nothing): nothing is prepended, tokens 2..n are scored;
* Llama style (the tokenizer adds a BOS): the BOS is prepended, tokens 1..n are scored.

And: ``make-target`` trains with what it scores with (a target trained with no prefix is scored with
none; one of an earlier version, trained with a BOS/EOS prefix, is still scored with it), a reference
scores the same tokens as its target, and ``--prefix always`` keeps the whole-string NLL.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import empty_cache, save_tiny_llama

from mia_core.cli import main

TEXTS = ["The old lighthouse keeper counted ships every night before he slept.",
         "Rain fell on the quiet harbour, and the fishing boats stayed in.",
         "A green parrot argued with the baker about the price of bread.",
         "The violin lessons started late because the teacher missed the train.",
         "Snow covered the mountain pass for most of the long winter.",
         "She planted tomatoes in the garden and watered them at dawn."]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """A tiny random Llama with SmolLM2's tokenizer (GPT-2 style), and the same with a tokenizer that
    puts a BOS token in front of every text (Llama style)."""
    from tokenizers.processors import TemplateProcessing
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("families")
    gpt2 = root / "gpt2-style"
    save_tiny_llama(gpt2)
    llama = root / "llama-style"
    save_tiny_llama(llama)
    tok = AutoTokenizer.from_pretrained(str(llama))
    bos = "<|im_start|>"
    tok.backend_tokenizer.post_processor = TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.convert_tokens_to_ids(bos))])
    tok.bos_token = bos
    tok.save_pretrained(str(llama))
    assert AutoTokenizer.from_pretrained(str(llama))("Hi there")["input_ids"][0] == tok.convert_tokens_to_ids(bos)
    return {"gpt2": gpt2, "llama": llama}


def _mimir_losses(folder: Path, texts: list[str]) -> np.ndarray:
    """MIMIR's ``get_probabilities``/LOSS: the tokenizer's own special tokens, every predicted token."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    out = []
    with torch.no_grad():
        for t in texts:
            enc = tok(t, return_tensors="pt")
            out.append(float(model(**enc, labels=enc["input_ids"]).loss))
    return np.array(out)


def _run(tmp_path, model, *extra) -> tuple[pd.DataFrame, dict]:
    (tmp_path / "m.txt").write_text("\n".join(TEXTS[:3]) + "\n")
    (tmp_path / "n.txt").write_text("\n".join(TEXTS[3:]) + "\n")
    out = tmp_path / f"out-{len(list(tmp_path.glob('out-*')))}"
    rc = main(["run", "--members", str(tmp_path / "m.txt"), "--nonmembers", str(tmp_path / "n.txt"), "--model",
               str(model), "--attacks", "loss", "--bootstrap", "10", "--quiet", "--out", str(out), *extra])
    assert rc == 0
    return pd.read_csv(out / "scores.csv"), json.loads((out / "run.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_default_loss_equals_mimirs_per_text(family, models, tmp_path, monkeypatch):
    monkeypatch.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path / "cache")))
    scores, run = _run(tmp_path, models[family])
    mimir = _mimir_losses(models[family], TEXTS)
    np.testing.assert_allclose(-scores["loss"].to_numpy(), mimir, atol=2e-5)
    st = run["config"]["scored_tokens"]
    assert st["prefix"] == "auto"
    if family == "llama":  # the tokenizer's BOS in front, every text token scored
        assert st["prefix_token_id"] is not None and st["first_token"] is True
    else:  # nothing in front, tokens 2..n
        assert st["prefix_token_id"] is None and st["first_token"] is False


def test_always_prefix_is_the_earlier_default_and_differs_on_gpt2_style(models, tmp_path, monkeypatch):
    """``--prefix always``: a BOS/EOS token the GPT-2-style model never saw in front of a text; tokens 2..n.
    Not MIMIR's numbers (that is the cost issue 28 measured)."""
    monkeypatch.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path / "cache")))
    auto, _ = _run(tmp_path, models["gpt2"])
    always, run = _run(tmp_path, models["gpt2"], "--prefix", "always")
    assert run["config"]["scored_tokens"]["prefix_token_id"] == 0 and run["config"]["scored_tokens"]["first_token"] is False
    assert np.abs(auto["loss"].to_numpy() - always["loss"].to_numpy()).max() > 1e-4
    none, _ = _run(tmp_path, models["gpt2"], "--no-prefix")
    np.testing.assert_allclose(none["loss"].to_numpy(), auto["loss"].to_numpy(), atol=1e-6)


def test_a_target_is_scored_with_what_it_was_trained_with(models, tmp_path, monkeypatch):
    """A make-target folder says its training prefix; the scorer follows it (an earlier version's target,
    trained with <|endoftext|> in front, keeps being scored with it, its first token included)."""
    from mia_core.models import load_causal_lm
    from mia_core.stats import StatsSettings, resolve_prefix, scores_first_token

    from mia_core.paths import ASSETS

    demo = load_causal_lm(str(ASSETS / "demo" / "target"))
    assert resolve_prefix(demo, StatsSettings()) == 0 and scores_first_token(demo, StatsSettings())
    smol = load_causal_lm(None)
    assert resolve_prefix(smol, StatsSettings()) is None and not scores_first_token(smol, StatsSettings())
    assert resolve_prefix(smol, StatsSettings(prefix=True)) == 0  # earlier versions' True = "always"
    assert StatsSettings(prefix=False).prefix == "none"


@pytest.mark.slow
def test_make_target_trains_as_it_scores(tmp_path, monkeypatch):
    """make-target on a GPT-2-style base trains with no prefix and records it; its windows are the scorer's."""
    from mia_core.targets import make_target
    from mia_core.targets.recipe import windows as _windows

    monkeypatch.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path / "cache")))
    base = save_tiny_llama(tmp_path / "base")
    log = make_target(TEXTS[:3], base=base, out_dir=tmp_path / "target", epochs=1, batch_size=4, max_length=32)
    assert log["prefix_token_id"] is None
    assert json.loads((tmp_path / "target" / "mia_target.json").read_text())["prefix_token_id"] is None
    assert log["n_train_tokens"] == sum(len(w) - 1 for t in TEXTS[:3]
                                        for w in _windows(_ids(base, t), None, 32))
    _, run = _run(tmp_path, tmp_path / "target")
    assert run["config"]["scored_tokens"] == {"prefix": "auto", "prefix_token_id": None, "first_token": False}


def _ids(folder, text):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder))(text, add_special_tokens=False)["input_ids"]


def test_reference_scores_the_tokens_its_target_scores(tmp_path, monkeypatch):
    """The demo target (trained with <|endoftext|> in front) and its base as reference: the base, whose
    tokenizer adds nothing, is scored with the target's prefix, so both losses cover the same tokens."""
    from mia_core.data import Dataset
    from mia_core.models import load_causal_lm
    from mia_core.paths import ASSETS
    from mia_core.pipeline import RunConfig, run_attacks

    monkeypatch.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path / "cache")))
    target = load_causal_lm(str(ASSETS / "demo" / "target"))
    ref = load_causal_lm(None)
    ds = Dataset(texts=TEXTS, labels=[1, 1, 1, 0, 0, 0], ids=[str(i) for i in range(6)])
    res = run_attacks(ds, target, reference=ref, config=RunConfig(attacks=["loss", "ref"], n_bootstrap=10))
    from mia_core.stats import StatsSettings, compute_stats

    ref_stats = compute_stats(ref, TEXTS, StatsSettings(prefix=0), use_cache=False)
    ref_loss = np.array([s.loss for s in ref_stats])  # every text token, predicted from <|endoftext|>
    np.testing.assert_allclose(res.scores["ref"].to_numpy(), res.scores["loss"].to_numpy() + ref_loss, atol=2e-5)
