"""How long a run will take, said before it starts: texts x passes x this machine's measured speed.

Every :func:`mia_core.stats.compute_stats` call that scores enough tokens records this machine's
speed as seconds per token per model parameter, by device (``throughput.json`` in the cache
folder; the forward pass of a causal LM costs about 2 x parameters FLOPs per token, so one figure
carries over between model sizes on one machine). :func:`estimate_seconds` turns a token count,
a number of passes and a model size into seconds; without a measurement yet it assumes
:data:`DEFAULT_TOKENS_PER_S` for a 135M-parameter model on a CPU (what a 2-core machine does).
Token counts come from the model's tokenizer when it is loaded, else from characters (about 4.2
characters per token for English with BPE tokenizers).
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

DEFAULT_TOKENS_PER_S = 300.0  # SmolLM2-135M, fp32, 2 CPU cores (benchmarks/first_run.py)
DEFAULT_PARAMS = 135e6
CHARS_PER_TOKEN = 4.2
MIN_TOKENS = 500  # calls that score fewer say little about the speed
FILE = "throughput.json"


def _path() -> Path | None:
    try:
        from .paths import cache_root

        return cache_root() / FILE
    except Exception:  # noqa: BLE001 - an unusable cache only means no record
        return None


def _device_kind(device) -> str:
    d = str(device or "cpu")
    return "cpu" if d.startswith("cpu") else d.split(":")[0]


def record(n_tokens: int, seconds: float, n_params: int, device) -> None:
    """Remember this machine's speed (seconds per token per parameter) on ``device``."""
    if n_tokens < MIN_TOKENS or seconds <= 0 or n_params <= 0:
        return
    p = _path()
    if p is None:
        return
    try:
        data = json.loads(p.read_text()) if p.exists() else {}
    except (OSError, ValueError):
        data = {}
    data[_device_kind(device)] = {"s_per_token_param": seconds / (n_tokens * n_params),
                                  "tokens_per_s": n_tokens / seconds, "n_params": int(n_params), "at": time.time()}
    try:
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(p)
    except OSError:
        pass


def measured(device="cpu") -> dict | None:
    """The last recorded speed on ``device`` (None before the first run)."""
    p = _path()
    try:
        return (json.loads(p.read_text()) if p is not None and p.exists() else {}).get(_device_kind(device))
    except (OSError, ValueError):
        return None


def count_tokens(texts, tokenizer=None) -> int:
    """Tokens of ``texts`` (+1 each for the prefix token): exact with a tokenizer, else estimated."""
    if tokenizer is not None:
        ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        return sum(len(x) + 1 for x in ids)
    return sum(int(math.ceil(len(t) / CHARS_PER_TOKEN)) + 1 for t in texts)


def estimate_seconds(n_tokens: int, n_params: float | None = None, device="cpu") -> tuple[float, str]:
    """Seconds to score ``n_tokens`` with a model of ``n_params`` parameters, and where the speed
    comes from ("measured" or "assumed")."""
    n_params = float(n_params or DEFAULT_PARAMS)
    m = measured(device)
    if m and m.get("s_per_token_param"):
        return n_tokens * n_params * float(m["s_per_token_param"]), "measured"
    return n_tokens / DEFAULT_TOKENS_PER_S * (n_params / DEFAULT_PARAMS), "assumed"


def describe_estimate(n_texts: int, passes: list[str], n_tokens: int, n_params: float | None = None,
                      device="cpu", cached: int = 0) -> str:
    """One line for a page or a CLI: what will run and about how long it takes."""
    from .formatting import fmt_seconds

    if not passes:
        return ""
    todo = max(0, n_tokens * len(passes) - cached)
    sec, how = estimate_seconds(todo, n_params, device)
    speed = n_tokens * len(passes) / max(sec, 1e-9) if todo else 0
    src = (f"this machine's measured speed, about {speed:,.0f} tokens/s for this model" if how == "measured" else
           f"an assumed {DEFAULT_TOKENS_PER_S:.0f} tokens/s for a 135M model on a CPU until a run measures it")
    return (f"{n_texts:,} texts × {len(passes)} pass{'es' if len(passes) != 1 else ''} ({', '.join(passes)}), "
            f"about {n_tokens * len(passes):,} tokens: about {fmt_seconds(sec)} of model passes ({src}); "
            "texts scored before come from the cache.")
