"""Generating a batch of traps (Meeus, Shilov, Faysse and de Montjoye, ICML 2024, §3 and their ``gen_traps.py``).

Candidates are sampled from the generator unconditionally (from its start token), the temperatures swept in turn,
each exactly ``tokens`` long (the end-of-text token is suppressed until then). A candidate is kept only if it passes
every filter, in this order:

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


class Sweep:
    """Which temperature samples next. The reference sweeps every temperature in turn; a small generator's
    perplexity grows so fast with the temperature (SmolLM2-135M: 2 to 6 at 0.5, 6 to 160 at 1.0, thousands at 1.5)
    that most of such a sweep is wasted. So: the temperatures are tried coldest first; one whose batch put nothing in
    the range and something above it drops out with every hotter one (below it: with every colder one), and once, the
    midpoint between the hottest kept and the coldest dropped is added; then each batch goes to the temperature
    whose candidates fell most often into a bucket still open (one more candidate counted for each, so none is
    starved). Which temperatures ran is recorded; it has no bearing on the split, which comes after."""

    def __init__(self, temperatures: tuple, n_buckets: int):
        self.temps = sorted(temperatures)
        self.n = {t: 0 for t in self.temps}
        self.hits = {t: np.zeros(n_buckets) for t in self.temps}
        self.added = False

    def next(self, open_buckets: np.ndarray) -> float:
        """The temperature of the next batch, given which buckets are still open (a boolean per bucket)."""
        untried = [t for t in self.temps if self.n[t] == 0]
        if untried:
            return untried[0]
        return max(self.temps, key=lambda t: (self.hits[t][open_buckets].sum() + 1) / (self.n[t] + 2))

    def saw(self, t: float, n: int, buckets: list, above: int, below: int) -> None:
        """What a batch of ``n`` at ``t`` gave: the buckets of its candidates in range, how many fell above and below."""
        self.n[t] += n
        for b in buckets:
            self.hits[t][b] += 1
        if len(self.temps) > 1 and not buckets and above > 0 and below == 0:
            hotter = [x for x in self.temps if x >= t]
            self.temps = [x for x in self.temps if x < t] or [t]
            if not self.added and len(self.temps) and self.temps[-1] < t and len(hotter):
                mid = round((self.temps[-1] + t) / 2, 3)
                self.temps.append(mid)
                self.n[mid], self.hits[mid] = 0, np.zeros_like(self.hits[t])
                self.added = True
        elif len(self.temps) > 1 and not buckets and below > 0 and above == 0:
            self.temps = [x for x in self.temps if x > t] or [t]


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
    sweep = Sweep(opts.temperatures, opts.buckets)
    used: dict = {}
    progress(f"traps: sampling {opts.count} traps of {opts.tokens} tokens from {lm.name}", 0.0)
    while len(accepted) < opts.count:
        if counts["sampled"] >= budget:
            short = ", ".join(f"[{edges[b]:g}, {edges[b + 1]:g}): {filled[b]} of {quota[b]}"
                              for b in range(opts.buckets) if filled[b] < quota[b])
            raise DataError(f"after {counts['sampled']:,} candidates the buckets {short} are not full: widen "
                            "{temperatures}, narrow {min_perplexity}..{max_perplexity}, use fewer {buckets} or "
                            "raise {max_candidates}",
                            options=("temperatures", "min_perplexity", "max_perplexity", "buckets", "max_candidates"))
        temp = sweep.next(np.array([filled[b] < quota[b] for b in range(opts.buckets)]))
        used[temp] = used.get(temp, 0) + opts.batch_size
        seen, above, below = [], 0, 0
        x = torch.full((opts.batch_size, 1), start, dtype=torch.long, device=device)
        with torch.no_grad(), StepLogProbs(lm.model) as steps:
            out = lm.model.generate(input_ids=x, attention_mask=torch.ones_like(x), do_sample=True,
                                    temperature=float(temp), top_k=0, top_p=1.0, max_new_tokens=opts.tokens,
                                    min_new_tokens=opts.tokens, pad_token_id=eos[0], suppress_tokens=None)
        ids = out[:, 1:1 + opts.tokens]
        if ids.shape[1] < opts.tokens:
            counts["sampled"] += ids.shape[0]
            counts["round_trip"] += ids.shape[0]
            continue
        lp = steps.finish(ids).double().cpu().numpy()
        for row, logp in zip(ids.cpu().numpy().tolist(), lp):
            counts["sampled"] += 1
            text = tok.decode(row, skip_special_tokens=False, clean_up_tokenization_spaces=False)
            if special & set(row) or not _visible(text) or list(tokenize(lm, text)) != row:
                counts["round_trip"] += 1
                continue
            ppl = math.exp(min(-float(np.mean(logp)), 700.0))
            if not (opts.min_perplexity <= ppl < opts.max_perplexity):
                counts["perplexity_out_of_range"] += 1
                above += ppl >= opts.max_perplexity
                below += ppl < opts.min_perplexity
                continue
            b = min(int((ppl - opts.min_perplexity) // width), opts.buckets - 1)
            seen.append(b)
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
        sweep.saw(temp, len(lp), seen, above, below)
        done = len(accepted) / opts.count
        el = time.time() - t0
        eta = f", about {el / done * (1 - done):.0f} s left" if done > 0.02 else ""
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
