"""One-word edits of a text: the "modified members" of SMIA (Mozaffari & Marathe 2024 §5.2).

An auditor rarely holds the exact string a model was trained on; SMIA §5.2 evaluates attacks on
members changed by one word, next to the verbatim members. :func:`modify_texts` makes the edits
(``mia_core.pipeline.modified.run_modified`` runs the attacks on them):

* ``duplicate``: a random word is repeated right after itself (``the old man`` ->
  ``the old old man``);
* ``delete``: a random word and one neighbouring space are removed;
* ``add``: a word is inserted before a random lower-case word that follows a space; the
  word is the neighbour generator's first proposal for that gap (``propose_insertions``: the
  offline generator's causal LM proposes it from the left context and re-ranks with the right
  context; a masked LM fills a mask token; T5 fills a sentinel).

Positions are drawn with ``numpy.random.default_rng([seed, text hash, variant])``
(:func:`~mia_core.neighbours.words.text_rng`), so the same member always gets the same edit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import SettingsError
from . import make_generator
from .base import NeighbourSettings
from .words import Word, text_rng, words

VARIANTS = ("duplicate", "delete", "add")


@dataclass(frozen=True)
class Modification:
    """One text's one-word edit (SMIA §5.2): the modified text, which variant, at which word, and whether
    an edit was possible (``ok``; else ``text`` is the original)."""
    text: str  # the modified text (the original when no edit was possible)
    variant: str
    word_index: int  # index (in the original's words) of the word duplicated / deleted / inserted before
    word: str  # the word duplicated, deleted or added
    ok: bool = True


def _rng(seed: int, text: str, variant: str) -> np.random.Generator:
    return text_rng(seed, text, VARIANTS.index(variant))


def _free(text: str, w: Word) -> bool:
    """A plain alphabetic word delimited by spaces/punctuation (not inside ``well-known``)."""
    before = text[w.start - 1] if w.start > 0 else " "
    after = text[w.end] if w.end < len(text) else " "
    return w.text.isalpha() and not (before.isalnum() or before in "-_'’" or after.isalnum() or after in "-_'’")


def duplicate_word(text: str, i: int) -> str:
    """``text`` with word ``i`` (of :func:`~mia_core.neighbours.words.words`) repeated right after itself, a space
    between.

    Parameters
    ----------
    text : str
        The text.
    i : int
        Index of the word among the text's words.

    Returns
    -------
    str
        The edited text.
    """
    w = words(text)[i]
    return text[: w.end] + " " + w.text + text[w.end :]


def delete_word(text: str, i: int) -> str:
    """``text`` without word ``i`` and one neighbouring space (the one after it, else the one before).

    Parameters
    ----------
    text : str
        The text.
    i : int
        Index of the word among the text's words.

    Returns
    -------
    str
        The edited text.
    """
    w = words(text)[i]
    if w.end < len(text) and text[w.end] == " ":
        return text[: w.start] + text[w.end + 1 :]
    if w.start > 0 and text[w.start - 1] == " ":
        return text[: w.start - 1] + text[w.end :]
    return text[: w.start] + text[w.end :]


def insert_word(text: str, before: int, word: str) -> str:
    """``text`` with ``word`` and a space inserted before word ``before``.

    Parameters
    ----------
    text : str
        The text.
    before : int
        Index of the word (among the text's words) the new word goes in front of.
    word : str
        The word to insert.

    Returns
    -------
    str
        The edited text.
    """
    w = words(text)[before]
    return text[: w.start] + word + " " + text[w.start :]


def _deletable(text: str, ws: list[Word], i: int) -> bool:
    w = ws[i]
    if not _free(text, w):
        return False
    left = text[w.start - 1] if w.start > 0 else ""
    right = text[w.end] if w.end < len(text) else ""
    # one side must be a space we can remove, and removing must not glue two words together
    return right == " " or left == " "


def _candidates(text: str, ws: list[Word], variant: str) -> list[int]:
    """The word positions ``variant`` may edit."""
    if variant == "duplicate":
        return [i for i, w in enumerate(ws) if _free(text, w)]
    if variant == "delete":
        return [i for i in range(len(ws)) if _deletable(text, ws, i)] if len(ws) > 1 else []
    return [i for i, w in enumerate(ws) if i > 0 and w.text.islower() and w.text.isalpha()
            and w.start > 0 and text[w.start - 1] == " "]


def modify_texts(texts: Sequence[str], variant: str, *, seed: int = 0, generator=None,
                 neighbours: NeighbourSettings | None = None) -> list[Modification]:
    """One-word edit of each text. ``generator`` (or ``neighbours`` settings) proposes added words."""
    if variant not in VARIANTS:
        raise SettingsError(f"unknown modification {variant!r}: choose from {', '.join(VARIANTS)}")
    out: list[Modification | None] = [None] * len(texts)
    add_jobs: list[tuple[int, int]] = []
    for k, t in enumerate(texts):
        ws = words(t)
        rng = _rng(seed, t, variant)
        cand = _candidates(t, ws, variant)
        if not cand:
            out[k] = Modification(t, variant, -1, "", ok=False)
            continue
        i = int(rng.choice(cand))
        if variant == "duplicate":
            out[k] = Modification(duplicate_word(t, i), variant, i, ws[i].text)
        elif variant == "delete":
            out[k] = Modification(delete_word(t, i), variant, i, ws[i].text)
        else:
            add_jobs.append((k, i))
    if add_jobs:
        gen = generator or make_generator(neighbours or NeighbourSettings())
        props = gen.propose_insertions([texts[k] for k, _ in add_jobs], [i for _, i in add_jobs])
        for (k, i), w in zip(add_jobs, props):
            if w:
                out[k] = Modification(insert_word(texts[k], i, w), variant, i, w)
            else:
                out[k] = Modification(texts[k], variant, i, "", ok=False)
    return out  # type: ignore[return-value]
