"""WBC, the window-based comparison attack (issue 52; ``mia_core.attacks.wbc``).

* Per text against a direct transcription of the paper's formula (Chen et al. 2026 §4: every window of every
  size votes 1 when the target's summed loss is below the reference's; the votes are averaged per size, then
  over the sizes that fit), written with explicit loops over windows and fed with per-token losses from a plain
  ``transformers`` forward pass (MIMIR's recipe, as ``test_scored_tokens``), so that neither the cached
  statistics nor the cumulative sums of the attack are shared with the check. On a tiny target trained here on
  known members, with a reference trained on other texts: Spearman >= 0.999 and the scores equal to float
  precision; members score higher (AUC).
* Hand-made differences: the short-text rule, ties, the ``mean`` ablation.
* A reference with another tokenizer: refused in one line when WBC is named, skipped under ``all``.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from tiny_lm import DATA, make_tokenizer, train_tiny_lm
from mia_core.attacks.wbc import PAPER_WINDOWS, parse_windows, text_score
from mia_core.errors import SettingsError

N = 12


def _texts(n: int, offset: int, words: int = 40) -> list[str]:
    rows = [json.loads(line) for line in (DATA / "paragraphs.jsonl").read_text(encoding="utf-8").splitlines()]
    return [" ".join(r["text"].split()[:words]) for r in rows[offset::7][:n]]


def transcription(target_losses, reference_losses, windows=PAPER_WINDOWS) -> float:
    """The paper's formula with explicit loops: for each window size w that fits the n tokens, the share of
    the n - w + 1 windows where sum(target) < sum(reference); the mean over those sizes (one whole-text window
    when none fits)."""
    n = len(target_losses)
    sizes = [w for w in windows if w <= n] or [n]
    per_size = []
    for w in sizes:
        votes = []
        for j in range(n - w + 1):
            votes.append(1.0 if sum(target_losses[j:j + w]) < sum(reference_losses[j:j + w]) else 0.0)
        per_size.append(sum(votes) / len(votes))
    return sum(per_size) / len(per_size)


def _token_losses(folder, texts) -> list[np.ndarray]:
    """Per-token NLL of every predicted token of ``tokenizer(text)`` (its own special tokens), plain transformers."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    out = []
    with torch.no_grad():
        for t in texts:
            ids = tok(t, return_tensors="pt")["input_ids"]
            logits = model(ids).logits[0, :-1].double()
            out.append(torch.nn.functional.cross_entropy(logits, ids[0, 1:], reduction="none").numpy())
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from mia_core.data import Dataset
    from mia_core.models import load_causal_lm

    d = tmp_path_factory.mktemp("wbc")
    mp = pytest.MonkeyPatch()
    mp.setenv("MIA_CACHE_DIR", str(d / "cache"))
    members, nonmembers, other = _texts(N, 0), _texts(N, 3), _texts(N, 1)
    # one very short text: fewer tokens than most window sizes
    nonmembers[-1] = "The end."
    tok = make_tokenizer(members + nonmembers + other, vocab_size=800)
    target = train_tiny_lm(members, tok, d / "target", hidden=64, epochs=20)
    reference = train_tiny_lm(other, tok, d / "reference", hidden=64, epochs=20, seed=1)
    texts = members + nonmembers
    yield {"target": target, "reference": reference, "texts": texts,
           "ds": Dataset(texts=texts, labels=[1] * N + [0] * N, ids=[f"t{i:02d}" for i in range(len(texts))]),
           "lm": load_causal_lm(str(target)), "ref": load_causal_lm(str(reference))}
    mp.undo()


@pytest.mark.slow
def test_scores_agree_per_text_with_a_transcription_of_the_paper(world):
    from scipy.stats import spearmanr

    from mia_core.pipeline import RunConfig, run_attacks

    res = run_attacks(world["ds"], world["lm"], reference=world["ref"],
                      config=RunConfig(attacks=["wbc", "ref", "loss"], n_bootstrap=0, blind=False))
    ours = res.scores["wbc"].to_numpy()
    lt, lr = _token_losses(world["target"], world["texts"]), _token_losses(world["reference"], world["texts"])
    theirs = np.array([transcription(list(a), list(b)) for a, b in zip(lt, lr)])
    assert min(len(a) for a in lt) < min(PAPER_WINDOWS[-1], 10)  # the short text takes the short-text rule
    rho = spearmanr(ours, theirs).statistic
    assert rho >= 0.999, (rho, ours, theirs)
    assert np.max(np.abs(ours - theirs)) < 1e-9, np.max(np.abs(ours - theirs))
    assert res.metrics["wbc"]["auc"] > 0.8, res.metrics["wbc"]


@pytest.mark.slow
def test_a_reference_with_another_tokenizer_is_refused_before_any_pass(world, tiny_llama, monkeypatch):
    from mia_core.models import load_causal_lm
    from mia_core.pipeline import RunConfig, run_attacks
    from mia_core import stats

    other = load_causal_lm(tiny_llama)  # SmolLM2's tokenizer, not the tiny target's

    def no_pass(*a, **k):
        raise AssertionError("a model pass ran")

    with monkeypatch.context() as m:
        m.setattr(stats, "compute_stats", no_pass)
        m.setattr("mia_core.pipeline.stages.compute_stats", no_pass)
        with pytest.raises(SettingsError) as e:
            run_attacks(world["ds"], world["lm"], reference=other,
                        config=RunConfig(attacks=["loss", "wbc"], n_bootstrap=0))
    msg = str(e.value)
    assert "\n" not in msg and "WBC" in msg and "tokenizer" in msg, msg
    res = run_attacks(world["ds"], world["lm"], reference=other,
                      config=RunConfig(attacks=["all"], n_bootstrap=0, blind=False,
                                       params={"neighbourhood": {"generator": f"offline:{world['target']}", "n": 2}}))
    assert "wbc" not in res.scores and "wbc" in res.config["skipped"], res.config.get("skipped")
    assert "ref" in res.scores  # the reference attack compares per byte instead


@pytest.mark.slow
def test_the_cli_refuses_a_named_wbc_and_skips_it_under_all(world, tiny_llama, tmp_path):
    from helpers import assert_one_error, mia

    m, n = tmp_path / "m.txt", tmp_path / "n.txt"
    m.write_text("\n".join(world["texts"][:N]) + "\n")
    n.write_text("\n".join(world["texts"][N:]) + "\n")
    base = ["run", "--model", world["target"], "--reference", tiny_llama, "--members", m, "--nonmembers", n,
            "--mode", "lines", "--bootstrap", "0", "--no-blind", "--quiet"]
    r = mia(*base, "--attacks", "loss,wbc", "--out", tmp_path / "a")
    assert_one_error(r.returncode, r.stderr, "tokenizer")
    assert "--reference" in r.stderr and not (tmp_path / "a").exists()
    # "all" expanded by the front door (api.prepare_run): WBC is skipped with the reason, the rest runs
    r = mia(*base, "--attacks", "all", "--param", f"neighbourhood.generator=offline:{world['target']}",
            "--param", "neighbourhood.n=2", "--out", tmp_path / "b")
    assert r.returncode == 0, r.stderr
    run = json.loads((tmp_path / "b" / "run.json").read_text())
    assert "wbc" in run["config"]["skipped"] and "wbc" not in run["config"]["attacks"], run["config"].get("skipped")


def test_windows_and_short_texts_follow_the_stated_rules():
    d = np.array([1.0, -3.0, 1.0, 1.0])  # reference minus target per token
    # w=2: sums -2, -2, 2 -> 1/3; w=3: -1, -1 -> 0; w=4: 0 -> no vote (a tie) -> 0; w=6 does not fit
    assert text_score(d, (2, 3, 4, 6)) == pytest.approx((1 / 3 + 0 + 0) / 3)
    assert text_score(d, (6, 9)) == 0.0  # no size fits: one whole-text window, a tie
    assert text_score(np.array([0.5, 0.2]), (6, 9)) == 1.0
    assert np.isnan(text_score(np.array([]), PAPER_WINDOWS))
    assert text_score(np.zeros(50), PAPER_WINDOWS) == 0.0  # the target as its own reference
    assert text_score(d, (2,), "mean") == pytest.approx(np.mean([-2, -2, 2]) / 2)
    for d in (np.random.default_rng(0).normal(size=37), np.random.default_rng(1).standard_t(2, size=90)):
        assert text_score(d, PAPER_WINDOWS) == pytest.approx(transcription(list(-d), [0.0] * len(d)))


def test_window_lists_are_checked_in_one_line():
    assert parse_windows("40, 2,3") == (2, 3, 40)
    for bad, needle in (("2,x", "whole numbers"), ("0", "[1, 100000]"), ("", "at least one"), ("2,2", "repeat"),
                        (",".join(map(str, range(1, 70))), "at most 64")):
        with pytest.raises(SettingsError) as e:
            parse_windows(bad)
        assert needle in str(e.value) and "\n" not in str(e.value)
