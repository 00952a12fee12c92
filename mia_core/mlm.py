"""Masked-LM membership inference: likelihood-ratio attack with a reference model.

Mireshghallah, Goyal, Uniyal, Berg-Kirkpatrick & Shokri (2022), "Quantifying Privacy Risks of
Masked Language Models Using Membership Inference Attacks" (EMNLP 2022). The paper treats a
masked LM (BERT, RoBERTa, ...) as an energy-based model and tests, for each text ``s``,
"``s`` was in the target's training data" against "``s`` comes from the general population"
with a likelihood ratio between the target and a *reference* MLM trained on other data of the
same kind.

What this module computes
-------------------------
* **Energy** (§2.3, eq. 2). For a text of ``T`` tokens (special tokens excluded), ``l =
  ceil(0.15 T)`` positions are masked at once, ``K`` times with random patterns ``I_1..I_K``::

      E(s; theta) = -(1/K) * sum_k sum_{i in I_k} log p_mlm(s_i | s with the positions I_k masked; theta)

  The patterns are drawn from a generator seeded by ``(seed, hash of the text)``, so they do
  not depend on batch order or on which other texts are scored, and are generated **once per
  text** (:func:`plan_masks`) and given to both the target and the reference, which therefore
  score exactly the same masked inputs.
* **Likelihood ratio** (§2.2-2.3): ``L(s) = E(s; target) - E(s; reference)`` (the log of the
  ratio ``p_target(s) / p_reference(s)`` up to the intractable normalisers, which are constant
  across texts). Members have a *low* ``L``; the score reported is ``-L`` (higher = more likely
  member, the project's convention).
* **Loss baseline** (§3.4, the attack of prior work): the target's energy alone, score ``-E``.
  With known training samples, the paper's threshold ``mu`` = their mean energy (member iff
  ``E <= mu``) is reported too.
* **Population threshold** (§2.4): the threshold flags a fraction ``alpha`` (default 10 %) of a
  *population* set of known non-members that is disjoint from the evaluated texts; precision
  and recall of members at that threshold are reported next to the AUC (their Table 2).
* **Group level** (§4.2, "patient-level"): a group's score is the mean of its texts' scores.
* **Which samples leak** (§4.6): simple features of the members the attack flags vs. those it
  misses (length, digits, non-alphanumeric characters, rarest-token frequency).

Texts longer than the model's maximum length are **truncated** (the first ``max_length - 2``
tokens are scored; a warning counts them): the energy is a sum over positions, so windows of a
long text would need their own length normalisation, and the paper's notes are short.
Energies are cached on disk (``mia_core.cache.ArrayCache``, namespace ``mlm``) keyed by the
model's identity, ``K``, seed, mask rate, maximum length and the text hash, so a re-run makes
no model call.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .cache import ArrayCache, text_hash
from .errors import DataError, ModelError, SettingsError
from .models import DTYPES, MaskedLM, load_masked_lm  # noqa: F401 - the loader lives in mia_core.models.masked
from .models.masked import forget_loaded  # noqa: F401 - clears the masked-LM registry (tests)

Progress = Callable[[str, float], None]

DEFAULT_K = 10
DEFAULT_RATE = 0.15
DEFAULT_ALPHA = 0.1
CACHE_VERSION = 1
ATTACKS = ("likelihood_ratio", "loss")
LEAK_FEATURES = ("n_tokens", "n_digits", "n_non_alnum", "rarest_token_freq")
_PROBE = "Membership inference: 1234 naïve Résumé, ~zß! The QUICK brown fox."


def _noop(msg: str, frac: float) -> None:  # pragma: no cover - trivial
    pass


def check_same_tokenizer(target: MaskedLM, reference: MaskedLM, *, vocab_only: bool = False) -> list[str]:
    """Raise ``SettingsError`` unless both models share a tokenizer; returns warnings.

    The likelihood ratio compares the two models' probabilities of the *same* token ids at the
    *same* masked positions (§2.2), so the vocabularies (token -> id maps), the mask token and
    the tokenisation of a probe string (case, accents, digits, punctuation) must all agree.
    Both models are always fed the ids made by the *target's* tokenizer. With ``vocab_only``,
    a difference in text normalisation alone (e.g. a cased vocabulary that one tokenizer
    lowercases) is accepted with a warning: the reference then sees text normalised as the
    target's tokenizer does it, which can bias its energies.
    """
    a, b = target.tokenizer, reference.tokenizer
    why = None
    va, vb = a.get_vocab(), b.get_vocab()
    if va != vb:
        missing = len(set(va) - set(vb))
        renumbered = sum(1 for tok, i in va.items() if tok in vb and vb[tok] != i)
        why = (f"their vocabularies differ ({len(va):,} vs {len(vb):,} tokens; {missing:,} of the target's "
               f"tokens are missing from the reference and {renumbered:,} have another id)")
    elif a.mask_token_id != b.mask_token_id:
        why = "their mask tokens differ"
    else:
        ea = a(_PROBE).input_ids
        eb = b(_PROBE).input_ids
        if ea != eb:
            why = (f"they tokenise text differently (the probe {_PROBE!r} gets different token ids: one "
                   "tokenizer may lowercase or strip accents and the other not)")
            if vocab_only:
                return [f"the target and the reference share a vocabulary but {why}; both are fed the target's "
                        "tokenisation (vocab_only), which the reference may find unusual."]
    if why:
        raise SettingsError(
            f"the target ({target.name}) and the reference ({reference.name}) do not share a tokenizer: {why}. "
            "The likelihood-ratio attack needs a reference with the target's tokenizer, such as the "
            "general-domain model the target was trained from."
            + (" (Same vocabulary, different normalisation only? vocab_only / --vocab-match-only accepts that.)"
               if why.startswith("they tokenise") else ""))
    return []


# --------------------------------------------------------------------------------------
# masking patterns (§2.3)
# --------------------------------------------------------------------------------------
def n_masked(token_count: int, rate: float = DEFAULT_RATE) -> int:
    """``l = ceil(rate * T)`` (§2.3), computed without float noise (0.15 * 20 is 3, not 3.0000000000000004)."""
    if token_count <= 0:
        return 0
    return min(token_count, max(1, math.ceil(round(rate * token_count, 9))))


def _check_settings(k: int, seed: int, rate: float) -> None:
    if int(k) != k or k < 1:
        raise SettingsError(f"the number of masking patterns K must be a whole number >= 1, got {k}.")
    if int(seed) != seed or seed < 0:
        raise SettingsError(f"the seed must be a whole number >= 0, got {seed}.")
    if not 0.0 < float(rate) <= 1.0:
        raise SettingsError(f"the mask rate must be in (0, 1], got {rate}.")


def masking_patterns(token_count: int, k: int, seed: int, text_hash: str, rate: float = DEFAULT_RATE) -> np.ndarray:
    """``K`` masking patterns for a text of ``token_count`` tokens, shape ``(K, l)``, sorted rows.

    Each row holds ``l = ceil(rate * T)`` distinct token positions (0-based, counting only the
    text's own tokens, not the special tokens), drawn uniformly without replacement (§2.3).
    The generator is ``numpy.random.default_rng([seed, int(text_hash[:16], 16)])``: the same
    text always gets the same patterns for a given seed, whatever else is scored with it.
    """
    _check_settings(k, seed, rate)
    l = n_masked(int(token_count), rate)
    if l == 0:
        return np.zeros((int(k), 0), dtype=np.int64)
    rng = np.random.default_rng([int(seed), int(str(text_hash)[:16], 16)])
    out = np.empty((int(k), l), dtype=np.int64)
    for j in range(int(k)):
        out[j] = np.sort(rng.choice(int(token_count), size=l, replace=False))
    return out


@dataclass
class MaskPlan:
    """Tokenised texts and their masking patterns, made once and given to every model.

    ``ids[i]``: the token ids of text ``i`` with special tokens (truncated to ``max_length``);
    ``content[i]``: where its own tokens sit in ``ids[i]``; ``masks[i]``: ``(K, l)`` indices into
    ``content[i]`` (from :func:`masking_patterns`).
    """

    texts: list[str]
    hashes: list[str]
    ids: list[np.ndarray]
    content: list[np.ndarray]
    masks: list[np.ndarray]
    n_tokens_full: np.ndarray  # before truncation
    k: int
    seed: int
    rate: float
    max_length: int
    vocab_size: int
    n_truncated: int = 0

    @property
    def n_tokens(self) -> np.ndarray:
        return np.array([c.size for c in self.content], dtype=np.int64)

    def settings(self) -> dict:
        return {"k": self.k, "seed": self.seed, "rate": self.rate, "max_length": self.max_length}

    def positions(self, i: int) -> np.ndarray:
        """``(K, l)`` positions in ``ids[i]`` that pattern ``k`` masks."""
        return self.content[i][self.masks[i]]


def plan_masks(tokenizer, texts: Sequence[str], *, k: int = DEFAULT_K, seed: int = 0, rate: float = DEFAULT_RATE,
               max_length: int = 512) -> MaskPlan:
    """Tokenise ``texts`` once and draw their masking patterns (§2.3)."""
    _check_settings(k, seed, rate)
    texts = [str(t) for t in texts]
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # no "sequence longer than the maximum" noise: truncation is counted
    try:
        raw = tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
        enc = tokenizer(texts, truncation=True, max_length=int(max_length), return_special_tokens_mask=True) \
            if texts else {"input_ids": [], "special_tokens_mask": []}
    finally:
        hf_logging.set_verbosity(verbosity)
    hashes, ids, content, masks, full = [], [], [], [], []
    n_trunc = 0
    for t, toks, seq, special in zip(texts, raw, enc["input_ids"], enc["special_tokens_mask"]):
        pos = np.flatnonzero(np.asarray(special, dtype=bool) == 0)
        full.append(len(toks))
        if pos.size < len(toks):
            n_trunc += 1
        h = text_hash(t)
        hashes.append(h)
        ids.append(np.asarray(seq, dtype=np.int64))
        content.append(pos.astype(np.int64))
        masks.append(masking_patterns(pos.size, k, seed, h, rate))
    return MaskPlan(texts=texts, hashes=hashes, ids=ids, content=content, masks=masks,
                    n_tokens_full=np.asarray(full, dtype=np.int64), k=int(k), seed=int(seed), rate=float(rate),
                    max_length=int(max_length), vocab_size=len(tokenizer), n_truncated=n_trunc)


# --------------------------------------------------------------------------------------
# energies (§2.3, eq. 2)
# --------------------------------------------------------------------------------------
def _batches(lengths: np.ndarray, k: int, batch_tokens: int) -> list[list[int]]:
    """Texts grouped so that (rows = texts x K) x (longest length) stays within ``batch_tokens``.

    Texts are taken longest first, so each batch pads little. A text whose K rows alone exceed
    the budget gets a batch of its own (its rows are then split in :func:`_score_batch`).
    """
    order = np.argsort(-lengths, kind="stable")
    out, cur, cur_max = [], [], 0
    for i in order.tolist():
        L = int(lengths[i])
        new_max = max(cur_max, L)
        if cur and (len(cur) + 1) * k * new_max > batch_tokens:
            out.append(cur)
            cur, new_max = [], L
        cur.append(i)
        cur_max = new_max
    if cur:
        out.append(cur)
    return out


def _forward_logprobs(model, input_ids, attention_mask, rows, cols, targets):
    """log p(target | masked input) at (rows, cols), computing the vocabulary projection only
    at the masked positions when the model's output layer allows it (a pre-hook gathers those
    hidden states), else from the full logits."""
    import torch

    n = rows.numel()
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    flat = rows * input_ids.shape[1] + cols
    state = {"used": False}

    def gather(module, args):
        h = args[0]
        if h.dim() == 3 and h.shape[0] * h.shape[1] == input_ids.numel():
            state["used"] = True
            return (h.reshape(-1, h.shape[-1]).index_select(0, flat),) + tuple(args[1:])
        return None

    logits = None
    if head is not None:
        handle = head.register_forward_pre_hook(gather)
        try:
            out = model(input_ids=input_ids, attention_mask=attention_mask)
        finally:
            handle.remove()
        lg = out.logits
        if state["used"] and lg.dim() == 2 and lg.shape[0] == n:
            logits = lg
    if logits is None:
        out = model(input_ids=input_ids, attention_mask=attention_mask)
        logits = out.logits[rows, cols]
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp.gather(1, targets[:, None])[:, 0]


def _score_batch(mlm: MaskedLM, plan: MaskPlan, idx: list[int], batch_tokens: int) -> dict[int, np.ndarray]:
    """Sum of log-probabilities of the masked tokens, per pattern, for the texts ``idx``."""
    import torch

    k = plan.k
    rows_spec = [(i, j) for i in idx for j in range(k)]
    L_max = max(len(plan.ids[i]) for i in idx)
    per_chunk = max(1, batch_tokens // max(1, L_max))
    result = {i: np.zeros(k, dtype=np.float64) for i in idx}
    pad = mlm.tokenizer.pad_token_id if mlm.tokenizer.pad_token_id is not None else 0
    mask_id = mlm.mask_token_id
    for c0 in range(0, len(rows_spec), per_chunk):
        chunk = rows_spec[c0:c0 + per_chunk]
        L = max(len(plan.ids[i]) for i, _ in chunk)
        inp = np.full((len(chunk), L), pad, dtype=np.int64)
        att = np.zeros((len(chunk), L), dtype=np.int64)
        r_list, c_list, t_list = [], [], []
        for r, (i, j) in enumerate(chunk):
            seq = plan.ids[i]
            inp[r, :len(seq)] = seq
            att[r, :len(seq)] = 1
            pos = plan.positions(i)[j]
            t_list.append(seq[pos])
            inp[r, pos] = mask_id
            r_list.append(np.full(pos.size, r))
            c_list.append(pos)
        rows = np.concatenate(r_list) if r_list else np.zeros(0, dtype=np.int64)
        if rows.size == 0:
            continue
        dev = mlm.device
        with torch.inference_mode():
            lp = _forward_logprobs(
                mlm.model, torch.from_numpy(inp).to(dev), torch.from_numpy(att).to(dev),
                torch.from_numpy(rows).to(dev), torch.from_numpy(np.concatenate(c_list)).to(dev),
                torch.from_numpy(np.concatenate(t_list)).to(dev))
            sums = torch.zeros(len(chunk), dtype=torch.float64, device=lp.device)
            sums.index_add_(0, torch.from_numpy(rows).to(lp.device), lp.double())
        sums = sums.cpu().numpy()
        for r, (i, j) in enumerate(chunk):
            result[i][j] = sums[r]
    return result


def _cache_for(mlm: MaskedLM, plan: MaskPlan, enabled: bool) -> ArrayCache:
    settings = {"version": CACHE_VERSION, "attack": "mlm_energy", "model": mlm.identity, **plan.settings()}
    return ArrayCache("mlm", settings, enabled=enabled)


def energies(mlm: MaskedLM, texts: Sequence[str] | None = None, *, k: int = DEFAULT_K, seed: int = 0,
             rate: float = DEFAULT_RATE, batch_tokens: int = 8192, cache: bool = True, plan: MaskPlan | None = None,
             progress: Progress | None = None, return_patterns: bool = False):
    """Energies ``E(s; theta)`` of §2.3 (eq. 2) for ``texts`` under the masked LM ``mlm``.

    ``E = -(1/K) * sum_k sum_{i in I_k} log p(s_i | s with I_k masked)``; lower = the model finds
    the text more likely. All ``K`` masked copies of a batch of texts go through the model
    together (rows padded; at most ``batch_tokens`` padded tokens per forward pass).
    ``plan`` (from :func:`plan_masks`) fixes the tokenisation and the masks; give the same plan
    to the target and the reference so they see identical masked inputs (otherwise one is made
    from ``texts``, ``k``, ``seed``, ``rate`` and the model's maximum length). Texts with no
    token get ``NaN``. With ``return_patterns``, also returns the ``(n, K)`` per-pattern sums of
    log-probabilities.
    """
    progress = progress or _noop
    if plan is None:
        if texts is None:
            raise SettingsError("energies() needs texts or a mask plan.")
        plan = plan_masks(mlm.tokenizer, texts, k=k, seed=seed, rate=rate, max_length=mlm.max_length)
    elif len(mlm.tokenizer) != plan.vocab_size:
        raise SettingsError(f"the mask plan was made with a tokenizer of {plan.vocab_size:,} tokens but "
                            f"{mlm.name} has {len(mlm.tokenizer):,}; make a plan with this model's tokenizer.")
    if plan.max_length > mlm.max_length:
        raise SettingsError(f"the mask plan allows {plan.max_length} tokens but {mlm.name} takes at most "
                            f"{mlm.max_length}.")
    if int(batch_tokens) < 1:
        raise SettingsError(f"batch_tokens must be >= 1, got {batch_tokens}.")
    n = len(plan.texts)
    sums = np.full((n, plan.k), np.nan, dtype=np.float64)
    store = _cache_for(mlm, plan, cache)
    todo = []
    for i, h in enumerate(plan.hashes):
        if plan.content[i].size == 0:
            continue
        got = store.get(h) if cache else None
        if got is not None and got.get("pattern_logp") is not None and got["pattern_logp"].shape == (plan.k,):
            sums[i] = got["pattern_logp"]
        else:
            todo.append(i)
    if todo:
        lengths = np.array([len(plan.ids[i]) for i in todo])
        batches = _batches(lengths, plan.k, int(batch_tokens))
        total_tok = float(lengths.sum()) or 1.0
        done_tok = 0.0
        progress(f"scoring: {mlm.name}, {len(todo)} texts x {plan.k} masks", 0.0)
        for b in batches:
            idx = [todo[j] for j in b]
            try:
                res = _score_batch(mlm, plan, idx, int(batch_tokens))
            except RuntimeError as e:
                if "out of memory" in str(e).lower():
                    raise ModelError(f"out of memory scoring with {mlm.name}: lower batch_tokens "
                                     f"(now {batch_tokens}).") from None
                raise
            for i, v in res.items():
                sums[i] = v
                store.put(plan.hashes[i], {"pattern_logp": v, "n_tokens": np.int64(plan.content[i].size)})
            done_tok += float(sum(len(plan.ids[i]) for i in idx))
            progress(f"scoring: {mlm.name}, {done_tok / total_tok:.0%} of the tokens", done_tok / total_tok)
    e = -sums.mean(axis=1)
    return (e, sums) if return_patterns else e


# --------------------------------------------------------------------------------------
# leak features (§4.6)
# --------------------------------------------------------------------------------------
def leak_features(plan: MaskPlan, idx: Sequence[int] | None = None, freq: Counter | None = None) -> dict[str, np.ndarray]:
    """Simple features of texts (§4.6): length in tokens, digits, non-alphanumeric characters
    (spaces excluded) and the corpus frequency of the text's rarest token.

    ``freq`` counts tokens over the texts of ``plan`` (by default over all of them: in the
    audit, the population plus the evaluated texts); the rarest-token frequency of a text is
    the smallest count among its tokens (>= 1, since it counts the text itself).
    """
    idx = list(range(len(plan.texts))) if idx is None else list(idx)
    if freq is None:
        freq = token_counts(plan)
    out = {f: np.zeros(len(idx), dtype=np.float64) for f in LEAK_FEATURES}
    for r, i in enumerate(idx):
        t = plan.texts[i]
        toks = plan.ids[i][plan.content[i]]
        out["n_tokens"][r] = plan.n_tokens_full[i]
        out["n_digits"][r] = sum(ch.isdigit() for ch in t)
        out["n_non_alnum"][r] = sum((not ch.isalnum()) and not ch.isspace() for ch in t)
        out["rarest_token_freq"][r] = min((freq[int(x)] for x in toks), default=np.nan)
    return out


def token_counts(plan: MaskPlan, idx: Sequence[int] | None = None) -> Counter:
    idx = range(len(plan.texts)) if idx is None else idx
    c: Counter = Counter()
    for i in idx:
        c.update(plan.ids[i][plan.content[i]].tolist())
    return c


def _leak_table(plan: MaskPlan, member_idx: np.ndarray, flagged: np.ndarray, freq: Counter) -> dict:
    feats = leak_features(plan, member_idx, freq)

    def means(sel):
        return {f: (float(np.mean(v[sel])) if np.any(sel) else None) for f, v in feats.items()}

    return {"n_flagged": int(flagged.sum()), "n_unflagged": int((~flagged).sum()),
            "flagged": means(flagged), "unflagged": means(~flagged), "features": list(LEAK_FEATURES)}


# --------------------------------------------------------------------------------------
# the audit
# --------------------------------------------------------------------------------------
def _as_model(m, device, dtype, trust_remote_code, progress) -> MaskedLM:
    if isinstance(m, MaskedLM):
        return m
    return load_masked_lm(m, device=device, dtype=dtype, trust_remote_code=trust_remote_code, progress=progress)


def _texts(name: str, xs) -> list[str]:
    xs = [] if xs is None else [str(x) for x in xs]
    if any(not x.strip() for x in xs):
        raise DataError(f"the {name} contain empty texts; remove them.")
    return xs


def _groups(name: str, groups, n: int, prefix: str) -> list[str] | None:
    if groups is None:
        return None
    g = list(groups)
    if len(g) != n:
        raise DataError(f"got {len(g)} group ids for {n} {name}; give one per text.")
    # a text without a group is a group of its own
    return [f"{prefix}{i}" if (x is None or str(x) == "" or (isinstance(x, float) and math.isnan(x))) else str(x)
            for i, x in enumerate(g)]


def _sub(p: Progress, lo: float, hi: float) -> Progress:
    return lambda msg, f: p(msg, lo + (hi - lo) * max(0.0, min(1.0, f)))


def run_mlm_audit(members: Sequence[str], nonmembers: Sequence[str], population: Sequence[str], target, reference, *,
                  k: int = DEFAULT_K, seed: int = 0, rate: float = DEFAULT_RATE, alpha: float = DEFAULT_ALPHA,
                  member_groups=None, nonmember_groups=None, population_groups=None,
                  train_samples: Sequence[str] | None = None, member_ids=None, nonmember_ids=None,
                  batch_tokens: int = 8192, n_bootstrap: int = 1000, cache: bool = True, device: str = "auto",
                  dtype: str = "fp32", trust_remote_code: bool = False, vocab_only: bool = False,
                  progress: Progress | None = None) -> dict:
    """The masked-LM audit of Mireshghallah et al. 2022 on members vs non-members.

    ``target``/``reference``: :class:`MaskedLM` objects or specs for :func:`load_masked_lm`;
    they must share a tokenizer (``SettingsError`` otherwise; ``vocab_only`` accepts the same
    vocabulary with different text normalisation, see :func:`check_same_tokenizer`). ``population``: texts known not
    to be in the target's training data, **disjoint** from the evaluated texts (``DataError``
    otherwise), used only to set the thresholds (§2.4): a fraction ``alpha`` of the population
    is flagged. ``train_samples``: optional known training texts for the loss attack's
    ``mu`` threshold (§3.4; they may include the members).

    Group level (§4.2): with ``member_groups``/``nonmember_groups`` (one id per text; a missing
    id makes the text its own group) a group's score is the mean of its texts' scores. Its
    threshold flags ``alpha`` of the *population groups* when ``population_groups`` is given,
    else the text-level population threshold is applied to the group means.

    Returns a dict::

        {"metrics": {"likelihood_ratio": evaluate(...) + {"population_threshold": decisions, "alpha"},
                     "loss": ... (+ "mu_threshold" with train_samples)},
         "group_metrics": {attack: ...} or None,
         "scores": [{"text_id", "label", "text_hash", "group", "n_tokens", "likelihood_ratio", "loss",
                     "energy_target", "energy_reference", "flagged_likelihood_ratio", "flagged_loss"}, ...],
         "population_scores": {attack: [...]},
         "leak_features": {attack: {"flagged": {feature: mean}, "unflagged": {...}, ...}},
         "energies": {"target": [...], "reference": [...], "population_target": [...], ...},
         "settings": {...}, "models": {"target": {...}, "reference": {...}}, "warnings": [...],
         "plan": MaskPlan}   # the tokenisation and masks both models scored (not JSON)
    """
    from . import metrics as M

    progress = progress or _noop
    if not 0.0 < float(alpha) < 1.0:
        raise SettingsError(f"alpha (the share of the population flagged) must be between 0 and 1, got {alpha}.")
    _check_settings(k, seed, rate)
    mem, non, pop = _texts("members", members), _texts("non-members", nonmembers), _texts("population texts", population)
    train = _texts("training samples", train_samples) if train_samples is not None else []
    if not mem:
        raise DataError("no members given: the audit needs texts believed to be in the training data.")
    if not non:
        raise DataError("no non-members given: the audit needs texts known not to be in the training data.")
    if not pop:
        raise DataError("no population texts given: the threshold needs texts known not to be in the training "
                        "data, other than the evaluated non-members.")
    eval_texts = mem + non
    eval_hashes = {text_hash(t) for t in eval_texts}
    overlap = [t for t in pop if text_hash(t) in eval_hashes]
    if overlap:
        n_m = len({text_hash(t) for t in overlap} & {text_hash(t) for t in mem})
        raise DataError(f"{len(overlap)} population text{'s' if len(overlap) != 1 else ''} also appear"
                        f"{'' if len(overlap) != 1 else 's'} among the evaluated texts ({n_m} among the members); "
                        "the population must be disjoint from the members and non-members, or the precision "
                        "and recall would be measured on the data that set the threshold.")
    both = {text_hash(t) for t in mem} & {text_hash(t) for t in non}
    if both:
        raise DataError(f"{len(both)} text{'s' if len(both) != 1 else ''} are both members and non-members; "
                        "remove them from one of the sets.")
    labels = np.r_[np.ones(len(mem), dtype=np.int64), np.zeros(len(non), dtype=np.int64)]
    ids = list(member_ids) if member_ids is not None else [f"m{i + 1:04d}" for i in range(len(mem))]
    ids += list(nonmember_ids) if nonmember_ids is not None else [f"n{i + 1:04d}" for i in range(len(non))]
    if len(ids) != len(eval_texts):
        raise DataError("give one id per member and per non-member text.")
    mg = _groups("members", member_groups, len(mem), "_m")
    ng = _groups("non-members", nonmember_groups, len(non), "_n")
    if (mg is None) != (ng is None):
        raise DataError("give groups for both the members and the non-members (or for neither).")
    groups = None if mg is None else mg + ng
    pg = _groups("population texts", population_groups, len(pop), "_p")

    t = _as_model(target, device, dtype, trust_remote_code, _sub(progress, 0.0, 0.05))
    r = _as_model(reference, device, dtype, trust_remote_code, _sub(progress, 0.05, 0.1))
    warnings: list[str] = check_same_tokenizer(t, r, vocab_only=vocab_only)
    max_len = min(t.max_length, r.max_length)
    all_texts = eval_texts + pop + train
    plan = plan_masks(t.tokenizer, all_texts, k=k, seed=seed, rate=rate, max_length=max_len)
    if plan.n_truncated:
        warnings.append(f"{plan.n_truncated} text{'s' if plan.n_truncated != 1 else ''} longer than {max_len} "
                        f"tokens {'were' if plan.n_truncated != 1 else 'was'} truncated: only the first "
                        f"{max_len} tokens (special tokens included) are scored.")
    e_t = energies(t, k=k, seed=seed, rate=rate, batch_tokens=batch_tokens, cache=cache, plan=plan,
                   progress=_sub(progress, 0.1, 0.55))
    # the reference is not needed for the training samples (loss attack only)
    ne = len(eval_texts) + len(pop)
    plan_r = _subplan(plan, range(ne))
    e_r = np.r_[energies(r, k=k, seed=seed, rate=rate, batch_tokens=batch_tokens, cache=cache, plan=plan_r,
                         progress=_sub(progress, 0.55, 0.95)), np.full(len(train), np.nan)]
    progress("metrics: AUC, thresholds, bootstrap", 0.95)

    n_eval = len(eval_texts)
    ev, pv = slice(0, n_eval), slice(n_eval, ne)
    scores_all = {"likelihood_ratio": -(e_t - e_r), "loss": -e_t}
    metrics, group_metrics = {}, ({} if groups is not None else None)
    flagged = {}
    for name, s in scores_all.items():
        m = M.evaluate(labels, s[ev], n_bootstrap=n_bootstrap, seed=seed)
        thr = M.population_threshold(s[pv], alpha)
        m["population_threshold"] = {**M.decisions_at(labels, s[ev], thr), "alpha": float(alpha),
                                     "n_population": int(np.sum(~np.isnan(s[pv])))}
        flagged[name] = np.where(np.isnan(s[ev]), False, s[ev] >= thr)
        metrics[name] = m
        if groups is not None:
            gids, gs, gl = M.group_scores(s[ev], labels, groups, how="mean")
            gm = M.evaluate(gl, gs, n_bootstrap=n_bootstrap, seed=seed)
            if pg is not None:
                _, pgs, _ = M.group_scores(s[pv], np.zeros(len(pop), dtype=np.int64), pg, how="mean")
                gthr, how = M.population_threshold(pgs, alpha), "population groups"
                npop = int(np.sum(~np.isnan(pgs)))
            else:
                gthr, how, npop = thr, "population texts (no population groups given)", int(np.sum(~np.isnan(s[pv])))
            gm["population_threshold"] = {**M.decisions_at(gl, gs, gthr), "alpha": float(alpha),
                                          "threshold_from": how, "n_population": npop}
            gm["n_groups"] = len(gids)
            group_metrics[name] = gm
    if train:
        mu = float(np.nanmean(e_t[ne:]))
        metrics["loss"]["mu_threshold"] = {**M.decisions_at(labels, scores_all["loss"][ev], -mu), "mu": mu,
                                           "n_train_samples": len(train)}

    # §4.6: which members leak, at the population threshold
    freq = token_counts(plan, range(ne))
    member_idx = np.arange(len(mem))
    leaks = {name: {**_leak_table(plan, member_idx, flagged[name][:len(mem)], freq),
                    "threshold": metrics[name]["population_threshold"]["threshold"]}
             for name in scores_all}

    rows = []
    for i in range(n_eval):
        row = {"text_id": ids[i], "label": int(labels[i]), "text_hash": plan.hashes[i]}
        if groups is not None:
            row["group"] = groups[i]
        row.update({"n_tokens": int(plan.n_tokens[i]),
                    "likelihood_ratio": float(scores_all["likelihood_ratio"][i]),
                    "loss": float(scores_all["loss"][i]),
                    "energy_target": float(e_t[i]), "energy_reference": float(e_r[i]),
                    "flagged_likelihood_ratio": bool(flagged["likelihood_ratio"][i]),
                    "flagged_loss": bool(flagged["loss"][i])})
        rows.append(row)
    progress("metrics: done", 1.0)
    return {
        "metrics": metrics,
        "group_metrics": group_metrics,
        "scores": rows,
        "population_scores": {n: s[pv].tolist() for n, s in scores_all.items()},
        "leak_features": leaks,
        "energies": {"target": e_t[ev].tolist(), "reference": e_r[ev].tolist(),
                     "population_target": e_t[pv].tolist(), "population_reference": e_r[pv].tolist(),
                     "train_target": e_t[ne:].tolist()},
        "settings": {"k": int(k), "seed": int(seed), "rate": float(rate), "alpha": float(alpha),
                     "max_length": int(max_len), "batch_tokens": int(batch_tokens),
                     "n_members": len(mem), "n_nonmembers": len(non), "n_population": len(pop),
                     "n_train_samples": len(train)},
        "models": {"target": t.describe(), "reference": r.describe()},
        "warnings": warnings,
        "plan": plan,
    }


def _subplan(plan: MaskPlan, idx) -> MaskPlan:
    idx = list(idx)
    return MaskPlan(texts=[plan.texts[i] for i in idx], hashes=[plan.hashes[i] for i in idx],
                    ids=[plan.ids[i] for i in idx], content=[plan.content[i] for i in idx],
                    masks=[plan.masks[i] for i in idx], n_tokens_full=plan.n_tokens_full[idx],
                    k=plan.k, seed=plan.seed, rate=plan.rate, max_length=plan.max_length,
                    vocab_size=plan.vocab_size, n_truncated=plan.n_truncated)
