"""Meta-classifier and cross-validation (Meeus et al. 2024, §4.4 and §5.2.4).

* Folds: ``sklearn.model_selection.StratifiedKFold(k, shuffle=True, random_state=seed)``,
  so every fold holds members and non-members in the same proportion (balanced when the
  two sets are equally large, as in the paper's k = 5 chunks).
* For each fold the normalisation dictionaries (``dictionaries``), the histogram bins
  (``features``) and the classifier are fitted on the k-1 training folds only; the
  held-out fold is scored once, which gives an out-of-fold membership probability for
  every document.
* Classifier: ``sklearn.ensemble.RandomForestClassifier(n_estimators=500, max_depth=5,
  min_samples_leaf=3)`` seeded with ``random_state=seed`` (§5.2.4; the authors'
  ``train_RandomForest``). The authors min-max scale the features first; a random forest is
  invariant to that, so it is skipped.
* Figures per fold: AUC (``roc_auc_score``), TPR at 1 % and 10 % FPR (``mia_core.metrics.tpr_at_fpr``,
  conservative step interpolation) and the ROC curve; reported as mean ± standard
  deviation over folds, as in the paper, plus the AUC of the pooled out-of-fold scores.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

from ..errors import SettingsError
from ..metrics import fpr_key, roc, tpr_at_fpr, tpr_estimable

RF_PARAMS = {"n_estimators": 500, "max_depth": 5, "min_samples_leaf": 3}
REPORT_FPRS = (0.01, 0.1)


def make_folds(labels: Sequence[int], k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Stratified k-fold split of documents: ``[(train_idx, test_idx), ...]``."""
    y = np.asarray(labels, dtype=int)
    n_m, n_n = int((y == 1).sum()), int((y == 0).sum())
    if k < 2:
        raise SettingsError(f"cross-validation needs at least 2 folds, got {k}")
    if min(n_m, n_n) < k:
        raise SettingsError(
            f"{k} folds need at least {k} member and {k} non-member documents "
            f"(got {n_m} and {n_n}): add documents or lower {{folds}}", options=("folds",)
        )
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    return [(tr, te) for tr, te in skf.split(np.zeros(len(y)), y)]


def random_forest(seed: int, n_estimators: int | None = None, n_jobs: int | None = None) -> RandomForestClassifier:
    """The meta-classifier: ``RandomForestClassifier`` with :data:`RF_PARAMS` (§5.2.4), seeded with ``seed``;
    ``n_estimators`` overrides the number of trees, ``n_jobs`` is passed to scikit-learn.
    """
    params = dict(RF_PARAMS)
    if n_estimators is not None:
        params["n_estimators"] = int(n_estimators)
    return RandomForestClassifier(**params, random_state=seed, n_jobs=n_jobs)


def fold_figures(y: np.ndarray, scores: np.ndarray) -> dict:
    """AUC, TPR at 1 %/10 % FPR and the ROC curve of one held-out fold."""
    y = np.asarray(y, dtype=int)
    s = np.asarray(scores, dtype=float)
    ok = ~np.isnan(s)
    y, s = y[ok], s[ok]
    if len(np.unique(y)) < 2:
        return {"auc": float("nan"), "tpr_at_fpr": {fpr_key(f): float("nan") for f in REPORT_FPRS},
                "roc": {"fpr": [], "tpr": []}, "n": int(len(y)), "n_nonmembers": int((y == 0).sum())}
    fpr, tpr, _ = roc(y, s)
    return {
        "auc": float(roc_auc_score(y, s)),
        "tpr_at_fpr": tpr_at_fpr(y, s, REPORT_FPRS),
        "roc": {"fpr": [float(v) for v in fpr], "tpr": [float(v) for v in tpr]},
        "n": int(len(y)),
        "n_nonmembers": int((y == 0).sum()),
    }


def summarize_folds(per_fold: list[dict], labels=None, oof=None) -> dict:
    """Mean and standard deviation over folds (plus the pooled out-of-fold AUC when given).

    ``tpr_estimable[k]`` is False when some fold has fewer held-out non-members than TPR at that
    FPR needs (``mia_core.metrics.tpr_estimable``): the mean is then kept for the files but shown
    as ``n/e``."""
    aucs = np.array([f["auc"] for f in per_fold], dtype=float)
    out = {
        "auc_mean": float(np.nanmean(aucs)) if np.isfinite(aucs).any() else float("nan"),
        "auc_std": float(np.nanstd(aucs)) if np.isfinite(aucs).any() else float("nan"),
        "tpr_at_fpr_mean": {},
        "tpr_at_fpr_std": {},
        "tpr_estimable": {},
        "folds": per_fold,
    }
    for f in REPORT_FPRS:
        k = fpr_key(f)
        v = np.array([p["tpr_at_fpr"][k] for p in per_fold], dtype=float)
        out["tpr_at_fpr_mean"][k] = float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
        out["tpr_at_fpr_std"][k] = float(np.nanstd(v)) if np.isfinite(v).any() else float("nan")
        out["tpr_estimable"][k] = all(tpr_estimable(f, p.get("n_nonmembers")) for p in per_fold)
    if labels is not None and oof is not None:
        y = np.asarray(labels, dtype=int)
        s = np.asarray(oof, dtype=float)
        ok = ~np.isnan(s)
        out["pooled_auc"] = float(roc_auc_score(y[ok], s[ok])) if len(np.unique(y[ok])) == 2 else float("nan")
    return out


def fold_warnings(per_fold_test_sizes: list[tuple[int, int]]) -> list[str]:
    """Warnings on how much a fold's figures can say (mirrors ``mia_core.metrics.evaluate``)."""
    out = []
    n_neg = min(n for _, n in per_fold_test_sizes) if per_fold_test_sizes else 0
    short = [f for f in REPORT_FPRS if n_neg < int(round(1 / f))]
    if short:  # one line for all of them (the tables show those TPRs as n/e)
        needs = ", ".join(f"{int(round(1 / f))} for {f * 100:g}%" for f in short)
        out.append(f"TPR at {' and '.join(f'{f * 100:g}%' for f in short)} FPR is not estimable here, shown as n/e: "
                   f"each fold holds out as few as {n_neg} non-members, and a TPR at FPR f needs at least 1/f of "
                   f"them ({needs}).")
    n_pos = min(p for p, _ in per_fold_test_sizes) if per_fold_test_sizes else 0
    if n_pos < 5 or n_neg < 5:
        out.append(
            f"each held-out fold has as few as {n_pos} members and {n_neg} non-members: per-fold AUCs move in "
            "coarse steps; read the mean ± std with that in mind"
        )
    return out
