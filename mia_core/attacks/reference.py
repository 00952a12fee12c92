"""Reference-model attack: the target's loss calibrated by a reference model's loss.

A reference model trained on similar data but not on the audited texts calibrates for how
hard a text is in general; membership shows as a target loss much lower than the reference
loss. Two forms are in use (parameter ``form``):

* ``"difference"`` (default), a difference of log-likelihoods (a log-likelihood ratio)::

      score(x) = -(L_target(x) - L_ref(x))

  the reference attack of Mattern et al. 2023 §3.2 (difficulty calibration, Watson et al.
  2022) and MIMIR's ``ReferenceAttack`` (which reports ``L_target - L_ref``, lower = member);
  Mireshghallah et al. 2022's likelihood ratio for masked LMs has the same form
  (``mia_core.mlm``).
* ``"ratio"``, the ratio of log-perplexities::

      score(x) = -L_target(x) / L_ref(x)

  Carlini et al. 2021 §5.1 ("Comparing to other neural language models": the ratio of the
  log-perplexities of two GPT-2 models) and Meeus et al. 2024 §6.2 (the "ratio" baseline of
  document-level inference).

Both are oriented higher = more likely member. When target and reference share a tokenizer,
``L`` is the mean NLL per token over tokens t = 2..T, as for LOSS (all tokens with
``first_token=True``, ``attacks.base``). When they do not, per-token losses are not
comparable, so both sides use the NLL of the **whole string** per UTF-8 byte: every token,
the first included (it is predicted from the BOS/EOS prefix, ``mia_core.stats``), whatever
``first_token`` says, so that both models account for exactly the same bytes.
"""
import numpy as np

from .base import AttackInputs, register
from ..options import one_of

FORMS = ("difference", "ratio")
DEFAULTS = {"form": "difference"}
DOMAINS = {"form": one_of(*FORMS, note="log-likelihood difference or log-perplexity ratio")}


def check_form(form) -> str:
    """``form`` checked against its domain (``"difference"`` or ``"ratio"``).

    Parameters
    ----------
    form : str
        The reference attack's ``form`` parameter.

    Returns
    -------
    str
        The form, stripped.

    Raises
    ------
    SettingsError
        Any other value (naming ``ref.form``).
    """
    return DOMAINS["form"].check(form, "ref.form")


def requires(params: dict) -> set:
    """The run inputs the attack needs (a reference model); checks ``form`` first, so that a bad
    value stops the run before any model loads (``pipeline.plan_attacks`` calls this)."""
    check_form(params.get("form", "difference"))
    return {"reference"}


@register("ref", "Reference model (log-likelihood difference)", needs=("target", "reference"),
          citation="Mattern et al. 2023 §3.2 (difference); Carlini et al. 2021 §5.1 (ratio)", defaults=DEFAULTS,
          requires=requires, domains=DOMAINS, cost="one pass of the reference model")
def score(inputs: AttackInputs, form: str = "difference") -> np.ndarray:
    """Reference-model scores: the target's loss calibrated by the reference model's.

    ``difference``: ``-(L_target - L_ref)`` (Mattern et al. 2023 §3.2); ``ratio``: ``-L_target / L_ref``
    (Carlini et al. 2021 §5.1). Per token over the scored tokens when the two models share a tokenizer,
    per UTF-8 byte of the whole string otherwise (see the module docstring).

    Parameters
    ----------
    inputs : AttackInputs
        The texts with their target and reference statistics.
    form : str
        ``"difference"`` or ``"ratio"``.

    Returns
    -------
    numpy.ndarray
        One score per text, higher = more likely member; NaN where either model has no scored token (or,
        for ``ratio``, the reference loss is not positive).

    Raises
    ------
    SettingsError
        An unknown ``form``.
    """
    check_form(form)
    out = np.full(len(inputs.texts), np.nan)
    if inputs.same_tokenizer:
        pairs = [(s.loss, r.loss) if s.n_predicted and r.n_predicted else None
                 for s, r in zip(inputs.scored("target"), inputs.scored("reference"))]
    else:  # whole string, all tokens, per byte
        pairs = [(s.nll_per_byte, r.nll_per_byte) if s.n_predicted and r.n_predicted else None
                 for s, r in zip(inputs.target, inputs.reference)]
    for i, p in enumerate(pairs):
        if p is None:
            continue
        lt, lr = p
        if form == "difference":
            out[i] = -(lt - lr)
        elif lr > 0:
            out[i] = -lt / lr
    return out
