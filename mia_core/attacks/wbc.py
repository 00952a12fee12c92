"""WBC: window-based comparison of the target's and a reference model's token losses (Chen, Du, Zhang, Kundu,
Fleming, Ribeiro & Li, "Window-based Membership Inference Attacks Against Fine-tuned Large Language Models",
USENIX Security 2026, arXiv:2601.02751; code github.com/Stry233/WBC, ``attacks/wbc.py``).

Fine-tuning leaves its trace in short stretches of a text, not evenly over all of it, and token losses are
heavy-tailed, so one average over the whole text (LOSS, or the reference attack's ``L_target - L_ref``) lets a
few extreme tokens outvote many small local gains. WBC lets every window of ``w`` consecutive scored tokens vote
on which model finds that stretch easier, and averages the votes over several window sizes::

    d_t      = l_ref(t) - l_target(t)                       (per scored token; nats)
    v_w(j)   = 1[ sum_{t=j}^{j+w-1} d_t > 0 ]               (the window's vote: the target's loss is lower)
    s_w(x)   = mean_j v_w(j)                                 (j = 1 .. n - w + 1)
    WBC(x)   = mean over the window sizes w that fit of s_w(x)

**higher = more likely member** (the share of windows in which the target finds the text easier than the
reference). The default window sizes are the reference code's geometric ladder 2, 3, 4, 6, 9, 13, 18, 25, 32,
40 tokens: single-token artefacts to phrases.

Details this implementation fixes, and why:

* **Tokens.** The scored tokens of the run (``AttackInputs.scored``: 2..n, or 1..n with a BOS prefix; see
  ``attacks.base``), the same tokens for both models: the reference pass scores the tokens the target scores,
  with the target's prefix (``pipeline.stages.stats_computer``). A token without a prediction under either model
  is left out before the windows are formed.
* **A text shorter than a window.** A window size larger than the text's scored tokens casts no vote and is
  left out of the average for that text; a text shorter than every window size is one window (its whole length,
  i.e. the sign of ``L_ref - L_target``). A text with no scored token is NaN.
* **Ties.** A window whose two sums are equal does not vote for membership (0): with the target as its own
  reference every text scores 0.
* **Different tokenizers.** Windows of tokens only mean the same stretch of text when both models cut it into
  the same tokens. With a reference of another tokenizer WBC is refused in one line before any model pass
  (:func:`check_tokenizers`); a byte-level alignment would be a method of our own, not the paper's.
* ``aggregation="mean"`` replaces each window's vote by its mean difference ``sum d / w`` (the magnitudes the
  paper's sign vote discards; close to the reference attack): an ablation, not the paper's attack.

The reference code could not be read from these machines (no network); the formula above is the paper's
(§4, "window-level comparison" and "ensembling across window sizes"), and ``tests/test_wbc.py`` checks this
module per text against a direct transcription of it (explicit loops over windows, losses from a plain
``transformers`` forward pass).
"""
from __future__ import annotations

import numpy as np

from ..errors import SettingsError
from .base import AttackInputs, register
from ..options import one_of, text

PAPER_WINDOWS = (2, 3, 4, 6, 9, 13, 18, 25, 32, 40)  # the reference code's default ladder
MAX_WINDOWS = 64  # window sizes at most (each a whole number in [1, 100000])


def parse_windows(value) -> tuple[int, ...]:
    """The window sizes written ``"2,3,4"`` (or a sequence of whole numbers): distinct whole numbers in
    [1, 100000], at most 64 of them, sorted; ``SettingsError`` (one line) otherwise."""
    items = value.split(",") if isinstance(value, str) else list(value)
    out = []
    for item in items:
        s = str(item).strip()
        if not s:
            continue
        try:
            w = int(s)
        except ValueError:
            raise SettingsError(f"window sizes are whole numbers separated by commas, got {s!r}") from None
        if not 1 <= w <= 100_000:
            raise SettingsError(f"a window size must be in [1, 100000] tokens, got {w}")
        out.append(w)
    if not out:
        raise SettingsError("give at least one window size, e.g. 2,3,4,6,9,13,18,25,32,40")
    if len(set(out)) != len(out):
        raise SettingsError(f"window sizes repeat: {','.join(map(str, out))}")
    if len(out) > MAX_WINDOWS:
        raise SettingsError(f"at most {MAX_WINDOWS} window sizes, got {len(out)}")
    return tuple(sorted(out))


DEFAULTS = {"windows": ",".join(map(str, PAPER_WINDOWS)), "aggregation": "vote"}
DOMAINS = {
    "windows": text(validate=parse_windows, what="window sizes in tokens, whole numbers separated by commas",
                    note="the window sizes whose votes are averaged (the reference code's 2,...,40 by default)"),
    "aggregation": one_of("vote", "mean", note="vote: the share of windows where the target's loss is lower "
                                               "(the paper); mean: the mean window difference (an ablation)"),
}
REFUSED = ("WBC compares the two models token by token, and the reference model's tokenizer differs from the "
           "target's: give a reference with the target's tokenizer (for a fine-tune, its base model)")


def differences(target, reference) -> np.ndarray:
    """``l_ref(t) - l_target(t)`` over the tokens both models predicted (float64, nats)."""
    lt = -target.logprob.astype(np.float64)
    lr = -reference.logprob.astype(np.float64)
    if lt.shape != lr.shape:
        raise SettingsError(REFUSED, options=("reference",))
    keep = ~(np.isnan(lt) | np.isnan(lr))
    return (lr - lt)[keep]


def text_score(d: np.ndarray, windows: tuple[int, ...], aggregation: str = "vote") -> float:
    """One text's WBC score from its per-token loss differences ``d`` (see the module docstring)."""
    n = d.shape[0]
    if n == 0:
        return float("nan")
    sizes = [w for w in windows if w <= n] or [n]
    c = np.concatenate([[0.0], np.cumsum(d)])
    per_size = []
    for w in sizes:
        sums = c[w:] - c[:-w]
        per_size.append(np.mean(sums > 0) if aggregation == "vote" else np.mean(sums) / w)
    return float(np.mean(per_size))


@register("wbc", "WBC (window-based comparison)", needs=("target", "reference"),
          citation="Chen et al. 2026 (USENIX Security), §4", defaults=DEFAULTS, domains=DOMAINS, one_tokenizer=True,
          cost="the reference model's pass (shared with ref), nothing of its own")
def score(inputs: AttackInputs, windows: str = DEFAULTS["windows"], aggregation: str = "vote") -> np.ndarray:
    """WBC scores: the share of windows, averaged over the window sizes, in which the target's summed loss is
    below the reference model's (Chen et al. 2026 §4).

    Parameters
    ----------
    inputs : AttackInputs
        The texts with their target and reference statistics (one tokenizer).
    windows : str
        The window sizes, e.g. ``"2,3,4,6,9,13,18,25,32,40"``.
    aggregation : str
        ``"vote"`` (the paper) or ``"mean"`` (the mean window difference, an ablation).

    Returns
    -------
    numpy.ndarray
        One score per text in [0, 1] (``vote``), higher = more likely member; NaN where a text has no token
        both models predicted.

    Raises
    ------
    SettingsError
        A window list or aggregation outside its domain, or a reference with another tokenizer.
    """
    sizes = parse_windows(windows)
    aggregation = DOMAINS["aggregation"].check(aggregation, "wbc.aggregation")
    if not inputs.same_tokenizer:
        raise SettingsError(REFUSED, options=("reference",))
    return np.array([text_score(differences(t, r), sizes, aggregation)
                     for t, r in zip(inputs.scored("target"), inputs.scored("reference"))], dtype=float)
