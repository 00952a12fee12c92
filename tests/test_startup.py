"""Start-up (issue 41): a LoRA target's merged copy gives the same model bit for bit, is verified, and spares later
loads peft; the device is probed once. Timings live in ``benchmarks/startup.py``; these tests assert what the
faster path must keep."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from mia_core.models import load_causal_lm
from mia_core.models.causal import embedded_gguf_path
from mia_core.models.gguf import CONVERTED_MARKER, converted_gguf_dir
from mia_core.targets.demo import demo_paths

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
TARGET = str(demo_paths()["target"])


@pytest.fixture
def fresh_models(tmp_path, monkeypatch):
    """A cache folder of its own holding only the embedded model's converted copy (linked from the session's
    cache, converted there once): no merged copy of the demo target yet."""
    converted = converted_gguf_dir(embedded_gguf_path())
    root = tmp_path / "cache"
    (root / "models").mkdir(parents=True)
    os.symlink(converted, root / "models" / converted.name)
    monkeypatch.setenv("MIA_CACHE_DIR", str(root))
    return root


def _steps(spec=TARGET, **kw):
    """A load with its weights read now (``defer_weights=False``: these tests are about how they are read; a
    deferred load is tests/test_deferred_load.py's)."""
    seen = []
    kw.setdefault("defer_weights", False)
    lm = load_causal_lm(spec, reuse=False, progress=lambda m, f: seen.append(m), **kw)
    return lm, seen


def _merged(root: Path) -> list[Path]:
    return sorted(p for p in (root / "models").iterdir() if "-merged-" in p.name)


def _logits(lm) -> torch.Tensor:
    ids = lm.tokenizer("Members are texts the model was trained on; the rest are not. " * 4,
                       return_tensors="pt").input_ids
    with torch.inference_mode():
        return lm.model(ids).logits


def test_a_lora_target_is_merged_once_then_read_from_its_verified_copy_bit_for_bit(fresh_models):
    """One merge, then: the copy's model equals the merged one bit for bit (every tensor, identity, logits, the
    known sentence), in every dtype from one copy; a new process reads it without peft or bitsandbytes; ``mia
    cache clear --models`` knows it as its own; a copy changed afterwards is not used (merged again, said)."""
    first, steps1 = _steps()
    assert "applying the LoRA adapter" in steps1
    (copy,) = _merged(fresh_models)
    record = json.loads((copy / CONVERTED_MARKER).read_text())
    assert record["kind"] == "merged-lora" and record["source"] == str(Path(TARGET).resolve())

    second, steps2 = _steps()
    assert "applying the LoRA adapter" not in steps2 and any(s.startswith("loading the merged copy") for s in steps2)
    assert "the merged copy of smollm2 and the adapter" in second.info["weights"]
    assert "read back against its checkpoint" in second.info["weights"]  # the weight check stays
    a, b = first.model.state_dict(), second.model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert first.identity == second.identity and first.n_params == second.n_params
    assert torch.equal(_logits(first), _logits(second))
    assert second.info["known_sentence_loss"] == first.info["known_sentence_loss"]
    del second

    third, _ = _steps(dtype="bf16")  # cast from the same merged fp32 weights
    assert third.dtype == "bf16" and next(third.model.parameters()).dtype == torch.bfloat16
    assert len(_merged(fresh_models)) == 1
    del third

    code = ("import sys\nfrom mia_core.models import load_causal_lm\n"
            f"lm = load_causal_lm({TARGET!r}, defer_weights=False)\n"
            "print(sorted(m for m in ('peft', 'bitsandbytes') if m in sys.modules))\n"
            "print(lm.info['weights'])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "MIA_CACHE_DIR": str(fresh_models)})
    assert p.returncode == 0, p.stderr[-2000:]
    mods, weights = p.stdout.strip().splitlines()[-2:]
    assert mods == "[]" and "merged copy" in weights, (mods, weights)

    from mia_core.api.cache import plan_clear

    assert copy in plan_clear(include_models=True, root=fresh_models).trees  # removed whole, as a converted copy
    kept = plan_clear(include_models=False, root=fresh_models)
    assert copy not in kept.trees and kept.kept.get("models")  # kept unless --models

    from safetensors.torch import load_file, save_file

    f = copy / "model.safetensors"
    state = load_file(str(f))
    name = next(k for k in state if k.endswith("mlp.down_proj.weight"))
    t = state[name].clone()
    flat = t.view(-1)
    # one element the weights' fingerprint samples (the 33rd of its 64 evenly spaced ones), in a middle row: the
    # read-back against the files checks the first and last rows only, so this is the record's check at work
    at = 32 * (flat.numel() - 1) // 63
    assert 2 * t.shape[1] <= at < (t.shape[0] - 1) * t.shape[1]
    flat[at] += 1.0
    state[name] = t
    save_file(state, str(f), metadata={"format": "pt"})
    again, steps = _steps()
    assert "applying the LoRA adapter" in steps  # merged again from the base and the adapter
    assert "was not used" in again.info["weights"] and "mia cache clear --models" in again.info["weights"]
    assert again.identity == first.identity and torch.equal(_logits(again), _logits(first))


def test_the_device_is_probed_once_per_process():
    from mia_core.models.device import default_device, resolve_device

    default_device.cache_clear()
    for _ in range(3):
        resolve_device("auto")
    assert default_device.cache_info().misses == 1 and default_device.cache_info().hits == 2
