"""``evaluate``: every figure of one attack (AUC, TPR at FPR with bootstrap CIs, both TPR rules,
set sizes, warnings, the downsampled ROC) as plain JSON-serialisable values."""
from __future__ import annotations

from typing import Iterable

from sklearn.metrics import roc_auc_score, roc_curve

from ..errors import SettingsError
from ..formatting import fpr_label
from .bootstrap import _bootstrap, _percentile_ci
from .curves import _downsample_roc, _tpr_from_curve, tpr_at_fpr_strict, tpr_estimable
from .inputs import FPR_GRID, MAX_ROC_POINTS, MIN_SET_SIZE, _clean, fpr_key


def evaluate(labels, scores, *, n_bootstrap: int = 1000, seed: int = 0, ci: float = 0.95,
             fprs: Iterable[float] = FPR_GRID, keep_roc: bool = True) -> dict:
    """All figures for one attack, as plain JSON-serialisable Python values.

    Returns::

        {"auc": float, "auc_ci": [lo, hi],
         "tpr_at_fpr": {"0.001": float, ...}, "tpr_at_fpr_ci": {"0.001": [lo, hi], ...},
         "tpr_at_fpr_strict": {"0.001": float, ...},   # MIMIR's / LiRA's code's rule
         "n_members": int, "n_nonmembers": int, "n_dropped": int,
         "warnings": [str, ...],
         "roc": {"fpr": [...], "tpr": [...]}}          # only when keep_roc

    * AUC: ``sklearn.metrics.roc_auc_score``; TPR@FPR: :func:`~mia_core.metrics.curves.tpr_at_fpr` (step interpolation).
    * CIs: percentile bootstrap with ``n_bootstrap`` resamples (seeded by ``seed``), members
      and non-members resampled separately (stratified). ``n_bootstrap=0`` gives ``None`` CIs.
    * ``n_members``/``n_nonmembers`` count the scored texts; ``n_dropped`` the NaN scores.
    * Warnings: TPR@f when there are fewer than ``1/f`` non-members (at 0.1 % FPR with fewer
      than 1,000 non-members, at most zero false positives are allowed, so the figure is not
      meaningful), sets smaller than ``MIN_SET_SIZE`` texts, NaN scores dropped.
    * ``roc``: the curve downsampled to about ``MAX_ROC_POINTS`` points (see ``_downsample_roc``).

    Raises ``DataError`` when there are no members or no non-members.
    """
    if not 0.0 < ci < 1.0:
        raise SettingsError(f"the confidence level must be between 0 and 1, got {ci}.")
    if n_bootstrap < 0:
        raise SettingsError(f"the number of bootstrap resamples must be >= 0, got {n_bootstrap}.")
    fprs = tuple(float(f) for f in fprs)
    for f in fprs:
        if not 0.0 < f < 1.0:
            raise SettingsError(f"FPR targets must be between 0 and 1, got {f}.")
    y, s, nan_m, nan_n = _clean(labels, scores)
    pos, neg = s[y == 1], s[y == 0]
    n_pos, n_neg = int(pos.size), int(neg.size)

    fpr, tpr, _ = roc_curve(y, s, pos_label=1, drop_intermediate=False)
    auc = float(roc_auc_score(y, s))
    tprs = {fpr_key(f): _tpr_from_curve(fpr, tpr, f) for f in fprs}

    out: dict = {"auc": auc, "auc_ci": None, "tpr_at_fpr": tprs,
                 "tpr_at_fpr_ci": {fpr_key(f): None for f in fprs},
                 # MIMIR's / LiRA's code's rule (FPR strictly below f): for comparisons with papers' tables
                 "tpr_at_fpr_strict": tpr_at_fpr_strict(y, s, fprs),
                 "n_members": n_pos, "n_nonmembers": n_neg, "n_dropped": nan_m + nan_n,
                 "warnings": []}
    if n_bootstrap > 0:
        boot_auc, boot_tpr = _bootstrap(pos, neg, fprs, int(n_bootstrap), int(seed))
        out["auc_ci"] = _percentile_ci(boot_auc, ci)
        out["tpr_at_fpr_ci"] = {fpr_key(f): _percentile_ci(boot_tpr[:, j], ci) for j, f in enumerate(fprs)}

    warnings = out["warnings"]
    for f in sorted(fprs):
        if not tpr_estimable(f, n_neg):
            warnings.append(f"TPR at {fpr_label(f)} FPR is not estimable with {n_neg:,} non-members (it needs at least "
                            f"{int(round(1.0 / f)):,}): shown as n/e")
    if n_pos < MIN_SET_SIZE:
        warnings.append(f"only {n_pos} member{'s' if n_pos != 1 else ''} scored: with fewer than "
                        f"{MIN_SET_SIZE} texts the figures are very uncertain")
    if n_neg < MIN_SET_SIZE:
        warnings.append(f"only {n_neg} non-member{'s' if n_neg != 1 else ''} scored: with fewer than "
                        f"{MIN_SET_SIZE} texts the figures are very uncertain")
    if nan_m + nan_n:
        warnings.append(f"{nan_m + nan_n} text{'s' if nan_m + nan_n != 1 else ''} could not be scored "
                        f"(NaN, e.g. too short) and {'were' if nan_m + nan_n != 1 else 'was'} left out: "
                        f"{nan_m} member{'s' if nan_m != 1 else ''}, "
                        f"{nan_n} non-member{'s' if nan_n != 1 else ''}")
    if keep_roc:
        f_ds, t_ds = _downsample_roc(fpr, tpr, MAX_ROC_POINTS, fprs)
        out["roc"] = {"fpr": [float(v) for v in f_ds], "tpr": [float(v) for v in t_ds]}
    return out
