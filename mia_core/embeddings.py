# shim (issue 39): removed when every import moves
"""Moved to :mod:`mia_core.stats.embeddings`; this path re-exports it."""
from mia_core.stats.embeddings import *  # noqa: F401,F403
from mia_core.stats.embeddings import _as_embedder, _noop  # noqa: F401
