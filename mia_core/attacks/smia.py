"""SMIA: Semantic Membership Inference Attack (Mozaffari & Marathe 2024, "Semantic Membership
Inference Attack against Large Language Models", arXiv:2406.10218).

Idea (§3-4): perturb a text into semantic neighbours and let a small neural network learn
how the target's loss moves *relative to how far the meaning moved* -- members and
non-members react differently. For a text ``x`` and its neighbour ``x~_j``:

    features(x, x~_j) = ( e(x) - e(x~_j),  L(x) - L(x~_j) )
    score(x) = (1/n) sum_j f(features(x, x~_j))        (Algorithm 2; higher = more likely member)

with ``e`` a sentence embedding (the paper: Cohere Embedding V3; here all-MiniLM-L6-v2 by
default, ``mia_core.stats.embeddings``), ``L`` the target's mean NLL per token over tokens t = 2..T,
for the text and its neighbours alike (every token with ``first_token=True``, ``attacks.base``),
and ``f`` the network of Table 6, trained on every (text, neighbour) pair of the labelled
training texts (Algorithm 1, App. D.4; the recipes are ``mia_core.smia.PRESETS``). A text that
allows fewer than n neighbours is scored NaN (``fewer="nan"``, the default), or with
``fewer="average"`` by the mean over the neighbours it has (at least one): the neighbourhood
attack's parameter (``neighbourhood.fewer_rule``), with the same note counting such texts.

Only T5 neighbours with the paper's preset are reported as "SMIA (paper configuration)"; anything
else is "SMIA-style" (``mia_core.smia.configuration``). A trained model is saved as
``smia.safetensors`` + ``smia.json`` (never pickle) and refused where the run's settings differ
from those it was trained with (``SettingsError``). Training and evaluation texts are kept apart
by the pipeline (a separate training set or a stratified split). The network, features, training,
storage and sweep are the package ``mia_core.smia`` (its docstring maps the paper's steps to it).
"""
from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ..errors import SettingsError
from ..smia import (PRESETS, check_saved, configuration, expected_settings, load_checked, neighbour_sweep,
                    pair_features, pairs_report, save_smia, text_means, train_on, untrained_note)
# the names this module held before the package mia_core.smia, for the code that imports them from here
from ..smia import (BRANCH, DROPOUT, GENERATOR_WORDS, HIDDEN, META_FILE, PAPER_CONFIGURATION, SMIA_FORMAT,  # noqa: F401
                    SMIA_VERSION, SWEEP, WEIGHTS_FILE, PairFeatures, SmiaModel, build_net, load_smia, train_smia)
from .base import AttackInputs, register
from ..options import check_values, flag, number, one_of, path, text, whole
from .neighbourhood import DEFAULTS as NEIGHBOUR_DEFAULTS
from .neighbourhood import DOMAINS as NEIGHBOUR_DOMAINS
from .neighbourhood import SCORE_DEFAULTS as NEIGHBOUR_SCORE_DEFAULTS
from .neighbourhood import SCORE_DOMAINS as NEIGHBOUR_SCORE_DOMAINS
from .neighbourhood import ensure_neighbours, fewer_note, fewer_rule, neighbours_needed, settings_from

DEFAULTS = {
    **NEIGHBOUR_DEFAULTS,
    **NEIGHBOUR_SCORE_DEFAULTS,  # fewer: a text with fewer than n neighbours is NaN, or averaged over those it has
    "embedder": "minilm",
    "preset": "project",
    "epochs": None,
    "lr": None,
    "batch_size": None,
    "batch_texts": None,
    "standardise": None,
    "weight_decay": 0.0,
    "val_fraction": 0.2,
    "train_seed": 0,
    "save": None,
    "load": None,
}
# the domain of every parameter (None where a preset fills the value in: "from the preset")
DOMAINS = {
    **NEIGHBOUR_DOMAINS,
    # the neighbourhood attack's fewer (same choices and default), in SMIA's words
    "fewer": replace(NEIGHBOUR_SCORE_DOMAINS["fewer"], note="a text with fewer than n neighbours: NaN, or the mean "
                                                             "network output over those it has"),
    "embedder": text(note="sentence embedder: minilm (embedded), a sentence-transformers id or folder"),
    "preset": one_of(*PRESETS, note="training recipe"),
    "epochs": whole(1, optional=True, note="training epochs (none: the preset's)"),
    "lr": number(0, lo_open=True, optional=True, note="learning rate (none: the preset's)"),
    "batch_size": whole(2, optional=True, note="pairs per batch (none: the preset's)"),
    "batch_texts": whole(2, also=(0,), optional=True, note="texts per batch, 0: batches of pairs (none: the preset's)"),
    "standardise": flag(optional=True, note="standardise the inputs (none: the preset's)"),
    "weight_decay": number(0, note="Adam weight decay"),
    "val_fraction": number(0, 1, lo_open=True, hi_open=True, note="share of training texts held out for validation"),
    "train_seed": whole(0, note="seed of the validation split, batches and weights"),
    "save": path("write", note="folder to save the trained network to"),
    "load": path("read", note="a saved SMIA model (folder with smia.safetensors and smia.json) to apply"),
}


def _p(params: dict) -> dict:
    """Parameters checked against their domains (``SettingsError`` naming the parameter), with the
    preset's values where none was given (explicit values win)."""
    given = {k: v for k, v in params.items() if v is not None and not (isinstance(v, str) and not v.strip())}
    checked = check_values("smia", DOMAINS, {**DEFAULTS, **given})
    preset = checked["preset"]
    return {**checked, **{k: v for k, v in PRESETS[preset].items() if checked.get(k) is None}}


def requires(params: dict) -> set:
    """SMIA's settings are checked here, before any model loads (a model to load must be a saved
    one); it learns from labelled texts unless a trained model is loaded."""
    p = _p(params)
    if p.get("load"):
        check_saved(p["load"], "smia.load")
    return set() if p.get("load") else {"labels"}


def _text_losses(inputs: AttackInputs) -> np.ndarray:
    """The texts' target losses under the run's first-token rule (as the neighbours' losses)."""
    return np.array([s.loss for s in inputs.scored()], dtype=float)


def prepare(inputs: AttackInputs, ctx, **params) -> dict:
    """Neighbours, pair features, and the network: loaded (``load``) or trained on the run's
    training part (and saved with ``save``); the report holds its training record and curves."""
    from ..stats.embeddings import load_embedder

    p = _p(params)
    settings = settings_from(p, "smia")
    embedder = load_embedder(p["embedder"])
    data = ensure_neighbours(inputs, settings, ctx)
    feats = pair_features(inputs.texts, data, _text_losses(inputs), embedder, use_cache=ctx.config.use_cache,
                          progress=ctx.progress)
    expected = expected_settings(ctx, settings, embedder, inputs.first_token)
    labels = np.asarray(ctx.dataset.labels, dtype=int)
    report: dict = {"settings": {k: p[k] for k in NEIGHBOUR_DEFAULTS}, "embedder": embedder.describe()}
    t0 = time.time()
    if p["load"]:
        model = load_checked(p["load"], expected)
        report.update(loaded_from=str(p["load"]), training=model.meta.get("training", {}),
                      curves=model.meta.get("curves", {}))
    else:
        model, curves = train_on(feats, labels, ctx.train_mask, p, expected, progress=ctx.progress)
        report.update(training=model.meta["training"], curves=curves, training_seconds=round(time.time() - t0, 2))
        if p["save"]:
            report["saved_to"] = str(save_smia(model, p["save"]))
    # the preset actually used: a loaded model's own (saved before presets existed: the project recipe)
    preset = report["training"].get("preset", "project") if p["load"] else p["preset"]
    report.update(configuration(settings.generator, preset, report["training"]))
    rule = fewer_rule(p, "smia")
    counts = np.array([len(ns) for ns, _ in data])
    report["fewer"] = rule
    report["texts_with_fewer_neighbours"] = int((counts < settings.n).sum())
    notes = [report["configuration_label"],
             fewer_note(counts, settings.n, rule, "smia", "scored by the mean network output over those they have"),
             None if p["load"] else untrained_note(report["training"], curves)]
    report["note"] = "; ".join(n for n in notes if n)
    inputs.extra["smia_state"] = {"model": model, "embedder": embedder, "settings": settings, "report": report}
    report["pairs"] = pairs_report(feats, labels, ctx.train_mask)
    return report


@register("smia", "SMIA", needs=("target", "neighbours", "labels"), citation="Mozaffari & Marathe 2024 §4",
          defaults=DEFAULTS, prepare=prepare, requires=requires, domains=DOMAINS,
          cost="the neighbours' passes, sentence embeddings of texts and neighbours, a small network trained")
def score(inputs: AttackInputs, **params) -> np.ndarray:
    """SMIA scores: the trained network's mean member probability over each text's neighbour pairs
    (Mozaffari & Marathe 2024 §4).

    Also records, once per run, the sweep over the number of neighbours in the report (on the test part).

    Parameters
    ----------
    inputs : AttackInputs
        The texts and the network :func:`prepare` trained or loaded (``inputs.extra["smia_state"]``).
    **params
        The attack's parameters (``fewer`` is read here).

    Returns
    -------
    numpy.ndarray
        One score per text, higher = more likely member; NaN for a text without a scored token or with
        fewer neighbours than ``fewer`` allows.

    Raises
    ------
    SettingsError
        No trained network (the attack was not prepared by the pipeline).
    """
    state = inputs.extra.get("smia_state")
    if state is None:
        raise SettingsError("SMIA has no trained model: run it through mia_core.pipeline.run_attacks")
    data = ensure_neighbours(inputs, state["settings"])
    ctx = inputs.extra.get("run_context")
    feats = pair_features(inputs.texts, data, _text_losses(inputs), state["embedder"],
                          use_cache=ctx.config.use_cache if ctx is not None else True)
    probs = state["model"].probabilities(feats.emb_diff, feats.loss_diff)
    need = neighbours_needed(fewer_rule(params, "smia"), state["settings"].n)
    if ctx is not None and len(inputs.texts) == len(ctx.dataset.texts) and "sweep" not in state["report"]:
        state["report"]["sweep"] = neighbour_sweep(feats, probs, np.asarray(ctx.dataset.labels, dtype=int),
                                                   ~np.asarray(ctx.train_mask, dtype=bool), state["settings"].n,
                                                   n_bootstrap=ctx.config.n_bootstrap, seed=ctx.config.seed,
                                                   need=need)
    out = text_means(feats.text_index, probs, len(inputs.texts))
    for i, s in enumerate(inputs.scored()):
        if s.n_predicted == 0 or len(data[i][0]) < need:
            out[i] = np.nan
    return out
