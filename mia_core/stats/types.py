"""The per-token statistics of one text under one model (:class:`TokenStats`) and its array names.

For every token of a text the pass keeps

* ``logprob``      log p(x_t | x_<t) of the true token,
* ``max_logprob``  max over the vocabulary of log p(. | x_<t) (Meeus et al. §4.1, MaxNorm),
* ``mu``, ``sigma``  mean and standard deviation of log p(z | x_<t) for z ~ p(. | x_<t)
  (the expectation under the model's own distribution, as Min-K%++ defines them:
  Zhang et al. 2024, eq. 2; SMIA paper App. A),
* ``entropy``      -Σ_z p log p (equal to -mu),
* ``rank``         1 + number of vocabulary tokens more likely than the true token,
* ``top_id``       the most likely token (for the dashboard's hover),

and, on request, the sum over positions of the full predicted distribution
(``vocab_prob_sum``; Meeus et al. §4.2.1's general-probability dictionary R^GP is
accumulated from it without storing any full-vocabulary array per token). A token without a
prediction (the first one, when nothing is put in front of the text) has NaN / -1.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FIELDS = ("logprob", "max_logprob", "mu", "sigma", "entropy")  # float32 per token, NaN without a prediction
INT_FIELDS = ("rank", "top_id")  # int32 per token, -1 without a prediction
ALL_FIELDS = (*FIELDS, *INT_FIELDS)


@dataclass
class TokenStats:
    """Per-token statistics of one text under one model (arrays of length n_tokens)."""

    token_ids: np.ndarray
    logprob: np.ndarray
    max_logprob: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    entropy: np.ndarray
    rank: np.ndarray
    top_id: np.ndarray
    n_bytes: int
    vocab_prob_sum: np.ndarray | None = None
    extra: dict = field(default_factory=dict)

    @property
    def n_tokens(self) -> int:
        """Tokens of the text (predicted or not)."""
        return int(self.token_ids.shape[0])

    @property
    def valid(self) -> np.ndarray:
        """Mask of tokens that received a prediction (all of them when a prefix token is used)."""
        return ~np.isnan(self.logprob)

    @property
    def n_predicted(self) -> int:
        """Tokens that received a prediction (:attr:`valid`)."""
        return int(self.valid.sum())

    @property
    def nll_sum(self) -> float:
        """Total negative log-likelihood of the predicted tokens (nats)."""
        return float(-np.nansum(self.logprob.astype(np.float64)))

    @property
    def loss(self) -> float:
        """Mean negative log-likelihood per predicted token (NaN if nothing was predicted)."""
        n = self.n_predicted
        return self.nll_sum / n if n else float("nan")

    @property
    def nll_per_byte(self) -> float:
        """Total NLL per UTF-8 byte of the text (NaN without bytes or predictions); comparable across tokenizers."""
        return self.nll_sum / self.n_bytes if self.n_bytes and self.n_predicted else float("nan")

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The statistics as named arrays (for the cache and for Ray workers); :meth:`from_arrays` reads them back."""
        d = {f: getattr(self, f) for f in ("token_ids", *ALL_FIELDS)}
        d["n_bytes"] = np.array(self.n_bytes)
        if self.vocab_prob_sum is not None:
            d["vocab_prob_sum"] = self.vocab_prob_sum
        return d

    @classmethod
    def from_arrays(cls, d: dict[str, np.ndarray]) -> "TokenStats":
        """The statistics :meth:`to_arrays` wrote."""
        return cls(
            token_ids=d["token_ids"],
            **{f: d[f] for f in ALL_FIELDS},
            n_bytes=int(d["n_bytes"]),
            vocab_prob_sum=d.get("vocab_prob_sum"),
        )

    def slice(self, start: int, stop: int) -> "TokenStats":
        """Statistics of tokens [start, stop) (used for partial documents and excerpts)."""
        s = slice(start, stop)
        return TokenStats(
            token_ids=self.token_ids[s],
            **{f: getattr(self, f)[s] for f in ALL_FIELDS},
            n_bytes=self.n_bytes * max(0, stop - start) // max(1, self.n_tokens),
        )
