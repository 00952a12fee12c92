"""Where one text's score falls on a calibration run (the "Inspect a text" page).

A calibration run holds sequence-level attack scores of known members and non-members. For a
new text's score ``s`` under one attack:

* :func:`percentile`     the share of a set's scores below ``s`` (ties count half);
* :func:`incomparable`   why the run's scores of an attack cannot be compared with the text's
  (the attack is not in the run, or the reference-model attack used another reference model);
* :func:`run_groups`     the run's finite member and non-member scores of one attack;
* :func:`place_score`    percentiles among members and non-members, and the decision
  "member iff s >= t" at the thresholds ``t`` that flag a fraction of the run's non-members
  (``mia_core.metrics.population_threshold``, Mireshghallah et al. 2022 §2.4, with the run's
  non-members as the population).

Plain numpy / pandas (no Streamlit); the dashboard formats the numbers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import population_threshold

DECISION_FPRS = (0.01, 0.05)


def percentile(arr: np.ndarray, v: float) -> float:
    """Share of ``arr`` below ``v`` (ties count half)."""
    return float(np.mean(arr < v) + 0.5 * np.mean(arr == v)) if arr.size else float("nan")


def incomparable(scores, attack: str, *, run_reference: str | None, reference: str | None) -> str | None:
    """None when the run's ``scores`` table can place a text's ``attack`` score, else why not.

    ``run_reference`` / ``reference``: identities of the run's and the text's reference models
    (the ``ref`` attack's scores compare only under the same reference model).
    """
    if attack not in scores.columns:
        return "not in this run"
    if attack == "ref" and run_reference != reference:
        return "other reference model"
    return None


def run_groups(scores, attack: str) -> tuple[np.ndarray, np.ndarray]:
    """The finite scores of ``attack`` of the run's members (``label`` 1) and non-members (0)."""
    mem = scores.loc[scores["label"] == 1, attack].to_numpy(dtype=float)
    non = scores.loc[scores["label"] == 0, attack].to_numpy(dtype=float)
    return mem[np.isfinite(mem)], non[np.isfinite(non)]


@dataclass
class Placement:
    """One score placed on a run's members and non-members of one attack."""

    value: float
    members: np.ndarray
    nonmembers: np.ndarray
    thresholds: dict[float, float]  # FPR on the run's non-members -> score threshold
    above_nonmembers: float  # percentile among the non-members
    above_members: float  # percentile among the members

    def is_member(self, fpr: float) -> bool:
        """The decision at the threshold that flags ``fpr`` of the non-members (member iff score >= t)."""
        return self.value >= self.thresholds[fpr]

    def flagged_nonmembers(self, fpr: float) -> int:
        """How many of the run's non-members the ``fpr`` threshold flags: what the decision rests on."""
        return int(np.sum(self.nonmembers >= self.thresholds[fpr]))

    def decision(self, fpr: float) -> str:
        """'yes' / 'no', 'n/e' when the run has fewer than 1/fpr non-members (the threshold is then
        not at ``fpr``), and the count of flagged non-members when it is under 5."""
        from . import NOT_ESTIMABLE, tpr_estimable

        if not tpr_estimable(fpr, self.nonmembers.size):
            return NOT_ESTIMABLE
        k = self.flagged_nonmembers(fpr)
        word = "yes" if self.is_member(fpr) else "no"
        return f"{word} (rests on {k} non-member{'s' if k != 1 else ''})" if k < 5 else word


def place_score(value: float, members: np.ndarray, nonmembers: np.ndarray,
                fprs=DECISION_FPRS) -> Placement | None:
    """Place ``value`` on finite member / non-member scores; None when a set is empty or the value is not finite."""
    if not (members.size and nonmembers.size and np.isfinite(value)):
        return None
    thr = {f: population_threshold(nonmembers, f) for f in fprs}
    return Placement(value=value, members=members, nonmembers=nonmembers, thresholds=thr,
                     above_nonmembers=percentile(nonmembers, value), above_members=percentile(members, value))
