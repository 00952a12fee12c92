"""What every command shares: the argument groups, one progress bar, note printing.

The groups keep flag names the same across commands (``--members``, ``--model``, ``--out``,
``--bootstrap``, ``--seed``, ``--quiet``...); a command asks for the groups it needs and
sets the defaults and help texts that differ (e.g. ``--out`` is ``mia_run`` for ``run`` and
``mia_mlm`` for ``mia``; ``mlm`` wants masked LMs, ``run`` causal ones).

* :func:`add_data_args`     members / non-members / labelled table / reading options
* :func:`add_model_args`    target, reference, precision, device, remote code
* :func:`add_output_args`   output folder, cache, bootstrap, seed
* :func:`add_progress_args` ``--quiet``
* :class:`ProgressBar`      the engine's ``progress(message, fraction)`` callback as a tqdm bar
* :class:`Parser`           argparse with one-line ``error: ...`` messages and exit code 2
* ``type=`` helpers         :func:`positive_int`, :func:`non_negative_int`, :func:`int_at_least`,
  :func:`fraction` (open interval), :func:`fraction_closed_right`, :func:`unit_interval_open_right`,
  :func:`positive_float`, :func:`non_negative_float`: a bad number (nan and inf included) is
  refused while the arguments are read; :func:`input_path` for the input files: a path the system
  cannot look up (a name longer than it allows...) is refused there too, in one line, shortened
* :func:`print_notes`, :func:`print_report` everything printed that comes from the user's data (file and
  book names, notes, the report) with its control characters escaped (:func:`mia_core.errors.safe_text`):
  a name cannot colour the terminal, set its title or forge a line
"""
from __future__ import annotations

import argparse
import contextlib
import math
import re
import sys
from typing import Iterable

from ..errors import MiaError, safe_text
from ..engines.options import EngineOptions
from ..options import BOOTSTRAP, SEED

DTYPE_CHOICES = ("auto", "fp32", "bf16", "fp16")
QUANTIZE_CHOICES = ("none", "int8", "int4")
TEXT_FORMATS = (".txt (one per line or blank-line paragraphs), .csv, .tsv, .jsonl, .json, .parquet, .arrow, .feather, "
                "a Hugging Face datasets folder (save_to_disk), .zip, or hf:ID[:config][@split] (a hub dataset's "
                "parquet conversion, e.g. hf:swj0419/WikiMIA:default@WikiMIA_length32; config defaults to default, "
                "split to train; offline: from the local Hugging Face cache only)")


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one ``error: ...`` line on stderr and exit code 2
    (argparse's default prints the usage and ``PROG: error: ...``). Sub-parsers get it too
    (``add_subparsers(parser_class=Parser)``)."""

    def error(self, message: str):  # noqa: D401 - argparse API
        """Print ``error: MESSAGE (see: PROG --help)`` on stderr, on one line with control characters escaped, and
        exit with code 2 (argparse's ``argument --x: must ...`` shortened to ``--x must ...``).
        """
        message = safe_text(" ".join(str(message).split()))
        # "argument --alpha: must be ..." (a type= helper below) -> "--alpha must be ..."
        m = re.match(r"argument (\S+): (must .*)$", message)
        if m:
            message = f"{m.group(1)} {m.group(2)}"
        print(f"error: {message} (see: {self.prog} --help)", file=sys.stderr)
        self.exit(2)


# ----------------------------------------------------------------------------- numbers
def _number(s: str, kind):
    try:
        v = kind(s)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(
            f"must be {'a whole number' if kind is int else 'a number'}, got {s!r}") from None
    if kind is float and not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {s!r}")
    return v


def option_type(options, name: str):
    """``type=`` for the flag of an audit option: its declared domain (``mia_core.options``) reads the text."""
    return domain_type(options.domain(name), name)


def domain_type(domain, name: str):
    """``type=`` for a flag whose values are a ``mia_core.options.Domain``'s (e.g. ``mia_core.options.SEED``)."""

    def parse(s: str):
        try:
            return domain.check(s, name)
        except MiaError:
            raise argparse.ArgumentTypeError(f"must be {domain.describe()}, got {s}") from None
    parse.__name__ = name
    return parse


def add_options(group, options, flags: dict[str, str], *, say_default: bool = True) -> None:
    """One flag per declared option of an audit (``{option name: flag}``; ``mia_core.options.Options``): its
    default, its help (with the default, unless the parser's formatter adds it: ``say_default=False``) and its
    check come from the option's field, so the command line states no limit of its own. The parsed value lands
    under the option's name."""
    for name, flag in flags.items():
        d, default = options.domain(name), options.default(name)
        shown = ("none" if default is None else ",".join(map(str, default)) if isinstance(default, (tuple, list))
                 else default)
        about = f": {d.describe()}" if d.kind == "parsed" else ""  # a list's form is not in its metavar
        kw = {"dest": name, "default": default,
              "help": options.help(name) + about + (f" (default {shown})" if say_default else ""),
              "metavar": flag.lstrip("-").upper().replace("-", "_")}
        if d.kind == "choice":
            kw["choices"] = list(d.choices)
            del kw["metavar"]
        else:
            kw["type"] = option_type(options, name)
        group.add_argument(flag, **kw)


def int_at_least(lo: int):
    """``type=`` for a whole number >= ``lo``."""
    def parse(s: str) -> int:
        v = _number(s, int)
        if v < lo:
            raise argparse.ArgumentTypeError(f"must be at least {lo} (a whole number), got {s}")
        return v
    parse.__name__ = f"int>={lo}"
    return parse


positive_int = int_at_least(1)
positive_int.__name__ = "positive_int"
non_negative_int = int_at_least(0)
non_negative_int.__name__ = "non_negative_int"


def positive_float(s: str) -> float:
    """``type=`` for a number > 0."""
    v = _number(s, float)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {s}")
    return v


def non_negative_float(s: str) -> float:
    """``type=`` for a finite number >= 0 (``float`` alone takes nan, inf and -1)."""
    v = _number(s, float)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {s}")
    return v


def fraction(s: str) -> float:
    """``type=`` for a fraction strictly between 0 and 1."""
    v = _number(s, float)
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"must be a fraction strictly between 0 and 1, got {s}")
    return v


def fraction_closed_right(s: str) -> float:
    """``type=`` for a fraction in (0, 1]."""
    v = _number(s, float)
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"must be a fraction > 0 and <= 1, got {s}")
    return v


def unit_interval_open_right(s: str) -> float:
    """``type=`` for a value in [0, 1) (e.g. a dropout rate)."""
    v = _number(s, float)
    if not 0 <= v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 0 and < 1, got {s}")
    return v


def input_path(s: str) -> str:
    """``type=`` for an input file or folder (``--members``, ``--suspect``...): a path the system cannot look
    up (a name longer than it allows, a folder on the way that cannot be searched) is refused while the arguments
    are read, one line with the path shortened; a missing file is left to the reader ("file not found"), an
    ``hf:`` spec to :mod:`mia_core.data.hub`."""
    from ..data.decoding import path_problem, shown_path

    if s.startswith("hf:"):
        return s
    why = path_problem(s)
    if why:
        raise argparse.ArgumentTypeError(f"must be a file or folder this system can open; {shown_path(s)}: {why}")
    return s


def refuse_data_with_demo(args) -> None:
    """``--demo`` brings its own members and non-members: refuse them given as well."""
    from ..errors import SettingsError

    if args.members or args.nonmembers or getattr(args, "labelled", None):
        raise SettingsError("--demo fills in the members and non-members; do not give them too")


def add_data_args(p: argparse.ArgumentParser, *, demo: str | None = None, population: str | None = None,
                  population_nargs: str | None = None, population_required: bool = False, mode: bool = True,
                  group_column: str | None = "group id column: also report group-level metrics (mean score per group)",
                  members_required: bool = False):
    """``--members``, ``--nonmembers``, ``--labelled`` [``--demo``] [``--population``], ``--mode``,
    ``--text-column``, ``--label-column`` [``--group-column``]."""
    d = p.add_argument_group("data")
    d.add_argument("--members", nargs="+", type=input_path, required=members_required,
                   help=f"member texts: {TEXT_FORMATS}")
    d.add_argument("--nonmembers", nargs="+", type=input_path, required=members_required,
                   help="non-member texts, same formats")
    if not members_required:
        d.add_argument("--labelled", type=input_path, help="one table with a label column (1 = member, 0 = non-member) instead of two "
                       "files: .csv, .tsv, .jsonl, .json, .parquet, .arrow, .feather, a Hugging Face datasets folder "
                       "(save_to_disk) or hf:ID[:config][@split]")
    if demo:
        d.add_argument("--demo", action="store_true", help=demo)
    if mode:
        d.add_argument("--mode", default="auto", choices=["auto", "lines", "blank"],
                       help=".txt reading: one text per line, or blank-line-separated paragraphs")
    d.add_argument("--text-column", help="text column of table input (.csv/.tsv/.jsonl/.json/.parquet/.arrow/.feather, "
                   "a datasets folder, hf:...; auto-detected)")
    if not members_required:
        d.add_argument("--label-column", default="label", help="label column of a --labelled table or hf: dataset")
    if group_column:
        d.add_argument("--group-column", help=group_column)
    if population:
        kw = {"nargs": population_nargs} if population_nargs else {}
        d.add_argument("--population", type=input_path, required=population_required,
                       help=f"{population} (same formats as --members)", **kw)
    return d


def add_model_args(p: argparse.ArgumentParser, *, model_help: str, model_default=None, model_required: bool = False,
                   reference_help: str | None = None, reference_required: bool = False, dtype_default: str = "auto",
                   dtype_help: str = "auto = bf16/fp16 on GPU, fp32 on CPU", quantize: bool = True,
                   quantize_help: str = "bitsandbytes quantisation of the target"):
    """``--model`` [``--reference``], ``--dtype`` [``--quantize``], ``--device``, ``--trust-remote-code``."""
    m = p.add_argument_group("models")
    m.add_argument("--model", default=model_default, required=model_required, help=model_help)
    if reference_help:
        m.add_argument("--reference", required=reference_required, help=reference_help)
    m.add_argument("--dtype", default=dtype_default, choices=DTYPE_CHOICES, help=dtype_help)
    if quantize:
        m.add_argument("--quantize", default="none", choices=QUANTIZE_CHOICES, help=quantize_help)
    m.add_argument("--device", default="auto",
                   help="auto: the GPUs when torch sees any, the model spread over all of them (accelerate's "
                        "device_map=auto; a model larger than one GPU loads), else the CPU; or cpu, cuda, cuda:1 ...")
    m.add_argument("--trust-remote-code", action="store_true",
                   help="allow custom model code from the hub (off by default: it runs code)")
    m.add_argument("--accept-weight-mismatch", action="store_true",
                   help="audit a model whose weights do not match its checkpoint (missing, unexpected or "
                        "mis-shaped weights; refused by default), recorded in the run's models, notes and report")
    return m


def add_engine_args(p: argparse.ArgumentParser):
    """``--engine`` ``--workers`` ``--gpus-per-worker`` ``--cpus-per-worker`` ``--ray-address``."""
    e = p.add_argument_group("engine (where the model passes run; it never changes a number)")
    # the declared options of where the passes run (mia_core.engines.options.EngineOptions)
    add_options(e, EngineOptions, {"engine": "--engine", "workers": "--workers", "gpus_per_worker": "--gpus-per-worker",
                                   "cpus_per_worker": "--cpus-per-worker", "ray_address": "--ray-address"})
    return e


_SESSION: list = []  # the ExitStack of the running command (engine_session)


@contextlib.contextmanager
def engine_session():
    """Around a command: an engine :func:`start_engine` started is used inside and closed after."""
    with contextlib.ExitStack() as stack:
        _SESSION.append(stack)
        try:
            yield
        finally:
            _SESSION.pop()


def start_engine(args):
    """The command's engine, from ``--engine`` and its options; after the cheap checks, before the models.
    Ray is started (or joined) here, so an unreachable cluster is a one-line error before any model loads."""
    from ..engines import LocalEngine, make_engine, use_engine

    if getattr(args, "engine", "local") == "local":
        return LocalEngine()
    eng = make_engine(args.engine, workers=args.workers, gpus_per_worker=args.gpus_per_worker,
                      cpus_per_worker=args.cpus_per_worker, address=args.ray_address)
    if _SESSION:
        _SESSION[-1].callback(eng.close)
        _SESSION[-1].enter_context(use_engine(eng))
    print(f"engine: {eng.describe()}", file=sys.stderr)
    return eng


def add_output_args(p: argparse.ArgumentParser, *, out_default=None, out_help: str = "output folder",
                    out_required: bool = False, cache: str | None = "do not read or write the statistics cache",
                    bootstrap: bool = True, seed_help: str | None = "seed for bootstrap, splits and sampling",
                    overwrite: str | None = "replace an existing non-empty --out folder (only once the new "
                                            "results are complete; without it such a folder is refused)"):
    """``--out`` [``--overwrite``] [``--no-cache``] [``--bootstrap``] [``--seed``]."""
    o = p.add_argument_group("output")
    o.add_argument("--out", default=out_default, required=out_required, help=out_help)
    if overwrite:
        o.add_argument("--overwrite", action="store_true", help=overwrite)
    if cache:
        o.add_argument("--no-cache", action="store_true", help=cache)
    if bootstrap:
        o.add_argument("--bootstrap", type=domain_type(BOOTSTRAP, "bootstrap"), default=1000,
                       help="bootstrap resamples for the CIs")
        o.add_argument("--n-bootstrap", type=domain_type(BOOTSTRAP, "bootstrap"), dest="bootstrap",
                       help=argparse.SUPPRESS)  # older spelling
    if seed_help:
        o.add_argument("--seed", type=domain_type(SEED, "seed"), default=0, help=seed_help)
    return o


def add_progress_args(p: argparse.ArgumentParser) -> None:
    """Add ``--quiet`` (no progress bar) to ``p``."""
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def print_notes(lines, prefix: str = "note") -> None:
    """Input notes (``Dataset.report``...) on stderr, one per line, control characters escaped."""
    for line in lines:
        print(f"{prefix}: {safe_text(line)}", file=sys.stderr)


def print_report(text: str, printed=()) -> None:
    """A result's report (``summary_text()``) on stdout: control characters escaped (a file or book name in it
    cannot print a terminal escape sequence; its line breaks are kept), without the ``note:`` lines of
    ``printed`` (the notes :func:`print_notes` already showed on stderr)."""
    from .quiet import without_printed_notes

    print(without_printed_notes(text, printed))


_COUNTED = re.compile(r"\s*\d+\s*/\s*\d+\b.*$")  # a stage's item count and what follows it


class ProgressBar:
    """The engine's ``progress(message, fraction)`` callback as a tqdm bar on stderr.

    A new bar starts whenever the stage (the message up to its first ``:``) changes; the rest
    of the message is shown after the bar. ``disable=True`` (``--quiet``) shows nothing.
    When stderr is not a terminal (a pipe, a log file, CI) there is no bar: one plain line per
    stage when it starts, then at most one every ``interval`` seconds (``$MIA_PROGRESS_INTERVAL``,
    default 30), and one when it ends. A stage that counts items ("document 3/40 (name)") is one
    stage for this: a document audit of 40 books printed a line per book. Use as a context manager,
    or call :meth:`close`.
    """

    def __init__(self, disable: bool = False, plain: bool | None = None, interval: float | None = None):
        import os

        self.disable = disable
        self._bar = None
        self._stage = None
        self.plain = (not _isatty(sys.stderr)) if plain is None else plain
        if interval is None:
            try:
                interval = float(os.environ.get("MIA_PROGRESS_INTERVAL", "30"))
            except ValueError:
                interval = 30.0
        self.interval = interval
        self._last = 0.0
        self._ended = False

    def _line(self, message: str, fraction: float) -> None:
        import time

        stage = message.split(":")[0]
        kind = _COUNTED.sub("", stage)  # "document 3/40 (name)" -> "document"
        now = time.monotonic()
        ended = fraction >= 1.0
        new = kind != self._stage
        if new or (ended and not self._ended) or (not ended and now - self._last >= self.interval):
            rest = message[len(stage) + 1:].strip()
            # one write with its newline: an interrupt between text and newline would glue the next line on
            sys.stderr.write(f"{stage}: {max(0.0, min(1.0, fraction)):4.0%}" + (f"  {rest}" if rest else "") + "\n")
            sys.stderr.flush()
            self._last = now
        if new:
            self._stage, self._ended = kind, False
        self._ended = self._ended or ended

    def __call__(self, message: str, fraction: float) -> None:
        if self.disable:
            return
        message = safe_text(message)  # a document or file name in it: no escape sequence, no line break
        if self.plain:
            self._line(message, fraction)
            return
        from tqdm import tqdm

        stage = message.split(":")[0]
        if self._bar is None or stage != self._stage:
            if self._bar is not None:
                self._bar.close()
            self._bar = tqdm(total=1000, desc=stage[:40], file=sys.stderr, leave=False,
                             bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed} {postfix}")
            self._stage = stage
        self._bar.n = int(max(0.0, min(1.0, fraction)) * 1000)
        self._bar.set_postfix_str(message[len(stage) + 1:].strip()[:60], refresh=False)
        self._bar.refresh()

    def close(self) -> None:
        """End the current bar, if any (plain lines need no closing)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def check_machine(args) -> None:
    """Before any model is loaded: the ``--device`` exists on this machine, and the cache folder
    (``$MIA_CACHE_DIR``) is usable unless ``--no-cache`` is given (:func:`mia_core.api.machine.check_machine`).
    One-line errors."""
    from ..api.machine import check_machine as check

    check(device=getattr(args, "device", None), cache=not getattr(args, "no_cache", False))


def parse_params(items: Iterable[str] | None, params: dict | None = None) -> dict:
    """``--param ATTACK.NAME=VALUE`` items into ``{attack: {name: value}}``: one reader for every command that
    takes ``--param`` (``mia run``, ``mia infer-dataset``).

    Parameters
    ----------
    items : iterable of str, optional
        The items, e.g. ``["min_k.k=0.1", "dc_pdd.corpus=FOLDER"]``.
    params : dict, optional
        Filled in place and returned (a new dict when None).

    Returns
    -------
    dict
        ``{attack: {name: value}}``, each value checked against the parameter's declared domain and coerced to
        its type.

    Raises
    ------
    SettingsError
        One line: an item not written ``ATTACK.NAME=VALUE``, an unknown attack or parameter, a value outside
        the domain.
    """
    from ..attacks import REGISTRY
    from ..errors import SettingsError

    params = {} if params is None else params
    for item in items or []:
        head, eq, value = item.partition("=")
        attack, dot, key = head.strip().partition(".")
        attack, key = attack.strip(), key.strip()
        if not eq or not dot or not attack or not key:
            raise SettingsError(f"--param {item!r}: write ATTACK.NAME=VALUE, e.g. --param min_k.k=0.1")
        if attack not in REGISTRY:
            raise SettingsError(f"--param {item!r}: unknown attack {attack!r}; choose from {', '.join(REGISTRY)}")
        a = REGISTRY[attack]
        if key not in a.params:
            known = ", ".join(a.params) or "none"
            raise SettingsError(f"--param {item!r}: {attack} has no parameter {key!r} (its parameters: {known})")
        params.setdefault(attack, {})[key] = a.domains[key].check(value, f"--param {attack}.{key}")
    return params
