"""Declared options: the values each setting may take, checked before any model loads.

Two kinds of settings use it. **An attack's parameters**: every attack module declares ``DOMAINS = {name: Domain}``
next to its ``DEFAULTS`` (one entry per parameter; :func:`mia_core.attacks.register` refuses an attack with an
undeclared parameter). **An audit's options**: an audit declares a frozen :class:`Options` dataclass whose fields
(:func:`option`) carry their default, their domain and their one-line help; its :meth:`Options.check` is the one
check of those options, and the CLI's flags, the pages' widget limits and the docs' tables are made from the fields.
This module sits low (it imports :mod:`mia_core.errors` and, when it shows a path, :mod:`mia_core.paths` and
:mod:`mia_core.data.decoding`), so every audit and front end can use it.

Domains are built with the constructors below:

* :func:`number`  a finite float, with bounds that are open or closed at each end;
* :func:`whole`   an integer, with a lower / upper bound and single extra values (SMIA's
  ``batch_texts``: 0 or >= 2);
* :func:`flag`    true or false;
* :func:`one_of`  one of a fixed set of words;
* :func:`text`    any string (optionally checked by a function, e.g. a neighbour generator spec);
* :func:`path`    a path: an existing regular file or folder to read (``"read"``), or a folder to
  write into (``"write"``); device files, FIFOs, sockets and anything under ``/dev``, ``/proc`` or
  ``/sys`` are refused; ``validate`` checks what it holds (DC-PDD's corpus: text, not an empty folder
  or a binary file), still before any model loads.

:meth:`Domain.check` takes a value as a Python caller, the page or the command line (a string)
gives it, and returns it coerced to the domain's type or raises ``SettingsError`` with one line
naming the parameter, the value and the domain ("rmia.gamma must be > 0 (a finite number), got
inf"); an input file that does not exist is a ``DataError`` ("... (not found)"), like every
other missing input. :func:`mia_core.attacks.check_params` applies the domains to a run's
``{attack: {name: value}}``; the CLI (``--param``), the pipeline (:func:`mia_core.pipeline.check_config`,
the first thing ``run_attacks`` does) and the calibration page (``dashboard.calibration.build_request``)
all call it. :func:`check_option` checks one audit option (``{name}`` in its message, as ``mia_core.errors``
asks).
"""
from __future__ import annotations

import math
import numbers
import os
import stat
import tempfile
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Callable

from .errors import DataError, SettingsError

MAX_BOOTSTRAP = 1_000_000  # n_bootstrap at most, every audit's (the CIs do not gain from more)
MAX_SEED = 2**32 - 1  # what numpy's legacy seeding and scikit-learn's random_state take: every seed's bound
NONE_WORDS = ("", "none")  # what a user types for "not given" (an optional parameter)
SPECIAL_ROOTS = ("/dev", "/proc", "/sys")  # never a parameter's file or folder


@dataclass(frozen=True)
class Domain:
    """The values one attack parameter or audit option may take; built by :func:`number`, :func:`whole`,
    :func:`flag`, :func:`one_of`, :func:`text`, :func:`path` and :func:`parsed`, never directly."""
    kind: str  # "float", "int", "bool", "choice", "text", "path", "parsed"
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    also: tuple = ()  # single values allowed outside the bounds (a context of 0, a split of 0)
    choices: tuple = ()
    optional: bool = False  # None (or "", "none") allowed: "not given" / "from a preset"
    words: tuple = ()  # further words that mean None (e.g. "all", "bundled")
    mode: str = ""  # paths: "read" (an existing file or folder) or "write" (a folder to write into)
    validate: Callable | None = None  # text, path: raises SettingsError / DataError on a bad value (message
    # prefixed with the name); a path's is called with the path given, once it passed the checks above
    what: str = ""  # text: the domain in words (default "any text")
    note: str = ""  # what the value means, for --list-params and the page's help

    # ------------------------------------------------------------------ description
    @property
    def type(self) -> type:
        """The Python type of a value (what the CLI and the page coerce to)."""
        return {"float": float, "int": int, "bool": bool}.get(self.kind, str)

    def bounds(self) -> str:
        """The range of a number, e.g. ``in (0, 1]``, ``> 0``, ``0 or >= 2``."""
        lo, hi = _fmt(self.lo), _fmt(self.hi)
        if self.lo is not None and self.hi is not None:
            r = f"in {'(' if self.lo_open else '['}{lo}, {hi}{')' if self.hi_open else ']'}"
        elif self.lo is not None:
            r = f"{'>' if self.lo_open else '>='} {lo}"
        elif self.hi is not None:
            r = f"{'<' if self.hi_open else '<='} {hi}"
        else:
            r = ""
        if self.also:
            r = " or ".join([*map(_fmt, self.also), *([r] if r else [])])
        return r

    def noun(self) -> str:
        """The kind of value in words: ``a whole number``, ``a number``, ``a finite number`` (unbounded),
        ``true or false``, ``text``; empty for choices and paths."""
        if self.kind == "int":
            return "a whole number"
        if self.kind == "float":
            return "a number" if self.lo is not None and self.hi is not None else "a finite number"
        return {"bool": "true or false", "text": "text"}.get(self.kind, "")

    def describe(self) -> str:
        """The domain in words, e.g. ``in (0, 1] (a number)``, ``>= 1 (a whole number), or none``."""
        if self.kind in ("float", "int"):
            b = self.bounds()
            d = f"{b} ({self.noun()})" if b else self.noun()
        elif self.kind == "choice":
            d = "one of " + ", ".join(map(str, self.choices))
        elif self.kind == "path":
            d = ("an existing file or folder (no device, no /dev, /proc or /sys path)" if self.mode == "read"
                 else "a folder it can write into (no file, no device, no /dev, /proc or /sys path)")
        elif self.kind == "bool":
            d = "true or false"
        else:
            d = self.what or "any text"
        if self.optional:
            d += ", or " + " / ".join(["none", *self.words])
        return d

    # ------------------------------------------------------------------ the check
    def check(self, value, where: str):
        """``value`` coerced to this domain, or ``SettingsError`` (``DataError`` for an input file
        that is not there) naming ``where`` (e.g. ``rmia.gamma`` or ``--param rmia.gamma``)."""
        if self.optional and _is_none(value, self.words, empty=self.kind != "text"):  # "" is a text
            return None
        if self.kind == "parsed":  # a list, pairs, a bool or a mapping: the declared function reads it
            return self.validate(value, where)
        if value is None:
            raise SettingsError(f"{where} must be {self.describe()}, got None")
        if self.kind == "float":
            return self._number(value, where)
        if self.kind == "int":
            return self._whole(value, where)
        if self.kind == "bool":
            return _bool(value, where)
        if self.kind == "choice":
            v = value.strip() if isinstance(value, str) else value
            if v not in self.choices:
                raise SettingsError(f"{where} must be {self.describe()}, got {_shown(value)}")
            return v
        if not isinstance(value, str):
            raise SettingsError(f"{where} must be {self.describe()} (a string), got {_shown(value)}")
        if self.kind == "path":
            raw = _path(value, where, self)
            if self.validate is not None:
                try:
                    self.validate(raw)
                except (DataError, SettingsError) as e:
                    raise type(e)(f"{where}: {e.template}", options=e.options) from None
            return raw
        if self.validate is not None:
            try:
                self.validate(value)
            except SettingsError as e:
                raise SettingsError(f"{where}: {e}") from None
        return value

    def _number(self, value, where: str) -> float:
        v = _as_float(value)
        if v is None:
            raise SettingsError(f"{where}: expected {self.noun()} {self.bounds()}, got {_shown(value)}".replace("  ", " "))
        if not (math.isfinite(v) and (v in self.also or self._in_range(v))):
            raise SettingsError(f"{where} must be {self.describe()}, got {_shown(value)}")
        return v

    def _whole(self, value, where: str) -> int:
        v = _as_float(value)
        if v is None or (math.isfinite(v) and not float(v).is_integer()):
            raise SettingsError(f"{where}: expected {self.noun()} {self.bounds()}, got {_shown(value)}".replace("  ", " "))
        if not math.isfinite(v):
            raise SettingsError(f"{where} must be {self.describe()}, got {_shown(value)}")
        n = int(value) if isinstance(value, numbers.Integral) else int(v)
        if n in self.also:
            return n
        if not self._in_range(n):
            raise SettingsError(f"{where} must be {self.describe()}, got {_shown(value)}")
        return n

    def _in_range(self, v) -> bool:
        if self.lo is not None and (v <= self.lo if self.lo_open else v < self.lo):
            return False
        if self.hi is not None and (v >= self.hi if self.hi_open else v > self.hi):
            return False
        return True


# ---------------------------------------------------------------------------- constructors
def number(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False, hi_open: bool = False,
           also: tuple = (), optional: bool = False, words: tuple = (), note: str = "") -> Domain:
    """A finite number in [lo, hi] (each end open or closed; None: unbounded on that side), or one of ``also``
    (a split of 0: none); with ``optional``, None or one of ``words`` (e.g. "auto") means "not given"."""
    return Domain("float", lo, hi, lo_open, hi_open, also=tuple(also), optional=optional, words=tuple(words),
                  note=note)


def whole(lo: int | None = None, hi: int | None = None, *, also: tuple = (), optional: bool = False,
          words: tuple = (), note: str = "") -> Domain:
    """A whole number in [lo, hi], or one of ``also``."""
    return Domain("int", lo, hi, also=tuple(also), optional=optional, words=tuple(words), note=note)


def flag(*, optional: bool = False, note: str = "") -> Domain:
    """True or false (also ``1/0``, ``yes/no``, ``on/off`` as text)."""
    return Domain("bool", optional=optional, note=note)


def one_of(*choices: str, note: str = "") -> Domain:
    """One of the words ``choices``."""
    return Domain("choice", choices=tuple(choices), note=note)


def text(*, optional: bool = False, validate: Callable | None = None, what: str = "", note: str = "") -> Domain:
    """A string; ``validate(value)`` raises ``SettingsError`` for a bad one; ``what``: the domain in
    words when there is a ``validate``."""
    return Domain("text", optional=optional, validate=validate, what=what, note=note)


def parsed(read: Callable, what: str, *, optional: bool = False, note: str = "") -> Domain:
    """A value that is not one number, flag or word (a list of lengths, of names, of pairs): ``read(value, where)``
    returns it coerced, or raises ``SettingsError`` whose line names ``where``; ``what`` says the domain in words."""
    return Domain("parsed", validate=read, what=what, optional=optional, note=note)


def path(mode: str, *, optional: bool = True, words: tuple = (), validate: Callable | None = None,
         note: str = "") -> Domain:
    """A path to read (``"read"``: an existing regular file or folder) or a folder to write into
    (``"write"``); ``validate(path)`` raises ``DataError`` / ``SettingsError`` when what it holds cannot be
    used (checked with the parameters, before any model loads)."""
    if mode not in ("read", "write"):
        raise ValueError(mode)
    return Domain("path", mode=mode, optional=optional, words=tuple(words), validate=validate, note=note)


# ---------------------------------------------------------------------------- domains every audit shares
SEED = whole(0, MAX_SEED, note="a seed (numpy's legacy seeding and scikit-learn's random_state take these)")
BOOTSTRAP = whole(0, MAX_BOOTSTRAP, note="bootstrap resamples (0: none; the CIs do not gain from more)")


# ---------------------------------------------------------------------------- helpers
def _fmt(v) -> str:
    if v is None:
        return ""
    return f"{v:g}" if isinstance(v, float) else str(v)


def _shown(value) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _is_none(value, words: tuple = (), empty: bool = True) -> bool:
    if value is None:
        return True
    if not isinstance(value, str) or (not empty and value == ""):
        return False
    return value.strip().lower() in (*NONE_WORDS, *words)


def _as_float(value) -> float | None:
    """A number from a number or a string; None when it is neither (bools are not numbers here)."""
    if isinstance(value, bool) or (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") == "b"):
        return None
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _bool(value, where: str) -> bool:
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("1", "true", "yes", "on"):
            return True
        if v in ("0", "false", "no", "off"):
            return False
    elif isinstance(value, bool) or (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") == "b"):
        return bool(value)
    elif isinstance(value, numbers.Integral) and int(value) in (0, 1):
        return bool(value)
    raise SettingsError(f"{where}: expected true or false, got {_shown(value)}")


def special_reason(p: Path) -> str | None:
    """Why ``p`` may not be a parameter's file or folder (a device, a FIFO, a socket, under
    /dev, /proc or /sys), or None. Only ``stat`` is called: nothing is opened."""
    for q in (p, _resolved(p)):
        if q is None:
            continue
        s = str(q)
        for root in SPECIAL_ROOTS:
            if s == root or s.startswith(root + "/"):
                kind = _kind(p)
                return f"{kind}, under {root}" if kind else f"under {root}"
    kind = _kind(p)
    return kind


def _resolved(p: Path) -> Path | None:
    try:
        return p.resolve()
    except (OSError, RuntimeError):
        return None


def _kind(p: Path) -> str | None:
    """'a character device', 'a FIFO'... for a special file; None for a regular file, a folder or
    a path that is not there."""
    from .paths import file_kind

    try:
        kind = file_kind(p.stat().st_mode)
    except OSError:
        return None
    return None if kind in ("a regular file", "a folder") else kind


def _nearest_existing(p: Path) -> Path:
    q = p
    while not (q.exists() or q.is_symlink()) and q.parent != q:
        q = q.parent
    return q


def _path(value: str, where: str, d: Domain) -> str:
    raw = value.strip()
    shown = _short_repr(raw)  # a path of thousands of characters is shown shortened
    if "\x00" in raw:
        raise SettingsError(f"{where} must be {d.describe()}, got {shown} (it holds a NUL character)")
    p = Path(raw).expanduser()
    try:
        p = p.absolute()
    except OSError as e:
        raise SettingsError(f"{where} must be {d.describe()}, got {shown} ({e.strerror or e})") from None
    bad = special_reason(p)
    if bad:
        raise SettingsError(f"{where} must be {d.describe()}, got {shown} ({bad})")
    if d.mode == "read":
        try:
            mode = p.stat().st_mode
        except FileNotFoundError:
            raise DataError(f"{where} must be {d.describe()}, got {shown} (not found)") from None
        except OSError as e:
            raise SettingsError(f"{where} must be {d.describe()}, got {shown} ({e.strerror or e})") from None
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # pragma: no cover - special_reason caught it
            raise SettingsError(f"{where} must be {d.describe()}, got {shown} (not a regular file)")
        if not os.access(p, os.R_OK):
            raise SettingsError(f"{where} must be {d.describe()}, got {shown} (not readable)")
        return raw
    # a folder to write into: an existing folder, or a new one whose nearest existing parent takes it
    where_to = p
    try:
        if p.exists() or p.is_symlink():
            if not p.is_dir():
                raise SettingsError(f"{where} must be {d.describe()}, got {shown} (exists and is not a folder)")
            where_to = p
        else:
            where_to = _nearest_existing(p.parent)
            if not where_to.is_dir():
                raise SettingsError(f"{where} must be {d.describe()}, got {shown} ({where_to} is not a folder)")
        # the one sure test: make (and remove) a folder there
        os.rmdir(tempfile.mkdtemp(prefix=".mia-check-", dir=where_to))
    except OSError as e:
        raise SettingsError(f"{where} must be {d.describe()}, got {shown} (cannot write in "
                            f"{_short_path(where_to)}: {e.strerror or e})") from None
    return raw


def _short_repr(raw: str) -> str:
    """``raw`` as messages show it: its ``repr``, or, past 120 characters, shortened in the middle."""
    from .data.decoding import SHOWN_PATH_CHARS

    return repr(raw) if len(raw) <= SHOWN_PATH_CHARS else f"'{_short_path(raw)}'"


def _short_path(p) -> str:
    from .data.decoding import shown_path

    return shown_path(p)


def check_values(attack: str, domains: dict, params: dict, *, prefix: str = "") -> dict:
    """``params`` (one attack's ``{name: value}``) checked against ``domains`` and coerced; a name
    without a domain is refused. ``prefix`` goes before ``attack.name`` in messages (``"--param "``)."""
    out = {}
    for name, value in params.items():
        if name not in domains:
            known = ", ".join(domains) or "none"
            raise SettingsError(f"{prefix}{attack}: no parameter {name!r} (its parameters: {known})")
        out[name] = domains[name].check(value, f"{prefix}{attack}.{name}")
    return out


# ---------------------------------------------------------------------------- declared options of an audit
def option(default, domain: Domain, help: str):
    """A field of an :class:`Options` dataclass: its default, its :class:`Domain` and its one-line help (the CLI's
    ``--help``, the page's tooltip, the docs' option table).

    Parameters
    ----------
    default
        The value when none is given.
    domain : Domain
        The values it may take.
    help : str
        What it means, in one line.

    Returns
    -------
    dataclasses.Field
    """
    return field(default=default, metadata={"domain": domain, "help": help})


def check_option(name: str, domain: Domain, value, *, strict: bool = True):
    """``value`` checked against ``domain``, named ``{name}`` in the one-line ``SettingsError`` (each front end words
    it: a flag, a widget label, a parameter name). ``strict`` (a Python caller): a number or a flag must be given
    as one, not as text (the command line's strings are coerced by the domain itself).

    Parameters
    ----------
    name : str
        The option's API name.
    domain : Domain
        Its domain.
    value
        The value given.
    strict : bool
        Refuse text for numbers and flags.

    Returns
    -------
    object
        The value, coerced to the domain's type.
    """
    where = "{" + name + "}"
    if strict and domain.kind in ("int", "float", "bool") and isinstance(value, (str, bytes)) and not (
            domain.optional and value is None):
        raise SettingsError(f"{where} must be {domain.describe()}, got {_shown(value)} (text)", options=(name,))
    try:
        return domain.check(value, where)
    except (SettingsError, DataError) as e:
        raise type(e)(e.template, options=(*e.options, name)) from None


def widget_limits(d: Domain) -> dict:
    """``min_value`` / ``max_value`` of a number widget for a value of domain ``d`` (an audit's option, an attack's
    parameter): its bounds (an open end moves in by a ten-thousandth of the range, at most of 1: 1e-4; a single value
    allowed outside the bounds, such as a context of 0 for the model's own, widens them to it), whole numbers for a
    whole-number domain; no key for an end without a bound."""
    out = {}
    span = min((d.hi - d.lo) if d.lo is not None and d.hi is not None else 1.0, 1.0)  # a wide range: still 1e-4
    if d.lo is not None:
        out["min_value"] = (d.lo + span * 1e-4 if d.lo_open else d.lo)
    if d.hi is not None:
        out["max_value"] = (d.hi - span * 1e-4 if d.hi_open else d.hi)
    for v in d.also:  # single values outside the bounds (a context of 0: the model's own) stay reachable
        if "min_value" in out and v < out["min_value"]:
            out["min_value"] = v
        if "max_value" in out and v > out["max_value"]:
            out["max_value"] = v
    if d.kind == "int":
        return {k: int(v) for k, v in out.items()}
    return {k: float(v) for k, v in out.items()}


class Options:
    """The declared options of one audit: subclass it as a frozen dataclass whose fields are :func:`option`\\ s.

    :meth:`check` is the one check of those options, whoever gives them (the API's ``prepare_*``, the CLI's flags,
    a page's widgets); the CLI's flags (:func:`mia_core.cli.common.add_options`), the pages' widget limits
    (:meth:`widget_limits`) and the docs' option tables (:meth:`table`) are made from the same fields, so no
    limit is written twice.
    """

    @classmethod
    def declared(cls) -> dict:
        """``{name: dataclasses.Field}`` of the options, in their order."""
        return {f.name: f for f in fields(cls) if "domain" in f.metadata}

    @classmethod
    def domain(cls, name: str) -> Domain:
        """The :class:`Domain` of option ``name``."""
        return cls.declared()[name].metadata["domain"]

    @classmethod
    def help(cls, name: str) -> str:
        """The one-line help of option ``name``."""
        return cls.declared()[name].metadata["help"]

    @classmethod
    def default(cls, name: str):
        """The default of option ``name``."""
        return cls.declared()[name].default

    @classmethod
    def check(cls, *, strict: bool = True, caller: str = "", **values):
        """An instance from ``values`` (the others at their defaults), each checked against its domain.

        Parameters
        ----------
        strict : bool
            Refuse text for numbers and flags (a Python caller); False for text from a command line.
        caller : str
            The function given the values, named in the line that refuses an unknown one (``prepare_documents``).
        **values
            Option values by name.

        Returns
        -------
        Options

        Raises
        ------
        SettingsError
            One line naming the option: an unknown name, or a value outside its domain.
        """
        declared = cls.declared()
        for name in values:
            if name not in declared:
                raise SettingsError(f"{caller + '() has ' if caller else ''}no setting {name!r}: the settings are "
                                    f"{', '.join(declared)}")
        return cls(**{n: check_option(n, f.metadata["domain"], values[n], strict=strict) if n in values else f.default
                      for n, f in declared.items()})

    @classmethod
    def check_some(cls, *, strict: bool = True, **values) -> dict:
        """Only the given options checked (an engine function's own guard, with the same domains)."""
        return {n: check_option(n, cls.domain(n), v, strict=strict) for n, v in values.items()}

    @classmethod
    def widget_limits(cls, name: str) -> dict:
        """``min_value`` / ``max_value`` of a number widget for option ``name`` (:func:`widget_limits`)."""
        return widget_limits(cls.domain(name))

    @classmethod
    def table(cls) -> str:
        """The options as a Markdown table (name, default, values, meaning), for the docs."""
        rows = ["| option | default | values | meaning |", "|---|---|---|---|"]
        for n, f in cls.declared().items():
            rows.append(f"| `{n}` | `{f.default!r}` | {f.metadata['domain'].describe()} | {f.metadata['help']} |")
        return "\n".join(rows)

    def as_dict(self) -> dict:
        """``{name: value}`` of the options."""
        return {n: getattr(self, n) for n in self.declared()}
