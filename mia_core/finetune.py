"""Controlled targets: fine-tune a causal LM on a known member set.

A membership audit can only be checked against ground truth when we know exactly what a
model was trained on. :func:`make_target` fine-tunes a base model (the embedded SmolLM2, a
local folder, a ``.gguf`` file or a hub id) on ``member_texts`` and writes a *target folder*
that :func:`mia_core.models.load_causal_lm` loads like any other model:

* ``mia_target.json``: ``{"base": <base spec>, "method": "lora"|"full", ...}``; the base
  doubles as the natural reference model of the reference attack (Carlini et al. 2021 §5.1);
* LoRA (default): the peft adapter (``adapter_config.json``, ``adapter_model.safetensors``);
  full fine-tuning: ``config.json`` + ``model.safetensors`` + the tokenizer;
* ``training_log.json``: per-epoch train loss and held-out loss, final losses, seed, settings,
  command, SHA-256 of the data, library versions.

Training (plain torch, no HF ``Trainer``):

* Each text is tokenised exactly as :mod:`mia_core.stats` scores it by default
  (``StatsSettings.prefix="auto"``): what the base model's tokenizer puts in front of a text itself
  (a Llama-style BOS; nothing for GPT-2-style tokenizers such as SmolLM2's), then the text tokens, so
  that the model is fine-tuned the standard way and the loss it is trained to lower is the loss the
  attacks read. The token (or none) is recorded as ``prefix_token_id`` in ``mia_target.json``, and
  the scorer puts the same in front of every text of this target. (Earlier versions trained every
  target with a BOS/EOS token in front; their folders say so in ``training_log.json`` and are
  scored that way.) Texts longer than ``max_length``
  are cut into windows of ``max_length`` tokens overlapping by one token (every token is
  trained on once, as the windows of ``mia_core.stats`` score it).
* Causal-LM objective: mean next-token cross-entropy over the real (non-padding) tokens of a
  batch, AdamW (Loshchilov & Hutter 2019; weight decay 0), constant learning rate, gradient
  norm clipped at 1.0.
* LoRA (Hu et al. 2022, "LoRA: Low-Rank Adaptation of Large Language Models"): rank ``r``,
  ``lora_alpha = 2 r``, no dropout, on the attention projections ``q_proj, k_proj, v_proj,
  o_proj`` and the MLP ``gate_proj, up_proj, down_proj`` of Llama-style models (all linear
  layers but the output head for other architectures, peft's ``"all-linear"``). The adapter
  is merged into the base on loading.
* Reproducible: ``torch.manual_seed(seed)`` before the adapter is initialised, the data
  order of every epoch is a permutation drawn from a ``torch.Generator`` seeded with
  ``seed``, no dropout. Same seed, data and machine: the same weights and losses.

The loss reported per epoch as ``train_loss`` is the token-weighted mean of the batch losses
seen during that epoch (the model changes as it goes); ``final`` holds the losses of the
finished model on the members and on the held-out texts (one more pass over each), whose gap
is the membership signal a LOSS attack (Yeom et al. 2018) can see.

Reference models for RMIA (Zarifzadeh et al. 2024): :func:`make_references` trains ``k``
models with the same recipe, each on a random half of a population set (complementary halves
in pairs, seeded), writes them as ``ref-0 .. ref-<k-1>`` target folders with the record of
which population texts each one saw (``reference_members.json``), and ``references.json``
with the time each took (``mia make-references``).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from .errors import DataError, ModelError, SettingsError
from .models import EMBEDDED_NAME, TARGET_MARKER, load_causal_lm, resolve_device, resolve_spec
from .progress import Progress, noop

METHODS = ("lora", "full")
ADAPTER_DTYPES = ("fp32", "fp16", "bf16")
DEFAULT_LR = {"lora": 1e-3, "full": 1e-4}
LLAMA_LORA_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
TRAINING_LOG = "training_log.json"
MAX_GRAD_NORM = 1.0


# --------------------------------------------------------------------------- helpers


def texts_sha256(texts: Sequence[str]) -> str:
    """SHA-256 of a list of texts (each UTF-8 encoded, joined by NUL characters), order-sensitive."""
    h = hashlib.sha256()
    for i, t in enumerate(texts):
        if i:
            h.update(b"\0")
        h.update(t.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def file_sha256(path: str | Path) -> str:
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


def _windows(ids: list[int], prefix: int | None, max_length: int) -> list[list[int]]:
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


def _batches(seqs: list[list[int]], batch_size: int, pad_id: int):
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


def _n_targets(mask) -> int:
    """Number of predicted tokens in a batch: real tokens minus the first of each row."""
    return int((mask[:, 1:] * mask[:, :-1]).sum())


def _eval_loss(model, seqs: list[list[int]], batch_size: int, pad_id: int, device: str) -> float:
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
        for ids, mask, labels in _batches(ordered, batch_size, pad_id):
            k = _n_targets(mask)
            if k == 0:
                continue
            out = model(input_ids=ids.to(device), attention_mask=mask.to(device), labels=labels.to(device))
            total += float(out.loss) * k
            n += k
    if was_training:
        model.train()
    return total / n if n else float("nan")


def _lora_targets(model) -> list[str] | str:
    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    found = [m for m in LLAMA_LORA_MODULES if m in names]
    return found if {"q_proj", "v_proj"} <= set(found) else "all-linear"


def _prepare_out(out_dir: Path, overwrite: bool, marker: str = TARGET_MARKER, kind: str = "target") -> None:
    """Refuse an output folder that is a file, or non-empty without ``overwrite``, or non-empty
    and not a ``kind`` folder (no ``marker`` file in it) even with ``overwrite``."""
    from .outputs import OUTPUT_MARKER, overwrite_refusal

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


def _versions() -> dict:
    import peft
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__,
            "python": sys.version.split()[0]}


# --------------------------------------------------------------------------- main entry


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
    LoRA adapter is saved in (fp16 halves the file; training is always fp32). ``heldout_texts`` (optional, e.g. the non-members) are never trained on:
    their loss after each epoch shows the generalisation gap. ``progress(message, fraction)``
    is called after every step. ``command`` and ``data_files`` (``{role: path}``) are recorded
    in ``training_log.json``.

    Returns the training log (also written to ``out_dir/training_log.json``): ``history`` (one
    ``{"epoch", "train_loss", "heldout_loss", "seconds"}`` per epoch), ``final`` (``train_loss``:
    the finished model's loss on the members; ``heldout_loss``), ``out_dir``, settings and hashes.
    Raises ``DataError`` (no member text, a held-out text that is also a member) or
    ``SettingsError`` (bad method/epochs/lr/…, a non-empty ``out_dir``).
    """
    import torch

    progress = progress or noop
    if method not in METHODS:
        raise SettingsError(f"method must be one of {', '.join(METHODS)}, not {method!r}.")
    if not isinstance(epochs, int) or epochs < 1:
        raise SettingsError(f"epochs must be a whole number >= 1, got {epochs!r}.")
    lr = DEFAULT_LR[method] if lr is None else float(lr)
    if not (lr > 0 and math.isfinite(lr)):
        raise SettingsError(f"the learning rate must be a positive number, got {lr!r}.")
    if max_length < 2:
        raise SettingsError(f"max_length must be at least 2 tokens, got {max_length}.")
    if batch_size < 1:
        raise SettingsError(f"batch_size must be at least 1, got {batch_size}.")
    if adapter_dtype not in ADAPTER_DTYPES:
        raise SettingsError(f"adapter_dtype must be one of {', '.join(ADAPTER_DTYPES)}, not {adapter_dtype!r}.")
    if method == "lora" and lora_r < 1:
        raise SettingsError(f"the LoRA rank must be at least 1, got {lora_r}.")
    device = resolve_device(device)  # a device this machine lacks: SettingsError before anything is read
    members = [str(t).strip() for t in member_texts if str(t).strip()]
    if not members:
        raise DataError("no member text to train on.")
    heldout = [str(t).strip() for t in (heldout_texts or []) if str(t).strip()]
    both = set(members) & set(heldout)
    if both:
        raise DataError(f"{len(both)} held-out text{'s are' if len(both) != 1 else ' is'} also in the member set; "
                        "held-out texts must not be trained on.")
    out_dir = Path(out_dir).expanduser()
    _prepare_out(out_dir, overwrite)
    base_rec = base_record(base)

    # ---- model
    from .stats import StatsSettings, resolve_prefix

    progress(f"loading base model {base_rec}", 0.0)
    lm = load_causal_lm(base, dtype="fp32", device=device, reuse=False)  # a private copy: we modify it
    dev = lm.device
    tok = lm.tokenizer
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
    max_length = min(int(max_length), int(lm.max_context))
    # trained exactly as it will be scored (stats.resolve_prefix under the default "auto"): with what the base
    # model's tokenizer puts in front of a text itself, i.e. nothing for GPT-2-style tokenizers (SmolLM2),
    # a BOS for Llama-style ones; recorded in mia_target.json, which the scorer reads back
    prefix = resolve_prefix(lm, StatsSettings())

    def encode(texts: list[str]) -> list[list[int]]:
        seqs = []
        for t in texts:
            ids = tok(t, add_special_tokens=False, verbose=False)["input_ids"]
            seqs.extend(_windows(ids, prefix, max_length))
        return seqs

    train_seqs = encode(members)
    held_seqs = encode(heldout)
    if not train_seqs:
        raise DataError("the member texts are too short to train on (each needs at least one token).")

    torch.manual_seed(seed)
    model = lm.model
    lora_info = None
    if method == "lora":
        from peft import LoraConfig, get_peft_model

        from .models.hub import model_load_lock

        targets = list(lora_modules) if lora_modules else _lora_targets(model)
        alpha = float(lora_alpha) if lora_alpha is not None else 2.0 * lora_r
        cfg = LoraConfig(r=int(lora_r), lora_alpha=alpha, lora_dropout=0.0, target_modules=targets,
                         bias="none", task_type="CAUSAL_LM")
        try:
            with warnings.catch_warnings():  # peft calls deprecated transformers helpers
                warnings.simplefilter("ignore", FutureWarning)
                with model_load_lock():  # builds modules: never while another thread loads a model
                    model = get_peft_model(model, cfg)
        except ValueError as e:
            raise ModelError(f"cannot put LoRA adapters on {base_rec}: {str(e).splitlines()[0]}") from e
        lora_info = {"r": int(lora_r), "alpha": alpha, "dropout": 0.0, "saved_dtype": adapter_dtype,
                     "target_modules": targets if isinstance(targets, str) else list(targets)}
    params = [p for p in model.parameters() if p.requires_grad]
    if method == "full":
        for p in model.parameters():
            p.requires_grad_(True)
        params = list(model.parameters())
    n_trainable = sum(p.numel() for p in params)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)

    steps_per_epoch = math.ceil(len(train_seqs) / batch_size)
    total_work = epochs * steps_per_epoch
    done = 0
    log_epochs = []
    t_start = time.time()
    model.train()
    for ep in range(1, epochs + 1):
        t0 = time.time()
        order = torch.randperm(len(train_seqs), generator=gen).tolist()
        seqs = [train_seqs[i] for i in order]
        tot, ntok = 0.0, 0
        for step, (ids, mask, labels) in enumerate(_batches(seqs, batch_size, pad_id), 1):
            k = _n_targets(mask)
            out = model(input_ids=ids.to(dev), attention_mask=mask.to(dev), labels=labels.to(dev))
            loss = out.loss
            value = float(loss.detach())
            if not math.isfinite(value):
                raise ModelError(f"training diverged (loss {value}) at epoch {ep}: lower the learning rate.")
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, MAX_GRAD_NORM)
            opt.step()
            opt.zero_grad(set_to_none=True)
            tot += value * k
            ntok += k
            done += 1
            progress(f"training: epoch {ep}/{epochs} step {step}/{steps_per_epoch} loss {tot / max(1, ntok):.3f}",
                     min(0.99, done / total_work))
        rec = {"epoch": ep, "train_loss": tot / max(1, ntok), "heldout_loss": None}
        if held_seqs:
            progress(f"training: epoch {ep}/{epochs}, held-out loss", min(0.99, done / total_work))
            rec["heldout_loss"] = _eval_loss(model, held_seqs, batch_size, pad_id, dev)
        rec["seconds"] = round(time.time() - t0, 2)
        log_epochs.append(rec)

    progress("final losses", min(0.99, done / total_work))
    final = {"train_loss": _eval_loss(model, train_seqs, batch_size, pad_id, dev),
             "heldout_loss": log_epochs[-1]["heldout_loss"] if held_seqs else None}
    model.eval()

    # ---- write the folder (in a temporary sibling, then moved into place)
    progress(f"saving to {out_dir}", 0.99)
    tmp = out_dir.with_name(f"{out_dir.name}.tmp-make-target-{os.getpid()}")  # one per process
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        if method == "lora":
            if adapter_dtype != "fp32":  # halves the file; loading casts back to the base's dtype
                tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[adapter_dtype]
                for p in params:
                    p.data = p.data.to(tdt)
            model.save_pretrained(str(tmp), safe_serialization=True)
            ac = tmp / "adapter_config.json"
            cfg = json.loads(ac.read_text())
            cfg["base_model_name_or_path"] = base_rec  # not the local cache path
            ac.write_text(json.dumps(cfg, indent=2, sort_keys=True))
            readme = tmp / "README.md"
            if readme.exists():  # peft's model-card template, empty of content
                readme.unlink()
        else:
            _save_full(model, tok, tmp)
        meta = {
            "base": base_rec,
            "method": method,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "n_members": len(members),
            "members_sha256": texts_sha256(members),
            "n_heldout": len(heldout),
            "heldout_sha256": texts_sha256(heldout) if heldout else None,
            "epochs": epochs,
            "lr": lr,
            "seed": seed,
            "prefix_token_id": prefix,
        }
        (tmp / TARGET_MARKER).write_text(json.dumps(meta, indent=2))
        log = {
            **meta,
            "max_length": max_length,
            "batch_size": batch_size,
            "optimizer": {"name": "AdamW", "weight_decay": 0.0, "max_grad_norm": MAX_GRAD_NORM,
                          "schedule": "constant"},
            "lora": lora_info,
            "n_trainable_params": int(n_trainable),
            "n_train_sequences": len(train_seqs),
            "n_train_tokens": int(sum(len(s) - 1 for s in train_seqs)),
            "n_heldout_tokens": int(sum(len(s) - 1 for s in held_seqs)),
            "prefix_token_id": prefix,
            "device": dev,
            "threads": torch.get_num_threads(),
            "history": log_epochs,
            "final": final,
            "seconds": round(time.time() - t_start, 1),
            "command": command,
            "data_files": data_files or {},
            "versions": _versions(),
        }
        (tmp / TRAINING_LOG).write_text(json.dumps(log, indent=2))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # one rename; a folder another run wrote meanwhile is kept (this run's target then stays in a
    # named sibling and SettingsError says where); with overwrite the old one is replaced only now
    from .outputs import publish

    publish(tmp, out_dir, overwrite=overwrite)
    progress(f"target written to {out_dir}", 1.0)
    log["out_dir"] = str(out_dir)
    return log


def _save_full(model, tok, folder: Path) -> None:
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


def read_log(target_dir: str | Path) -> dict | None:
    """The ``training_log.json`` of a target folder, or ``None`` when it has none."""
    p = Path(target_dir) / TRAINING_LOG
    if not p.exists():
        return None
    return json.loads(p.read_text())


# --------------------------------------------------------------------------- reference models (RMIA)

REFERENCES_INDEX = "references.json"  # the folder's record: which texts every reference trained on
REFERENCE_MEMBERS = "reference_members.json"  # in every reference folder: hashes of its training texts


def reference_splits(n: int, k: int, seed: int = 0) -> list[list[int]]:
    """Indices of the population texts each of ``k`` reference models trains on.

    Reference models come in pairs trained on complementary random halves (ML Privacy Meter's
    ``split_dataset_for_training``): every text is IN for exactly one model of each pair, so
    with an even ``k`` every population text has exactly ``k/2`` references that never saw it
    (RMIA estimates ``Pr(z)`` from those). An odd ``k`` ends with one random half.
    Seeded (``numpy.random.default_rng(seed)``); the indices of each half are sorted.
    """
    rng = np.random.default_rng(seed)
    out: list[list[int]] = []
    perm = None
    for i in range(k):
        if i % 2 == 0:
            perm = rng.permutation(n)
            out.append(sorted(int(j) for j in perm[: n // 2]))
        else:
            out.append(sorted(int(j) for j in perm[n // 2 :]))
    return out


def make_references(
    population_texts: Sequence[str],
    base: str | None = EMBEDDED_NAME,
    out_dir: str | Path = "references",
    k: int = 4,
    epochs: int = 1,
    seed: int = 0,
    progress: Progress | None = None,
    *,
    overwrite: bool = False,
    command: str | None = None,
    data_files: dict | None = None,
    **train_kwargs,
) -> dict:
    """Train ``k`` reference models for RMIA, each on a random half of ``population_texts``.

    Every reference is trained exactly like a ``make-target`` target (:func:`make_target`, same
    recipe and options in ``train_kwargs``: method, lr, max_length, batch_size, LoRA rank...)
    on its half (:func:`reference_splits`; the other half is its held-out set), with seed
    ``seed + i``, and written to ``out_dir/ref-<i>`` (a target folder any command loads), with
    ``reference_members.json`` (the SHA-256-based hashes of the texts it trained on, as
    ``mia_core.cache.text_hash`` computes them, and their indices). ``out_dir/references.json``
    lists them with the seconds each took. Cost: ``k`` fine-tunes on ``N/2`` texts each.

    Returns the record written to ``references.json``.
    """
    from .cache import text_hash

    progress = progress or noop
    if not isinstance(k, int) or k < 1:
        raise SettingsError(f"k (the number of reference models) must be a whole number >= 1, got {k!r}.")
    texts = list(dict.fromkeys(str(t).strip() for t in population_texts if str(t).strip()))
    if len(texts) < 2:
        raise DataError(f"the population needs at least 2 distinct texts to split in halves, got {len(texts)}.")
    out = Path(out_dir).expanduser()
    _prepare_out(out, overwrite, marker=REFERENCES_INDEX, kind="reference")
    splits = reference_splits(len(texts), k, seed)
    out.mkdir(parents=True, exist_ok=True)
    from .outputs import write_marker

    write_marker(out, kind="references")  # a partial folder (a stopped run) stays recognisably ours
    (out / REFERENCES_INDEX).unlink(missing_ok=True)  # written again at the end: a partial folder has none
    t_start = time.time()
    refs = []
    for i, idx in enumerate(splits):
        members = [texts[j] for j in idx]
        chosen = set(idx)
        heldout = [t for j, t in enumerate(texts) if j not in chosen]

        def sub(msg: str, frac: float, i=i) -> None:
            progress(f"reference {i + 1}/{k}: {msg}", (i + min(frac, 1.0)) / k)

        t0 = time.time()
        log = make_target(members, base=base, out_dir=out / f"ref-{i}", epochs=epochs, seed=seed + i,
                          heldout_texts=heldout, progress=sub, overwrite=overwrite, command=command,
                          data_files=data_files, **train_kwargs)
        (out / f"ref-{i}" / REFERENCE_MEMBERS).write_text(json.dumps(
            {"text_hashes": [text_hash(t) for t in members], "indices": idx, "n_population": len(texts)}))
        refs.append({"dir": f"ref-{i}", "seed": seed + i, "n_members": len(members), "seconds": round(time.time() - t0, 1),
                     "final": log["final"], "n_trainable_params": log["n_trainable_params"]})
    seconds = time.time() - t_start
    record = {
        "k": k,
        "base": base_record(base),
        "n_population": len(texts),
        "population_sha256": texts_sha256(texts),
        "split": "complementary random halves in pairs (ML Privacy Meter), numpy default_rng(seed)",
        "seed": seed,
        "epochs": epochs,
        "train_options": {kk: v for kk, v in train_kwargs.items() if isinstance(v, (int, float, str, type(None)))},
        "references": refs,
        "seconds": round(seconds, 1),
        "seconds_per_reference": round(seconds / k, 1),
        "threads": _threads(),
        "command": command,
        "data_files": data_files or {},
    }
    (out / REFERENCES_INDEX).write_text(json.dumps(record, indent=2))
    progress(f"{k} reference models written to {out}", 1.0)
    record["out_dir"] = str(out)
    return record


def _threads() -> int:
    import torch

    return torch.get_num_threads()
