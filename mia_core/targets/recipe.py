"""The training recipe shared by ``make-target`` and ``make-references``: data, LoRA/full setup, training, saving.

* Data: each text is tokenised exactly as :mod:`mia_core.stats` scores it (the base tokenizer's own
  prefix, then the text tokens) and cut into windows of ``max_length`` tokens overlapping by one
  token (:func:`encode`, :func:`windows`).
* Setup (:func:`setup_model`): LoRA (Hu et al. 2022) of rank ``r``, ``lora_alpha = 2 r``, no dropout,
  on the attention and MLP projections of Llama-style models (peft's ``"all-linear"`` otherwise), or
  every weight (full fine-tuning); ``torch.manual_seed(seed)`` before the adapter is initialised.
* Training (:func:`train`): mean next-token cross-entropy over the real tokens of a batch, AdamW
  (Loshchilov & Hutter 2019; weight decay 0), constant learning rate, gradient norm clipped at 1.0;
  the data order of every epoch is a permutation drawn from a ``torch.Generator`` seeded with ``seed``.
* Saving (:func:`save_weights`): the peft adapter (in ``adapter_dtype``) or the full model and tokenizer.
"""
from __future__ import annotations

import hashlib
import json
import math
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import ModelError, SettingsError
from ..models import EMBEDDED_NAME, TARGET_MARKER, resolve_spec
from ..progress import Progress

from .options import ADAPTER_DTYPES, DEFAULT_LR, METHODS, TargetOptions  # noqa: E402,F401 - declared there
LLAMA_LORA_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
TRAINING_LOG = "training_log.json"
MAX_GRAD_NORM = 1.0


@dataclass
class Recipe:
    """The checked settings of one fine-tune (:func:`check_recipe`)."""

    method: str
    epochs: int
    lr: float
    seed: int
    max_length: int
    batch_size: int
    lora_r: int
    lora_alpha: float | None
    lora_modules: Sequence[str] | None
    adapter_dtype: str


@dataclass
class Trained:
    """A model after :func:`train`: its trainable parameters, LoRA record, per-epoch history and progress."""

    model: object
    params: list
    lora_info: dict | None
    history: list[dict]
    fraction: float  # of the progress bar reached at the end of training


# --------------------------------------------------------------------------- records


def texts_sha256(texts: Sequence[str]) -> str:
    """SHA-256 of a list of texts (each UTF-8 encoded, joined by NUL characters), order-sensitive."""
    h = hashlib.sha256()
    for i, t in enumerate(texts):
        if i:
            h.update(b"\0")
        h.update(t.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes (read in 1 MiB chunks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def base_record(base: str | None) -> str:
    """The base spec as written to ``mia_target.json``: ``"smollm2"`` for the embedded model,
    an absolute path for a local file or folder (so the target loads from any working
    directory), the id for a hub model."""
    ms = resolve_spec(base)
    if ms.is_embedded:
        return EMBEDDED_NAME
    if ms.kind in ("gguf", "local", "target"):
        return str(Path(ms.location).resolve())
    return ms.location


def read_log(target_dir: str | Path) -> dict | None:
    """The ``training_log.json`` of a target folder, or ``None`` when it has none."""
    p = Path(target_dir) / TRAINING_LOG
    if not p.exists():
        return None
    return json.loads(p.read_text())


def versions() -> dict:
    """The versions of torch, transformers, peft and Python (recorded in ``training_log.json``)."""
    import peft
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__,
            "python": sys.version.split()[0]}


def threads() -> int:
    """The number of threads torch computes with."""
    import torch

    return torch.get_num_threads()


# --------------------------------------------------------------------------- settings and output folder


def check_recipe(method: str, epochs: int, lr: float | None, seed: int, max_length: int, batch_size: int,
                 lora_r: int, lora_alpha: float | None, lora_modules: Sequence[str] | None,
                 adapter_dtype: str) -> Recipe:
    """The training settings checked, with the method's default learning rate filled in.

    Parameters
    ----------
    method, epochs, lr, seed, max_length, batch_size, lora_r, lora_alpha, lora_modules, adapter_dtype
        As :func:`mia_core.targets.make_target` takes them (``lr=None``: ``DEFAULT_LR[method]``).

    Returns
    -------
    Recipe
        The settings; ``SettingsError`` names the first one out of range.
    """
    o = TargetOptions.check(method=method, epochs=epochs, lr=lr, seed=seed, max_length=max_length,
                            batch_size=batch_size, lora_r=lora_r, adapter_dtype=adapter_dtype)  # the one check
    method, epochs, seed, max_length, batch_size, lora_r, adapter_dtype = (
        o.method, o.epochs, o.seed, o.max_length, o.batch_size, o.lora_r, o.adapter_dtype)
    lr = DEFAULT_LR[method] if o.lr is None else float(o.lr)
    return Recipe(method, epochs, lr, seed, max_length, batch_size, lora_r, lora_alpha, lora_modules, adapter_dtype)


def prepare_out(out_dir: Path, overwrite: bool, marker: str = TARGET_MARKER, kind: str = "target") -> None:
    """Refuse an output folder that is a file, or non-empty without ``overwrite``, or non-empty
    and not a ``kind`` folder (no ``marker`` file in it) even with ``overwrite``."""
    from ..runs.outputs import OUTPUT_MARKER, overwrite_refusal

    if out_dir.exists() or out_dir.is_symlink():
        if not out_dir.is_dir():
            raise SettingsError(f"{out_dir} exists and is not a folder.")
        if any(out_dir.iterdir()):
            why = overwrite_refusal(out_dir, out_dir, "out_dir")
            if why:
                raise SettingsError(why)
            if not ((out_dir / marker).exists() or (out_dir / OUTPUT_MARKER).exists()):
                raise SettingsError(f"{out_dir} is not empty and is not a {kind} folder: refusing to overwrite it.")
            if not overwrite:
                raise SettingsError(f"{out_dir} is not empty: choose a new folder or pass {{overwrite}}.",
                                    options=("overwrite",))


# --------------------------------------------------------------------------- data


def windows(ids: list[int], prefix: int | None, max_length: int) -> list[list[int]]:
    """Training sequences of one text: ``[prefix] + ids`` cut into windows of ``max_length``
    tokens overlapping by one token (stride ``max_length - 1``), as ``mia_core.stats`` scores."""
    seq = ([prefix] if prefix is not None else []) + list(ids)
    if len(seq) < 2:
        return []
    out, s = [], 0
    while True:
        out.append(seq[s : s + max_length])
        if s + max_length >= len(seq):
            break
        s += max_length - 1
    return out


def encode(tok, texts: list[str], prefix: int | None, max_length: int) -> list[list[int]]:
    """The training sequences of ``texts``: each tokenised without special tokens, then :func:`windows`.

    Parameters
    ----------
    tok
        The base model's tokenizer.
    texts
        The texts, in order.
    prefix
        The token put in front of every text (``None``: none), as ``stats.resolve_prefix`` decides.
    max_length
        Tokens per window.

    Returns
    -------
    list of list of int
        The windows of every text, text after text.
    """
    seqs = []
    for t in texts:
        ids = tok(t, add_special_tokens=False, verbose=False)["input_ids"]
        seqs.extend(windows(ids, prefix, max_length))
    return seqs


def batches(seqs: list[list[int]], batch_size: int, pad_id: int):
    """(input_ids, attention_mask, labels) tensors; labels are -100 on padding."""
    import torch

    for b0 in range(0, len(seqs), batch_size):
        chunk = seqs[b0 : b0 + batch_size]
        L = max(len(s) for s in chunk)
        ids = torch.full((len(chunk), L), pad_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), L), dtype=torch.long)
        for r, s in enumerate(chunk):
            ids[r, : len(s)] = torch.tensor(s, dtype=torch.long)
            mask[r, : len(s)] = 1
        labels = ids.masked_fill(mask == 0, -100)
        yield ids, mask, labels


def n_targets(mask) -> int:
    """Number of predicted tokens in a batch: real tokens minus the first of each row."""
    return int((mask[:, 1:] * mask[:, :-1]).sum())


def eval_loss(model, seqs: list[list[int]], batch_size: int, pad_id: int, device: str) -> float:
    """Token-weighted mean next-token NLL of ``seqs`` (no gradient, eval mode)."""
    import torch

    if not seqs:
        return float("nan")
    was_training = model.training
    model.eval()
    total, n = 0.0, 0
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))  # less padding
    ordered = [seqs[i] for i in order]
    with torch.inference_mode():
        for ids, mask, labels in batches(ordered, batch_size, pad_id):
            k = n_targets(mask)
            if k == 0:
                continue
            out = model(input_ids=ids.to(device), attention_mask=mask.to(device), labels=labels.to(device))
            total += float(out.loss) * k
            n += k
    if was_training:
        model.train()
    return total / n if n else float("nan")


# --------------------------------------------------------------------------- LoRA / full setup


def lora_targets(model) -> list[str] | str:
    """The Llama-style projections ``model`` has, or ``"all-linear"`` when it lacks ``q_proj``/``v_proj``."""
    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    found = [m for m in LLAMA_LORA_MODULES if m in names]
    return found if {"q_proj", "v_proj"} <= set(found) else "all-linear"


def add_lora(model, recipe: Recipe, base_rec: str):
    """``model`` wrapped in a peft LoRA adapter (Hu et al. 2022) and the adapter's record.

    Parameters
    ----------
    model
        The base model (a private copy: it is modified).
    recipe
        Rank, alpha (default ``2 r``), target modules (default :func:`lora_targets`), saved dtype.
    base_rec
        The base's record (named in the error when peft refuses the model).

    Returns
    -------
    tuple
        ``(peft model, {"r", "alpha", "dropout", "saved_dtype", "target_modules"})``.
    """
    from ..models.hub import model_load_lock

    with model_load_lock():  # peft imported where every model load imports it: one thread at a time
        from peft import LoraConfig, get_peft_model
    targets = list(recipe.lora_modules) if recipe.lora_modules else lora_targets(model)
    alpha = float(recipe.lora_alpha) if recipe.lora_alpha is not None else 2.0 * recipe.lora_r
    cfg = LoraConfig(r=int(recipe.lora_r), lora_alpha=alpha, lora_dropout=0.0, target_modules=targets,
                     bias="none", task_type="CAUSAL_LM")
    try:
        with warnings.catch_warnings():  # peft calls deprecated transformers helpers
            warnings.simplefilter("ignore", FutureWarning)
            with model_load_lock():  # builds modules: never while another thread loads a model
                model = get_peft_model(model, cfg)
    except ValueError as e:
        raise ModelError(f"cannot put LoRA adapters on {base_rec}: {str(e).splitlines()[0]}") from e
    info = {"r": int(recipe.lora_r), "alpha": alpha, "dropout": 0.0, "saved_dtype": recipe.adapter_dtype,
            "target_modules": targets if isinstance(targets, str) else list(targets)}
    return model, info


def setup_model(model, recipe: Recipe, base_rec: str):
    """Seed torch, then make ``model`` trainable as ``recipe.method`` says.

    Parameters
    ----------
    model
        The base model (a private copy).
    recipe
        The settings (``method``, ``seed``, LoRA options).
    base_rec
        The base's record, for error messages.

    Returns
    -------
    tuple
        ``(model, trainable parameters, LoRA record or None)``.
    """
    import torch

    torch.manual_seed(recipe.seed)
    lora_info = None
    if recipe.method == "lora":
        model, lora_info = add_lora(model, recipe, base_rec)
    params = [p for p in model.parameters() if p.requires_grad]
    if recipe.method == "full":
        for p in model.parameters():
            p.requires_grad_(True)
        params = list(model.parameters())
    return model, params, lora_info


# --------------------------------------------------------------------------- training loop


@dataclass
class _Loop:
    """What every step of :func:`train` shares."""

    model: object
    params: list
    opt: object
    recipe: Recipe
    pad_id: int
    device: str
    progress: Progress
    steps_per_epoch: int
    total_work: int
    done: int = 0


def _train_epoch(loop: _Loop, seqs: list[list[int]], ep: int) -> float:
    """One pass over ``seqs`` (already in this epoch's order); returns the token-weighted mean batch loss."""
    import torch

    r = loop.recipe
    tot, ntok = 0.0, 0
    for step, (ids, mask, labels) in enumerate(batches(seqs, r.batch_size, loop.pad_id), 1):
        k = n_targets(mask)
        dev = loop.device
        out = loop.model(input_ids=ids.to(dev), attention_mask=mask.to(dev), labels=labels.to(dev))
        loss = out.loss
        value = float(loss.detach())
        if not math.isfinite(value):
            raise ModelError(f"training diverged (loss {value}) at epoch {ep}: lower the learning rate.")
        loss.backward()
        torch.nn.utils.clip_grad_norm_(loop.params, MAX_GRAD_NORM)
        loop.opt.step()
        loop.opt.zero_grad(set_to_none=True)
        tot += value * k
        ntok += k
        loop.done += 1
        loop.progress(f"training: epoch {ep}/{r.epochs} step {step}/{loop.steps_per_epoch} loss "
                      f"{tot / max(1, ntok):.3f}", min(0.99, loop.done / loop.total_work))
    return tot / max(1, ntok)


def train(model, params: list, lora_info: dict | None, recipe: Recipe, train_seqs: list[list[int]],
          held_seqs: list[list[int]], pad_id: int, device: str, progress: Progress) -> Trained:
    """Fine-tune ``model`` for ``recipe.epochs`` epochs; the held-out loss after each.

    Parameters
    ----------
    model, params, lora_info
        What :func:`setup_model` returned.
    recipe
        The settings (epochs, learning rate, batch size, seed of the data order).
    train_seqs, held_seqs
        The training and held-out sequences (:func:`encode`).
    pad_id, device
        The padding token and where the model is.
    progress
        ``progress(message, fraction)`` after every step.

    Returns
    -------
    Trained
        The model (in train mode), its parameters and LoRA record, and ``history``: one
        ``{"epoch", "train_loss", "heldout_loss", "seconds"}`` per epoch.
    """
    import torch

    steps = math.ceil(len(train_seqs) / recipe.batch_size)
    opt = torch.optim.AdamW(params, lr=recipe.lr, weight_decay=0.0)
    loop = _Loop(model, params, opt, recipe, pad_id, device, progress, steps, recipe.epochs * steps)
    gen = torch.Generator().manual_seed(recipe.seed)
    history = []
    model.train()
    for ep in range(1, recipe.epochs + 1):
        t0 = time.time()
        order = torch.randperm(len(train_seqs), generator=gen).tolist()
        rec = {"epoch": ep, "train_loss": _train_epoch(loop, [train_seqs[i] for i in order], ep), "heldout_loss": None}
        if held_seqs:
            progress(f"training: epoch {ep}/{recipe.epochs}, held-out loss", min(0.99, loop.done / loop.total_work))
            rec["heldout_loss"] = eval_loss(model, held_seqs, recipe.batch_size, pad_id, device)
        rec["seconds"] = round(time.time() - t0, 2)
        history.append(rec)
    return Trained(model, params, lora_info, history, min(0.99, loop.done / loop.total_work))


# --------------------------------------------------------------------------- saving


def save_adapter(trained: Trained, folder: Path, adapter_dtype: str, base_rec: str) -> None:
    """The peft adapter (``adapter_config.json``, ``adapter_model.safetensors``) in ``adapter_dtype``,
    its base recorded as ``base_rec`` (not the local cache path); peft's empty model card left out."""
    import torch

    if adapter_dtype != "fp32":  # halves the file; loading casts back to the base's dtype
        tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[adapter_dtype]
        for p in trained.params:
            p.data = p.data.to(tdt)
    trained.model.save_pretrained(str(folder), safe_serialization=True)
    ac = folder / "adapter_config.json"
    cfg = json.loads(ac.read_text())
    cfg["base_model_name_or_path"] = base_rec  # not the local cache path
    ac.write_text(json.dumps(cfg, indent=2, sort_keys=True))
    readme = folder / "README.md"
    if readme.exists():  # peft's model-card template, empty of content
        readme.unlink()


def save_full(model, tok, folder: Path) -> None:
    """config.json + model.safetensors (+ tokenizer) of a fully fine-tuned model."""
    try:
        model.save_pretrained(str(folder), safe_serialization=True)
    except Exception:  # noqa: BLE001 - e.g. transformers refusing a model it loaded from GGUF
        from safetensors.torch import save_model

        cfg = model.config.to_dict()
        cfg.pop("quantization_config", None)
        cfg["dtype"] = "float32"
        (folder / "config.json").write_text(json.dumps(cfg, indent=2))
        save_model(model, str(folder / "model.safetensors"))
    tok.save_pretrained(str(folder))


def save_weights(trained: Trained, tok, folder: Path, recipe: Recipe, base_rec: str) -> None:
    """The trained weights in ``folder``: the adapter (LoRA) or the full model and tokenizer.

    Parameters
    ----------
    trained
        The trained model.
    tok
        The base tokenizer (saved with a fully fine-tuned model).
    folder
        The (staging) folder written into.
    recipe
        ``method`` and ``adapter_dtype``.
    base_rec
        The base's record, written into ``adapter_config.json``.
    """
    if recipe.method == "lora":
        save_adapter(trained, folder, recipe.adapter_dtype, base_rec)
    else:
        save_full(trained.model, tok, folder)
