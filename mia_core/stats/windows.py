"""Windows: how each text's token sequence is cut for the model (:class:`_Job`).

A text is scored as the sequence ``[prefix token] + [kept condition] + text`` (the prefix:
:mod:`.settings`; the condition: ReCaLL's, below). A sequence longer than the context C is
scored in windows of C tokens with stride C-1 (Meeus et al. §4.1, :func:`window_starts`), so
consecutive windows overlap by one token and every token but the first of the sequence gets
exactly one prediction.

**Conditioning** (``StatsSettings.condition``, ReCaLL's non-member prefix, Xie et al. 2024): the
statistics of a text's tokens are computed *given* a conditioning text. The condition is
tokenised on its own (no special tokens) and put between the prefix token and the text,
``[prefix token] + condition + text``; only the text's tokens are reduced and returned, so the
result has the same shape as the unconditional one and attacks compare the two token by token.
Context window: when prefix token + condition + text fit in one window of C tokens, that is one
window and every text token sees the whole condition. Otherwise the condition is truncated
*from the left* (its last tokens, the ones nearest the text, are kept): to the room the text
leaves in the first window when the text itself fits in one window (every text token still
sees the kept condition), or to half a window when the text alone is longer than a window
(the first window then holds the kept condition and the first text tokens; later windows are
cut as usual and do not see the condition). :func:`kept_condition_tokens` gives the number
kept. Without a condition the windows are exactly those of the unconditional pass.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from .settings import StatsSettings, resolve_prefix, tokenize
from .types import ALL_FIELDS, FIELDS, INT_FIELDS, TokenStats

if TYPE_CHECKING:  # mia_core.models (huggingface_hub, safetensors) loads with a model: ``mia --help`` stays light
    from ..models import LoadedModel


def kept_condition_tokens(n_condition: int, n_text: int, context: int, prefix: bool = True) -> int:
    """How many of the condition's last tokens a text of ``n_text`` tokens is conditioned on
    (the module docstring's rule): all when prefix + condition + text fit in ``context``;
    else the room the text leaves in the first window when the text fits in one; else half a
    window (``(context - prefix) // 2``). Never more than ``context - prefix - 1``, so the first
    window always predicts at least one text token."""
    p = 1 if prefix else 0
    if n_condition <= 0 or n_text <= 0:
        return 0
    if p + n_condition + n_text <= context:
        return n_condition
    if p + n_text < context:
        return min(n_condition, context - p - n_text)
    return min(n_condition, (context - p) // 2)


def window_starts(n_seq: int, context: int) -> list[int]:
    """Start positions of the windows of a sequence of ``n_seq`` tokens: ``context`` tokens each, stride
    ``context - 1``, the last one reaching the end; none for a sequence of fewer than two tokens."""
    starts: list[int] = []
    if n_seq < 2:
        return starts
    s = 0
    while True:
        starts.append(s)
        if s + context >= n_seq:
            return starts
        s += context - 1


class _Job:
    """One text being scored: its token sequence, windows and output buffers."""

    def __init__(self, idx: int, text: str, ids: np.ndarray, prefix: int | None, context: int, vocab: int, want_vp: bool,
                 condition: np.ndarray | None = None):
        self.idx = idx
        self.text = text
        self.ids = ids
        self.prefix = prefix
        n = len(ids)
        k = kept_condition_tokens(len(condition), n, context, prefix is not None) if condition is not None else 0
        self.n_condition = k  # condition tokens in front of the text (its last k tokens)
        if k:
            head = [prefix] if prefix is not None else []
            seq = np.concatenate([np.asarray(head, dtype=np.int64), condition[len(condition) - k:].astype(np.int64),
                                  ids.astype(np.int64)])
        else:
            seq = np.concatenate([[prefix], ids]).astype(np.int64) if prefix is not None else ids.astype(np.int64)
        self.seq = seq
        self.offset = (1 if prefix is not None else 0) + k  # seq position of text token 0
        self.out = {f: np.full(n, np.nan, dtype=np.float32) for f in FIELDS}
        self.out.update({f: np.full(n, -1, dtype=np.int32) for f in INT_FIELDS})
        self.vp = np.zeros(vocab, dtype=np.float64) if want_vp else None
        self.windows: list[int] = window_starts(len(seq), context) if n else []  # window start positions in seq
        self.context = context
        self.done_windows = 0

    def window(self, w: int) -> np.ndarray:
        s = self.windows[w]
        return self.seq[s : s + self.context]

    def put(self, tok_idx: np.ndarray, reduced: dict) -> None:
        """Reduced arrays (:func:`.reduce._reduce`) of text tokens ``tok_idx`` into the buffers (and the
        vocabulary sum)."""
        for f in ALL_FIELDS:
            self.out[f][tok_idx] = reduced[f]
        if self.vp is not None:
            self.vp += reduced["vp"]

    def stats(self) -> TokenStats:
        return TokenStats(
            token_ids=self.ids,
            **self.out,
            n_bytes=len(self.text.encode("utf-8", "surrogatepass")),
            vocab_prob_sum=self.vp,
        )


def make_jobs(lm: LoadedModel, texts: Sequence[str], st: StatsSettings, want_vp: bool) -> list[_Job]:
    """One :class:`_Job` per text under ``st`` (``want_vp``: with a vocabulary-sum buffer)."""
    prefix = resolve_prefix(lm, st)
    condition = tokenize(lm, st.condition) if st.condition else None
    context = st.resolved_context(lm)
    vocab = lm.vocab_size if want_vp else 0
    return [_Job(i, t, tokenize(lm, t), prefix, context, vocab, want_vp, condition) for i, t in enumerate(texts)]
