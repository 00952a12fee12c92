"""Progress reporting: every long job takes ``progress(message, fraction)``.

``Progress`` is that callback's type (a message, and the fraction done in 0..1) and ``noop``
the callback that reports nothing. The message's text up to its first ``:`` names the
stage (``"scoring: 120/400 texts"``). Front ends turn the calls into bars: the CLI with
:class:`mia_core.cli.common.ProgressBar`, the dashboard with Streamlit progress widgets.
"""
from __future__ import annotations

from typing import Callable

Progress = Callable[[str, float], None]


def noop(message: str, fraction: float) -> None:
    """A progress callback that reports nothing."""
