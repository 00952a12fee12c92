"""Evaluation metrics for membership-inference attacks.

Conventions used everywhere in ``mia_core``:

* ``labels``: 1 = member (the text was in the training data), 0 = non-member.
* ``scores``: higher = more likely member. ``NaN`` means "could not be scored" (e.g. a text
  too short for the attack); such texts are left out of that attack's figures and counted
  in a warning. ``+inf``/``-inf`` are legitimate extreme scores: they are mapped to just
  above/below the finite range, which keeps the ranking (and so every metric) unchanged.

What is reported (following Carlini et al. 2022, "Membership Inference Attacks From First
Principles", §III-B/§IV, who argue that the true-positive rate at a *low* false-positive rate
matters more than the AUC or the accuracy), with the module that holds each:

* ``curves``: ROC curve and AUC (scikit-learn ``roc_curve`` / ``roc_auc_score``); TPR at fixed FPRs
  (``FPR_GRID``: 0.1 %, 1 %, 2 %, 5 %, 10 %), read off the ROC curve with the conservative step
  interpolation (FPR <= f, :func:`tpr_at_fpr`), and beside it the rule of MIMIR's and LiRA's code
  (FPR < f, :func:`tpr_at_fpr_strict`), which differs from it.
* ``bootstrap``: percentile bootstrap confidence intervals, resampling members and non-members
  separately (stratified), so every resample has the original class sizes; :func:`delta_ci`.
* ``evaluation``: :func:`evaluate`, every figure of one attack with its warnings.
* ``decisions``: threshold decisions calibrated on a population of known non-members (Mireshghallah
  et al. 2022, "Quantifying Privacy Risks of Masked Language Models Using Membership Inference
  Attacks", §2.4) and group-level ("patient-level", §4.2) aggregation of scores.
* ``table``: the one metrics table (:func:`metrics_rows`) and its renderings for the command line
  (:func:`summarize_table`) and for the report and the pages (:func:`metrics_frame`).
* ``inputs``: validation of labels and scores, :func:`fpr_key`, the shared constants.

Numbers become text in ``mia_core.formatting`` (re-exported here: :func:`finite`, ``NOT_ESTIMABLE``).
"""
from ..formatting import NOT_ESTIMABLE, finite
from .bootstrap import _bootstrap_stats, delta_ci  # noqa: F401 - _bootstrap_stats: tests check it
from .curves import _tpr_from_curve, roc, tpr_at_fpr, tpr_at_fpr_strict, tpr_estimable  # noqa: F401 - the same
from .decisions import decision_cis, decisions_at, group_scores, population_threshold, wilson_ci
from .evaluation import evaluate
from .inputs import FPR_GRID, MAX_ROC_POINTS, MIN_SET_SIZE, fpr_key
from .table import merge_warnings, metrics_frame, metrics_rows, shown_fprs, summarize_table, table_attacks

__all__ = ["FPR_GRID", "MAX_ROC_POINTS", "MIN_SET_SIZE", "NOT_ESTIMABLE", "decision_cis", "decisions_at", "delta_ci",
           "evaluate", "finite", "fpr_key", "group_scores", "merge_warnings", "metrics_frame", "metrics_rows",
           "population_threshold", "roc", "shown_fprs", "summarize_table", "table_attacks", "tpr_at_fpr",
           "tpr_at_fpr_strict", "tpr_estimable", "wilson_ci"]
