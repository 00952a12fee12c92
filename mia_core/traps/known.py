"""A record of known groups, for the audit contract's tiny example and for tests: texts given as the inserted and
the held-out traps, sealed as ``mia traps make`` seals a batch. Its groups are not a coin flip, so its p-value is
only as good as the caller's knowledge of membership; a real record comes from :func:`mia_core.traps.make.make_traps`."""
from __future__ import annotations

import time
from pathlib import Path

from .make import test_plan
from .options import MakeOptions
from .record import write_record


def record_of(inserted: list[str], held_out: list[str], folder, *, copies: int = 1, permutations: int = 999,
              alpha: float = 0.01, buckets: list[int] | None = None) -> str:
    """Seal ``inserted`` (``copies`` each) and ``held_out`` as a record in ``folder`` (made if missing); returns
    the seal. ``buckets``: each text's stratum, inserted first (default: one bucket)."""
    texts = [*inserted, *held_out]
    b = buckets or [0] * len(texts)
    rows = [{"id": f"t{i + 1:04d}", "text": t, "token_ids": [], "perplexity": None, "bucket": int(b[i]),
             "temperature": None, "group": "inserted" if i < len(inserted) else "held_out",
             "copies": copies if i < len(inserted) else 0} for i, t in enumerate(texts)]
    opts = MakeOptions(count=max(len(texts), 4), permutations=permutations, alpha=alpha)
    sealed = {"version": 1, "tool": {"name": "mia-dashboard", "known_groups": True},
              "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "generator": {"spec": None, "name": "given texts", "identity": None},
              "parameters": {"known_groups": True}, "seeds": {}, "buckets": [], "filters": {},
              "test": test_plan(opts), "traps": rows}
    Path(folder).mkdir(parents=True, exist_ok=True)
    return write_record(Path(folder), sealed)
