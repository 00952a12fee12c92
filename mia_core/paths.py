"""Where the engine keeps things on disk.

Everything lives under one root: ``$MIA_CACHE_DIR`` when set, otherwise the user's
cache directory (``platformdirs.user_cache_dir("mia-dashboard")``, e.g.
``~/.cache/mia-dashboard`` on Linux).

``ASSETS`` is the other place: the bundled demo (``mia_core/assets``), shipped inside the
package as package data.
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


# Next to this file, so the demo is found from an installed package and any working directory.
ASSETS = Path(__file__).resolve().parent / "assets"
