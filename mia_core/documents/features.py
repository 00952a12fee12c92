"""Document-level feature extraction (Meeus et al. 2024, §4.3).

A document has one value F(t) per token (thousands to hundreds of thousands); the
meta-classifier needs a fixed-length vector. Two extractors:

* **AggFE**: min, max, mean, standard deviation and the 1st, 5th, 10th, 25th, 50th, 75th,
  90th, 95th and 99th percentiles of the document's values (13 features). The authors'
  code also feeds the token count; it is left out here because document length is not a
  membership signal and can be a confounder between member and non-member sets.
* **HistFE**: N_b equal-width bins whose edges are fitted on the values of the *training*
  documents of a fold only (``numpy.histogram_bin_edges`` over all their values); each
  document's feature vector is the fraction of its tokens in each bin. Values of a
  held-out document outside the fitted range are counted in the first/last bin (the
  authors' code, which uses ``numpy.histogram(density=True)``, drops them instead); the
  fractions then always sum to 1. The paper uses N_b = 1,000; fewer bins suit small runs.

Only finite values enter the features (tokens without a prediction are NaN and skipped).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import SettingsError

PERCENTILES = (1, 5, 10, 25, 50, 75, 90, 95, 99)
AGG_NAMES = ("min", "max", "mean", "std") + tuple(f"p{p}" for p in PERCENTILES)
FEATURES = ("hist", "agg")
LABELS = {"hist": "HistFE", "agg": "AggFE"}
DEFAULT_BINS = 1000  # §4.3 / the authors' configs (hist_1000)


def parse_features(spec) -> tuple[str, ...]:
    """``"hist"``, ``"agg"``, ``"both"``/``"all"``, ``"HistFE"`` or a list -> canonical names."""
    items = [spec] if isinstance(spec, str) else list(spec or ())
    out: list[str] = []
    for item in items:
        for raw in str(item).split(","):
            key = raw.strip().lower()
            if not key:
                continue
            if key in ("both", "all"):
                out.extend(FEATURES)
            elif key in ("hist", "histfe", "histogram"):
                out.append("hist")
            elif key in ("agg", "aggfe", "aggregate"):
                out.append("agg")
            else:
                raise SettingsError(f"unknown feature extractor {raw.strip()!r}: choose hist, agg or both")
    out = list(dict.fromkeys(out))
    if not out:
        raise SettingsError("no feature extractor chosen")
    return tuple(out)


def _finite(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return v[np.isfinite(v)]


def agg_features(values: Sequence[np.ndarray]) -> np.ndarray:
    """AggFE: one row of ``AGG_NAMES`` per document."""
    X = np.zeros((len(values), len(AGG_NAMES)))
    for r, v in enumerate(values):
        f = _finite(v)
        if f.size == 0:
            X[r] = np.nan
            continue
        X[r, :4] = (f.min(), f.max(), f.mean(), f.std())
        X[r, 4:] = np.percentile(f, PERCENTILES)
    return X


class HistogramFeatures:
    """HistFE with bin edges fitted on training documents only."""

    def __init__(self, n_bins: int = DEFAULT_BINS):
        if int(n_bins) < 1:
            raise SettingsError(f"the number of histogram bins must be at least 1, got {n_bins}")
        self.n_bins = int(n_bins)
        self.edges: np.ndarray | None = None

    def fit(self, values: Sequence[np.ndarray]) -> "HistogramFeatures":
        allv = np.concatenate([_finite(v) for v in values]) if len(values) else np.zeros(0)
        if allv.size == 0:
            raise SettingsError("no token values to fit histogram bins on")
        lo, hi = float(allv.min()), float(allv.max())
        if hi <= lo:
            hi = lo + 1.0
        self.edges = np.histogram_bin_edges(allv, bins=self.n_bins, range=(lo, hi))
        return self

    def transform(self, values: Sequence[np.ndarray]) -> np.ndarray:
        if self.edges is None:
            raise RuntimeError("HistogramFeatures.transform before fit")
        lo, hi = self.edges[0], self.edges[-1]
        X = np.zeros((len(values), self.n_bins))
        for r, v in enumerate(values):
            f = np.clip(_finite(v), lo, hi)
            if f.size == 0:
                continue
            counts, _ = np.histogram(f, bins=self.edges)
            X[r] = counts / f.size
        return X

    @property
    def names(self) -> list[str]:
        return [f"bin_{k}" for k in range(self.n_bins)]
