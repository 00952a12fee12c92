"""``mia cache info|clear``: inspect or empty the on-disk statistics cache.

``clear`` removes only what the cache wrote, recognised file by file (``mia_core.api.cache.plan_clear``):
cached statistics always; converted model copies with ``--models``; saved runs with ``--runs``. It says
what it will remove and what it leaves first, and asks (``--yes`` to skip the question, which a
non-interactive caller must give; ``--dry-run`` only lists).
"""
from __future__ import annotations

import json
import sys

from ..errors import SettingsError


def register(sub) -> None:
    """Add ``mia cache`` (``info`` / ``clear``) and its options to the command parser."""
    p = sub.add_parser("cache", help="show or clear the statistics cache ($MIA_CACHE_DIR or the user cache dir)")
    p.add_argument("action", choices=["info", "clear"],
                   help="info: sizes per kind; clear: delete cached statistics (only files the cache wrote; "
                        "saved runs and converted models are kept unless asked)")
    p.add_argument("--models", action="store_true", help="with clear: also delete converted model copies (GGUF -> safetensors)")
    p.add_argument("--runs", action="store_true", help="with clear: also delete the saved runs kept in the cache folder")
    p.add_argument("--dry-run", action="store_true", help="with clear: only list what would be removed")
    p.add_argument("--yes", "-y", action="store_true", help="with clear: remove without asking")
    p.set_defaults(func=cmd_cache)


def _confirm() -> bool:
    try:
        return input("remove these? [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def cmd_cache(args) -> int:
    """``mia cache``: ``info`` prints the cache's sizes as JSON; ``clear`` lists what it would remove and keep,
    asks (unless ``--yes``; ``--dry-run`` only lists), then removes it.

    Raises
    ------
    SettingsError
        ``clear`` without ``--yes`` when stdin is not a terminal (nobody to ask).
    """
    from ..api.cache import cache_info, clear_cache, plan_clear

    if args.action == "info":
        print(json.dumps(cache_info(), indent=2))
        return 0
    plan = plan_clear(include_models=args.models, include_runs=args.runs)
    for line in plan.lines():
        print(line)
    if plan.empty:
        print("nothing to remove")
        return 0
    if args.dry_run:
        return 0
    if not args.yes:
        if not (sys.stdin and sys.stdin.isatty()):
            raise SettingsError("cache clear asks before removing anything: add --yes to remove what is listed "
                                "above (or --dry-run to only list it)")
        if not _confirm():
            print("nothing removed")
            return 0
    clear_cache(plan=plan)
    print("removed")
    return 0
