"""Get ready in the background as soon as the dashboard starts: import the model libraries, then
load the models the pages' defaults use.

A first model load pays for importing torch, transformers and its tokenizer machinery (about
3-5 s on a 2-core CPU, measured by ``benchmarks/startup.py``) on top of reading the weights. peft is not
imported here: a LoRA target is read from its merged copy (``mia_core.models.merged``) once it has one, and
the first load that merges it imports peft inside the one-load-at-a-time lock (``mia_core.models.hub``).
The server starts this once per process (``app.py``), while the user is still reading the page,
so that pressing Run or Analyse pays only for the model itself. After the imports it loads the
bundled demo's target and reference with the sidebar's default settings
(:func:`dashboard.loaders.warm_defaults`; about 5 s and 1.1 GB for the two 135M models in fp32)
into the same store the pages use, so the default run starts at once (``app.py`` hands that step to
:func:`start`: this module imports nothing of the dashboard's); a page that asks for one of
them meanwhile waits for that load and shows its steps. ``MIA_NO_PRELOAD=1`` keeps the imports and
skips the models; ``MIA_NO_WARMUP=1`` skips both. Then, once per machine and model, it measures
this machine's speed for the demo target on about 600 tokens of the demo's texts (not cached;
``mia_core.api.plan.measure_speed``, also in ``warm_defaults``), so that the first time estimate a page shows is this machine's, not an
assumed speed. No file is written but that record (``throughput.json``) and the one-off conversion of
the embedded model (the same as its first load anywhere); no network; a failure is ignored (the
page's own load reports it). A script thread that imports the same module meanwhile simply waits
for it (Python's per-module import lock).
"""
from __future__ import annotations

import os
import threading
from typing import Callable

_thread: threading.Thread | None = None
_lock = threading.Lock()
_imported = threading.Event()  # set once the warm-up's imports are over (done or failed)


def _warm(then: Callable[[], None] | None) -> None:
    try:
        import transformers  # noqa: F401
        from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401
        from transformers import tokenization_utils_tokenizers  # noqa: F401 - the fast tokenizer class

        import mia_core.models  # noqa: F401
    except Exception:  # noqa: BLE001 - a warm-up only; the real load reports any problem
        return
    finally:
        _imported.set()
    if then is not None and not os.environ.get("MIA_NO_PRELOAD"):
        try:
            then()
        except Exception:  # noqa: BLE001 - a warm-up only; the real load reports any problem
            return


def start(then: Callable[[], None] | None = None) -> None:
    """Start the warm-up once per process (set ``MIA_NO_WARMUP=1`` to skip it); ``then``: what to do once the
    imports are done, in the warm-up's thread (``app.py``: :func:`dashboard.loaders.warm_defaults`, the default
    models' preload into the pages' store and the speed measurement; skipped with ``MIA_NO_PRELOAD=1``)."""
    global _thread
    if os.environ.get("MIA_NO_WARMUP"):
        return
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_warm, args=(then,), name="mia-warmup", daemon=True)
            _thread.start()


def wait_imports(timeout: float | None = 120.0) -> None:
    """Wait (at most ``timeout`` s) for the warm-up's imports when a warm-up is under way in another thread.

    Two threads importing transformers and peft at once, in different orders, can meet Python's import
    deadlock guard, which hands one of them a partially initialised module (``ImportError: cannot import name
    'AutoTokenizer'``, seen in the page tests); so the pages' model loads (:func:`dashboard.loaders.load_model`)
    wait for the warm-up's imports instead of racing them. Returns at once without a warm-up, or in it."""
    t = _thread
    if t is not None and t is not threading.current_thread() and t.is_alive():
        _imported.wait(timeout)


def wait(timeout: float | None = None) -> None:
    """Wait for the warm-up to finish (benchmarks time it apart from the run)."""
    if _thread is not None:
        _thread.join(timeout)
