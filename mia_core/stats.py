"""The one batched, windowed forward pass of a causal LM, reduced to per-token statistics.

This is the only place that runs a causal LM over texts. For every token of a text it keeps

* ``logprob``      log p(x_t | x_<t) of the true token,
* ``max_logprob``  max over the vocabulary of log p(. | x_<t) (Meeus et al. §4.1, MaxNorm),
* ``mu``, ``sigma``  mean and standard deviation of log p(z | x_<t) for z ~ p(. | x_<t)
  (the expectation under the model's own distribution, as Min-K%++ defines them:
  Zhang et al. 2024, eq. 2; SMIA paper App. A),
* ``entropy``      -Σ_z p log p (equal to -mu),
* ``rank``         1 + number of vocabulary tokens more likely than the true token,
* ``top_id``       the most likely token (for the dashboard's hover),

and, on request, the sum over positions of the full predicted distribution
(``vocab_prob_sum``; Meeus et al. §4.2.1's general-probability dictionary R^GP is
accumulated from it without storing any full-vocabulary array per token).

Windows (Meeus et al. §4.1): a text longer than the context C is scored in windows of C
tokens with stride C-1, so consecutive windows overlap by one token and every token but
the first of the sequence gets exactly one prediction.

**The prefix: texts as the model saw them in training** (``StatsSettings.prefix``). ``"auto"``
(the default) puts in front of each text what the model saw there in training:

* a ``make-target`` folder: the token it was trained with (its ``training_log.json``), or none;
* any other model: what its tokenizer adds itself (:func:`tokenizer_prefix_id`). Llama-style
  tokenizers add a BOS token, so every text token is predicted from it, as in MIMIR, which
  tokenizes with the tokenizer's special tokens; GPT-2-style tokenizers (GPT-2, Pythia, SmolLM2,
  Qwen and most of their fine-tunes) add nothing, so nothing is prepended and the first text token
  has no prediction: tokens 2..n are scored, as in MIMIR.

``"always"`` puts the tokenizer's BOS, or ``<|endoftext|>``/EOS when it has none, in front of
every text (:func:`prefix_token_id`), so that the first text token is predicted too and the
total NLL covers the whole string (per-byte comparisons across tokenizers need it), at the cost
of a context a GPT-2-style model never saw in training (it lowers every attack's AUC on such
fine-tunes: issue 28). ``"none"`` prepends nothing. ``True``/``False`` are read as
``"always"``/``"none"`` (the settings of earlier versions).

**Conditioning** (``StatsSettings.condition``, ReCaLL's non-member prefix, Xie et al. 2024):
the statistics of a text's tokens are computed *given* a conditioning text. The condition is
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
kept. Texts that see the whole condition in one window are scored against a key/value cache
of ``[prefix token] + condition`` computed once per call (same numbers up to float rounding;
the condition, e.g. twelve shots, is often ten times longer than a text). The cache key holds
a hash of the condition; without a condition the key, the windows and every value are exactly
those of the unconditional pass.

**Shared prefixes** (:func:`_run_families`): texts of one window that start with the same tokens
as another text of the call (a text's one-word neighbours, modified copies) are grouped in
families; each family's base runs once with its keys/values kept, and every other member runs
only from its first token that differs from the base. Same numbers as the plain pass up to float
rounding (checked against a plain pass of one member on the first batch of every call; a model
whose cache cannot be reused this way is left to the plain path). Batches are length-sorted and
cut where lengths drop by a quarter, so few padding tokens are run.

Full-vocabulary logits exist only for one window batch at a time, and they are reduced in
chunks of positions; what is kept per text is a handful of scalars per token.
Results are cached on disk (``mia_core.cache``) keyed by model identity, settings and
text hash, so a re-run of any attack on cached texts makes no model call.

Out of memory (``torch.OutOfMemoryError``, a CPU allocator failure, ``MemoryError``): the
batch is retried with half the batch tokens (a warning says so), for the rest of the call,
down to one window per batch; when one window does not fit, a ``ModelError`` names
``--context`` (and ``--batch-tokens``). Buffers are written only after a whole batch is
reduced, so a failed batch leaves nothing half-counted.
"""
from __future__ import annotations

import time
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .cache import ArrayCache, text_hash
from .data.decoding import check_text_length
from .errors import ModelError
from .models import LoadedModel, returned_cache, with_cache
from .progress import Progress, noop

STATS_VERSION = 2  # 2: sigma as E[(lp - mu)^2] (stable in float32)
FIELDS = ("logprob", "max_logprob", "mu", "sigma", "entropy")
INT_FIELDS = ("rank", "top_id")
DEFAULT_CONTEXT_CAP = 2048  # default window on CPU-friendly terms; the model's max if smaller
DEFAULT_BATCH_TOKENS = 2048  # on a CPU: the demo's 200 paragraphs run at 355 tokens/s vs 299 at 4096 (2-core EPYC)
DEFAULT_BATCH_TOKENS_GPU = 8192  # on a GPU, where wider batches pay
REDUCE_CHUNK = 1024  # positions reduced at once: REDUCE_CHUNK x vocab floats in memory
PARTIAL_EVERY_S = 20.0  # a long text's windows done so far go to its partial cache entry at most this often (any engine)


@dataclass
class TokenStats:
    """Per-token statistics of one text under one model (arrays of length n_tokens)."""

    token_ids: np.ndarray
    logprob: np.ndarray
    max_logprob: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    entropy: np.ndarray
    rank: np.ndarray
    top_id: np.ndarray
    n_bytes: int
    vocab_prob_sum: np.ndarray | None = None
    extra: dict = field(default_factory=dict)

    @property
    def n_tokens(self) -> int:
        return int(self.token_ids.shape[0])

    @property
    def valid(self) -> np.ndarray:
        """Mask of tokens that received a prediction (all of them when a prefix token is used)."""
        return ~np.isnan(self.logprob)

    @property
    def n_predicted(self) -> int:
        return int(self.valid.sum())

    @property
    def nll_sum(self) -> float:
        return float(-np.nansum(self.logprob.astype(np.float64)))

    @property
    def loss(self) -> float:
        """Mean negative log-likelihood per predicted token (NaN if nothing was predicted)."""
        n = self.n_predicted
        return self.nll_sum / n if n else float("nan")

    @property
    def nll_per_byte(self) -> float:
        return self.nll_sum / self.n_bytes if self.n_bytes and self.n_predicted else float("nan")

    def to_arrays(self) -> dict[str, np.ndarray]:
        d = {f: getattr(self, f) for f in ("token_ids", *FIELDS, *INT_FIELDS)}
        d["n_bytes"] = np.array(self.n_bytes)
        if self.vocab_prob_sum is not None:
            d["vocab_prob_sum"] = self.vocab_prob_sum
        return d

    @classmethod
    def from_arrays(cls, d: dict[str, np.ndarray]) -> "TokenStats":
        return cls(
            token_ids=d["token_ids"],
            **{f: d[f] for f in FIELDS},
            **{f: d[f] for f in INT_FIELDS},
            n_bytes=int(d["n_bytes"]),
            vocab_prob_sum=d.get("vocab_prob_sum"),
        )

    def slice(self, start: int, stop: int) -> "TokenStats":
        """Statistics of tokens [start, stop) (used for partial documents and excerpts)."""
        s = slice(start, stop)
        return TokenStats(
            token_ids=self.token_ids[s],
            **{f: getattr(self, f)[s] for f in FIELDS},
            **{f: getattr(self, f)[s] for f in INT_FIELDS},
            n_bytes=self.n_bytes * max(0, stop - start) // max(1, self.n_tokens),
        )


@dataclass
class StatsSettings:
    context: int | None = None  # window length C; None: min(model max, DEFAULT_CONTEXT_CAP)
    prefix: str | bool = "auto"  # "auto" (what the model saw in training), "always" (BOS/EOS), "none"
    batch_tokens: int | None = None  # tokens per forward batch; None: DEFAULT_BATCH_TOKENS(_GPU) for the device
    vocab_probs: bool = False  # also accumulate sum of predicted distributions (R^GP)
    condition: str | None = None  # text every text is conditioned on (ReCaLL's prefix); None/"": none

    def __post_init__(self):
        self.prefix = prefix_mode(self.prefix)

    def resolved_context(self, lm: LoadedModel) -> int:
        c = self.context or min(lm.max_context, DEFAULT_CONTEXT_CAP)
        if c < 2:
            raise ModelError("the context length must be at least 2 tokens")
        return min(c, lm.max_context)

    def resolved_batch_tokens(self, lm: LoadedModel) -> int:
        if self.batch_tokens:
            return int(self.batch_tokens)
        return DEFAULT_BATCH_TOKENS if str(lm.device).startswith("cpu") else DEFAULT_BATCH_TOKENS_GPU


PREFIX_MODES = ("auto", "always", "none")


def prefix_mode(value) -> str | int:
    """``StatsSettings.prefix`` as one of :data:`PREFIX_MODES` (``True``/``False``: ``"always"``/``"none"``),
    or a token id (an int >= 0: that token in front of every text; a run pins its other models to the
    target's token this way, so that a reference scores the same tokens)."""
    if value is True:
        return "always"
    if value is False or value is None:
        return "none"
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        return int(value)
    v = str(value).strip().lower()
    if v not in PREFIX_MODES:
        from .errors import SettingsError

        raise SettingsError(f"prefix must be one of {', '.join(PREFIX_MODES)}, got {value!r}")
    return v


_PROBE = "Hello world. The quick brown fox"


_TOKENIZER_MEMO: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _memo(tokenizer, what: str, compute):
    """``compute(tokenizer)`` once per tokenizer object (and size: added tokens invalidate it): the prefix
    ids are asked for several times per scoring call, and a probe tokenization and a 49k-entry vocabulary
    each time showed in profiles."""
    try:
        memo = _TOKENIZER_MEMO.setdefault(tokenizer, {})
    except TypeError:  # not weakly referenceable: no memo
        return compute(tokenizer)
    key = (what, len(tokenizer))
    if key not in memo:
        memo[key] = compute(tokenizer)
    return memo[key]


def tokenizer_prefix_id(tokenizer) -> int | None:
    """The token the tokenizer itself puts in front of a text (``add_special_tokens=True``): a Llama-style
    tokenizer's BOS; None for GPT-2-style tokenizers, which add nothing. When it adds several, the one
    right before the text."""
    return _memo(tokenizer, "tokenizer_prefix_id", _tokenizer_prefix_id)


def _tokenizer_prefix_id(tokenizer) -> int | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plain = list(tokenizer(_PROBE, add_special_tokens=False)["input_ids"])
            full = list(tokenizer(_PROBE, add_special_tokens=True)["input_ids"])
    except Exception:  # noqa: BLE001 - a tokenizer that cannot say adds nothing we know of
        return None
    for start in range(len(full) - len(plain) + 1):
        if full[start:start + len(plain)] == plain:
            return int(full[start - 1]) if start > 0 else None
    return None


def resolve_prefix(lm: LoadedModel, st: "StatsSettings") -> int | None:
    """The token put in front of every text under ``st`` (None: nothing), see the module docstring."""
    mode = prefix_mode(st.prefix)
    if isinstance(mode, int):
        return mode
    if mode == "none":
        return None
    if mode == "always":
        return prefix_token_id(lm.tokenizer)
    info = getattr(lm, "info", None) or {}
    if "trained_prefix_token_id" in info:  # a make-target folder: what it was trained with
        v = info["trained_prefix_token_id"]
        return None if v is None else int(v)
    return tokenizer_prefix_id(lm.tokenizer)


def scores_first_token(lm: LoadedModel, st: "StatsSettings") -> bool:
    """Whether attacks score each text's first token by default: under ``"auto"`` when a prefix is put in
    front (the model learned to predict the first token from it, and MIMIR scores it); never under
    ``"always"`` (the prefix is ours, not the model's: tokens 2..n, as the papers); without a prefix the
    first token has no prediction anyway."""
    return prefix_mode(st.prefix) == "auto" and resolve_prefix(lm, st) is not None


def settings_for(lm: LoadedModel, target: LoadedModel, st: "StatsSettings | None" = None) -> "StatsSettings":
    """``st`` for scoring ``lm`` beside ``target``: a model that shares the target's tokenizer (a reference,
    RMIA's references) is scored with the target's prefix, so that both score the same tokens; a model with
    another tokenizer keeps its own."""
    import dataclasses

    st = st or StatsSettings()
    if st.prefix == "auto" and lm is not target and target.same_tokenizer(lm):
        r = resolve_prefix(target, st)
        return dataclasses.replace(st, prefix="none" if r is None else r)
    return st


def prefix_key(lm: LoadedModel, st: "StatsSettings"):
    """The prefix as the cache key holds it: ``True`` for the BOS/EOS token of earlier versions' default,
    ``False`` for none, else the token id. Entries of earlier versions stay valid wherever the numbers are
    the same (a Llama-style model under ``"auto"``, any model under ``"always"`` or ``"none"``)."""
    r = resolve_prefix(lm, st)
    if r is None:
        return False
    return True if r == prefix_token_id(lm.tokenizer) else int(r)


def prefix_token_id(tokenizer) -> int | None:
    """The BOS/EOS token ``prefix="always"`` puts in front of every text."""
    return _memo(tokenizer, "prefix_token_id", _prefix_token_id)


def _prefix_token_id(tokenizer) -> int | None:
    vocab = tokenizer.get_vocab()
    if tokenizer.bos_token_id is not None and getattr(tokenizer, "add_bos_token", False):
        return tokenizer.bos_token_id
    for t in ("<|endoftext|>", "</s>", "<s>"):
        if t in vocab:
            return vocab[t]
    for tid in (tokenizer.bos_token_id, tokenizer.eos_token_id):
        if tid is not None:
            return tid
    return None


def tokenize(lm: LoadedModel, text: str) -> np.ndarray:
    # the readers refuse longer texts with their source; this guards every other way in (the API,
    # generated texts): a fast tokenizer handed one aborts the process (Rust panic, exit 134)
    check_text_length(text, f"scoring with {getattr(lm, 'name', 'the model')}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ids = lm.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]
    return np.asarray(ids, dtype=np.int32)


def cache_settings(lm: LoadedModel, st: StatsSettings) -> dict:
    out = {
        "model": lm.identity,
        "context": st.resolved_context(lm),
        "prefix": prefix_key(lm, st),
        "vocab_probs": st.vocab_probs,
        "version": STATS_VERSION,
    }
    if st.condition:  # only when set: the unconditional key stays what it always was
        out["condition"] = text_hash(st.condition)
        out["condition_chars"] = len(st.condition)
    return out


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
        stride = context - 1
        self.windows: list[int] = []  # window start positions in seq
        if len(seq) >= 2 and n:
            s = 0
            while True:
                self.windows.append(s)
                if s + context >= len(seq):
                    break
                s += stride
        self.context = context
        self.done_windows = 0

    def window(self, w: int) -> np.ndarray:
        s = self.windows[w]
        return self.seq[s : s + self.context]

    def stats(self) -> TokenStats:
        return TokenStats(
            token_ids=self.ids,
            **self.out,
            n_bytes=len(self.text.encode("utf-8", "surrogatepass")),
            vocab_prob_sum=self.vp,
        )


def entry_problem(lm: LoadedModel, text: str, arrays: dict, st: StatsSettings) -> str | None:
    """Why a cached entry cannot be the statistics of ``text`` under ``lm`` (None when it can): every
    array there, the text's own token ids, every per-token array as long, the text's byte count."""
    need = ("token_ids", *FIELDS, *INT_FIELDS, "n_bytes")
    lacking = [k for k in need if k not in arrays]
    if lacking:
        return f"it lacks {', '.join(lacking)}"
    if st.vocab_probs and "vocab_prob_sum" not in arrays:
        return "it lacks vocab_prob_sum"
    ids = arrays["token_ids"]
    if ids.ndim != 1 or not np.array_equal(ids, tokenize(lm, text)):
        return "its tokens are not this text's"
    short = [k for k in (*FIELDS, *INT_FIELDS) if arrays[k].shape != ids.shape]
    if short:
        return f"{short[0]} has {arrays[short[0]].shape[0] if arrays[short[0]].ndim else 0} values for {ids.shape[0]} tokens"
    if int(arrays["n_bytes"]) != len(text.encode("utf-8", "surrogatepass")):
        return "its byte count is not this text's"
    return None


def compute_stats(
    lm: LoadedModel,
    texts: Sequence[str],
    settings: StatsSettings | None = None,
    *,
    use_cache: bool = True,
    progress: Progress = noop,
    label: str = "token statistics",
) -> list[TokenStats]:
    """Per-token statistics for every text (cached). Empty texts give zero-length stats."""
    st = settings or StatsSettings()
    context = st.resolved_context(lm)
    cache = ArrayCache("stats", cache_settings(lm, st), enabled=use_cache)
    results: list[TokenStats | None] = [None] * len(texts)
    hashes = [text_hash(t) for t in texts]
    todo: dict[str, list[int]] = {}
    for i, (t, h) in enumerate(zip(texts, hashes)):
        got = cache.get(h, lambda a, t=t: entry_problem(lm, t, a, st)) if h not in todo else None
        if got is not None:
            results[i] = TokenStats.from_arrays(got)
        else:
            todo.setdefault(h, []).append(i)
    compute_stats.last_cache = cache  # for tests/benchmarks: hits and misses of the last call
    if not todo:
        progress(f"{label}: all {len(texts)} texts cached", 1.0)
        return results  # type: ignore[return-value]

    from .engines import current_engine

    engine = current_engine()
    if engine.distributed:  # the passes run elsewhere (Ray workers); the results land here, in the cache
        from .engines import Partials

        def store(i: int, s: TokenStats) -> None:
            h = hashes[i]
            cache.put(h, s.to_arrays())
            for k in todo[h]:
                results[k] = s

        # a long text's windows done so far, in the same partial entries the local engine resumes from
        partial = Partials(lambda i: cache.get_partial(hashes[i]), lambda i, a: cache.put_partial(hashes[i], a),
                           lambda i: cache.drop_partial(hashes[i]))
        engine.token_stats(lm, {idxs[0]: texts[idxs[0]] for idxs in todo.values()}, st, store,
                           progress=progress, label=label, partial=partial)
        progress(f"{label}: done ({len(todo)} texts scored, {len(texts) - sum(len(v) for v in todo.values())} "
                 f"cached)", 1.0)
        return results  # type: ignore[return-value]

    prefix = resolve_prefix(lm, st)
    condition = tokenize(lm, st.condition) if st.condition else None
    vocab = lm.vocab_size
    jobs = []
    for h, idxs in todo.items():
        i = idxs[0]
        jobs.append(_Job(i, texts[i], tokenize(lm, texts[i]), prefix, context, vocab, st.vocab_probs, condition))
    total_windows = sum(len(j.windows) for j in jobs) or 1
    done = {"w": 0}

    def tick():
        done["w"] = min(total_windows, done["w"] + 1)  # a fallback to the plain path may count a text twice
        progress(f"{label}: {done['w']}/{total_windows} windows", done["w"] / total_windows)

    def finish(job: _Job):
        h = hashes[job.idx]
        s = job.stats()
        cache.put(h, s.to_arrays())
        cache.drop_partial(h)
        for i in todo[h]:
            results[i] = s

    progress(f"{label}: 0/{total_windows} windows", 0.0)  # the stage starts now, not at its first batch's end
    t_start = time.time()
    short = [j for j in jobs if len(j.windows) <= 1]
    long = [j for j in jobs if len(j.windows) > 1]
    for j in short:
        if not j.windows:  # fewer than two tokens in the sequence: nothing to predict
            finish(j)
    budget = _Budget(st.resolved_batch_tokens(lm))  # halved, for the rest of the call, when a batch runs out of memory
    if condition is not None:  # texts that see the whole condition: its key/value cache is computed once
        shared = [j for j in short if j.windows and j.n_condition == len(condition)]
        via_cache = _run_conditioned(lm, shared, budget, finish, tick)
        short = [j for j in short if j not in via_cache]
    elif not st.vocab_probs:  # one-word neighbours, modified copies: run from where they differ
        via_base = set(map(id, _run_families(lm, [j for j in short if j.windows], budget, finish, tick)))
        short = [j for j in short if id(j) not in via_base]
    _run_short(lm, [j for j in short if j.windows], budget, finish, tick)
    for j in long:
        _run_long(lm, j, cache, hashes[j.idx], budget, finish, tick)
    from .estimate import record

    if use_cache:  # this machine's speed, for the estimate shown before a run (nothing written with --no-cache)
        record(sum(len(j.seq) for j in jobs), time.time() - t_start, lm.n_params, lm.device)
    progress(f"{label}: done ({len(jobs)} texts scored, {len(texts) - sum(len(v) for v in todo.values())} cached)", 1.0)
    return results  # type: ignore[return-value]


compute_stats.last_cache = None  # type: ignore[attr-defined]


def plan_windows(lm: LoadedModel, texts: Sequence[str], settings: StatsSettings
                 ) -> list[tuple[int, list[int], tuple]]:
    """For each text: its number of tokens, the token index where each of its windows' predictions
    start (what a distributed engine needs to cut a long text into window ranges and put them back),
    and its first ``SHARED_MIN_TOKENS`` + 2 tokens (texts that share them may share a prefix pass)."""
    jobs = _jobs(lm, texts, settings, want_vp=False)
    return [(len(j.ids), [max(0, s + 1 - j.offset) for s in j.windows], tuple(j.ids[:SHARED_MIN_TOKENS + 2].tolist()))
            for j in jobs]


def window_range_stats(lm: LoadedModel, text: str, settings: StatsSettings, w0: int, w1: int
                       ) -> tuple[int, int, dict[str, np.ndarray]]:
    """The statistics that windows ``[w0, w1)`` of ``text`` give: ``(t0, t1, arrays)`` with the per-token
    arrays of text tokens ``[t0, t1)`` and, with ``vocab_probs``, ``"vp"``: those windows' share of the
    summed predicted distribution. Windows are independent passes, so a long text's ranges can run on
    different workers; put back in order they are :func:`compute_stats`'s arrays."""
    (job,) = _jobs(lm, [text], settings, want_vp=settings.vocab_probs)
    if not (0 <= w0 < w1 <= len(job.windows)):
        raise ValueError(f"window range [{w0}, {w1}) outside the text's {len(job.windows)} windows")
    job.windows = job.windows[:w1]
    job.done_windows = w0
    _run_long(lm, job, ArrayCache("stats", {}, enabled=False), "", _Budget(settings.resolved_batch_tokens(lm)),
              lambda j: None, lambda: None)
    t0 = max(0, job.windows[w0] + 1 - job.offset)
    t1 = min(len(job.ids), job.windows[w1 - 1] + len(job.window(w1 - 1)) - job.offset)
    arrays = {f: job.out[f][t0:t1] for f in (*FIELDS, *INT_FIELDS)}
    if job.vp is not None:
        arrays["vp"] = job.vp
    return t0, t1, arrays


def _jobs(lm: LoadedModel, texts: Sequence[str], st: StatsSettings, want_vp: bool) -> list[_Job]:
    prefix = resolve_prefix(lm, st)
    condition = tokenize(lm, st.condition) if st.condition else None
    context = st.resolved_context(lm)
    vocab = lm.vocab_size if want_vp else 0
    return [_Job(i, t, tokenize(lm, t), prefix, context, vocab, want_vp, condition) for i, t in enumerate(texts)]


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


class _Budget:
    """The batch-token budget of one :func:`compute_stats` call; halved on out-of-memory."""

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


def _run_short(lm, jobs: list[_Job], batch_tokens, finish, tick):
    budget = batch_tokens if isinstance(batch_tokens, _Budget) else _Budget(batch_tokens)
    lengths = [len(j.window(0)) for j in jobs]
    queue = [[jobs[i] for i in b] for b in batches_by_length(lengths, budget.tokens, tight=True)]
    while queue:
        batch = queue.pop(0)
        items = [(j, 0) for j in batch]
        try:
            _forward(lm, items)
        except _OutOfMemory:
            length = max(len(j.window(0)) for j in batch)
            budget.halve(lm, len(batch), length)
            sub = batches_by_length([len(j.window(0)) for j in batch], budget.tokens)
            if len(sub) == 1:  # the budget still holds the whole batch: split it in two
                half = (len(batch) + 1) // 2
                sub = [list(range(half)), list(range(half, len(batch)))]
            queue[:0] = [[batch[i] for i in b] for b in sub]
            continue
        for j, _ in items:
            tick()
            finish(j)


def _run_conditioned(lm, jobs: list[_Job], budget: "_Budget", finish, tick) -> list[_Job]:
    """Conditioned texts that fit in one window with the whole condition, scored against a key/value
    cache of ``[prefix token] + condition`` computed once (the condition is often much longer than
    the texts: without the cache every text would pay for it again). The same numbers as the full
    sequence pass up to float rounding. Returns the jobs done; a model that cannot take a cache
    (an exception other than out-of-memory on the first batch) leaves them all to the plain path.
    """
    import torch

    if not jobs:
        return []
    head = jobs[0].seq[: jobs[0].offset]  # identical for these jobs: [prefix] + the whole condition
    dev = lm.device
    try:
        with torch.inference_mode():
            out = lm.model(input_ids=torch.from_numpy(head[None].astype(np.int64)).to(dev), use_cache=True)
        cache, last = returned_cache(out), out.logits[0, -1:].float()
        del out
        if cache is None:
            return []
    except Exception as e:  # noqa: BLE001 - no cache support (or no memory for it): the plain path
        if _is_oom(e):
            _free_memory(lm)
        return []
    n_head = len(head)
    done: list[_Job] = []
    # a row holds the head's cached keys/values as well as the text: budget both
    queue = [[jobs[i] for i in b] for b in batches_by_length([n_head + len(j.ids) for j in jobs], budget.tokens)]
    while queue:
        batch = queue.pop(0)
        try:
            pending = _forward_cached(lm, batch, cache, last, n_head)
        except _OutOfMemory:
            budget.halve(lm, len(batch), n_head + max(len(j.ids) for j in batch))
            half = (len(batch) + 1) // 2
            queue[:0] = [b for b in (batch[:half], batch[half:]) if b]
            continue
        except Exception:  # noqa: BLE001 - the model took the cache for the head but not for a batch
            if done:
                raise
            return []
        for job, ti, red in pending:
            for f in (*FIELDS, *INT_FIELDS):
                job.out[f][ti] = red[f]
            if job.vp is not None:
                job.vp += red["vp"]
        for j in batch:
            tick()
            finish(j)
            done.append(j)
    return done


def _forward_cached(lm, batch: list[_Job], head_cache, head_last, n_head: int):
    """One batch of texts after the cached head; reduced per-token arrays (nothing written yet)."""
    import copy

    import torch

    L = max(len(j.ids) for j in batch)
    pad = lm.tokenizer.pad_token_id or 0
    ids = np.full((len(batch), L), pad, dtype=np.int64)
    mask = np.zeros((len(batch), n_head + L), dtype=np.int64)
    mask[:, :n_head] = 1
    for r, j in enumerate(batch):
        ids[r, : len(j.ids)] = j.ids
        mask[r, n_head : n_head + len(j.ids)] = 1
    dev = lm.device
    pending = []
    try:
        cache = copy.deepcopy(head_cache)
        if len(batch) > 1:
            cache.batch_repeat_interleave(len(batch))
        with torch.inference_mode():
            out = lm.model(input_ids=torch.from_numpy(ids).to(dev), attention_mask=torch.from_numpy(mask).to(dev),
                           **with_cache(lm.model, cache), use_cache=True)
            logits = out.logits
            del out, cache
            for r, j in enumerate(batch):
                n = len(j.ids)
                # text token 0 is predicted by the head's last position, token t by text position t-1
                lg_all = torch.cat([head_last.to(logits.device), logits[r, : n - 1].float()])
                for c0 in range(0, n, REDUCE_CHUNK):
                    c1 = min(n, c0 + REDUCE_CHUNK)
                    targets = torch.from_numpy(j.ids[c0:c1].astype(np.int64)).to(lg_all.device)
                    pending.append((j, np.arange(c0, c1), _reduce(lg_all[c0:c1], targets, j.vp is not None)))
            del logits
    except (RuntimeError, MemoryError) as e:
        if not _is_oom(e):
            raise
        pending.clear()
        raise _OutOfMemory(f"{len(batch)} x {L} tokens after {n_head}") from None
    return pending


def _run_long(lm, job: _Job, cache: ArrayCache, h: str, batch_tokens: int, finish, tick):
    part = cache.get_partial(h)
    if part is not None and int(part["done_windows"]) <= len(job.windows):
        job.done_windows = int(part["done_windows"])
        for f in (*FIELDS, *INT_FIELDS):
            job.out[f] = part[f]
        if job.vp is not None and "vp" in part:
            job.vp = part["vp"]
        for _ in range(job.done_windows):
            tick()
    budget = batch_tokens if isinstance(batch_tokens, _Budget) else _Budget(batch_tokens)
    last_save = time.time()
    w = job.done_windows
    while w < len(job.windows):
        per_batch = max(1, budget.tokens // job.context)
        ws = list(range(w, min(len(job.windows), w + per_batch)))
        try:
            _forward(lm, [(job, k) for k in ws])
        except _OutOfMemory:
            budget.halve(lm, len(ws), job.context)
            continue
        w = ws[-1] + 1
        job.done_windows = w
        for _ in ws:
            tick()
        if time.time() - last_save > PARTIAL_EVERY_S and w < len(job.windows):
            arrays = {**job.out, "done_windows": np.array(w)}
            if job.vp is not None:
                arrays["vp"] = job.vp
            cache.put_partial(h, arrays)
            last_save = time.time()
    finish(job)


# ----------------------------------------------------------------------------- shared prefixes
SHARED_MIN_TOKENS = 4  # texts that share at least this many leading tokens (prefix token included) form a family
SHARED_MAX_FAMILY = 512  # at most this many texts reuse one base text's keys/values
_ALL_FIELDS = (*FIELDS, *INT_FIELDS)


def _lcp(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    d = np.nonzero(a[:n] != b[:n])[0]
    return int(d[0]) if len(d) else n


def _families(jobs: list[_Job]) -> list[tuple[_Job, list[tuple[_Job, int]]]]:
    """Texts that share a long token prefix (the one-word neighbours of a text, modified copies):
    ``(base, [(member, tokens it shares with base)])``. Sorting the token sequences puts all those
    that start with the same ``SHARED_MIN_TOKENS`` tokens in one run; the base is the member that
    shares the most tokens with the others (for neighbours: the one nearest the original text)."""
    cand = sorted((j for j in jobs if len(j.seq) > SHARED_MIN_TOKENS), key=lambda j: j.seq.tolist())
    runs: list[list[_Job]] = []
    for j in cand:
        if runs and len(runs[-1]) < SHARED_MAX_FAMILY and np.array_equal(
                runs[-1][0].seq[:SHARED_MIN_TOKENS], j.seq[:SHARED_MIN_TOKENS]):
            runs[-1].append(j)
        else:
            runs.append([j])
    out = []
    for run in runs:
        if len(run) < 2:
            continue
        adj = np.array([_lcp(a.seq, b.seq) for a, b in zip(run, run[1:])])
        # tokens member b shares with each other member: running minima of the neighbouring LCPs
        shared = [int(np.minimum.accumulate(adj[b:]).sum() + np.minimum.accumulate(adj[:b][::-1]).sum())
                  for b in range(len(run))]
        b = int(np.argmax(shared))
        base = run[b]
        out.append((base, [(j, min(_lcp(base.seq, j.seq), len(j.seq) - 1)) for i, j in enumerate(run) if i != b]))
    return out


def _cache_layers(cache) -> list | None:
    """(keys, values) per layer of a full-attention key/value cache, or None for any other kind
    (sliding windows, linear attention, ...), which this path leaves alone."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        if not layers or any(type(lay).__name__ != "DynamicLayer" for lay in layers):
            return None
        return [(lay.keys, lay.values) for lay in layers]
    if hasattr(cache, "key_cache"):  # transformers 4.x
        return list(zip(cache.key_cache, cache.value_cache))
    return None


def _run_families(lm, jobs: list[_Job], budget: "_Budget", finish, tick) -> list[_Job]:
    """Families of texts that share a prefix (:func:`_families`), scored from where they differ.

    Each family's base text runs once (batched with other bases) and its keys/values are kept;
    every other member then runs only from its first token that differs from its base, attending
    to the base's keys/values for the tokens before it. Rows of many families share one batch
    (each row its own cache rows, attention mask and position ids). Predictions before the first
    difference are the base's own; the rest equal a plain pass up to float rounding. One-word
    neighbours differ from their text from a uniformly placed word on, so a neighbour attack runs
    about half the tokens. A model whose cache cannot be reused like this is caught on the first
    batch (one member is also run plainly and compared) and everything is left to the plain path.
    Returns the jobs done.
    """
    fams = _families(jobs)
    done: list[_Job] = []
    checked = False
    while fams:  # chunks of families whose bases' keys/values are held at once
        chunk, n_tok = [], 0
        while fams and (not chunk or n_tok + len(fams[0][0].seq) <= budget.tokens):
            n_tok += len(fams[0][0].seq)
            chunk.append(fams.pop(0))
        try:
            ok = _run_chunk(lm, chunk, budget, tick, finish, done, check=not checked)
        except _OutOfMemory:
            return done  # the plain path takes the rest, halving its batches as usual
        if not ok:
            return done
        checked = True
    return done


def _run_chunk(lm, chunk, budget: "_Budget", tick, finish, done: list, check: bool) -> bool:
    """One chunk of families: their bases, then their members, each text finished (cached) and
    put in ``done`` as soon as it is reduced, so an interrupted run keeps what it scored. False:
    this model cannot reuse the cache (the texts not in ``done`` go the plain way)."""
    import torch

    dev = lm.device
    kv: list[list] = []  # per base: (keys, values) per layer, [kv_heads, len, dim]
    base_vals: list[dict] = []
    at_p: dict[int, dict] = {}  # id(member) -> reduced prediction of its first differing token
    pad = lm.tokenizer.pad_token_id or 0
    bases = [b for b, _ in chunk]
    for group in batches_by_length([len(b.seq) for b in bases], budget.tokens, tight=True):
        L = max(len(bases[i].seq) for i in group)
        ids = np.full((len(group), L), pad, dtype=np.int64)
        mask = np.zeros((len(group), L), dtype=np.int64)
        for r, i in enumerate(group):
            ids[r, : len(bases[i].seq)] = bases[i].seq
            mask[r, : len(bases[i].seq)] = 1
        try:
            with torch.inference_mode():
                out = lm.model(input_ids=torch.from_numpy(ids).to(dev), attention_mask=torch.from_numpy(mask).to(dev),
                               use_cache=True)
                layers = _cache_layers(returned_cache(out))
                if layers is None:
                    return False
                for r, i in enumerate(group):
                    b, members = chunk[i]
                    n = len(b.seq)
                    kv_i = [(k[r, :, :n].clone(), v[r, :, :n].clone()) for k, v in layers]
                    lg = out.logits[r]
                    vals = _reduce(lg[: n - 1].float(), torch.from_numpy(b.seq[1:]).to(lg.device), False)
                    if members:
                        red = _reduce(lg[[p - 1 for _, p in members]].float(),
                                      torch.tensor([int(m.seq[p]) for m, p in members], device=lg.device), False)
                        for k, (m, _) in enumerate(members):
                            at_p[id(m)] = {f: red[f][k : k + 1] for f in _ALL_FIELDS}
                    kv.append((i, kv_i))
                    base_vals.append((i, vals))
                    _write(b, vals)  # a base is a plain pass with its cache kept: done now
                    tick()
                    finish(b)
                    done.append(b)
                del out, layers
        except Exception as e:  # noqa: BLE001 - no cache support: the plain path
            if _is_oom(e):
                _free_memory(lm)
                raise _OutOfMemory("bases") from None
            if check:
                return False
            raise
    kv_of = dict(kv)
    vals_of = dict(base_vals)
    rows = [(m, p, i) for i, (_, members) in enumerate(chunk) for m, p in members]
    rows.sort(key=lambda r: len(r[0].seq) - r[1])
    queue = [[rows[i] for i in b] for b in batches_by_length([len(m.seq) - p for m, p, _ in rows], budget.tokens, tight=True)]
    any_rows = False
    while queue:
        batch = queue.pop(0)
        H = max(p for _, p, _ in batch)
        if len(batch) > 1 and len(batch) * H > 2 * budget.tokens:  # the rows' cached keys/values too
            half = (len(batch) + 1) // 2
            queue[:0] = [batch[:half], batch[half:]]
            continue
        try:
            pending = _forward_rows(lm, batch, kv_of, vals_of, at_p)
        except _OutOfMemory:
            budget.halve(lm, len(batch), max(len(m.seq) - p for m, p, _ in batch))
            half = (len(batch) + 1) // 2
            queue[:0] = [b for b in (batch[:half], batch[half:]) if b]
            continue
        except Exception:  # noqa: BLE001 - the model did not take the assembled cache
            if any_rows or not check:
                raise
            return False
        if check and not any_rows and not _matches_plain(lm, batch[0][0], pending[0]):
            return False
        any_rows = True
        for (m, _, _), vals in zip(batch, pending):
            _write(m, vals)
            tick()
            finish(m)
            done.append(m)
    return True


def _forward_rows(lm, batch, kv_of, vals_of, at_p) -> list[dict]:
    """Member rows after their bases' first ``p`` tokens; per row the reduced arrays of seq
    positions 1..len-1 (nothing written yet)."""
    import torch
    from transformers import DynamicCache

    H = max(p for _, p, _ in batch)
    S = max(len(m.seq) - p for m, p, _ in batch)
    B = len(batch)
    pad = lm.tokenizer.pad_token_id or 0
    ids = np.full((B, S), pad, dtype=np.int64)
    pos = np.zeros((B, S), dtype=np.int64)
    mask = np.zeros((B, H + S), dtype=np.int64)
    for r, (m, p, _) in enumerate(batch):
        n = len(m.seq) - p
        ids[r, :n] = m.seq[p:]
        pos[r] = p + np.arange(S)
        mask[r, :p] = 1
        mask[r, H : H + n] = 1
    dev = lm.device
    out_rows = []
    try:
        cache = DynamicCache()
        n_layers = len(kv_of[batch[0][2]])
        for li in range(n_layers):
            k0, v0 = kv_of[batch[0][2]][li]
            ks = k0.new_zeros((B, k0.shape[0], H, k0.shape[2]))
            vs = v0.new_zeros((B, v0.shape[0], H, v0.shape[2]))
            for r, (_, p, i) in enumerate(batch):
                k, v = kv_of[i][li]
                ks[r, :, :p] = k[:, :p]
                vs[r, :, :p] = v[:, :p]
            cache.update(ks, vs, li)
        t = lambda a: torch.from_numpy(a).to(dev)  # noqa: E731
        with torch.inference_mode():
            logits = lm.model(input_ids=t(ids), attention_mask=t(mask), position_ids=t(pos),
                              **with_cache(lm.model, cache), use_cache=True).logits
            del cache
            for r, (m, p, i) in enumerate(batch):
                n = len(m.seq) - p
                rest = (_reduce(logits[r, : n - 1].float(), torch.from_numpy(m.seq[p + 1:]).to(logits.device), False)
                        if n > 1 else None)
                out_rows.append({f: np.concatenate([vals_of[i][f][: p - 1], at_p[id(m)][f]]
                                                   + ([rest[f]] if rest is not None else [])) for f in _ALL_FIELDS})
            del logits
    except (RuntimeError, MemoryError) as e:
        if not _is_oom(e):
            raise
        raise _OutOfMemory(f"{B} x {S} tokens after {H}") from None
    return out_rows


def _write(job: _Job, vals: dict) -> None:
    """Predictions of seq positions 1..len-1 into the job's text-token buffers."""
    idx = np.arange(1, len(job.seq)) - job.offset
    keep = idx >= 0
    for f in _ALL_FIELDS:
        job.out[f][idx[keep]] = vals[f][keep]


def _matches_plain(lm, job: _Job, vals: dict) -> bool:
    import torch

    with torch.inference_mode():
        logits = lm.model(input_ids=torch.from_numpy(job.seq[None]).to(lm.device)).logits[0, :-1].float()
        lp = torch.log_softmax(logits, -1).gather(1, torch.from_numpy(job.seq[1:, None]).to(logits.device))[:, 0]
    return bool(np.allclose(vals["logprob"], lp.cpu().numpy(), atol=2e-3, rtol=1e-3))


class _OutOfMemory(Exception):
    """A batch did not fit in memory (CUDA, CPU allocator or Python); the caller retries smaller."""


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
        f"out of memory scoring a single window of {length} tokens (--batch-tokens {batch_tokens} was already "
        "lowered to one window): lower --context (the window length), or use int8/int4 or a smaller model"
    )


def _forward(lm: LoadedModel, items: list[tuple[_Job, int]]):
    """One forward pass over a batch of windows; reduce logits to per-token scalars.

    The job buffers are written only once the whole batch is reduced, so a batch that runs
    out of memory (raised as :class:`_OutOfMemory`) leaves them untouched and can be retried
    in smaller pieces.
    """
    import torch

    wins = [j.window(w) for j, w in items]
    L = max(len(x) for x in wins)
    pad = lm.tokenizer.pad_token_id or 0
    ids = np.full((len(wins), L), pad, dtype=np.int64)
    mask = np.zeros((len(wins), L), dtype=np.int64)
    for r, x in enumerate(wins):
        ids[r, : len(x)] = x
        mask[r, : len(x)] = 1
    dev = lm.device
    pending = []  # (job, text-token indices, reduced arrays)
    try:
        with torch.inference_mode():
            out = lm.model(input_ids=torch.from_numpy(ids).to(dev), attention_mask=torch.from_numpy(mask).to(dev))
            logits = out.logits
            del out
            for r, ((job, w), x) in enumerate(zip(items, wins)):
                n_pred = len(x) - 1
                start_seq = job.windows[w]
                # predictions at window positions 0..n_pred-1 are for seq positions start+1..start+n_pred
                tgt_seq = np.arange(start_seq + 1, start_seq + 1 + n_pred)
                tok_idx = tgt_seq - job.offset  # index into text tokens
                # positions predicting condition tokens (conditioned passes only) are not reduced
                first = max(0, job.offset - 1 - start_seq)
                for c0 in range(first, n_pred, REDUCE_CHUNK):
                    c1 = min(n_pred, c0 + REDUCE_CHUNK)
                    lg = logits[r, c0:c1].float()
                    targets = torch.from_numpy(x[c0 + 1 : c1 + 1]).to(lg.device)
                    pending.append((job, tok_idx[c0:c1], _reduce(lg, targets, job.vp is not None)))
            del logits
    except (RuntimeError, MemoryError) as e:
        if not _is_oom(e):
            raise
        pending.clear()
        raise _OutOfMemory(f"{len(wins)} x {L} tokens") from None
    for job, ti, red in pending:
        for f in (*FIELDS, *INT_FIELDS):
            job.out[f][ti] = red[f]
        if job.vp is not None:
            job.vp += red["vp"]


def _first_argmax(x, mx, block: int = 1024):
    """The first column of each row of ``x`` that holds the row's maximum ``mx`` (``x.argmax(-1)``,
    which, like ``x.max(-1)``, is several times slower than a plain ``amax`` on the CPU): the first
    block of columns whose maximum is ``mx``, then the first column of that block. Exact: only
    comparisons of values taken from ``x`` itself."""
    import torch

    n, v = x.shape
    nb = v // block
    if nb < 2 or x.stride(1) != 1:
        return x.argmax(-1)
    bm = x.as_strided((n, nb, block), (x.stride(0), block, 1)).amax(-1)
    if nb * block < v:
        bm = torch.cat([bm, x[:, nb * block:].amax(-1, keepdim=True)], 1)
    blk = (bm == mx.unsqueeze(1)).view(torch.uint8).argmax(-1)
    cols = (blk.unsqueeze(1) * block + torch.arange(block, device=x.device)).clamp_(max=v - 1)
    seg = x.gather(1, cols)
    return blk * block + (seg == mx.unsqueeze(1)).view(torch.uint8).argmax(-1)


def _reduce(logits, targets, want_vp: bool) -> dict[str, np.ndarray]:
    """Reduce [n, V] logits to per-position scalars (float32 maths)."""
    import torch

    lp = torch.log_softmax(logits, dim=-1)
    p = lp.exp()
    tl = lp.gather(1, targets.long().unsqueeze(1)).squeeze(1)
    # the max and its (first) index, as lp.max(-1) gives them, in a fifth of its time (max with
    # indices and argmax take about 4 ms per 64 positions of a 49k vocabulary; amax 0.2 ms)
    mx = lp.amax(-1)
    top = _first_argmax(lp, mx)
    mu = (p * lp).sum(-1)
    # the variance as E[(lp - mu)^2], not E[lp^2] - mu^2: the difference of two numbers near 100 lost
    # about four digits in float32 (sigma moved by up to 5e-4 with the batch's shape or thread count).
    # In place on one [n, V] buffer: as fast as the old formula (0.49 against 0.51 s per 1,024 positions
    # of a 49k vocabulary; 0.72 s with temporaries)
    dev = lp - mu.unsqueeze(1)
    sigma = dev.square_().mul_(p).sum(-1).sqrt()
    del dev
    # the count of larger log-probabilities as uint8 summed into int32 (a bool sum goes through int64: 3.8
    # against 2.1 ms per 64 positions)
    rank = (lp > tl.unsqueeze(1)).view(torch.uint8).sum(-1, dtype=torch.int32) + 1
    out = {
        "logprob": tl.cpu().numpy().astype(np.float32),
        "max_logprob": mx.cpu().numpy().astype(np.float32),
        "mu": mu.cpu().numpy().astype(np.float32),
        "sigma": sigma.cpu().numpy().astype(np.float32),
        "entropy": (-mu).cpu().numpy().astype(np.float32),
        "rank": rank.cpu().numpy().astype(np.int32),
        "top_id": top.cpu().numpy().astype(np.int32),
    }
    if want_vp:
        out["vp"] = p.sum(0).double().cpu().numpy()
    return out
