"""The masked-LM neighbour generator (Mattern et al. 2023 §2.2, after Zhou et al. 2019).

Any Hugging Face masked LM (bert-base-uncased, roberta-base, a local folder...). For a word
position ``i`` the original token is kept but **dropout with rate p (default 0.7) is applied
to its input embedding only** (``inputs_embeds``, the other positions untouched), so the
masked LM sees a blurred version of the word and proposes substitutes that fit the context
*and* stay close to the original meaning. The MLM distribution at ``i`` is taken, the
original token (and its case variants) excluded, and renormalised over whole-word tokens::

    p_swap(w' | x, i) = p_mlm(w' | x~_i) / sum_{w'' != x_i} p_mlm(w'' | x~_i)

Every (position, candidate) pair is scored by that probability and the ``n`` best pairs
across all positions make the ``n`` neighbours (``base._select``; the paper's best setting
was n = 100, m = 1). Positions are the content words that the MLM tokenises as one
whole-word token. The model is loaded by ``mia_core.models.load_masked_lm``.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..errors import ModelError
from ..progress import Progress
from .base import Neighbour, NeighbourGenerator, NeighbourSettings, _select
from .words import STOPWORDS, Word, _token_words, apply_case, content_positions, text_rng, words


class MaskedLMGenerator(NeighbourGenerator):
    kind = "masked-lm"

    def __init__(self, settings: NeighbourSettings, model: str, *, device: str = "auto", batch_tokens: int = 8192):
        super().__init__(settings)
        from ..models import load_masked_lm

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
        keep = text_rng(self.settings.seed, text, 1, word).random(dim) >= p
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
