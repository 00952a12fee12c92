"""What every model loader shares: where a spec points, offline mode, identity, errors, load-once.

The four loaders (``causal``, ``masked``, ``embedder``, ``seq2seq``) take the same kinds of
user strings and must agree on what they mean, so the rules live here once:

* **Location** — :func:`locate`: an existing file or folder (resolved to an absolute path), or
  else a Hugging Face hub id. A string that can only be a path (starts with ``.``, ``/`` or
  ``~``, or has more than one ``/``; hub ids are ``name`` or ``org/name``) but names nothing
  is a ``ModelError``, never a hub look-up.
* **Offline** — :func:`hub_offline`: read from the environment at call time, the way
  ``huggingface_hub`` reads it (``HF_HUB_OFFLINE``, else ``TRANSFORMERS_OFFLINE``; ``1``,
  ``ON``, ``YES``, ``TRUE`` in any case mean offline). Offline, hub ids are looked up only in
  the local Hugging Face cache (``local_files_only``).
* **Identity** — :func:`identity`: the stable string that keys on-disk caches (statistics,
  energies, embeddings, neighbours). Local files and folders are identified by a content
  fingerprint (:func:`file_fingerprint`, :func:`folder_fingerprint`), so editing a model in
  place invalidates its caches; hub models by id **and** the resolved revision (commit hash,
  ``unknown`` when transformers did not record one), so a hub update does too.
* **Errors** — :func:`load_error`: any ``OSError`` / ``ValueError`` / ``RuntimeError`` raised
  while loading becomes a one-line ``ModelError`` (not on the hub, custom code needed, out of
  memory, or the first line of the original message).
* **Load once** — :class:`LoadOnce`: a per-process registry (dict + lock) each loader keeps,
  so a model asked for twice with the same settings is loaded once.
"""
from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Generic, Hashable, TypeVar

from ..errors import ModelError

T = TypeVar("T")

# --------------------------------------------------------------------------- location


@dataclass(frozen=True)
class Location:
    """Where a user string points: an existing file or folder, or a hub id."""

    kind: str  # "file" | "folder" | "hub"
    location: str  # absolute path, or the hub id
    display: str  # the file or folder name as given, or the hub id

    @property
    def is_local(self) -> bool:
        return self.kind != "hub"


def looks_like_path(s: str) -> bool:
    """True for strings that can only be paths (hub ids are ``name`` or ``org/name``)."""
    return s.startswith((".", "/", "~")) or os.sep in s and s.count("/") > 1


def locate(spec: str | os.PathLike, *, missing: str = "no such file or folder") -> Location:
    """A user string -> :class:`Location`; ``ModelError("<spec>: <missing>")`` for a path that does not exist."""
    s = str(spec).strip()
    p = Path(s).expanduser()
    if p.is_file():
        return Location("file", str(p.resolve()), p.name)
    if p.is_dir():
        return Location("folder", str(p.resolve()), p.name)
    if looks_like_path(s):
        raise ModelError(f"{s}: {missing}")
    return Location("hub", s, s)


# --------------------------------------------------------------------------- offline flag

try:  # the values huggingface_hub itself treats as true
    from huggingface_hub.constants import ENV_VARS_TRUE_VALUES as _TRUE_VALUES
except ImportError:  # pragma: no cover - huggingface_hub always comes with transformers
    _TRUE_VALUES = {"1", "ON", "YES", "TRUE"}


def hub_offline() -> bool:
    """Whether the hub must not be contacted (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``).

    Parsed like ``huggingface_hub.constants.HF_HUB_OFFLINE`` ("1", "ON", "YES", "TRUE", any
    case), but read at call time: that constant is frozen when huggingface_hub is imported.
    """
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE")
    return value is not None and value.upper() in _TRUE_VALUES


# --------------------------------------------------------------------------- identity


def file_fingerprint(path: Path) -> str:
    """Cheap but change-sensitive: size, mtime and the first/last MiB of the file."""
    h = hashlib.sha256()
    st = path.stat()
    h.update(f"{path.name}:{st.st_size}".encode())
    with open(path, "rb") as f:
        h.update(f.read(1 << 20))
        if st.st_size > (2 << 20):
            f.seek(-(1 << 20), os.SEEK_END)
            h.update(f.read(1 << 20))
    return h.hexdigest()[:16]


def folder_fingerprint(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.suffix in (".safetensors", ".bin", ".json", ".gguf", ".model"):
            h.update(str(p.relative_to(folder)).encode())
            h.update(file_fingerprint(p).encode())
    return h.hexdigest()[:16]


def hub_revision(model) -> str:
    """The hub commit a loaded model came from, ``"unknown"`` when transformers did not record it.

    transformers stores it as ``config._commit_hash``; a sentence-transformers model exposes
    its transformers model's config as ``.config`` (older versions through ``_first_module()``).
    """
    config = getattr(model, "config", None)
    if config is None and hasattr(model, "_first_module"):
        config = getattr(getattr(model._first_module(), "auto_model", None), "config", None)
    return getattr(config, "_commit_hash", None) or "unknown"


def identity(kind: str, location: str, model=None) -> str:
    """The cache-key identity of a model source.

    ``hub``: ``hub:<id>@<revision>`` (``model`` gives the revision); any other ``kind``
    (``local``, ``gguf``, ``target``...): ``<kind>:<fingerprint>`` of the file or folder.
    """
    if kind == "hub":
        return f"hub:{location}@{hub_revision(model)}"
    path = Path(location)
    return f"{kind}:{file_fingerprint(path) if path.is_file() else folder_fingerprint(path)}"


# --------------------------------------------------------------------------- errors

LOAD_ERRORS = (OSError, ValueError, RuntimeError)


def first_line(e: BaseException) -> str:
    """The first line of an exception's message (its type name when the message is empty)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def load_error(e: BaseException, name: str, *, what: str = "model", hub: bool = False,
               hub_hint: str = "check the id, or pass a local folder",
               oom_hint: str = "try a smaller model") -> ModelError:
    """The one-line ``ModelError`` for an exception raised while loading ``name``.

    ``what`` names the kind of model in the message ("model", "masked LM", ...); ``hub``:
    ``name`` is a hub id, so an ``OSError`` means it is neither cached nor reachable.
    """
    if isinstance(e, OSError) and hub:
        return ModelError(f"{what} {name!r} not found locally and the hub is not reachable ({hub_hint}): "
                          f"{first_line(e)}")
    if isinstance(e, ValueError) and "trust_remote_code" in str(e):
        return ModelError(f"{name} needs custom code; enable trust_remote_code only if you trust its author")
    if isinstance(e, RuntimeError) and "out of memory" in str(e).lower():
        return ModelError(f"out of memory loading {name}: {oom_hint}")
    return ModelError(f"could not load {what} {name}: {first_line(e)}")


# --------------------------------------------------------------------------- load once


class LoadOnce(Generic[T]):
    """Models loaded in this process, by key: each is loaded once and then shared.

    Loading runs outside the lock (a model can take minutes); two threads asking for the same
    new key at once may both load it, and the later one is kept.
    """

    def __init__(self) -> None:
        self._loaded: dict[Hashable, T] = {}
        self._lock = threading.Lock()

    def get_or_load(self, key: Hashable, load: Callable[[], T], *, reuse: bool = True) -> T:
        """The model under ``key``, loaded by ``load()`` the first time.

        ``reuse=False``: always load, and keep nothing.
        """
        with self._lock:
            if reuse and key in self._loaded:
                return self._loaded[key]
        value = load()
        with self._lock:
            if reuse:
                self._loaded[key] = value
        return value

    def clear(self) -> None:
        """Forget every loaded model (tests use it to force a reload)."""
        with self._lock:
            self._loaded.clear()

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._loaded

    def __len__(self) -> int:
        with self._lock:
            return len(self._loaded)
