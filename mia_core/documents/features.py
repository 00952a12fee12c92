"""Document-level feature extraction (Meeus et al. 2024, §4.3).

A document has one value F(t) per token (thousands to hundreds of thousands); the
meta-classifier needs a fixed-length vector. Two extractors, each with one option where the
authors' code (``src/feature_extraction.py`` of computationalprivacy/document-level-membership-inference)
does something the project does not do by default:

* **AggFE**: min, max, mean, standard deviation and the 1st, 5th, 10th, 25th, 50th, 75th,
  90th, 95th and 99th percentiles of the document's values (13 features, ``AGG_NAMES``).
  The authors' ``simple_agg_feat_extraction`` also feeds the token count (``len(nlls)``);
  it is left out by default because document length is not a membership signal and can be
  a confounder between member and non-member sets (the classifier may learn that one set
  holds longer books). ``count=True`` (``--agg-count``) adds it as a 14th feature, ``count``
  (``AGG_NAMES_COUNT``): the number of the document's values that enter the features (its
  tokens with a prediction).
* **HistFE**: N_b equal-width bins whose edges are fitted on the values of the *training*
  documents of a fold only (``numpy.histogram_bin_edges`` over all their values, as the
  authors' ``numpy.histogram(all_values, bins=N_b)``). Two ways to treat a held-out
  document's values outside the fitted range (``OUTSIDE``, ``--hist-outside``):

  - ``"clip"`` (default): they are counted in the first/last bin, and each feature is the
    fraction of the document's tokens in that bin (the fractions sum to 1);
  - ``"drop"``: the authors' ``numpy.histogram(values, edges, density=True)``, reproduced
    exactly: values outside the fitted range are left out, and each feature is a density,
    the bin's share of the document's *in-range* tokens divided by the bin width (the
    features times the bin width sum to 1). A document with no value in range gets NaN
    features (numpy's 0/0), which the random forest treats as missing values. Training
    documents are never outside their own bins, so only held-out documents lose tokens;
    the constant factor 1/width changes nothing for the forest (it is the same for every
    document of a fold).

  The paper uses N_b = 1,000; fewer bins suit small runs.

Only finite values enter the features (tokens without a prediction are NaN and skipped).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import SettingsError
from .options import DEFAULT_BINS, FEATURES, OUTSIDE, parse_features  # noqa: F401 - declared with the options

PERCENTILES = (1, 5, 10, 25, 50, 75, 90, 95, 99)
AGG_NAMES = ("min", "max", "mean", "std") + tuple(f"p{p}" for p in PERCENTILES)
AGG_NAMES_COUNT = AGG_NAMES + ("count",)  # AggFE with count=True (the authors' code feeds the token count)
LABELS = {"hist": "HistFE", "agg": "AggFE"}


def check_options(agg_count=False, hist_outside: str = "clip") -> tuple[bool, str]:
    """The two feature options checked: ``agg_count`` a bool, ``hist_outside`` one of ``OUTSIDE``
    (``SettingsError`` with one line otherwise)."""
    if not isinstance(agg_count, (bool, np.bool_)):
        raise SettingsError(f"agg_count (AggFE with the token count) must be True or False, got {agg_count!r}")
    key = hist_outside.strip().lower() if isinstance(hist_outside, str) else hist_outside
    if key not in OUTSIDE:
        raise SettingsError(f"unknown HistFE rule for values outside the fitted bins {hist_outside!r}: "
                            f"choose {' or '.join(OUTSIDE)}")
    return bool(agg_count), key


def option_settings(agg_count: bool = False, hist_outside: str = "clip") -> dict:
    """The two options as recorded in every document run's settings (a reader can tell which
    AggFE and HistFE produced the numbers)."""
    return {"agg_count": bool(agg_count), "hist_outside": hist_outside}


def _finite(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return v[np.isfinite(v)]


def agg_features(values: Sequence[np.ndarray], count: bool = False) -> np.ndarray:
    """AggFE: one row of ``AGG_NAMES`` per document; ``count=True``: of ``AGG_NAMES_COUNT``, the
    last column the number of finite values (the authors' ``count``)."""
    k = len(AGG_NAMES)
    X = np.zeros((len(values), k + (1 if count else 0)))
    for r, v in enumerate(values):
        f = _finite(v)
        if count:
            X[r, k] = f.size
        if f.size == 0:
            X[r, :k] = np.nan
            continue
        X[r, :4] = (f.min(), f.max(), f.mean(), f.std())
        X[r, 4:k] = np.percentile(f, PERCENTILES)
    return X


class HistogramFeatures:
    """HistFE with bin edges fitted on training documents only; ``outside``: ``"clip"`` (fractions,
    out-of-range values in the end bins) or ``"drop"`` (the authors' ``density=True`` histogram)."""

    def __init__(self, n_bins: int = DEFAULT_BINS, outside: str = "clip"):
        if int(n_bins) < 1:
            raise SettingsError(f"the number of histogram bins must be at least 1, got {n_bins}")
        self.n_bins = int(n_bins)
        _, self.outside = check_options(False, outside)
        self.edges: np.ndarray | None = None

    def fit(self, values: Sequence[np.ndarray]) -> "HistogramFeatures":
        """Fit the bin edges on the finite values of the training documents' ``values``; returns ``self``.

        Raises
        ------
        SettingsError
            No finite value to fit on.
        """
        allv = np.concatenate([_finite(v) for v in values]) if len(values) else np.zeros(0)
        if allv.size == 0:
            raise SettingsError("no token values to fit histogram bins on")
        lo, hi = float(allv.min()), float(allv.max())
        if hi <= lo:  # one value: numpy.histogram's own range for "drop", as the authors' code
            lo, hi = (lo - 0.5, lo + 0.5) if self.outside == "drop" else (lo, lo + 1.0)
        self.edges = np.histogram_bin_edges(allv, bins=self.n_bins, range=(lo, hi))
        return self

    def transform(self, values: Sequence[np.ndarray]) -> np.ndarray:
        """HistFE: one row of ``n_bins`` per document, the fractions of its finite values in each fitted bin
        (``outside="clip"``: values beyond the edges counted in the end bins), or with ``outside="drop"`` numpy's
        ``density=True`` histogram of the values within the edges (NaN when none is).

        Raises
        ------
        RuntimeError
            Called before :meth:`fit`.
        """
        if self.edges is None:
            raise RuntimeError("HistogramFeatures.transform before fit")
        lo, hi = self.edges[0], self.edges[-1]
        X = np.zeros((len(values), self.n_bins))
        for r, v in enumerate(values):
            if self.outside == "drop":
                with np.errstate(invalid="ignore", divide="ignore"):  # no value in range: NaN, as numpy
                    X[r] = np.histogram(_finite(v), bins=self.edges, density=True)[0]
                continue
            f = np.clip(_finite(v), lo, hi)
            if f.size == 0:
                continue
            counts, _ = np.histogram(f, bins=self.edges)
            X[r] = counts / f.size
        return X

    @property
    def names(self) -> list[str]:
        """The feature names, ``bin_0`` .. ``bin_{n_bins - 1}``."""
        return [f"bin_{k}" for k in range(self.n_bins)]
