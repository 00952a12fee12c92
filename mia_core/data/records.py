"""One text as read from a file (:class:`Record`), and plain text split into records.

A ``.txt`` input holds one text per line (``mode="lines"``) or blank-line-separated
paragraphs (``mode="blank"``); ``mode="auto"`` picks paragraphs when the file is made of
multi-line paragraphs separated by blank lines (``_pick_mode``). Sources are ``name:line``
(for paragraphs, the line the paragraph starts on). Tables give records through
:mod:`mia_core.data.tables`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Record:
    """One text as read from a file, before the set-level checks of :func:`mia_core.data.load_dataset`."""
    text: str
    source: str
    label: int | None = None
    group: str | None = None
    id: str | None = None


# --------------------------------------------------------------------------------------
# plain text: lines or paragraphs
# --------------------------------------------------------------------------------------
def _blocks(lines: list[str]) -> list[tuple[int, list[str]]]:
    """Blank-line-separated blocks as (1-based start line, lines)."""
    blocks, cur, start = [], [], 0
    for i, line in enumerate(lines, 1):
        if line.strip():
            if not cur:
                start = i
            cur.append(line)
        elif cur:
            blocks.append((start, cur))
            cur = []
    if cur:
        blocks.append((start, cur))
    return blocks


def _pick_mode(blocks: list[tuple[int, list[str]]]) -> str:
    """'blank' when the file is made of multi-line paragraphs separated by blank lines.

    Rule: at least two blocks of several lines, making up at least a quarter of the blocks,
    and blocks of at most 20 lines on average (a one-text-per-line file with a stray blank
    line gives few, long blocks). The report says which mode was used.
    """
    if len(blocks) < 2:
        return "lines"
    sizes = [len(b) for _, b in blocks]
    multi = sum(1 for n in sizes if n >= 2)
    if multi < 2 or multi < 0.25 * len(blocks):
        return "lines"
    return "blank" if sum(sizes) / len(blocks) <= 20 else "lines"


def _split_plain(text: str, name: str, mode: str, notes: list[str]) -> list[Record]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    blocks = _blocks(lines)
    used = _pick_mode(blocks) if mode == "auto" else mode
    records: list[Record] = []
    if used == "lines":
        empty = 0
        for i, line in enumerate(lines, 1):
            t = line.strip()
            if t:
                records.append(Record(t, f"{name}:{i}"))
            else:
                empty += 1
        how = "one text per line"
        if empty:
            notes.append(f"{name}: dropped {empty} empty line{'s' if empty != 1 else ''}.")
    else:
        for start, blk in blocks:
            records.append(Record("\n".join(blk).strip(), f"{name}:{start}"))
        how = "blank-line-separated paragraphs"
    if records:
        hint = " (pass mode='lines' to read one text per line)" if mode == "auto" and used == "blank" else ""
        notes.append(f"{name}: read {len(records)} text{'s' if len(records) != 1 else ''} as {how}{hint}.")
    return records
