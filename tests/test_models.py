"""mia_core.models.hub: the offline flag, identities, spec locations, errors and the load-once registry."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from mia_core.errors import ModelError
from mia_core.models import LoadOnce, hub_offline, identity, load_error, locate

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("value, offline", [("1", True), ("true", True), ("YES", True), ("On", True),
                                            ("0", False), ("", False), ("false", False), (None, False)])
def test_offline_flag_parsed_like_huggingface_hub(monkeypatch, value, offline):
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    if value is None:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    else:
        monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert hub_offline() is offline


def test_transformers_offline_counts_too(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    assert hub_offline()


def test_hub_identity_includes_the_revision(tmp_path):
    model = SimpleNamespace(config=SimpleNamespace(_commit_hash="abc123"))
    assert identity("hub", "org/name", model) == "hub:org/name@abc123"
    assert identity("hub", "org/name", SimpleNamespace(config=SimpleNamespace())) == "hub:org/name@unknown"
    (tmp_path / "config.json").write_text("{}")
    local = identity("local", str(tmp_path))
    assert local.startswith("local:") and local == identity("local", str(tmp_path))
    (tmp_path / "config.json").write_text('{"changed": 1}')
    assert identity("local", str(tmp_path)) != local


def test_locate_paths_and_hub_ids(tmp_path):
    assert locate(str(tmp_path)).kind == "folder"
    assert locate("org/name").kind == "hub"
    with pytest.raises(ModelError, match="no such folder"):
        locate(str(tmp_path / "missing"), missing="no such folder")


def test_load_errors_are_one_line():
    assert "not found locally" in str(load_error(OSError("gone\nmore"), "org/x", hub=True))
    assert "needs custom code" in str(load_error(ValueError("set trust_remote_code=True"), "x"))
    assert "out of memory" in str(load_error(RuntimeError("CUDA out of memory"), "x"))
    assert str(load_error(RuntimeError("bad\ndetail"), "x", what="masked LM")) == "could not load masked LM x: bad"


def test_load_once_registry():
    reg, calls = LoadOnce(), []
    load = lambda: calls.append(1) or len(calls)  # noqa: E731
    assert reg.get_or_load("k", load) == 1 and reg.get_or_load("k", load) == 1
    assert reg.get_or_load("k", load, reuse=False) == 2
    reg.clear()
    assert reg.get_or_load("k", load) == 3


def test_device_map_auto_places_the_model_with_accelerate_and_changes_no_number(tmp_path):
    """``--device auto`` on a GPU machine loads with accelerate's ``device_map="auto"``; asked for
    explicitly it runs on the CPU too, and scores exactly as the plain load."""
    import numpy as np
    from helpers import save_tiny_llama

    from mia_core.errors import SettingsError
    from mia_core.models import load_causal_lm
    from mia_core.stats import compute_stats

    path = save_tiny_llama(tmp_path / "tiny")
    plain = load_causal_lm(path, device="cpu")
    placed = load_causal_lm(path, device="cpu", device_map="auto")
    assert placed is not plain and placed.device == "cpu" and placed.info["device_map"] == ["cpu"]
    assert placed.identity == plain.identity  # the same cache entries
    texts = ["A text placed by accelerate.", "Another, a little longer, text placed by accelerate."]
    for a, b in zip(compute_stats(plain, texts, use_cache=False), compute_stats(placed, texts, use_cache=False)):
        assert np.array_equal(a.logprob, b.logprob, equal_nan=True)
    with pytest.raises(SettingsError, match="device_map"):
        load_causal_lm(path, device="cpu", device_map="balanced")


def test_gguf_conversion_reports_its_steps_without_the_libraries_bars(tmp_path, capfd):
    """The one-off conversion of the embedded GGUF reports its steps through the caller's progress
    only: transformers' GGUF reader's own tqdm bar ("Converting and de-quantizing GGUF tensors",
    outside transformers' progress-bar switch) stays off the terminal, and is back on afterwards."""
    import transformers.modeling_gguf_pytorch_utils as reader

    from mia_core.models.causal import embedded_gguf_path
    from mia_core.models.gguf import _convert_gguf

    before = reader.tqdm
    steps = []
    _convert_gguf(embedded_gguf_path(), tmp_path, lambda m, f: steps.append(m))
    err = capfd.readouterr().err
    assert "de-quantizing" not in err and "it/s" not in err, err[-500:]
    assert any("de-quantising its weights" in s for s in steps) and (tmp_path / "model.safetensors").exists()
    assert reader.tqdm is before


def test_the_bitsandbytes_hint_to_fetch_a_hub_kernel_is_not_printed_but_its_other_messages_are():
    """bitsandbytes on an AVX512-BF16 CPU logs at import "Failed to load CPU gemm_4bit_forward from
    kernels-community ... pip install kernels" (peft imports it for every LoRA model): dropped. A fresh
    process that imports peft after mia_core prints nothing; the logger's other warnings still pass."""
    import logging
    import subprocess
    import sys

    import mia_core.models  # noqa: F401 - installs the filter

    lg = logging.getLogger("bitsandbytes.backends.cpu.ops")
    rec = lambda msg: lg.makeRecord(lg.name, logging.WARNING, __file__, 1, msg, (), None)  # noqa: E731
    assert not lg.filter(rec("Failed to load CPU gemm_4bit_forward from kernels-community: %s. Please ..."))
    assert lg.filter(rec("some other bitsandbytes warning"))
    out = subprocess.run([sys.executable, "-c", "import mia_core.models, peft"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "gemm_4bit_forward" not in out.stderr, out.stderr
