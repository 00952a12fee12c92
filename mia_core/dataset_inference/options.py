"""Dataset inference's declared options (:class:`InferenceOptions`): the one home of every setting's default,
domain and help. :func:`mia_core.api.inference.prepare_inference` checks a run's settings with
:meth:`InferenceOptions.check`; the engine's own guards (:func:`~mia_core.dataset_inference.stages.check_test_settings`,
:func:`~mia_core.dataset_inference.significance.check_settings`, the book cut) check with the same domains; the
command line's flags (``mia infer-dataset``), the page's widget limits and the option table of
``docs/dataset-inference.md`` are made from the fields.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..options import SEED, Options, flag, number, one_of, option, text, whole
from .control import CONTROL_WHAT, check_control
from .significance import (COMBINATION_DOMAIN, DEFAULT_COMBINATION, DEFAULT_FOLDS, DEFAULT_PERMUTATIONS, FOLDS_DOMAIN,
                           PERMUTATIONS_DOMAIN)

DEFAULT_ALPHA = 0.01
PASSAGE_WORDS = 256
MAX_PASSAGES = 40
CORRECTIONS = ("bh", "holm")
# the share of a run's progress (from, to) its scoring stage reports: the model passes of mia_core.pipeline, each
# reporting its own share done f as from + (to - from) * f (a front end shows each pass as a stage of its own)
SCORING_SHARE = (0.05, 0.90)
PREFIXES = ("auto", "always", "none")  # mia_core.stats.PREFIX_MODES (checked equal by the options' test)


@dataclass(frozen=True)
class InferenceOptions(Options):
    """The settings of a dataset-inference run (texts, or books with ``passage_words`` / ``max_passages``)."""

    features: str = option("default", text(what="default, all, or feature names, comma-separated"),
                           "default (loss, zlib, min_k and min_k_pp at k = 0.05..0.6, dc_pdd; + ref with a reference, "
                           "+ recall with a population), all, or a comma list (e.g. default,lowercase)")
    alpha: float = option(DEFAULT_ALPHA, number(0, 0.5, lo_open=True), "significance level of the verdict")
    folds: int = option(DEFAULT_FOLDS, FOLDS_DOMAIN, "cross-fitting folds of the combination's weights")
    n_permutations: int = option(DEFAULT_PERMUTATIONS, PERMUTATIONS_DOMAIN,
                                 "label permutations of the primary test (10,000: p down to 1e-4)")
    seed: int = option(0, SEED, "seed of the folds, the permutations and the splits")
    prefix: str = option("auto", one_of(*PREFIXES), "what goes in front of every text (auto: as the model saw "
                                                      "texts in training)")
    cache: bool = option(True, flag(), "read and write the statistics cache")
    correction: str = option("bh", one_of(*CORRECTIONS),
                             "the correction across the suspect texts' (or books') own p-values (bh: "
                             "Benjamini-Hochberg, the false discovery rate; holm: the family-wise error rate)")
    combination: str = option(DEFAULT_COMBINATION, COMBINATION_DOMAIN,
                              "how the features are combined, always with non-negative weights (higher = more "
                              "member-like only): families, the mean over attack families of their standardised "
                              "features (each attack counts once; reads no label), nonneg, fitted by cross-fitting, "
                              "or mean, every feature equally")
    control: str = option("auto", text(validate=check_control, what=CONTROL_WHAT),
                          "the negative control, a model that never saw either set: auto (the reference model if "
                          "given, else the target's base, else the embedded SmolLM2; the test reads every feature "
                          "target minus control, and refuses when the control alone separates the sets), none, or "
                          "a model named like the target (not the target itself)")
    adjust_length: bool = option(True, flag(), "adjust every feature for text length (its residual from one pooled, "
                                               "label-free fit on the lengths in tokens, words and characters)")
    passage_words: int = option(PASSAGE_WORDS, whole(16, 100_000), "words per passage (books)")
    max_passages: int = option(MAX_PASSAGES, whole(1, 10_000), "passages per book at most (books)")
