# shim (issue 39): removed when every import moves
"""Moved: the blind baseline, verdict, length matching and shift report to :mod:`mia_core.metrics.blind_baseline`,
the overlap statistics to :mod:`mia_core.data.overlap`; this module re-exports their names.

Setting a name here (``monkeypatch.setattr(mia_core.shift, "blind_baseline", ...)``) sets it in the module
that defines it too, so code that calls it there sees the replacement, as before the move.
"""
from __future__ import annotations

import importlib
import sys
import types

from .data.overlap import *  # noqa: F401,F403
from .data.overlap import (DEFAULT_YEAR_CUTOFF, MAX_LISTED_PAIRS, MONTHS, NEAR_DUP_JACCARD,  # noqa: F401
                           NGRAM_SIZES, SHINGLE_SIZE, _as_texts, _date_stats, _length, _length_stats, _MONTH_RE,
                           _ngram_overlap, _ngrams, _normalise, _shingles, _WORD_RE, _words, _YEAR_RE,
                           near_duplicate_pairs, overlap_stats)
from .metrics.blind_baseline import *  # noqa: F401,F403
from .metrics.blind_baseline import (BLIND_MODEL_DESCRIPTION, CAUTION_CI_LOW, SHIFT_CI_LOW,  # noqa: F401
                                     SHIFT_MESSAGE, _make_pipeline, _top_features, blind_baseline, match_lengths,
                                     shift_report, verdict)

_blind = importlib.import_module("mia_core.metrics.blind_baseline")
_overlap = importlib.import_module("mia_core.data.overlap")


class _Shim(types.ModuleType):
    """A module whose attributes, when set, are set in the module that defines them as well."""

    def __setattr__(self, name: str, value) -> None:
        for home in (_blind, _overlap):
            if name in vars(home):
                setattr(home, name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Shim
