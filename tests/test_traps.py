"""Copyright traps (issue 68): the sealed record, the coin flip, the exact test, the planting, the audit.

The test's validity is checked by simulation under several nulls (scores that depend on the bucket, ties, heavy
tails: the share of p < 0.05 inside the binomial 99.9 % interval around 5 %), the exact enumeration against brute
force, and end to end on real models: a random tiny Llama as generator and as a model that never saw the traps
(not shown), the memorised Llama on its members sealed as inserted traps (found; the audit contract covers that).
The power table and the placebo runs on the embedded model are ``benchmarks/traps.py``'s (docs/traps.md).
"""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

from helpers import mia
from mia_core.errors import DataError
from mia_core.traps.known import record_of
from mia_core.traps.permutation import exposure, holm, stratified_rank_test
from mia_core.traps.record import assign, canonical, read_record, seal_of, split_seeds

WORDS = ("the river ran past a mill where an old man kept bees and a young dog that barked at every cart on the "
         "road to town").split()


def _documents(folder: Path, n: int = 4, words: int = 300, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"doc{i}.txt").write_text(" ".join(rng.choice(WORDS, words)) + "\n", encoding="utf-8")
    return folder


def _traps(n: int, seed: int = 1) -> list[str]:
    rng = np.random.default_rng(seed)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    return [" ".join("".join(rng.choice(letters, 6)) for _ in range(14)) for _ in range(n)]


# ------------------------------------------------------------------------------------------------ the test
def _null_share(make_scores, n_sims=400, n_buckets=5, per=8, permutations=999, seed=0):
    rng = np.random.default_rng(seed)
    strata = np.repeat(np.arange(n_buckets), per)
    hits = 0
    for i in range(n_sims):
        group, _ = assign(strata.tolist(), (1,), int(rng.integers(2**31)))
        s = make_scores(rng, strata)
        p = stratified_rank_test(s, np.array(group) == "inserted", strata, permutations=permutations, seed=i)["p_value"]
        hits += p < 0.05
    return hits, n_sims


@pytest.mark.parametrize("null", ["bucket_shift", "ties", "heavy_tails"])
def test_the_false_positive_rate_is_at_most_alpha_under_each_null(null):
    makers = {"bucket_shift": lambda rng, st: rng.normal(size=len(st)) + 3 * st,  # buckets differ a lot
              "ties": lambda rng, st: rng.integers(0, 3, len(st)).astype(float),  # many ties
              "heavy_tails": lambda rng, st: rng.standard_cauchy(len(st)) * (1 + st)}
    hits, n = _null_share(makers[null])
    lo, hi = binom.ppf([0.0005, 0.9995], n, 0.05)
    assert hits <= hi, (null, hits, n)  # never above: the test is exact or conservative (ties)
    if null != "ties":
        assert lo <= hits, (null, hits, n)  # continuous scores: not conservative either


def test_exact_enumeration_equals_brute_force_and_a_shift_is_found():
    rng = np.random.default_rng(3)
    strata = np.array([0] * 6 + [1] * 4)
    treated = np.array([1, 1, 1, 0, 0, 0, 1, 1, 0, 0], bool)
    s = rng.normal(size=10) + treated
    got = stratified_rank_test(s, treated, strata, permutations=10_000)
    from scipy.stats import rankdata

    r = rankdata(s)
    obs = r[treated].sum()
    sums = [r[list(a)].sum() + r[[6 + j for j in b]].sum() for a in itertools.combinations(range(6), 3)
            for b in itertools.combinations(range(4), 2)]
    assert got["method"] == "exact" and got["n_assignments"] == 120
    assert got["p_value"] == pytest.approx(np.mean(np.array(sums) >= obs - 1e-9))
    big = np.r_[rng.normal(2, 1, 60), rng.normal(0, 1, 60)]
    t = np.r_[np.ones(60, bool), np.zeros(60, bool)]
    res = stratified_rank_test(big, t, np.tile(np.arange(6), 20), permutations=9_999, seed=1)
    assert res["method"] == "monte carlo" and res["p_value"] == pytest.approx(1 / 10_000)  # the floor


def test_the_floor_is_the_smallest_p_the_test_gives_and_is_said_when_alpha_is_out_of_reach():
    from mia_core.traps.permutation import floor_notes, p_floor

    strata, treated = np.zeros(8, int), np.array([1, 1, 1, 1, 0, 0, 0, 0], bool)
    assert p_floor(strata, treated, 100_000) == pytest.approx(1 / 70)  # C(8, 4) splits, enumerated
    best = stratified_rank_test(np.r_[np.ones(4), np.zeros(4)] + np.arange(8) * 1e-3, treated, strata)
    assert best["method"] == "exact" and best["p_value"] == pytest.approx(1 / 70)  # the floor is reached, not passed
    assert p_floor(np.tile(np.arange(6), 20), np.r_[np.ones(60, bool), np.zeros(60, bool)], 9_999) == 1 / 10_000
    group = np.array(["inserted"] * 4 + ["held_out"] * 4)
    floors, notes = floor_notes(strata, group, [1, 10, 1, 10, 0, 0, 0, 0], 100_000, 0.01)
    assert floors["overall"] == pytest.approx(1 / 70) and len(notes) == 1 and "never say" in notes[0], notes
    assert floors["levels"] == {"1": pytest.approx(2 / 15), "10": pytest.approx(2 / 15)}  # 2 x 1/C(6, 2), Holm
    # 100 inserted (50 at x1, 50 at x10) + 100 held out in ten buckets: far below alpha, nothing to say
    strata = np.repeat(np.arange(10), 20)
    group = np.tile(["inserted"] * 10 + ["held_out"] * 10, 10)
    copies = np.tile([1, 10] * 5 + [0] * 10, 10)
    floors, notes = floor_notes(strata, group, copies, 100_000, 0.01)
    assert floors["overall"] == pytest.approx(1 / 100_001) and notes == []
    # a level alone out of reach while the whole test is not: its own note
    floors, notes = floor_notes(np.zeros(12, int), ["inserted"] * 6 + ["held_out"] * 6, [1, 10] * 3 + [0] * 6, 999,
                                0.01)
    assert floors["overall"] == pytest.approx(1 / 924) and len(notes) == 1 and "x1, x10 cannot be shown" in notes[0]


def test_holm_and_exposure():
    assert holm({"1": 0.01, "10": 0.04, "3": 0.03}) == {"1": 0.03, "3": 0.06, "10": 0.06}
    ex = exposure([10.0, -10.0], np.arange(7.0))
    assert ex[0] == pytest.approx(3.0) and ex[1] == pytest.approx(0.0)


# ------------------------------------------------------------------------------------------------ the record
def test_the_split_is_a_stratified_half_with_levels_round_robin():
    buckets = [0] * 9 + [1] * 10 + [2] * 11
    group, copies = assign(buckets, (1, 3, 10), split_seeds(5)["split"])
    g, c, b = np.array(group), np.array(copies), np.array(buckets)
    for k in range(3):
        n_in = int((g[b == k] == "inserted").sum())
        assert abs(n_in - (b == k).sum() / 2) <= 0.5
        levels = c[(b == k) & (g == "inserted")]
        assert np.bincount(levels)[[1, 3, 10]].max() - np.bincount(levels)[[1, 3, 10]].min() <= 1
    assert (c[g == "held_out"] == 0).all()
    other, _ = assign(buckets, (1, 3, 10), split_seeds(6)["split"])
    assert other != group  # another seed, another split
    assert split_seeds(5) == split_seeds(5) and split_seeds(5)["sampling"] != split_seeds(5)["split"]


def test_an_edited_record_is_refused_in_one_line(tmp_path):
    seal = record_of(_traps(3), _traps(3, seed=2), tmp_path / "r")
    rec = read_record(tmp_path / "r")
    assert rec["seal"] == seal == seal_of(rec["sealed"]) and len(seal) == 64
    assert canonical({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()
    assert (tmp_path / "r" / "record.json").stat().st_mode & 0o077 == 0  # private
    raw = json.loads((tmp_path / "r" / "record.json").read_text())
    raw["sealed"]["traps"][0]["group"] = "held_out"  # one trap moved to the other side
    (tmp_path / "r" / "record.json").write_text(json.dumps(raw))
    with pytest.raises(DataError, match="do not match its seal") as e:
        read_record(tmp_path / "r")
    assert "\n" not in str(e.value)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "record.json").write_text("{}")
    with pytest.raises(DataError, match="not a traps record"):
        read_record(tmp_path / "x")


# ------------------------------------------------------------------------------------------------ planting
def test_insert_places_every_copy_and_no_held_out_trap(tmp_path):
    from mia_core.traps.insert import SPANS

    inserted, held = _traps(6), _traps(6, seed=9)
    record_of(inserted, held, tmp_path / "r", copies=3)
    docs = _documents(tmp_path / "docs")
    r = mia("traps", "insert", "--traps", tmp_path / "r", "--documents", docs, "--out", tmp_path / "out", "--seed", 1)
    assert r.returncode == 0, r.stderr
    assert "placed 18 copies of 6 traps in 4 documents" in r.stdout
    written = [p.read_text() for p in sorted((tmp_path / "out").glob("*.txt"))]
    assert len(written) == 4
    for t in inserted:
        assert sum(w.count(t) for w in written) == 3
        assert max(w.count(t) for w in written) == 1  # one copy per document, there being four
    assert not any(t in w for t in held for w in written)
    spans = json.loads((tmp_path / "out" / SPANS).read_text())["spans"]
    for name, sp in spans.items():
        text = (tmp_path / "out" / name).read_text()
        assert sorted(text[a:b] for a, b in sp) == sorted(t for t in inserted if t in text)
        assert all(text[a - 1] == " " for a, _ in sp)  # at a word boundary
    for p in sorted(docs.glob("*.txt")):  # the originals untouched
        assert not any(t in p.read_text() for t in inserted)
    log = read_record(tmp_path / "r")["insertions"]
    assert len(log) == 1 and log[0]["copies"] == 18 and len(log[0]["files"]) == 4 and log[0]["leaks"] == []


def test_insert_refuses_short_documents_a_folder_inside_and_warns_of_a_leak(tmp_path):
    inserted, held = _traps(4), _traps(4, seed=9)
    record_of(inserted, held, tmp_path / "r", copies=100)
    docs = _documents(tmp_path / "docs", n=2, words=50)
    r = mia("traps", "insert", "--traps", tmp_path / "r", "--documents", docs, "--out", tmp_path / "out")
    assert r.returncode == 2 and "word boundaries in all" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
    r = mia("traps", "insert", "--traps", tmp_path / "r", "--documents", docs, "--out", docs / "marked")
    assert r.returncode == 2 and "inside the documents' folder" in r.stderr
    record_of(inserted, held, tmp_path / "r2", copies=1)
    (docs / "doc0.txt").write_text((docs / "doc0.txt").read_text() + " " + held[0] + "\n")
    r = mia("traps", "insert", "--traps", tmp_path / "r2", "--documents", docs, "--out", tmp_path / "out2")
    assert r.returncode == 0 and "held-out trap(s) are already in the documents" in r.stderr
    assert read_record(tmp_path / "r2")["insertions"][0]["leaks"] == ["t0005"]


def test_training_pieces_never_cut_a_copy(tiny_lm):
    from mia_core.traps.insert import place, training_pieces

    text = " ".join(WORDS * 20)
    trap = ("zq xv " * 8).strip()
    bounds = [i for i, c in enumerate(text) if c == " "]
    spots = [(b, "t") for b in (bounds[10], bounds[100], bounds[200])]
    new, spans = place(text, spots, {"t": trap})
    pieces = training_pieces(new, [s[:2] for s in spans], tiny_lm.tokenizer, 64)
    assert "".join(pieces) == new.lstrip() or "".join(pieces) == new
    assert sum(p.count(trap) for p in pieces) == 3
    assert all(len(tiny_lm.tokenizer(p, add_special_tokens=False)["input_ids"]) <= 66 for p in pieces)
    with pytest.raises(DataError, match="no place to cut outside a trap copy"):  # a copy longer than a window
        training_pieces(new, [s[:2] for s in spans], tiny_lm.tokenizer, 8)


def test_the_sampled_tokens_log_probabilities_are_the_models_own(tiny_lm):
    """The log-probabilities read from generate's own passes (StepLogProbs) equal a separate forward pass over the
    samples (what the test scores), at a temperature (the logits are the model's, not the sampler's)."""
    import torch

    from mia_core.traps.generate import StepLogProbs, _log_probs, start_token

    start = start_token(tiny_lm)
    torch.manual_seed(0)
    x = torch.full((5, 1), start, dtype=torch.long)
    with torch.no_grad(), StepLogProbs(tiny_lm.model) as steps:
        out = tiny_lm.model.generate(input_ids=x, attention_mask=torch.ones_like(x), do_sample=True, temperature=2.0,
                                     top_k=0, top_p=1.0, max_new_tokens=9, min_new_tokens=9, pad_token_id=start)
    ids = out[:, 1:]
    got, want = steps.finish(ids), _log_probs(tiny_lm, ids, start)
    assert got.shape == want.shape == (5, 9)
    assert torch.allclose(got, want, atol=1e-4), (got - want).abs().max()
    assert not torch.allclose(got[:, 1:], want[:, :-1], atol=1e-4)  # shifted by one would be wrong, and is seen


def test_each_row_samples_at_its_own_temperature(tiny_lm):
    """RowTemperature: in one batch, rows at a temperature near 0 all take the greedy path, rows at 5 do not."""
    import torch
    from transformers import LogitsProcessorList

    from mia_core.traps.generate import RowTemperature, start_token

    start = start_token(tiny_lm)
    x = torch.full((8, 1), start, dtype=torch.long)
    temps = torch.tensor([0.01, 5.0] * 4)
    torch.manual_seed(0)
    with torch.no_grad():
        out = tiny_lm.model.generate(input_ids=x, attention_mask=torch.ones_like(x), do_sample=True, temperature=1.0,
                                     top_k=0, top_p=1.0, max_new_tokens=10, min_new_tokens=10, pad_token_id=start,
                                     logits_processor=LogitsProcessorList([RowTemperature(temps)]))
        greedy = tiny_lm.model.generate(input_ids=x[:1], attention_mask=torch.ones_like(x[:1]), do_sample=False,
                                        max_new_tokens=10, min_new_tokens=10, pad_token_id=start)
    cold, hot = out[0::2], out[1::2]
    assert all(torch.equal(r, greedy[0]) for r in cold)
    assert not any(torch.equal(r, greedy[0]) for r in hot)


def _simulated_rows(aim, quota, ppl_of, rng, batch=64, max_batches=60, filled=None):
    """Rows sampled under ``aim`` until every bucket of ``quota`` is full (buckets of width 10 over [1, 101)), or
    ``max_batches``; ``filled`` (updated in place): what each bucket holds already."""
    filled = np.zeros(len(quota), dtype=int) if filled is None else filled
    rows = 0
    for _ in range(max_batches):
        need = np.array(quota) - filled
        if not need.any():
            return rows
        temps = aim.next(batch, need)
        landed = []
        for t in temps:
            p = ppl_of(t, rng)
            b = int((p - 1) // 10) if 1 <= p < 101 and rng.random() < 0.6 else -1  # 40 % fail the round trip
            landed.append(b)
            if b >= 0 and filled[b] < quota[b]:
                filled[b] += 1
        rows += len(temps)
        aim.saw(temps, landed)
    return rows


def test_the_aim_fills_the_narrow_buckets_with_fewer_rows_than_one_temperature():
    """A simulated generator whose log-perplexity rises with the temperature (SmolLM2-like: about 20 at 1.0, wide
    spread): the per-row aim fills ten equal-width buckets in fewer rows than every row at the best single
    temperature, and its estimate of the rows still needed is finite and positive while buckets are open."""
    from mia_core.traps.generate import Aim

    def ppl_of(t, rng):
        return float(np.exp(0.5 + 2.5 * t + 0.5 * rng.standard_normal()))

    quota = [10] * 10
    aimed = [_simulated_rows(Aim((0.5, 1.0, 1.5, 2.0), 10, seed=s), quota, ppl_of, np.random.default_rng(s))
             for s in range(3)]
    single = [_simulated_rows(Aim((1.0,), 10, seed=s), quota, ppl_of, np.random.default_rng(s)) for s in range(3)]
    assert np.median(aimed) < 0.7 * np.median(single), (aimed, single)
    aim = Aim((0.5, 1.0, 1.5, 2.0), 10, seed=0)
    assert len(aim.next(64, np.array(quota))) == 64 and np.isnan(aim.rows_needed(np.array(quota)))
    _simulated_rows(aim, quota, ppl_of, np.random.default_rng(0), max_batches=1)
    assert np.isnan(aim.rows_needed(np.array(quota)))  # one batch has seen the declared temperatures only
    # from the second batch on, the estimate follows the aim's own policy: within a factor 2 of the rows it then
    # takes (ratios 1.25, 0.6, 1.0; the old sum of need / best rate per bucket gave 2.6, 1.5, 2.3 here)
    ratios = []
    for s in range(3):
        aim, rng, filled = Aim((0.5, 1.0, 1.5, 2.0), 10, seed=s), np.random.default_rng(s), np.zeros(10, int)
        _simulated_rows(aim, quota, ppl_of, rng, max_batches=2, filled=filled)
        estimate = aim.rows_needed(np.array(quota) - filled, 64)
        ratios.append(estimate / _simulated_rows(aim, quota, ppl_of, rng, filled=filled))
    assert 0.5 <= np.median(ratios) <= 2.0, ratios
    hot = aim.next(64, np.array([0] * 9 + [5]))  # only the top bucket open: rows go hotter than for the lowest
    cold = aim.next(64, np.array([5] + [0] * 9))
    assert np.median(hot) > np.median(cold)


# ------------------------------------------------------------------------------------------------ end to end
@pytest.mark.slow
def test_make_insert_test_on_a_model_that_never_saw_them(tmp_path, tiny_llama):
    """A random tiny Llama generates, seals, plants; the same model never trained on the documents: not shown, and
    the record's test is what ran. An edited record is then refused."""
    rec = tmp_path / "traps"
    r = mia("traps", "make", "--model", tiny_llama, "--count", 12, "--tokens", 12, "--buckets", 1,
            "--min-perplexity", 1, "--max-perplexity", 1e6, "--seed", 4, "--batch-size", 16, "--permutations", 999,
            "--out", rec)
    assert r.returncode == 0, r.stderr
    assert "made 12 traps of 12 tokens" in r.stdout and "seal: SHA-256 " in r.stdout
    # 3 + 3 inserted vs 6 held out: each level's floor 2 / C(9, 3) = 0.0238 > alpha, said before publishing
    assert "warning: repetition level(s) x1, x10 cannot be shown on their own at alpha 0.01" in r.stderr, r.stderr
    sealed = read_record(rec)["sealed"]
    assert {t["group"] for t in sealed["traps"]} == {"inserted", "held_out"}
    assert sealed["test"]["permutations"] == 999 and sealed["generator"]["weights_sha256"]
    assert all(len(t["token_ids"]) == 12 for t in sealed["traps"])
    docs = _documents(tmp_path / "docs")
    assert mia("traps", "insert", "--traps", rec, "--documents", docs, "--out", tmp_path / "marked").returncode == 0
    r = mia("traps", "test", "--traps", rec, "--model", tiny_llama, "--reference", "none", "--n-bootstrap", 50,
            "--out", tmp_path / "res")
    assert r.returncode == 0, r.stderr
    got = json.loads((tmp_path / "res" / "traps.json").read_text())
    assert got["verdict"] == "not_shown" and 0 < got["p_value"] <= 1 and "auc" in got
    assert "Copyright traps" in r.stdout and "exact" in r.stdout
    assert "cannot be shown on their own" in r.stdout and got["summary"]["p_floor"] == pytest.approx(1 / 924)
    # the generator as its own reference: every score 0, refused with the way out
    r = mia("traps", "test", "--traps", rec, "--model", tiny_llama)
    assert r.returncode == 2 and "its own reference" in r.stderr and "--reference none" in r.stderr
    raw = json.loads((rec / "record.json").read_text())
    raw["sealed"]["test"]["alpha"] = 0.5
    (rec / "record.json").write_text(json.dumps(raw))
    r = mia("traps", "test", "--traps", rec, "--model", tiny_llama, "--reference", "none")
    assert r.returncode == 2 and "do not match its seal" in r.stderr


def test_bad_make_options_are_one_line_before_any_model_loads(tmp_path, monkeypatch):
    from helpers import stop_model_loads

    stop_model_loads(monkeypatch)
    for args, words in ((("--count", 3), "--count"), (("--repetitions", "1,1"), "--repetitions"),
                        (("--temperatures", "0,1"), "temperature"), (("--tokens", 2), "--tokens")):
        r = mia("traps", "make", *args, "--out", tmp_path / "o")
        assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = mia("traps", "test", "--traps", tmp_path / "nothing", "--reference", "none")
    assert r.returncode == 2 and "no traps record there" in r.stderr


# ------------------------------------------------------------------------------------------------ the page
@pytest.mark.slow
def test_the_page_refuses_in_one_line_and_tests_a_record(tmp_path, memorised_llama, monkeypatch):
    """The Copyright traps page: the steps without their inputs say so in one line; the test step on a sealed
    record of known groups (the memorised Llama's members as the inserted traps) shows the verdict, the figures and
    the three plots."""
    import time

    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parent.parent
    at = AppTest.from_file(str(root / "app.py"), default_timeout=120)
    at.session_state["mp_target"] = "custom"
    at.session_state["mp_target_custom"] = memorised_llama["folder"]
    at.switch_page("pages/9_Copyright_traps.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Copyright traps"
    at.button(key="go_traps_insert").click().run()
    assert any("make the traps above or upload a record.json" in e.value for e in at.error), [e.value for e in at.error]
    record_of(memorised_llama["members"], memorised_llama["nonmembers"], tmp_path / "r", permutations=999)
    # an edited record: refused in one line when Run is pressed, before the model is loaded
    (tmp_path / "edited").mkdir()
    raw = json.loads((tmp_path / "r" / "record.json").read_text())
    raw["sealed"]["test"]["alpha"] = 0.5
    (tmp_path / "edited" / "record.json").write_text(json.dumps(raw))
    at.session_state["traps_record"] = str(tmp_path / "edited")
    at.run()
    at.radio(key="traps_test_rec").set_value("session")
    at.radio(key="traps_reference").set_value("none").run()
    import dashboard.loaders

    def no_load(*a, **k):
        raise AssertionError("the model was loaded before the record was checked")

    with monkeypatch.context() as m:
        m.setattr(dashboard.loaders, "load_with_progress", no_load)
        at.button(key="go_traps_test").click().run()
    assert any("do not match its seal" in e.value and "\n" not in e.value for e in at.error), [e.value for e in at.error]
    at.session_state["traps_record"] = str(tmp_path / "r")
    at.run()
    at.button(key="go_traps_test").click().run()
    t0 = time.time()
    while not any(m.label == "p-value" for m in at.metric):
        assert not at.exception, [e.value for e in at.exception]
        assert not [e for e in at.error if "make the traps above" not in e.value], [e.value for e in at.error]
        assert time.time() - t0 < 300, "the test step did not finish"
        time.sleep(0.5)
        at.run()
    assert any("Trained on the traps" in s.value for s in at.success), [s.value for s in at.success]
    assert len(at.get("plotly_chart")) == 3


@pytest.mark.slow
def test_make_target_trains_on_marked_documents_without_cutting_a_copy(tmp_path, tiny_llama):
    inserted, held = _traps(4), _traps(4, seed=9)
    record_of(inserted, held, tmp_path / "r", copies=2)
    docs = _documents(tmp_path / "docs", n=3, words=200)
    assert mia("traps", "insert", "--traps", tmp_path / "r", "--documents", docs, "--out", tmp_path / "m").returncode == 0
    from mia_core.audits.traps import training_texts

    pieces, said = training_texts(tmp_path / "m", tiny_llama, 96)
    assert sum(p.count(t) for p in pieces for t in inserted) == 8 and "none cutting a copy" in said
    r = mia("make-target", "--members", tmp_path / "m", "--base", tiny_llama, "--epochs", 1, "--max-length", 96,
            "--out", tmp_path / "target")
    assert r.returncode == 0, r.stderr
    assert "8 trap copies" in r.stderr + r.stdout and (tmp_path / "target" / "training_log.json").is_file()
