"""LOSS attack (Yeom et al. 2018, "Privacy Risk in Machine Learning", §3).

Members are fit better than non-members, so the model's average negative log-likelihood
on a text is lower for members:

    score(x) = -L(x),   L(x) = -(1/T) Σ_t log p(x_t | x_<t)

(the mean over the T predicted tokens of the text).
"""
import numpy as np

from .base import AttackInputs, per_text


def score(inputs: AttackInputs) -> np.ndarray:
    return per_text(inputs.target, lambda s: -s.loss)
