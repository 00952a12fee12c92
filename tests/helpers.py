"""Small helpers shared by several test modules (imported as ``helpers``; pytest.ini puts tests/ on the path)."""
from __future__ import annotations

import os
from pathlib import Path


def shared_neighbours_cache(tmp_path_factory) -> Path:
    """A statistics cache shared by the neighbour test modules of one session.

    The converted embedded model of the real cache is linked in, so it is not converted again.
    """
    return empty_cache(tmp_path_factory.getbasetemp() / "neighbours-cache")


def empty_cache(root: Path) -> Path:
    """A cache folder with nothing cached but the converted models of the real cache (linked in)."""
    from mia_core.paths import cache_root

    real_models = cache_root() / "models"
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "models").exists():
        real_models.mkdir(parents=True, exist_ok=True)
        os.symlink(real_models, root / "models")
    return root


def save_tiny_llama(out: Path) -> str:
    """A random 2-layer Llama (hidden 32) with the embedded SmolLM2 tokenizer, saved as a local HF folder."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from mia_core.models import converted_gguf_dir, embedded_gguf_path

    tok = AutoTokenizer.from_pretrained(str(converted_gguf_dir(embedded_gguf_path())), local_files_only=True)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256,
                      tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def run_mia(*args, cwd=None, env_extra=None, timeout=600, **kw):
    """``python -m mia_core ARGS`` in a subprocess (what a user runs): the CompletedProcess."""
    import subprocess
    import sys

    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "mia_core", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout, **kw)


def assert_one_error(rc: int, stderr: str, needle: str = "") -> str:
    """Bad input: exit code 2, exactly one ``error:`` line (containing ``needle``, case-insensitive),
    no traceback. Returns the error line."""
    assert "Traceback" not in stderr, stderr
    lines = [ln for ln in stderr.splitlines() if ln.startswith("error:")]
    assert rc == 2 and len(lines) == 1, f"exit {rc}, error lines {lines}:\n{stderr[-2000:]}"
    assert needle.lower() in lines[0].lower(), lines[0]
    return lines[0]
