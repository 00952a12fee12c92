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
* **Reaching the hub** — :func:`hub_local_only`: before a hub id is loaded without
  ``HF_HUB_OFFLINE``, one quick reachability check (:func:`hub_reachable`, ~3 s at most), so an
  unreachable hub means the cached copy or a ``ModelError`` in seconds, not a minute of retries.
* **Errors** — :func:`load_error`: any of :data:`LOAD_ERRORS` raised while loading (``OSError``,
  ``ValueError``, ``RuntimeError``, a corrupt ``.safetensors``, a ``.bin`` that torch's
  ``weights_only`` refused because it would run code...) becomes a one-line ``ModelError`` (not
  on the hub, custom code needed, out of memory, refused pickle, or the first line of the
  original message).
* **Load once** — :class:`LoadOnce`: a per-process registry (dict + lock) each loader keeps,
  so a model asked for twice with the same settings is loaded once.
* **One load at a time** — :func:`model_load_lock`: every loader of every kind builds its model
  while holding one process-wide lock. transformers patches process-wide state while it builds a
  model (``torch.set_default_dtype``, ``torch.nn.init``, ``PreTrainedModel.init_weights``), so two
  threads loading at once got broken models: two threads loading the embedded SmolLM2 together
  gave two copies with ``embed_tokens`` randomly initialised and the tied output layer untied
  (163M parameters instead of 135M, loss 11.0 instead of 5.35), 2 of 2 loads, measured on
  transformers 5.24.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import re
import threading
from contextlib import contextmanager
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
        """True for a file or folder, False for a hub id."""
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


def check_config_json(folder: str | os.PathLike, name: str) -> None:
    """One-line ``ModelError`` when a local model folder's ``config.json`` is not a JSON object (a list, a
    number, bad JSON): transformers raised a ``TypeError`` traceback for a list. Folders without one pass
    (a target folder or a GGUF folder has none; transformers says what is missing)."""
    cfg = Path(folder) / "config.json"
    if not cfg.is_file():
        return
    import json

    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ModelError(f"model {name}: its config.json cannot be read as JSON ({first_line(e)})") from None
    if not isinstance(data, dict):
        raise ModelError(f"model {name}: its config.json holds a JSON {type(data).__name__}, not the object of "
                         "settings a model's config is")


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


# --------------------------------------------------------------------------- reaching the hub

HUB_CHECK_TIMEOUT = 3.0  # seconds for the one reachability check
_REACHABLE: dict[str, tuple[float, bool]] = {}  # endpoint -> (when checked, reachable)
_REACHABLE_TTL = 60.0


def hub_endpoint() -> str:
    """The hub's address: ``HF_ENDPOINT`` (read at call time) or https://huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").strip().rstrip("/")


def hub_reachable(endpoint: str | None = None, timeout: float = HUB_CHECK_TIMEOUT) -> bool:
    """One quick check that the hub answers at all (any HTTP status counts), bounded by ``timeout``.

    huggingface_hub retries an unreachable hub for most of a minute before giving up; this
    check lets a loader fail (or fall back to the local cache) in seconds. It honours the
    proxy variables (``urllib``), runs in a daemon thread so a hanging DNS look-up cannot
    block longer than ``timeout``, and its answer is remembered for a minute.
    """
    import ssl
    import time
    import urllib.error
    import urllib.request

    endpoint = endpoint or hub_endpoint()
    now = time.monotonic()
    seen = _REACHABLE.get(endpoint)
    if seen is not None and now - seen[0] < _REACHABLE_TTL:
        return seen[1]
    result: list[bool] = []

    def probe() -> None:
        try:
            urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout).close()
            result.append(True)
        except urllib.error.HTTPError:  # the server answered, with any status
            result.append(True)
        except urllib.error.URLError as e:  # a certificate problem still means something answered
            result.append(isinstance(e.reason, ssl.SSLError))
        except Exception:  # noqa: BLE001 - timeouts, refused connections, bad URLs: not reachable
            result.append(False)

    t = threading.Thread(target=probe, name="mia-hub-check", daemon=True)
    t.start()
    t.join(timeout + 0.5)
    ok = bool(result and result[0])
    _REACHABLE[endpoint] = (time.monotonic(), ok)
    return ok


def in_hub_cache(repo_id: str) -> bool:
    """Whether the local Hugging Face cache holds ``repo_id`` (its ``config.json`` or ``modules.json``)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        return any(isinstance(try_to_load_from_cache(repo_id, f), str) for f in ("config.json", "modules.json"))
    except Exception:  # noqa: BLE001 - an id the cache cannot even hold is not in it
        return False


def hub_local_only(repo_id: str, *, what: str = "model",
                   hint: str = "check the network, or pass a local folder") -> bool:
    """``local_files_only`` for loading the hub id ``repo_id``, decided before any download.

    Offline (:func:`hub_offline`): ``True``. Otherwise one quick check (:func:`hub_reachable`):
    reachable -> ``False`` (transformers may download); unreachable but in the local cache ->
    ``True`` (load the cached copy at once); unreachable and not cached -> ``ModelError``.
    """
    if hub_offline():
        return True
    endpoint = hub_endpoint()
    if hub_reachable(endpoint):
        return False
    if in_hub_cache(repo_id):
        return True
    raise ModelError(f"{what} {repo_id!r} is not in the local cache and the hub is not reachable "
                     f"({endpoint}): {hint}")


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
    """Cheap but change-sensitive fingerprint of a model folder: the names and :func:`file_fingerprint` of its
    weight, config, GGUF and tokenizer-model files (``.safetensors``, ``.bin``, ``.json``, ``.gguf``, ``.model``).

    Parameters
    ----------
    folder : pathlib.Path
        The model folder (walked recursively).

    Returns
    -------
    str
        16 hex digits.
    """
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


@contextmanager
def library_bars_off(off: bool = True):
    """transformers' (and huggingface_hub's) own progress bars off while the block runs, where the
    caller's progress callback already reports the steps: "Loading weights", a GGUF's
    de-quantisation. ``off=False`` (a download to come) keeps them: they are the only progress a
    download has. Restored afterwards."""
    if not off:
        yield
        return
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bars:
            hf_logging.enable_progress_bar()


# --------------------------------------------------------------------------- errors

try:  # a corrupt or truncated .safetensors file (not an OSError)
    from safetensors import SafetensorError as _SafetensorError
except ImportError:  # pragma: no cover - safetensors always comes with transformers
    class _SafetensorError(Exception):
        pass

# what loading a model can raise for a reason the user can act on (a ``ValueError`` also covers
# bad JSON and undecodable files; ``UnpicklingError``: torch's ``weights_only`` refused a .bin)
LOAD_ERRORS = (OSError, ValueError, RuntimeError, ImportError, EOFError, LookupError, pickle.UnpicklingError,
               _SafetensorError)


def _raised_by_torch_load(e: BaseException) -> bool:
    """Whether ``e`` came out of ``torch.load`` (reading a .bin checkpoint), judged by its traceback."""
    tb = e.__traceback__
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename.replace(os.sep, "/")
        if f.endswith(("torch/serialization.py", "torch/_weights_only_unpickler.py")):
            return True
        tb = tb.tb_next
    return False


def first_line(e: BaseException) -> str:
    """The first line of an exception's message (its type name when the message is empty)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def load_error(e: BaseException, name: str, *, what: str = "model", hub: bool = False,
               hub_hint: str = "check the id, or pass a local folder",
               oom_hint: str = "try a smaller model") -> ModelError:
    """The one-line ``ModelError`` for an exception raised while loading ``name``.

    ``what`` names the kind of model in the message ("model", "masked LM", ...); ``hub``:
    ``name`` is a hub id, so an ``OSError`` means it is not on the hub, or neither cached nor
    reachable. A ``.bin`` that torch's ``weights_only`` refused because unpickling it would call
    a function says so (and which function); any other failure inside ``torch.load`` is a
    corrupt checkpoint; a ``SafetensorError`` a corrupt or truncated ``.safetensors`` file.
    """
    msg = str(e)
    if isinstance(e, RuntimeError) and "out of memory" in msg.lower():
        return ModelError(f"out of memory loading {name}: {oom_hint}")
    if isinstance(e, pickle.UnpicklingError) and "weights only load failed" in msg.lower() and "GLOBAL" in msg:
        called = re.search(r"GLOBAL\s+(\S+)", msg)
        return ModelError(f"{what} {name}: its PyTorch checkpoint (.bin) was refused: loading it would run code "
                          f"(it calls {called.group(1) if called else 'a function'}); use a .safetensors copy "
                          "of the model")
    if isinstance(e, pickle.UnpicklingError) or (
            isinstance(e, (EOFError, LookupError, ValueError, RuntimeError)) and _raised_by_torch_load(e)):
        return ModelError(f"could not load {what} {name}: its PyTorch checkpoint (.bin) is corrupt or not a "
                          "checkpoint; use a .safetensors copy of the model")
    if isinstance(e, _SafetensorError):
        return ModelError(f"could not load {what} {name}: a .safetensors file is corrupt or incomplete "
                          f"({first_line(e)})")
    if isinstance(e, OSError) and hub and "not a valid model identifier" in str(e):
        return ModelError(f"{what} {name!r} is not on the hub, or is private ({hub_hint})")
    if isinstance(e, OSError) and hub:
        return ModelError(f"{what} {name!r} not found locally and the hub is not reachable ({hub_hint}): "
                          f"{first_line(e)}")
    if isinstance(e, ValueError) and "trust_remote_code" in msg:
        return ModelError(f"{name} needs custom code; enable trust_remote_code only if you trust its author")
    return ModelError(f"could not load {what} {name}: {first_line(e)}")


# --------------------------------------------------------------------------- one load at a time

_LOAD_LOCK = threading.RLock()  # re-entrant: a target's load loads its base model inside it


@contextmanager
def model_load_lock(progress: Callable[[str, float], None] | None = None, what: str = "the model"):
    """Hold the process-wide model-building lock for the block (see the module's notes).

    Every place in ``mia_core`` that builds a model (``from_pretrained``, a PEFT wrapper, a
    ``SentenceTransformer``, a masked-LM head put on an encoder) does it inside this block, so
    no model is ever built while another thread builds one. Re-entrant within a thread.
    ``progress``, when given, hears once that the load waits for another one to finish.
    """
    if not _LOAD_LOCK.acquire(blocking=False):
        if progress is not None:
            progress(f"waiting for another model load to finish before loading {what}", 0.0)
        _LOAD_LOCK.acquire()
    try:
        yield
    finally:
        _LOAD_LOCK.release()


# --------------------------------------------------------------------------- load once


class LoadOnce(Generic[T]):
    """Models loaded in this process, by key: each is loaded once and then shared.

    A load runs inside :func:`model_load_lock`, so loads of every kind happen one at a time in
    the process, and a second thread asking for a key being loaded waits and gets that model. A
    model is published (kept, or returned) only once its load has returned, so no thread ever
    sees a half-built one.
    """

    def __init__(self) -> None:
        self._loaded: dict[Hashable, T] = {}
        self._lock = threading.Lock()

    def get_or_load(self, key: Hashable, load: Callable[[], T], *, reuse: bool = True,
                    progress: Callable[[str, float], None] | None = None) -> T:
        """The model under ``key``, loaded by ``load()`` the first time.

        ``reuse=False``: always load, and keep nothing. ``progress`` hears when the load waits
        for another thread's.
        """
        with self._lock:
            if reuse and key in self._loaded:
                return self._loaded[key]
        with model_load_lock(progress):
            with self._lock:  # loaded by another thread while this one waited
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
