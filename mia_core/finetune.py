# shim (issue 39): removed when every import moves
"""Moved to :mod:`mia_core.targets` (``recipe``, ``target``, ``references``); this module re-exports its names."""
from __future__ import annotations

from .targets import *  # noqa: F401,F403
from .targets import (ADAPTER_DTYPES, DEFAULT_LR, LLAMA_LORA_MODULES, MAX_GRAD_NORM, METHODS,  # noqa: F401
                      REFERENCE_MEMBERS, REFERENCES_INDEX, TRAINING_LOG, base_record, file_sha256, make_references,
                      make_target, read_log, reference_splits, texts_sha256)
from .targets.recipe import batches as _batches  # noqa: F401
from .targets.recipe import eval_loss as _eval_loss  # noqa: F401
from .targets.recipe import lora_targets as _lora_targets  # noqa: F401
from .targets.recipe import n_targets as _n_targets  # noqa: F401
from .targets.recipe import prepare_out as _prepare_out  # noqa: F401
from .targets.recipe import save_full as _save_full  # noqa: F401
from .targets.recipe import threads as _threads  # noqa: F401
from .targets.recipe import versions as _versions  # noqa: F401
from .targets.recipe import windows as _windows  # noqa: F401
