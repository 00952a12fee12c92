# shim (issue 39): removed when every import moves
"""Moved to :mod:`mia_core.stats.gradients`; this path re-exports it."""
from mia_core.stats.gradients import *  # noqa: F401,F403
from mia_core.stats.gradients import _one_text, _run_backward, _unique_params  # noqa: F401
