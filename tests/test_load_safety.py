"""A loaded model is the model its files hold, and a cache entry is what it claims to be (issue 30).

* One model load at a time in a process: two threads loading the embedded SmolLM2 together used
  to get two broken copies (embeddings re-initialised, output layer untied: 163M parameters, loss
  11 instead of 5.4); the dashboard's start-up preload and a page's load started together did the
  same. Both now see the weights of a load done alone.
* Missing weights, weights that differ from the files, and a shipped model scoring outside its
  known band refuse the load with one line.
* The model identity (the statistics cache's key) carries a fingerprint of the weights in memory.
* Cache entries are verified on read: another text's entry, arrays of the wrong length, a missing
  array, a folder in an entry's place: recomputed with a note, never trusted, never fatal.
"""
from __future__ import annotations

import copy
import json
import shutil
import struct
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers import empty_cache, save_tiny_llama
from mia_core.errors import ModelError
from mia_core.models import load_causal_lm
from mia_core.models.verify import (KNOWN_LOSS, check_against_checkpoint, check_known_loss, checkpoint_files,
                                    sentence_loss, weight_fingerprint)
from mia_core.paths import ASSETS

DEMO_TARGET = str(ASSETS / "demo" / "target")


def _together(*loads):
    """Run the callables in threads started at the same moment; their results (an exception re-raised)."""
    results: list = [None] * len(loads)
    start = threading.Barrier(len(loads))

    def go(i, f):
        start.wait()
        try:
            results[i] = f()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            results[i] = e

    threads = [threading.Thread(target=go, args=(i, f)) for i, f in enumerate(loads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


def _state(lm) -> dict:
    return {"fingerprint": lm.info["weight_fingerprint"], "identity": lm.identity, "n_params": lm.n_params,
            "loss": round(sentence_loss(lm), 5)}


@pytest.fixture(scope="module")
def alone():
    """The embedded model and the demo target, each loaded alone: what every concurrent load must equal."""
    return {spec: _state(load_causal_lm(spec, reuse=False)) for spec in ("smollm2", DEMO_TARGET)}


@pytest.mark.slow
def test_two_threads_loading_the_embedded_model_get_the_weights_of_a_load_done_alone(alone):
    a, b = _together(lambda: load_causal_lm("smollm2", reuse=False), lambda: load_causal_lm("smollm2", reuse=False))
    assert a.model is not b.model
    assert _state(a) == _state(b) == alone["smollm2"]
    assert alone["smollm2"]["n_params"] == 134_515_008  # 135M, tied output layer: not 163M


@pytest.mark.slow
def test_dashboard_preload_and_a_page_load_started_together_see_healthy_weights(alone):
    """The newcomer's race: the server's warm-up preloads the demo's target and reference into the page
    store while a page (Inspect) loads the embedded model into the same store."""
    from dashboard.loaders import default_models, load_model, preload_defaults

    store = {"lock": threading.Lock(), "locks": {}, "models": {}, "steps": {}}
    from collections import OrderedDict

    store["models"] = OrderedDict()
    target, reference = default_models()
    page = (reference[0], "fp32", "none", "auto", False)  # what Inspect asks for: the embedded model in fp32
    _, page_lm = _together(lambda: preload_defaults(store), lambda: load_model(*page, _into=store))
    assert _state(page_lm) == alone["smollm2"]
    loaded = {k[0]: v for k, v in store["models"].items()}
    assert _state(loaded[target[0]]) == alone[DEMO_TARGET]


def test_identity_carries_a_fingerprint_of_the_weights_in_memory(alone):
    lm = load_causal_lm("smollm2", reuse=False)
    assert lm.identity.endswith("|w:" + alone["smollm2"]["fingerprint"])
    broken = copy.deepcopy(lm.model)
    with torch.no_grad():
        broken.get_input_embeddings().weight.normal_(0, 0.02)
    assert weight_fingerprint(broken) != weight_fingerprint(lm.model)


def test_weights_that_differ_from_the_files_or_a_known_loss_out_of_band_are_refused():
    lm = load_causal_lm("smollm2")
    healthy_loss = check_known_loss(lm, "smollm2")
    assert abs(healthy_loss - KNOWN_LOSS["smollm2"]) < 0.1
    broken = copy.copy(lm)
    broken.model = copy.deepcopy(lm.model)
    with torch.no_grad():
        broken.model.get_input_embeddings().weight.normal_(0, 0.02)  # what the racing loads did (tied: lm_head too)
    with pytest.raises(ModelError, match="is broken: a known sentence scores loss"):
        check_known_loss(broken, "smollm2")
    from mia_core.models import converted_gguf_dir, embedded_gguf_path

    files = checkpoint_files(str(converted_gguf_dir(embedded_gguf_path())))
    assert files
    assert "read back" in check_against_checkpoint(lm.model, files, "smollm2")
    with pytest.raises(ModelError, match="hold other values than its files .*lm_head"):
        check_against_checkpoint(broken.model, files, "smollm2")


def _drop_tensor(st_file: Path, name: str) -> None:
    """Rewrite a .safetensors file without one tensor (a partial copy of a checkpoint)."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(st_file))
    del tensors[name]
    save_file(tensors, str(st_file), metadata={"format": "pt"})


@pytest.mark.slow
def test_a_checkpoint_missing_a_layer_its_config_declares_is_refused_in_one_line(tmp_path, monkeypatch):
    from helpers import assert_one_error, mia

    folder = tmp_path / "tiny"
    save_tiny_llama(folder)
    ok = load_causal_lm(str(folder), reuse=False)
    assert "read back against its checkpoint" in ok.info["weights"]
    _drop_tensor(folder / "model.safetensors", "model.layers.1.mlp.down_proj.weight")
    with pytest.raises(ModelError, match="missing from the checkpoint .*model.layers.1.mlp.down_proj.weight"):
        load_causal_lm(str(folder), reuse=False)
    (tmp_path / "m.txt").write_text("a member text is here\nanother member text\n")
    (tmp_path / "n.txt").write_text("a non-member text is here\nanother non-member\n")
    r = mia("run", "--model", folder, "--members", tmp_path / "m.txt", "--nonmembers", tmp_path / "n.txt",
                "--attacks", "loss", "--quiet", "--out", tmp_path / "out",
                env_extra={"MIA_CACHE_DIR": str(empty_cache(tmp_path / "cache"))})
    assert_one_error(r.returncode, r.stderr, "missing from the checkpoint")


# ----------------------------------------------------------------------------- the cache


@pytest.fixture()
def tiny(tmp_path, monkeypatch):
    monkeypatch.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path / "cache")))
    return load_causal_lm(save_tiny_llama(tmp_path / "tiny"), reuse=False)


TEXTS = ["The first text, about the river and its boats.", "A second text that is somewhat longer than the first one.",
         "Third: short."]


def _entries(lm) -> dict[str, Path]:
    from mia_core.cache import ArrayCache, text_hash
    from mia_core.stats import StatsSettings, cache_settings

    c = ArrayCache("stats", cache_settings(lm, StatsSettings()))
    return {t: c._path(text_hash(t)) for t in TEXTS}


def _losses(lm):
    from mia_core.cache import collect_notes
    from mia_core.stats import compute_stats

    with collect_notes() as notes:
        stats = compute_stats(lm, TEXTS)
    return [s.loss for s in stats], notes


def test_an_entry_copied_over_another_texts_is_not_used(tiny):
    clean, notes = _losses(tiny)
    assert notes == []
    e = _entries(tiny)
    shutil.copyfile(e[TEXTS[1]], e[TEXTS[0]])  # the second text's statistics under the first text's name
    again, notes = _losses(tiny)
    assert again == clean
    assert len(notes) == 1 and "belongs to another text" in notes[0]


@pytest.mark.parametrize("damage, why", [
    ("short", "has 3 values for"),
    ("missing", "lacks"),
    ("tokens", "tokens are not this text's"),
    ("folder", "not a file"),
    ("garbage", "unreadable"),
])
def test_a_damaged_entry_is_recomputed_with_a_note_never_fatal(tiny, damage, why):
    from mia_core.cache import ENTRY

    clean, _ = _losses(tiny)
    p = _entries(tiny)[TEXTS[1]]
    if damage == "folder":
        p.unlink()
        p.mkdir()
        (p / "someone's file").write_text("kept")
    elif damage == "garbage":
        p.write_bytes(b"not an npz at all")
    else:
        with np.load(p, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(str(arrays[ENTRY][()]))
        if damage == "short":
            arrays["logprob"] = arrays["logprob"][:3]
        elif damage == "missing":
            del arrays["entropy"]
        else:
            arrays["token_ids"] = arrays["token_ids"][::-1].copy()
        # the damage is made consistently with the entry's own record, so the owner's check must find it
        meta["shapes"] = {k: list(v.shape) for k, v in arrays.items() if k != ENTRY}
        arrays[ENTRY] = np.array(json.dumps(meta))
        with open(p, "wb") as f:
            np.savez(f, **arrays)
    for _ in range(2):  # and on the run after, too
        again, notes = _losses(tiny)
        assert again == clean
        assert any(why in n for n in notes), notes
        if damage != "folder":
            break
    if damage == "folder":
        assert (p / "someone's file").read_text() == "kept"
        assert any("not stored" in n for n in notes)


# ----------------------------------------------------------------------------- known truth


@pytest.mark.slow
def test_the_demo_run_with_a_broken_target_says_its_figures_are_wrong(monkeypatch, tmp_path):
    """The demo is the one audit whose answer is known. Its target damaged the way the racing loads
    damaged it (embeddings re-initialised), the run must not look like a result."""
    from mia_core.targets.demo import DEMO_EXPECTED_AUC, demo_dataset, is_demo_run, known_truth
    from mia_core.pipeline import RunConfig, run_attacks

    monkeypatch.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path / "cache")))
    ds = demo_dataset()
    target = load_causal_lm(DEMO_TARGET)
    assert is_demo_run(ds, target)
    sub = ds.subset(list(range(6)) + list(range(len(ds) - 6, len(ds))))
    assert not is_demo_run(sub, target)  # a part of the demo is not the demo: no claim is made
    broken = copy.copy(target)
    broken.model = copy.deepcopy(target.model)
    with torch.no_grad():
        broken.model.get_input_embeddings().weight.normal_(0, 0.02)
    result = run_attacks(ds, broken, config=RunConfig(attacks=["loss"], n_bootstrap=0, use_cache=False, blind=False))
    kt = result.extra["known_truth"]
    assert not kt["ok"] and abs(result.metrics["loss"]["auc"] - 0.5) < 0.15
    assert result.summary_text().startswith("!!! THESE FIGURES ARE WRONG")
    assert "KNOWN TRUTH [FAILED]" in result.summary_text()
    healthy = {a: {"auc": v} for a, v in DEMO_EXPECTED_AUC.items()}
    assert known_truth(healthy)["ok"] and "ref" not in known_truth(healthy)["attacks"]  # no reference given


def test_a_config_with_fewer_layers_than_its_checkpoint_is_refused(tmp_path):
    """The checkpoint holds layer 1, the config declares one layer: the model would be another one."""
    folder = tmp_path / "tiny"
    save_tiny_llama(folder)
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "num_hidden_layers": 1}))
    with pytest.raises(ModelError, match="have no place in the model .*model.layers.1."):
        load_causal_lm(str(folder), reuse=False)


def test_a_bert_checkpoint_with_a_pooler_loads_as_a_masked_lm_and_says_what_it_did_not_use(tmp_path):
    """bert-base-uncased, the masked-LM audit's model, holds a pooler and a next-sentence head that
    BertForMaskedLM has no place for: not a reason to refuse it (they do not change the model)."""
    from transformers import AutoTokenizer, BertConfig, BertForPreTraining

    from mia_core.models import embedded_embedder_path, load_masked_lm

    tok = AutoTokenizer.from_pretrained(str(embedded_embedder_path()))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=64)
    BertForPreTraining(cfg).save_pretrained(tmp_path / "bert")
    tok.save_pretrained(tmp_path / "bert")
    m = load_masked_lm(str(tmp_path / "bert"), reuse=False)
    assert "not used" in m.info["weights"] and "seq_relationship" in m.info["weights"]
    assert "read back against its checkpoint" in m.info["weights"]


@pytest.mark.slow
def test_a_config_json_that_is_not_an_object_is_one_line(tmp_path):
    from helpers import assert_one_error, mia

    folder = tmp_path / "tiny"
    save_tiny_llama(folder)
    (folder / "config.json").write_text("[1, 2]")
    (tmp_path / "m.txt").write_text("a member text is here\nanother member text\n")
    (tmp_path / "n.txt").write_text("a non-member text is here\nanother non-member\n")
    r = mia("run", "--model", folder, "--members", tmp_path / "m.txt", "--nonmembers", tmp_path / "n.txt",
                "--attacks", "loss", "--quiet", "--out", tmp_path / "out")
    assert_one_error(r.returncode, r.stderr, "config.json holds a JSON list")
