"""The features of dataset inference: existing attacks' scores, from the cached passes.

Maini et al. 2024 (§4.1 and ``selected_features.py`` of their code) aggregate many MIA scores:
perplexity, Min-K% probabilities at k = 0.05, 0.1, 0.2, ..., 0.6, Max-K% probabilities, the zlib
ratio, perturbation ratios and reference-model ratios. Here every feature is a registered attack's
score (``mia_core.attacks``), computed by the scoring stage of a run (``mia_core.pipeline``: one pass
per model and text, cached), so no attack is written twice:

* ``loss``, ``zlib``, and ``min_k`` / ``min_k_pp`` at the paper's k grid (:data:`K_GRID`; several k
  of one attack read the same pass);
* ``dc_pdd`` (token frequencies of a corpus; no model pass);
* ``ref`` when a reference model is given, ``recall`` when known non-members other than the
  validation set are given (its prefix; the validation texts cannot be, they are tested);
* on request only (they cost passes): ``lowercase``, ``gradnorm``, ``neighbourhood``.

Not here: the paper's Max-K% probabilities and its text perturbations (no such attack exists in
the project; they are not written for this module alone).

:func:`clean` drops features that are mostly NaN (more than half the texts) or constant, and texts
with a NaN in a kept feature, and says how many.
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError, SettingsError
from ..formatting import counted

K_GRID = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)  # selected_features.py: k_min_probs_0.05 ... _0.6
DEFAULT = ("loss", "zlib", "min_k", "min_k_pp", "dc_pdd")
WITH_REFERENCE = ("ref",)
WITH_POPULATION = ("recall",)
ON_REQUEST = ("lowercase", "gradnorm", "neighbourhood")
FAMILIES = DEFAULT + WITH_REFERENCE + WITH_POPULATION + ON_REQUEST
MAX_NAN = 0.5


def parse_features(spec, *, reference: bool, population: bool) -> list[str]:
    """The attack families to compute: ``"default"`` (:data:`DEFAULT`, plus ``ref`` with a reference
    and ``recall`` with a population), ``"all"`` (every family the inputs allow), or a comma list
    (``default`` may appear in it, e.g. ``default,lowercase``). A family whose input is missing is
    refused in one line when named, left out when implied."""
    items = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else list(spec or ["default"]))
             if str(s).strip()]
    if not items:
        items = ["default"]
    out: list[str] = []
    for it in items:
        if it == "default":
            out += [*DEFAULT, *(WITH_REFERENCE if reference else ()), *(WITH_POPULATION if population else ())]
        elif it == "all":
            out += [*DEFAULT, *(WITH_REFERENCE if reference else ()), *(WITH_POPULATION if population else ()),
                    *ON_REQUEST]
        elif it in FAMILIES:
            if it in WITH_REFERENCE and not reference:
                raise SettingsError(f"feature {it!r} needs a reference model ({{reference}})", options=("reference",))
            if it in WITH_POPULATION and not population:
                raise SettingsError(f"feature {it!r} needs known non-members other than the validation set "
                                    "({population})", options=("population",))
            out.append(it)
        else:
            raise SettingsError(f"unknown feature {it!r}: choose from default, all, {', '.join(FAMILIES)}")
    return list(dict.fromkeys(out))


def feature_label(name: str) -> str:
    """A feature as the rest of the product names the attack it comes from (``mia_core.attacks``' label), with
    its k for the Min-K% grid: ``"min_k_pp@0.6"`` -> ``"Min-K%++ (k = 60 %)"``, ``"loss"`` -> ``"LOSS"``; a name
    that is not a registered attack's is returned as it is.

    Parameters
    ----------
    name : str
        A feature name as :func:`feature_columns` makes it (``attack`` or ``attack@k``).

    Returns
    -------
    str
        Its display name.
    """
    from ..attacks import REGISTRY

    attack, _, k = str(name).partition("@")
    if attack not in REGISTRY:
        return str(name)
    label = REGISTRY[attack].label
    try:
        return f"{label} (k = {float(k) * 100:g} %)" if k else label
    except ValueError:
        return f"{label} ({k})"


def feature_columns(inputs, attacks: list, run_params: dict, scores: dict) -> dict[str, np.ndarray]:
    """``{feature name: values}``: each family's score from the run (``scores``), and for ``min_k`` /
    ``min_k_pp`` the paper's k grid, scored again from the same statistics (``inputs``)."""
    cols: dict[str, np.ndarray] = {}
    for a in attacks:
        if a.name in ("min_k", "min_k_pp"):
            kw = a.kwargs(run_params)
            for k in K_GRID:
                cols[f"{a.name}@{k:g}"] = np.asarray(a.score(inputs, **{**kw, "k": k}), dtype=float)
        else:
            cols[a.name] = np.asarray(scores[a.name], dtype=float)
    return cols


def clean(cols: dict[str, np.ndarray]) -> tuple[list[str], np.ndarray, np.ndarray, list[str]]:
    """Kept feature names, the matrix ``(n texts, kept)``, the mask of texts kept (no NaN in a kept
    feature) and the notes. ``DataError`` when no feature or fewer than 2 texts remain."""
    notes = []
    kept = []
    for name, v in cols.items():
        v = np.asarray(v, dtype=float)
        finite = np.isfinite(v)
        if finite.mean() < 1 - MAX_NAN:
            notes.append(f"feature {feature_label(name)} dropped: no value for {int((~finite).sum())} of {len(v)} "
                         "texts")
        elif np.ptp(v[finite]) == 0:
            notes.append(f"feature {feature_label(name)} dropped: the same value for every text")
        else:
            kept.append(name)
    if not kept:
        raise DataError("no usable feature: every feature is constant or missing for most texts")
    X = np.column_stack([np.asarray(cols[n], dtype=float) for n in kept])
    ok = np.isfinite(X).all(1)
    if (~ok).any():
        notes.append(f"{counted(int((~ok).sum()), 'texts')} excluded: a feature could not be computed for them "
                     "(e.g. too short to score)")
    return kept, X, ok, notes


def family(name: str) -> str:
    """The attack family of a feature: ``"min_k_pp@0.6"`` -> ``"min_k_pp"``."""
    return str(name).split("@")[0]


def by_family(X: np.ndarray, names=None) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Every feature standardised (pooled mean and deviation: reads no label) and averaged within its attack family
    (:func:`family`), so that each attack counts once however many columns it has (Min-K% and Min-K%++ have seven
    each). Returns the ``(units, families)`` matrix, the families, and each feature's weight in the mean over
    families (``1 / (families x its family's columns)``). Without ``names`` each column is its own family."""
    X = np.asarray(X, float)
    names = [str(i) for i in range(X.shape[1])] if names is None else [str(n) for n in names]
    mu, sd = X.mean(0), X.std(0)
    Z = (X - mu) / np.where(sd > 0, sd, 1.0)
    fams = list(dict.fromkeys(family(n) for n in names))
    cols = [[j for j, n in enumerate(names) if family(n) == f] for f in fams]
    w = np.zeros(len(names))
    for js in cols:
        w[js] = 1.0 / (len(fams) * len(js))
    return np.column_stack([Z[:, js].mean(1) for js in cols]), fams, w
