"""What a dataset-inference p-value rests on, checked (Maini et al. 2024, §3 and §6: the suspect
and validation sets must be drawn from one distribution; with a shifted validation set any test
"detects" membership).

Before any model loads (:func:`check_sets`): enough texts in each set (:data:`MIN_TEXTS`), no text
in both sets, exactly or nearly (compared after Unicode NFKC normalisation, so a text in composed and
decomposed form is one text; the same words once case, punctuation and spacing are ignored; or a
text whose word 5-grams mostly appear in a text of the other set), and a note when the length
distributions differ (a two-sample Kolmogorov-Smirnov test on word counts).

**The IID guard** (:func:`iid_guard`) asks whether a classifier that never queries the model tells
the suspect texts from the validation texts better than chance, with a p-value that holds its level.
The classifier: TF-IDF word 1-2-grams and character 2-5-grams (as the blind baseline of
``mia_core.metrics.blind_baseline``), fitted on all texts *without labels*, and a least-squares (kernel ridge)
classifier cross-fitted over ``k`` label-free folds; its out-of-fold AUC is the statistic. The fit is
linear in the labels, so ``B`` label permutations are one matrix product per fold, and the
permutation p-value ``(1 + #{AUC_b >= AUC}) / (1 + B)`` is exact when the sets are exchangeable. The
verdict is **refused** when that p-value is at most :data:`GUARD_ALPHA` (0.05): a false refusal on
truly IID sets happens at most 5 % of the time, whatever their sizes. Between 0.05 and
:data:`CAUTION_P` the verdict stands with a caution. The guard's **power** is said with its result:
the null AUCs' 95th percentile is the smallest blind AUC it refuses at these sizes, and a shift of
about that plus 0.84 null standard deviations is refused four times in five (the normal
approximation); a smaller shift can pass, and then the p-value's exchangeability assumption rests
on how the sets were drawn. (The earlier guard refused when a bootstrap CI's lower end exceeded 0.55;
that CI ignored the cross-validation's own variance and excluded 0.5 in 10-13 % of IID splits.)

**Cost bound**: the guard reads at most :data:`GUARD_MAX_CHARS` characters of a text and at most
:data:`GUARD_MAX_TEXTS` texts of each set (a random subset, seeded; a random subset of an exchangeable
set is still exchangeable), and says so; its kernel is then at most 2,000 x 2,000.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict

import numpy as np

from ..errors import DataError
from ..formatting import counted

MIN_TEXTS = 10
SHINGLE = 5  # words per shingle for near-duplicates
NEAR_SHARE = 0.8  # share of the shorter text's shingles found in the other text
LENGTH_KS_P = 0.01
GUARD_ALPHA = 0.05  # refuse when the blind AUC's permutation p-value is at most this
CAUTION_P = 0.20  # caution between GUARD_ALPHA and this
GUARD_PERMUTATIONS = 999
GUARD_FOLDS = 5
GUARD_RIDGE = 1.0  # kernel ridge penalty (the kernel's diagonal is 2: two L2-normalised TF-IDF blocks)
GUARD_MAX_CHARS = 20_000
GUARD_MAX_TEXTS = 1_000
NEAR_MAX_WORDS = 20_000  # near-duplicate shingles read at most this many words of a text


def nfkc(t: str) -> str:
    """The text in Unicode NFKC form (composed, compatibility characters folded): how overlap is compared."""
    return unicodedata.normalize("NFKC", t)


def _norm(t: str) -> str:
    return " ".join(re.sub(r"[\W_]+", " ", nfkc(t).casefold()).split())


def _shingles(t: str) -> set:
    w = _norm(t).split()[:NEAR_MAX_WORDS]
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
            raise DataError(f"the {name} set has {counted(len(s), 'texts')}; dataset inference needs at least {MIN_TEXTS} "
                            "in each set (and gains power with hundreds)")
    exact = {nfkc(t) for t in suspect} & {nfkc(t) for t in validation}
    if exact:
        raise DataError(f"{counted(len(exact), 'texts')} {'appears' if len(exact) == 1 else 'appear'} in both the "
                        "suspect and the validation set; the validation "
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


def _guard_sets(suspect: list[str], validation: list[str], seed: int) -> tuple[list[str], list[str], list[str]]:
    """Each set cut to :data:`GUARD_MAX_TEXTS` random texts and each text to :data:`GUARD_MAX_CHARS`
    characters; the notes say what was cut."""
    notes, rng, out = [], np.random.default_rng([seed, 7]), []
    for name, texts in (("suspect", suspect), ("validation", validation)):
        if len(texts) > GUARD_MAX_TEXTS:
            keep = np.sort(rng.choice(len(texts), GUARD_MAX_TEXTS, replace=False))
            texts = [texts[i] for i in keep]
            notes.append(f"the IID guard read a random {GUARD_MAX_TEXTS:,} of the {name} texts (its cost bound)")
        out.append(texts)
    long = sum(len(t) > GUARD_MAX_CHARS for t in [*out[0], *out[1]])
    if long:
        notes.append(f"the IID guard read the first {GUARD_MAX_CHARS:,} characters of {long} long text(s)")
    return [t[:GUARD_MAX_CHARS] for t in out[0]], [t[:GUARD_MAX_CHARS] for t in out[1]], notes


def _kernel(texts: list[str]) -> np.ndarray:
    """The label-free TF-IDF kernel (word 1-2-grams + char_wb 2-5-grams, as ``mia_core.metrics.blind_baseline``)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    K = np.zeros((len(texts), len(texts)))
    for vec in (TfidfVectorizer(analyzer="word", ngram_range=(1, 2), sublinear_tf=True, token_pattern=r"(?u)\b\w+\b"),
                TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True)):
        try:
            M = vec.fit_transform(texts)
        except ValueError:  # e.g. no word at all: this block adds nothing
            continue
        K += (M @ M.T).toarray()
    return K


def _auc(S: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """The AUC of every column of scores ``S`` for the labels in the same column of ``Y`` (ties: half)."""
    from scipy.stats import rankdata

    R = rankdata(S, axis=0)
    n1 = Y.sum(0)
    n0 = len(Y) - n1
    return ((R * Y).sum(0) - n1 * (n1 + 1) / 2) / (n1 * n0)


def blind_permutation_test(suspect: list[str], validation: list[str], *, seed: int = 0,
                           n_permutations: int = GUARD_PERMUTATIONS, folds: int = GUARD_FOLDS) -> dict:
    """The out-of-fold AUC of the label-free kernel classifier (module docstring) and its permutation
    p-value: ``{"auc", "p_value", "null_q95", "null_sd", "detectable_auc", "n_permutations", "folds"}``."""
    n1, n = len(suspect), len(suspect) + len(validation)
    K = _kernel([*suspect, *validation])
    y = np.r_[np.ones(n1), np.zeros(n - n1)]
    rng = np.random.default_rng([seed, 5])
    Y = np.zeros((n, n_permutations + 1))
    Y[:, 0] = y
    np.put_along_axis(Y[:, 1:], rng.random((n, n_permutations)).argsort(0)[:n1], 1.0, axis=0)
    k = int(min(folds, n1, n - n1))
    f = np.random.default_rng([seed, 6]).permutation(np.arange(n) % k)
    S = np.empty_like(Y)
    for j in range(k):
        te, tr = f == j, f != j
        Ytr = Y[tr] - Y[tr].mean(0)
        alpha = np.linalg.solve(K[np.ix_(tr, tr)] + GUARD_RIDGE * np.eye(int(tr.sum())), Ytr)
        S[te] = K[np.ix_(te, tr)] @ alpha
    A = _auc(S, Y)
    null = A[1:]
    q95, sd = float(np.quantile(null, 0.95)), float(null.std())
    return {"auc": float(A[0]), "p_value": float((1 + (null >= A[0] - 1e-12).sum()) / (1 + n_permutations)),
            "null_q95": q95, "null_sd": sd, "detectable_auc": min(1.0, q95 + 0.84 * sd),
            "n_permutations": int(n_permutations), "folds": k}


def length_check(suspect: list[str], validation: list[str], *, seed: int = 0,
                 n_permutations: int = GUARD_PERMUTATIONS) -> dict:
    """Do the two sets differ in length? The AUC of the word count for telling the suspect texts from the
    validation texts (0.5: no difference; ties count half) and its two-sided permutation p-value (exact under
    exchangeability): ``{"auc", "p_value", "median_suspect", "median_validation", "message"}``. The blind
    baseline's TF-IDF vectors are normalised to unit length, so it barely sees length; this is the check that
    does."""
    ls = np.array([len(t.split()) for t in suspect], float)
    lv = np.array([len(t.split()) for t in validation], float)
    n1, n = len(ls), len(ls) + len(lv)
    rng = np.random.default_rng([seed, 8])
    Y = np.zeros((n, n_permutations + 1))
    Y[:n1, 0] = 1.0
    np.put_along_axis(Y[:, 1:], rng.random((n, n_permutations)).argsort(0)[:n1], 1.0, axis=0)
    A = _auc(np.repeat(np.r_[ls, lv][:, None], n_permutations + 1, axis=1), Y)
    dev = np.abs(A - 0.5)
    p = float((1 + (dev[1:] >= dev[0] - 1e-12).sum()) / (1 + n_permutations))
    ms, mv = float(np.median(ls)), float(np.median(lv))
    msg = (f"text length: median {ms:.0f} words in the suspect set, {mv:.0f} in the validation set (AUC of the word "
           f"count {A[0]:.3f}, permutation p = {p:.3g})")
    return {"auc": float(A[0]), "p_value": p, "median_suspect": ms, "median_validation": mv, "message": msg}


def iid_guard(suspect: list[str], validation: list[str], *, seed: int = 0,
              n_permutations: int = GUARD_PERMUTATIONS) -> dict:
    """The blind permutation test between the two sets (module docstring): ``{"ok", "caution",
    "blind_auc", "blind_p_value", "detectable_auc", "message", "notes"}``."""
    s, v, notes = _guard_sets(list(suspect), list(validation), seed)
    b = blind_permutation_test(s, v, seed=seed, n_permutations=n_permutations)
    auc, p = b["auc"], b["p_value"]
    ok, caution = p > GUARD_ALPHA, GUARD_ALPHA < p <= CAUTION_P
    txt = f"AUC {auc:.3f}, permutation p = {p:.3g}"
    power = (f"at these sizes the guard refuses a blind AUC above about {b['null_q95']:.2f}, and one of "
             f"{b['detectable_auc']:.2f} four times in five; a smaller shift can pass")
    if not ok:
        msg = (f"the blind baseline tells the suspect set from the validation set without the model ({txt} <= "
               f"{GUARD_ALPHA}): the sets are not drawn from one distribution, so a p-value here would measure that "
               "shift, not training. Refused: draw the validation set from the same source as the suspect set (e.g. "
               "a random split of one collection before its release)")
    elif caution:
        msg = (f"the blind baseline separates the sets slightly without the model ({txt}): a mild shift cannot be "
               f"ruled out (refused at p <= {GUARD_ALPHA}); read a small p-value with care; {power}")
    else:
        msg = (f"the blind baseline (a text classifier that never queries the model) does not tell the suspect "
               f"set from the validation set ({txt}): no sign of a distribution shift; {power}")
    return {"ok": bool(ok), "caution": bool(caution), "blind_auc": auc, "blind_p_value": p,
            "detectable_auc": b["detectable_auc"], "null_q95": b["null_q95"], "message": msg, "notes": notes}
