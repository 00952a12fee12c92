"""Import the model libraries in the background as soon as the dashboard starts.

A first model load pays for importing transformers, its tokenizer machinery and peft (about
6-10 s on a 2-core CPU, measured by ``benchmarks/first_run.py``) on top of reading the weights.
The server starts this once per process (``app.py``), while the user is still reading the page,
so that pressing Run or Analyse pays only for the model itself. Importing is all it does: no
model, no file, no network; a failure is ignored (the real load reports it). A script thread that
imports the same module meanwhile simply waits for it (Python's per-module import lock).
"""
from __future__ import annotations

import os
import threading

_thread: threading.Thread | None = None
_lock = threading.Lock()


def _warm() -> None:
    try:
        import peft  # noqa: F401
        import transformers  # noqa: F401
        from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401
        from transformers import tokenization_utils_tokenizers  # noqa: F401 - the fast tokenizer class

        import mia_core.models  # noqa: F401
    except Exception:  # noqa: BLE001 - a warm-up only; the real load reports any problem
        pass


def start() -> None:
    """Start the warm-up once per process (set ``MIA_NO_WARMUP=1`` to skip it)."""
    global _thread
    if os.environ.get("MIA_NO_WARMUP"):
        return
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_warm, name="mia-import-warmup", daemon=True)
            _thread.start()


def wait(timeout: float | None = None) -> None:
    """Wait for the warm-up to finish (benchmarks time it apart from the run)."""
    if _thread is not None:
        _thread.join(timeout)
