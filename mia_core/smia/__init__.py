"""SMIA, the Semantic Membership Inference Attack, in parts.

Mozaffari & Marathe, "Semantic Membership Inference Attack against Large Language Models",
2024 (arXiv:2406.10218). The attack itself -- its parameters, ``prepare`` and ``score`` -- is
``mia_core.attacks.smia``; the method, step by step, with the module that holds each step:

0. **Neighbours (§4, App. D.4)** — semantic neighbours ``x~_j`` of every text and their
   target losses: ``mia_core.attacks.neighbourhood.ensure_neighbours`` (shared with the
   neighbourhood attack; generators in ``mia_core.neighbours``: the paper's T5 span filling
   is ``t5:MODEL``, the default is the embedded masked-LM proposer).
1. **Pair features (§4, Algorithm 1 lines 4-7)** — ``features``: ``(e(x) - e(x~_j),
   L(x) - L(x~_j))`` for every (text, neighbour) pair, with the sentence embedder of
   ``mia_core.stats.embeddings`` (all-MiniLM-L6-v2 by default; the paper: Cohere Embedding V3).
2. **Network (Table 6)** — ``network``: :func:`build_net` (loss and embedding branches,
   FC 1024->512->256->128->64->32->1, ReLU, dropout 0.2) and :class:`SmiaModel` (the trained
   network with its feature standardisation and metadata).
3. **Training (Algorithm 1, App. D.4)** — ``training``: :func:`train_smia` (Adam, binary
   cross-entropy, balanced batches, a stratified validation split of the training texts by
   ``mia_core.data.split_mask``, the epoch with the lowest validation loss kept), the recipes
   :data:`PRESETS` (``project``, ``paper``) and :func:`train_on` (from the run's training part).
4. **Inference (Algorithm 2)** — ``network.SmiaModel.probabilities`` per pair, and
   ``features.text_means``: the mean membership probability over a text's neighbours.
5. **Neighbour count (Table 5)** — ``sweep``: AUC when only each text's first k neighbours
   are averaged.
6. **Saved models** — ``store``: safetensors + JSON (never pickle), recording what the model
   was trained with (:func:`expected_settings`); a model applied with other settings is
   refused (``SettingsError``).
7. **Naming** — ``configuration``: "SMIA (paper configuration)" only with T5 neighbours and
   the paper preset; anything else is "SMIA-style".
8. **Modified members (§5.2)** — one-word edits of members (``mia_core.neighbours.edits``) and
   the runs on them (``mia_core.pipeline.modified.run_modified``), for every attack.
"""
from .configuration import GENERATOR_WORDS, PAPER_CONFIGURATION, configuration
from .features import PairFeatures, pair_features, pairs_report, text_means
from .network import BRANCH, DROPOUT, HIDDEN, SmiaModel, build_net
from .store import (META_FILE, SMIA_FORMAT, SMIA_VERSION, WEIGHTS_FILE, check_saved, expected_settings, load_checked,
                    load_smia, save_smia)
from .sweep import SWEEP, neighbour_sweep
from .training import PRESETS, train_on, train_smia, untrained_note

__all__ = [
    "BRANCH", "DROPOUT", "GENERATOR_WORDS", "HIDDEN", "META_FILE", "PAPER_CONFIGURATION", "PRESETS", "SMIA_FORMAT",
    "SMIA_VERSION", "SWEEP", "WEIGHTS_FILE", "PairFeatures", "SmiaModel", "build_net", "check_saved", "configuration",
    "expected_settings", "load_checked", "load_smia", "neighbour_sweep", "pair_features", "pairs_report",
    "save_smia", "text_means", "train_on", "train_smia", "untrained_note",
]
