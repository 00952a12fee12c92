"""zlib ratio (Carlini et al. 2021, "Extracting Training Data from Large Language Models", §5.1).

The model's log-perplexity is compared with the zlib entropy of the text (the number of
bits, here bytes, of its zlib-compressed form), a model-free measure of how predictable
the text is anyway. Carlini et al. rank samples by the ratio of the two; a low
loss relative to the zlib entropy suggests memorisation:

    score(x) = -L(x) / zlib(x),   zlib(x) = len(zlib.compress(x.encode("utf-8")))

with ``L`` the mean NLL over tokens t = 2..T (as LOSS, ``attacks.loss``; all tokens with
``first_token=True``). MIMIR computes ``L / zlib`` (lower = member); this is its negation.
"""
import zlib

import numpy as np

from .base import AttackInputs, register


def zlib_entropy(text: str) -> int:
    """The zlib entropy of ``text``: the length in bytes of its zlib-compressed UTF-8 form.

    Parameters
    ----------
    text : str
        The text (lone surrogates are encoded as they are, ``surrogatepass``).

    Returns
    -------
    int
        Compressed length in bytes.
    """
    return len(zlib.compress(text.encode("utf-8", "surrogatepass")))


@register("zlib", "zlib ratio", citation="Carlini et al. 2021 §5.1")
def score(inputs: AttackInputs) -> np.ndarray:
    """zlib-ratio scores: ``-L(x) / zlib(x)`` per text (Carlini et al. 2021 §5.1).

    Parameters
    ----------
    inputs : AttackInputs
        The texts and their target statistics.

    Returns
    -------
    numpy.ndarray
        One score per text, higher = more likely member; NaN for an empty text or one without a scored token.
    """
    out = np.full(len(inputs.texts), np.nan)
    for i, (t, s) in enumerate(zip(inputs.texts, inputs.scored())):
        if s.n_predicted > 0 and t:
            out[i] = -s.loss / zlib_entropy(t)
    return out
