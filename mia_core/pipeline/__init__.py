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
# Each name is imported from its module when first asked for (PEP 562): ``mia_core.pipeline.options`` (the run's
# declared options, read by the command-line parser and the pages) loads without scikit-learn, pandas or torch.
# RunResult is defined below the pipeline (mia_core.runs.results): the run store reads runs back as it.
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what static readers (the API reference, IDEs) follow; at run time __getattr__ imports
    from ..attacks import DEFAULT_ATTACKS, default_attacks  # noqa: F401
    from ..data import split_mask  # noqa: F401
    from .audit import not_verified_notes, run_attacks, score_texts  # noqa: F401
    from .config import RunConfig, RunContext  # noqa: F401
    from .evaluate import EarlyResults, evaluate, population_decisions  # noqa: F401
    from .plan import available_inputs, check_config, check_population, parse_attacks, plan_attacks, skip_notes, uses_reference  # noqa: F401
    from ..runs.results import RunResult  # noqa: F401
    from .stages import assemble, model_passes, score_stage, text_passes  # noqa: F401

_WHERE = {
    **dict.fromkeys(('DEFAULT_ATTACKS', 'default_attacks'), "..attacks"),
    **dict.fromkeys(('split_mask',), "..data"),
    **dict.fromkeys(('not_verified_notes', 'run_attacks', 'score_texts'), ".audit"),
    **dict.fromkeys(('RunConfig', 'RunContext'), ".config"),
    **dict.fromkeys(('EarlyResults', 'evaluate', 'population_decisions'), ".evaluate"),
    **dict.fromkeys(('available_inputs', 'check_config', 'check_population', 'parse_attacks', 'plan_attacks', 'skip_notes', 'uses_reference'), ".plan"),
    **dict.fromkeys(('RunResult',), "..runs.results"),
    **dict.fromkeys(('assemble', 'model_passes', 'score_stage', 'text_passes'), ".stages"),
}


def __getattr__(name: str):
    if name in _WHERE:
        import importlib

        value = getattr(importlib.import_module(_WHERE[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_ATTACKS", "EarlyResults", "RunConfig", "RunContext", "RunResult", "assemble", "available_inputs",
    "check_config", "check_population", "default_attacks", "evaluate", "model_passes", "not_verified_notes",
    "parse_attacks", "plan_attacks", "population_decisions", "run_attacks", "score_stage", "score_texts",
    "skip_notes", "split_mask", "text_passes", "uses_reference",
]
