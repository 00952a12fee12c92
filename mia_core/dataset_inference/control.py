"""What a model that never saw the texts also sees is not evidence of training: the negative control and the length
adjustment of dataset inference (issue 51).

The suspect and validation sets a person assembles are never drawn from one distribution. Membership features
respond to how long a text is, its style and its topic, in any model: the demo's 200 never-trained texts split at
their median length gave "used" at p <= 1e-4 on the demo target *and on its untuned base*, and the IID guard (a
length-blind text classifier) let the split through. Two answers, each a label-free function of the data, so the
permutation test stays exact when the sets are exchangeable (Phipson & Smyth 2010: any statistic computed from the
pooled data without the labels keeps its exchangeability):

* **Length adjustment** (:func:`length_adjust`, on unless ``adjust_length=False``): every feature is replaced by
  its residual from one pooled least-squares fit on the text's length counted three ways (tokens, words,
  characters: :func:`text_lengths`; ``z`` and ``z**2`` of each standardised log, and an intercept), fitted on both
  sets together without their labels. A difference the sets' lengths and their words' lengths explain (to second
  order) is taken out of every feature; what is left is compared.
* **The negative control** (:func:`control_spec`, ``control="auto"``): a model that never saw either set, whose
  passes give every feature it can compute from one pass of token statistics (LOSS, zlib, Min-K%, Min-K%++,
  DC-PDD: :data:`CALIBRATED`). The test then reads each feature *calibrated* per text, target minus control (for
  LOSS this is the reference attack's log-likelihood difference, Mattern et al. 2023 §3.2; Watson et al. 2022 on
  difficulty calibration), so that what both models see cancels and what is left is what the target sees beyond
  the control, and, when the two share a tokenizer, WBC (:data:`PAIRED`: the window-by-window comparison of the
  target with the control, Chen et al. 2026; issue 52: with it, 8 of 10 draws of 25 + 25 texts below p = 1e-3 on a
  weak fine-tune where the calibrated features alone gave 5, and no never-trained split of the demo below 0.09); and the same test runs on the control's own features (:func:`control_check`): when the control
  alone tells the sets apart (p at most :data:`CONTROL_REFUSE`), the verdict is refused, since a difference a
  model that never saw either set detects is not evidence of training (Maini et al. 2024 §4 and §6 on IID sets;
  Das, Zhang & Tramèr 2024 on blind baselines; Zhang et al. 2024, "Membership inference attacks cannot prove that
  a model was trained on your data"). Between :data:`CONTROL_REFUSE` and :data:`CONTROL_CAUTION` the verdict
  stands with a caution.

  Which model: the reference model when one is given; else a ``make-target`` folder's (or a LoRA adapter's) base,
  which is the target before it saw anything; else the embedded SmolLM2-135M. None when the target *is* that
  model (it cannot control for itself), or ``control="none"``; the result says so.

  **The assumption**, stated with every verdict that uses a control (:data:`ASSUMPTION`): the control responds to
  the sets' length, style and topic as the target would. It holds best for a fine-tune against its own base, less
  for an unrelated model; where it fails, the control check and the IID guard are what catch a shift.

Measured on the demo (its 200 never-trained texts split at the median of a property, each half in turn the
suspect set; 999 permutations; the numbers are in ``docs/dataset-inference.md``): the target's raw features said
"used" at p <= 0.01 on a word-length split (p = 0.001) and at 0.047 on the length split, and the base alone, as
the target, said the same; calibrated against the base *and* length-adjusted, no split went below p = 0.049.
Calibration without the length adjustment was not enough (p = 0.001 on the shorter half), nor the length
adjustment without the control (p = 0.001 on the word-length split).
"""
from __future__ import annotations

import numpy as np

CONTROLS = ("auto", "none")  # the two words; any other value names a model (check_control)
CONTROL_WHAT = "auto, none, or a model (a hub id, a folder, a make-target folder, a .gguf file or smollm2)"
CONTROL_REFUSE = 0.01  # the control separates the sets at least this clearly: refused
CONTROL_CAUTION = 0.05  # between CONTROL_REFUSE and this: the verdict stands with a caution
CONTROL_PERMUTATIONS = 999
# the feature families computed from one pass of token statistics (and, for DC-PDD, the target tokenizer's corpus
# frequencies): the control's pass gives each of them again, so each is calibrated per text. Other families (ReCaLL,
# lowercase, GradNorm, neighbourhood) need passes of their own and are left out when a control is used.
CALIBRATED = ("loss", "zlib", "min_k", "min_k_pp", "dc_pdd")
# features that compare the target with the control themselves (the control's pass is the run's reference pass):
# WBC (Chen et al. 2026), the share of token windows in which the target's loss is below the control's. Kept as
# they are; the control's own check has no counterpart (the control against itself scores 0).
PAIRED = ("wbc",)
ASSUMPTION = ("the control, a model that never saw either set, is assumed to respond to the sets' length, style and "
              "topic as the target would")


def check_control(value) -> None:
    """The ``control`` option's check (no model loads): ``auto``, ``none`` or a model spec, a non-empty string
    without surrounding white space (what it names is read by :func:`named_control` before any model loads)."""
    from ..errors import SettingsError

    if not isinstance(value, str) or not value.strip() or value != value.strip() or "\n" in value:
        raise SettingsError(f"must be {CONTROL_WHAT}, got {value!r}")


def is_named(choice) -> bool:
    """Whether the ``control`` option names a model (neither ``auto`` nor ``none``)."""
    return isinstance(choice, str) and choice not in CONTROLS


def named_control(choice: str, model, reference) -> None:
    """A named control checked before any model loads: what it names exists (a folder, a file or a hub id, by
    :func:`mia_core.models.causal.resolve_spec`, which loads nothing), it is not the target itself, and no other
    reference model is given (the reference is the control when one is given: the run has one reference pass).

    Raises
    ------
    SettingsError, ModelError
        One line naming ``control``.
    """
    from ..errors import ModelError, SettingsError
    from ..models.causal import resolve_spec

    if not is_named(choice):
        return
    try:
        ms = resolve_spec(choice)
    except ModelError as e:
        raise ModelError(f"{{control}}: {e.template}", options=("control", *e.options)) from None
    if isinstance(model, (str, type(None))) or hasattr(model, "__fspath__"):
        try:
            tm = resolve_spec(None if model is None else str(model))
        except ModelError:
            tm = None  # the target's own check says it
        if tm is not None and tm.location == ms.location:
            raise SettingsError(f"{{control}} {choice} is the target itself, which cannot control for itself: "
                                "name a model that never saw either set (e.g. the target's base)",
                                options=("control", "model"))
    if reference is not None:
        same = False
        if isinstance(reference, str) or hasattr(reference, "__fspath__"):
            try:
                same = resolve_spec(str(reference)).location == ms.location
            except ModelError:
                same = False
        if not same:
            raise SettingsError(f"{{control}} {choice} and {{reference}} {_name(reference)} are two models: with a "
                                "reference model the reference is the negative control (the run has one reference "
                                "pass); give one of them", options=("control", "reference"))


def _name(spec) -> str:
    return str(getattr(spec, "name", None) or getattr(spec, "source", None) or spec)


def control_spec(target, reference, choice: str, *, embedded: str = "smollm2"):
    """The negative control of a run and the note that names it: ``(spec or LoadedModel or None, note)``.

    Parameters
    ----------
    target : LoadedModel
        The loaded target (its ``base_spec`` and ``source`` are read).
    reference : LoadedModel or str or None
        The reference model given with the run (it is the control when given).
    choice : str
        ``"auto"``, ``"none"`` (:data:`CONTROLS`) or a model spec (:func:`check_control`; the named model is the
        control, checked by :func:`named_control` before anything loads).
    embedded : str
        The embedded model's spec (the control when nothing closer is known).

    Returns
    -------
    tuple
        ``(control, note)``; ``control`` None: no control (the note says why).
    """
    if choice == "none":
        return None, ("no negative control (control: none): the verdict assumes the two sets differ in nothing a "
                      "model sees but training")
    if is_named(choice):
        if reference is not None:  # named_control allowed this only when the two name one model
            return reference, f"negative control: the named model ({choice}), also the reference model"
        return choice, f"negative control: the named model ({choice})"
    if reference is not None:
        return reference, "negative control: the reference model"
    base = getattr(target, "base_spec", None)
    if base:
        return base, f"negative control: the target's base model ({base}), the target before it saw anything"
    if getattr(target, "source", None) == embedded:
        return None, ("no negative control: the target is the embedded model itself, which cannot control for "
                      "itself; give a reference model (a model that never saw either set) to have one")
    return embedded, "negative control: the embedded SmolLM2-135M (no reference model or base was given)"


def text_lengths(texts: list[str], n_tokens) -> np.ndarray:
    """Each text's length three ways, ``(n, 3)``: tokens (the target's tokenizer), words (white-space separated) and
    characters. Together they also carry the surface form that goes with length: characters per word, tokens per
    word."""
    return np.column_stack([np.asarray(n_tokens, float), [len(t.split()) for t in texts], [len(t) for t in texts]])


def length_adjust(X: np.ndarray, lengths: np.ndarray, degree: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Every column of ``X`` minus its pooled least-squares fit on the texts' lengths (:func:`text_lengths`): for
    each length measure ``z, ..., z**degree`` with ``z`` its standardised log, and an intercept. Reads no label, so
    a permutation test on the result stays exact under exchangeability. Returns the residuals and each column's R^2
    (the share of its variance the lengths explained).

    One measure is not enough: adjusted for the token count alone, the base SmolLM2's features still told the
    demo's longer half (by words) from the shorter at p = 0.002 (the words-per-token ratio differs between the
    halves); adjusted for tokens, words and characters, p = 0.32, and no split of the demo's never-trained texts
    by words, tokens, punctuation or word length went below p = 0.012 (the punctuation split, which the IID guard
    refuses)."""
    X = np.asarray(X, float)
    L = np.asarray(lengths, float).reshape(len(X), -1)
    cols = [np.ones(len(X))]
    for c in L.T:
        z = np.log(np.maximum(c, 1.0))
        sd = z.std()
        z = (z - z.mean()) / (sd if sd > 0 else 1.0)
        cols += [z ** k for k in range(1, degree + 1)]
    B = np.column_stack(cols)
    coef, *_ = np.linalg.lstsq(B, X, rcond=None)
    R = X - B @ coef
    var = X.var(0)
    r2 = np.where(var > 0, 1.0 - R.var(0) / np.where(var > 0, var, 1.0), 0.0)
    return R, r2


def control_columns(inputs, attacks: list, params: dict) -> dict[str, np.ndarray]:
    """The control's own features: each attack of :data:`CALIBRATED` scored on the control's pass (the run's
    reference pass) as if it were the target's, with the same parameters (and the Min-K% grid). DC-PDD only when
    the two models share a tokenizer (its frequencies are the target tokenizer's)."""
    from ..attacks import AttackInputs
    from .features import feature_columns

    swapped = AttackInputs(texts=inputs.texts, target=inputs.reference, extra=inputs.extra,
                           first_token=inputs.first_token)
    usable = [a for a in attacks if a.name in CALIBRATED and (a.name != "dc_pdd" or inputs.same_tokenizer)]
    scores = {a.name: np.asarray(a.score(swapped, **a.kwargs(params)), dtype=float) for a in usable
              if a.name not in ("min_k", "min_k_pp")}
    return feature_columns(swapped, usable, params, scores)


def calibrate(target_cols: dict, control_cols: dict, notes: list) -> dict[str, np.ndarray]:
    """Each feature the control has, target minus control, per text (the ``ref`` feature, which is the calibrated
    LOSS itself, is not repeated), and the features that already compare the target with the control
    (:data:`PAIRED`: WBC) as they are; other features are left out, with a note."""
    out = {name: np.asarray(v, float) - np.asarray(control_cols[name], float)
           for name, v in target_cols.items() if name in control_cols}
    out.update({name: np.asarray(target_cols[name], float) for name in PAIRED if name in target_cols})
    left = [n for n in target_cols if n not in control_cols and n != "ref" and n not in PAIRED]
    if left:
        from .features import feature_label

        notes.append(f"left out with a negative control (not computed from one pass of token statistics, or the "
                     f"control's tokenizer differs): {', '.join(feature_label(n) for n in left)}")
    return out


def control_check(X: np.ndarray, y: np.ndarray, *, folds: int, seed: int, combination: str,
                  unit: str = "texts", names=None) -> dict:
    """The primary test (``significance.permutation_test``) on the control's own features: does a model that never
    saw either set score the suspect units as more member-like? ``{"p_value", "refused", "caution", "message"}``."""
    from .significance import format_p, permutation_test

    n = min(int(y.sum()), int((1 - y).sum()))
    r = permutation_test(X, y, folds=min(folds, n), n_permutations=CONTROL_PERMUTATIONS, seed=seed + 11,
                         combination=combination, names=names)
    p = float(r["p_value"])
    refused, caution = p <= CONTROL_REFUSE, CONTROL_REFUSE < p <= CONTROL_CAUTION
    if refused:
        msg = (f"the negative control, a model that never saw either set, already scores the suspect {unit} as more "
               f"member-like ({format_p(p)} <= {CONTROL_REFUSE}): the sets differ in a way a model that never saw "
               "them detects, so a difference in the target is not evidence of training. Refused: draw the "
               "validation set from the same source as the suspect set")
    elif caution:
        msg = (f"the negative control scores the suspect {unit} as slightly more member-like ({format_p(p)}): a mild "
               f"difference between the sets cannot be ruled out (refused at p <= {CONTROL_REFUSE}); the verdict "
               "reads what the target sees beyond the control")
    else:
        msg = f"the negative control does not score the suspect {unit} as more member-like ({format_p(p)})"
    return {"p_value": p, "refused": bool(refused), "caution": bool(caution), "message": msg}
