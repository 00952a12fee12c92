"""Dataset inference (Maini et al. 2024; ``mia infer-dataset``; the Dataset inference page): was a whole collection
used to train the model? One one-sided p-value for the suspect set against a validation set never trained on."""
from __future__ import annotations

from .base import Audit, Known, register


def _options():
    from ..dataset_inference.options import InferenceOptions

    return InferenceOptions


def _prepare(*, suspect, validation, **inputs):
    from ..api.inference import prepare_inference

    return prepare_inference(suspect, validation, **inputs)


def _execute(request, *, progress=None):
    from ..api.inference import execute_inference

    return execute_inference(request, progress=progress)


def _result():
    from ..dataset_inference.audit import DatasetInferenceResult

    return DatasetInferenceResult


def _request():
    from ..api.inference import InferenceRequest

    return InferenceRequest


def _load(folder):
    """The checked files of a saved dataset inference (``result.save`` or the run store's folder)."""
    from pathlib import Path

    from ..dataset_inference.store import read_folder

    return read_folder(Path(folder).expanduser())


def _example(known: Known) -> dict:
    """The tiny causal LM's members (suspect) against never-trained texts (validation), 20 each, 199 permutations."""
    return {"suspect": known.members[:20], "validation": known.nonmembers[:20], "model": known.causal,
            "control": "none", "n_permutations": 199, "alpha": 0.05, "folds": 2}


def _headline(result):
    return None  # a p-value, not an AUC


def _store():
    from ..dataset_inference.store import STORE

    return STORE


def _describe(result) -> dict:
    from ..dataset_inference.store import describe

    return describe(result)


def _figures(result) -> dict:
    from ..dataset_inference.store import figures

    return figures(result)


AUDIT = register(Audit(
    name="infer-dataset",
    title="Dataset inference",
    citation="Maini et al. 2024",
    sets=("suspect", "validation"),
    options=_options,
    prepare=_prepare,
    execute=_execute,
    result=_result,
    load=_load,
    marker="dataset_inference.json",
    request=_request,
    example=_example,
    page="pages/7_Dataset_inference.py",
    headline=_headline,
    store=_store,
    describe=_describe,
    figures=_figures))
