"""GGUF files as safetensors folders: each GGUF is de-quantised once (about a minute) into a folder under the
cache root, which later loads read in seconds (:func:`converted_gguf_dir`).

Several processes may convert at once (the dashboard and a CLI run sharing a cache): each converts into a
private temporary folder and publishes it with one atomic rename (:func:`publish_dir`), so readers only
ever see a missing or a complete folder (it holds :data:`CONVERTED_MARKER`); temporary folders a killed
conversion left are removed later. A broken conversion is never published (``verify.check_loading_info``).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import secrets
import shutil
import threading
import time
from pathlib import Path

from ..errors import ModelError
from ..paths import cache_subdir
from ..progress import Progress, noop
from .hub import file_fingerprint, first_line, library_bars_off
from .verify import check_loading_info

_convert_lock = threading.Lock()
CONVERTED_MARKER = "mia_converted.json"


def converted_gguf_dir(gguf_path: str | Path, progress: Progress = noop) -> Path:
    """De-quantise a GGUF file once into a safetensors folder under the cache root.

    Safe for several processes at once: each converts into its own temporary folder
    (``<name>.tmp-<pid>-<random>``) and publishes it with one atomic rename
    (:func:`publish_dir`); if another process published first, ours is discarded and theirs used.
    """
    gguf_path = Path(gguf_path)
    name = converted_dir_name(gguf_path)
    out = cache_subdir("models", writable=False) / name
    if (out / CONVERTED_MARKER).exists():  # converted before: reading it needs no write (a read-only cache)
        return out
    out = cache_subdir("models") / name
    with _convert_lock:  # threads of one process convert once; processes race in publish_dir
        if (out / CONVERTED_MARKER).exists():
            return out
        tmp = None
        try:
            tmp = _private_tmp(out)
            _convert_gguf(gguf_path, tmp, progress)
            (tmp / CONVERTED_MARKER).write_text(json.dumps({"source": str(gguf_path), "time": time.time()}))
            publish_dir(tmp, out, marker=CONVERTED_MARKER)
        except OSError as e:
            raise ModelError(f"could not write the converted copy of {gguf_path.name} to {out.parent} "
                             f"({e.strerror or type(e).__name__})") from None
        finally:
            if tmp is not None and tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
            _remove_abandoned_tmps(out)
        progress("conversion done", 0.5)
        return out


def converted_dir_name(gguf_path: Path) -> str:
    """The name of a GGUF file's converted copy under the cache's ``models/``: its stem and its fingerprint."""
    return f"{gguf_path.stem}-{file_fingerprint(gguf_path)}"


def _remove_abandoned_tmps(out: Path, min_age_s: float = 3600.0) -> None:
    """Remove temporary conversion folders of ``out`` left by killed conversions.

    Only folders untouched for ``min_age_s`` (a conversion takes about a minute) whose process
    is gone (or that an older version named plain ``.tmp``): a live conversion, even one of a
    process in another container sharing the cache, is never touched.
    """
    for p in out.parent.glob(f"{out.name}.tmp*"):
        try:
            if time.time() - p.stat().st_mtime < min_age_s:
                continue
        except OSError:
            continue
        parts = p.name[len(out.name):].split("-")  # ".tmp-<pid>-<random>", or ".tmp" of older versions
        if len(parts) == 3 and parts[1].isdigit():
            try:
                os.kill(int(parts[1]), 0)
                continue  # still running
            except ProcessLookupError:
                pass
            except OSError:  # alive, but someone else's
                continue
        shutil.rmtree(p, ignore_errors=True)


def _private_tmp(out: Path) -> Path:
    """A new, empty temporary folder next to ``out`` that no other process or thread uses."""
    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    tmp.mkdir(parents=True)
    return tmp


def publish_dir(tmp: Path, out: Path, *, marker: str = CONVERTED_MARKER) -> Path:
    """Move the finished folder ``tmp`` to ``out`` in one atomic rename, or discard it.

    ``out`` already complete (holds ``marker``: another process published first): ``tmp`` is
    removed and ``out`` kept. ``out`` present but incomplete (left by a crash): it is renamed
    aside and removed, then ``tmp`` published. Readers therefore only ever see a missing or a
    complete ``out``. Returns ``out``.
    """
    for _ in range(3):
        if (out / marker).exists():
            shutil.rmtree(tmp, ignore_errors=True)
            return out
        if out.exists():  # a stale, incomplete folder: move it out of the way atomically
            trash = out.with_name(f"{out.name}.stale-{os.getpid()}-{secrets.token_hex(4)}")
            try:
                out.rename(trash)
            except OSError:
                pass  # another process moved or completed it: look again
            else:
                shutil.rmtree(trash, ignore_errors=True)
            continue
        try:
            tmp.rename(out)  # atomic; fails if another process published in the meantime
            return out
        except OSError:
            if not out.exists():
                raise
    if (out / marker).exists():
        shutil.rmtree(tmp, ignore_errors=True)
        return out
    raise OSError(f"could not publish {tmp} as {out}")


@contextlib.contextmanager
def _gguf_parsed_once():
    """While a conversion runs (under ``_convert_lock``): the ``gguf`` library's file reader and tensor-name map
    made once per file and per architecture instead of at every call.

    transformers reads the GGUF file three times (tokenizer, config, weights), each time building a new
    ``gguf.GGUFReader``, which parses every field of the file element by element (the 49,152-token vocabulary and
    its merges: about 4 s each on a 2-core CPU), and it builds a new ``gguf.get_tensor_name_map`` for each of the
    model's ~400 modules. Both are pure functions of their arguments and their results are only read, so the
    conversion's files are the same byte for byte (compared, every file, when this was written; a fresh
    conversion then meets the known-sentence check and the golden outputs, as before); this halves its time.
    transformers imports both from ``gguf`` inside its functions, so replacing the module's attributes for the
    block reaches them; anything unexpected leaves the library as it was."""
    try:
        import gguf
    except ImportError:  # transformers says what is missing
        yield
        return
    saved = {n: getattr(gguf, n, None) for n in ("GGUFReader", "get_tensor_name_map")}
    if any(v is None for v in saved.values()):
        yield
        return
    readers: dict = {}

    def reader(path, *args, **kwargs):
        key = (str(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = saved["GGUFReader"](path, *args, **kwargs)
        return readers[key]

    gguf.GGUFReader = reader
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(saved["get_tensor_name_map"])
    try:
        yield
    finally:
        for n, v in saved.items():
            setattr(gguf, n, v)
        readers.clear()


def _convert_gguf(gguf_path: Path, folder: Path, progress: Progress = noop) -> None:
    """Read ``gguf_path`` with transformers and save it de-quantised (fp32 safetensors) into ``folder``.
    ``progress`` hears each step (building the tokenizer from the GGUF vocabulary is the slow one)."""
    import torch
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src, fname = str(gguf_path.parent), gguf_path.name
    # transformers' GGUF reader draws a plain tqdm bar of its own, outside its progress-bar switch
    try:
        reader = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
    except Exception:  # noqa: BLE001 - from_pretrained below says what is missing
        reader = None
    bar = getattr(reader, "tqdm", None)
    if bar is not None:
        reader.tqdm = functools.partial(bar, disable=True)
    try:
        with library_bars_off(), _gguf_parsed_once():  # progress tells these steps
            progress(f"converting {fname} once (about a minute; later loads take seconds): building its tokenizer",
                     0.05)
            tok = AutoTokenizer.from_pretrained(src, gguf_file=fname)
            progress(f"converting {fname} once (about a minute; later loads take seconds): de-quantising its weights",
                     0.25)
            model, loading_info = AutoModelForCausalLM.from_pretrained(src, gguf_file=fname, dtype=torch.float32,
                                                                       output_loading_info=True)
    except Exception as e:  # noqa: BLE001 - user-facing message
        raise ModelError(f"could not read GGUF file {gguf_path}: {first_line(e)}") from None
    finally:
        if bar is not None:
            reader.tqdm = bar
    check_loading_info(loading_info, gguf_path.name)  # a broken conversion is never published
    cfg = model.config
    if hasattr(cfg, "quantization_config"):
        try:
            delattr(cfg, "quantization_config")
        except AttributeError:
            pass
    cfg_dict = cfg.to_dict()
    cfg_dict.pop("quantization_config", None)
    cfg_dict["_name_or_path"] = str(gguf_path)
    cfg_dict["dtype"] = "float32"
    progress(f"converting {fname} once (about a minute; later loads take seconds): saving the converted copy", 0.4)
    (folder / "config.json").write_text(json.dumps(cfg_dict, indent=2))
    save_model(model, str(folder / "model.safetensors"))
    tok.save_pretrained(str(folder))
