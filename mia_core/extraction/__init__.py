"""Verbatim extraction (Carlini et al. 2023, "Quantifying Memorization Across Neural Language Models", ICLR 2023,
Definition 3.1): a text is *extractable with k tokens of context* when the model, prompted with the text's first
k tokens, reproduces its next m tokens exactly under greedy decoding.

The audit asks it of every member and non-member text (:func:`~mia_core.extraction.audit.run_extraction_audit`)
and reports the extractable share of each set with its Wilson interval, their difference, and two membership
scores with their AUC and TPR at low FPR: the length of the suffix the greedy continuation reproduces before its
first wrong token, and the suffix's mean log-likelihood given the prefix.

Greedy decoding needs no generation loop here: greedy decoding reproduces the first j suffix tokens exactly when,
at each of those positions, the model's most likely next token given the *true* text before it is the true token
(the generated text and the true text agree up to there, so the model sees the same context). The one statistics
pass (:mod:`mia_core.stats`, cached) keeps each position's most likely token (``top_id``), so the matched length is
read off it; ``tests/test_extraction.py`` compares it with ``transformers``' ``generate`` text by text.

A non-member share above zero is not noise: a model reproduces common or formulaic text it never saw. That share
is the control; only members' excess over it is evidence of training, and the report says so.
"""
from __future__ import annotations

__all__ = ["ExtractionOptions"]


def __getattr__(name):  # the options module imports nothing heavy; the rest loads when asked for
    if name == "ExtractionOptions":
        from .options import ExtractionOptions

        return ExtractionOptions
    raise AttributeError(name)
