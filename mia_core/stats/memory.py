"""What fits in memory: batches under a token budget, and the one way an out-of-memory batch is retried.

Batches hold at most ``batch_tokens`` tokens (rows x longest row, :func:`batches_by_length`);
they are length-sorted and, where lengths spread, cut where lengths drop by a quarter, so few
padding tokens are run. Full-vocabulary logits exist only for one batch at a time.

Out of memory (``torch.OutOfMemoryError``, a CPU allocator failure, ``MemoryError``): every batch's
model call runs inside :func:`out_of_memory`, which turns such an error into
:class:`_OutOfMemory`; every batch loop runs through :func:`run_batches`, which then halves the
call's :class:`_Budget` (a warning says so), for the rest of the call, and retries the batch in
smaller pieces, down to one window per batch; when one window does not fit, a ``ModelError``
names ``--context`` (and ``--batch-tokens``). Buffers are written only after a whole batch is
reduced, so a failed batch leaves nothing half-counted.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import TYPE_CHECKING, Callable, Iterator

from ..errors import ModelError

if TYPE_CHECKING:  # mia_core.models (huggingface_hub, safetensors) loads with a model: ``mia --help`` stays light
    from ..models import LoadedModel


def batches_by_length(lengths: list[int], batch_tokens: int, tight: bool = False) -> list[list[int]]:
    """Group items (sorted by length, longest first) so that rows x max length <= budget.
    ``tight``: also start a new batch where an item is under 3/4 of the batch's longest, once the
    batch holds an eighth of the budget (less padding, for lengths spread over a wide range)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    out, cur, cur_max = [], [], 0
    for i in order:
        L = lengths[i]
        if cur and (max(cur_max, L) * (len(cur) + 1) > batch_tokens
                    or (tight and 4 * L < 3 * cur_max and 8 * len(cur) * cur_max >= batch_tokens)):
            out.append(cur)
            cur, cur_max = [], 0
        cur.append(i)
        cur_max = max(cur_max, L)
    if cur:
        out.append(cur)
    return out


class _OutOfMemory(Exception):
    """A batch did not fit in memory (CUDA, CPU allocator or Python); the caller retries smaller."""


class _Budget:
    """The batch-token budget of one :func:`mia_core.stats.compute_stats` call; halved on out-of-memory."""

    def __init__(self, batch_tokens: int):
        self.tokens = max(1, int(batch_tokens))
        self.asked = self.tokens

    def halve(self, lm: LoadedModel, n_rows: int, length: int) -> None:
        """Half the budget (at least one window of ``length`` tokens fits a batch of one)."""
        if n_rows <= 1:
            raise _oom_error(n_rows, length, self.asked)
        _free_memory(lm)
        self.tokens = max(1, min(self.tokens, n_rows * length) // 2)
        warnings.warn(f"out of memory with a batch of {n_rows} x {length} tokens; retrying with "
                      f"batch_tokens {self.tokens} (set --batch-tokens lower to avoid this)", RuntimeWarning,
                      stacklevel=3)


@contextlib.contextmanager
def out_of_memory(lm: LoadedModel, what: str, *, free: bool = False) -> Iterator[None]:
    """Around a model call: an out-of-memory error (:func:`_is_oom`) raised inside becomes
    :class:`_OutOfMemory` (``what``: the batch, for the message); ``free``: garbage is collected
    and the CUDA cache emptied first (:class:`_Budget` does it itself when it halves)."""
    try:
        yield
    except (RuntimeError, MemoryError) as e:
        if not _is_oom(e):
            raise
        if free:
            _free_memory(lm)
        raise _OutOfMemory(what) from None


def halves(batch: list) -> list[list]:
    """``batch`` cut in two (the first half the larger)."""
    half = (len(batch) + 1) // 2
    return [batch[:half], batch[half:]]


def run_batches(lm: LoadedModel, budget: _Budget, queue: list[list], forward: Callable[[list], object], *,
                length: Callable[[list], int], split: Callable[[list], list[list]] = halves,
                fits: Callable[[list], bool] | None = None) -> Iterator[tuple[list, object]]:
    """``(batch, forward(batch))`` for each batch of ``queue`` in turn, retrying smaller on out of memory.

    A batch whose ``forward`` raises :class:`_OutOfMemory` halves ``budget`` (``length(batch)``: its
    longest row; a batch of one row raises the ``ModelError``) and goes back to the front of the
    queue as ``split(batch)`` (by default its two halves), which may read the halved budget. A batch
    of several rows that does not ``fits`` the budget is cut in two before it runs. The caller may
    append batches to ``queue`` while it iterates."""
    while queue:
        batch = queue.pop(0)
        if fits is not None and len(batch) > 1 and not fits(batch):
            queue[:0] = halves(batch)
            continue
        try:
            result = forward(batch)
        except _OutOfMemory:
            budget.halve(lm, len(batch), length(batch))
            queue[:0] = [b for b in split(batch) if b]
            continue
        yield batch, result


def _is_oom(e: BaseException) -> bool:
    import torch

    if isinstance(e, MemoryError):
        return True
    oom_type = getattr(torch, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(e, oom_type):
        return True
    msg = str(e).lower()
    return isinstance(e, RuntimeError) and any(
        m in msg for m in ("out of memory", "not enough memory", "can't allocate memory", "cannot allocate memory"))


def _free_memory(lm: LoadedModel) -> None:
    import gc

    gc.collect()
    try:
        import torch

        if str(lm.device).startswith("cuda") and torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:  # pragma: no cover - best effort
        pass


def _oom_error(n_rows: int, length: int, batch_tokens: int) -> ModelError:
    return ModelError(
        f"out of memory scoring a single window of {length} tokens ({{batch_tokens}} {batch_tokens} was already "
        "lowered to one window): lower {context} (the window length), or use int8/int4 or a smaller model",
        options=("batch_tokens", "context"),
    )
