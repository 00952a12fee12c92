"""Texts that share a long token prefix (a text's one-word neighbours) are scored from where they
differ, against their base's keys/values (``mia_core.stats.families._run_families``): the numbers must be
those of a raw forward pass of each whole text, on a real (tiny, random) Llama and GPT-2 with the
embedded SmolLM2 tokenizer, and a model whose cache cannot be reused must fall back to the plain
pass without changing a number."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers import ALWAYS, save_tiny_llama
from tiny_lm import paragraphs

from mia_core import stats as S
from mia_core.stats import compute as SC
from mia_core.stats import families as SF
from mia_core.stats import windows as SW
from mia_core.models import converted_gguf_dir, embedded_gguf_path, load_causal_lm


BASE = paragraphs()[0][:400]


def variants(text: str) -> list[str]:
    """The text, one-word substitutions at its start, middle and end, a cut copy, and strangers."""
    w = text.split(" ")
    out = [text]
    for i, new in ((0, "Yesterday"), (2, "house"), (len(w) // 2, "silver"), (len(w) // 2 + 3, "quickly"),
                   (len(w) - 2, "river"), (len(w) - 1, "end.")):
        out.append(" ".join(w[:i] + [new] + w[i + 1:]))
    out.append(" ".join(w[: len(w) // 2]))  # a strict prefix of the text
    out += [p[:300] for p in paragraphs()[1:3]]  # unrelated texts
    return out


def save_tiny_gpt2(out) -> str:
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tok = AutoTokenizer.from_pretrained(str(converted_gguf_dir(embedded_gguf_path())), local_files_only=True)
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2, n_positions=256,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    GPT2LMHeadModel(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def tiny(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"tiny-{request.param}")
    return load_causal_lm(save_tiny_llama(d / "m") if request.param == "llama" else save_tiny_gpt2(d / "m"))


def raw_logprobs(lm, text: str) -> np.ndarray:
    ids = [S.prefix_token_id(lm.tokenizer)] + list(S.tokenize(lm, text))
    with torch.inference_mode():
        lp = torch.log_softmax(lm.model(input_ids=torch.tensor([ids])).logits[0].float(), -1)
    return lp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].numpy()


def spy(monkeypatch):
    rows = []
    real = SF._forward_rows

    def counted(lm, batch, *a):
        rows.extend(m.text for m, _, _ in batch)
        return real(lm, batch, *a)

    monkeypatch.setattr(SF, "_forward_rows", counted)
    return rows


@pytest.mark.slow
def test_neighbours_scored_from_where_they_differ_equal_a_raw_pass(tiny, monkeypatch):
    texts = variants(BASE)
    fams = SF._families([SW._Job(i, t, S.tokenize(tiny, t), S.prefix_token_id(tiny.tokenizer), 256, tiny.vocab_size,
                               False) for i, t in enumerate(texts)])
    assert len(fams) == 1  # the strangers and the first-word substitution share too little
    base, members = fams[0]
    assert base.text == texts[0] and len(members) == 6
    rows = spy(monkeypatch)
    got = S.compute_stats(tiny, texts, ALWAYS, use_cache=False)
    assert sorted(rows) == sorted(m.text for m, _ in members)  # they really ran from the cache
    for t, g in zip(texts, got):
        np.testing.assert_allclose(g.logprob, raw_logprobs(tiny, t), atol=1e-4)
    monkeypatch.setattr(SC, "_run_families", lambda *a, **k: [])
    plain = S.compute_stats(tiny, texts, ALWAYS, use_cache=False)
    for g, p in zip(got, plain):
        for f in ("logprob", "max_logprob", "mu", "entropy"):
            np.testing.assert_allclose(getattr(g, f), getattr(p, f), atol=1e-5)
        np.testing.assert_allclose(g.sigma, p.sigma, atol=1e-3)  # sqrt(E[lp^2] - mu^2) cancels in float32
        np.testing.assert_array_equal(g.top_id, p.top_id)


def test_a_cache_that_does_not_reproduce_the_plain_pass_falls_back(tiny, monkeypatch):
    texts = variants(BASE)
    monkeypatch.setattr(SF, "_matches_plain", lambda *a: False)
    ran = []
    real = SC._forward

    def plain_forward(lm, items):
        ran.extend(j.text for j, _ in items)
        return real(lm, items)

    monkeypatch.setattr(SC, "_forward", plain_forward)
    got = S.compute_stats(tiny, texts, ALWAYS, use_cache=False)
    # every member went the plain way; the family's base ran before the check (a plain pass itself)
    assert sorted(ran) == sorted(t for t in texts if t != BASE)
    for t, g in zip(texts, got):
        np.testing.assert_allclose(g.logprob, raw_logprobs(tiny, t), atol=1e-4)


def test_the_key_value_cache_goes_by_the_name_the_installed_transformers_gives_it(tiny):
    """transformers 5.2x renamed a forward pass's ``past_key_values`` to ``cache`` (argument and output).
    The old name still works there, but warns in every run ("`past_key_values`/`cache_params` are
    deprecated") and goes in 5.40: the prefix pass must use the model's own name, so no such warning
    reaches a user, and keep its numbers (the test above)."""
    import logging
    import warnings

    logging.Logger.warning_once.cache_clear()  # transformers says each of its warnings once per process
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            said.append(record.getMessage())

    lg, keep = logging.getLogger("transformers"), Keep()
    level = lg.level
    lg.addHandler(keep)
    lg.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rows = []
            real = SF._forward_rows
            SF._forward_rows = lambda lm, batch, *a: rows.extend(batch) or real(lm, batch, *a)
            try:
                S.compute_stats(tiny, variants(BASE), ALWAYS, use_cache=False)
            finally:
                SF._forward_rows = real
    finally:
        lg.removeHandler(keep)
        lg.setLevel(level)
    assert rows, "the prefix path did not run"
    said += [str(w.message) for w in caught]
    assert not [m for m in said if "past_key_values" in m or "cache_params" in m], said
