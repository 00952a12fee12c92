"""Min-K% Prob (Shi et al. 2024, "Detecting Pretraining Data from Large Language Models", §3).

A non-member text tends to contain a few outlier tokens with very low probability; a
member does not. Take the k% of tokens with the lowest log-probability and average them:

    score(x) = (1/|min-k%|) Σ_{x_t ∈ min-k%(x)} log p(x_t | x_<t),   t = 2..T

k defaults to 20 % (the paper's recommended setting). Of the n scored tokens, the
``floor(k·n)`` lowest are kept, as the reference code does (``int(len(probs) * k)`` in Shi et
al.'s code and in MIMIR), but at least one (the reference code averages an empty list, NaN,
for texts shorter than 1/k tokens). The first token is left out unless ``first_token=True``
(``attacks.base``). MIMIR reports ``-score`` (lower = member).
"""
import numpy as np

from .base import AttackInputs, per_text, register
from ..options import number

DEFAULTS = {"k": 0.2}
DOMAINS = {"k": number(0, 1, lo_open=True, note="fraction of lowest-scoring tokens averaged")}


def n_lowest(n: int, k: float) -> int:
    """How many of ``n`` values Min-K% averages: ``floor(k·n)``, at least 1 (0 when n is 0)."""
    if n <= 0:
        return 0
    return max(1, int(n * k))


def lowest_mean(values: np.ndarray, k: float) -> float:
    """Mean of the ``floor(k·n)`` (at least one) lowest of the non-NaN ``values``."""
    v = values[~np.isnan(values)]
    if v.size == 0:
        return float("nan")
    n = n_lowest(v.size, k)
    return float(np.mean(np.partition(v, n - 1)[:n]))


def check_k(k: float, name: str = "min_k") -> float:
    """``k`` checked against its domain (``SettingsError`` naming ``NAME.k``)."""
    return DOMAINS["k"].check(k, f"{name}.k")


@register("min_k", "Min-K%", citation="Shi et al. 2024", defaults=DEFAULTS, domains=DOMAINS)
def score(inputs: AttackInputs, k: float = 0.2) -> np.ndarray:
    """Min-K% scores: the mean of each text's ``k`` lowest token log-probabilities (Shi et al. 2024 §3).

    Parameters
    ----------
    inputs : AttackInputs
        The texts and their target statistics.
    k : float
        Fraction of the scored tokens averaged, in (0, 1] (``floor(k·n)``, at least one).

    Returns
    -------
    numpy.ndarray
        One score per text, higher = more likely member; NaN where a text has no scored token.

    Raises
    ------
    SettingsError
        ``k`` outside (0, 1] (naming ``min_k.k``).
    """
    k = check_k(k)
    return per_text(inputs.scored(), lambda s: lowest_mean(s.logprob.astype(np.float64), k))
