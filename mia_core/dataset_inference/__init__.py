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
# loaded on first use, so that reading the options (``.options``: the command line's flags) imports no pandas
_NAMES = {"DEFAULT_ALPHA": "options", "RESULT_FILE": "audit", "DatasetInferenceResult": "audit",
          "check_inputs": "audit", "run_dataset_inference": "audit", "K_GRID": "features",
          "parse_features": "features", "MIN_TEXTS": "guards", "check_sets": "guards", "iid_guard": "guards",
          "near_duplicates": "guards", "format_p": "significance", "paper_test": "significance",
          "permutation_test": "significance"}
__all__ = sorted(_NAMES)


def __getattr__(name: str):
    import importlib
    import importlib.util

    if name in _NAMES:
        return getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f".{name}", __name__)  # a submodule, as ``di.books``
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_NAMES])
