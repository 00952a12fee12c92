"""Min-K% Prob (Shi et al. 2024, "Detecting Pretraining Data from Large Language Models", §3).

A non-member text tends to contain a few outlier tokens with very low probability; a
member does not. Take the k% of tokens with the lowest log-probability and average them:

    score(x) = (1/|min-k%|) Σ_{x_t ∈ min-k%(x)} log p(x_t | x_<t)

k defaults to 20 % (the paper's recommended setting); at least one token is used.
"""
import math

import numpy as np

from .base import AttackInputs, per_text


def lowest_mean(values: np.ndarray, k: float) -> float:
    v = values[~np.isnan(values)]
    if v.size == 0:
        return float("nan")
    n = max(1, int(math.ceil(v.size * k)))
    return float(np.mean(np.partition(v, n - 1)[:n]))


def score(inputs: AttackInputs, k: float = 0.2) -> np.ndarray:
    if not 0 < k <= 1:
        from ..errors import SettingsError

        raise SettingsError(f"Min-K% needs 0 < k <= 1 (a fraction), got {k}")
    return per_text(inputs.target, lambda s: lowest_mean(s.logprob.astype(np.float64), k))
