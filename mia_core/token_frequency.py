# shim (issue 39): removed when every import moves
"""Moved to :mod:`mia_core.stats.token_frequency`; this path re-exports it."""
from mia_core.stats.token_frequency import *  # noqa: F401,F403
from mia_core.stats.token_frequency import _chunks  # noqa: F401
