"""Neighbour generators, embeddings and one-word modifications.

* offline generator (the real embedded SmolLM2): neighbours differ from the text in exactly
  ``m`` words, the replaced words are whole words that keep their capitalisation, the same
  seed gives the same neighbours (recomputed without cache) and the disk cache round-trips;
* masked-LM generator (Mattern et al. 2023) with a tiny random BERT using the WordPiece
  tokenizer of the embedded sentence embedder: exactly ``m`` single-token words replaced,
  deterministic under a seed (embedding dropout included), original word never proposed;
* T5 span filling with a tiny random T5 and a Unigram tokenizer trained here: exactly ``m``
  spans filled (the constrained decoding makes every sample parse), deterministic;
* one-word modifications (SMIA §5.2): each variant differs from its text by exactly one word.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from mia_core.stats.embeddings import cosine, embed, embedded_embedder_path, neighbour_similarities
from mia_core.errors import SettingsError
from mia_core.pipeline.modified import VARIANTS, modify_texts
from mia_core.neighbours import (
    NeighbourSettings, apply_case, make_generator, parse_generator_spec, word_diff, words,
)

DATA = Path(__file__).resolve().parent / "data"
TEXTS = [
    "The old man walked slowly down the dusty road towards the quiet village, carrying a heavy basket of apples.",
    "She opened the letter with trembling hands and read it twice before she understood what her brother meant.",
    "Captain Ahab stood upon the deck, gazing at the endless grey ocean as the wind filled the ragged sails.",
]


def assert_m_words_replaced(text: str, nb, m: int) -> None:
    ws = words(text)
    diff = word_diff(text, nb.text)
    changed = sum(len(a) for op, a, b in diff)
    assert changed == m and all(op == "replace" for op, _, _ in diff), (text, nb.text, diff)
    assert len(nb.replaced) == m
    for i, old, new in nb.replaced:
        assert ws[i].text == old and new.lower() != old.lower()
        assert all(part.isalpha() for part in new.split())
        assert new[0].isupper() == old[0].isupper()
    # punctuation and everything around the words is kept
    strip = lambda s: "".join(ch for ch in s if not ch.isalpha())  # noqa: E731
    assert strip(nb.text).replace(" ", "") == strip(text).replace(" ", "")


# ------------------------------------------------------------------------------ offline
@pytest.fixture(scope="module")
def offline(neighbours_env):
    return make_generator(NeighbourSettings(generator="offline", n=3, m=1, seed=0))


def assert_deterministic_one_word_neighbours(gen, n: int):
    """``n`` distinct neighbours per text, the same twice without the cache, each one content
    word replaced by another content word (never the original). Returns the neighbours."""
    a = gen.generate(TEXTS, use_cache=False)
    b = gen.generate(TEXTS, use_cache=False)
    assert [[x.text for x in ns] for ns in a] == [[x.text for x in ns] for ns in b]
    for t, nbs in zip(TEXTS, a):
        assert len(nbs) == n and len({x.text for x in nbs}) == n
        for nb in nbs:
            assert_m_words_replaced(t, nb, 1)
            assert nb.replaced[0][2].lower() not in ("the", "a", "and", nb.replaced[0][1].lower())
    return a


@pytest.mark.slow
def test_offline_neighbours_replace_one_whole_word_deterministically(offline):
    a = assert_deterministic_one_word_neighbours(offline, 3)
    other = make_generator(NeighbourSettings(generator="offline", n=3, m=1, seed=1)).generate(TEXTS, use_cache=False)
    assert [[n.text for n in x] for x in other] != [[n.text for n in x] for x in a]


def test_offline_two_words_and_cache_round_trip(neighbours_env):
    gen = make_generator(NeighbourSettings(generator="offline", n=2, m=2, seed=0))
    first = gen.generate(TEXTS[:2])
    assert gen.last_cache.misses == 2
    for t, nbs in zip(TEXTS, first):
        assert nbs
        for n in nbs:
            assert_m_words_replaced(t, n, 2)
    again = gen.generate(TEXTS[:2])
    assert gen.last_cache.hits == 2
    assert again == first


def test_spec_parsing_and_case():
    assert parse_generator_spec("offline") == ("offline", None)
    assert parse_generator_spec("mlm:roberta-base") == ("masked-lm", "roberta-base")
    for bad in ("gpt", "masked-lm", "t5:"):
        with pytest.raises(SettingsError):
            parse_generator_spec(bad)
    with pytest.raises(SettingsError):
        NeighbourSettings(dropout=1.0).validate()
    assert apply_case("River", "stream") == "Stream"
    assert apply_case("RIVER", "stream") == "STREAM"
    assert apply_case("river", "London") is None


# ------------------------------------------------------------------------------ masked LM
@pytest.fixture(scope="module")
def tiny_bert(neighbours_env):
    import torch
    from transformers import BertConfig, BertForMaskedLM

    src = embedded_embedder_path()
    out = neighbours_env / "tiny-bert"
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128)
    BertForMaskedLM(cfg).save_pretrained(out)
    for f in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (src / f).exists():
            shutil.copy(src / f, out / f)
    return out


def test_masked_lm_neighbours_with_embedding_dropout(tiny_bert):
    for m in (1, 2):
        gen = make_generator(NeighbourSettings(generator=f"masked-lm:{tiny_bert}", n=4, m=m, dropout=0.7, seed=0))
        a = gen.generate(TEXTS, use_cache=False)
        assert [[n.text for n in x] for x in a] == [[n.text for n in x] for x in gen.generate(TEXTS, use_cache=False)]
        for t, nbs in zip(TEXTS, a):
            assert len(nbs) == 4
            for n in nbs:
                assert_m_words_replaced(t, n, m)
                assert n.score <= 0  # log of a renormalised probability
    # the dropout mask is part of the procedure: another seed or no dropout changes the proposals
    base = make_generator(NeighbourSettings(generator=f"masked-lm:{tiny_bert}", n=4, m=1, dropout=0.7, seed=0))
    nodrop = make_generator(NeighbourSettings(generator=f"masked-lm:{tiny_bert}", n=4, m=1, dropout=0.0, seed=0))
    sa = [n.score for x in base.generate(TEXTS, use_cache=False) for n in x]
    sb = [n.score for x in nodrop.generate(TEXTS, use_cache=False) for n in x]
    assert not np.allclose(sa, sb)


# ------------------------------------------------------------------------------ T5
@pytest.fixture(scope="module")
def tiny_t5(neighbours_env):
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    rows = [json.loads(line)["text"] for line in (DATA / "paragraphs.jsonl").read_text(encoding="utf-8").splitlines()]
    special = ["<pad>", "</s>", "<unk>"] + [f"<extra_id_{i}>" for i in range(8)]
    tk = Tokenizer(models.Unigram())
    tk.pre_tokenizer = pre_tokenizers.Metaspace()
    tk.decoder = decoders.Metaspace()
    tk.train_from_iterator(rows[:120], trainers.UnigramTrainer(vocab_size=400, special_tokens=special, unk_token="<unk>"))
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                                  additional_special_tokens=special[3:])
    torch.manual_seed(0)
    cfg = T5Config(vocab_size=len(tok), d_model=32, d_ff=64, d_kv=16, num_layers=1, num_decoder_layers=1, num_heads=2,
                   pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                   decoder_start_token_id=tok.pad_token_id)
    out = neighbours_env / "tiny-t5"
    T5ForConditionalGeneration(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def test_t5_span_filling_fills_exactly_m_spans(tiny_t5):
    for m in (1, 2):
        gen = make_generator(NeighbourSettings(generator=f"t5:{tiny_t5}", n=3, m=m, seed=0))
        a = gen.generate(TEXTS, use_cache=False)
        assert [[n.text for n in x] for x in a] == [[n.text for n in x] for x in gen.generate(TEXTS, use_cache=False)]
        for t, nbs in zip(TEXTS, a):
            assert len(nbs) == 3
            for n in nbs:
                assert len(n.replaced) == m
                diff = word_diff(t, n.text)
                assert 1 <= len(diff) <= m  # adjacent spans may merge into one difference
                for i, old, new in n.replaced:
                    assert words(t)[i].text == old and new.lower() != old.lower()
                    assert all(part.isalpha() for part in new.split())


# ------------------------------------------------------------------------------ embeddings
def test_embeddings_cached_and_similarities(neighbours_env):
    e1 = embed(TEXTS)
    e2 = embed(TEXTS)
    assert e1.shape == (3, 384) and np.array_equal(e1, e2)
    np.testing.assert_allclose(cosine(e1, e1), 1.0, atol=1e-5)
    sims = neighbour_similarities(TEXTS[:1], [[TEXTS[0], TEXTS[1]]])
    assert sims[0].shape == (2,) and sims[0][0] > 0.999 and sims[0][1] < 0.9


# ------------------------------------------------------------------------------ modifications
def test_each_modification_changes_exactly_one_word(offline):
    for variant in VARIANTS:
        mods = modify_texts(TEXTS, variant, seed=0, generator=offline)
        again = modify_texts(TEXTS, variant, seed=0, generator=offline)
        assert [m.text for m in mods] == [m.text for m in again]
        for t, m in zip(TEXTS, mods):
            assert m.ok and m.text != t
            diff = word_diff(t, m.text)
            assert len(diff) == 1, (variant, t, m.text)
            op, old, new = diff[0]
            if variant == "delete":
                assert op == "delete" and old == [m.word]
            else:
                assert op == "insert" and new == [m.word]
            assert len(words(m.text)) == len(words(t)) + (-1 if variant == "delete" else 1)
            assert "  " not in m.text


# ------------------------------------------------------------------ the embedded proposer
def test_embedded_proposer_is_the_default_and_independent_of_smollm2(neighbours_env, offline):
    from mia_core.attacks.neighbourhood import coupling_warning
    from mia_core.models import load_causal_lm
    from mia_core.neighbours import shares_base

    lm = load_causal_lm()
    gen = make_generator(NeighbourSettings(n=6, m=1, seed=0))
    assert gen.kind == "masked-lm" and gen.identity.startswith("embedded-proposer:")
    # the SmolLM2 proposer shares its base with a SmolLM2 target; the embedded masked LM does not
    assert shares_base(offline, lm) and not shares_base(gen, lm)
    assert "shares its base model with the target" in coupling_warning(NeighbourSettings(generator="offline"), lm)
    assert coupling_warning(NeighbourSettings(), lm) is None
    assert_deterministic_one_word_neighbours(gen, 6)


def test_embedded_proposer_predicts_masked_words_of_unseen_text(neighbours_env):
    """The shipped head is trained: on paragraphs it never saw (tests/data, not the bundled
    corpus) the masked word is among its 10 first guesses far more often than chance (1/30,522)."""
    import torch

    from mia_core.models import load_masked_lm

    mlm = load_masked_lm("embedded", device="cpu")
    tok, model = mlm.tokenizer, mlm.model
    rows = [json.loads(x)["text"] for x in (DATA / "paragraphs.jsonl").read_text().splitlines()][:8]
    hits = total = 0
    rng = np.random.default_rng(0)
    for text in rows:
        ids = tok(" ".join(text.split()[:60]), return_tensors="pt")["input_ids"]
        pos = rng.choice(np.arange(1, ids.shape[1] - 1), size=6, replace=False)
        gold = ids[0, pos].clone()
        ids[0, pos] = tok.mask_token_id
        with torch.inference_mode():
            top = model(input_ids=ids).logits[0, pos].topk(10, dim=-1).indices
        hits += int((top == gold[:, None]).any(-1).sum())
        total += len(pos)
    assert hits / total > 0.2, hits / total


def test_positions_in_one_proposer_pass_are_spaced():
    from mia_core.neighbours.masked_lm import MaskedLMGenerator

    gen = MaskedLMGenerator.__new__(MaskedLMGenerator)
    gen.spacing = 12
    rows = gen._pack([3, 5, 9, 15, 16, 30, 31, 44])
    assert sorted(j for r in rows for j in r) == [3, 5, 9, 15, 16, 30, 31, 44]
    assert all(b - a >= 12 for r in rows for a, b in zip(r, r[1:]))
    assert len(rows) < 8
    gen.spacing = 0  # the paper's procedure: one position per pass
    assert gen._pack([3, 5, 9]) == [[3], [5], [9]]
