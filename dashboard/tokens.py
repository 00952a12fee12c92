"""The per-token view: what the model thought of every token, as coloured HTML spans.

Values shown per token t at position i (P(t) = p(t | x_<i), P_max = max_v p(v | x_<i), both from
the one forward pass of ``mia_core.stats``; R(t) = R^TF(t) the token's frequency in a reference
corpus, Meeus et al. 2024 §4.2.1, unseen tokens at half the smallest observed frequency:
``mia_core.documents.dictionaries.token_frequency``):

* ``prob``   raw probability P(t) (colour: log scale, 10^-``PROB_DECADES`` → 1);
* ``ratio``  RatioNorm: log10( P(t) / R(t) )                              (Meeus et al. §4.2.2)
* ``max``    MaxNorm:   log10( (1 - (P_max - P(t))) / R(t) )               (Meeus et al. §4.2.2)

RatioNorm and MaxNorm are -F(t)/ln 10 of ``mia_core.documents.normalization.normalize`` (F is the
paper's -log form; the formulas live only there), so higher = more member-like everywhere.
Colours: red (low) → yellow → green (high); the normalised values are clipped to ±``NORM_RANGE``
decades.

Presentation only (the maths is the engine's). Plain Python: the page passes the HTML to
``st.html``. Token text and every hover string are HTML-escaped.
"""
from __future__ import annotations

import html

import numpy as np

from mia_core.api.inspect import token_values as _token_values

NORMS = {"prob": "Raw probability", "ratio": "RatioNorm (P / R^TF)", "max": "MaxNorm ((1 − (P_max − P)) / R^TF)"}
NORM_RANGE = 3.0  # decades either side of 1 for the colour scale of RatioNorm / MaxNorm
PROB_DECADES = 4.0  # the raw-probability colour scale spans 10^-4 .. 1 (log scale)
LONG_TEXT_TOKENS = 1500  # above this, the page shows a windowed chart and one segment of spans


def token_values(logprob: np.ndarray, max_logprob: np.ndarray, token_ids: np.ndarray, norm: str,
                 rtf: np.ndarray | None) -> np.ndarray:
    """The value shown for each token (see the module docstring); NaN where no prediction.

    Computed by the engine (``mia_core.api.inspect.token_values``, the document audit's ``normalize``,
    F = -log form): P(t) = exp(-F_NoNorm), RatioNorm and MaxNorm = -F / ln 10 with R(t) = ``rtf[token_ids]``.
    """
    return _token_values(logprob, max_logprob, token_ids, norm, rtf)


def unit(values: np.ndarray, norm: str) -> np.ndarray:
    """Map values to [0, 1] for the colour scale."""
    v = np.asarray(values, dtype=np.float64)
    if norm == "prob":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.clip((np.log10(v) + PROB_DECADES) / PROB_DECADES, 0.0, 1.0)
    return np.clip((v + NORM_RANGE) / (2 * NORM_RANGE), 0.0, 1.0)


def colour(u: float) -> str:
    """Red (0) → yellow (0.5) → green (1), light enough for black text."""
    if not np.isfinite(u):
        return "#e0e0e0"
    return f"hsl({120.0 * float(u):.0f}, 80%, 78%)"


def token_pieces(tokenizer, text: str, ids) -> list[str]:
    """The exact slice of ``text`` each token covers (offsets of a fast tokenizer; whitespace between
    tokens goes to the following token), else each token decoded on its own."""
    ids = [int(i) for i in ids]
    try:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        if list(enc["input_ids"]) == ids:
            pieces, cur = [], 0
            for _, end in enc["offset_mapping"]:
                end = max(int(end), cur)
                pieces.append(text[cur:end])
                cur = end
            if pieces and cur < len(text):
                pieces[-1] += text[cur:]
            return pieces
    except (NotImplementedError, TypeError, ValueError, KeyError):
        pass
    return [tokenizer.decode([i]) for i in ids]


def _rarity(r: float, seen: bool) -> str:
    if not seen:
        return "unseen in the reference corpus"
    word = "very common" if r >= 1e-2 else "common" if r >= 1e-3 else "uncommon" if r >= 1e-5 else "rare"
    return f"{word} ({r * 100:.3g}% of reference tokens)"


def _show(s: str) -> str:
    return repr(s)[1:-1] if s.strip() == "" or "\n" in s else s


def tokens_html(pieces: list[str], stats, values: np.ndarray, norm: str, tokenizer, *,
                rtf: np.ndarray | None = None, seen: np.ndarray | None = None, start: int = 0,
                stop: int | None = None) -> str:
    """Coloured spans for tokens [start, stop); each span's title gives token, probability, top
    prediction and its probability, rank, rarity and the normalised value."""
    stop = len(pieces) if stop is None else min(stop, len(pieces))
    u = unit(values, norm)
    top_ids = np.asarray(stats.top_id)
    top_text = {}
    out = []
    for i in range(start, stop):
        lp = float(stats.logprob[i])
        tid = int(stats.token_ids[i])
        if np.isfinite(lp):
            top = int(top_ids[i])
            if top not in top_text:
                top_text[top] = tokenizer.decode([top])
            lines = [f"token {_show(pieces[i])!r} (#{i + 1})",
                     f"probability {np.exp(lp) * 100:.3g}%  ·  rank {int(stats.rank[i])}",
                     f"top prediction {_show(top_text[top])!r} ({np.exp(float(stats.max_logprob[i])) * 100:.3g}%)"]
        else:
            lines = [f"token {_show(pieces[i])!r} (#{i + 1})", "no prediction (first token)"]
        if rtf is not None:
            lines.append("rarity: " + _rarity(float(rtf[tid]), bool(seen[tid]) if seen is not None else True))
        if norm != "prob" and np.isfinite(values[i]):
            lines.append(f"{'RatioNorm' if norm == 'ratio' else 'MaxNorm'} log10 = {values[i]:+.2f}")
        title = html.escape("\n".join(lines), quote=True).replace("\n", "&#10;")
        txt = html.escape(pieces[i]).replace("\n", "<br>")
        out.append(f'<span class="mia-tok" style="background:{colour(u[i])};border-radius:3px;padding:1px 0" '
                   f'title="{title}">{txt}</span>')
    body = "".join(out)
    return ('<div class="mia-tokens" style="white-space:pre-wrap;line-height:1.9;font-size:1.02em;'
            f'font-family:inherit;border:1px solid #ddd;border-radius:6px;padding:12px">{body}</div>')


def legend_html(norm: str) -> str:
    stops = ", ".join(colour(x) for x in np.linspace(0, 1, 7))
    if norm == "prob":
        lo, mid, hi = f"≤ {10 ** -PROB_DECADES * 100:g}%", "1% (log scale)", "100%"
        what = "probability the model gave the token"
    else:
        lo, mid, hi = f"≤ 1/{10 ** NORM_RANGE:,.0f}", "1 (as expected from frequency)", f"≥ {10 ** NORM_RANGE:,.0f}"
        what = ("P relative to the token's reference frequency (RatioNorm)" if norm == "ratio" else
                "how close the token came to the model's top choice, 1 − (P_max − P), relative to the token's "
                "reference frequency (MaxNorm)")
    return (f'<div style="font-size:.85em;margin:.3em 0 .6em 0">Colour = {html.escape(what)} '
            f'(hover a token for details)<div style="display:flex;align-items:center;gap:8px;max-width:520px">'
            f'<span>{html.escape(lo)}</span><div style="flex:1;height:12px;border-radius:3px;'
            f'background:linear-gradient(to right, {stops})"></div><span>{html.escape(hi)}</span></div>'
            f'<div style="text-align:center;max-width:520px;color:#666">{html.escape(mid)}</div></div>')
