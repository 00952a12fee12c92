"""Tests for mia_core.metrics (ROC/AUC, TPR at fixed FPR, bootstrap CIs, thresholds, groups)."""
import json
import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from mia_core import metrics as M
from mia_core.formatting import fmt_pct
from mia_core.errors import DataError, SettingsError


def _gauss(n_mem, n_non, shift, seed=0):
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n_mem, int), np.zeros(n_non, int)]
    scores = rng.normal(size=n_mem + n_non) + shift * labels
    return labels, scores


def test_fpr_key():
    assert M.fpr_key(0.001) == "0.001"
    assert M.fpr_key(0.01) == "0.01"
    assert M.fpr_key(0.1) == "0.1"
    assert M.fpr_key(0.02) == "0.02"
    assert M.fpr_key(1e-5) == "0.00001"
    assert [M.fpr_key(f) for f in M.FPR_GRID] == ["0.001", "0.01", "0.02", "0.05", "0.1"]


def test_auc_equals_sklearn_with_ties():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 500)
    scores = np.round(rng.normal(size=500) + 0.7 * labels, 1)  # many ties
    out = M.evaluate(labels, scores, n_bootstrap=50)
    assert out["auc"] == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    fpr, tpr, thr = M.roc(labels, scores)
    assert fpr[0] == 0 and fpr[-1] == 1 and tpr[-1] == 1
    assert len(thr) == len(np.unique(scores)) + 1  # drop_intermediate=False: every distinct score


def test_perfect_separation():
    labels = [1] * 50 + [0] * 1000
    scores = list(np.linspace(10, 11, 50)) + list(np.linspace(0, 1, 1000))
    out = M.evaluate(labels, scores, n_bootstrap=100)
    assert out["auc"] == 1.0
    assert out["auc_ci"] == [1.0, 1.0]
    assert all(v == 1.0 for v in out["tpr_at_fpr"].values())
    # 1,000 non-members: no warning about 0.1 % FPR
    assert not any("0.1% FPR" in w for w in out["warnings"])


def test_inverted_attack_gives_auc_zero():
    out = M.evaluate([1, 1, 0, 0], [0.0, 0.1, 0.5, 0.9], n_bootstrap=0)
    assert out["auc"] == 0.0 and out["auc_ci"] is None
    assert out["tpr_at_fpr"]["0.1"] == 0.0


def test_random_scores_ci_contains_half():
    labels, scores = _gauss(1000, 1000, 0.0, seed=11)
    out = M.evaluate(labels, scores, n_bootstrap=1000, seed=0)
    lo, hi = out["auc_ci"]
    assert lo < 0.5 < hi
    assert hi - lo < 0.1  # 2,000 texts: the CI is a few hundredths wide
    for k, (tlo, thi) in out["tpr_at_fpr_ci"].items():
        assert tlo <= out["tpr_at_fpr"][k] <= thi


def test_tpr_at_fpr_hand_example():
    # 10 non-members with scores 0..9, 5 members with scores 8.5, 7.5, 5.5, 3.5, 0.5.
    # Thresholds (score >= t): t=9 -> FPR 0.1, TPR 0; t=8.5 -> FPR 0.1, TPR 0.2;
    # t=8 -> FPR 0.2, TPR 0.2; t=7.5 -> FPR 0.2, TPR 0.4; t=5.5 -> FPR 0.4, TPR 0.6 ...
    neg = list(range(10))
    pos = [8.5, 7.5, 5.5, 3.5, 0.5]
    labels = [0] * 10 + [1] * 5
    scores = neg + pos
    t = M.tpr_at_fpr(labels, scores, fprs=(0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.65, 0.95))
    # step interpolation: the largest TPR among ROC points with FPR <= target (never linear)
    assert t == {"0.05": 0.0, "0.1": 0.2, "0.15": 0.2, "0.2": 0.4, "0.3": 0.4, "0.4": 0.6,
                 "0.65": 0.8, "0.95": 1.0}


def test_bootstrap_tpr_matches_curve_reading_on_original_sample():
    # the vectorised bootstrap statistic with all-one multiplicities is the exact figure
    rng = np.random.default_rng(5)
    for _ in range(30):
        n1, n0 = rng.integers(1, 80, 2)
        labels = np.r_[np.ones(n1, int), np.zeros(n0, int)]
        scores = np.round(rng.normal(size=n1 + n0) + 0.5 * labels, 1)
        fprs = M.FPR_GRID + (0.07, 0.29, 0.5)
        pos, neg = np.sort(scores[labels == 1]), np.sort(scores[labels == 0])
        auc, tprs = M._bootstrap_stats(pos, neg, np.ones((1, n1), int), np.ones((1, n0), int), fprs)
        assert auc[0] == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
        assert tprs[0].tolist() == pytest.approx(list(M.tpr_at_fpr(labels, scores, fprs).values()))


def test_bootstrap_deterministic_under_seed():
    labels, scores = _gauss(300, 400, 0.5, seed=2)
    a = M.evaluate(labels, scores, n_bootstrap=300, seed=7)
    b = M.evaluate(labels, scores, n_bootstrap=300, seed=7)
    c = M.evaluate(labels, scores, n_bootstrap=300, seed=8)
    assert a == b
    assert a["auc_ci"] != c["auc_ci"]
    assert a["auc_ci"][0] < a["auc"] < a["auc_ci"][1]


def test_evaluate_is_json_serialisable_and_roc_downsampled():
    labels, scores = _gauss(3000, 3000, 1.0, seed=4)
    out = M.evaluate(labels, scores, n_bootstrap=100)
    json.dumps(out)
    assert isinstance(out["auc"], float) and isinstance(out["n_members"], int)
    assert set(out["tpr_at_fpr"]) == {"0.001", "0.01", "0.02", "0.05", "0.1"}
    fpr, tpr = np.array(out["roc"]["fpr"]), np.array(out["roc"]["tpr"])
    assert len(fpr) <= M.MAX_ROC_POINTS + 50
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    assert fpr[0] == 0 and fpr[-1] == 1 and tpr[-1] == 1
    # shape kept: TPR read off the downsampled curve equals the exact figure, low FPR included
    full_fpr, full_tpr, _ = M.roc(labels, scores)
    for f in (0.0005, 0.001, 0.003, 0.01, 0.05, 0.1):
        assert M._tpr_from_curve(fpr, tpr, f) == M._tpr_from_curve(full_fpr, full_tpr, f)
    assert "roc" not in M.evaluate(labels, scores, n_bootstrap=0, keep_roc=False)


def test_warnings_for_small_nonmember_sets():
    labels, scores = _gauss(200, 60, 1.0, seed=1)
    out = M.evaluate(labels, scores, n_bootstrap=50)
    w = out["warnings"]
    assert "TPR at 0.1% FPR is not estimable with 60 non-members (it needs at least 1,000): shown as n/e" in w
    assert any(x.startswith("TPR at 1% FPR is not estimable with 60 non-members (it needs at least 100)") for x in w)
    assert not any(x.startswith("TPR at 2% FPR") for x in w)  # 60 >= 50
    tiny = M.evaluate([1, 1, 1, 0, 0, 0, 0], [3, 2, 1, 0, 1.5, -1, -2], n_bootstrap=20)
    assert any("only 3 members" in x for x in tiny["warnings"])
    assert any("only 4 non-members" in x for x in tiny["warnings"])
    big = M.evaluate(*_gauss(50, 1000, 1.0), n_bootstrap=0)
    assert not any("not estimable" in x for x in big["warnings"])
    assert M.tpr_estimable(0.01, 100) and not M.tpr_estimable(0.01, 99) and not M.tpr_estimable(0.001, 100)
    assert M.tpr_estimable(0.05, 20) and not M.tpr_estimable(0.05, 19) and M.tpr_estimable(0.1, None)


def test_no_members_or_nonmembers_raises():
    with pytest.raises(DataError, match="no members"):
        M.evaluate([0, 0, 0], [0.1, 0.2, 0.3])
    with pytest.raises(DataError, match="no non-members"):
        M.evaluate([1, 1], [0.1, 0.2])
    with pytest.raises(DataError, match="labels must be 1"):
        M.evaluate([1, 2, 0], [0.1, 0.2, 0.3])
    with pytest.raises(DataError, match="must match"):
        M.evaluate([1, 0, 0], [0.1, 0.2])


def test_nan_scores_dropped_and_counted():
    labels, scores = _gauss(100, 100, 1.0, seed=9)
    s = scores.copy()
    s[[0, 1, 150]] = np.nan
    out = M.evaluate(labels, s, n_bootstrap=50)
    keep = ~np.isnan(s)
    assert out["n_dropped"] == 3
    assert out["n_members"] == 98 and out["n_nonmembers"] == 99
    assert out["auc"] == pytest.approx(roc_auc_score(labels[keep], s[keep]))
    assert any("3 texts could not be scored" in w and "2 members, 1 non-member" in w for w in out["warnings"])
    all_nan = s.copy()
    all_nan[labels == 1] = np.nan
    with pytest.raises(DataError, match="no member could be scored"):
        M.evaluate(labels, all_nan)


def test_infinite_scores_keep_ranking():
    labels = [1, 1, 0, 0]
    out = M.evaluate(labels, [np.inf, 0.5, 0.6, -np.inf], n_bootstrap=0)
    assert out["auc"] == pytest.approx(roc_auc_score(labels, [10, 0.5, 0.6, -10]))


def test_population_threshold_flags_alpha():
    rng = np.random.default_rng(0)
    pop = rng.normal(size=5000)
    for alpha in (0.01, 0.1, 0.25):
        t = M.population_threshold(pop, alpha)
        assert np.mean(pop >= t) == pytest.approx(alpha, abs=1e-9)
    # on fresh non-members from the same distribution the flagged fraction is close to alpha
    fresh = rng.normal(size=20000)
    assert np.mean(fresh >= M.population_threshold(pop, 0.1)) == pytest.approx(0.1, abs=0.015)
    assert M.population_threshold([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.1) == 10.0
    assert M.population_threshold([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, np.nan], 0.2) == 9.0
    with pytest.raises(SettingsError):
        M.population_threshold(pop, 1.5)
    with pytest.raises(DataError):
        M.population_threshold([np.nan], 0.1)


def test_decisions_at_hand_example():
    # members 0.9 0.8 0.3 0.2, non-members 0.85 0.1 0.05 0.0 0.4; threshold 0.35
    labels = [1, 1, 1, 1, 0, 0, 0, 0, 0]
    scores = [0.9, 0.8, 0.3, 0.2, 0.85, 0.1, 0.05, 0.0, 0.4]
    d = M.decisions_at(labels, scores, 0.35)
    # flagged: 0.9, 0.8 (members), 0.85, 0.4 (non-members) -> TP 2, FP 2
    assert d == {"threshold": 0.35, "precision": 0.5, "recall": 0.5, "fpr": 0.4, "n_flagged": 4,
                 "n_members": 4, "n_nonmembers": 5}
    # score == threshold counts as flagged
    assert M.decisions_at(labels, scores, 0.3)["recall"] == 0.75
    assert M.decisions_at(labels, scores, 5.0)["precision"] is None
    json.dumps(d)


def test_group_scores_mean_max_and_conflict():
    scores = [1.0, 3.0, 0.0, 2.0, np.nan, 5.0]
    labels = [1, 1, 0, 0, 1, 1]
    groups = ["p1", "p1", "p2", "p2", "p3", "p3"]
    ids, gs, gl = M.group_scores(scores, labels, groups)
    assert ids == ["p1", "p2", "p3"]
    assert gs.tolist() == [2.0, 1.0, 5.0]
    assert gl.tolist() == [1, 0, 1]
    _, gmax, _ = M.group_scores(scores, labels, groups, how="max")
    assert gmax.tolist() == [3.0, 2.0, 5.0]
    with pytest.raises(DataError, match="group p2 has both"):
        M.group_scores(scores, [1, 1, 0, 1, 1, 1], groups)
    with pytest.raises(SettingsError):
        M.group_scores(scores, labels, groups, how="median")
    # a group with only NaN scores gets NaN, which evaluate() then drops
    _, g2, _ = M.group_scores([np.nan, np.nan, 1.0], [1, 1, 0], ["a", "a", "b"])
    assert math.isnan(g2[0])


def test_summarize_table():
    strong = M.evaluate(*_gauss(300, 300, 2.0, seed=1), n_bootstrap=100)
    weak = M.evaluate(*_gauss(300, 300, 0.2, seed=2), n_bootstrap=100)
    table = M.summarize_table({"loss": strong, "zlib": weak})
    lines = table.splitlines()
    assert lines[0].split()[:2] == ["attack", "AUC"]
    for h in ("TPR@0.1%", "TPR@1%", "TPR@2%", "TPR@5%", "TPR@10%"):
        assert h in lines[0]
    loss_row = next(line for line in lines if line.startswith("loss"))
    # one precision rule everywhere (CLI, report, pages): the AUC and its CI to 3 decimals
    assert f"{strong['auc']:.3f} [{strong['auc_ci'][0]:.3f}, {strong['auc_ci'][1]:.3f}]" in loss_row
    assert "300 / 300" in loss_row
    assert fmt_pct(strong["tpr_at_fpr"]["0.1"]) in loss_row
    # the shared warning is printed once, without attack prefixes
    shared = "TPR at 0.1% FPR is not estimable with 300 non-members (it needs at least 1,000): shown as n/e"
    assert table.count(shared) == 1
    assert loss_row.split()[4] == "n/e"  # attack, AUC, [lo,, hi], TPR@0.1%: not a number on 300 non-members
    assert fmt_pct(0.0123) == "1.23%"
    assert fmt_pct(0.5) == "50.0%"
    assert fmt_pct(1.0) == "100%"
    assert fmt_pct(0.00123) == "0.123%"
    assert fmt_pct(0.0) == "0%"


def test_delta_ci_paired_and_unpaired():
    """B − A between two runs: a paired bootstrap (same texts) cancels what the runs share."""
    y, s = _gauss(200, 200, 1.0, seed=3)
    s2 = s + np.random.default_rng(4).normal(0, 0.1, s.size)  # e.g. the same model quantised
    obs = M.evaluate(y, s2, n_bootstrap=0)["auc"] - M.evaluate(y, s, n_bootstrap=0)["auc"]
    d = M.delta_ci((y, s), (y, s2), paired=True, n_bootstrap=500)
    u = M.delta_ci((y, s), (y, s2), paired=False, n_bootstrap=500)
    assert d["paired"] and d["n"] == (200, 200) and not u["paired"]
    assert d["auc"][0] <= obs <= d["auc"][1] and u["auc"][0] <= obs <= u["auc"][1]
    assert (d["auc"][1] - d["auc"][0]) < (u["auc"][1] - u["auc"][0]) / 3
    assert set(d["tpr_at_fpr"]) == {M.fpr_key(f) for f in M.FPR_GRID}
    same = M.delta_ci((y, s), (y, s), paired=True, n_bootstrap=100)
    assert same["auc"] == (0.0, 0.0) and all(v == (0.0, 0.0) for v in same["tpr_at_fpr"].values())
    with pytest.raises(DataError, match="same texts"):
        M.delta_ci((y, s), (y[::-1], s), paired=True)


def test_wilson_intervals_of_decisions():
    assert M.wilson_ci(0, 0) is None
    lo, hi = M.wilson_ci(0, 10)
    assert lo == pytest.approx(0.0, abs=1e-12) and 0.25 < hi < 0.35  # 0/10 still leaves room up to ~28 %
    lo, hi = M.wilson_ci(50, 100)
    assert lo == pytest.approx(0.404, abs=1e-3) and hi == pytest.approx(0.596, abs=1e-3)
    d = M.decisions_at([1, 1, 1, 1, 0, 0, 0, 0], [5, 4, 3, 0, 2, -1, -2, -3], threshold=2)
    c = M.decision_cis(d)
    assert d["n_flagged"] == 4 and d["precision"] == 0.75 and d["recall"] == 0.75
    assert c["precision"] == M.wilson_ci(3, 4) and c["recall"] == M.wilson_ci(3, 4) and c["fpr"] == M.wilson_ci(1, 4)


def test_not_estimable_warnings_merge_into_one_line():
    w = M.evaluate(*_gauss(6, 6, 1.0), n_bootstrap=0)["warnings"]
    merged = M.merge_warnings(w)
    assert len([x for x in w if "not estimable" in x]) == 5
    ne = [x for x in merged if "not estimable" in x]
    assert ne == ["TPR at 0.1%, 1%, 2%, 5% and 10% FPR is not estimable with 6 non-members (each needs at least "
                  "1/FPR of them: 1,000, 100, 50, 20, 10): shown as n/e"]
    assert [x for x in merged if "not estimable" not in x] == [x for x in w if "not estimable" not in x]
    table = M.summarize_table({"loss": M.evaluate(*_gauss(6, 6, 1.0), n_bootstrap=0),
                               "zlib": M.evaluate(*_gauss(6, 6, 0.5, seed=1), n_bootstrap=0)})
    assert table.count("not estimable") == 1


def test_tpr_rules_differ_where_f_times_n_is_whole_and_the_strict_one_is_mimirs():
    """Issue 28 item 4: this project's TPR@f (FPR <= f, full curve) and MIMIR's/LiRA's code's
    (``tpr[np.where(fpr < f)[0][-1]]`` on scikit-learn's dropped-point curve) are not the same rule."""
    from sklearn.metrics import roc_curve

    from mia_core.metrics import evaluate, tpr_at_fpr_strict

    rng = np.random.default_rng(0)
    y = np.r_[np.ones(100), np.zeros(100)].astype(int)
    s = np.r_[rng.normal(1.0, 1, 100), rng.normal(0, 1, 100)]
    s[100 + int(np.argmax(s[100:]))] = s[:100].max() + 1  # the top non-member above every member
    m = evaluate(y, s, n_bootstrap=0)
    fpr, tpr, _ = roc_curve(y, s)
    mimir = float(tpr[np.where(fpr < 0.01)[0][-1]])
    assert m["tpr_at_fpr_strict"]["0.01"] == mimir == tpr_at_fpr_strict(y, s)["0.01"] == 0.0
    assert m["tpr_at_fpr"]["0.01"] > 0.0  # one false positive is within a 1 % budget of 100 non-members


def test_one_metrics_table_for_every_front_end():
    """Issue 31: the rows are built once (values and their text) and the CLI text and the report's /
    pages' table render the same strings: AUC and its CI to 3 decimals, the blind baseline last."""
    m = {"blind": {**M.evaluate(*_gauss(50, 50, 0.1, seed=5), n_bootstrap=50), "label": "Blind baseline"},
         "loss": {**M.evaluate(*_gauss(50, 50, 1.0, seed=6), n_bootstrap=50), "label": "LOSS"}}
    rows = M.metrics_rows(m)
    assert [r["attack"] for r in rows] == ["loss", "blind"]
    r = rows[0]
    assert r["auc_ci_text"] == f"{r['auc']:.3f} [{r['auc_ci'][0]:.3f}, {r['auc_ci'][1]:.3f}]"
    assert r["tpr_text"]["0.001"] == "n/e" and r["tpr_text"]["0.1"] == fmt_pct(r["tpr"]["0.1"])
    frame = M.metrics_frame(m)
    assert list(frame["Attack"]) == ["LOSS", "Blind baseline"]
    assert frame.loc[0, "AUC [95% CI]"] == r["auc_ci_text"] and frame.loc[0, "TPR@10% FPR"] == r["tpr_ci_text"]["0.1"]
    text = M.summarize_table(m)
    assert r["auc_ci_text"] in text and r["tpr_text"]["0.1"] in text
    early = M.metrics_frame(m, fprs=(0.01, 0.1), with_ci=False, with_n=False)
    assert list(early.columns) == ["Attack", "AUC", "TPR@1% FPR", "TPR@10% FPR"]
