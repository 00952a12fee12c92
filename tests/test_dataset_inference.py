"""Dataset inference (issue 29; Maini et al. 2024): the tests' statistics, the guards, and end to end on the
bundled demo target (a SmolLM2 fine-tune whose members are known: ground truth)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import assert_one_error, mia

from mia_core.dataset_inference import (check_sets, iid_guard, near_duplicates, paper_test, parse_features,
                                        permutation_test)
from mia_core.dataset_inference.significance import clip_outliers, crossfit_scores, fold_ids
from mia_core.errors import DataError, SettingsError


# ------------------------------------------------------------------------------------------------ statistics
def test_crossfit_scores_equal_a_ridge_refit_per_label_vector():
    """The one-matrix-product shortcut equals fitting scikit-learn's Ridge on every fold and label vector."""
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) * [1, 5, 0.1] + [0, 3, -1]
    Y = np.stack([rng.permutation(np.r_[np.ones(20), np.zeros(20)]) for _ in range(4)], 1)
    f = fold_ids(40, 5, 0)
    S = crossfit_scores(X, Y, f, ridge=1.0)
    for b in range(4):
        for k in range(5):
            te, tr = f == k, f != k
            mu, sd = X[tr].mean(0), X[tr].std(0)
            r = Ridge(alpha=1.0).fit((X[tr] - mu) / sd, Y[tr, b])
            np.testing.assert_allclose(S[te, b], r.predict((X[te] - mu) / sd), rtol=1e-8, atol=1e-10)


def test_permutation_p_values_are_valid_under_the_null_and_small_under_a_shift():
    rng = np.random.default_rng(1)
    y = np.r_[np.ones(30), np.zeros(30)].astype(int)
    ps = np.array([permutation_test(rng.normal(size=(60, 4)), y, n_permutations=199, seed=r)["p_value"]
                   for r in range(300)])
    # valid under exchangeability: P(p <= a) <= a (conservative: the weights' projection onto w >= 0 often leaves
    # nothing, then p is large); 300 draws: at most a few SE above a
    assert (ps <= 0.05).mean() <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 300) and (ps <= 0.5).mean() <= 0.5 + 0.09
    y2 = np.r_[np.ones(40), np.zeros(40)].astype(int)
    X = rng.normal(size=(80, 4))
    X[:40, 0] += 1.5  # the suspect texts more member-like in one feature (over 30 such draws the largest p was 0.004)
    # p near 0.008 here (Welch): 9,999 resamples, as the permutation and bootstrap-t parts' Monte Carlo error at 999
    # (about 0.003) would decide whether the largest of the three parts lands below 0.01
    assert permutation_test(X, y2, n_permutations=9999, seed=0, combination="mean")["p_value"] <= 0.01
    assert permutation_test(X, y2, n_permutations=9999, seed=0)["p_value"] <= 0.01  # the default: families
    got = permutation_test(X, y2, n_permutations=999, seed=0, combination="nonneg")  # non-negative fitted weights
    assert got["p_value"] <= 0.01 and got["weights"][0] > max(got["weights"][1:]) and min(got["weights"]) >= 0
    assert got["p_value_is_bound"] == (got["p_value"] == pytest.approx(1 / 1000))
    X[:40, 0] -= 3.0  # now less member-like: never "used", whatever the size of the difference
    for c in ("mean", "nonneg", "families"):
        assert permutation_test(X, y2, n_permutations=999, seed=0, combination=c)["p_value"] > 0.5


def test_permutation_test_refuses_what_it_cannot_test():
    X, y = np.zeros((20, 2)), np.r_[np.ones(10), np.zeros(10)].astype(int)
    X[3, 1] = np.nan
    with pytest.raises(DataError, match="NaN or infinite"):
        permutation_test(X, y, n_permutations=99)
    X[3, 1] = np.inf
    with pytest.raises(DataError, match="NaN or infinite"):
        permutation_test(X, y, n_permutations=99)
    for bad in (10**7, 98, 1.5, float("inf"), None, True):
        with pytest.raises(SettingsError, match="n_permutations"):
            permutation_test(np.zeros((20, 2)), y, n_permutations=bad)
    with pytest.raises(SettingsError, match="combination"):
        permutation_test(np.zeros((20, 2)), y, n_permutations=99, combination="any")


def test_paper_test_follows_the_codes_steps():
    """clip 2.5 % each side per set, standardise with the suspect set, half to train, Student t on the rest."""
    v = np.arange(100.0)
    c = clip_outliers(v)
    # the code's clip: the int(n * 0.05 / 2) = 2 lowest (highest) set to the innermost of them (not to the first
    # value kept): remove_outliers' highest_val_permissible = metrics[highest_ids[0]]
    assert c[:2].tolist() == [1.0, 1.0] and c[-2:].tolist() == [98.0, 98.0] and (c[2:98] == v[2:98]).all()
    assert (clip_outliers(np.arange(30.0)) == np.arange(30.0)).all()  # int(30 * 0.05 / 2) = 0: nothing clipped
    rng = np.random.default_rng(2)
    S, V = rng.normal(0.8, 1, (60, 3)), rng.normal(0, 1, (60, 3))
    got = paper_test(S, V, seed=0)
    assert got["n_train"] == [30, 30] and got["n_test"] == [30, 30] and got["p_value"] < 0.05
    assert paper_test(rng.normal(size=(60, 3)), rng.normal(size=(60, 3)), seed=0)["p_value"] > 0.01


# ------------------------------------------------------------------------------------------------ guards
def test_sets_are_checked_before_any_model():
    s = [f"suspect text number {i} about the harbour and its ships" for i in range(12)]
    v = [f"validation text number {i} about the market and its stalls" for i in range(12)]
    assert check_sets(s, v) == []
    with pytest.raises(DataError, match="at least 10"):
        check_sets(s[:3], v)
    with pytest.raises(DataError, match="appears? in both"):
        check_sets(s, v[:11] + [s[0]])
    with pytest.raises(DataError, match="near-duplicates"):
        check_sets(s, v[:11] + ["SUSPECT text number 3, about the harbour and its ships!"])
    long_one = " ".join(f"w{i}" for i in range(40))
    assert near_duplicates([long_one], [long_one.replace("w39", "x")]) == [(0, 0)]  # 35 of 36 5-grams shared
    notes = check_sets(s, [t + " " + "and more words " * 20 for t in v])
    assert any("lengths differ" in n for n in notes)
    with pytest.raises(SettingsError, match="needs a reference"):
        parse_features("ref", reference=False, population=False)
    assert "ref" in parse_features("default", reference=True, population=False)
    with pytest.raises(SettingsError, match="unknown feature"):
        parse_features("telepathy", reference=False, population=False)


def test_iid_guard_refuses_a_shifted_validation_set():
    """The paper's WikiMIA lesson in miniature: texts of another time and topic are told apart without the
    model, so no p-value is given."""
    old = [f"The carriage drew up before the inn at dusk, and the coachman called for ale number {i}."
           for i in range(40)]
    new = [f"In 2024 the startup shipped its app update {i} to the cloud, and users posted about it online."
           for i in range(40)]
    g = iid_guard(new, old, n_permutations=199)
    assert not g["ok"] and g["blind_auc"] > 0.9 and g["blind_p_value"] <= 0.05 and "Refused" in g["message"]
    from mia_core.targets.demo import demo_paths

    texts = demo_paths()["nonmembers"].read_text().splitlines()
    order = np.random.default_rng(0).permutation(len(texts))
    same = iid_guard([texts[i] for i in order[:50]], [texts[i] for i in order[50:]], n_permutations=199)
    assert same["ok"], same["message"]  # two random halves of one source
    assert "four times in five" in same["message"]  # its power is said


def test_overlap_is_compared_after_unicode_normalisation():
    """Korean in composed (NFC) and decomposed (NFD) form is one text; so is a text in full-width letters."""
    import unicodedata

    s = [f"한국어 문장 번호 {i} 입니다 그리고 더 많은 단어들" for i in range(12)]
    v = [f"다른 검증 문장 {i} 입니다 여기에는 다른 단어들" for i in range(11)]
    with pytest.raises(DataError, match="appears? in both"):
        check_sets(s, v + [unicodedata.normalize("NFD", s[4])])
    assert unicodedata.normalize("NFD", s[4]) != s[4]


# ------------------------------------------------------------------------------------------------ end to end
@pytest.mark.slow
def test_demo_members_are_detected_and_the_null_is_not(tmp_path):
    """The demo target's members against its non-members: used; its never-trained population against the
    same non-members: not shown. 30 + 30 texts each, the CLI end to end."""
    from mia_core.targets.demo import demo_paths

    d = demo_paths()
    for name, src in (("m", "members"), ("p", "population"), ("n", "nonmembers")):
        (tmp_path / f"{name}.txt").write_text("\n".join(d[src].read_text().splitlines()[:30]) + "\n")
    r = mia("infer-dataset", "--suspect", tmp_path / "m.txt", "--validation", tmp_path / "n.txt", "--model",
                d["target"], "--permutations", "999", "--out", tmp_path / "used", "--quiet")
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads((tmp_path / "used" / "dataset_inference.json").read_text())
    assert got["verdict"] == "used" and got["p_value"] <= 0.01 and got["n_suspect"] == 30
    assert got["p_value_ttest"] < 0.05 and set(got["weights"]) == set(got["features"]) and got["blind_auc"] < 0.7
    assert "min_k_pp@0.2" in got["features"] and "VERDICT [used]" in r.stdout
    # the first line and the report name the model, the data and the verdict (issue 40)
    assert "audited: demo target · files m.txt vs n.txt: 30 suspect vs 30 validation texts — used (p" in r.stdout
    html = (tmp_path / "used" / "report.html").read_text()
    assert "<b>Used.</b>" in html and "plotly" in html and "permutation test" in html
    assert "demo target" in html and "m.txt" in html and "n.txt" in html and "Min-K%++ (k = 20 %)" in html
    assert "min_k_pp@0.2" not in html.split("<script")[0]  # features by their display names
    r = mia("infer-dataset", "--suspect", tmp_path / "p.txt", "--validation", tmp_path / "n.txt", "--model",
                d["target"], "--permutations", "999", "--out", tmp_path / "null", "--quiet")
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads((tmp_path / "null" / "dataset_inference.json").read_text())
    assert got["verdict"] == "not_shown" and got["p_value"] > 0.05
    scores = (tmp_path / "null" / "scores.csv").read_text().splitlines()
    assert scores[0].startswith("text_id,set,loss") and len(scores) == 61
    # reversed: the never-trained texts as the suspect set against the members (issue 38: "used, p <= 1e-4" before)
    r = mia("infer-dataset", "--suspect", tmp_path / "n.txt", "--validation", tmp_path / "m.txt", "--model",
                d["target"], "--permutations", "999", "--out", tmp_path / "reversed", "--quiet")
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads((tmp_path / "reversed" / "dataset_inference.json").read_text())
    assert got["verdict"] == "not_shown" and got["p_value"] > 0.5 and got["statistic"] < 0
    assert "no more member-like" in got["verdict_reason"]


@pytest.mark.slow
def test_bad_input_is_one_line_before_any_model(tmp_path):
    (tmp_path / "s.txt").write_text("\n".join(f"suspect text {i} with some words" for i in range(12)) + "\n")
    (tmp_path / "v.txt").write_text("\n".join(f"validation text {i} with other words" for i in range(3)) + "\n")
    r = mia("infer-dataset", "--suspect", tmp_path / "s.txt", "--validation", tmp_path / "v.txt",
                "--model", tmp_path / "no-model-here", "--quiet")
    assert_one_error(r.returncode, r.stderr, "at least 10")
    r = mia("infer-dataset", "--suspect", tmp_path / "s.txt", "--validation", tmp_path / "s.txt", "--quiet")
    assert_one_error(r.returncode, r.stderr, "appear in both")
    r = mia("infer-dataset", "--suspect", tmp_path / "s.txt", "--validation", tmp_path / "v.txt", "--alpha", "2")
    assert r.returncode == 2 and "alpha" in r.stderr
    (tmp_path / "v.txt").write_text("\n".join(f"validation text {i} with other words" for i in range(12)) + "\n")
    r = mia("infer-dataset", "--suspect", tmp_path / "s.txt", "--validation", tmp_path / "v.txt",
                "--param", "dc_pdd.a=-1", "--model", tmp_path / "no-model-here", "--quiet")
    assert_one_error(r.returncode, r.stderr, "dc_pdd.a")


def test_power_curve_falls_with_more_texts():
    from mia_core.dataset_inference.significance import power_curve

    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3))
    X[:150, 0] += 0.5
    y = np.r_[np.ones(150), np.zeros(150)].astype(int)
    curve = power_curve(X, y, sizes=(10, 50, 100), draws=5, n_permutations=199)
    assert [c["n"] for c in curve] == [10, 50, 100, 150] and curve[-1]["draws"] == 1
    assert curve[0]["median_p"] > curve[2]["median_p"] and curve[-1]["median_p"] <= 0.01
    assert all(c["min_p"] <= c["median_p"] <= c["max_p"] for c in curve)


@pytest.mark.slow
def test_a_shifted_validation_set_is_refused_without_loading_the_model(tmp_path):
    """WikiMIA's lesson: newer texts against older ones. The guard refuses before any model loads (the model
    given does not even exist), and says so in the output folder."""
    old = [f"The carriage drew up before the inn at dusk on the {i}th evening, and the coachman called for ale."
           for i in range(30)]
    new = [f"In 2024 the startup shipped update {i} of its app to the cloud, and users posted reviews online."
           for i in range(30)]
    (tmp_path / "s.txt").write_text("\n".join(new) + "\n")
    (tmp_path / "v.txt").write_text("\n".join(old) + "\n")
    r = mia("infer-dataset", "--suspect", tmp_path / "s.txt", "--validation", tmp_path / "v.txt", "--model",
                tmp_path / "no-such-model", "--out", tmp_path / "out", "--quiet")
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads((tmp_path / "out" / "dataset_inference.json").read_text())
    assert got["verdict"] == "refused" and got["p_value"] is None and got["blind_auc"] > 0.9
    html = (tmp_path / "out" / "report.html").read_text()
    assert "VERDICT [refused]" in r.stdout and "<b>Refused.</b> The blind baseline tells" in html
    # no model was loaded: the run still names the model it was to audit, the data and the verdict
    assert "audited: no-such-model · files s.txt vs v.txt: 30 suspect vs 30 validation texts — refused" in r.stdout
    assert "no-such-model" in html and "s.txt" in html


# ------------------------------------------------------------------------------------------------ books
def test_book_helpers():
    from mia_core.dataset_inference.books import benjamini_hochberg, holm, passages

    text = " ".join(f"w{i}" for i in range(1000))
    got = passages(text, words=100, max_passages=5)
    assert len(got) == 5 and got[0].split()[0] == "w0" and got[-1].split()[-1] == "w999"
    assert len(passages(text, words=300)) == 3  # the last 100 words (< 150) dropped
    p = [0.01, 0.04, 0.03, 0.5]
    np.testing.assert_allclose(holm(p), [0.04, 0.09, 0.09, 0.5])  # 4 x 0.01; max(3 x 0.03, .04); 2 x 0.04
    np.testing.assert_allclose(benjamini_hochberg(p), [0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])


@pytest.mark.slow
def test_books_demo_the_collection_is_detected_and_the_null_is_not(tmp_path):
    """Books mode on the document demo (20 member and 20 non-member documents of the demo target): the book is the
    unit; each suspect book gets its own p-value, BH-adjusted; alternate non-member documents: not shown."""
    import mia_core

    from mia_core.targets.demo import demo_paths
    from mia_core.documents import demo_documents

    mem, non = demo_documents()
    res = mia_core.infer_dataset(mem, non, str(demo_paths()["target"]), books=True, passage_words=64,
                                 n_permutations=999, alpha=0.05, device="cpu")
    s = res.summary
    assert s["mode"] == "books" and s["verdict"] == "used" and s["p_value"] <= 0.002 and s["n_passages"] > 100
    assert len(s["books"]) == 20 and all(b["p_value"] >= 1 / 21 - 1e-12 for b in s["books"])  # the conformal floor
    # the label-free score puts half the member books above every validation book (p at the floor 1/21); BH over 20
    # books then needs all 20 there to reach 0.05 (10 at the floor adjust to 0.095): honest, and what the note says
    assert s["correction"] == "bh" and sum(b["p_value"] <= 1 / 21 + 1e-12 for b in s["books"]) >= 8
    assert all(b["flagged"] == (b["p_adjusted"] <= 0.05) for b in s["books"])
    assert s["passages_per_book"] == min(b["n_passages"] for b in s["books"])
    res.save(tmp_path / "books")
    assert "Per book" in (tmp_path / "books" / "report.html").read_text()
    # a book name holding a line break (a zip member can) stays on its book's line of the report (issue 50)
    import dataclasses

    forged = dataclasses.replace(res, summary={**s, "books": [{**s["books"][0], "book": "a.txt\nerror: forged"}]})
    assert "\nerror: forged" not in forged.summary_text() and "a.txt\\nerror: forged" in forged.summary_text()
    null = mia_core.infer_dataset(non[::2], non[1::2], str(demo_paths()["target"]), books=True, passage_words=64,
                                  n_permutations=999, alpha=0.05, device="cpu")
    assert null.summary["verdict"] == "not_shown" and null.summary["p_value"] > 0.05
    assert any("cannot go below" in n for n in null.report)
    with pytest.raises(DataError, match="at least 5"):
        mia_core.infer_dataset(mem[:3], non, str(demo_paths()["target"]), books=True)


def test_saved_runs_are_listed_and_only_ours_deleted(tmp_path):
    from mia_core.dataset_inference import store
    from mia_core.dataset_inference.audit import DatasetInferenceResult

    import pandas as pd

    res = DatasetInferenceResult(summary={"n_suspect": 12, "n_validation": 12, "alpha": 0.01, "verdict": "refused",
                                          "verdict_reason": "shift", "blind_auc": 0.9, "p_value": None},
                                 scores=pd.DataFrame({"text_id": ["s0001"], "set": ["suspect"]}))
    meta = store.save(res, root=tmp_path)
    broken = store.save(res, root=tmp_path)
    (store.store_dir(tmp_path) / broken["id"] / "meta.json").unlink()  # a run of ours, damaged: its marker intact
    mine = store.store_dir(tmp_path) / "20260101-000000-abcdef"  # a folder of the id form the store did not write
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    listed = store.list_runs(tmp_path)
    assert {m["id"] for m in listed} == {meta["id"], broken["id"]}  # the user's folder is not a run
    assert [m["id"] for m in listed if m.get("damaged")] == [broken["id"]]
    assert next(m for m in listed if m["id"] == meta["id"])["verdict"] == "refused"
    assert store.load_summary(meta["id"], tmp_path)["verdict"] == "refused"
    with pytest.raises(DataError, match="not a .* the store saved"):
        store.delete("20260101-000000-abcdef", tmp_path)
    assert (mine / "notes.txt").read_text() == "mine"
    with pytest.raises(DataError, match="not a dataset-inference run id"):
        store.delete("../../etc", tmp_path)
    store.delete(broken["id"], tmp_path)  # damaged, still ours: deletable
    store.delete(meta["id"], tmp_path)
    assert store.list_runs(tmp_path) == [] and (mine / "notes.txt").exists()
    from mia_core import runs

    assert runs.list_runs(tmp_path) == []  # the calibration runs' listing does not see these


def test_features_that_cannot_be_used_are_dropped_or_refused():
    from mia_core.dataset_inference.features import clean

    n = 20
    cols = {"loss": np.arange(n, dtype=float), "flat": np.ones(n), "mostly_nan": np.r_[np.full(15, np.nan), np.ones(5)],
            "one_nan": np.r_[np.nan, np.arange(n - 1, dtype=float)]}
    names, X, ok, notes = clean(cols)
    assert names == ["loss", "one_nan"] and X.shape == (n, 2) and ok.sum() == n - 1
    assert any("flat dropped" in x for x in notes) and any("mostly_nan dropped" in x for x in notes)
    assert any("1 text excluded" in x for x in notes)
    with pytest.raises(DataError, match="no usable feature"):
        clean({"a": np.full(n, np.nan), "b": np.zeros(n)})


# ------------------------------------------------------------------------------------------------ words (issue 40)
def _synthetic_result(n: int = 12, blind_auc: float = 0.097):
    """A text result from synthetic features (no model): the suspect set shifted, ``n`` + ``n`` texts."""
    import pandas as pd

    from mia_core.dataset_inference.audit import DatasetInferenceResult, units_frame
    from mia_core.dataset_inference.significance import power_curve
    from mia_core.dataset_inference.verdict import test_stage

    rng = np.random.default_rng(0)
    y = np.r_[np.ones(n, int), np.zeros(n, int)]
    X = rng.normal(size=(2 * n, 3)) + 1.5 * y[:, None]
    t = test_stage(X, y, alpha=0.01, folds=5, n_permutations=199, seed=0, paper=True, unit="text")
    names = ["loss", "zlib", "min_k_pp@0.6"]
    df = pd.DataFrame({"text_id": [f"t{i}" for i in range(2 * n)], "set": np.where(y == 1, "suspect", "validation")})
    s = {"n_suspect": n, "n_validation": n, "folds": 5, "n_permutations": 199, "seed": 0, **t["summary"],
         "features": names, "weights": dict(zip(names, t["perm"]["weights"])), "blind_auc": blind_auc,
         "blind_p_value": 0.98, "power_curve": power_curve(X, y, folds=5, seed=0), "model": "demo target",
         "n_excluded": 0}
    return DatasetInferenceResult(summary=s, scores=units_frame(df, names, X, np.ones(2 * n, bool), t),
                                  metrics=t["metrics"], report=["a note that starts lowercase"])


def test_features_are_named_as_the_rest_of_the_product_names_the_attacks():
    from mia_core.api.inference import inference_feature_label
    from mia_core.attacks import REGISTRY

    assert inference_feature_label("min_k_pp@0.6") == "Min-K%++ (k = 60 %)"
    assert inference_feature_label("min_k@0.05") == "Min-K% (k = 5 %)"
    assert inference_feature_label("loss") == REGISTRY["loss"].label == "LOSS"
    assert inference_feature_label("dc_pdd") == REGISTRY["dc_pdd"].label
    assert inference_feature_label("not_an_attack") == "not_an_attack"


def test_a_saved_run_and_its_report_name_the_model_the_data_and_the_verdict(tmp_path, monkeypatch):
    """The demo and the demo-null runs get different names; the report's header names the model (short name and
    identity), the data and the verdict; features by their display names; the verdict is said once."""
    from mia_core.api.inference import inference_report, list_inference_runs, load_inference_run, save_inference_run

    monkeypatch.setenv("MIA_RUNS_DIR", str(tmp_path))
    metas = {src: save_inference_run(_synthetic_result(), model="demo target",
                                     inputs={"model": "demo target", "model_identity": "demo-id|fp32",
                                             "source": src}) for src in ("demo", "demo_null")}
    p = metas["demo"]["name"].split("— used (p = ")[1]
    assert metas["demo"]["name"] == f"demo target · demo: 12 suspect vs 12 validation texts — used (p = {p}"
    assert metas["demo_null"]["name"].startswith("demo target · demo null: 12 suspect vs 12 validation texts — used")
    listed = {m["id"]: m for m in list_inference_runs()}
    assert listed[metas["demo_null"]["id"]]["data"] == "demo null: 12 suspect vs 12 validation texts"
    assert listed[metas["demo"]["id"]]["model_identity"] == "demo-id|fp32"
    up = save_inference_run(_synthetic_result(), inputs={"model": "tiny", "source": "upload",
                                                         "suspect_files": ["a.txt", "b.txt", "c.txt"],
                                                         "validation_files": ["v.txt"]})
    assert up["name"].startswith("tiny · files a.txt, b.txt (+1) vs v.txt: 12 suspect vs 12 validation texts — used")
    html = inference_report(metas["demo_null"]["id"]).decode()
    head = html.split("<script")[0]
    for needle in ("What was audited", "demo target", "demo-id|fp32", "null case", "used (p = ",
                   "Min-K%++ (k = 60 %)", "<b>Used.</b> The suspect texts"):
        assert needle in head, needle
    assert "<li>A note that starts lowercase</li>" in html  # the notes as sentences
    assert "min_k_pp@0.6" not in head and "Verdict: used" not in head
    assert load_inference_run(metas["demo"]["id"]).inputs["source"] == "demo"


def test_a_run_saved_before_the_names_is_listed_and_read_as_before(tmp_path, monkeypatch):
    """A meta.json without ``data``, ``model_identity`` or ``inputs`` (runs saved before issue 40): its name kept,
    the new fields empty, the run read back with no inputs, its report written again without them."""
    from mia_core.dataset_inference import store
    from mia_core.dataset_inference.report import dataset_inference_report, run_name

    monkeypatch.setenv("MIA_RUNS_DIR", str(tmp_path))
    meta = store.save(_synthetic_result(), name="12 suspect vs 12 validation texts")
    folder = store.store_dir() / meta["id"]
    old = json.loads((folder / "meta.json").read_text())
    for k in ("data", "model_identity", "inputs"):
        old.pop(k)
    (folder / "meta.json").write_text(json.dumps(old))
    listed = store.list_runs()[0]
    assert listed["name"] == "12 suspect vs 12 validation texts" and listed["data"] is None
    assert "damaged" not in listed
    res = store.load_result(meta["id"])
    assert res.inputs == {}
    assert run_name(res.summary).startswith("demo target · 12 suspect vs 12 validation texts — used")
    assert "<th>data</th><td>not recorded</td>" in dataset_inference_report(res)


def test_a_blind_auc_far_below_a_half_is_worded_and_the_power_floor_labelled():
    from mia_core.api.inference import inference_notes
    from mia_core.reports.plots import di_power_curve

    s = _synthetic_result(blind_auc=0.097).summary
    words = inference_notes(s)
    assert words["verdict"] == "Used" and words["reason"].startswith("The suspect texts")
    assert "0.097 on 12 + 12 texts" in words["blind"] and "not evidence of anything" in words["blind"]
    assert inference_notes(_synthetic_result(blind_auc=0.52).summary)["blind"] is None
    # the curve's points use 999 permutations (floor 0.001); the headline used 199 here
    assert "999 permutations" in words["power_floor"] and "1 / (999 + 1) = 0.001" in words["power_floor"]
    assert "199 permutations" in words["power_floor"]
    fig = di_power_curve(s["power_curve"], alpha=0.01, n_permutations=10_000)
    label = next(a.text for a in fig.layout.annotations if "floor" in a.text)
    assert "1/(999+1) = 0.001" in label and "headline used 10,000" in label, label
    assert fig.layout.xaxis.tickformat == "d" and all(float(v).is_integer() for v in fig.layout.xaxis.tickvals)
    # issue 53 item 9: the floor lies inside the y range with room below it (its note was drawn over the axis title)
    import math

    assert fig.layout.yaxis.range[0] < math.log10(0.001) - 0.3 and fig.layout.margin.b >= 80
    floor_note = next(a for a in fig.layout.annotations if "floor" in a.text)  # at the floor line, log10 units
    assert floor_note.yref == "y" and abs(floor_note.y - math.log10(0.001)) < 1e-9
    # a refused run (old: lowercase reason) is worded as a sentence
    assert inference_notes({"verdict": "refused", "verdict_reason": "the blind baseline tells"})["reason"] \
        == "The blind baseline tells"


def test_the_report_says_the_books_and_the_verdict_in_words():
    """Issue 53 item 6: the per-book table had ``n_passages`` and ``False``; "Not shown" sat in a green box."""
    from mia_core.dataset_inference.report import books_table, dataset_inference_report

    t = books_table([{"book": "a", "n_passages": 3, "score": 0.1, "p_value": 0.5, "p_adjusted": 0.6, "flagged": False},
                     {"book": "b", "n_passages": 3, "score": 0.9, "p_value": 0.01, "p_adjusted": 0.02, "flagged": True}])
    assert list(t.columns) == ["Book", "Passages", "Score (higher: more member-like)", "p-value", "Adjusted p-value",
                               "Stands out"] and list(t["Stands out"]) == ["–", "yes"]
    res = _synthetic_result()
    res.summary["verdict"], res.summary["verdict_reason"] = "not_shown", "not shown here"
    html = dataset_inference_report(res)
    assert "class='banner neutral'><b>Not shown.</b>" in html and "banner ok'><b>Not shown" not in html
