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


def _probe_write(root: Path) -> None:
    """A real write (permission bits do not tell for root or read-only mounts); ``OSError`` when it fails."""
    fd, probe = tempfile.mkstemp(dir=root, prefix=".mia-write-check-")
    os.close(fd)
    os.unlink(probe)


def _locate() -> tuple[Path, bool]:
    env = os.environ.get("MIA_CACHE_DIR")
    from_env = bool(env and env.strip())
    return (Path(env.strip()).expanduser() if from_env else Path(platformdirs.user_cache_dir("mia-dashboard"))), from_env


def cache_root(writable: bool = True) -> Path:
    """The cache root, created if needed; ``SettingsError`` when it cannot be used.

    ``writable=False``: only reading is needed (``cache info``, listing what ``cache clear`` would remove,
    a run that reads a filled cache it may not write): a read-only folder is fine then."""
    root, from_env = _locate()
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
        if not writable:
            return root
        try:
            _probe_write(root)
        except OSError as e:
            raise SettingsError(f"{where} is not usable: cannot write in it ({_reason(e)})") from None
        _CHECKED.add(key)
    return root


def cache_writable() -> str | None:
    """None when the cache root takes new files, else the reason it does not (one phrase)."""
    try:
        cache_root()
    except SettingsError as e:
        return str(e)
    return None


def cache_subdir(name: str, writable: bool = True) -> Path:
    """``<cache root>/<name>``, created if needed; ``SettingsError`` when it cannot be.
    ``writable=False``: for reading only (the folder may be read-only, and is not created)."""
    root = cache_root(writable=writable)
    p = root / name
    if not writable:
        return p
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        what = "it is a file, not a folder" if p.exists() and not p.is_dir() else _reason(e)
        raise SettingsError(f"the cache folder {p} is not usable ({what}): fix it, or set MIA_CACHE_DIR "
                            "to another folder") from None
    return p


def file_kind(mode: int) -> str:
    """What a file of ``os.stat`` mode ``mode`` is, in words: "a regular file", "a folder", "a FIFO (pipe)",
    "a character device", "a block device", "a socket", or "not a regular file". Callers decide which
    kinds they take (a reader takes a FIFO, a parameter path does not)."""
    import stat

    for test, words in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (pipe)"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                        (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


# Next to this file, so the demo is found from an installed package and any working directory.
ASSETS = Path(__file__).resolve().parent / "assets"
