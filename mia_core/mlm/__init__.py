"""Masked-LM membership inference: likelihood-ratio attack with a reference model.

Mireshghallah, Goyal, Uniyal, Berg-Kirkpatrick & Shokri (2022), "Quantifying Privacy Risks of
Masked Language Models Using Membership Inference Attacks" (EMNLP 2022). The paper treats a
masked LM (BERT, RoBERTa, ...) as an energy-based model and tests, for each text ``s``,
"``s`` was in the target's training data" against "``s`` comes from the general population"
with a likelihood ratio between the target and a *reference* MLM trained on other data of the
same kind. The method, step by step, with the module that holds each step:

0. **Models and tokenizers (§2.2)** — the loader is ``mia_core.models.masked``
   (``load_masked_lm``, ``MaskedLM``); ``tokenizers.check_same_tokenizer`` refuses a reference
   whose tokenizer differs from the target's (the ratio compares the probabilities of the same
   token ids at the same positions).
1. **Masking patterns (§2.3)** — ``masking``: for a text of ``T`` tokens (special tokens
   excluded), ``l`` positions (about 15 % of them) are masked at once, ``K`` times with random
   patterns ``I_1..I_K`` (``n_masked``, ``masking_patterns``). The patterns are drawn from a
   generator seeded by ``(seed, hash of the text)``, so they do not depend on batch order or on
   which other texts are scored, and are generated **once per text** (``plan_masks`` ->
   ``MaskPlan``) and given to both the target and the reference, which therefore score exactly
   the same masked inputs.
2. **Energy (§2.3, eq. 2)** — ``energy``. Two recipes (``masking.RECIPES``, ``recipe=`` /
   ``--recipe``); an explicit ``K`` wins over the recipe's default::

       "sum" (default):  l = ceil(0.15 T), K = 10
                         E(s; theta) = -(1/K) * sum_k sum_{i in I_k} log p_mlm(s_i | s with I_k masked; theta)
       "released":       l = int(0.15 T) (at least 1), K = 20
                         E(s; theta) = -(1/K) * sum_k (1/l) sum_{i in I_k} log p_mlm(s_i | s with I_k masked; theta)

   ``"sum"`` is this project's reading of eq. 2; the paper's own text could not be consulted for
   this docstring (issue 28), so that the paper sums rather than averages is **not verified**.
   ``"released"`` is what an independent review (issue 28) found in the authors' released code
   (github.com/mireshghallah/mlm_mia, scoring script ``codes/get_loss_pytorch_bert.py``): the
   mean cross-entropy over ``int(0.15 T)`` masked tokens, 20 patterns. Of that repository only
   the README, the shell scripts, the metric scripts and the plotting notebook could be read here,
   not the scoring script; they agree that the paper's attack used one *loss* per text
   (``loss.txt``; the README calls the energy variant "not in the paper"), and the notebook's
   values (about 1-3 nats per text, differences of about -3) are on a per-token scale, not a sum
   over dozens of masked tokens. Since ``l`` grows with ``T``, the ``"sum"`` ratio is the
   ``"released"`` one times ``l``, and the two rank texts of different lengths differently.
   ``energies`` scores all ``K`` masked copies of a batch of texts together. Texts longer than
   the model's maximum length are **truncated** (the first ``max_length - 2`` tokens are
   scored; a warning counts them): the ``"sum"`` energy is a sum over positions, so windows of
   a long text would need their own length normalisation, and the paper's notes are short.
   Per-pattern sums are cached on disk (``mia_core.cache.ArrayCache``, namespace ``mlm``) keyed
   by the model's identity, ``K``, seed, mask rate, maximum length, the rounding of ``l`` (when
   not the default's) and the text hash, so a re-run makes no model call.
3. **Likelihood ratio (§2.2-2.3)** — ``stages``: ``L(s) = E(s; target) - E(s; reference)`` (the
   log of the ratio ``p_target(s) / p_reference(s)`` up to the intractable normalisers, which
   are constant across texts). Members have a *low* ``L``; the score reported is ``-L`` (higher
   = more likely member, the project's convention).
4. **Loss baseline (§3.4)** — ``stages``: the attack of prior work, the target's loss alone: its
   mean loss per masked token, score ``-E / l`` with the ``"sum"`` recipe (whose energy sums
   over the ``l`` masked tokens of each pattern, so it grows with the text's length; the
   per-token average does not) and ``-E`` with ``"released"`` (already per token). With known
   training samples, the paper's threshold ``mu`` = their mean loss per masked token (member iff
   the loss is ``<= mu``) is reported too. The likelihood ratio (step 3) takes the recipe's
   energies as they are: with ``"sum"``, both models score the same masked tokens, so the
   reference calibrates for how hard, and how long, a text is.
5. **Population threshold (§2.4)** — ``stages`` (with ``mia_core.metrics``): the threshold flags
   a fraction ``alpha`` (default 10 %) of a *population* set of known non-members that is
   disjoint from the evaluated texts; precision and recall of members at that threshold are
   reported next to the AUC (their Table 2).
6. **Group level (§4.2)** — ``stages``: "patient-level", a group's score is the mean of its
   texts' scores.
7. **Which samples leak (§4.6)** — ``leak``: simple features of the members the attack flags
   vs. those it misses (length, digits, non-alphanumeric characters, rarest-token frequency).

``audit.run_mlm_audit`` runs 0-7 (``stages``: each step a named stage) and returns an ``MlmAuditResult``
(``result``; ``mia_core.runs.results``'s
``AuditResult``: ``.metrics``, ``.scores``, ``.summary_text()``, ``.save(dir)``). The CLI is
``mia mlm`` (``mia_core.cli.mlm``); the dashboard page is ``pages/4_Masked_LM_audit.py``.
"""
# loaded on first use, so that reading the options (``.options``: the command line's flags) imports no pandas
_NAMES = {"MaskedLM": "..models", "load_masked_lm": "..models", "run_mlm_audit": ".audit", "ATTACKS": ".result",
          "DEFAULT_ALPHA": ".options", "MlmAuditResult": ".result", "check_same_tokenizer": ".tokenizers",
          "CACHE_VERSION": ".energy", "energies": ".energy", "LEAK_FEATURES": ".leak", "leak_features": ".leak",
          "token_counts": ".leak", "DEFAULT_K": ".masking", "DEFAULT_RATE": ".masking", "DEFAULT_RECIPE": ".masking",
          "RECIPES": ".masking", "MaskPlan": ".masking", "check_recipe": ".masking", "masking_patterns": ".masking",
          "n_masked": ".masking", "plan_masks": ".masking", "recipe_k": ".masking"}
__all__ = sorted(_NAMES)


def __getattr__(name: str):
    import importlib
    import importlib.util

    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name], __name__), name)
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f".{name}", __name__)  # a submodule, as ``mlm.stages``
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_NAMES])
