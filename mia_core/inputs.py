"""The ground floor of input checks, shared by the Python API (``mia_core.api``) and the audit registry
(``mia_core.audits``): every public function checks its arguments with these before it reads a file or loads a
model. A wrong type or value is one :class:`~mia_core.errors.SettingsError` (a setting) or
:class:`~mia_core.errors.DataError` (texts) line naming the parameter, written ``{name}`` with the name in
``options`` (``mia_core.errors``: each front end words it its own way).

Public names (no package takes another's private ones): :func:`check_texts`, :func:`check_documents`,
:func:`check_model_spec`, :func:`check_device`, :func:`check_dtype`, :func:`check_flag`, :func:`check_choice`,
:func:`check_number`, :func:`check_column`, :func:`check_names`, :func:`check_mapping`, :func:`check_sequence`,
:func:`check_callable`, :func:`check_path_or_frame`, :func:`check_kwargs`, :func:`check_request`,
:func:`checked_model` (a spec loaded, or a loaded model passed through),
:func:`bad_value` and :func:`shown_value` (the one-line error and how a value is shown in it),
:func:`noop_progress`.
"""
from __future__ import annotations

import inspect
import math
import numbers
import os
from collections.abc import Iterable, Mapping
from typing import Sequence

from .errors import DataError, SettingsError, safe_text


def shown_value(value, limit: int = 60) -> str:
    """A value as a message shows it: a short repr for a plain value, "a DataFrame" / "a list" otherwise."""
    if value is None or isinstance(value, (bool, numbers.Number, str, bytes)):
        try:
            s = safe_text(repr(value))
        except ValueError:  # an integer past Python's digit limit for str()
            return "a whole number of more than 4,000 digits"
        return s if len(s) <= limit else s[: limit - 1] + "…"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def bad_value(name: str, want: str, value, cls=SettingsError):
    """The one-line error for parameter ``name``: it must be ``want``, and what it got (``cls``: SettingsError, or
    DataError for texts)."""
    return cls(f"{{{name}}} must be {want}, got {shown_value(value)}", options=(name,))


def _range(noun: str, lo=None, hi=None, *, lo_open: bool = False, hi_open: bool = False) -> str:
    def f(v):
        return f"{v:,}" if isinstance(v, int) else f"{v:g}"

    if lo is not None and hi is not None:
        return f"{noun} in {'(' if lo_open else '['}{f(lo)}, {f(hi)}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{noun} {'>' if lo_open else '>='} {f(lo)}"
    if hi is not None:
        return f"{noun} {'<' if hi_open else '<='} {f(hi)}"
    return noun


def check_number(name: str, value, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
                 hi_open: bool = False, optional: bool = False):
    """A finite number in the range (each end open or closed); None with ``optional``."""
    if value is None and optional:
        return None
    want = _range("a finite number", lo, hi, lo_open=lo_open, hi_open=hi_open) + (", or None" if optional else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise bad_value(name, want, value)
    try:
        v = float(value)
    except (OverflowError, ValueError):
        raise bad_value(name, want, value) from None
    if not math.isfinite(v) or (lo is not None and (v <= lo if lo_open else v < lo)) or (
            hi is not None and (v >= hi if hi_open else v > hi)):
        raise bad_value(name, want, value)
    return v


def check_flag(name: str, value, *, optional: bool = False):
    """``value`` as a bool (Python's or numpy's; None where ``optional``), else one line."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or type(value).__name__ == "bool_":  # numpy's too
        return bool(value)
    raise bad_value(name, "True or False" + (" or None" if optional else ""), value)


def check_choice(name: str, value, choices: Sequence[str]) -> str:
    """One of ``choices`` (case and surrounding spaces ignored); returns it as written in ``choices``."""
    if isinstance(value, str) and value.strip().lower() in choices:
        return value.strip().lower()
    raise bad_value(name, "one of " + ", ".join(choices), value)


def check_mapping(name: str, value) -> dict:
    """A mapping (None: empty), e.g. ``params`` = ``{attack: {name: value}}``."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    raise bad_value(name, "a mapping" + (" {attack: {name: value}}" if name == "params" else ""), value)


def check_names(name: str, value, *, optional: bool = True):
    """Names: a comma list (a string) or a list of strings; None with ``optional`` (the default)."""
    if value is None and optional:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, Iterable) and not isinstance(value, (Mapping, bytes, bytearray)):
        items = list(value)
        for i, x in enumerate(items):
            if not isinstance(x, str):
                raise SettingsError(f"{{{name}}}[{i}] must be a name (a string), got {shown_value(x)}", options=(name,))
        return items
    raise bad_value(name, "a comma list or a list of names (strings)", value)


def check_request(value, cls: type, prepare: str):
    """``value`` itself when it is a ``cls`` (what ``prepare()`` returns), else one line naming ``request``."""
    if not isinstance(value, cls):
        raise bad_value("request", f"a {cls.__name__}, as {prepare}() returns it", value)
    return value


def check_column(name: str, value, *, optional: bool = True):
    """A column name: a non-empty string (None where ``optional``), else one line."""
    if value is None and optional:
        return None
    if isinstance(value, str) and value.strip():
        return value
    raise bad_value(name, "a column name (a non-empty string)" + (" or None" if optional else ""), value)


def check_callable(name: str, value):
    """A function (a progress callback...) or None, else one line."""
    if value is None or callable(value):
        return value
    raise bad_value(name, "a function or None", value)


def check_device(value, name: str = "device") -> str:
    """``auto``, ``cpu``, ``cuda``, ``cuda:N``, ``mps`` or ``xpu`` (whether this machine has it is checked when
    a model loads)."""
    import re

    from .models.device import DEVICE_HELP

    if isinstance(value, str) and (value.strip().lower() in ("", "auto")
                                   or re.fullmatch(r"(cpu|cuda|mps|xpu)(:\d+)?", value.strip().lower())):
        return value
    raise bad_value(name, DEVICE_HELP, value)


def check_dtype(value, name: str = "dtype") -> str:
    """One of the precisions a model loads in (:data:`mia_core.models.device.DTYPES`), else one line."""
    from .models.device import DTYPES

    return check_choice(name, value, DTYPES)


def check_model_spec(name: str, value, *, optional: bool = True, masked: bool = False):
    """A model spec (a hub id, a local folder or file, ``"smollm2"``) or a loaded model; None with ``optional``."""
    if value is None and optional:
        return None
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, os.PathLike):
        return value
    if not isinstance(value, (str, bytes, numbers.Number)) and value is not None:
        if masked:
            from .models import MaskedLM as Loaded
        else:
            from .models import LoadedModel as Loaded
        if isinstance(value, Loaded):
            return value
    want = ("a hub id, a local folder or a loaded MaskedLM" if masked
            else "a hub id, a local folder or file, 'smollm2' or a loaded model (LoadedModel)")
    raise bad_value(name, want + (", or None" if optional else ""), value)


def check_path_or_frame(name: str, value):
    """A file path, an ``hf:`` spec, a list of paths, or a pandas DataFrame (``labelled``)."""
    from .data.sets import is_frame

    if value is None or is_frame(value) or isinstance(value, (str, os.PathLike)):
        return value
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (str, os.PathLike)) for v in value):
        return value
    raise bad_value(name, "a file path, an hf:ID[:config][@split] spec, a list of paths or a pandas DataFrame", value,
                    DataError)


def check_sequence(name: str, value, *, optional: bool = True):
    """A list of values (ids, groups): not a string, not a mapping."""
    if value is None and optional:
        return None
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes, bytearray, Mapping)):
        return list(value)
    raise bad_value(name, "a list" + (" or None" if optional else ""), value)


def check_kwargs(func: str, target, kwargs: dict, checks: dict, *, skip: Sequence[str] = ()) -> dict:
    """``kwargs`` for ``target``: an unknown keyword is one line (before any model loads), each known one
    checked by ``checks[name]``."""
    known = [p for p in inspect.signature(target).parameters if p not in skip]
    for k in kwargs:
        if k not in known:
            raise SettingsError(f"{func}() has no keyword {safe_text(k)!r}; it takes {', '.join(known)}")
    return {k: checks[k](v) if k in checks else v for k, v in kwargs.items()}


def check_texts(value, name: str, *, text_column: str | None = None) -> list[str]:
    """The texts given as ``name``: a list (or any iterable) of strings, a file path or ``hf:`` spec (read as
    ``mia run`` reads a file), or a pandas DataFrame / Series (read by its text column, found as in a .csv file
    or named by ``text_column``). None: no texts. Anything else, or a list holding a non-string, is one
    ``DataError`` line naming ``name`` (and the position)."""
    from .data.sets import _shown_path, is_frame, path_exists, read_frame, read_texts
    from .data.hub import is_hub_spec

    if value is None:
        return []
    if is_frame(value):
        kind = "DataFrame" if hasattr(value, "columns") else "Series"
        return [r.text for r in read_frame(value, name=f"{name} (a {kind})", text_column=text_column)]
    if isinstance(value, (str, os.PathLike)):
        if isinstance(value, str) and not is_hub_spec(value) and not path_exists(value):
            raise DataError(f"{{{name}}}: no file or folder named {_shown_path(value)!r} (a string is read as a "
                            f"file path or an hf:ID spec; to give texts, pass a list of strings)", options=(name,))
        return [r.text for r in read_texts(value, text_column=text_column)]
    if isinstance(value, (bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise DataError(f"{{{name}}} must be texts: give texts (a list of strings), a file path or a pandas DataFrame "
                        f"with a text column; got {shown_value(value)}", options=(name,))
    items = list(value)  # once: a generator is read here, not exhausted by the check below
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise DataError(f"{{{name}}}[{i}] is {shown_value(t)}, not a text: give texts (strings), a file path or a "
                            "pandas DataFrame with a text column", options=(name,))
    return [str(t) for t in items]  # numpy's str_ as str


def check_documents(items, what: str, *, text_column: str | None = None):
    """Books: Documents, texts, or paths of files / folders (all of one kind), or a DataFrame's text column."""
    from .data.sets import _shown_path, is_frame, path_exists
    from .documents import Document, load_documents

    if is_frame(items):
        return [Document(name=f"{what[0]}{i + 1:04d}", text=t, source=f"{what} row {i + 1}", strip={})
                for i, t in enumerate(check_texts(items, what, text_column=text_column))]
    if isinstance(items, (str, os.PathLike)):
        if not path_exists(items):
            raise DataError(f"{{{what}}}: no file or folder named {_shown_path(items)!r} (a string is read as a "
                            "path; to give the books' texts, pass a list of strings)", options=(what,))
        items = [items]
    elif items is None or isinstance(items, (bytes, bytearray, Mapping)) or not isinstance(items, Iterable):
        raise DataError(f"{{{what}}} must be books: Documents, texts (strings) or paths of files or folders, in a "
                        f"list; got {shown_value(items)}", options=(what,))
    items = list(items)
    for i, d in enumerate(items):
        if not isinstance(d, (Document, str, os.PathLike)):
            raise DataError(f"{{{what}}}[{i}] is {shown_value(d)}, not a book: give Documents, texts (strings) or paths",
                            options=(what,))
    if all(isinstance(d, Document) for d in items):
        return items
    if any(isinstance(d, Document) for d in items):
        i = next(i for i, d in enumerate(items) if not isinstance(d, Document))
        raise DataError(f"{{{what}}}[{i}] is not a Document while others are: give all Documents, all texts or all "
                        "paths", options=(what,))
    exists = [path_exists(d) for d in items]
    if all(exists):
        return load_documents([os.fspath(d) for d in items])
    missing = next(i for i, e in enumerate(exists) if not e)
    if any(exists) or isinstance(items[missing], os.PathLike):
        raise DataError(f"{{{what}}}[{missing}]: no file or folder named {_shown_path(items[missing])!r} (give all "
                        "paths or all texts)", options=(what,))
    return [Document(name=f"{what[0]}{i + 1:04d}", text=t, source=f"{what} text {i + 1}", strip={})
            for i, t in enumerate(items)]


def checked_model(spec, *, dtype: str = "auto", device: str = "auto", quantize: str = "none",
                  trust_remote_code: bool = False):
    """A loaded causal LM from a spec (None: the embedded default), or the model itself."""
    from .models import LoadedModel, load_causal_lm

    if isinstance(spec, LoadedModel):
        return spec
    return load_causal_lm(spec, dtype=dtype, device=device, quantize=quantize, trust_remote_code=trust_remote_code)


def noop_progress():
    """The progress callback that reports nothing (a caller that gave none)."""
    from .progress import noop

    return noop
