"""``make-target``: fine-tune a base model on known members and write a target folder.

The stages, each a short function: :func:`check_texts` (with :func:`.recipe.check_recipe`: the
settings) -> :func:`load_base` -> :func:`prepare_data` -> train (:func:`.recipe.setup_model`,
:func:`.recipe.train`) -> :func:`final_losses` -> :func:`write_target` (a temporary sibling folder,
published in one rename by :func:`mia_core.runs.outputs.publish`).
"""
from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import DataError
from ..models import EMBEDDED_NAME, TARGET_MARKER, load_causal_lm, resolve_device
from ..progress import Progress, noop
from .recipe import (MAX_GRAD_NORM, TRAINING_LOG, Recipe, Trained, base_record, check_recipe, encode, eval_loss,
                     prepare_out, save_weights, setup_model, texts_sha256, train, versions)


@dataclass
class Base:
    """The loaded base model and the training data encoded for it (:func:`load_base`, :func:`prepare_data`)."""

    lm: object  # mia_core.models.LoadedModel, a private copy
    record: str  # base_record(base)
    pad_id: int
    max_length: int  # the asked length, cut to the model's context
    prefix: int | None  # the token in front of every text (stats.resolve_prefix)
    train_seqs: list[list[int]] | None = None
    held_seqs: list[list[int]] | None = None


def check_texts(member_texts: Sequence[str], heldout_texts: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """The member and held-out texts, stripped, empty ones dropped.

    Parameters
    ----------
    member_texts
        The texts to train on.
    heldout_texts
        Texts never trained on (optional).

    Returns
    -------
    tuple of list of str
        ``(members, heldout)``; ``DataError`` when there is no member or a held-out text is a member.
    """
    members = [str(t).strip() for t in member_texts if str(t).strip()]
    if not members:
        raise DataError("no member text to train on.")
    heldout = [str(t).strip() for t in (heldout_texts or []) if str(t).strip()]
    both = set(members) & set(heldout)
    if both:
        raise DataError(f"{len(both)} held-out text{'s are' if len(both) != 1 else ' is'} also in the member set; "
                        "held-out texts must not be trained on.")
    return members, heldout


def load_base(base: str | None, base_rec: str, device: str, max_length: int, progress: Progress) -> Base:
    """A private fp32 copy of the base model and the prefix its texts are trained (and scored) with.

    Parameters
    ----------
    base
        The base spec (the embedded model, a folder, a ``.gguf`` file, a hub id).
    base_rec
        Its record (:func:`.recipe.base_record`).
    device
        A resolved device.
    max_length
        The asked window length (cut to the model's context).
    progress
        ``progress(message, fraction)``.

    Returns
    -------
    Base
        The model, padding token, window length and prefix.
    """
    from ..stats import StatsSettings, resolve_prefix

    progress(f"loading base model {base_rec}", 0.0)
    lm = load_causal_lm(base, dtype="fp32", device=device, reuse=False)  # a private copy: we modify it
    tok = lm.tokenizer
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
    # trained exactly as it will be scored (stats.resolve_prefix under the default "auto"): with what the base
    # model's tokenizer puts in front of a text itself, i.e. nothing for GPT-2-style tokenizers (SmolLM2),
    # a BOS for Llama-style ones; recorded in mia_target.json, which the scorer reads back
    prefix = resolve_prefix(lm, StatsSettings())
    return Base(lm, base_rec, pad_id, min(int(max_length), int(lm.max_context)), prefix)


def prepare_data(b: Base, members: list[str], heldout: list[str]) -> None:
    """Encode the members and held-out texts into ``b.train_seqs`` and ``b.held_seqs``
    (``DataError`` when no member text yields a training sequence)."""
    b.train_seqs = encode(b.lm.tokenizer, members, b.prefix, b.max_length)
    b.held_seqs = encode(b.lm.tokenizer, heldout, b.prefix, b.max_length)
    if not b.train_seqs:
        raise DataError("the member texts are too short to train on (each needs at least one token).")


def final_losses(trained: Trained, b: Base, recipe: Recipe, progress: Progress) -> dict:
    """The finished model's loss on the members (one more pass) and its last held-out loss; eval mode after.

    Parameters
    ----------
    trained
        The trained model and its history.
    b
        The base and its data.
    recipe
        The settings (batch size).
    progress
        ``progress(message, fraction)``.

    Returns
    -------
    dict
        ``{"train_loss", "heldout_loss"}`` (``heldout_loss`` None without held-out texts).
    """
    progress("final losses", trained.fraction)
    final = {"train_loss": eval_loss(trained.model, b.train_seqs, recipe.batch_size, b.pad_id, b.lm.device),
             "heldout_loss": trained.history[-1]["heldout_loss"] if b.held_seqs else None}
    trained.model.eval()
    return final


@dataclass
class Job:
    """One ``make-target`` call: the data, the settings, where it goes and what it records."""

    members: list[str]
    heldout: list[str]
    recipe: Recipe
    out_dir: Path
    overwrite: bool
    command: str | None
    data_files: dict | None
    t_start: float = 0.0


def target_meta(job: Job, b: Base) -> dict:
    """The target folder's record (``mia_target.json``): base, method, data hashes, training settings, prefix."""
    return {
        "base": b.record,
        "method": job.recipe.method,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "n_members": len(job.members),
        "members_sha256": texts_sha256(job.members),
        "n_heldout": len(job.heldout),
        "heldout_sha256": texts_sha256(job.heldout) if job.heldout else None,
        "epochs": job.recipe.epochs,
        "lr": job.recipe.lr,
        "seed": job.recipe.seed,
        "prefix_token_id": b.prefix,
    }


def training_log(job: Job, meta: dict, b: Base, trained: Trained, final: dict) -> dict:
    """``training_log.json``: the record, the settings, the data sizes, the history, final losses and versions."""
    import torch

    return {
        **meta,
        "max_length": b.max_length,
        "batch_size": job.recipe.batch_size,
        "optimizer": {"name": "AdamW", "weight_decay": 0.0, "max_grad_norm": MAX_GRAD_NORM,
                      "schedule": "constant"},
        "lora": trained.lora_info,
        "n_trainable_params": int(sum(p.numel() for p in trained.params)),
        "n_train_sequences": len(b.train_seqs),
        "n_train_tokens": int(sum(len(s) - 1 for s in b.train_seqs)),
        "n_heldout_tokens": int(sum(len(s) - 1 for s in b.held_seqs)),
        "prefix_token_id": b.prefix,
        "device": b.lm.device,
        "threads": torch.get_num_threads(),
        "history": trained.history,
        "final": final,
        "seconds": round(time.time() - job.t_start, 1),
        "command": job.command,
        "data_files": job.data_files or {},
        "versions": versions(),
    }


def write_target(job: Job, b: Base, trained: Trained, final: dict, progress: Progress) -> dict:
    """Write the weights, ``mia_target.json`` and ``training_log.json`` into a temporary sibling of
    ``job.out_dir``, then publish it in one rename (:func:`mia_core.runs.outputs.publish`).

    Parameters
    ----------
    job
        The call (folder, ``overwrite``, what the log records).
    b, trained, final
        The base and its data, the trained model, :func:`final_losses`.
    progress
        ``progress(message, fraction)``.

    Returns
    -------
    dict
        The training log as written.
    """
    from ..runs.outputs import publish

    out_dir = job.out_dir
    progress(f"saving to {out_dir}", 0.99)
    tmp = out_dir.with_name(f"{out_dir.name}.tmp-make-target-{os.getpid()}")  # one per process
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        save_weights(trained, b.lm.tokenizer, tmp, job.recipe, b.record)
        meta = target_meta(job, b)
        (tmp / TARGET_MARKER).write_text(json.dumps(meta, indent=2))
        log = training_log(job, meta, b, trained, final)
        (tmp / TRAINING_LOG).write_text(json.dumps(log, indent=2))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # one rename; a folder another run wrote meanwhile is kept (this run's target then stays in a
    # named sibling and SettingsError says where); with overwrite the old one is replaced only now
    publish(tmp, out_dir, overwrite=job.overwrite)
    return log


def make_target(
    member_texts: Sequence[str],
    base: str | None = EMBEDDED_NAME,
    out_dir: str | Path = "target",
    method: str = "lora",
    epochs: int = 3,
    lr: float | None = None,
    seed: int = 0,
    heldout_texts: Sequence[str] | None = None,
    progress: Progress | None = None,
    *,
    max_length: int = 256,
    batch_size: int = 8,
    lora_r: int = 16,
    lora_alpha: float | None = None,
    lora_modules: Sequence[str] | None = None,
    adapter_dtype: str = "fp32",
    device: str = "auto",
    overwrite: bool = False,
    command: str | None = None,
    data_files: dict | None = None,
) -> dict:
    """Fine-tune ``base`` on ``member_texts`` and write a target folder to ``out_dir``.

    ``method``: ``"lora"`` (peft adapter, default lr 1e-3) or ``"full"`` (every weight,
    default lr 1e-4). ``adapter_dtype`` (``"fp32"``, ``"fp16"``, ``"bf16"``) is the precision the
    LoRA adapter is saved in (fp16 halves the file; training is always fp32). ``heldout_texts`` (optional,
    e.g. the non-members) are never trained on: their loss after each epoch shows the generalisation gap.
    ``progress(message, fraction)`` is called after every step. ``command`` and ``data_files``
    (``{role: path}``) are recorded in ``training_log.json``.

    Returns
    -------
    dict
        The training log (also written to ``out_dir/training_log.json``): ``history`` (one
        ``{"epoch", "train_loss", "heldout_loss", "seconds"}`` per epoch), ``final`` (``train_loss``:
        the finished model's loss on the members; ``heldout_loss``), ``out_dir``, settings and hashes.
        Raises ``DataError`` (no member text, a held-out text that is also a member) or
        ``SettingsError`` (bad method/epochs/lr/…, a non-empty ``out_dir``).
    """
    progress = progress or noop
    recipe = check_recipe(method, epochs, lr, seed, max_length, batch_size, lora_r, lora_alpha, lora_modules,
                          adapter_dtype)
    device = resolve_device(device)  # a device this machine lacks: SettingsError before anything is read
    members, heldout = check_texts(member_texts, heldout_texts)
    job = Job(members, heldout, recipe, Path(out_dir).expanduser(), overwrite, command, data_files)
    prepare_out(job.out_dir, overwrite)
    b = load_base(base, base_record(base), device, max_length, progress)
    prepare_data(b, members, heldout)
    model, params, lora_info = setup_model(b.lm.model, recipe, b.record)
    job.t_start = time.time()
    trained = train(model, params, lora_info, recipe, b.train_seqs, b.held_seqs, b.pad_id, b.lm.device, progress)
    final = final_losses(trained, b, recipe, progress)
    log = write_target(job, b, trained, final, progress)
    progress(f"target written to {job.out_dir}", 1.0)
    log["out_dir"] = str(job.out_dir)
    return log
