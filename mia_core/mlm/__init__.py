"""Masked-LM membership inference: likelihood-ratio attack with a reference model.

Mireshghallah, Goyal, Uniyal, Berg-Kirkpatrick & Shokri (2022), "Quantifying Privacy Risks of
Masked Language Models Using Membership Inference Attacks" (EMNLP 2022). The paper treats a
masked LM (BERT, RoBERTa, ...) as an energy-based model and tests, for each text ``s``,
"``s`` was in the target's training data" against "``s`` comes from the general population"
with a likelihood ratio between the target and a *reference* MLM trained on other data of the
same kind. The method, step by step, with the module that holds each step:

0. **Models and tokenizers (§2.2)** — the loader is ``mia_core.models.masked``
   (``load_masked_lm``, ``MaskedLM``); ``audit.check_same_tokenizer`` refuses a reference
   whose tokenizer differs from the target's (the ratio compares the probabilities of the same
   token ids at the same positions).
1. **Masking patterns (§2.3)** — ``masking``: for a text of ``T`` tokens (special tokens
   excluded), ``l = ceil(0.15 T)`` positions are masked at once, ``K`` times with random
   patterns ``I_1..I_K`` (``n_masked``, ``masking_patterns``). The patterns are drawn from a
   generator seeded by ``(seed, hash of the text)``, so they do not depend on batch order or on
   which other texts are scored, and are generated **once per text** (``plan_masks`` ->
   ``MaskPlan``) and given to both the target and the reference, which therefore score exactly
   the same masked inputs.
2. **Energy (§2.3, eq. 2)** — ``energy``::

       E(s; theta) = -(1/K) * sum_k sum_{i in I_k} log p_mlm(s_i | s with the positions I_k masked; theta)

   ``energies`` scores all ``K`` masked copies of a batch of texts together. Texts longer than
   the model's maximum length are **truncated** (the first ``max_length - 2`` tokens are
   scored; a warning counts them): the energy is a sum over positions, so windows of a long
   text would need their own length normalisation, and the paper's notes are short. Energies
   are cached on disk (``mia_core.cache.ArrayCache``, namespace ``mlm``) keyed by the model's
   identity, ``K``, seed, mask rate, maximum length and the text hash, so a re-run makes no
   model call.
3. **Likelihood ratio (§2.2-2.3)** — ``audit``: ``L(s) = E(s; target) - E(s; reference)`` (the
   log of the ratio ``p_target(s) / p_reference(s)`` up to the intractable normalisers, which
   are constant across texts). Members have a *low* ``L``; the score reported is ``-L`` (higher
   = more likely member, the project's convention).
4. **Loss baseline (§3.4)** — ``audit``: the attack of prior work, the target's loss alone: its
   mean loss per masked token, ``E / l`` (the energy sums over the ``l`` masked tokens of each
   pattern, so it grows with the text's length; the per-token average does not), score
   ``-E / l``. With known training samples, the paper's threshold ``mu`` = their mean loss per
   masked token (member iff ``E / l <= mu``) is reported too. The likelihood ratio (step 3)
   keeps the energies (sums, eq. 2) as the paper defines them: both models score the same masked
   tokens, so the reference calibrates for how hard, and how long, a text is.
5. **Population threshold (§2.4)** — ``audit`` (with ``mia_core.metrics``): the threshold flags
   a fraction ``alpha`` (default 10 %) of a *population* set of known non-members that is
   disjoint from the evaluated texts; precision and recall of members at that threshold are
   reported next to the AUC (their Table 2).
6. **Group level (§4.2)** — ``audit``: "patient-level", a group's score is the mean of its
   texts' scores.
7. **Which samples leak (§4.6)** — ``leak``: simple features of the members the attack flags
   vs. those it misses (length, digits, non-alphanumeric characters, rarest-token frequency).

``audit.run_mlm_audit`` runs 0-7 and returns an ``MlmAuditResult`` (``mia_core.results``'s
``AuditResult``: ``.metrics``, ``.scores``, ``.summary_text()``, ``.save(dir)``). The CLI is
``mia mlm`` (``mia_core.cli.mlm``); the dashboard page is ``pages/4_Masked_LM_audit.py``.
"""
from ..models import MaskedLM, load_masked_lm  # noqa: F401 - the loader lives in mia_core.models.masked
from .audit import ATTACKS, DEFAULT_ALPHA, MlmAuditResult, check_same_tokenizer, run_mlm_audit
from .energy import CACHE_VERSION, energies
from .leak import LEAK_FEATURES, leak_features, token_counts
from .masking import DEFAULT_K, DEFAULT_RATE, MaskPlan, masking_patterns, n_masked, plan_masks

__all__ = [
    "ATTACKS", "CACHE_VERSION", "DEFAULT_ALPHA", "DEFAULT_K", "DEFAULT_RATE", "LEAK_FEATURES", "MaskPlan", "MaskedLM",
    "MlmAuditResult", "check_same_tokenizer", "energies", "leak_features", "load_masked_lm", "masking_patterns",
    "n_masked", "plan_masks", "run_mlm_audit", "token_counts",
]
