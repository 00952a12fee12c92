"""Generating a batch of traps (Meeus, Shilov, Faysse and de Montjoye, ICML 2024, §3 and their ``gen_traps.py``).

Candidates are sampled from the generator unconditionally (from its start token), each row at its own temperature
aimed at the buckets still open (:class:`Aim`), each exactly ``tokens`` long (the end-of-text token is suppressed
until then). A candidate is kept only if it passes every filter, in this order:

1. *round trip*: decoding it and encoding the text again gives the same tokens, and it holds no special token, no
   control character and no white space at its end (a copy is followed by the document's own);
2. *perplexity*: the generator's perplexity on it (given the start token, as the test scores it) is in
   ``[min_perplexity, max_perplexity)``, and its bucket (equal widths) is not full: each bucket takes
   ``count / buckets`` traps, so that the batch spans the perplexity range in equal parts;
3. *unique*: the Jaccard similarity of its token set to every accepted trap's is at most ``jaccard`` (0.2), and it
   shares no 13-word sequence with the owner's documents (``avoid``).

Only then, on the whole accepted batch, are the traps split (:func:`mia_core.traps.record.assign`).
"""
from __future__ import annotations

import hashlib
import math
import re
import time
from pathlib import Path

import numpy as np

from ..errors import DataError, SettingsError
from ..progress import Progress, noop
from .insert import document_files, ngrams, read_document
from .options import MakeOptions

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u2028\u2029\ufeff]")


def avoid_ngrams(path) -> tuple[set, dict]:
    """The 13-grams of the owner's documents at ``path`` (a folder of .txt / .md files, or one file), and what was
    read (files and their digest)."""

    files = document_files([path])
    grams: set = set()
    h = hashlib.sha256()
    for f in files:
        text = read_document(f)
        h.update(text.encode("utf-8"))
        grams |= ngrams(text)
    return grams, {"files": len(files), "sha256": h.hexdigest()}


def model_digests(lm) -> dict:
    """SHA-256 of the generator's weights (every parameter and buffer, by name, as stored) and of its tokenizer (its
    vocabulary and special tokens): what identifies it beside its name."""
    w = hashlib.sha256()
    for name, t in sorted(lm.model.state_dict().items()):
        w.update(name.encode())
        w.update(t.detach().cpu().contiguous().view(-1).view(dtype=__import__("torch").uint8).numpy().tobytes())
    tok = lm.tokenizer
    v = sorted(tok.get_vocab().items())
    special = sorted((str(k), str(x)) for k, x in (tok.special_tokens_map or {}).items())
    t = hashlib.sha256(repr((v, special)).encode("utf-8"))
    return {"weights_sha256": w.hexdigest(), "tokenizer_sha256": t.hexdigest()}


def start_token(lm) -> int:
    """The token sampling starts from (its BOS, else its end-of-text: what ``prefix="always"`` puts in front)."""
    from ..stats.settings import prefix_token_id

    tid = prefix_token_id(lm.tokenizer)
    if tid is None:
        raise SettingsError(f"the generator {lm.name} has no start or end-of-text token to sample from")
    return int(tid)


def bucket_edges(opts: MakeOptions) -> list[float]:
    """The ``buckets + 1`` edges of equal width over ``[min_perplexity, max_perplexity)``."""
    return [float(x) for x in np.linspace(opts.min_perplexity, opts.max_perplexity, opts.buckets + 1)]


def quotas(opts: MakeOptions) -> list[int]:
    """Traps per bucket: ``count / buckets``, the remainder one each to the lowest buckets."""
    q, r = divmod(opts.count, opts.buckets)
    return [q + (1 if b < r else 0) for b in range(opts.buckets)]


def check_plan(lm, opts: MakeOptions) -> None:
    """Before sampling: the perplexity range is a range, every bucket gets a trap, the traps fit the context."""
    if opts.max_perplexity <= opts.min_perplexity:
        raise SettingsError(f"{{max_perplexity}} ({opts.max_perplexity:g}) must be above {{min_perplexity}} "
                            f"({opts.min_perplexity:g})", options=("min_perplexity", "max_perplexity"))
    if opts.count < 2 * opts.buckets:
        raise SettingsError(f"{{count}} = {opts.count} traps cannot fill {opts.buckets} buckets with two each (one to "
                            f"insert, one to hold out): make more traps or use fewer {{buckets}}",
                            options=("count", "buckets"))
    if opts.tokens + 1 > lm.max_context:
        raise SettingsError(f"{{tokens}} = {opts.tokens} is longer than the generator's context ({lm.max_context} "
                            "tokens, the start token included)", options=("tokens",))


def _log_probs(lm, ids, start: int):
    """Per-token log-probabilities of each row of ``ids`` given ``start`` and the tokens before it (fp32)."""
    import torch

    x = torch.cat([torch.full((ids.shape[0], 1), start, dtype=ids.dtype, device=ids.device), ids], dim=1)
    with torch.no_grad():
        logits = lm.model(input_ids=x).logits[:, :-1].float()
    return torch.log_softmax(logits, dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)


class StepLogProbs:
    """The log-probability of every sampled token, read from the forward passes ``generate`` makes anyway (a forward
    hook on the model), so that no second pass over the candidates is needed (it cost as much as the sampling: with a
    cache, sampling L tokens is one forward pass over them). At each call the tokens fed in are the ones sampled from
    the call before: their log-probabilities are read from that call's log-softmax (only the last is kept); the last
    sampled token's comes from :meth:`finish`. The logits are the model's own, before temperature or any processor
    (what the test scores). Equal to :func:`_log_probs` within float noise (tests/test_traps.py)."""

    def __init__(self, model):
        self.model, self.prev, self.got = model, None, []

    def __enter__(self):
        self.handle = self.model.register_forward_hook(self._hook, with_kwargs=True)
        return self

    def __exit__(self, *exc):
        self.handle.remove()

    def _hook(self, module, args, kwargs, output):
        import torch

        ids = kwargs.get("input_ids", args[0] if args else None)
        if self.prev is not None:
            self.got.append(self.prev.gather(-1, ids[:, -1:]).squeeze(-1))
        self.prev = torch.log_softmax(output.logits[:, -1].float(), dim=-1)

    def finish(self, ids):
        """The ``(rows, tokens)`` log-probabilities of ``ids``, the sampled tokens (the start token not included)."""
        import torch

        got = [*self.got, self.prev.gather(-1, ids[:, -1:]).squeeze(-1)]
        return torch.stack(got[:ids.shape[1]], dim=1)


def _visible(text: str) -> bool:
    """Something to read, no control character (a carriage return would not survive a reader's newline
    normalisation), and no white space at its end (a copy is followed by the document's own)."""
    return bool(text.strip()) and text == text.rstrip() and not _CONTROL.search(text)


class Aim:
    """The temperature of every row of the next batch, aimed at the buckets still open.

    The reference sweeps every temperature in turn; a small generator's perplexity grows so fast with the temperature
    (SmolLM2-135M: 2 to 6 at 0.5, 6 to 160 at 1.0, thousands at 1.5) that most of such a sweep is wasted, and at the
    end of a batch the last buckets (the narrow high-perplexity ones) fill from a few lucky rows. So each row gets its
    own temperature, from a grid over the declared ones (theirs and every ``STEP`` between the lowest and the
    highest). The first batch spreads its rows over the declared temperatures; after it, for each grid temperature
    and each bucket, the share of the candidates sampled near it (a Gaussian kernel of width ``WIDTH``) that passed
    the round trip and fell into that bucket estimates how often a row there fills it (a little prior, so that an
    unexplored temperature is not ruled out for ever). The rows of a batch are shared among the open buckets in
    proportion to what each still needs, and each bucket's rows go to the temperatures most likely to fill it
    (drawn in proportion to that estimate to the fourth power, so that neighbours keep being explored). Which
    temperature produced each trap is recorded; none of this touches the split, which comes after, from its own
    random stream."""

    STEP, WIDTH, PRIOR = 0.05, 0.1, 1.0

    def __init__(self, temperatures: tuple, n_buckets: int, seed: int):
        declared = sorted(float(t) for t in temperatures)
        grid = set(declared)
        if len(declared) > 1:
            n = int(round((declared[-1] - declared[0]) / self.STEP))
            grid |= {round(declared[0] + i * self.STEP, 4) for i in range(n + 1)}
        self.declared, self.grid = declared, np.array(sorted(grid))
        self.n_buckets = n_buckets
        self.rng = np.random.default_rng(seed)
        self.t: list[float] = []  # every row's temperature
        self.b: list[int] = []    # its bucket when it passed the round trip and fell in range, else -1
        self.batches = 0

    def rates(self) -> np.ndarray:
        """``(grid, buckets)``: the estimated chance that a row at each grid temperature fills each bucket."""
        t, b = np.array(self.t), np.array(self.b)
        w = np.exp(-0.5 * ((self.grid[:, None] - t[None, :]) / self.WIDTH) ** 2)  # (grid, rows)
        hits = np.stack([(w * (b == k)).sum(1) for k in range(self.n_buckets)], axis=1)
        prior = 1.0 / (4 * self.n_buckets)
        return (hits + self.PRIOR * prior) / (w.sum(1)[:, None] + self.PRIOR)

    def next(self, rows: int, need: np.ndarray) -> np.ndarray:
        """The temperatures of the next ``rows`` rows, given what each bucket still needs (0: full)."""
        if not self.t:
            return np.array([self.declared[i * len(self.declared) // rows] for i in range(rows)])
        open_ = np.flatnonzero(need > 0)
        share = need[open_] / need[open_].sum() * rows
        n = np.floor(share).astype(int)
        n[np.argsort(-(share - n))[:rows - n.sum()]] += 1
        r = self.rates()
        out = []
        for k, m in zip(open_, n):
            p = r[:, k] ** 4
            out += self.rng.choice(self.grid, size=int(m), p=p / p.sum()).tolist()
        return np.array(self.rng.permutation(out))

    def saw(self, temps, buckets) -> None:
        """What a batch gave: each row's temperature and bucket (-1: rejected by the round trip or out of range)."""
        self.t += [float(x) for x in temps]
        self.b += [int(x) for x in buckets]
        self.batches += 1

    def rows_needed(self, need: np.ndarray, batch: int = 64) -> float:
        """About how many more rows the open buckets need, the estimate of time left: the aim's own policy followed
        in expectation, batch by batch (each batch's rows shared among the open buckets as :meth:`next` shares
        them, each row filling every bucket at its temperature's estimated rate, a bucket's fills capped at what it
        needs). Counting each bucket as if it had its rows alone (the sum of need / best rate) over-stated it about
        three to five times early on: a row aimed at one bucket often fills a neighbour. None (nan) before a second
        batch: the first samples only the declared temperatures, and the rates between them are the prior's."""
        if self.batches < 2:
            return float("nan")
        r = self.rates()
        sharp = r ** 4
        where = sharp / sharp.sum(axis=0, keepdims=True)  # (grid, buckets): where a bucket's rows go
        fill = where.T @ r  # (buckets, buckets): what one row aimed at bucket k fills, in expectation
        left, rows = need.astype(float).copy(), 0
        for _ in range(10_000):
            open_ = left >= 0.5
            if not open_.any():
                break
            share = np.where(open_, left, 0.0) / left[open_].sum() * batch
            left = np.maximum(0.0, left - share @ fill)
            rows += batch
        return float(rows)


class RowTemperature:
    """A logits processor dividing each row's scores by its own temperature (``generate`` takes only one)."""

    def __init__(self, temps):
        self.temps = temps

    def __call__(self, input_ids, scores):
        return scores / self.temps.to(scores.dtype)[:, None]


def generate(lm, opts: MakeOptions, sampling_seed: int, *, avoid: set | None = None,
             progress: Progress = noop) -> tuple[list[dict], dict]:
    """Sample, filter and accept traps until every bucket is full (see the module docstring).

    Returns
    -------
    traps : list of dict
        ``{"text", "token_ids", "perplexity", "bucket", "temperature"}``, in the order accepted.
    counts : dict
        Candidates sampled and what each filter rejected, and the seconds it took.
    """
    import torch
    from transformers import LogitsProcessorList

    from ..stats.settings import tokenize

    check_plan(lm, opts)
    start = start_token(lm)
    tok = lm.tokenizer
    special = set(getattr(tok, "all_special_ids", []) or [])
    eos = [i for i in {tok.eos_token_id, start} if i is not None]
    edges, quota = bucket_edges(opts), quotas(opts)
    width = edges[1] - edges[0]
    filled = [0] * opts.buckets
    accepted: list[dict] = []
    sets: list[set] = []
    counts = {"sampled": 0, "round_trip": 0, "perplexity_out_of_range": 0, "bucket_full": 0, "similar": 0,
              "in_documents": 0}
    budget = opts.max_candidates or 50 * opts.count
    torch.manual_seed(sampling_seed)
    device = next(lm.model.parameters()).device
    t0 = time.time()
    aim = Aim(opts.temperatures, opts.buckets, sampling_seed)
    used: dict = {}
    per_row = None  # seconds per sampled row, measured
    progress(f"traps: sampling {opts.count} traps of {opts.tokens} tokens from {lm.name}", 0.0)
    while len(accepted) < opts.count:
        if counts["sampled"] >= budget:
            short = ", ".join(f"[{edges[b]:g}, {edges[b + 1]:g}): {filled[b]} of {quota[b]}"
                              for b in range(opts.buckets) if filled[b] < quota[b])
            raise DataError(f"after {counts['sampled']:,} candidates the buckets {short} are not full: widen "
                            "{temperatures}, narrow {min_perplexity}..{max_perplexity}, use fewer {buckets} or "
                            "raise {max_candidates}",
                            options=("temperatures", "min_perplexity", "max_perplexity", "buckets", "max_candidates"))
        temps = aim.next(opts.batch_size, np.array(quota) - np.array(filled))
        for t in temps:
            used[float(t)] = used.get(float(t), 0) + 1
        tb = time.time()
        x = torch.full((opts.batch_size, 1), start, dtype=torch.long, device=device)
        with torch.no_grad(), StepLogProbs(lm.model) as steps:
            out = lm.model.generate(input_ids=x, attention_mask=torch.ones_like(x), do_sample=True,
                                    temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=opts.tokens,
                                    logits_processor=LogitsProcessorList([RowTemperature(
                                        torch.tensor(temps, dtype=torch.float32, device=device))]),
                                    min_new_tokens=opts.tokens, pad_token_id=eos[0], suppress_tokens=None)
        ids = out[:, 1:1 + opts.tokens]
        if ids.shape[1] < opts.tokens:
            counts["sampled"] += ids.shape[0]
            counts["round_trip"] += ids.shape[0]
            aim.saw(temps, [-1] * len(temps))
            continue
        lp = steps.finish(ids).double().cpu().numpy()
        per_row = (time.time() - tb) / len(lp)
        landed = []
        for temp, row, logp in zip(temps, ids.cpu().numpy().tolist(), lp):
            counts["sampled"] += 1
            landed.append(-1)
            text = tok.decode(row, skip_special_tokens=False, clean_up_tokenization_spaces=False)
            if special & set(row) or not _visible(text) or list(tokenize(lm, text)) != row:
                counts["round_trip"] += 1
                continue
            ppl = math.exp(min(-float(np.mean(logp)), 700.0))
            if not (opts.min_perplexity <= ppl < opts.max_perplexity):
                counts["perplexity_out_of_range"] += 1
                continue
            b = min(int((ppl - opts.min_perplexity) // width), opts.buckets - 1)
            landed[-1] = b
            if filled[b] >= quota[b]:
                counts["bucket_full"] += 1
                continue
            s = set(row)
            if any(len(s & o) / len(s | o) > opts.jaccard for o in sets):
                counts["similar"] += 1
                continue
            if avoid and ngrams(text) & avoid:
                counts["in_documents"] += 1
                continue
            accepted.append({"text": text, "token_ids": row, "perplexity": ppl, "bucket": b, "temperature": float(temp)})
            sets.append(s)
            filled[b] += 1
            if len(accepted) >= opts.count:
                break
        aim.saw(temps[:len(landed)], landed)
        done = len(accepted) / opts.count
        el = time.time() - t0
        rows = aim.rows_needed(np.array(quota) - np.array(filled), opts.batch_size)
        eta = (f", about {math.ceil(rows / opts.batch_size) * opts.batch_size * per_row:.0f} s left"
               if done < 1 and math.isfinite(rows) else "")
        progress(f"traps: {len(accepted)} of {opts.count} accepted ({counts['sampled']:,} sampled, "
                 f"{el:.0f} s{eta})", min(done, 0.99))
    counts["seconds"] = round(time.time() - t0, 1)
    counts["temperatures_sampled"] = {f"{t:g}": n for t, n in sorted(used.items())}
    return accepted, counts


def read_avoid(path) -> tuple[set | None, dict | None]:
    """The avoid filter's 13-grams from ``path`` (None: no filter)."""
    if path is None:
        return None, None
    grams, info = avoid_ngrams(Path(path))
    return grams, {**info, "path": str(path)}
