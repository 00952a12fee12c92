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
"""
from __future__ import annotations

import argparse
import sys

DTYPE_CHOICES = ("auto", "fp32", "bf16", "fp16")
QUANTIZE_CHOICES = ("none", "int8", "int4")
TEXT_FORMATS = ".txt (one per line or blank-line paragraphs), .csv, .tsv, .jsonl, .json or .zip"


def add_data_args(p: argparse.ArgumentParser, *, demo: str | None = None, population: str | None = None,
                  population_nargs: str | None = None, population_required: bool = False, mode: bool = True,
                  group_column: str | None = "group id column: also report group-level metrics (mean score per group)",
                  members_required: bool = False):
    """``--members``, ``--nonmembers``, ``--labelled`` [``--demo``] [``--population``], ``--mode``,
    ``--text-column``, ``--label-column`` [``--group-column``]."""
    d = p.add_argument_group("data")
    d.add_argument("--members", nargs="+", required=members_required, help=f"member texts: {TEXT_FORMATS}")
    d.add_argument("--nonmembers", nargs="+", required=members_required, help="non-member texts, same formats")
    if not members_required:
        d.add_argument("--labelled", help="one table with a label column (1 = member, 0 = non-member) instead of two files")
    if demo:
        d.add_argument("--demo", action="store_true", help=demo)
    if mode:
        d.add_argument("--mode", default="auto", choices=["auto", "lines", "blank"],
                       help=".txt reading: one text per line, or blank-line-separated paragraphs")
    d.add_argument("--text-column", help="text column of .csv/.tsv/.jsonl/.json input (auto-detected)")
    if not members_required:
        d.add_argument("--label-column", default="label", help="label column of a --labelled table")
    if group_column:
        d.add_argument("--group-column", help=group_column)
    if population:
        kw = {"nargs": population_nargs} if population_nargs else {}
        d.add_argument("--population", required=population_required, help=population, **kw)
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
    m.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1 ...")
    m.add_argument("--trust-remote-code", action="store_true",
                   help="allow custom model code from the hub (off by default: it runs code)")
    return m


def add_output_args(p: argparse.ArgumentParser, *, out_default=None, out_help: str = "output folder",
                    out_required: bool = False, cache: str | None = "do not read or write the statistics cache",
                    bootstrap: bool = True, seed_help: str | None = "seed for bootstrap, splits and sampling"):
    """``--out`` [``--no-cache``] [``--bootstrap``] [``--seed``]."""
    o = p.add_argument_group("output")
    o.add_argument("--out", default=out_default, required=out_required, help=out_help)
    if cache:
        o.add_argument("--no-cache", action="store_true", help=cache)
    if bootstrap:
        o.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the CIs")
        o.add_argument("--n-bootstrap", type=int, dest="bootstrap", help=argparse.SUPPRESS)  # older spelling
    if seed_help:
        o.add_argument("--seed", type=int, default=0, help=seed_help)
    return o


def add_progress_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def print_notes(lines, prefix: str = "note") -> None:
    """Input notes (``Dataset.report``...) on stderr, one per line."""
    for line in lines:
        print(f"{prefix}: {line}", file=sys.stderr)


class ProgressBar:
    """The engine's ``progress(message, fraction)`` callback as a tqdm bar on stderr.

    A new bar starts whenever the stage (the message up to its first ``:``) changes; the rest
    of the message is shown after the bar. ``disable=True`` (``--quiet``) shows nothing.
    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, disable: bool = False):
        self.disable = disable
        self._bar = None
        self._stage = None

    def __call__(self, message: str, fraction: float) -> None:
        if self.disable:
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
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
