"""ReCaLL (Xie et al. 2024) and DC-PDD (Zhang et al. 2024): the conditional statistics pass, the
token-frequency table and both scores against values computed by hand from a raw forward pass
of a real (tiny_lm, random) Llama with the embedded SmolLM2 tokenizer."""
from __future__ import annotations

import gzip

import numpy as np
import pytest
import torch

from helpers import ALWAYS, assert_one_error, mia
from tiny_lm import paragraphs

from mia_core import stats as S
from mia_core.stats import compute as SC
from mia_core.stats import token_frequency as T
from mia_core.attacks import REGISTRY
from mia_core.data import Dataset, texts_from_strings
from mia_core.errors import DataError, SettingsError
from mia_core.pipeline import RunConfig, run_attacks


P = paragraphs()
MEM, NON = P[:3], P[3:6]
POP = [p[:120] for p in P[6:10]]  # short shots: three of them and a text fit the tiny model's 256 tokens


def population(texts) -> Dataset:
    return Dataset(texts=list(texts), labels=np.zeros(len(texts), int), ids=[f"p{i}" for i in range(len(texts))])


def raw_logprobs(lm, ids: list[int]) -> np.ndarray:
    """log p(ids[t] | ids[:t]) for t = 1..len-1, from one plain forward pass."""
    with torch.inference_mode():
        logits = lm.model(input_ids=torch.tensor([ids])).logits[0].float()
    lp = torch.log_softmax(logits, -1)
    return lp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].numpy().astype(np.float64)


def text_logprobs(lm, text: str, condition: str = "") -> np.ndarray:
    """Log-probabilities of the text's tokens after [prefix token] + condition tokens."""
    bos = S.prefix_token_id(lm.tokenizer)
    cond = lm.tokenizer(condition, add_special_tokens=False).input_ids if condition else []
    ids = lm.tokenizer(text, add_special_tokens=False).input_ids
    return raw_logprobs(lm, [bos] + cond + ids)[len(cond):]


# ----------------------------------------------------------------------------- conditional pass
def test_conditional_pass_equals_a_raw_forward_pass(tiny_lm, monkeypatch):
    cond = " ".join(POP[:2])
    n_cond = len(S.tokenize(tiny_lm, cond))
    assert all(1 + n_cond + len(S.tokenize(tiny_lm, t)) <= tiny_lm.max_context for t in MEM)  # the whole condition fits
    got = S.compute_stats(tiny_lm, MEM, S.StatsSettings(prefix="always", condition=cond), use_cache=False)
    plain = S.compute_stats(tiny_lm, MEM, ALWAYS, use_cache=False)
    for text, g, u in zip(MEM, got, plain):
        assert g.n_tokens == u.n_tokens and g.n_predicted == g.n_tokens
        np.testing.assert_allclose(g.logprob, text_logprobs(tiny_lm, text, cond), atol=1e-4)
        np.testing.assert_allclose(u.logprob, text_logprobs(tiny_lm, text), atol=1e-4)
        assert not np.allclose(g.logprob, u.logprob, atol=1e-3)  # the condition really conditions
    # these texts were scored against the condition's key/value cache: the same as the full sequences
    monkeypatch.setattr(SC, "_run_conditioned", lambda *a, **k: [])
    full = S.compute_stats(tiny_lm, MEM, S.StatsSettings(prefix="always", condition=cond), use_cache=False)
    for g, h in zip(got, full):
        for f in ("logprob", "max_logprob", "mu"):
            np.testing.assert_allclose(getattr(g, f), getattr(h, f), atol=1e-5)
        # sigma = sqrt(E[lp^2] - mu^2) cancels in float32 (lp ~ -11 for this untrained model): rounding only
        np.testing.assert_allclose(g.sigma, h.sigma, atol=1e-3)
        np.testing.assert_array_equal(g.top_id, h.top_id)
    # a different condition is a different cache entry; no condition is the unconditional key
    base = S.cache_settings(tiny_lm, S.StatsSettings(prefix="always"))
    assert "condition" not in base and base == S.cache_settings(tiny_lm, S.StatsSettings(prefix="always", condition=""))
    assert S.cache_settings(tiny_lm, S.StatsSettings(prefix="always", condition="a")) != S.cache_settings(tiny_lm, S.StatsSettings(prefix="always", condition="b"))


def test_a_long_condition_is_cut_from_the_left(tiny_lm):
    C = 64
    cond = " ".join(POP)  # several hundred tokens: far more than fits
    n_cond = len(S.tokenize(tiny_lm, cond))
    short, long = "The sea was calm that night.", " ".join(P[20:23])
    n_short, n_long = len(S.tokenize(tiny_lm, short)), len(S.tokenize(tiny_lm, long))
    assert n_long > C and n_short + 1 < C < n_cond
    a, b = S.compute_stats(tiny_lm, [short, long], S.StatsSettings(prefix="always", context=C, condition=cond), use_cache=False)
    bos = S.prefix_token_id(tiny_lm.tokenizer)
    cond_ids = tiny_lm.tokenizer(cond, add_special_tokens=False).input_ids
    # a text that fits: the condition fills the rest of the one window
    k = S.kept_condition_tokens(n_cond, n_short, C)
    assert k == C - 1 - n_short
    ids = tiny_lm.tokenizer(short, add_special_tokens=False).input_ids
    np.testing.assert_allclose(a.logprob, raw_logprobs(tiny_lm, [bos] + cond_ids[-k:] + ids)[k:], atol=1e-4)
    # a text longer than a window: half a window of condition, then windows as usual
    k = S.kept_condition_tokens(n_cond, n_long, C)
    assert k == (C - 1) // 2
    ids = tiny_lm.tokenizer(long, add_special_tokens=False).input_ids
    first = C - 1 - k  # text tokens in the first window
    np.testing.assert_allclose(b.logprob[:first], raw_logprobs(tiny_lm, [bos] + cond_ids[-k:] + ids[:first])[k:], atol=1e-4)
    # the second window starts at the last token of the first (stride C-1) without the condition
    np.testing.assert_allclose(b.logprob[first:first + C - 1], raw_logprobs(tiny_lm, ids[first - 1:first - 1 + C]), atol=1e-4)
    assert b.n_predicted == n_long


def test_kept_condition_tokens_rule():
    assert S.kept_condition_tokens(10, 5, 100) == 10  # all fits
    assert S.kept_condition_tokens(100, 30, 64) == 33  # the room the text leaves: 64 - 1 - 30
    assert S.kept_condition_tokens(100, 30, 64, prefix=False) == 34
    assert S.kept_condition_tokens(100, 63, 64) == 31  # text fills the window: half a window
    assert S.kept_condition_tokens(100, 500, 64) == 31
    assert S.kept_condition_tokens(0, 5, 64) == 0 and S.kept_condition_tokens(5, 0, 64) == 0


# ----------------------------------------------------------------------------- ReCaLL
def test_recall_scores_equal_hand_computed_values(tiny_lm):
    n_shots = 3
    res = run_attacks(texts_from_strings(MEM, NON), tiny_lm, population=population(POP),
                      config=RunConfig(stats=ALWAYS, attacks=["loss", "recall"], params={"recall": {"n_shots": n_shots}},
                                       use_cache=False, n_bootstrap=0, blind=False))
    prefix = "".join(POP[:n_shots])  # the official code joins the shots with ""
    assert all(1 + len(S.tokenize(tiny_lm, prefix)) + len(S.tokenize(tiny_lm, t)) <= tiny_lm.max_context for t in MEM + NON)
    for text, got in zip(MEM + NON, res.scores["recall"]):
        ll = text_logprobs(tiny_lm, text)[1:].mean()  # tokens 2..n, as the papers score
        ll_cond = text_logprobs(tiny_lm, text, prefix)[1:].mean()
        assert got == pytest.approx(ll_cond / ll, abs=1e-4)
    assert res.extra["recall"]["n_shots"] == n_shots and res.extra["recall"]["source"] == "population"
    # ReCaLL is not scored on the population: its texts are the prefix
    assert "recall" not in res.population["attacks"] and "loss" in res.population["attacks"]


def test_recall_shots_drawn_at_random_as_the_official_code():
    """shots=random: n_shots known non-members drawn with random.Random(seed) (issue 28 item 7)."""
    import random

    from mia_core.attacks import recall

    pop = population(POP)
    first, src = recall.prefix_texts({"n_shots": 3}, pop)
    assert first == POP[:3] and src == "population"
    drawn, src = recall.prefix_texts({"n_shots": 3, "shots": "random", "seed": 5}, pop)
    assert drawn == random.Random(5).sample(POP, 3) and drawn != POP[:3] and "random, seed 5" in src
    assert recall.prefix_texts({"n_shots": 3, "shots": "random", "seed": 6}, pop)[0] != drawn
    with pytest.raises(SettingsError, match="shots"):
        recall.prefix_texts({"n_shots": 3, "shots": "last"}, pop)


def test_recall_prefix_file_and_its_checks(tiny_lm, tmp_path, monkeypatch):
    f = tmp_path / "prefix.txt"
    f.write_text("\n".join(POP[:2]) + "\n", encoding="utf-8")
    cfg = RunConfig(stats=ALWAYS, attacks=["recall"], params={"recall": {"prefix": str(f), "separator": " "}},
                    use_cache=False, n_bootstrap=0, blind=False)
    res = run_attacks(texts_from_strings(MEM[:2], NON[:2]), tiny_lm, config=cfg)  # no population needed
    text = MEM[0]
    want = text_logprobs(tiny_lm, text, " ".join(POP[:2]))[1:].mean() / text_logprobs(tiny_lm, text)[1:].mean()
    assert res.scores["recall"][0] == pytest.approx(want, abs=1e-4)
    # a prefix text that is audited is refused, before the conditional pass
    f.write_text(MEM[0] + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="also audited"):
        run_attacks(texts_from_strings(MEM[:2], NON[:2]), tiny_lm, config=cfg)
    # neither a population nor a prefix file: refused before any model pass
    calls = {"n": 0}
    real = SC._forward
    monkeypatch.setattr(SC, "_forward", lambda *a, **k: (calls.__setitem__("n", calls["n"] + 1), real(*a, **k))[1])
    for params, err, needle in (({}, SettingsError, "population"),
                                ({"prefix": str(tmp_path / "missing.txt")}, DataError, "not found"),
                                ({"n_shots": 0}, SettingsError, "n_shots")):
        with pytest.raises(err, match=needle) as e:
            run_attacks(texts_from_strings(MEM[:2], NON[:2]), tiny_lm,
                        config=RunConfig(stats=ALWAYS, attacks=["recall"], params={"recall": params}, use_cache=False, blind=False))
        assert "\n" not in str(e.value)
    assert calls["n"] == 0


# ----------------------------------------------------------------------------- Con-ReCall
def test_con_recall_scores_equal_hand_computed_values(tiny_lm, tmp_path):
    """(LL(x | P_non) - gamma LL(x | P_mem)) / LL(x) per text (Wang et al. 2024 §3) against raw forward passes; the
    non-member pass is ReCaLL's, so gamma = 0 is ReCaLL's score exactly."""
    n, gamma = 2, 0.7
    known = [p[:120] for p in P[12:14]]  # known members (a file): neither audited nor in the population
    f = tmp_path / "members.txt"
    f.write_text("\n".join(known) + "\n", encoding="utf-8")
    params = {"recall": {"n_shots": n}, "con_recall": {"n_shots": n, "member_prefix": str(f), "gamma": gamma}}
    res = run_attacks(texts_from_strings(MEM, NON), tiny_lm, population=population(POP),
                      config=RunConfig(stats=ALWAYS, attacks=["recall", "con_recall"], params=params, use_cache=False,
                                       n_bootstrap=0, blind=False))
    for text, got in zip(MEM + NON, res.scores["con_recall"]):
        ll = text_logprobs(tiny_lm, text)[1:].mean()
        ll_non = text_logprobs(tiny_lm, text, "".join(POP[:n]))[1:].mean()
        ll_mem = text_logprobs(tiny_lm, text, "".join(known))[1:].mean()
        assert got == pytest.approx((ll_non - gamma * ll_mem) / ll, abs=1e-4)
    assert res.extra["con_recall"]["member"]["source"] == str(f) and res.extra["con_recall"]["non_member"]["n_shots"] == n
    params["con_recall"]["gamma"] = 0
    zero = run_attacks(texts_from_strings(MEM, NON), tiny_lm, population=population(POP),
                       config=RunConfig(stats=ALWAYS, attacks=["recall", "con_recall"], params=params, use_cache=False,
                                        n_bootstrap=0, blind=False))
    np.testing.assert_allclose(zero.scores["con_recall"], zero.scores["recall"], atol=1e-12)


def test_con_recall_member_prefix_from_the_training_part_and_its_checks(tiny_lm, tmp_path, monkeypatch):
    texts = texts_from_strings(MEM + [p[:150] for p in P[20:23]], NON + [p[:150] for p in P[23:26]])
    res = run_attacks(texts, tiny_lm, population=population(POP),
                      config=RunConfig(stats=ALWAYS, attacks=["con_recall"], params={"con_recall": {"n_shots": 2}},
                                       split=0.5, split_seed=0, use_cache=False, n_bootstrap=0, blind=False))
    assert res.extra["con_recall"]["member"]["source"] == "labelled training part"
    train = res.scores["split"].to_numpy() == "train"
    members_in_train = [t for t, y, m in zip(texts.texts, texts.labels, train) if m and y == 1]
    assert np.isfinite(res.scores["con_recall"][~train]).all()
    i = int(np.flatnonzero(~train)[0])  # an evaluated text, by hand: the first two training members as the prefix
    text = texts.texts[i]
    ll, ll_non = text_logprobs(tiny_lm, text)[1:].mean(), text_logprobs(tiny_lm, text, "".join(POP[:2]))[1:].mean()
    ll_mem = text_logprobs(tiny_lm, text, "".join(members_in_train[:2]))[1:].mean()
    assert res.scores["con_recall"][i] == pytest.approx((ll_non - 0.5 * ll_mem) / ll, abs=1e-4)
    # no labels and no member file: one line before any model pass; a member prefix text that is evaluated: refused
    calls = {"n": 0}
    real = SC._forward
    monkeypatch.setattr(SC, "_forward", lambda *a, **k: (calls.__setitem__("n", calls["n"] + 1), real(*a, **k))[1])
    with pytest.raises(SettingsError, match="labelled") as e:
        run_attacks(texts_from_strings(MEM, NON), tiny_lm, population=population(POP),
                    config=RunConfig(stats=ALWAYS, attacks=["con_recall"], use_cache=False, blind=False))
    assert "\n" not in str(e.value) and calls["n"] == 0
    with pytest.raises(SettingsError, match="gamma"):
        run_attacks(texts_from_strings(MEM, NON), tiny_lm, population=population(POP),
                    config=RunConfig(stats=ALWAYS, attacks=["con_recall"], params={"con_recall": {"gamma": -1}},
                                     split=0.5, use_cache=False, blind=False))
    f = tmp_path / "members.txt"
    f.write_text(MEM[0] + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="also evaluated"):
        run_attacks(texts_from_strings(MEM, NON), tiny_lm, population=population(POP),
                    config=RunConfig(stats=ALWAYS, attacks=["con_recall"], params={"con_recall": {"member_prefix": str(f)}},
                                     use_cache=False, blind=False))


@pytest.mark.slow
def test_cli_recall_without_prefix_is_one_line_before_loading_the_model(tmp_path):
    m, n = tmp_path / "m.txt", tmp_path / "n.txt"
    m.write_text("\n".join(MEM) + "\n")
    n.write_text("\n".join(NON) + "\n")
    # the model path does not exist: an error about the prefix proves the check came first
    r = mia("run", "--model", tmp_path / "no-such-model", "--members", m, "--nonmembers", n,
                "--attacks", "recall", "--out", tmp_path / "out")
    assert_one_error(r.returncode, r.stderr, "population")


# ----------------------------------------------------------------------------- DC-PDD
def test_frequency_table_by_hand(tiny_lm, tmp_path):
    docs = ["the cat sat on the mat.", "The dog, the cat and the bird.\nA second line here."]
    folder = tmp_path / "corpus"
    folder.mkdir()
    for i, d in enumerate(docs):
        (folder / f"d{i}.txt").write_text(d, encoding="utf-8")
    table = T.frequency_table(tiny_lm.tokenizer, folder, use_cache=False)
    V = len(tiny_lm.tokenizer)
    want = np.zeros(V, dtype=np.int64)
    for d in docs:
        for t in tiny_lm.tokenizer(d, add_special_tokens=False).input_ids:
            want[t] += 1
    np.testing.assert_array_equal(table.counts, want)
    assert table.n_documents == 2 and table.n_tokens == want.sum()
    np.testing.assert_allclose(table.frequencies, (want + 1) / (want.sum() + V))  # Laplace (the official code)
    # cached by (tokenizer, corpus text): the same counts from the cache, another corpus another entry
    cached = T.frequency_table(tiny_lm.tokenizer, folder)
    again = T.frequency_table(tiny_lm.tokenizer, folder)
    assert again.cached and again.corpus_hash == cached.corpus_hash
    np.testing.assert_array_equal(again.counts, want)
    (folder / "d2.txt").write_text("more text", encoding="utf-8")
    assert T.frequency_table(tiny_lm.tokenizer, folder).corpus_hash != cached.corpus_hash
    # a long document is counted in pieces cut at line ends: every token still counted
    long_doc = "\n".join(P[:200])
    assert len(long_doc) > 2 * T.CHUNK_CHARS
    pieces = T._chunks(long_doc)
    assert "".join(pieces) == long_doc and len(pieces) > 2


def test_dc_pdd_scores_equal_hand_computed_values(tiny_lm, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(P[40:60]) + "\n", encoding="utf-8")
    table = T.frequency_table(tiny_lm.tokenizer, corpus, use_cache=False)
    f = table.frequencies
    texts = MEM + NON
    for a, first_occurrence in ((0.01, True), (2e-4, True), (0.01, False)):
        res = run_attacks(texts_from_strings(MEM, NON), tiny_lm,
                          config=RunConfig(stats=ALWAYS, attacks=["dc_pdd"], use_cache=False, n_bootstrap=0, blind=False,
                                           params={"dc_pdd": {"corpus": str(corpus), "a": a,
                                                              "first_occurrence": first_occurrence}}))
        clipped = 0
        for text, got in zip(texts, res.scores["dc_pdd"]):
            ids = tiny_lm.tokenizer(text, add_special_tokens=False).input_ids[1:]  # tokens 2..n
            p = np.exp(text_logprobs(tiny_lm, text)[1:])
            seen, alphas = set(), []
            for t, pt in zip(ids, p):
                if first_occurrence and t in seen:
                    continue
                seen.add(t)
                alpha = pt * np.log(1 / f[t])
                clipped += alpha > a
                alphas.append(min(alpha, a))
            assert got == pytest.approx(np.mean(alphas), rel=1e-4, abs=1e-9)
        assert (clipped > 0) == (a < 1e-3)  # the small bound really clips, the paper's does not here
    assert res.extra["dc_pdd"]["corpus"] == str(corpus)
    # a corpus this small says so in the run's notes, with how much of the audited texts it covers (issue 28)
    # the note names the parameter, not one front end's flag (issue 53 item 6: the page's user cannot pass --param)
    assert any(r.startswith("dc_pdd: its frequency corpus") and "corpus parameter (dc_pdd.corpus: a file" in r
               and "--param" not in r for r in res.report), res.report
    assert 0.0 <= res.extra["dc_pdd"]["audited_tokens_unseen_in_corpus"] <= 1.0


def test_bundled_corpus_is_gutenberg_and_not_the_demo():
    from mia_core.targets.demo import demo_paths

    files = sorted(T.BUNDLED.glob("*.txt.gz"))
    assert len(files) == 8 and all(p.name.startswith("pg") for p in files)
    docs = T.bundled_documents()
    assert sum(len(d) for d in docs) > 2_000_000
    assert not any("Project Gutenberg" in d[-3000:] or "*** START OF" in d for d in docs)  # boilerplate stripped
    body = "\n".join(docs)
    for key in ("members", "nonmembers", "population"):
        for line in demo_paths()[key].read_text(encoding="utf-8").splitlines():
            assert line[:60] not in body
    assert gzip.decompress(files[0].read_bytes())  # really gzip


def test_run_attacks_end_to_end_both_attacks_finite(tiny_lm):
    res = run_attacks(texts_from_strings(MEM, NON), tiny_lm, population=population(POP),
                      config=RunConfig(stats=ALWAYS, attacks=["loss", "recall", "dc_pdd"], n_bootstrap=20, blind=False))
    for name in ("recall", "dc_pdd"):
        assert np.isfinite(res.scores[name]).all(), name
        assert 0.0 <= res.metrics[name]["auc"] <= 1.0
    assert res.extra["dc_pdd"]["corpus"] == "bundled" and res.extra["dc_pdd"]["documents"] == 8
    assert "dc_pdd" in res.population["attacks"]  # DC-PDD scores the population (threshold)
    assert REGISTRY["recall"].params["n_shots"] == 12 and REGISTRY["dc_pdd"].params["a"] == 0.01
