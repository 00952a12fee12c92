"""Progress reporting: every long job takes ``progress(message, fraction)``.

``Progress`` is that callback's type (message, fraction done in 0..1) and ``noop`` the
callback that reports nothing; ``TqdmProgress`` adapts the callback to a tqdm bar on stderr
for the CLI.
"""
from __future__ import annotations

import sys
from typing import Callable

Progress = Callable[[str, float], None]


def noop(message: str, fraction: float) -> None:
    """A progress callback that reports nothing."""


class TqdmProgress:
    def __init__(self, disable: bool = False):
        self.disable = disable
        self._bar = None
        self._stage = None

    def __call__(self, message: str, fraction: float) -> None:
        if self.disable:
            return
        from tqdm import tqdm

        stage = message.split(":")[0]
        if self._bar is None or stage != self._stage:
            if self._bar is not None:
                self._bar.close()
            self._bar = tqdm(total=1000, desc=stage[:40], file=sys.stderr, leave=False,
                             bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix}")
            self._stage = stage
        self._bar.n = int(max(0.0, min(1.0, fraction)) * 1000)
        self._bar.set_postfix_str(message[len(stage) + 1:].strip()[:60], refresh=False)
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
