"""The Python API: the engine's audits as functions, for a notebook or a script.

Everything here is exported from ``mia_core`` itself (lazily: ``import mia_core`` stays light)::

    from mia_core import score, audit, plan_run

* :func:`score` -- per-text membership scores of unlabelled texts (no labels, no metrics);
* :func:`audit` -- members vs non-members: scores, AUC and TPR at low FPR with CIs, the blind
  baseline, population thresholds (the CLI's ``mia run``);
* :func:`audit_documents` -- document-level MIA on books (Meeus et al. 2024; ``mia documents``);
* :func:`audit_mlm` -- the masked-LM likelihood ratio (Mireshghallah et al. 2022; ``mia mlm``);
* :func:`infer_dataset` -- was a whole collection used? One p-value (dataset inference, Maini et
  al. 2024; ``mia infer-dataset``);
* :func:`plan_run` -- what a run would do before anything loads: the attacks that can run, those
  skipped and why, the model passes, warnings and the time estimate;
* :func:`load` -- a saved run folder back as the result :func:`audit` returned (``result.save(dir)``);
* :func:`prepare_run` / :func:`execute_run` -- the front door every front end builds a run through (the CLI's
  ``mia run``, :func:`audit`, the Calibration page): a checked, planned :class:`RunRequest` before any model loads,
  then the passes (:mod:`mia_core.api.request`); likewise :func:`prepare_documents` / :func:`execute_documents`
  (:mod:`mia_core.api.documents`), :func:`prepare_mlm` / :func:`execute_mlm` (:mod:`mia_core.api.mlm`) and
  :func:`prepare_inference` / :func:`execute_inference` (:mod:`mia_core.api.inference`); the shift check
  (:mod:`mia_core.api.shift`), one text's statistics for the Inspect page (:mod:`mia_core.api.inspect`) and the
  Controlled experiment's targets (:mod:`mia_core.api.targets`).

Models are given as a loaded model or a spec: a hub id, a local folder, ``"smollm2"`` (the
embedded default) or a ``make-target`` folder (``mia_core.models.load_causal_lm``). Texts are given
as a list of strings, a file path (or ``hf:ID[:config][@split]``) read as the CLI reads it, or a pandas
DataFrame / Series read by its text column (``text_column``, else found as in a .csv file; a column of
numbers, lists or mappings is refused, never scored as its printed form).

Every function checks its arguments before anything is read or loaded (one set of checks, ``_int``,
``_num``, ``_prob``, ``_bool``, ``_choice``, ``_mapping``, ``_names``, ``_texts``...): a wrong type or value
is a one-line :class:`~mia_core.errors.SettingsError` (``DataError`` for texts) naming the parameter, never
a ``TypeError`` from deep inside; later bad input (too few texts, an unknown model) is a one-line
:class:`mia_core.errors.MiaError` before any model pass.
"""

from __future__ import annotations

from ..dataset_inference.significance import MAX_PERMUTATIONS  # noqa: F401 - the limits, read by tests and pages
from ..options import MAX_BOOTSTRAP, MAX_SEED  # noqa: F401
from .documents import DocumentRequest, audit_documents, execute_documents, load_document_models, prepare_documents
from .inference import (
    InferenceRequest, InferenceSets, estimate_inference, execute_inference, infer_dataset, inference_demo,
    prepare_inference, read_inference_sets
)
from .mlm import MlmRequest, audit_mlm, execute_mlm, prepare_mlm, read_mlm_files
from .request import RunRequest, execute_run, load_models, population_set, prepare_run, reference_spec  # noqa: F401
from .plan import RunPlan, plan_run
from .run import audit, score
from .saved import load
from ..options import widget_limits  # noqa: F401 - a page's number widget's limits from a declared domain

__all__ = ["RunPlan", "audit", "audit_documents", "audit_mlm", "infer_dataset", "load", "plan_run", "score"]
# the front door: what the CLI and the pages build their audits with, by module of mia_core.api (not re-exported by
# mia_core; tests/test_front_door_audits.py checks that each name is there)
FRONT_DOOR = {
    "request": ["RunRequest", "prepare_run", "load_models", "execute_run", "reference_spec", "population_set",
                "check_attacks", "check_modify", "modify_choices", "execute_modified", "modified_summary"],
    "documents": ["DocumentRequest", "prepare_documents", "load_document_models", "execute_documents"],
    "mlm": ["MlmRequest", "prepare_mlm", "read_mlm_files", "execute_mlm", "estimate_mlm"],
    "inference": ["InferenceRequest", "InferenceSets", "read_inference_sets", "prepare_inference", "execute_inference",
                  "estimate_inference", "inference_demo", "save_inference_run", "list_inference_runs",
                  "inference_report", "load_inference_run", "inference_run_name", "inference_feature_label",
                  "inference_notes"],
    "shift": ["read_shift_sets", "check_shift", "shift_summary"],
    "inspect": ["TextStatistics", "text_statistics", "text_neighbours", "estimate_neighbours", "estimate_analysis",
                "neighbour_spans", "read_text", "rarity", "token_values", "text_hash"],
    "targets": ["experiment_folder", "read_corpus", "write_split", "build_target"],
    "machine": ["check_machine"],
}
