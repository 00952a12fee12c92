"""Run a set of attacks on a labelled dataset: statistics -> scores -> metrics.

``run_attacks`` is what the CLI's ``run`` command, the dashboard's calibration page, the API and
the tests call. It reads as its stages (each a module of this package):

1. **plan** (``plan``): every setting checked and the attacks the inputs at hand allow, before
   any model pass;
2. **assemble** (``stages.assemble``): which texts are scored, which train an attack that
   learns (a separate training set or a stratified split) and which are evaluated;
3. **passes** (``stages.model_passes``): the model passes the chosen attacks need (target on the
   texts, target on the lower-cased texts, reference on the texts), each once, through the cached
   one-pass statistics (``mia_core.stats``);
4. **score** (``stages.prepare_attacks``, ``score_attacks``): the ``prepare`` hooks of attacks
   that need more (neighbours, embeddings, a trained SMIA network), on the training part when a
   split is used, then every text scored by every attack (cheap functions of the statistics);
5. **evaluate** (``evaluate``): metrics on the evaluation part: AUC, TPR at low FPR with
   bootstrap CIs, the blind (model-free) baseline, group-level metrics when texts carry groups,
   and precision/recall at a threshold fitted on a population set when one is given.

``audit`` holds :func:`run_attacks` and :func:`score_texts` (stages 3-4 for unlabelled texts),
the result type :class:`RunResult` lives in :mod:`mia_core.runs.results` (re-exported here), ``config`` :class:`RunConfig` and :class:`RunContext`.
"""
from ..attacks import DEFAULT_ATTACKS, default_attacks
from ..data import split_mask  # True = the training part
from .audit import not_verified_notes, run_attacks, score_texts
from .config import RunConfig, RunContext
from .evaluate import EarlyResults, evaluate, population_decisions
from .plan import (available_inputs, check_config, check_population, parse_attacks, plan_attacks, skip_notes,
                   uses_reference)
from ..runs.results import RunResult  # defined below the pipeline: the run store reads runs back as it
from .stages import assemble, model_passes, score_stage, text_passes

__all__ = [
    "DEFAULT_ATTACKS", "EarlyResults", "RunConfig", "RunContext", "RunResult", "assemble", "available_inputs",
    "check_config", "check_population", "default_attacks", "evaluate", "model_passes", "not_verified_notes",
    "parse_attacks", "plan_attacks", "population_decisions", "run_attacks", "score_stage", "score_texts",
    "skip_notes", "split_mask", "text_passes", "uses_reference",
]
