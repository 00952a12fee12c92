"""Min-K%++ (Zhang et al. 2024, "Min-K%++: Improved Baseline for Detecting Pre-Training Data
from Large Language Models", eq. 2-3; also Mozaffari & Marathe 2024 (SMIA), Appendix A).

Each token's log-probability is standardised by the mean and standard deviation of the
log-probabilities of the model's own next-token distribution at that position:

    s(x_t) = (log p(x_t | x_<t) - μ_t) / σ_t,
    μ_t = E_{z ~ p(.|x_<t)}[log p(z | x_<t)],   σ_t² = E_z[(log p(z | x_<t) - μ_t)²]

and the score is the mean of the lowest k% of s(x_t) over t = 2..T (k = 20 % by default;
``floor(k·n)`` tokens, at least one, as Min-K%, ``attacks.min_k``; the first token only with
``first_token=True``, ``attacks.base``). Training texts sit at local maxima of the
likelihood, where the true token's log-probability is high relative to the distribution.
μ_t and σ_t come from the same forward pass as the other statistics (``mia_core.stats``).
MIMIR reports ``-score`` (lower = member).
"""
import numpy as np

from .base import AttackInputs, per_text, register
from .min_k import DEFAULTS, DOMAINS, check_k, lowest_mean  # noqa: F401 - the same k as Min-K%


def token_scores(s) -> np.ndarray:
    """Min-K%++'s per-token scores ``(log p(x_t) - mu_t) / sigma_t`` (Zhang et al. 2024, eq. 2).

    Parameters
    ----------
    s : TokenStats
        One text's statistics (``logprob``, ``mu``, ``sigma`` per token).

    Returns
    -------
    numpy.ndarray
        One standardised log-probability per token; NaN where ``sigma_t`` is 0 or the token has no prediction.
    """
    sigma = s.sigma.astype(np.float64)
    z = (s.logprob.astype(np.float64) - s.mu.astype(np.float64)) / np.where(sigma > 0, sigma, np.nan)
    return z


@register("min_k_pp", "Min-K%++", citation="Zhang et al. 2024; SMIA App. A", defaults=DEFAULTS, domains=DOMAINS)
def score(inputs: AttackInputs, k: float = 0.2) -> np.ndarray:
    """Min-K%++ scores: the mean of each text's ``k`` lowest standardised token scores (Zhang et al. 2024, eq. 3).

    Parameters
    ----------
    inputs : AttackInputs
        The texts and their target statistics.
    k : float
        Fraction of the scored tokens averaged, in (0, 1] (``floor(k·n)``, at least one, as Min-K%).

    Returns
    -------
    numpy.ndarray
        One score per text, higher = more likely member; NaN where a text has no scored token.

    Raises
    ------
    SettingsError
        ``k`` outside (0, 1] (naming ``min_k_pp.k``).
    """
    k = check_k(k, "min_k_pp")
    return per_text(inputs.scored(), lambda s: lowest_mean(token_scores(s), k))
