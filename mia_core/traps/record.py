"""The sealed record of a batch of traps, and the coin flip that makes the test exact.

``record.json`` holds ``{"format", "seal", "sealed": {...}, "insertions": [...]}``. ``sealed`` is everything fixed
when the traps were made: every trap (text, token ids, generator perplexity, bucket, temperature, group, copies),
the generator's identity with digests of its weights and tokenizer, every parameter, the seeds, what each filter
rejected, and the test that will be run. ``seal`` is the SHA-256 of ``sealed`` written as canonical JSON
(:func:`canonical`: sorted keys, no spaces, UTF-8): the owner timestamps it or gives it to a third party before
publishing, and a record whose ``sealed`` part no longer hashes to its seal is refused (:func:`read_record`).
``insertions`` is the log ``mia traps insert`` appends to (the written files' digests, any leak found); it is
outside the seal, since it is written after it.

The record is private: it names the held-out traps, whose secrecy is what the test rests on (a held-out trap that
reaches the training data makes the test conservative, never anti-conservative).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np

from ..errors import DataError

FORMAT = "mia-copyright-traps"
VERSION = 1
RECORD = "record.json"
SEAL_FILE = "seal.txt"
GROUPS = ("inserted", "held_out")


def canonical(obj) -> bytes:
    """``obj`` as canonical JSON (sorted keys, no spaces, UTF-8, no NaN): the bytes the seal is the SHA-256 of."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def seal_of(sealed: dict) -> str:
    """The seal: the SHA-256 of :func:`canonical` ``(sealed)``, in hex."""
    return hashlib.sha256(canonical(sealed)).hexdigest()


def split_seeds(seed: int) -> dict:
    """Two independent streams from one seed (numpy's ``SeedSequence``): the sampling's and the split's. The split's
    stream is used only after every filter has run, so the coin flip cannot depend on which candidates passed."""
    sampling, split = np.random.SeedSequence(int(seed)).generate_state(2, dtype=np.uint32)
    return {"seed": int(seed), "sampling": int(sampling), "split": int(split)}


def assign(buckets: list[int], levels: tuple, split_seed: int) -> tuple[list[str], list[int]]:
    """The coin flip: within each bucket, a uniformly random half of its traps is inserted (of an odd count, the
    extra one goes to a side chosen at random) and the rest held out; the inserted traps of a bucket, in a random
    order, take the repetition levels round-robin from a random start. Returns each trap's group and copies (0 for
    a held-out trap). Every inserted subset of the bucket's size is equally likely: what the permutation test
    enumerates."""
    rng = np.random.default_rng(split_seed)
    n = len(buckets)
    group, copies = ["held_out"] * n, [0] * n
    b_arr = np.asarray(buckets)
    for b in sorted(set(buckets)):
        idx = np.flatnonzero(b_arr == b)
        order = rng.permutation(idx)
        k = len(idx) // 2 + (int(rng.integers(2)) if len(idx) % 2 else 0)
        start = int(rng.integers(len(levels)))
        for j, i in enumerate(order[:k]):
            group[i] = "inserted"
            copies[i] = int(levels[(start + j) % len(levels)])
    return group, copies


def write_record(folder: Path, sealed: dict) -> str:
    """Write ``record.json`` (readable by its owner only) and ``seal.txt`` into ``folder``; returns the seal."""
    seal = seal_of(sealed)
    rec = {"format": FORMAT, "seal": seal, "sealed": sealed, "insertions": []}
    _write_private(Path(folder) / RECORD, json.dumps(rec, indent=1, ensure_ascii=False, allow_nan=False))
    (Path(folder) / SEAL_FILE).write_text(
        f"SHA-256 {seal}\n\nThe seal of record.json (its \"sealed\" part as canonical JSON: sorted keys, no spaces, "
        "UTF-8). Timestamp it or give it to a third party before publishing the documents; keep record.json "
        "private: it names the held-out traps.\n", encoding="utf-8")
    return seal


def _write_private(path: Path, text: str) -> None:
    """``text`` to ``path`` in one rename, mode 0600."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def record_path(value) -> Path:
    """The record file of ``value``: a folder written by ``mia traps make`` (its ``record.json``) or the file."""
    p = Path(value).expanduser()
    return p / RECORD if p.is_dir() else p


def read_record(value) -> dict:
    """The record at ``value`` (a folder or its ``record.json``), its seal checked; ``DataError`` in one line for a
    missing or unreadable file, a file that is not a traps record, or a record edited since it was sealed."""
    p = record_path(value)
    if not p.is_file():
        raise DataError(f"{p}: no traps record there (give the folder `mia traps make` wrote, or its {RECORD})",
                        options=("traps",))
    try:
        if p.stat().st_size > 512 * 2**20:
            raise DataError(f"{p} is over 512 MiB: not a traps record", options=("traps",))
        rec = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise DataError(f"{p} cannot be read as a traps record ({type(e).__name__})", options=("traps",)) from None
    if not isinstance(rec, dict) or rec.get("format") != FORMAT or not isinstance(rec.get("sealed"), dict):
        raise DataError(f"{p} is not a traps record (made by `mia traps make`)", options=("traps",))
    try:
        actual = seal_of(rec["sealed"])
    except (TypeError, ValueError):
        actual = None
    if actual != rec.get("seal"):
        raise DataError(f"{p}: its contents do not match its seal {str(rec.get('seal'))[:16]}... (edited since it was "
                        "made): refused; use the record as `mia traps make` wrote it", options=("traps",))
    _check_traps(p, rec["sealed"])
    rec["path"] = str(p)
    return rec


def _check_traps(p: Path, sealed: dict) -> None:
    traps = sealed.get("traps")
    if not isinstance(traps, list) or not traps:
        raise DataError(f"{p} holds no traps", options=("traps",))
    need = ("id", "text", "token_ids", "bucket", "group", "copies")
    for t in traps:
        if not isinstance(t, dict) or any(k not in t for k in need) or t["group"] not in GROUPS:
            raise DataError(f"{p}: a trap entry is not of the record's form", options=("traps",))
    if not any(t["group"] == "inserted" for t in traps):
        raise DataError(f"{p}: no trap was inserted: there is nothing to test", options=("traps",))
    if not any(t["group"] == "held_out" for t in traps):
        raise DataError(f"{p}: no trap was held out: there is nothing to compare with", options=("traps",))


def append_insertion(rec: dict, entry: dict) -> None:
    """Add ``entry`` to the record's insertion log (outside the seal), the file rewritten in one rename; the seal
    is checked again first, so a record edited meanwhile is not written over."""
    p = Path(rec["path"])
    now = read_record(p)
    now.pop("path", None)
    now["insertions"] = [*now.get("insertions", []), {**entry, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}]
    _write_private(p, json.dumps(now, indent=1, ensure_ascii=False, allow_nan=False))
    rec["insertions"] = now["insertions"]


def by_group(rec: dict, group: str) -> list[dict]:
    """The record's traps of ``group`` (``"inserted"`` or ``"held_out"``)."""
    return [t for t in rec["sealed"]["traps"] if t["group"] == group]
