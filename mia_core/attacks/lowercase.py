"""Lowercase ratio (Carlini et al. 2021, "Extracting Training Data from Large Language Models", §5.1).

The ratio of the model's log-perplexity on the lower-cased text to that on the text as
written. A memorised text is fit much better in its original casing than lower-cased:

    score(x) = L(lower(x)) / L(x)

(higher = more likely member). Needs a second pass of the target on the lower-cased text.
Both losses are means over tokens t = 2..T of their own tokenisation (all tokens with
``first_token=True``; ``attacks.base``).
"""
import numpy as np

from .base import AttackInputs, register


@register("lowercase", "Lowercase ratio", needs=("target", "target_lower"), citation="Carlini et al. 2021 §5.1",
          cost="one more target pass, over the lower-cased texts")
def score(inputs: AttackInputs) -> np.ndarray:
    """Lowercase-ratio scores: ``L(lower(x)) / L(x)`` per text (Carlini et al. 2021 §5.1).

    Parameters
    ----------
    inputs : AttackInputs
        The texts with their target statistics and those of their lower-cased forms.

    Returns
    -------
    numpy.ndarray
        One score per text, higher = more likely member; NaN where either form has no scored token
        or the loss as written is not positive.
    """
    out = np.full(len(inputs.texts), np.nan)
    for i, (s, sl) in enumerate(zip(inputs.scored("target"), inputs.scored("target_lower"))):
        if s.n_predicted > 0 and sl.n_predicted > 0 and s.loss > 0:
            out[i] = sl.loss / s.loss
    return out
