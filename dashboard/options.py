"""How the pages name the settings an engine error is about (``mia_core.errors``: an error names the
option by its API name, ``{batch_tokens}``; each front end puts its own word there).

:data:`LABELS` maps an option to the label of the widget that sets it (in the sidebar or on a page),
or, for an option no page has a widget for, to a description in plain words. An attack parameter
``attack.name`` is called as on the Calibration page ("ReCaLL: prefix"). :func:`worded` is how a page
shows a ``MiaError`` (``dashboard.ui.show_error``, a job's error, the sidebar's load errors).
"""
from __future__ import annotations

from functools import lru_cache

from mia_core.errors import in_words

LABELS = {
    # the sidebar (dashboard/sidebar.py)
    "model": "Target model",
    "documents": "Your documents",
    "reference": "the sidebar's Reference model",
    "dtype": "the sidebar's dtype",
    "quantize": "the sidebar's Quantisation (target)",
    "device": "the sidebar's Device",
    "trust_remote_code": "the sidebar's trust_remote_code",
    # data (Calibration, Masked-LM and Document pages)
    "population": "Population set",
    "members": "Members",
    "nonmembers": "Non-members",
    "labelled": "a labelled table",
    "modify": "the modified members' Variants",
    "text_column": "Text column of tables",
    "group_column": "Group column",
    "split": "Train/evaluation split",
    # scoring and evaluation
    "context": "Context window",
    "folds": "Folds",
    # dataset inference (pages/7_Dataset_inference.py)
    "alpha": "α (significance level)",
    "n_permutations": "Permutations",
    "correction": "Correction across the suspect texts or books",
    "books": "Unit of the test (Books)",
    "combination": "the combination of features (combination in the Python API, --combination)",
    "control": "the negative control (control in the Python API, --control)",
    "n_bootstrap": "Bootstrap resamples",
    "seed": "Seed",
    # the Controlled experiment's fine-tune (pages/6_Controlled_experiment.py; mia_core.targets.options)
    "method": "Method",
    "epochs": "Epochs",
    "lr": "Learning rate",
    "max_length": "Max tokens per text",
    "batch_size": "Batch size",
    "lora_r": "the LoRA rank",
    "adapter_dtype": "the adapter's precision",
    "members_pct": "Members (%)",
    "nonmembers_pct": "Non-members (%)",
    "population_pct": "Population (%)",
    "max_texts": "Use at most this many texts of the corpus",
    # where the model passes run (dashboard/engine.py)
    "engine": "Where the model passes run",
    "workers": "Ray workers",
    "ray_address": "Ray cluster address",
    # options no page has a widget for
    "batch_tokens": "the batch size (tokens)",
    "gpus_per_worker": "the GPUs per Ray worker",
    "train_members": "training members",
    "train_nonmembers": "training non-members",
    "cache": "the cache setting of the command line or the Python API",
    "vocab_only": "a vocabulary-only match (vocab_only in the Python API)",
    "accept_weight_mismatch": "accepting the mismatch (from the command line or the Python API)",
    "out": "the output folder",
    "out_dir": "the output folder",
    "overwrite": "the overwrite setting",
}


@lru_cache(maxsize=1)
def _attack_params() -> dict[str, str]:
    """``attack.name`` -> the Calibration page's label of that attack parameter ("ReCaLL: prefix")."""
    from mia_core.attacks import REGISTRY

    return {f"{a}.{p}": f"{att.label}: {p}" for a, att in REGISTRY.items() for p in att.params}


def words(name: str) -> str:
    """An option's or a set's name as a widget label, where no label is written for it (a page made from an audit's
    declaration, ``dashboard.audit_page``): ``prefix_tokens`` -> "Prefix tokens", ``nonmembers`` -> "Non-members"."""
    label = LABELS.get(name, "")
    return label if label[:1].isupper() else name.replace("_", " ").capitalize()  # a widget's label, not a description


@lru_cache(maxsize=1)
def _audit_options() -> dict[str, str]:
    """Every registered audit's option and set, by the label a page made from its declaration gives it."""
    from mia_core.audits import AUDITS

    out = {}
    for a in AUDITS.values():
        for n in (*a.options().declared(), *a.sets, *(n for o in a.steps().values() for n in o.declared())):
            out[n] = words(n)
    return out


def labels() -> dict[str, str]:
    """:data:`LABELS`, the attack parameters' labels and the registered audits' options (:func:`words`)."""
    return {**_attack_params(), **_audit_options(), **LABELS}


def worded(e) -> str:
    """A ``MiaError`` (or a ``mia_core.errors.Worded`` note; anything else as ``str``) with each option
    it is about as the pages call it."""
    return in_words(e, labels())
