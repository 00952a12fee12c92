"""Where the engine keeps things on disk.

Everything lives under one root: ``$MIA_CACHE_DIR`` when set, otherwise the user's
cache directory (``platformdirs.user_cache_dir("mia-dashboard")``, e.g.
``~/.cache/mia-dashboard`` on Linux).

A root that cannot be used (``MIA_CACHE_DIR`` naming a file, a folder that cannot be created
or written, ``/proc/...``) is a one-line ``SettingsError`` from :func:`cache_root` /
:func:`cache_subdir` themselves, naming the folder and the reason, so every command that uses
the cache fails the same clear way (and never blames the model it was about to load).

``ASSETS`` is the other place: the bundled demo (``mia_core/assets``), shipped inside the
package as package data.
"""
from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

import platformdirs

from .errors import SettingsError

_CHECKED: set[str] = set()  # roots found usable in this process (checked once each)
_LOCK = threading.Lock()


def _where(root: Path, from_env: bool) -> str:
    return f"MIA_CACHE_DIR={root}" if from_env else f"the cache folder {root} (set MIA_CACHE_DIR to move it)"


def _reason(e: OSError) -> str:
    return e.strerror or type(e).__name__


def cache_root() -> Path:
    """The cache root, created if needed; ``SettingsError`` when it cannot be used."""
    env = os.environ.get("MIA_CACHE_DIR")
    from_env = bool(env and env.strip())
    root = Path(env.strip()).expanduser() if from_env else Path(platformdirs.user_cache_dir("mia-dashboard"))
    key = str(root)
    if key in _CHECKED and root.is_dir():
        return root
    with _LOCK:
        where = _where(root, from_env)
        if root.exists() and not root.is_dir():
            raise SettingsError(f"{where} is not usable: it is a file, not a folder")
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SettingsError(f"{where} is not usable: cannot create it ({_reason(e)})") from None
        try:  # writable? (a real write: permission bits do not tell for root or read-only mounts)
            fd, probe = tempfile.mkstemp(dir=root, prefix=".mia-write-check-")
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            raise SettingsError(f"{where} is not usable: cannot write in it ({_reason(e)})") from None
        _CHECKED.add(key)
    return root


def cache_subdir(name: str) -> Path:
    """``<cache root>/<name>``, created if needed; ``SettingsError`` when it cannot be."""
    root = cache_root()
    p = root / name
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        what = "it is a file, not a folder" if p.exists() and not p.is_dir() else _reason(e)
        raise SettingsError(f"the cache folder {p} is not usable ({what}): fix it, or set MIA_CACHE_DIR "
                            "to another folder") from None
    return p


# Next to this file, so the demo is found from an installed package and any working directory.
ASSETS = Path(__file__).resolve().parent / "assets"
