"""``mia`` (or ``python -m mia_core``): the command-line front end.

One module per command, each exposing ``register(subparsers)``, which adds its argparse parser(s)
and sets ``func`` (called with the parsed namespace; returns an exit code):

* ``run``             (:mod:`.run`)       attacks on member / non-member sets: baselines, neighbourhood, SMIA
* ``infer-dataset``   (:mod:`.infer`)     dataset inference: one p-value for a suspect set (Maini et al. 2024)
* ``cache``           (:mod:`.cache`)     show or clear the statistics cache
* ``make-target``     (:mod:`.target`)    fine-tune a controlled target on known members
* ``make-references`` (:mod:`.target`)    train k reference models on population halves (RMIA)
* ``build-proposer``  (:mod:`.target`)    rebuild the embedded neighbour proposer (or the Masked-LM demo target)
* ``documents``       (:mod:`.documents`) document-level membership inference (Meeus et al. 2024)
* ``mlm``             (:mod:`.mlm`)       masked-LM likelihood ratio (Mireshghallah et al. 2022)
* ``shift``           (:mod:`.shift`)     member/non-member distribution shift, no model
* ``traps``           (:mod:`.traps`)     copyright traps: make, insert, test (Meeus et al. 2024)
* every other registered audit (``mia_core.audits``), e.g. ``extraction``: made from its declaration
  (:mod:`.audit_command`)

The flags every command shares (data, models, output, progress) come from the argument
groups of :mod:`.common`, so they are spelled the same everywhere. User errors
(``MiaError``) and bad arguments (:class:`.common.Parser`) print one clear ``error:`` line and
exit 2; no traceback. Every message that can carry a user string (an
``error:`` line, a note, a warning, a progress message, a report) goes through
:func:`mia_core.errors.safe_text`: a file, zip-member or model name or a text id cannot print a
terminal escape sequence or start a line of its own.
"""
from __future__ import annotations

import argparse
import os
import sys

from ..version import __version__
from ..attacks import REGISTRY
from ..errors import MiaError, safe_text
from . import audit_command, cache, documents, infer, mlm, run, shift, target, traps
from .common import Parser, _isatty, engine_session
from .quiet import memory_hint, quiet_output

COMMANDS = (run, infer, cache, target, documents, mlm, shift, traps)  # in --help order


def build_parser() -> argparse.ArgumentParser:
    """The ``mia`` parser: ``--version`` and one sub-command per module of :data:`COMMANDS` (each module's
    ``register``), all of them :class:`.common.Parser` (one-line errors, exit code 2).
    """
    parser = Parser(
        prog="mia",
        description="Membership-inference audits of language models (offline by default).",
    )
    parser.add_argument("--version", action="version", version=f"mia-dashboard {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.register(sub)
    audit_command.register_generated(sub)  # the registered audits with no module of their own
    return parser


# options the engine names that no flag has as its dest (an API name, an attack parameter), as the CLI
# gives them; any other attack parameter ``attack.name`` is ``--param attack.name``
OPTION_FLAGS = {
    "cache": "--no-cache",
    "vocab_only": "--vocab-match-only",
    "recall.prefix": "--param recall.prefix=FILE",
    "smia.embedder": "--embedder",
    "smia.load": "--smia-load",
    "smia.save": "--smia-save",
    "n_permutations": "--permutations",
    "n_bootstrap": "--bootstrap",
}


def flag_names(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each option's flag (``batch_tokens`` -> ``--batch-tokens``), from the parser and its commands, and
    :data:`OPTION_FLAGS`: how the CLI words an engine error about that option
    (:meth:`mia_core.errors.MiaError.worded`)."""
    out: dict[str, str] = {}
    stack = [parser]
    while stack:
        p = stack.pop()
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                stack.extend(a.choices.values())
            elif a.option_strings and a.dest not in out:
                out[a.dest] = max(a.option_strings, key=len)
    params = {f"{a}.{p}": f"--param {a}.{p}" for a, att in REGISTRY.items() for p in att.params}
    return {**params, **OPTION_FLAGS, **out}


def main(argv: list[str] | None = None) -> int:
    """Run ``mia`` with ``argv`` (default: ``sys.argv[1:]``) and return its exit code.

    Without a command it prints the help. The command runs with its output quieted as ``--quiet`` asks, in one
    engine session, accepting a weight mismatch only with ``--accept-weight-mismatch``; an engine error
    (``MiaError``) is one ``error:`` line with its options named as this parser's flags.

    Returns
    -------
    int
        The command's code (0 on success); 2 for a bad argument, an engine error or running out of memory;
        130 when interrupted.
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    bars_off = not _isatty(sys.stderr)  # a pipe or a log: the libraries' \r-redrawn bars would pile up there
    if bars_off:
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, or a bad argument (one "error:" line printed)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    if bars_off:  # here, once a command is to run: ``mia --help`` does not load huggingface_hub (nor tqdm)
        try:  # transformers takes huggingface_hub's setting when it is imported
            import huggingface_hub.utils as hub_utils

            hub_utils.disable_progress_bars()
        except ImportError:  # pragma: no cover - a dependency of transformers
            pass
    flags = flag_names(parser)
    args.option_flags = flags  # for the notes a command words itself (mia_core.errors.in_words)
    try:
        from ..models.verify import accepting_weight_mismatch

        with quiet_output(bool(getattr(args, "quiet", False))), engine_session(), \
                accepting_weight_mismatch(bool(getattr(args, "accept_weight_mismatch", False))):
            return int(args.func(args) or 0)
    except MiaError as e:
        _close_progress_bars()
        # its options named as flags; a name in it cannot forge a line or colour the terminal
        print(f"error: {safe_text(e.worded(flags))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _close_progress_bars()
        print("interrupted; everything computed so far is cached", file=sys.stderr)
        return 130
    except MemoryError as e:
        _close_progress_bars()
        print(f"error: {memory_hint(e)}", file=sys.stderr)
        return 2


def _close_progress_bars() -> None:
    """Clear any progress bar left open by the failed command, so the message gets its own line."""
    tqdm = sys.modules.get("tqdm")
    for bar in list(getattr(getattr(tqdm, "tqdm", None), "_instances", None) or []):
        try:
            bar.close()
        except Exception:  # noqa: BLE001 - never hide the message behind a display error
            pass
