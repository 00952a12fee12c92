"""Dataset inference: was this *collection* used to train the model? (Maini, Jia, Papernot & Dziedzic
2024, "LLM Dataset Inference: Did you train on my dataset?", NeurIPS; code:
pratyushmaini/llm_dataset_inference.)

A single text carries little membership signal on realistic models; many texts together can give
one statistically valid answer. The owner brings a *suspect* set (the texts in question) and a
*validation* set drawn from the same distribution and known not to be trained on. The steps, with
the module that holds each:

1. **Checks before any model (§3, §6)** -- ``guards``: enough texts, no text in both sets (exactly
   or nearly), a note when the lengths differ, and the IID guard: the model-free blind baseline
   between the sets; if it tells them apart, the verdict is refused (a shifted validation set makes
   any test "detect" membership; the paper's WikiMIA example).
2. **Features (§4.1)** -- ``features``: existing attacks' scores from one scoring stage
   (``mia_core.pipeline.score_stage``, cached passes): LOSS, zlib, Min-K% and Min-K%++ at the paper's
   k grid, DC-PDD, and the reference attack / ReCaLL when their inputs are given.
3. **The tests (§4.2)** -- ``significance``: the paper's procedure (a linear model on half the texts,
   a t-test on the other half) and a one-sided, studentized permutation test that tests every text
   (the primary p-value), with a self-check on two halves of the validation set.
4. **The result** -- ``audit``: ``run_dataset_inference`` -> ``DatasetInferenceResult``
   (``dataset_inference.json``: ``p_value``, ``p_value_ttest``, ``verdict`` in ``used`` /
   ``not_shown`` / ``refused``, ``blind_auc``, ``blind_p_value``, ``self_check_p_value``, ``weights``; ``scores.csv``).

The CLI is ``mia infer-dataset``; the Python API ``mia_core.infer_dataset``.
"""
from .audit import DEFAULT_ALPHA, RESULT_FILE, DatasetInferenceResult, check_inputs, run_dataset_inference
from .features import K_GRID, parse_features
from .guards import MIN_TEXTS, check_sets, iid_guard, near_duplicates
from .significance import format_p, paper_test, permutation_test

__all__ = ["DEFAULT_ALPHA", "DatasetInferenceResult", "K_GRID", "MIN_TEXTS", "RESULT_FILE", "check_inputs",
           "check_sets", "format_p", "iid_guard", "near_duplicates", "paper_test", "parse_features",
           "permutation_test", "run_dataset_inference"]
