"""LOSS attack (Yeom et al. 2018, "Privacy Risk in Machine Learning", §3).

Members are fit better than non-members, so the model's average negative log-likelihood
on a text is lower for members:

    score(x) = -L(x),   L(x) = -(1/|S|) Σ_{t in S} log p(x_t | x_<t)

the mean over the scored tokens S, as MIMIR computes it: t = 2..T for GPT-2-style tokenizers
(nothing in front of the text), t = 1..T after a Llama-style tokenizer's BOS (``attacks.base``).
"""
import numpy as np

from .base import AttackInputs, per_text, register


@register("loss", "LOSS", citation="Yeom et al. 2018")
def score(inputs: AttackInputs) -> np.ndarray:
    """LOSS scores: each text's negated mean NLL over its scored tokens (Yeom et al. 2018 §3).

    Parameters
    ----------
    inputs : AttackInputs
        The texts and their target statistics.

    Returns
    -------
    numpy.ndarray
        One score per text, higher = more likely member; NaN where a text has no scored token.
    """
    return per_text(inputs.scored(), lambda s: -s.loss)
