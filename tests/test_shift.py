"""Distribution-shift checks (mia_core.metrics.blind_baseline, mia_core.data.overlap): blind baseline, overlap statistics, verdict,
length matching and the ``shift`` CLI. No language model is involved anywhere."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import ks_2samp

from mia_core.cli import main as cli_main
from mia_core.errors import DataError
from mia_core.data.overlap import near_duplicate_pairs, overlap_stats
from mia_core.metrics.blind_baseline import (
    SHIFT_MESSAGE,
    _make_pipeline,
    blind_baseline,
    match_lengths,
    shift_report,
    verdict,
)

DATA = Path(__file__).parent / "data"
NB = 200  # bootstrap resamples: enough for a CI in tests, cheap


def _jsonl(path):
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


@pytest.fixture(scope="module")
def verse():
    return [r["text"] for r in _jsonl(DATA / "verse.jsonl")]


@pytest.fixture(scope="module")
def paragraphs():
    return _jsonl(DATA / "paragraphs.jsonl")


@pytest.fixture(scope="module")
def modern(paragraphs):
    return [r["text"] for r in paragraphs if r["modern"]]


@pytest.fixture(scope="module")
def shifted_report(verse, modern):
    """Milton's verse (17th century) as 'members' vs 20th-century prose as 'non-members'."""
    return shift_report(verse[:80], modern[:80], folds=5, seed=0, match=True, n_bootstrap=NB)


# ----------------------------------------------------------------------------- blind baseline


@pytest.mark.slow
def test_different_sources_are_flagged_as_shift(shifted_report):
    b = shifted_report["blind"]
    for key in ("auc", "auc_ci", "tpr_at_fpr", "tpr_at_fpr_ci", "n_members", "n_nonmembers",
                "warnings", "roc", "oof_scores", "model"):
        assert key in b
    assert b["n_members"] == 80 and b["n_nonmembers"] == 80
    assert len(b["oof_scores"]) == 160
    assert b["auc"] >= 0.9
    assert b["auc_ci"][0] > 0.6
    # members first in oof_scores: members score higher on average
    s = np.asarray(b["oof_scores"])
    assert s[:80].mean() > s[80:].mean()
    assert b["top_features"]["member"] and b["top_features"]["nonmember"]
    v = shifted_report["verdict"]
    assert v["level"] == "shift"
    assert SHIFT_MESSAGE in v["message"]
    json.dumps(shifted_report, allow_nan=False)  # JSON-able for metrics.json / shift.json


def test_random_split_of_one_source_is_ok(modern):
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(modern))
    half = len(modern) // 2
    a = [modern[i] for i in idx[:half]]
    b = [modern[i] for i in idx[half:]]
    res = blind_baseline(a, b, folds=5, seed=0, n_bootstrap=NB, top_features=0)
    lo, hi = res["auc_ci"]
    assert lo <= 0.5 <= hi or res["auc"] <= 0.6
    assert verdict(res)["level"] == "ok"


def test_vectoriser_is_fitted_inside_each_fold(verse, modern):
    """The out-of-fold scores equal a manual loop that fits a fresh pipeline per training fold."""
    from sklearn.model_selection import StratifiedKFold

    mem, non = verse[:20], modern[:20]
    res = blind_baseline(mem, non, folds=4, seed=3, n_bootstrap=0, top_features=0)
    texts = mem + non
    y = np.array([1] * 20 + [0] * 20)
    expected = np.empty(40)
    for tr, te in StratifiedKFold(4, shuffle=True, random_state=3).split(texts, y):
        pipe = _make_pipeline(3).fit([texts[i] for i in tr], y[tr])
        expected[te] = pipe.decision_function([texts[i] for i in te])
    np.testing.assert_allclose(res["oof_scores"], expected, rtol=1e-6, atol=1e-9)
    # a pipeline fitted on all texts (leaky vocabulary/IDF) would give different scores
    leaky = _make_pipeline(3).fit(texts, y).decision_function(texts)
    assert not np.allclose(res["oof_scores"], leaky)


def test_tiny_sets_reduce_folds_or_raise(verse, modern):
    res = blind_baseline(verse[:3], modern[:4], folds=5, n_bootstrap=50, top_features=0)
    assert res["folds"] == 3
    assert any("3 folds instead of 5" in w for w in res["warnings"])
    with pytest.raises(DataError, match="at least 2 members"):
        blind_baseline(verse[:1], modern[:5])
    with pytest.raises(DataError):
        blind_baseline("one string", modern[:5])
    with pytest.raises(DataError):
        blind_baseline(["", " "], ["", ""])


# ----------------------------------------------------------------------------- verdict


def _blind(auc, lo, hi):
    return {"auc": auc, "auc_ci": [lo, hi]}


def test_verdict_levels():
    assert verdict(_blind(0.52, 0.45, 0.59))["level"] == "ok"
    assert verdict(_blind(0.58, 0.53, 0.63))["level"] == "caution"
    v = verdict(_blind(0.75, 0.68, 0.81))
    assert v["level"] == "shift" and SHIFT_MESSAGE in v["message"]
    # barely above chance, but at least as good as the best attack: shift
    attacks = {"loss": {"auc": 0.55}, "zlib": {"auc": 0.57}}
    v = verdict(_blind(0.58, 0.53, 0.63), attacks)
    assert v["level"] == "shift" and v["best_attack"] == "zlib" and SHIFT_MESSAGE in v["message"]
    # attacks clearly beat the (mildly separable) blind baseline: caution only
    assert verdict(_blind(0.58, 0.53, 0.63), {"minkprob": {"auc": 0.8}})["level"] == "caution"
    # blind beats attacks that are all at chance, but its CI includes 0.5: ok
    assert verdict(_blind(0.52, 0.45, 0.59), {"loss": {"auc": 0.50}})["level"] == "ok"
    # no CI (n_bootstrap=0): the point estimate is judged
    assert verdict({"auc": 0.9, "auc_ci": None})["level"] == "shift"
    assert verdict({"auc": 0.5, "auc_ci": None})["level"] == "ok"
    # a CI entirely below chance (50 + 50 texts read 0.272 [0.18, 0.37]) is explained, not left bare
    low = verdict(_blind(0.272, 0.18, 0.37))
    assert low["level"] == "ok" and "entirely below 0.5" in low["message"] and "biased below 0.5" in low["message"]
    assert "entirely below" not in verdict(_blind(0.48, 0.40, 0.56))["message"]
    assert verdict({"auc": float("nan"), "auc_ci": None})["level"] == "caution"


# ----------------------------------------------------------------------------- overlap statistics


def _long_paragraph(paragraphs, start=6, min_words=80):
    return [r["text"] for r in paragraphs[start:] if len(r["text"].split()) >= min_words][0]


def test_overlap_finds_exact_and_near_duplicates(paragraphs, verse):
    members = [r["text"] for r in paragraphs[:6]] + [_long_paragraph(paragraphs)]
    exact_copy = "  " + members[2].upper().replace(" ", "   \n ") + " "
    words = members[6].split()
    mid = len(words) // 2
    near_copy = " ".join(words[:mid] + ["zebra"] + words[mid + 1:])
    nonmembers = verse[:5] + [exact_copy, near_copy]
    o = overlap_stats(members, nonmembers)
    d = o["duplicates"]
    assert d["n_exact_pairs"] == 1 and d["exact_pairs"] == [[2, 5]]
    assert d["n_near_pairs"] == 1
    i, j, jac = d["near_pairs"][0]
    assert (i, j) == (6, 6) and 0.8 <= jac < 1.0
    assert d["nonmembers_with_duplicate"] == 2
    g13 = o["ngram_overlap"]["13"]
    assert g13["nonmember_texts_with_overlap"] == 2
    assert 0 < g13["fraction"] < 1
    # disjoint sources: no overlap, no duplicates
    o2 = overlap_stats(members[:6], verse[:5])
    assert o2["ngram_overlap"]["7"]["in_members"] == 0
    assert o2["duplicates"]["n_exact_pairs"] == 0 and o2["duplicates"]["n_near_pairs"] == 0
    json.dumps(o, allow_nan=False)


def test_near_duplicate_pairs_match_brute_force(paragraphs):
    from mia_core.data.overlap import _shingles, _words

    rng = np.random.default_rng(1)
    base = [r["text"] for r in paragraphs[:60]]
    a = base[:40]
    b = []
    for k, t in enumerate(base[20:60]):  # 20 texts of `a` reappear in `b`, changed by 0-7 words
        w = t.split()
        for pos in rng.choice(len(w), size=min(k % 8, len(w)), replace=False):
            w[pos] = f"x{pos}"
        b.append(" ".join(w))
    at, bt = [_words(t) for t in a], [_words(t) for t in b]
    fast = {(i, j): jac for i, j, jac in near_duplicate_pairs(at, bt, threshold=0.8)}
    brute = {}
    for i, x in enumerate(at):
        for j, y in enumerate(bt):
            sx, sy = _shingles(x), _shingles(y)
            jac = len(sx & sy) / len(sx | sy)
            if jac >= 0.8:
                brute[(i, j)] = jac
    assert fast.keys() == brute.keys()
    assert len(brute) >= 5  # the test exercises both found and missed pairs
    assert len(brute) < 20
    for key in brute:
        assert fast[key] == pytest.approx(brute[key])


def test_overlap_lengths_and_dates():
    members = ["It happened in March 1999 and again in 2001, with about 1,500 people.",
               "No dates here at all."]
    nonmembers = ["The 2023 election in May 2024 was close.", "Short one here."]
    o = overlap_stats(members, nonmembers, year_cutoff=2020)
    dm, dn = o["dates"]["members"], o["dates"]["nonmembers"]
    n_m = 13 + 5  # whitespace words
    assert dm["years_per_1000_words"] == pytest.approx(1000 * 2 / n_m)   # 1,500 is not a year
    assert dm["months_per_1000_words"] == pytest.approx(1000 * 1 / n_m)
    assert dm["share_texts_with_year_ge_cutoff"] == 0.0
    assert dm["share_texts_with_year"] == 0.5
    assert dn["share_texts_with_year_ge_cutoff"] == 0.5
    assert dn["max_year"] == 2024
    L = o["lengths"]
    assert L["members"]["mean"] == pytest.approx(9.0) and L["nonmembers"]["median"] == pytest.approx(5.5)
    assert 0 <= L["ks"]["pvalue"] <= 1


# ----------------------------------------------------------------------------- length matching


def test_match_lengths_brings_distributions_closer(paragraphs):
    texts = [r["text"] for r in paragraphs]
    n = np.array([len(t.split()) for t in texts])
    long_, short = np.flatnonzero(n >= 75), np.flatnonzero(n < 60)
    members = [texts[i] for i in long_[:150]] + [texts[i] for i in short[:40]]
    nonmembers = [texts[i] for i in short[40:240]] + [texts[i] for i in long_[150:180]]
    ln = lambda ts: [len(t.split()) for t in ts]  # noqa: E731
    before = ks_2samp(ln(members), ln(nonmembers)).statistic
    mi, ni = match_lengths(members, nonmembers, n_bins=10, seed=0)
    assert mi == sorted(set(mi)) and ni == sorted(set(ni))
    assert 0 <= min(mi) and max(mi) < len(members) and 0 <= min(ni) and max(ni) < len(nonmembers)
    assert len(mi) == len(ni) >= 40
    after = ks_2samp(ln([members[i] for i in mi]), ln([nonmembers[i] for i in ni])).statistic
    assert before > 0.5
    assert after < before / 2
    assert match_lengths(members, nonmembers, n_bins=10, seed=0) == (mi, ni)


def test_match_lengths_without_overlap_raises():
    with pytest.raises(DataError, match="do not overlap"):
        match_lengths(["word " * 100] * 5, ["a b"] * 5, n_bins=4)


def test_shift_report_matched_section(shifted_report):
    m = shifted_report["matched"]
    assert m["n_members"] == m["n_nonmembers"] == len(m["member_indices"]) > 0
    assert m["blind"]["n_members"] == m["n_members"]
    lengths = shifted_report["overlap"]["lengths"]
    assert m["ks"]["statistic"] < lengths["ks"]["statistic"]
    # verse vs prose differ in far more than length: still flagged after matching
    assert m["verdict"]["level"] == "shift"


# ----------------------------------------------------------------------------- CLI


def test_cli_end_to_end(tmp_path, verse, modern, capsys):
    mem, non = tmp_path / "members.jsonl", tmp_path / "non.txt"
    mem.write_text("".join(json.dumps({"text": t}) + "\n" for t in verse[:30]), encoding="utf-8")
    non.write_text("\n".join(t.replace("\n", " ") for t in modern[:30]) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    rc = cli_main(["shift", "--members", str(mem), "--nonmembers", str(non), "--folds", "3",
                   "--n-bootstrap", "100", "--match-lengths", "--out", str(out)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "AUC" in printed and "TPR@1% FPR" in printed and "13-grams" in printed
    assert "VERDICT [shift]" in printed and SHIFT_MESSAGE in printed
    rep = json.loads((out / "shift.json").read_text(encoding="utf-8"))
    assert rep["verdict"]["level"] == "shift"
    assert rep["blind"]["n_members"] == 30 and rep["blind"]["folds"] == 3
    assert len(rep["blind"]["oof_scores"]) == 60
    assert "matched" in rep and "duplicates" in rep["overlap"]


def test_cli_labelled_table_and_errors(tmp_path, verse, modern, capsys):
    lab = tmp_path / "labelled.jsonl"
    rows = [{"input": t, "label": 1} for t in verse[:6]] + [{"input": t, "label": 0} for t in modern[:6]]
    lab.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert cli_main(["shift", "--labelled", str(lab), "--folds", "2", "--n-bootstrap", "20"]) == 0
    assert "VERDICT [" in capsys.readouterr().out
    assert cli_main(["shift", "--members", str(tmp_path / "missing.txt"), "--nonmembers", str(lab)]) == 2
    err = capsys.readouterr().err
    assert "error: file not found" in err and "Traceback" not in err
    one, non = tmp_path / "one.txt", tmp_path / "non.txt"
    one.write_text(verse[0].replace("\n", " ") + "\n", encoding="utf-8")
    non.write_text("\n".join(t.replace("\n", " ") for t in modern[:5]) + "\n", encoding="utf-8")
    assert cli_main(["shift", "--members", str(one), "--nonmembers", str(non)]) == 2
    assert "at least 2 members" in capsys.readouterr().err
    assert cli_main(["shift", "--labelled", str(lab), "--folds", "1"]) == 2
    assert "--folds must be >= 2 (a whole number), got 1" in capsys.readouterr().err


def test_top_features_list_equal_weights_by_name_so_every_cpu_shows_the_same_list():
    """Weights equal at the shown precision are ranked by name: np.argsort's order of ties differs
    between CPUs (AVX-512 against AVX2), which changed the blind baseline's 10th n-gram."""
    from types import SimpleNamespace

    from mia_core.metrics.blind_baseline import _top_features

    names = np.array(["word__at her", "word__hat", "word__quiet", "char_wb__ my", "word__remained", "word__my",
                      "word__way", "word__s", "word__eyes"])
    coef = np.array([0.06851, 0.06849, 0.02, -0.01, -0.0633, -0.0633, -0.0633, -0.0633, -0.0633])
    rng = np.random.default_rng(0)
    for _ in range(6):  # the same features in other orders: the same lists
        order = rng.permutation(len(names))
        pipe = SimpleNamespace(named_steps={"tfidf": SimpleNamespace(get_feature_names_out=lambda: names[order]),
                                            "logreg": SimpleNamespace(coef_=coef[order][None])})
        top = _top_features(pipe, k=3)
        assert [f["ngram"] for f in top["member"]] == ["at her", "hat", "quiet"]
        assert [(f["ngram"], f["weight"]) for f in top["nonmember"]] == [("eyes", -0.0633), ("my", -0.0633),
                                                                          ("remained", -0.0633)]
        assert [f["kind"] for f in _top_features(pipe, k=6)["nonmember"]] == ["word"] * 5 + ["char_wb"]
