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
    return len(zlib.compress(text.encode("utf-8", "surrogatepass")))


@register("zlib", "zlib ratio", citation="Carlini et al. 2021 §5.1")
def score(inputs: AttackInputs) -> np.ndarray:
    out = np.full(len(inputs.texts), np.nan)
    for i, (t, s) in enumerate(zip(inputs.texts, inputs.scored())):
        if s.n_predicted > 0 and t:
            out[i] = -s.loss / zlib_entropy(t)
    return out
