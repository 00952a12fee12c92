"""The T5 span-filling neighbour generator (DetectGPT, Mitchell et al. 2023; SMIA §4).

``m`` random content words are replaced by sentinel tokens ``<extra_id_j>`` and a T5-family
model (``AutoModelForSeq2SeqLM``, loaded by ``mia_core.models.load_seq2seq``) fills them by
sampling. Decoding is *constrained* by a logits processor (``_SpanConstraint``) to the
sentinel structure ``<extra_id_0> words <extra_id_1> words ... </s>`` with 1-3 whole-word
tokens per span (``T5_MAX_FILL_TOKENS``), so every sample parses into exactly ``m`` filled
spans, whatever the model. ``n * T5_OVERSAMPLE`` samples are drawn per text and the first
``n`` distinct valid ones kept.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..errors import ModelError
from ..progress import Progress
from .base import Neighbour, NeighbourGenerator, NeighbourSettings
from .words import _token_words, apply_case, content_positions, substitute, text_rng, words

T5_MAX_FILL_TOKENS = 3
T5_OVERSAMPLE = 2


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
    """Neighbours from a T5-family model filling ``m`` masked spans (DetectGPT, Mitchell et al. 2023; SMIA §4).

    Parameters
    ----------
    settings : NeighbourSettings
        ``n``, ``m`` (spans per neighbour), ``seed``.
    model : str
        The seq2seq model: a hub id or a local folder.
    device : str
        Where it runs (``"auto"``: the GPU when there is one).
    batch_size : int
        Masked texts per generation batch.

    Raises
    ------
    ModelError
        A tokenizer with fewer than ``m + 1`` sentinel tokens ``<extra_id_j>``.
    """
    kind = "t5"

    def __init__(self, settings: NeighbourSettings, model: str, *, device: str = "auto", batch_size: int = 32):
        super().__init__(settings)
        import torch

        from ..models import load_seq2seq

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
        """The seq2seq model's identity (a cache key part)."""
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
                rng = text_rng(s.seed, text, 2)
                picks = [sorted(int(x) for x in rng.choice(pos, size=s.m, replace=False))
                         for _ in range(s.n * T5_OVERSAMPLE)]
                masked = [substitute(text, ws, {w: f"<extra_id_{j}>" for j, w in enumerate(pk)}) for pk in picks]
                fills = self._fill(masked, s.m, int(text_rng(s.seed, text, 3).integers(2**31)), sample=True)
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
        """One word to insert before word ``before[i]`` of ``texts[i]``: the first word T5 fills a sentinel put
        there with (greedy), None when it is not alphabetic.

        Parameters
        ----------
        texts : sequence of str
            The texts.
        before : sequence of int
            For each text, the index of the word the new one goes in front of.

        Returns
        -------
        list of str or None
            The lower-cased word for each text, or None.
        """
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
