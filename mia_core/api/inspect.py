"""What the dashboard's "Inspect a text" page asks of the engine, for one text.

* :func:`read_text` -- an uploaded text file read as every reader reads it (the size limit, the encoding
  notes), optionally without its Project Gutenberg header and footer;
* :func:`text_statistics` -- the passes a calibration run makes, for one text: the target's token statistics,
  the lower-cased text's and the reference model's (``mia_core.pipeline.text_passes``), with the target's
  first-token rule;
* :func:`rarity` and :func:`token_values` -- R^TF of a reference corpus (Meeus et al. 2024 §4.2.1) and the
  per-token values the page colours by (the raw probability, RatioNorm, MaxNorm, §4.2.2), computed by the
  document audit's own functions;
* :func:`text_neighbours` and :func:`neighbour_spans` -- the text's neighbours with their target loss and
  embedding similarity, and where their replaced words lie;
* :func:`text_hash` -- the engine's fingerprint of a text (the cache's key).

The engine's modules are imported when a function runs (a test's patch of, say,
``mia_core.stats.compute_stats`` takes effect; importing this module stays light).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import DataError, MiaError

# the per-token values: the raw probability, RatioNorm and MaxNorm (Meeus et al. 2024 §4.2.2)
NORMALISATIONS = ("prob", "ratio", "max")


def text_hash(text: str) -> str:
    """The engine's fingerprint of a text (the key its statistics are cached under).

    Parameters
    ----------
    text : str
        The text.

    Returns
    -------
    str
        32 hexadecimal digits (SHA-256 of the UTF-8 text, cut).
    """
    from ..cache import text_hash as _hash
    from ..inputs import bad_value

    if not isinstance(text, str):
        raise bad_value("text", "a text (a string)", text, DataError)
    return _hash(text)


def read_text(upload, *, strip_gutenberg: bool = True, notes: list[str] | None = None) -> str:
    """One uploaded text file as the readers read it: the same size limit (``mia_core.data.MAX_BYTES``, read
    when called), decoded with the same fallbacks, stripped of surrounding white space.

    Parameters
    ----------
    upload : path or file-like
        A path, or an uploaded file with ``name`` and ``getvalue()``.
    strip_gutenberg : bool, default True
        Keep only the body of a Project Gutenberg file (``mia_core.documents.strip_gutenberg``).
    notes : list of str, optional
        Notes on the reading (e.g. "read as Windows-1252") are appended here.

    Returns
    -------
    str
        The text.

    Raises
    ------
    mia_core.errors.DataError
        Over the size limit, binary content or unreadable.
    """
    import os

    from .. import data
    from ..data.decoding import _read_bytes
    from ..inputs import bad_value

    if not (isinstance(upload, (str, os.PathLike)) or (hasattr(upload, "getvalue") and hasattr(upload, "name"))):
        raise bad_value("upload", "a file path or an uploaded file (with name and getvalue())", upload, DataError)
    name, raw = _read_bytes(upload, data.MAX_BYTES)
    text, _ = data.decode_bytes(raw, getattr(upload, "name", name), notes)
    if strip_gutenberg:
        from ..documents import strip_gutenberg as _strip

        text, _ = _strip(text)
    return text.strip()


@dataclass
class TextStatistics:
    """One text's passes, as :func:`text_statistics` returns them.

    Attributes
    ----------
    hash : str
        :func:`text_hash` of the text.
    stats : mia_core.stats.TokenStats
        The target's per-token statistics.
    lower : mia_core.stats.TokenStats or None
        Those of the lower-cased text (None when not asked for).
    reference : mia_core.stats.TokenStats or None
        The reference model's, on the tokens the target scores (None without a reference).
    same_tokenizer : bool
        Whether the reference shares the target's tokenizer (True without a reference).
    first_token_default : bool
        Whether attacks score the first token by default on this target (``mia_core.stats.scores_first_token``).
    """

    hash: str
    stats: Any
    lower: Any = None
    reference: Any = None
    same_tokenizer: bool = True
    first_token_default: bool = False


def text_statistics(text: str, lm, *, reference=None, lower: bool = True,
                    progress: Callable | None = None) -> TextStatistics:
    """The passes a calibration run makes, for one text (default settings and the cache, as a run).

    Parameters
    ----------
    text : str
        The text.
    lm : mia_core.models.LoadedModel
        The target model.
    reference : mia_core.models.LoadedModel, optional
        A reference model: its statistics on the tokens the target scores.
    lower : bool, default True
        Score the lower-cased text too (the lowercase attack).
    progress : callable, optional
        ``progress(message, fraction)`` (:mod:`mia_core.progress`).

    Returns
    -------
    TextStatistics
        The statistics and the first-token rule.

    Raises
    ------
    mia_core.errors.MiaError
        Fewer than two tokens to predict, or a model pass failed.
    """
    from ..models import LoadedModel
    from ..inputs import bad_value

    if not isinstance(text, str):
        raise bad_value("text", "a text (a string)", text, DataError)
    for name, m in (("lm", lm), ("reference", reference)):
        if not (isinstance(m, LoadedModel) or (name == "reference" and m is None)):
            raise bad_value(name, "a loaded model (mia_core.load or load_causal_lm: load a model spec first)", m)
    from ..pipeline import text_passes
    from ..stats import StatsSettings, scores_first_token

    kw = {"progress": progress} if progress is not None else {}
    passes = text_passes([text], lm, reference=reference, lower=lower, **kw)
    stats = passes.target[0]
    if stats.n_predicted < 2:
        raise MiaError("the text is too short: at least two tokens are needed.")
    return TextStatistics(
        hash=text_hash(text), stats=stats, lower=passes.target_lower[0] if lower else None,
        reference=passes.reference[0] if reference is not None else None,
        same_tokenizer=lm.same_tokenizer(reference) if reference is not None else True,
        first_token_default=scores_first_token(lm, StatsSettings()))


def rarity(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """R^TF from a reference corpus's token counts (Meeus et al. 2024 §4.2.1): count / total, unseen tokens at
    half the smallest observed frequency (``mia_core.documents.dictionaries.token_frequency``).

    Parameters
    ----------
    counts : numpy.ndarray
        Count of each token id.

    Returns
    -------
    rtf : numpy.ndarray
        R^TF of each token id.
    seen : numpy.ndarray of bool
        Whether the token occurs in the corpus.
    """
    from ..documents.dictionaries import token_frequency

    return token_frequency(counts)


def token_values(logprob: np.ndarray, max_logprob: np.ndarray, token_ids: np.ndarray, norm: str,
                 rtf: np.ndarray | None) -> np.ndarray:
    """The value shown for each token, by the document audit's ``normalize`` (F = -log form).

    Parameters
    ----------
    logprob, max_logprob : numpy.ndarray
        log P(t) and log P_max per token (NaN where no prediction).
    token_ids : numpy.ndarray
        The token ids.
    norm : {"prob", "ratio", "max"}
        The raw probability P(t) = exp(-F_NoNorm); RatioNorm or MaxNorm as log10, -F / ln 10.
    rtf : numpy.ndarray or None
        R^TF of each token id (:func:`rarity`); needed for RatioNorm and MaxNorm.

    Returns
    -------
    numpy.ndarray
        One value per token, NaN where no prediction.

    Raises
    ------
    ValueError
        An unknown ``norm``, or RatioNorm / MaxNorm without ``rtf``.
    """
    from ..documents.normalization import normalize

    if norm == "prob":
        return np.exp(-normalize("none", logprob))
    if rtf is None:
        raise ValueError("RatioNorm and MaxNorm need a token-frequency dictionary")
    if norm not in ("ratio", "max"):
        raise ValueError(f"unknown normalisation {norm!r}")
    r = rtf[np.asarray(token_ids, dtype=np.int64)]
    return -normalize(norm, logprob, max_logprob, r) / np.log(10)


def neighbour_spans(text: str, replaced) -> list[tuple[int, int]]:
    """Character spans of the replaced words in a neighbour of ``text``.

    Parameters
    ----------
    text : str
        The original text.
    replaced : iterable of (int, str, str)
        ``(word_index, old, new)`` with word indices into ``mia_core.neighbours.words(text)``; later words
        shift by the length change of earlier ones.

    Returns
    -------
    list of (int, int)
        ``(start, end)`` of each new word in the neighbour.
    """
    from ..neighbours import words

    ws = words(text)
    spans, shift = [], 0
    for idx, old, new in sorted((int(i), str(o), str(n)) for i, o, n in replaced):
        if not 0 <= idx < len(ws):
            continue
        start = ws[idx].start + shift
        spans.append((start, start + len(new)))
        shift += len(new) - len(ws[idx].text)
    return spans


def _speed_words(how: str, which: str) -> str:
    """Where an estimate's speed comes from, in words (``how``: :func:`mia_core.estimate.speed`'s)."""
    return {"measured": f"this machine's measured speed for {which}",
            "scaled": "this machine's speed measured with another model, scaled by size"}.get(how, "an assumed speed")


def estimate_analysis(lm, text: str, *, reference=None, lower: bool = False) -> tuple[str, float]:
    """What Analyse will cost on ``lm``, before it is pressed (issue 53 item 1: Inspect showed no time): one pass of
    the text through the target, one of its lower-cased copy when asked, one through the reference when loaded, at
    this machine's measured speed for each model (a pass the statistics cache holds costs nothing: not counted).

    Parameters
    ----------
    lm : mia_core.models.LoadedModel
        The loaded target.
    text : str
        The text.
    reference : mia_core.models.LoadedModel, optional
        The loaded reference.
    lower : bool
        The lower-cased text is scored too.

    Returns
    -------
    tuple
        ``(line, seconds)``.
    """
    from ..estimate import count_tokens, estimate_seconds
    from ..formatting import fmt_seconds

    passes = [(lm, "the target")] + ([(lm, "its lower-cased copy")] if lower else []) + \
        ([(reference, "the reference")] if reference is not None else [])
    total, parts, how = 0.0, [], "measured"
    for m, what in passes:
        n_tok = count_tokens([text], m.tokenizer)
        seconds, h = estimate_seconds(n_tok, m.n_params, m.device, m.identity)
        total += seconds
        how = h if h != "measured" else how
        parts.append(what)
    speed = _speed_words(how, "each model")
    n_tok = count_tokens([text], lm.tokenizer)
    return (f"about {fmt_seconds(total)}: one pass of the text's {n_tok:,} tokens through "
            + ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
            + f", at {speed} (less when cached)."), total


def estimate_neighbours(lm, text: str, n: int) -> tuple[str, float]:
    """What generating and scoring ``n`` neighbours of ``text`` will cost on ``lm``, before the button is pressed
    (issue 53 item 1: Inspect's neighbours showed no time and took 21 s): each neighbour scored from where it
    differs from the text, about :data:`~mia_core.api.plan.NEIGHBOUR_SHARE` of its tokens, at this machine's
    measured speed for the model; the masked LM's proposals come on top (not counted: their time is small beside
    the scoring on a CPU, and the line says so).

    Parameters
    ----------
    lm : mia_core.models.LoadedModel
        The loaded target.
    text : str
        The text.
    n : int
        The neighbours asked for.

    Returns
    -------
    tuple
        ``(line, seconds)``.
    """
    from ..estimate import count_tokens, estimate_seconds
    from ..formatting import counted, fmt_seconds
    from .plan import NEIGHBOUR_SHARE

    n_tok = count_tokens([text], lm.tokenizer)
    seconds, how = estimate_seconds(int(NEIGHBOUR_SHARE * int(n) * n_tok), lm.n_params, lm.device, lm.identity)
    speed = _speed_words(how, "this model")
    return (f"about {fmt_seconds(seconds)}: {counted(int(n), 'neighbours')}, each scored from where it differs from "
            f"the text (about {100 * NEIGHBOUR_SHARE:.0f} % of its {n_tok:,} tokens), at {speed}; plus the masked LM's "
            "proposals."), seconds


def text_neighbours(lm, text: str, settings, *, progress: Callable, first_token: bool = False) -> dict:
    """Neighbours of one text with their target loss and embedding cosine similarity to the text.

    Parameters
    ----------
    lm : mia_core.models.LoadedModel
        The target model.
    text : str
        The text.
    settings : mia_core.neighbours.NeighbourSettings
        How the neighbours are made (``mia_core.attacks.neighbourhood.settings_from``).
    progress : callable
        ``progress(message, fraction)`` (:mod:`mia_core.progress`).
    first_token : bool, default False
        Whether losses include the first token (``mia_core.attacks.base``), as the neighbourhood attack
        computes them.

    Returns
    -------
    dict
        ``settings`` (as a dict), ``first_token``, ``warning`` (the attack's coupling warning or None) and
        ``neighbours``: one dict per neighbour with ``text``, ``spans`` (:func:`neighbour_spans`), ``loss``,
        ``cosine`` and ``replaced``. No neighbour: ``{"original_loss": nan, "neighbours": []}``.
    """
    from ..attacks.base import scored_tokens
    from ..attacks.neighbourhood import coupling_warning
    from ..neighbours import generate_neighbours
    from ..stats import compute_stats
    from ..stats.embeddings import neighbour_similarities

    nbs = generate_neighbours([text], settings, progress=progress)[0]
    if not nbs:
        return {"original_loss": float("nan"), "neighbours": []}
    stats = scored_tokens(compute_stats(lm, [n.text for n in nbs], progress=progress, label="neighbour pass"),
                          first_token)
    cos = neighbour_similarities([text], [nbs], progress=progress)[0]
    return {"settings": settings.to_dict(), "first_token": bool(first_token), "warning": coupling_warning(settings, lm),
            "neighbours": [
        {"text": n.text, "spans": neighbour_spans(text, n.replaced), "loss": float(s.loss), "cosine": float(c),
         "replaced": [list(r) for r in n.replaced]} for n, s, c in zip(nbs, stats, cos)]}
