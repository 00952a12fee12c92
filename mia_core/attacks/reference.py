"""Reference-model ratio (Carlini et al. 2021 §5.1; Mattern et al. 2023 §3.2 "reference attack").

A reference model trained on similar data but not on the audited texts calibrates for how
hard a text is in general; membership shows as a target loss much lower than the
reference loss:

    score(x) = -(L_target(x) - L_ref(x))

When target and reference share a tokenizer, L is the mean NLL per token. When they do not,
per-token losses are not comparable, so both sides use the NLL of the whole string per
UTF-8 byte (every token is predicted thanks to the prefix token, see ``mia_core.stats``).
"""
import numpy as np

from .base import AttackInputs


def score(inputs: AttackInputs) -> np.ndarray:
    out = np.full(len(inputs.texts), np.nan)
    for i, (s, r) in enumerate(zip(inputs.target, inputs.reference)):
        if s.n_predicted == 0 or r.n_predicted == 0:
            continue
        if inputs.same_tokenizer:
            out[i] = -(s.loss - r.loss)
        else:
            out[i] = -(s.nll_per_byte - r.nll_per_byte)
    return out
