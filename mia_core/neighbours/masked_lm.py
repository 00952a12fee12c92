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


SLOT_SPACING = 12


def same_stem(a: str, b: str) -> bool:
    """Whether ``b`` looks like an inflection or derivation of ``a`` (walked/walks, road/roads,
    friend/friendship, carrying/carried): a common prefix of at least 3 letters that leaves at
    most 3 letters of the shorter word. Such swaps change the grammar, not the meaning, so
    they are not proposed (irregular forms, know/knew, pass)."""
    a, b = a.lower(), b.lower()
    k = 0
    for x, y in zip(a, b):
        if x != y:
            break
        k += 1
    return k >= 3 and k >= min(len(a), len(b)) - 3


class MaskedLMGenerator(NeighbourGenerator):
    """Neighbours from a masked LM with embedding dropout on the replaced word (Mattern et al. 2023 §2.2).

    Parameters
    ----------
    settings : NeighbourSettings
        ``n``, ``m``, ``dropout``, ``seed``.
    model : str
        The masked LM: a hub id or a local folder (it needs a fast tokenizer, for word offsets).
    device : str
        Where it runs (``"auto"``: the GPU when there is one).
    batch_tokens : int
        Tokens per forward batch.
    spacing : int
        Fewest tokens between two positions blurred in the same forward row (0: one position per row, the
        paper's procedure).

    Raises
    ------
    ModelError
        A model whose tokenizer is not a fast one.
    """
    kind = "masked-lm"

    def __init__(self, settings: NeighbourSettings, model: str, *, device: str = "auto", batch_tokens: int = 8192,
                 spacing: int = SLOT_SPACING):
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
        self.stop = np.array([c.lower() in STOPWORDS for c in self.clean], dtype=bool)
        self.batch_tokens = batch_tokens
        self.spacing = int(spacing)
        self.model_spec = model

    @property
    def identity(self) -> str:
        """The masked LM's identity (a cache key part: the same weights give the same neighbours)."""
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

    def cache_settings(self) -> dict:
        """The base settings plus ``slot_spacing`` (the packing changes which positions share a forward pass)."""
        return {**super().cache_settings(), "slot_spacing": self.spacing}

    def _pack(self, positions: list[int]) -> list[list[int]]:
        """Token positions -> rows of positions at least ``spacing`` tokens apart (one forward pass
        each); ``spacing`` 0 puts every position in a row of its own (the paper's procedure)."""
        rows: list[list[int]] = []
        for j in sorted(positions):
            for r in rows:
                if self.spacing and j - r[-1] >= self.spacing:
                    r.append(j)
                    break
            else:
                rows.append([j])
        return rows

    def _split_model(self):
        """(encoder, head) of a BERT/RoBERTa-style masked LM, so the vocabulary projection runs at
        the substituted positions only; None for other architectures (full logits)."""
        m = self.mlm.model
        base = getattr(m, getattr(m, "base_model_prefix", ""), None)
        head = getattr(m, "cls", None) or getattr(m, "lm_head", None)
        return (base, head) if base is not None and head is not None else None

    def _forward_rows(self, rows: list[tuple[list[int], list[tuple[int, np.ndarray | None]]]], on_batch=None):
        """Rows (token ids, [(position, dropout mask or None)]) -> per row, a [positions, V] tensor of
        log-probabilities at its positions. Rows are length-sorted into batches of about
        ``batch_tokens`` tokens; ``on_batch(row indices, log-probs)`` (if given) receives each
        batch instead of the result being kept (memory stays bounded at any number of texts)."""
        import torch

        model = self.mlm.model
        dev = self.mlm.device
        emb_layer = model.get_input_embeddings()
        split = self._split_model()
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
            rr = torch.tensor([r for r, k in enumerate(idx) for _ in rows[k][1]], dtype=torch.long)
            pp = torch.tensor([pos for k in idx for pos, _ in rows[k][1]], dtype=torch.long)
            with torch.inference_mode():
                emb = emb_layer(ids.to(dev))
                for r, k in enumerate(idx):
                    for pos, mask in rows[k][1]:
                        if mask is not None:
                            emb[r, pos] = emb[r, pos] * torch.from_numpy(mask).to(emb.device, emb.dtype)
                if split is not None:
                    hidden = split[0](inputs_embeds=emb, attention_mask=att.to(dev)).last_hidden_state
                    sel = split[1](hidden[rr.to(dev), pp.to(dev)])
                else:
                    sel = model(inputs_embeds=emb, attention_mask=att.to(dev)).logits[rr.to(dev), pp.to(dev)]
                lp = torch.log_softmax(sel.float(), dim=-1).cpu()
            parts, k0 = [], 0
            for k in idx:
                parts.append(lp[k0 : k0 + len(rows[k][1])])
                k0 += len(rows[k][1])
            if on_batch is not None:
                on_batch(idx, parts)
            else:
                for k, part in zip(idx, parts):
                    out[k] = part
        return out

    def _generate(self, texts: list[str], progress: Progress) -> list[list[Neighbour]]:
        import torch

        s = self.settings
        dim = self.mlm.model.get_input_embeddings().weight.shape[1]
        V = int(self.whole.shape[0])
        whole = torch.from_numpy(self.whole)
        content = whole & ~torch.from_numpy(self.stop)
        infos = [None] * len(texts)
        rows: list[tuple[list[int], list[tuple[int, np.ndarray | None]]]] = []
        row_meta: list[list[tuple[int, int]]] = []  # per row: (text, word) of each position
        for i, t in enumerate(texts):
            ws = words(t)
            enc = self._encode(t)
            slots = self._slots(t, ws, enc)  # word -> token position
            infos[i] = (ws, enc, slots)
            word_at = {j: w for w, j in slots.items()}
            for packed in self._pack(list(slots.values())):
                rows.append((list(enc["input_ids"]), [(j, self._dropout_mask(t, word_at[j], dim)) for j in packed]))
                row_meta.append([(i, word_at[j]) for j in packed])
        cands: list[list[tuple[int, str, float]]] = [[] for _ in texts]
        k_top = min(4 * s.n + 8, int(content.sum()))
        done = [0]

        def take(idx: list[int], parts: list) -> None:
            for k, lp in zip(idx, parts):
                lp = lp[:, :V]
                allowed = whole[:V].expand(lp.shape[0], V).clone()
                for r, (i, w) in enumerate(row_meta[k]):
                    ws, enc, slots = infos[i]
                    allowed[r, enc["input_ids"][slots[w]]] = False
                    for tid in self.by_word.get(ws[w].text.lower(), ()):
                        if tid < V:
                            allowed[r, tid] = False
                masked = torch.where(allowed, lp, torch.full_like(lp, -math.inf))
                logz = torch.logsumexp(masked, -1)
                # candidates: renormalised over every allowed word, stop words never proposed
                vals, tops = torch.topk(torch.where(content[:V], masked, torch.full_like(lp, -math.inf)), k_top, -1)
                for r, (i, w) in enumerate(row_meta[k]):
                    orig = infos[i][0][w].text
                    kept: list[str] = []
                    for v, tid in zip((vals[r] - logz[r]).tolist(), tops[r].tolist()):
                        if v == -math.inf:
                            break
                        cased = apply_case(orig, self.clean[tid])
                        if cased is None or any(c.lower() == cased.lower() for c in kept) or same_stem(orig, cased):
                            continue
                        kept.append(cased)
                        cands[i].append((w, cased, v))
                        if len(kept) >= s.n:
                            break
                done[0] += 1
            progress(f"{done[0]}/{len(rows)} proposer passes", done[0] / max(len(rows), 1))

        if rows:
            self._forward_rows(rows, on_batch=take)
        return [_select(cands[i], s.n, s.m, texts[i], infos[i][0]) for i in range(len(texts))]

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
            rows.append((list(enc["input_ids"]), [(pos[0], None)]))
            excl = {w.text.lower()} | ({ws[before[i] - 1].text.lower()} if before[i] > 0 else set())
            where.append((i, excl))
        out: list[str | None] = [None] * len(texts)
        whole = torch.from_numpy(self.whole)
        for (i, excl), lp in zip(where, self._forward_rows(rows) if rows else []):
            lp = lp[0]
            V = min(lp.shape[0], whole.shape[0])
            masked = torch.where(whole[:V], lp[:V], torch.full_like(lp[:V], -math.inf))
            for tid in torch.topk(masked, 50).indices.tolist():
                c = self.clean[tid]
                if c.islower() and c not in excl:
                    out[i] = c
                    break
        return out
