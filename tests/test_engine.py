"""Engine tests: real models (the embedded SmolLM2 and tiny models trained here on known data)."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mia_core import stats as S
from mia_core.stats import compute as SC
from mia_core.stats import reduce as SR
from mia_core.attacks import REGISTRY, AttackInputs
from mia_core.data import texts_from_strings
from mia_core.models import load_causal_lm
from mia_core.pipeline import RunConfig, run_attacks
from tiny_lm import make_tokenizer, paragraphs, train_tiny_lm

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def controlled(tmp_path_factory):
    """Members, non-members and a disjoint reference split from the same books (random split)."""
    P = paragraphs()
    random.Random(0).shuffle(P)
    mem, non, ref = P[:40], P[40:80], P[80:160]
    tok = make_tokenizer(P[:160], vocab_size=600)
    d = tmp_path_factory.mktemp("tiny")
    target = train_tiny_lm(mem, tok, d / "target", epochs=12, hidden=64)
    reference = train_tiny_lm(ref, tok, d / "reference", epochs=12, hidden=64)
    return mem, non, load_causal_lm(str(target)), load_causal_lm(str(reference))


@pytest.mark.slow
def test_tiny_target_loss_and_reference_attack(controlled):
    mem, non, target, reference = controlled
    res = run_attacks(
        texts_from_strings(mem, non), target, reference=reference,
        config=RunConfig(attacks=["loss", "ref", "min_k", "min_k_pp", "zlib"], use_cache=False, n_bootstrap=200, blind=False),
    )
    loss, ref = res.metrics["loss"], res.metrics["ref"]
    assert loss["auc"] >= 0.9
    # the reference model cancels out how hard each text is: at least as good, and better
    # at AUC or at TPR@1%FPR unless LOSS is already perfect there
    assert ref["auc"] >= loss["auc"] - 1e-9
    assert (ref["auc"] > loss["auc"] or ref["tpr_at_fpr"]["0.01"] > loss["tpr_at_fpr"]["0.01"]
            or loss["auc"] == 1.0)
    # every attack is oriented "higher = member"
    for name in ("min_k", "min_k_pp"):
        assert res.metrics[name]["auc"] > 0.6, name
    # zlib divides a per-token NLL by a whole-text compressed length (Carlini et al. §5.1), so on
    # paragraphs of 40-120 words length dominates it; its orientation still shows
    assert res.metrics["zlib"]["auc"] > 0.5
    assert set(res.scores.columns) >= {"text_id", "label", "text_hash", "loss", "ref"}


def test_reference_with_different_tokenizer_uses_bytes(controlled, tmp_path):
    mem, non, target, _ = controlled
    other_tok = make_tokenizer(paragraphs()[200:400], vocab_size=400)
    other = load_causal_lm(str(train_tiny_lm(paragraphs()[200:260], other_tok, tmp_path / "other", epochs=2, hidden=32)))
    assert not target.same_tokenizer(other)
    res = run_attacks(texts_from_strings(mem[:10], non[:10]), target, reference=other,
                      config=RunConfig(attacks=["ref"], use_cache=False, n_bootstrap=50, blind=False))
    assert np.isfinite(res.scores["ref"]).all()
    assert any("per byte" in r for r in res.report)


@pytest.fixture(scope="module")
def smollm2():
    return load_causal_lm()


def test_embedded_model_prefers_fluent_text(smollm2):
    text = ("The old house stood at the end of the lane, and every evening the children ran down the hill "
            "to watch the sun set behind its crooked chimneys.")
    words = text.split()
    random.Random(1).shuffle(words)
    fluent, shuffled = S.compute_stats(smollm2, [text, " ".join(words)], use_cache=False)
    # SmolLM2's tokenizer puts nothing in front of a text: its first token has no prediction
    assert fluent.n_predicted == fluent.n_tokens - 1 and np.isnan(fluent.logprob[0])
    always = S.compute_stats(smollm2, [text], S.StatsSettings(prefix="always"), use_cache=False)[0]
    assert always.n_predicted == always.n_tokens  # the BOS/EOS prefix makes every token predicted
    assert fluent.loss < shuffled.loss - 1.0
    v = fluent.valid
    assert np.all(fluent.rank[v] >= 1) and np.all(np.isfinite(fluent.sigma[v]))
    np.testing.assert_allclose(fluent.entropy[v], -fluent.mu[v], rtol=1e-5)


def test_windowed_scores_match_direct(smollm2):
    text = " ".join(paragraphs()[:2])
    direct = S.compute_stats(smollm2, [text], S.StatsSettings(context=1024), use_cache=False)[0]
    C = 48
    windowed = S.compute_stats(smollm2, [text], S.StatsSettings(context=C), use_cache=False)[0]
    assert direct.n_tokens > 3 * C  # really several windows
    assert windowed.n_predicted == windowed.n_tokens - 1  # all but the first (nothing in front of it)
    # the first window sees exactly the same context as the direct pass
    np.testing.assert_allclose(windowed.logprob[: C - 1], direct.logprob[: C - 1], atol=1e-4, equal_nan=True)
    # a context of C covers the text in one window: identical to the direct pass
    short = text[:150]
    a = S.compute_stats(smollm2, [short], S.StatsSettings(context=C), use_cache=False)[0]
    b = S.compute_stats(smollm2, [short], S.StatsSettings(context=1024), use_cache=False)[0]
    assert a.n_tokens < C
    np.testing.assert_allclose(a.logprob, b.logprob, atol=1e-4, equal_nan=True)
    np.testing.assert_allclose(a.mu, b.mu, atol=1e-4, equal_nan=True)
    # every later token got exactly one prediction, from a shorter context (so it differs)
    assert np.isfinite(windowed.logprob[1:]).all()
    assert not np.allclose(windowed.logprob[C:], direct.logprob[C:], atol=1e-3)


def test_cache_reuse_makes_no_model_call(smollm2, tmp_path, monkeypatch):
    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path))
    texts = ["A short sentence about the sea.", "Another one, about the mountains and the snow."]
    first = S.compute_stats(smollm2, texts)
    calls = {"n": 0}
    real = SC._forward

    def counting(*a, **k):
        calls["n"] += 1
        return real(*a, **k)

    monkeypatch.setattr(SC, "_forward", counting)
    second = S.compute_stats(smollm2, texts)
    assert calls["n"] == 0
    assert S.compute_stats.last_cache.hits == 2
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x.logprob, y.logprob)
    # a different setting is a different cache entry: the model is called again
    S.compute_stats(smollm2, texts, S.StatsSettings(context=16))
    assert calls["n"] > 0
    # an attack re-run on cached texts: still no model call
    calls["n"] = 0
    stats = S.compute_stats(smollm2, texts)
    REGISTRY["min_k_pp"].score(AttackInputs(texts, target=stats))
    assert calls["n"] == 0


def test_min_k_and_min_k_pp_formulas():
    lp = np.log(np.array([0.5, 0.1, 0.01, 0.2, 0.3], dtype=np.float32))
    st = S.TokenStats(
        token_ids=np.arange(5), logprob=lp, max_logprob=lp, mu=np.full(5, -2.0, np.float32),
        sigma=np.full(5, 0.5, np.float32), entropy=np.full(5, 2.0, np.float32), rank=np.ones(5, np.int32),
        top_id=np.zeros(5, np.int32), n_bytes=10,
    )
    inp = AttackInputs(["x"], target=[st], first_token=True)  # all 5 tokens (tests/test_faithful_scores.py: 2..n)
    # k = 40 % of 5 tokens -> the 2 lowest log-probs
    assert REGISTRY["min_k"].score(inp, k=0.4)[0] == pytest.approx(np.mean(np.log([0.01, 0.1])), rel=1e-6)
    assert REGISTRY["min_k_pp"].score(inp, k=0.4)[0] == pytest.approx(np.mean((np.log([0.01, 0.1]) + 2.0) / 0.5), rel=1e-5)
    assert REGISTRY["loss"].score(inp)[0] == pytest.approx(np.mean(lp), rel=1e-6)


def _cli(*args, env_extra=None, cwd=None):
    """``mia ARGS`` from the repository root, in this process (``helpers.mia``: what it prints and writes)."""
    from helpers import mia

    return mia(*args, env_extra=env_extra, cwd=cwd or ROOT)


@pytest.mark.slow
def test_cli_run_writes_contract_files(controlled, tmp_path):
    mem, non, target, _ = controlled
    (tmp_path / "m.txt").write_text("\n".join(mem[:8]))
    (tmp_path / "n.jsonl").write_text("\n".join(json.dumps({"text": t}) for t in non[:8]))
    out = tmp_path / "out"
    r = _cli("run", "--members", str(tmp_path / "m.txt"), "--nonmembers", str(tmp_path / "n.jsonl"),
             "--model", target.info["location"], "--attacks", "loss,zlib,lowercase,min_k,min_k_pp",
             "--out", str(out), "--bootstrap", "50", "--quiet")
    assert r.returncode == 0, r.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics) >= {"loss", "zlib", "lowercase", "min_k", "min_k_pp", "blind"}
    assert set(metrics["loss"]["tpr_at_fpr"]) == {"0.001", "0.01", "0.02", "0.05", "0.1"}
    assert metrics["loss"]["n_members"] == 8 and len(metrics["loss"]["auc_ci"]) == 2
    import pandas as pd

    scores = pd.read_csv(out / "scores.csv")
    assert list(scores.columns[:3]) == ["text_id", "label", "text_hash"] and len(scores) == 16
    assert "AUC" in r.stdout and "loss" in r.stdout


@pytest.mark.parametrize(
    "setup,needle",
    [
        ("empty", "empty"),
        ("binary", "binary"),
        ("overlap", "both sets"),
        ("unknown_model", "not found"),
        ("unknown_attack", "unknown attack"),
    ],
)
@pytest.mark.slow
def test_cli_bad_input_one_clear_line(tmp_path, setup, needle):
    m, n = tmp_path / "m.txt", tmp_path / "n.txt"
    m.write_text("The first member text.\nThe second member text.\n")
    n.write_text("A non-member text.\n")
    args = ["run", "--members", str(m), "--nonmembers", str(n), "--out", str(tmp_path / "o"), "--quiet"]
    if setup == "empty":
        n.write_text("")
    elif setup == "binary":
        n.write_bytes(bytes(range(256)) * 20)
    elif setup == "overlap":
        n.write_text("The second member text.\n")
    elif setup == "unknown_model":
        args += ["--model", "no-such-org/no-such-model-xyz"]
    elif setup == "unknown_attack":
        args += ["--attacks", "loss,telepathy"]
    r = _cli(*args)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and needle in lines[0].lower(), r.stderr


def test_cli_help_documents_every_option():
    r = _cli("run", "--help")
    assert r.returncode == 0
    for opt in ("--members", "--nonmembers", "--model", "--reference", "--attacks", "--dtype", "--quantize", "--out",
                "--no-cache", "--demo"):
        assert opt in r.stdout


@pytest.mark.slow
def test_concurrent_writers_of_one_cache_entry_never_corrupt_it(tmp_path, monkeypatch):
    """Three processes (Ray drivers sharing a cache folder, say) write the same entry 150 times each
    while this one reads it: every read is either a miss or one writer's whole arrays; no temporary
    file is left behind."""
    from mia_core.cache import ArrayCache

    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path))
    settings = {"model": "concurrency-test"}
    writer = (
        "import sys, numpy as np\n"
        "from mia_core.cache import ArrayCache\n"
        "c = ArrayCache('stats', {'model': 'concurrency-test'})\n"
        "k = int(sys.argv[1])\n"
        "for _ in range(150):\n"
        "    c.put('ab' + '0' * 30, {'a': np.arange(200_000, dtype=np.int64) * k, 'k': np.array(k)})\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", writer, str(k)], env={**__import__("os").environ})
             for k in (1, 2, 3)]
    path = ArrayCache("stats", settings)._path("ab" + "0" * 30)
    reads = 0
    while any(p.poll() is None for p in procs):
        if not path.exists():
            continue
        with np.load(path, allow_pickle=False) as z:  # read directly: the cache's get() would hide a bad file
            k = int(z["k"])
            assert k in (1, 2, 3) and np.array_equal(z["a"], np.arange(200_000, dtype=np.int64) * k)
        reads += 1
    assert all(p.returncode == 0 for p in procs)
    assert reads > 0  # it did read while they wrote
    assert not [p for p in (tmp_path / "stats").rglob("*") if p.name.endswith(".tmp")]


def test_reduce_max_top_and_rank_are_torch_s_exactly():
    """The fast max, first argmax and rank of ``_reduce`` equal ``lp.max(-1)`` and the plain count,
    ties included (a tie resolves to the first column, as torch's), for vocabularies that are and are
    not a multiple of the block."""
    import torch

    torch.manual_seed(0)
    for v in (49152, 50257, 1500, 100):
        lg = torch.randn(12, v) * 4
        lg[3] = 0.0  # every column tied
        lg[5, 17] = lg[5, v - 1] = 50.0  # a tie between the first block and the last column
        lg[6, v - 1] = 60.0  # the maximum in the tail past the last whole block
        tg = torch.randint(0, v, (12,))
        got = SR._reduce(lg, tg, False)
        lp = torch.log_softmax(lg, -1)
        mx, top = lp.max(-1)
        tl = lp.gather(1, tg[:, None])
        assert np.array_equal(got["max_logprob"], mx.numpy())
        assert np.array_equal(got["top_id"], top.numpy().astype(np.int32)), v
        assert got["top_id"][3] == 0 and got["top_id"][5] == 17 and got["top_id"][6] == v - 1
        assert np.array_equal(got["rank"], ((lp > tl).sum(-1) + 1).numpy().astype(np.int32))


def test_reducing_in_row_blocks_gives_the_numbers_of_one_piece_bit_for_bit():
    """``_reduce`` reduces a long piece in row blocks on the CPU (``_row_blocks``, for speed): every array, the
    vocabulary sum included, equals what the whole piece reduced at once gives (the old path, ``_reduce_rows`` of
    all rows and their ``p.sum(0)``), bit for bit, at thread counts below, at and above the block size, for pieces
    shorter than two blocks (one piece), of whole blocks and of a remainder."""
    import torch

    threads = torch.get_num_threads()
    g = torch.Generator().manual_seed(3)
    try:
        for t in (1, 2, 5, 40):
            torch.set_num_threads(t)
            b = max(SR.ROW_BLOCK, t)
            assert len(SR._row_blocks(2 * b - 1, torch.device("cpu"))) == 1
            assert all(y - x >= b for x, y in SR._row_blocks(5 * b + 3, torch.device("cpu")))
            for n in (7, 2 * b, 3 * b + 5):
                lg = torch.randn(n, 33_000, generator=g) * 4  # a row of over 32,768: torch may split its sums
                tg = torch.randint(0, 33_000, (n,), generator=g)
                got = SR._reduce(lg, tg, True)
                lp = torch.log_softmax(lg, -1)
                whole = SR._reduce_rows(lp, lp.exp(), tg)
                whole["vp"] = lp.exp().sum(0).double().numpy()
                assert got.keys() == whole.keys()
                for k in whole:
                    assert np.array_equal(got[k], whole[k]), (t, n, k)
    finally:
        torch.set_num_threads(threads)


def test_a_cache_write_that_fails_stops_with_one_line_and_a_partial_entry_is_best_effort(tmp_path, monkeypatch,
                                                                                          capsys):
    """A full disk under the cache folder: the CLI's run stops with one line naming the folder, the
    reason and the ways out (no traceback); a long text's partial entry, written also while a run
    stops on another error, fails quietly (False) rather than replace that error."""
    import errno

    from mia_core import cache as C
    from mia_core.cli import main

    def full(path, data):
        if str(path).endswith(".npz"):  # the entries; the folder's settings.json still goes through
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, data)

    import mia_core.cache.store as store

    real = store._write_atomic
    monkeypatch.setattr(store, "_write_atomic", full)
    c = C.ArrayCache("stats", {"model": "full-disk-test"})
    assert c.put_partial("ab" + "0" * 30, {"a": np.arange(3)}) is False
    (tmp_path / "m.txt").write_text("The cat sat on the mat today.\nA dog ran in the park at noon.\n")
    (tmp_path / "n.txt").write_text("Rain fell on the old town all night.\nShips sailed out of the bay at dawn.\n")
    capsys.readouterr()
    code = main(["run", "--members", str(tmp_path / "m.txt"), "--nonmembers", str(tmp_path / "n.txt"),
                 "--attacks", "loss", "--bootstrap", "10", "--no-blind"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "Traceback" not in "\n".join(err)
    assert err[-1].startswith("error: cannot write to the cache folder ") and "No space left on device" in err[-1]
    assert "--no-cache" in err[-1] and os.environ["MIA_CACHE_DIR"] in err[-1]  # the session's cache (its model)
