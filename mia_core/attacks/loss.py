"""LOSS attack (Yeom et al. 2018, "Privacy Risk in Machine Learning", §3).

Members are fit better than non-members, so the model's average negative log-likelihood
on a text is lower for members:

    score(x) = -L(x),   L(x) = -(1/(T-1)) Σ_{t=2..T} log p(x_t | x_<t)

the mean over the text's tokens 2..T, as the papers and MIMIR compute it (the first token,
predicted from the BOS/EOS prefix alone, is left out; ``first_token=True`` /
``mia run --score-first-token`` averages over t = 1..T, see ``attacks.base``).
"""
import numpy as np

from .base import AttackInputs, per_text


def score(inputs: AttackInputs) -> np.ndarray:
    return per_text(inputs.scored(), lambda s: -s.loss)
