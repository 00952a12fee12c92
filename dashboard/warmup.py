"""Get ready in the background as soon as the dashboard starts: import the model libraries, then
load the models the pages' defaults use.

A first model load pays for importing transformers, its tokenizer machinery and peft (about
6-10 s on a 2-core CPU, measured by ``benchmarks/first_run.py``) on top of reading the weights.
The server starts this once per process (``app.py``), while the user is still reading the page,
so that pressing Run or Analyse pays only for the model itself. After the imports it loads the
bundled demo's target and reference with the sidebar's default settings
(:func:`dashboard.loaders.preload_defaults`; about 5 s and 1.1 GB for the two 135M models in fp32)
into the same store the pages use, so the default run starts at once; a page that asks for one of
them meanwhile waits for that load and shows its steps. ``MIA_NO_PRELOAD=1`` keeps the imports and
skips the models; ``MIA_NO_WARMUP=1`` skips both. No file is written but the one-off conversion of
the embedded model (the same as its first load anywhere); no network; a failure is ignored (the
page's own load reports it). A script thread that imports the same module meanwhile simply waits
for it (Python's per-module import lock).
"""
from __future__ import annotations

import os
import threading

_thread: threading.Thread | None = None
_lock = threading.Lock()


def _warm(store: dict | None) -> None:
    try:
        import peft  # noqa: F401
        import transformers  # noqa: F401
        from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401
        from transformers import tokenization_utils_tokenizers  # noqa: F401 - the fast tokenizer class

        import mia_core.models  # noqa: F401
    except Exception:  # noqa: BLE001 - a warm-up only; the real load reports any problem
        return
    if store is not None and not os.environ.get("MIA_NO_PRELOAD"):
        from .loaders import preload_defaults

        preload_defaults(store)


def start(store: dict | None = None) -> None:
    """Start the warm-up once per process (set ``MIA_NO_WARMUP=1`` to skip it); ``store``: the
    pages' model store (:func:`dashboard.loaders.model_store`) to preload the default models into."""
    global _thread
    if os.environ.get("MIA_NO_WARMUP"):
        return
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_warm, args=(store,), name="mia-warmup", daemon=True)
            _thread.start()


def wait(timeout: float | None = None) -> None:
    """Wait for the warm-up to finish (benchmarks time it apart from the run)."""
    if _thread is not None:
        _thread.join(timeout)
