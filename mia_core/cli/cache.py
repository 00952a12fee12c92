"""``mia cache info|clear``: inspect or empty the on-disk statistics cache."""
from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser("cache", help="show or clear the statistics cache ($MIA_CACHE_DIR or the user cache dir)")
    p.add_argument("action", choices=["info", "clear"], help="info: sizes per kind; clear: delete cached statistics")
    p.add_argument("--models", action="store_true", help="with clear: also delete converted model copies (GGUF -> safetensors)")
    p.set_defaults(func=cmd_cache)


def cmd_cache(args) -> int:
    from ..cache import cache_info, clear_cache

    if args.action == "info":
        print(json.dumps(cache_info(), indent=2))
    else:
        removed = clear_cache(include_models=args.models)
        print("removed: " + (", ".join(removed) if removed else "nothing (cache already empty)"))
    return 0
