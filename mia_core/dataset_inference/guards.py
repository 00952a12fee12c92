"""What a dataset-inference p-value rests on, checked (Maini et al. 2024, §3 and §6: the suspect
and validation sets must be drawn from one distribution; with a shifted validation set any test
"detects" membership).

Before any model loads (:func:`check_sets`): enough texts in each set (:data:`MIN_TEXTS`), no text
in both sets, exactly or nearly (the same words once case, punctuation and spacing are ignored;
or a text whose word 5-grams mostly appear in a text of the other set), and a note when the
length distributions differ (a two-sample Kolmogorov-Smirnov test on word counts).

The IID guard (:func:`iid_guard`): the model-free blind baseline (``mia_core.shift``) between the
suspect and validation texts. When the lower end of its AUC's 95 % bootstrap CI exceeds
:data:`GUARD_CI_LOW` (0.55), the sets can be told apart without the model and no p-value computed
from them can mean membership: the verdict is refused. Between 0.5 and 0.55 the verdict stands with
a warning. Why not 0.5: the bootstrap CI of an out-of-fold AUC ignores the cross-validation's own
variance, so on exchangeable sets it excludes 0.5 too often: over 80 random halves of the demo's
200 unseen texts the lower end exceeded 0.5 in 14 % of the splits and 0.55 in none (largest 0.538);
a shift like WikiMIA's gives a blind AUC far above that.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict

import numpy as np

from ..errors import DataError

MIN_TEXTS = 10
SHINGLE = 5  # words per shingle for near-duplicates
NEAR_SHARE = 0.8  # share of the shorter text's shingles found in the other text
LENGTH_KS_P = 0.01
GUARD_CI_LOW = 0.55  # refuse above (see the module docstring)
CAUTION_CI_LOW = 0.5


def _norm(t: str) -> str:
    return " ".join(re.sub(r"[\W_]+", " ", t.casefold()).split())


def _shingles(t: str) -> set:
    w = _norm(t).split()
    return {" ".join(w[i:i + SHINGLE]) for i in range(len(w) - SHINGLE + 1)}


def near_duplicates(suspect: list[str], validation: list[str]) -> list[tuple[int, int]]:
    """Pairs ``(i, j)``: suspect text i and validation text j are the same once normalised, or most
    (:data:`NEAR_SHARE`) of the shorter one's word 5-grams occur in the other."""
    pairs = set()
    by_norm = defaultdict(list)
    for j, t in enumerate(validation):
        by_norm[_norm(t)].append(j)
    for i, t in enumerate(suspect):
        for j in by_norm.get(_norm(t), ()):
            pairs.add((i, j))
    index = defaultdict(list)
    vsh = [_shingles(t) for t in validation]
    for j, sh in enumerate(vsh):
        for s in sh:
            index[s].append(j)
    for i, t in enumerate(suspect):
        sh = _shingles(t)
        if not sh:
            continue
        hits = Counter(j for s in sh for j in index.get(s, ()))
        for j, c in hits.items():
            if c >= NEAR_SHARE * min(len(sh), len(vsh[j])):
                pairs.add((i, j))
    return sorted(pairs)


def check_sets(suspect: list[str], validation: list[str]) -> list[str]:
    """Sizes and overlap (``DataError``, one line), then the notes (length distributions)."""
    for name, s in (("suspect", suspect), ("validation", validation)):
        if len(s) < MIN_TEXTS:
            raise DataError(f"the {name} set has {len(s)} text(s); dataset inference needs at least {MIN_TEXTS} "
                            "in each set (and gains power with hundreds)")
    exact = set(suspect) & set(validation)
    if exact:
        raise DataError(f"{len(exact)} text(s) appear in both the suspect and the validation set; the validation "
                        "set must hold texts known not to be trained on")
    near = near_duplicates(suspect, validation)
    if near:
        i, j = near[0]
        raise DataError(f"{len(near)} suspect/validation pair(s) are near-duplicates (e.g. suspect text {i + 1} and "
                        f"validation text {j + 1}); remove them: the test needs disjoint sets")
    from scipy.stats import ks_2samp

    ls = np.array([len(t.split()) for t in suspect])
    lv = np.array([len(t.split()) for t in validation])
    notes = []
    p = float(ks_2samp(ls, lv).pvalue)
    if p < LENGTH_KS_P:
        notes.append(f"the two sets' lengths differ (median {np.median(ls):.0f} vs {np.median(lv):.0f} words, "
                     f"Kolmogorov-Smirnov p = {p:.1e}): length alone can separate them; the IID guard checks this")
    return notes


def iid_guard(suspect: list[str], validation: list[str], *, seed: int = 0, n_bootstrap: int = 1000) -> dict:
    """The blind baseline between the two sets: ``{"ok", "blind_auc", "blind_auc_ci", "message"}``."""
    from ..shift import blind_baseline

    b = blind_baseline(suspect, validation, seed=seed, n_bootstrap=n_bootstrap)
    auc = b.get("auc")
    ci = b.get("auc_ci") or [None, None]
    lo = ci[0] if ci[0] is not None else auc
    ok = auc is not None and lo is not None and lo <= GUARD_CI_LOW
    caution = ok and lo > CAUTION_CI_LOW
    txt = f"AUC {auc:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci[0] is not None else "") if auc is not None else "no AUC"
    if not ok:
        msg = (f"the blind baseline tells the suspect set from the validation set without the model ({txt}): the "
               "sets are not drawn from one distribution, so a p-value here would measure that shift, not training. "
               "Refused: draw the validation set from the same source as the suspect set (e.g. a random split of "
               "one collection before its release)")
    elif caution:
        msg = (f"the blind baseline separates the sets slightly without the model ({txt}): a mild shift cannot be "
               f"ruled out (refused above {GUARD_CI_LOW} for the CI's lower end); read a small p-value with care")
    else:
        msg = (f"the blind baseline (a text classifier that never queries the model) cannot tell the suspect set "
               f"from the validation set ({txt}): no sign of a distribution shift")
    return {"ok": bool(ok), "caution": bool(caution), "blind_auc": auc, "blind_auc_ci": list(ci), "message": msg}
