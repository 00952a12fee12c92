"""``python -m mia_core``: the command-line front end.

Each sub-command lives in its own ``cli_<name>.py`` module exposing ``register(subparsers)``,
which adds an argparse parser and sets ``func`` (called with the parsed namespace, returns
an exit code). User errors (``MiaError``) print one clear line and exit 2; no traceback.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from .errors import MiaError

# Sub-command modules, in --help order. A module that is missing is skipped.
SUBCOMMAND_MODULES = [
    "cli_run",
    "cli_cache",
    "cli_target",
    "cli_documents",
    "cli_mlm",
    "cli_shift",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mia_core",
        description="Membership-inference audits of language models (offline by default).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        try:
            mod = importlib.import_module(f"mia_core.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"mia_core.{name}":
                continue
            raise
        mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except MiaError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; everything computed so far is cached", file=sys.stderr)
        return 130
    except MemoryError:
        print("error: out of memory: try a smaller --batch-tokens, int8/int4, or fewer texts", file=sys.stderr)
        return 2
