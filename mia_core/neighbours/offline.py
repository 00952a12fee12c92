"""The offline neighbour generator: a causal LM proposes from the left, re-ranks with the right.

A stand-in for the masked-LM generator (Mattern et al. 2023) that needs no model from the
hub: the embedded causal LM (SmolLM2-135M, ``load_causal_lm()``; ``offline:MODEL`` for
another) proposes words from the **left context** -- one forward pass gives the next-token
distribution at every position at once -- and the candidates are **re-ranked by how likely
the right context stays**: for each candidate ``w`` at word ``i`` the causal LM scores ``w``
followed by the next ``R = 6`` original tokens, re-using the key/value cache of the left
context, so a candidate costs about ``1 + R`` token evaluations::

    delta(w) = [log p(x_{i+1..i+R} | x_<i, w) - log p(x_{i+1..i+R} | x_<i, x_i)]
               + 0.1 [log p(w | x_<i) - log p(x_i | x_<i)]

and the ``n`` substitutions with the highest ``delta`` are kept. Candidates are
single-token, alphabetic, whole English words (``words._english_words``), never the original
word (case-insensitively); positions are drawn with the seed among content words. The
package docstring (``mia_core.neighbours``) explains why the right context does the ranking.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..progress import Progress, noop
from .base import Neighbour, NeighbourGenerator, NeighbourSettings, _select
from .words import STOPWORDS, Word, _english_words, _token_words, apply_case, content_positions, text_rng, words

OFFLINE_RIGHT_TOKENS = 6  # right-context tokens re-scored after a candidate
OFFLINE_LEFT_WEIGHT = 0.1  # weight of the left-context log-ratio in the offline ranking (see the docstring)
OFFLINE_CANDIDATES = 3  # candidates kept per position before re-ranking
OFFLINE_RAW_TOP = 64  # raw proposals inspected per position (before the word filters)
MAX_TEXT_TOKENS = 1024  # positions are chosen in the first MAX_TEXT_TOKENS tokens of a text


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
        from ..models import load_causal_lm
        from ..stats import prefix_token_id

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
        """The proposer LM's identity (a cache key part: the same weights give the same neighbours)."""
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

        from ..models import returned_cache

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
        layers = [(layer.keys, layer.values) for layer in returned_cache(out).layers]
        return layers, lps

    def _right_pass(self, layers, rows: list[tuple[int, int, list[int]]]) -> np.ndarray:
        """Sum of log p(new[1:] | left context, new[:1]) for rows ``(plan index, t, new ids)``.

        ``t``: length of the left context in the cached sequence. The cached keys/values of
        the text are re-used (:func:`mia_core.stats.continue_from_cache`: rows attend to the
        first ``t`` cached positions only).
        """
        import torch

        from ..stats.continuation import continue_from_cache, stacked_cache

        out = np.zeros(len(rows))
        for c0 in range(0, len(rows), self.rows_per_batch):
            chunk = rows[c0 : c0 + self.rows_per_batch]
            if all(len(r[2]) < 2 for r in chunk):
                continue
            T = max(r[1] for r in chunk)
            with torch.inference_mode():
                cache = stacked_cache([([(k[j], v[j]) for k, v in layers], t) for j, t, _ in chunk])
                logits = continue_from_cache(self.lm, cache, T, [t for _, t, _ in chunk],
                                             [np.asarray(nt, dtype=np.int64) for _, _, nt in chunk])
                del cache
                lp = torch.log_softmax(logits.float(), dim=-1)
                n = logits.shape[1]
                tgt = torch.zeros((len(chunk), n), dtype=torch.long)
                for r, (_, _, nt) in enumerate(chunk):
                    tgt[r, : len(nt)] = torch.tensor(nt, dtype=torch.long)
                g = lp[:, :-1].gather(2, tgt[:, 1:].to(lp.device).unsqueeze(-1)).squeeze(-1).cpu().numpy()
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
        from ..stats import batches_by_length

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
        rngs = [text_rng(s.seed, p.text) for p in plans]
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
            self._score_round(plans, todo, chosen, cands, progress if rnd == 0 else noop)
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
