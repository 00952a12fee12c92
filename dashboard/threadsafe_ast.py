"""Serialise ``ast.parse`` across threads (a CPython 3.11 race the dashboard's threads hit).

CPython keeps the AST constructor's recursion counter in per-interpreter state shared by all
threads. When two threads build Python AST objects at once and a garbage collection in one of
them runs Python code (a ``__del__``), the interpreter can switch threads in the middle of the
construction, and ``ast.parse`` fails with "SystemError: AST constructor recursion depth
mismatch (before=42, after=41)" (python/cpython#106905 and its reports; reproduced here with two
threads and 3.11.7).

The dashboard has exactly that: a calibration job reads cached statistics with ``numpy.load``
(its ``.npy`` header is read with ``ast.literal_eval``) in a background thread while Streamlit's
script thread compiles a page (``ast.parse`` for "magic", which ``.streamlit/config.toml`` turns
off for that reason) or another page reads the cache. A process-wide reentrant lock around
``ast.parse`` (``ast.literal_eval`` calls it) makes the constructions take turns; they are short
(microseconds for a header), so nothing waits noticeably. Installed once, by ``dashboard``'s
import, before any job thread exists.
"""
from __future__ import annotations

import ast
import functools
import threading

_LOCK = threading.RLock()


def install() -> None:
    """Wrap ``ast.parse`` with the lock (idempotent: a module reload does not wrap it twice)."""
    if getattr(ast.parse, "_mia_serialised", False):
        return
    original = ast.parse

    @functools.wraps(original)
    def parse(*args, **kwargs):
        with _LOCK:
            return original(*args, **kwargs)

    parse._mia_serialised = True  # type: ignore[attr-defined]
    ast.parse = parse
