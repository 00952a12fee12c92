"""``run_mlm_audit``: the masked-LM audit of Mireshghallah et al. 2022.

See the package docstring (``mia_core.mlm``) for the method. The audit's parts, one module each: the shared
tokenizer check (:mod:`~mia_core.mlm.tokenizers`, §2.2), the stages (:mod:`~mia_core.mlm.stages`: settings and
texts, models, energies, scores, thresholds, leak features) and the result (:mod:`~mia_core.mlm.result`:
:class:`MlmAuditResult`, which prints the CLI's report and writes its files). This module runs them all.
"""
from __future__ import annotations

from typing import Sequence

from ..progress import Progress
from .masking import DEFAULT_RATE, DEFAULT_RECIPE
from .options import DEFAULT_ALPHA
from .result import ATTACKS, MlmAuditResult
from .stages import MlmSettings, _k, run_stages, text_sets
from .tokenizers import check_same_tokenizer

__all__ = ["ATTACKS", "DEFAULT_ALPHA", "MlmAuditResult", "check_same_tokenizer", "run_mlm_audit"]


def run_mlm_audit(members: Sequence[str], nonmembers: Sequence[str], population: Sequence[str], target, reference, *,
                  k: int | None = None, seed: int = 0, rate: float = DEFAULT_RATE, alpha: float = DEFAULT_ALPHA,
                  recipe: str = DEFAULT_RECIPE,
                  member_groups=None, nonmember_groups=None, population_groups=None,
                  train_samples: Sequence[str] | None = None, member_ids=None, nonmember_ids=None,
                  batch_tokens: int = 8192, n_bootstrap: int = 1000, cache: bool = True, device: str = "auto",
                  dtype: str = "fp32", trust_remote_code: bool = False, vocab_only: bool = False,
                  progress: Progress | None = None) -> MlmAuditResult:
    """The masked-LM audit of Mireshghallah et al. 2022 on members vs non-members.

    The texts and settings are checked before any model loads (:func:`text_sets`), then :func:`run_stages`.
    Group level (§4.2): a group's score is the mean of its texts' scores; its threshold flags ``alpha`` of the
    *population groups* when ``population_groups`` is given, else the text-level threshold applies to the means.

    Parameters
    ----------
    members, nonmembers : sequence of str
        The evaluated texts.
    population : sequence of str
        Texts known not to be in the target's training data, **disjoint** from the evaluated texts (``DataError``
        otherwise), used only to set the thresholds (§2.4): a fraction ``alpha`` of the population is flagged.
    target, reference : MaskedLM or str
        Models or specs for :func:`load_masked_lm`; they must share a tokenizer (``SettingsError`` otherwise;
        ``vocab_only`` accepts the same vocabulary with another normalisation, :func:`check_same_tokenizer`).
    k, seed, rate, recipe
        ``recipe`` (``RECIPES``): ``"sum"`` (default; ``l = ceil(0.15 T)``, ``K = 10``, energy summed over the
        masked tokens) or ``"released"`` (the authors' released code as issue 28 describes it: ``l = int(0.15
        T)``, at least 1, ``K = 20``, mean loss per masked token); ``k`` None: the recipe's ``K``.
    alpha : float
        The share of the population flagged.
    member_groups, nonmember_groups, population_groups : sequence, optional
        One group id per text (a missing id makes the text its own group).
    train_samples : sequence of str, optional
        Known training texts for the loss attack's ``mu`` threshold (§3.4; member iff loss <= ``mu``).
    member_ids, nonmember_ids : sequence, optional
        Ids of the evaluated texts.
    batch_tokens, n_bootstrap, cache, device, dtype, trust_remote_code, progress
        Padded tokens per pass, bootstrap resamples, the energy cache, how the models load, the progress callback.

    Returns
    -------
    MlmAuditResult
        ``metrics``, ``group_metrics``, ``scores`` (one row per evaluated text; ``loss`` is ``-E/l``, ``-E`` with
        ``"released"``), ``population_scores``, ``leak_features``, ``energies``, ``settings``, ``models``,
        ``warnings`` and ``plan`` (the tokenisation and masks both models scored; not JSON).
    """
    settings = MlmSettings(k=_k(recipe, k), seed=seed, rate=rate, alpha=alpha,
                           recipe=recipe, batch_tokens=batch_tokens, n_bootstrap=n_bootstrap, cache=cache)
    texts = text_sets(members, nonmembers, population, settings=settings, train_samples=train_samples,
                      member_ids=member_ids, nonmember_ids=nonmember_ids, member_groups=member_groups,
                      nonmember_groups=nonmember_groups, population_groups=population_groups)
    return run_stages(texts, target, reference, settings, device=device, dtype=dtype,
                      trust_remote_code=trust_remote_code, vocab_only=vocab_only, progress=progress)
