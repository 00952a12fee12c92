"""Token statistics as an engine workload (:class:`mia_core.engines.Workload`): the same steps on
every engine.

The driver (this process, :func:`run_on_engine`, called by :func:`mia_core.stats.compute_stats` with the
texts its cache lacks):

1. plans each text's windows (:func:`.compute.plan_windows`) and cuts the texts into units
   (:func:`plan_units`): one-window texts sorted by length, texts that start alike kept together
   (a text's neighbours share their prefix pass); a longer text as ranges of windows, from the
   window its partial cache entry reached;
2. hands the units to the current engine (``engine.map``), which runs :meth:`TokenStatsWorkload.work`
   on them: in this process with the driver's model, or on Ray workers that load the same model;
3. stores every row as it comes back: a one-window text whole; a longer text a forward batch of
   windows at a time, put back in token order once all its windows are in (``merge_rows``). The
   windows back in order from a long text's start go to its partial cache entry every
   ``PARTIAL_EVERY_S`` s and when the call stops early (an error, an interrupt), so a re-run on
   any engine resumes after them.

A worker (or this process) turns a unit into rows with :func:`.compute.compute_here` (one-window
texts: shared prefixes, conditions, length-sorted batches) and :func:`.compute.window_rows` (a
range of a long text's windows). Windows are independent passes, so where they run changes no
number.
"""
from __future__ import annotations

import time
from dataclasses import asdict
from typing import Callable

import numpy as np

from ..engines import UNITS_PER_WORKER, Workload
from ..errors import SettingsError
from ..progress import Progress, noop
from .compute import compute_here, plan_windows, window_rows
from .settings import StatsSettings, tokenize
from .types import ALL_FIELDS, FIELDS, INT_FIELDS, TokenStats

PARTIAL_EVERY_S = 20.0  # a long text's windows done so far go to its partial cache entry at most this often
UNIT_BATCHES = 4  # on a distributed engine, a unit holds at most this many forward batches of the run's batch_tokens


class Partials:
    """A long text's windows done so far, kept between runs in the statistics cache's partial entries
    (``{fields over the whole text, "done_windows", "vp"}``)."""

    def __init__(self, get: Callable[[int], dict | None], put: Callable[[int, dict], None],
                 drop: Callable[[int], None]):
        self.get, self.put, self.drop = get, put, drop


class TokenStatsWorkload(Workload):
    """A causal LM's per-token statistics of a unit's texts (whole one-window texts; ranges of a long
    text's windows, ``w0``..``w1``)."""

    kind = "stats"

    def __init__(self, lm, settings: StatsSettings, label: str = "token statistics"):
        super().__init__((lm, settings), {"load_args": getattr(lm, "load_args", None), "identity": lm.identity,
                                          "name": lm.name, "settings": asdict(settings), "label": label})

    def check_remote(self) -> None:
        """Refuse a model not loaded with ``load_causal_lm`` (a Ray worker could not load it again).

        Raises
        ------
        SettingsError
            The model has no ``load_args``.
        """
        if not self.init["load_args"]:
            raise SettingsError(f"{self.init['name']} was not loaded with load_causal_lm, so Ray workers cannot "
                                "load it: use {engine} local", options=("engine",))

    @classmethod
    def build(cls, init: dict, device: str):
        """On a worker: the model loaded from ``init["load_args"]`` on ``device`` with the run's settings.

        Parameters
        ----------
        init : dict
            What the driver sent (``load_args``, ``settings``, ...).
        device : str
            The worker's device.

        Returns
        -------
        tuple
            ``((lm, StatsSettings), lm.identity)``.
        """
        from ..models import load_causal_lm

        lm = load_causal_lm(**init["load_args"], device=device)
        return (lm, StatsSettings(**init["settings"])), lm.identity

    @classmethod
    def work(cls, tool, init: dict, items: list[dict], emit, progress: Progress = noop) -> None:
        """A unit's statistics: whole texts (one window each), each emitted as soon as it is done, and window
        ranges ``w0``..``w1`` of long texts, emitted row by row.

        Parameters
        ----------
        tool : tuple
            ``(lm, StatsSettings)`` (:meth:`build`).
        init : dict
            What the driver sent (its ``label`` names the progress).
        items : list of dict
            ``{"idx", "text"}``, with ``"w0"``/``"w1"`` for a range of a long text's windows.
        emit : callable
            ``emit(index, t0, t1, arrays)``; ``t0 = t1 = -1`` for a whole text.
        progress : Progress
            Progress callback.
        """
        lm, settings = tool
        short = [it for it in items if "w1" not in it]
        if short:  # each text sent as soon as it is done
            compute_here(lm, [it["text"] for it in short], settings, progress=progress, label=init["label"],
                         on_done=lambda k, s: emit(short[k]["idx"], -1, -1, s.to_arrays()))
        for it in (it for it in items if "w1" in it):
            def sub(msg: str, frac: float) -> None:
                progress(f"{init['label']}: {msg}", frac)

            for t_a, t_b, windows, arrays in window_rows(lm, it["text"], settings, it["w0"], it["w1"], sub):
                arrays["n_windows"] = np.array(windows)
                emit(it["idx"], t_a, t_b, arrays)


def plan_units(engine, idx: list[int], plan, batch_tokens: int, context: int, resume: dict[int, int] | None = None
               ) -> list[dict]:
    """``engine``'s units for the texts ``idx`` (their ``plan_windows`` rows in ``plan``): one-window texts
    cut by ``engine.cut``; a long text whole (one worker) or in ranges of windows of about a unit's tokens,
    from its window ``resume[i]`` (those before it are done). Items carry ``idx`` (and ``w0``, ``w1``)."""
    resume = resume or {}
    total = sum(n + 1 - (starts[resume[i]] if i in resume else 0) for i, (n, starts, _) in zip(idx, plan))
    # at least UNITS_PER_WORKER units per worker, so that no worker waits long for the last one
    size = int(engine.unit_tokens or min(UNIT_BATCHES * batch_tokens,
                                         max(batch_tokens, -(-total // (UNITS_PER_WORKER * engine.workers)))))
    # short texts sorted by length (a unit's batches then have little padding: 10 % faster than the
    # caller's order on AG News), texts that start alike kept together (a text's neighbours share
    # their prefix pass): groups by first tokens, ordered by their first text's length
    short = [(i, n, head) for i, (n, starts, head) in zip(idx, plan) if len(starts) <= 1]
    first_len: dict[tuple, int] = {}
    for _, n, head in short:
        first_len.setdefault(head, n)
    short.sort(key=lambda x: (-first_len[x[2]], x[2]))
    units = engine.cut([{"idx": i} for i, _, _ in short], [n + 1 for _, n, _ in short], size)
    whole = engine.workers == 1 and not engine.unit_tokens  # one worker: nothing to gain from cutting a text
    for i, (n, starts, _) in zip(idx, plan):
        if len(starts) <= 1:
            continue
        per = len(starts) if whole else max(1, size // context)
        for w0 in range(resume.get(i, 0), len(starts), per):
            w1 = min(len(starts), w0 + per)
            tokens = (starts[w1] if w1 < len(starts) else n) - starts[w0]
            units.append({"items": [{"idx": i, "w0": w0, "w1": w1}], "tokens": tokens})
    return sorted(units, key=lambda u: -u["tokens"])  # largest first: the last unit to finish is a small one


def run_on_engine(engine, lm, texts: dict[int, str], settings: StatsSettings, store: Callable[[int, TokenStats], None],
                  *, partial: Partials | None = None, progress: Progress = noop, label: str = "token statistics"
                  ) -> int:
    """Statistics of ``texts`` (index -> text) on ``engine``; ``store(index, TokenStats)`` for each text as
    soon as it is complete. Returns the number of tokens sent (for the speed record)."""
    idx = list(texts)
    plan = plan_windows(lm, [texts[i] for i in idx], settings)
    n_tokens = {i: n for i, (n, _, _) in zip(idx, plan)}
    n_windows = {i: len(w) for i, (_, w, _) in zip(idx, plan)}
    first_t = {i: w[0] for i, (_, w, _) in zip(idx, plan) if w}  # where a text's first window's predictions start
    pieces: dict[int, list] = {}  # long text -> its window batches back so far: (t0, t1, windows, arrays)
    saved: dict[int, tuple[int, float]] = {}  # long text -> (windows in its partial entry, when written)
    resume: dict[int, int] = {}  # long text -> windows already done (its partial entry)
    for i, (n, starts, _) in zip(idx, plan):
        part = partial.get(i) if partial is not None and len(starts) > 1 else None
        if part is not None and 0 < int(part["done_windows"]) < len(starts):
            d = int(part["done_windows"])
            head = {f: part[f][: starts[d]] for f in ALL_FIELDS}
            if "vp" in part:
                head["vp"] = part["vp"]
            pieces[i], resume[i], saved[i] = [(0, starts[d], d, head)], d, (d, time.time())
    units = plan_units(engine, idx, plan, settings.resolved_batch_tokens(lm), settings.resolved_context(lm), resume)
    for u in units:
        for it in u["items"]:
            it["text"] = texts[it["idx"]]

    def keep(i: int, now: bool) -> None:  # a long text's windows done from its start, into its partial entry
        last_done, last_t = saved.get(i, (0, 0.0))
        if now or time.time() - last_t > PARTIAL_EVERY_S:
            done, arrays = _done_prefix(n_tokens[i], first_t[i], pieces[i])
            if done > last_done:
                partial.put(i, {**arrays, "done_windows": np.array(done)})
                saved[i] = (done, time.time())

    def on_row(i: int, t_a: int, t_b: int, arrays: dict) -> bool:
        if t_a < 0:  # a whole one-window text
            store(i, TokenStats.from_arrays(arrays))
            return True
        pieces.setdefault(i, []).append((t_a, t_b, int(arrays.pop("n_windows")), arrays))
        if sum(p[2] for p in pieces[i]) < n_windows[i]:
            if partial is not None:
                keep(i, now=False)
            return False
        store(i, merge_rows(tokenize(lm, texts[i]), texts[i], pieces.pop(i)))
        if partial is not None:
            partial.drop(i)
        return True

    progress(f"{label}: 0/{sum(n_windows.values())} windows", 0.0)  # the stage starts now, not at its first batch's end
    try:
        engine.map(TokenStatsWorkload(lm, settings, label), units, on_row, progress=progress, label=label)
    finally:  # stopped early: the long texts' windows done from their start are kept
        if partial is not None:
            for i in list(pieces):
                keep(i, now=True)
    return sum(u["tokens"] for u in units)


def _done_prefix(n: int, first: int, parts: list) -> tuple[int, dict]:
    """The windows of a long text of ``n`` tokens done from its start, as a partial entry's arrays:
    ``(windows, arrays)``. ``first``: the token the first window's predictions start at; ``parts``:
    ``(t0, t1, windows, arrays)`` ranges in any order; the first that does not follow on ends the prefix."""
    prefix, end = [], first
    for p in sorted(parts, key=lambda p: p[0]):
        if p[0] > end or (prefix and p[0] != end):
            break
        prefix.append(p)
        end = p[1]
    out, vp = _fill(n, prefix)
    if vp is not None:
        out["vp"] = vp
    return sum(p[2] for p in prefix), out


def _fill(n: int, parts: list) -> tuple[dict, "np.ndarray | None"]:
    """Per-token arrays of ``n`` tokens (NaN / -1 where no part covers them) from ``(t0, t1, windows,
    arrays)`` ranges, and the ranges' summed vocabulary probabilities (None without them)."""
    out = {f: np.full(n, np.nan, dtype=np.float32) for f in FIELDS}
    out.update({f: np.full(n, -1, dtype=np.int32) for f in INT_FIELDS})
    vp = None
    for t_a, t_b, _, arrays in sorted(parts, key=lambda p: p[0]):
        for f in ALL_FIELDS:
            out[f][t_a:t_b] = arrays[f]
        if "vp" in arrays:
            vp = arrays["vp"].copy() if vp is None else vp + arrays["vp"]
    return out, vp


def merge_rows(ids: np.ndarray, text: str, parts: list) -> TokenStats:
    """A long text's window batches, put back in token order, as one ``TokenStats``."""
    out, vp = _fill(len(ids), parts)
    return TokenStats(token_ids=ids, **out, n_bytes=len(text.encode("utf-8", "surrogatepass")), vocab_prob_sum=vp)
