"""How long a run will take, said before it starts: the texts the cache lacks x passes x this machine's speed.

Every :func:`mia_core.stats.compute_stats` call that scores enough tokens records this machine's
speed (``throughput.json`` in the cache folder) for that model (by device and model identity) and
as seconds per token per model parameter by device (the forward pass of a causal LM costs about
2 x parameters FLOPs per token, so one figure carries over between model sizes on one machine).
:func:`speed` uses the model's own figure when there is one, else the one of the model measured
nearest in size, scaled by size, else it assumes :data:`DEFAULT_TOKENS_PER_S` for a 135M-parameter
model on a CPU (what a 2-core machine does), and says which. :func:`mia_core.stats.speed.measure` makes a measurement on
purpose (the dashboard's start-up warm-up) and :func:`mia_core.stats.speed.cached_texts` tells, without
reading them, which texts the statistics cache already holds for a loaded model, so that only the others
count: both run the statistics, so they live above this module, in ``mia_core.stats``.
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


MAX_FILE_BYTES = 1 << 20  # a record of a few machines and models is a few kB: anything larger is not one


def _read() -> dict:
    """The speed records, or ``{}`` when the file is missing, too large, not JSON, nested past Python's limit or not a
    mapping (a damaged or hostile cache file only means no record: the next measured run writes a new one)."""
    p = _path()
    try:
        if p is None or not p.is_file() or p.stat().st_size > MAX_FILE_BYTES:
            return {}
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _valid(entry) -> bool:
    """A record entry that can be used: a positive, finite seconds per token per parameter (and parameter count)."""
    if not isinstance(entry, dict):
        return False
    try:
        per, n = float(entry.get("s_per_token_param")), float(entry.get("n_params", 1))
    except (TypeError, ValueError):
        return False
    return math.isfinite(per) and per > 0 and math.isfinite(n) and n > 0


def record(n_tokens: int, seconds: float, n_params: int, device, model: str | None = None) -> None:
    """Remember this machine's speed (seconds per token per parameter) on ``device``, and for ``model``.

    Parameters
    ----------
    n_tokens : int
        Tokens scored (a call under :data:`MIN_TOKENS` records nothing).
    seconds : float
        How long they took.
    n_params : int
        The model's parameter count.
    device : str
        Where it ran (``cpu``, ``cuda:0``...; recorded by kind).
    model : str, optional
        The model's identity (``LoadedModel.identity``): its own figure, used before the per-parameter one.
    """
    if n_tokens < MIN_TOKENS or seconds <= 0 or n_params <= 0:
        return
    p = _path()
    if p is None:
        return
    data = _read()
    entry = {"s_per_token_param": seconds / (n_tokens * n_params), "tokens_per_s": n_tokens / seconds,
             "n_params": int(n_params), "at": time.time()}
    data[_device_kind(device)] = entry
    if model:
        models = data.get("models") if isinstance(data.get("models"), dict) else {}
        data["models"] = {**models, f"{_device_kind(device)} {model}": entry}
    try:
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(p)
    except OSError:
        pass


def measured(device="cpu", model: str | None = None) -> dict | None:
    """The last recorded speed on ``device`` (None before the first run); with ``model`` (an identity), that
    model's own (None when it was never measured here)."""
    data = _read()
    if model:
        models = data.get("models")
        got = models.get(f"{_device_kind(device)} {model}") if isinstance(models, dict) else None
    else:
        got = data.get(_device_kind(device))
    return got if _valid(got) else None


def speed(n_params: float | None = None, device="cpu", model: str | None = None) -> tuple[float, str, str]:
    """Seconds per token for a model of ``n_params`` on ``device``: ``(seconds, how, words)``, ``how`` being
    ``"measured"`` (this model's own figure on this machine), ``"scaled"`` (another model's, scaled by size) or
    ``"assumed"`` (:data:`DEFAULT_TOKENS_PER_S` for a 135M model), and ``words`` saying which for a page.

    Parameters
    ----------
    n_params : float, optional
        The model's parameter count (None: :data:`DEFAULT_PARAMS`).
    device : str
        Where it runs.
    model : str, optional
        Its identity (``LoadedModel.identity``); None: not known (the model is not loaded).

    Returns
    -------
    tuple
        ``(seconds per token, how, words)``.
    """
    n_params = float(n_params or DEFAULT_PARAMS)
    own = measured(device, model) if model else None
    if own:
        per = float(own["s_per_token_param"]) * n_params
        return per, "measured", f"this machine's measured speed for this model, about {1 / per:,.0f} tokens/s"
    m = _nearest(device, n_params)
    if m:
        per = float(m["s_per_token_param"]) * n_params
        return per, "scaled", ("measured on this machine with another model, scaled by size: "
                                f"about {1 / per:,.0f} tokens/s")
    per = 1 / DEFAULT_TOKENS_PER_S * (n_params / DEFAULT_PARAMS)
    size = ("" if n_params == DEFAULT_PARAMS else
            f" for a 135M model, about {1 / per:,.0f} tokens/s for this one by size")
    return per, "assumed", f"assumed {DEFAULT_TOKENS_PER_S:.0f} tokens/s{size}: nothing measured yet on this machine"


def _nearest(device, n_params: float) -> dict | None:
    """The measurement on ``device`` of the model closest in size to ``n_params`` (a tiny model's speed says
    little about a large one's), else the device's last one."""
    data, kind = _read(), _device_kind(device)
    models = data.get("models")
    same = [m for k, m in (models.items() if isinstance(models, dict) else ())
            if isinstance(k, str) and k.split(" ", 1)[0] == kind and _valid(m) and m.get("n_params")]
    if same:
        return min(same, key=lambda m: abs(math.log(float(m["n_params"]) / n_params)))
    return measured(device)


def count_tokens(texts, tokenizer=None) -> int:
    """Tokens of ``texts`` (+1 each for the prefix token): exact with a tokenizer, else estimated."""
    texts = list(texts)
    if not texts:
        return 0
    if tokenizer is not None:
        ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
        return sum(len(x) + 1 for x in ids)
    return sum(int(math.ceil(len(t) / CHARS_PER_TOKEN)) + 1 for t in texts)


def estimate_seconds(n_tokens: int, n_params: float | None = None, device="cpu",
                     model: str | None = None) -> tuple[float, str]:
    """Seconds to score ``n_tokens`` with a model of ``n_params`` parameters, and where the speed comes from
    (``"measured"`` for this model, ``"scaled"`` from another model's, or ``"assumed"``: :func:`speed`)."""
    per, how, _ = speed(n_params, device, model)
    return n_tokens * per, how


def describe_estimate(n_texts: int, passes: list[str], n_tokens: int, n_params: float | None = None,
                      device="cpu", cached: int | None = 0, *, todo_tokens: int | None = None,
                      model: str | None = None, what: str = "texts", seconds: float | None = None) -> str:
    """One line for a page or a CLI: what will run and about how long it takes.

    Parameters
    ----------
    n_texts : int
        Texts per pass.
    passes : list of str
        The passes (``target``, ``reference``...).
    n_tokens : int
        Tokens of the texts (one pass).
    n_params, device, model
        The model's size, where it runs and its identity (:func:`speed`).
    cached : int or None
        Of the ``n_texts x passes`` texts scored, how many the cache already holds; None: not known (the
        model is not loaded yet, the line says so).
    todo_tokens : int, optional
        The tokens still to score over all passes (None: every pass's ``n_tokens``).
    what : str
        What the texts are called (``"passages"`` for books).
    seconds : float, optional
        The passes' time when the caller worked it out (passes of models of different speeds); None:
        ``todo_tokens`` at this model's speed.

    Returns
    -------
    str
    """
    from .formatting import counted, fmt_seconds

    if not passes:
        return ""
    total = n_texts * len(passes)
    todo = n_tokens * len(passes) if todo_tokens is None else int(todo_tokens)
    per, _, src = speed(n_params, device, model)
    sec = todo * per if seconds is None else float(seconds)
    head = (f"{counted(n_texts, what)} × {len(passes)} pass{'es' if len(passes) != 1 else ''} ({', '.join(passes)}), "
            f"about {n_tokens * len(passes):,} tokens: ")
    if cached is not None and cached >= total:
        return head + f"all cached: a few seconds ({src})."
    if cached:
        body = (f"{cached:,} of {total:,} {what} already cached: about {fmt_seconds(sec)} of model passes "
                f"for the other {total - cached:,}")
    else:
        body = f"about {fmt_seconds(sec)} of model passes"
    tail = ("" if cached is not None else
            f" The estimate does not yet know the cache (the model is not loaded): {what} scored before take no time.")
    return head + f"{body} ({src}).{tail}"
