"""Settings, the neighbour record and the generator base class (caching, bookkeeping).

``NeighbourSettings`` says how neighbours are made (generator spec, ``n`` neighbours with
``m`` replaced words each, the masked LM's embedding dropout ``p`` -- 0.7 after Mattern et
al. 2023 §2.2 -- and the seed); ``NeighbourGenerator.generate`` serves cached neighbours and
asks the subclass for the rest. Cache entries (``mia_core.cache``, namespace ``neighbours``)
are keyed by the generator's identity, its settings, ``NEIGHBOURS_VERSION`` and the text
hash; neighbour texts are stored as a numpy unicode array (``to_arrays`` / ``from_arrays``).
``_select`` turns scored single substitutions into the ``n`` best neighbours (for ``m > 1``,
combinations at distinct positions scored by the sum of their log-scores).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..cache import ArrayCache, text_hash
from ..engines import Workload, current_engine
from ..errors import SettingsError
from ..progress import Progress, noop
from .words import Word, substitute

NEIGHBOURS_VERSION = 3
GENERATORS = ("offline", "masked-lm", "t5")
DEFAULT_GENERATOR = "masked-lm:embedded"  # the embedded independent proposer (neighbours.proposer)
DEFAULT_N = 25
DEFAULT_M = 1
DEFAULT_DROPOUT = 0.7  # Mattern et al. 2023 §2.2


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


@dataclass(frozen=True)
class NeighbourSettings:
    """How neighbours are made. ``generator``: ``offline`` | ``offline:MODEL`` |
    ``masked-lm:MODEL`` | ``t5:MODEL``; ``n`` neighbours per text with ``m`` replaced words
    (or ``m`` masked spans for T5); ``dropout`` for the masked LM; ``seed``."""

    generator: str = DEFAULT_GENERATOR
    n: int = DEFAULT_N
    m: int = DEFAULT_M
    dropout: float = DEFAULT_DROPOUT
    seed: int = 0

    def validate(self) -> "NeighbourSettings":
        """These settings, checked; returns ``self``.

        Raises
        ------
        SettingsError
            An unknown generator spec (:func:`parse_generator_spec`), ``n`` or ``m`` not a whole number >= 1,
            ``dropout`` outside [0, 1), or ``seed`` not a whole number >= 0.
        """
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
        """The settings as a plain dict (numbers as int / float), as recorded and sent to workers."""
        return {"generator": self.generator, "n": int(self.n), "m": int(self.m),
                "dropout": float(self.dropout), "seed": int(self.seed)}


def parse_generator_spec(spec: str) -> tuple[str, str | None]:
    """``"offline"`` -> ("offline", None); ``"masked-lm:bert-base-uncased"`` -> ("masked-lm", ...)."""
    s = (spec or DEFAULT_GENERATOR).strip()
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
        """The generator's model identity (part of the cache key: another model, other neighbours); per subclass."""
        raise NotImplementedError

    def cache_settings(self) -> dict:
        """What the cached neighbours depend on besides the text: the kind, the model identity, ``n``, ``m``,
        ``seed`` (``dropout`` for the masked LM only) and :data:`NEIGHBOURS_VERSION`.
        """
        d = self.settings.to_dict()
        d.pop("generator")
        if self.kind != "masked-lm":
            d.pop("dropout")
        return {"kind": self.kind, "model": self.identity, **d, "version": NEIGHBOURS_VERSION}

    def describe(self) -> dict:
        """The settings, the generator's kind and its model identity, for a run's record."""
        return {**self.settings.to_dict(), "kind": self.kind, "model_identity": self.identity}

    def generate(self, texts: Sequence[str], *, use_cache: bool = True, progress: Progress = noop,
                 label: str = "neighbours") -> list[list[Neighbour]]:
        """Neighbours of every text (cached); a text too short to vary gets fewer or none.

        Parameters
        ----------
        texts : sequence of str
            The texts, duplicates allowed (each distinct text is varied once).
        use_cache : bool
            Read and write the disk cache (namespace ``neighbours``).
        progress : Progress
            Progress callback.
        label : str
            What the progress messages call this step.

        Returns
        -------
        list of list of Neighbour
            The neighbours of each text, in order.
        """
        cache = ArrayCache("neighbours", self.cache_settings(), enabled=use_cache)
        look = cache.lookup([text_hash(t) for t in texts], from_arrays)
        self.last_cache = cache
        if not look.missing:
            progress(f"{label}: all {len(texts)} texts cached", 1.0)
            return look.results
        keys = list(look.missing)

        def sub(msg: str, frac: float) -> None:
            progress(f"{label}: {msg}", frac)

        progress(f"{label}: {len(keys)} texts to do", 0.0)

        def store(k: int, t_a: int, t_b: int, arrays: dict) -> bool:
            cache.put(keys[k], arrays)
            look.fill(keys[k], from_arrays(arrays))
            return True

        # on this process or on Ray workers (each building this generator once); stored here as they come
        engine = current_engine()
        items = [{"idx": k, "text": texts[look.first(h)]} for k, h in enumerate(keys)]
        units = engine.cut(items, [len(it["text"].split()) for it in items])  # a unit's cost: its words
        engine.map(NeighbourWorkload(self), units, store, progress=sub, label="made")
        progress(f"{label}: done ({len(keys)} texts, {look.n_cached} cached)", 1.0)
        return look.results

    def _generate(self, texts: list[str], progress: Progress) -> list[list[Neighbour]]:  # pragma: no cover
        raise NotImplementedError

    def propose_insertions(self, texts: Sequence[str], before: Sequence[int]) -> list[str | None]:  # pragma: no cover
        """One word to insert before word ``before[i]`` of ``texts[i]`` (lower-case, whole word)."""
        raise NotImplementedError


class NeighbourWorkload(Workload):
    """Neighbours as an engine workload (:class:`mia_core.engines.Workload`): the local engine runs the
    driver's own generator; a Ray worker builds the same generator class once from its settings. Each
    text's neighbours come back as arrays (:func:`to_arrays`)."""

    kind = "neighbours"

    def __init__(self, gen: NeighbourGenerator):
        super().__init__(gen, {"generator": type(gen), "settings": gen.settings.to_dict(), "identity": gen.identity})

    @classmethod
    def build(cls, init: dict, device: str):
        """On a worker: ``(generator, identity)``, the driver's generator class rebuilt from its settings on
        ``device``.
        """
        settings = NeighbourSettings(**init["settings"])
        gen = init["generator"](settings, parse_generator_spec(settings.generator)[1], device=device)
        return gen, gen.identity

    @classmethod
    def work(cls, gen, init: dict, items: list[dict], emit, progress: Progress = noop) -> None:
        """A unit's neighbours: ``emit(idx, -1, -1, arrays)`` per text, the arrays of :func:`to_arrays`."""
        made = gen._generate([it["text"] for it in items], progress)
        for it, nbs in zip(items, made):
            emit(it["idx"], -1, -1, to_arrays(nbs))


def to_arrays(nbs: list[Neighbour]) -> dict[str, np.ndarray]:
    """A text's neighbours as the arrays its cache entry stores (no pickled objects).

    Returns
    -------
    dict
        ``text`` (one per neighbour), ``word_index`` / ``old`` / ``new`` (``(n, k)``, ``k`` the most replaced
        words of any neighbour, padded with -1 and ``""``) and ``score``.
    """
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


def from_arrays(d: dict[str, np.ndarray]) -> list[Neighbour]:
    """The neighbours back from :func:`to_arrays`' arrays (padding dropped)."""
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
