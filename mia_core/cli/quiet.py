"""``--quiet``: nothing on stderr but errors, and where a command runs out of memory.

:func:`quiet_output` is the context the CLI runs a command in when ``--quiet`` is given:
no transformers / huggingface_hub progress bars ("Loading weights: 100%..."), transformers'
verbosity at ``error``, the loggers of bitsandbytes, transformers, huggingface_hub,
accelerate, peft and torch at ``ERROR`` (bitsandbytes' "Failed to load CPU gemm_4bit_forward..."
hint is dropped even without ``--quiet``: ``mia_core.models.causal``), and Python warnings ignored. Libraries not imported yet are quietened through the
environment variables they read at import (``TRANSFORMERS_VERBOSITY``,
``HF_HUB_DISABLE_PROGRESS_BARS``), so a command that never loads a model does not pay for
importing transformers. Everything is restored on exit (the CLI can be called in-process).

:func:`memory_hint` is the ``error:`` line for a ``MemoryError`` that escaped a command: the
advice depends on where it happened (reading the inputs vs. running a model).
"""
from __future__ import annotations

import logging
import os
import sys
import traceback
import warnings
from contextlib import contextmanager

QUIET_ENV = {"TRANSFORMERS_VERBOSITY": "error", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
QUIET_LOGGERS = ("bitsandbytes", "transformers", "huggingface_hub", "accelerate", "peft", "torch", "safetensors")


@contextmanager
def quiet_output(enabled: bool = True):
    """Silence library progress bars, warnings and log messages while the block runs."""
    if not enabled:
        yield
        return
    saved_env = {k: os.environ.get(k) for k in QUIET_ENV}
    os.environ.update(QUIET_ENV)
    saved_levels = {name: logging.getLogger(name).level for name in QUIET_LOGGERS}
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    tf_logging = sys.modules.get("transformers.utils.logging")
    tf_bars = tf_logging.is_progress_bar_enabled() if tf_logging is not None else None
    if tf_logging is not None:
        tf_logging.disable_progress_bar()
    try:  # transformers takes its bar setting from huggingface_hub's when it is imported
        import huggingface_hub.utils as hub_utils
    except ImportError:  # pragma: no cover - a dependency of transformers
        hub_utils = None
    hub_bars = hub_utils is not None and not hub_utils.are_progress_bars_disabled()
    if hub_bars:
        hub_utils.disable_progress_bars()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        for name, level in saved_levels.items():
            logging.getLogger(name).setLevel(level)
        tf_logging = sys.modules.get("transformers.utils.logging")
        if tf_logging is not None:
            if hub_bars:
                hub_utils.enable_progress_bars()
            if tf_bars is None:  # imported inside the block: back to huggingface_hub's setting
                tf_bars = hub_utils is None or not hub_utils.are_progress_bars_disabled()
            (tf_logging.enable_progress_bar if tf_bars else tf_logging.disable_progress_bar)()
        elif hub_bars:
            hub_utils.enable_progress_bars()


_READING = (os.sep + os.path.join("mia_core", "data") + os.sep, os.path.join("mia_core", "documents", "books.py"))


def memory_hint(exc: BaseException) -> str:
    """The ``error:`` line for a ``MemoryError``, naming the setting that matters where it happened."""
    files = [f.filename for f in traceback.extract_tb(exc.__traceback__)]
    if any(any(part in f for part in _READING) for f in files):
        return "out of memory reading the inputs: give smaller files (or fewer of them)"
    if any(os.sep + os.path.join("mia_core", "stats") + os.sep in f or os.sep + "torch" + os.sep in f
           or os.sep + "transformers" + os.sep in f for f in files):
        return "out of memory running the model: try a smaller --batch-tokens or --context, int8/int4, or fewer texts"
    return "out of memory: try fewer or shorter texts, a smaller --batch-tokens, or int8/int4"


def without_printed_notes(summary: str, printed) -> str:
    """``summary`` without the ``note: ...`` lines of ``printed`` (the input notes the command
    already printed on stderr before scoring), so that each note is printed once; what is left is
    made safe to print (:func:`mia_core.errors.safe_lines`: no control character but the line breaks).
    A note is matched on its raw text first, so one holding a line break (a file name with one in
    it) is dropped whole rather than left behind in pieces."""
    from ..errors import safe_text

    for n in printed:
        raw = f"note: {n}"
        if any(c in raw for c in "\n\r"):
            summary = summary.replace(raw, f"note: {safe_text(n)}")
    shown = {f"note: {safe_text(n)}" for n in printed}
    return "\n".join(safe_text(line) for line in summary.split("\n") if safe_text(line) not in shown)
