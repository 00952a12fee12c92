"""DC-PDD: divergence-based calibration (Zhang, Zhang, Guo, de Rijke, Fan & Cheng 2024,
"Pretraining Data Detection for Large Language Models: A Divergence-based Calibration
Method", EMNLP 2024, arXiv:2409.14781, §4; official code github.com/zhang-wei-chao/DC-PDD,
``com_det_sco.py``).

Min-K%-style scores mistake texts full of common words for members: common tokens get high
probabilities whether or not the text was trained on. DC-PDD, after divergence-from-randomness
in information retrieval, weighs each token's probability by how surprising the token is in a
reference corpus -- the cross-entropy between the model's token probabilities and the
corpus' token frequencies::

    alpha_t = p(x_t | x_<t) * log(1 / f(x_t)),     alpha_t <- min(alpha_t, a)
    beta(x) = (1 / |FOS(x)|) * sum_{t in FOS(x)} alpha_t

* ``p(x_t | x_<t) = exp(logprob)`` from the one statistics pass (``mia_core.stats``);
* ``f`` the Laplace-smoothed token frequencies of a reference corpus under the target's
  tokenizer (``mia_core.stats.token_frequency``): the bundled public-domain Gutenberg corpus by
  default (the paper used 15 files of C4), or the user's (param ``corpus``, a file or folder);
* ``a`` the upper bound on a token's contribution (so that one rare token predicted with high
  probability cannot dominate); ``a = 0.01``, the official code's default (``--a 0.01``, also
  MIMIR's);
* ``FOS(x)`` the tokens at their *first occurrence* in the text (a repeated token, easy to
  predict the second time, counts once); param ``first_occurrence=False`` averages over all
  scored tokens instead.

Tokens scored: those every attack scores (``AttackInputs.scored``: as the model was trained,
``attacks.base``): tokens 2..n for GPT-2-style tokenizers, as the official code (``input_ids[1:]``,
no special tokens added); 1..n after a Llama-style BOS. (MIMIR's DC-PDD differs from both: it puts
the EOS token in front and scores tokens 1..n.) First occurrences are found among the scored tokens.

**The frequency corpus matters.** The paper and MIMIR count frequencies on 15 files of C4 (web
text, billions of tokens); the bundled corpus is 8 Gutenberg novels (about 755k SmolLM2 tokens; 18,878
of 49,152 token ids seen), far smaller and out of domain for most audits. The run says so (a warning)
when the corpus holds fewer than 10 million tokens or when more than 5 % of the audited texts' scored
tokens never occur in it (their frequency is then the Laplace floor); give a corpus of the audited
domain with ``--param dc_pdd.corpus=FILE_OR_FOLDER``. Sign: the paper flags a text as training data when beta is *large*
(the official code stores ``-beta`` and negates it again in its ROC), so the score is
``beta`` itself -- higher = more likely member, no flip.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from ..errors import SettingsError
from .base import AttackInputs, register
from ..options import check_values, flag, number, path

_READABLE: set = set()  # fingerprints of the corpora check_corpus has read (a corpus is read once while unchanged)
_LOCK = threading.Lock()


def _fingerprint(p: Path):
    """What identifies the corpus ``p`` as it is now (its real path, and the size and time of each of its
    files); None when it cannot be told (read again)."""
    try:
        real = os.path.realpath(p)
        st = os.stat(real)
        if not os.path.isdir(real):
            return real, st.st_size, st.st_mtime_ns
        files = []
        for base, dirs, names in os.walk(real):
            dirs.sort()
            for n in sorted(names):
                f = os.path.join(base, n)
                fs = os.stat(f)
                files.append((f, fs.st_size, fs.st_mtime_ns))
        return real, st.st_mtime_ns, tuple(files)
    except (OSError, ValueError):
        return None


def check_corpus(corpus: str) -> None:
    """The ``corpus`` a user gave (a file or folder) holds text DC-PDD can count: read as the run will read
    it (:func:`mia_core.stats.token_frequency.corpus_documents`), so an empty folder, a binary file or a folder of
    links out of it is a one-line ``DataError`` with the parameters, before any model loads. A corpus
    already read and unchanged since is not read again."""
    from ..stats.token_frequency import corpus_documents

    key = _fingerprint(Path(str(corpus)).expanduser())
    with _LOCK:
        if key is not None and key in _READABLE:
            return
    corpus_documents(corpus)
    if key is not None:
        with _LOCK:
            _READABLE.add(key)


DEFAULTS = {"a": 0.01, "corpus": None, "first_occurrence": True}
DOMAINS = {
    "a": number(0, lo_open=True, note="upper bound on a token's contribution (the paper's default 0.01)"),
    "corpus": path("read", words=("bundled",), validate=check_corpus,
                   note="reference corpus file or folder (none / bundled: the bundled one)"),
    "first_occurrence": flag(note="average over each token's first occurrence only"),
}
EXTRA_KEY = "dc_pdd_frequencies"
SMALL_CORPUS_TOKENS = 10_000_000  # below this, the run warns (the paper: 15 C4 files)
UNSEEN_WARN = 0.05  # above this share of the audited texts' scored tokens unseen in the corpus, the run warns


def check_params(params: dict) -> dict:
    """The parameters checked against their domains (before any model is loaded)."""
    return check_values("dc_pdd", DOMAINS, {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}})


def requires(params: dict) -> set:
    """No optional run input (the reference corpus is bundled); checks the parameters first."""
    check_params(params)
    return set()


def prepare(inputs: AttackInputs, ctx, **params) -> dict:
    """Count the reference corpus' token frequencies under the target's tokenizer (cached) for :func:`score`.

    Stores the frequencies in ``inputs.extra`` and reports how well the corpus covers the audited texts'
    scored tokens, with a warning when the corpus is small or misses many of them (Zhang et al. 2024 §4
    count on 15 C4 files).

    Parameters
    ----------
    inputs : AttackInputs
        The audited texts and their target statistics.
    ctx : RunContext
        The run's context (target model, configuration, progress; :class:`mia_core.pipeline.RunContext`).
    **params
        DC-PDD's parameters (``a``, ``corpus``, ``first_occurrence``).

    Returns
    -------
    dict
        The report: the corpus' summary, the share of audited tokens unseen in it, notes and warnings.

    Raises
    ------
    SettingsError
        A parameter outside its domain.
    """
    from ..stats.token_frequency import frequency_table

    check_params(params)
    table = frequency_table(ctx.target.tokenizer, params.get("corpus"), use_cache=ctx.config.use_cache,
                            progress=ctx.progress)
    inputs.extra[EXTRA_KEY] = table.frequencies
    report = table.summary()
    if not table.cached:
        report["note"] = f"token frequencies counted in {table.seconds:.1f}s (cached for later runs)"
    # how well the corpus covers the audited texts' scored tokens
    seen = table.counts > 0
    ids = np.concatenate([s.token_ids[s.valid] for s in inputs.scored() if s.n_tokens] or [np.zeros(0, int)])
    ids = ids[(ids >= 0) & (ids < len(seen))]
    unseen = float(1 - seen[ids].mean()) if ids.size else 0.0
    report["audited_tokens_unseen_in_corpus"] = round(unseen, 4)
    problems = []
    if table.n_tokens < SMALL_CORPUS_TOKENS:
        problems.append(f"its frequency corpus ({report['corpus']}) holds {table.n_tokens:,} tokens, where the paper "
                        "counts on 15 C4 files (billions)")
    if unseen > UNSEEN_WARN:
        problems.append(f"{100 * unseen:.1f} % of the audited texts' scored tokens never occur in it (their frequency "
                        "is the smoothing floor)")
    if problems:
        report["warning"] = ("; ".join(problems) + ": its scores are less reliable than the paper's; give a corpus of "
                             "the audited domain as DC-PDD's corpus parameter (dc_pdd.corpus: a file or a folder of text)")
    return report


def token_alphas(token_ids: np.ndarray, logprob: np.ndarray, freq: np.ndarray, a: float,
                 first_occurrence: bool = True) -> np.ndarray:
    """alpha_t = min(p_t * -log f(x_t), a) over the predicted tokens (first occurrences only)."""
    ok = ~np.isnan(logprob)
    ids = np.asarray(token_ids, dtype=np.int64)[ok]
    p = np.exp(np.asarray(logprob, dtype=np.float64)[ok])
    if first_occurrence:
        _, first = np.unique(ids, return_index=True)
        keep = np.sort(first)
        ids, p = ids[keep], p[keep]
    # an id outside the table (not the tokenizer's: cannot happen with the target's own) counts as rarest
    f = np.where(ids < len(freq), freq[np.minimum(ids, len(freq) - 1)], freq.min())
    return np.minimum(p * -np.log(f), a)


@register("dc_pdd", "DC-PDD", citation="Zhang et al. 2024 (DC-PDD) §4", defaults=DEFAULTS, prepare=prepare,
          requires=requires, domains=DOMAINS, cost="counting token frequencies in its corpus once (cached)")
def score(inputs: AttackInputs, a: float = 0.01, corpus=None, first_occurrence: bool = True) -> np.ndarray:
    """DC-PDD scores: ``beta(x)``, the mean capped ``alpha_t`` over each text's first-occurrence tokens (§4).

    Parameters
    ----------
    inputs : AttackInputs
        The texts, their target statistics and the frequencies :func:`prepare` stored.
    a : float
        Upper bound on a token's contribution (> 0).
    corpus : str or None
        The frequency corpus (used by :func:`prepare`; here only for the signature).
    first_occurrence : bool
        Average over each token's first occurrence only (else over every scored token).

    Returns
    -------
    numpy.ndarray
        One score per text, higher = more likely member; NaN where a text has no scored token.

    Raises
    ------
    SettingsError
        A parameter outside its domain, or no frequencies (the attack was not prepared by the pipeline).
    """
    checked = check_params({"a": a, "first_occurrence": first_occurrence})
    a, first_occurrence = checked["a"], checked["first_occurrence"]
    freq = inputs.extra.get(EXTRA_KEY)
    if freq is None:
        raise SettingsError("DC-PDD's token frequencies are missing: run it through mia_core.pipeline.run_attacks")
    out = np.full(len(inputs.texts), np.nan)
    for i, s in enumerate(inputs.scored()):
        if s.n_predicted == 0:
            continue
        out[i] = float(np.mean(token_alphas(s.token_ids, s.logprob, freq, float(a), bool(first_occurrence))))
    return out
