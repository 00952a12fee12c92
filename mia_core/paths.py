"""Where the engine keeps things on disk.

Everything lives under one root: ``$MIA_CACHE_DIR`` when set, otherwise the user's
cache directory (``platformdirs.user_cache_dir("mia-dashboard")``, e.g.
``~/.cache/mia-dashboard`` on Linux).
"""
from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def cache_root() -> Path:
    env = os.environ.get("MIA_CACHE_DIR")
    root = Path(env).expanduser() if env else Path(platformdirs.user_cache_dir("mia-dashboard"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def cache_subdir(name: str) -> Path:
    p = cache_root() / name
    p.mkdir(parents=True, exist_ok=True)
    return p


PROJECT_ROOT = Path(__file__).resolve().parent.parent
ASSETS = PROJECT_ROOT / "assets"
