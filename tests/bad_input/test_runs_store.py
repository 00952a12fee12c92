"""Damaged runs in the run store (issue 27, item 4; the Runs page part of item 6).

One bad file must not take the Runs page down: a run folder whose ``meta.json`` is a list, null,
not JSON or missing, has a string where a number belongs or a mapping where a string belongs, a run
whose metrics.json / run.json / scores.csv is of the wrong shape, a link in place of a run folder.
The engine (``mia_core.runs``) lists every such run with ``meta["damaged"]`` (one line: why), refuses
to open it with a one-line ``DataError`` (never another exception), and deletes it (a link as a link:
what it points to survives). The Runs page, under Streamlit's ``AppTest``, renders with damaged runs
present, lists each with its "damaged: why" row, deletes the run shown (not another run of the same
name and time), and shows a run name written as Markdown as text (no image fetched).

The valid runs are built by hand from small synthetic scores (no model): a few ms each.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import empty_cache, no_exception, runs_page
from mia_core import metrics as M
from mia_core import runs
from mia_core.errors import DataError
from mia_core.pipeline import RunResult

IMAGE_NAME = "![x](http://example.com/x.png)"


@pytest.fixture
def store(tmp_path, monkeypatch) -> Path:
    """An empty runs folder (``MIA_RUNS_DIR``) and statistics cache for one test."""
    d = tmp_path / "runs"
    d.mkdir()
    monkeypatch.setenv("MIA_RUNS_DIR", str(d))
    monkeypatch.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path / "cache")))
    return d


def _result(seed: int = 0) -> RunResult:
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(10, dtype=int), np.zeros(10, dtype=int)]
    scores = labels + rng.normal(0.0, 1.0, labels.size)
    df = pd.DataFrame({"text_id": [f"t{i}" for i in range(labels.size)], "label": labels,
                       "text_hash": [f"h{seed}-{i}" for i in range(labels.size)], "loss": scores})
    m = M.evaluate(labels, scores, n_bootstrap=20, seed=0)
    m["label"] = "LOSS"
    return RunResult(scores=df, metrics={"loss": m}, config={"attacks": ["loss"], "split": None},
                     models={"target": {"name": "tiny", "identity": "tiny-fp32", "dtype": "fp32", "quantize": "none"}},
                     timings={"target_pass": 0.5}, report=["a note"])


def _save(name: str = "good run", seed: int = 0) -> runs.StoredRun:
    return runs.save_run(_result(seed), name=name)


def _copy(src: runs.StoredRun, run_id: str) -> Path:
    """A copy of a saved run under another id (the raw material of a damaged run)."""
    dst = runs.runs_dir() / run_id
    shutil.copytree(src.path, dst)
    return dst


def _edit_meta(p: Path, **fields) -> None:
    meta = json.loads((p / "meta.json").read_text())
    meta.update(fields)
    (p / "meta.json").write_text(json.dumps(meta))


def _write(p: Path, fname: str, text: str) -> None:
    (p / fname).write_text(text)


def _link_meta(p: Path) -> None:
    """meta.json a link to a file outside the store (a sound meta.json: only the link is wrong)."""
    outside = p.parent.parent / f"outside-meta-{p.name}.json"
    shutil.copy(p / "meta.json", outside)
    (p / "meta.json").unlink()
    os.symlink(outside, p / "meta.json")


# case: (how the copy is damaged, a word of the listing's reason (None: listed as sound),
#        a word of load_run's DataError (None: it opens, with meta["damaged"] naming the field))
CASES = {
    "meta_list": (lambda p: _write(p, "meta.json", "[1, 2]"), "list", "list"),
    "meta_null": (lambda p: _write(p, "meta.json", "null"), "null", "null"),
    "meta_not_json": (lambda p: _write(p, "meta.json", "{not json"), "not JSON", "not JSON"),
    "meta_binary": (lambda p: (p / "meta.json").write_bytes(b"\xff\xfe\x00bad"), "UTF-8", "UTF-8"),
    "meta_missing": (lambda p: (p / "meta.json").unlink(), "missing", "missing"),
    "created_ts_text": (lambda p: _edit_meta(p, created_ts="yesterday"), "created_ts", None),
    "created_mapping": (lambda p: _edit_meta(p, created={"day": 1}), "created", None),
    "name_mapping": (lambda p: _edit_meta(p, name={"first": "x"}), "name", None),
    "name_list": (lambda p: _edit_meta(p, name=["x"]), "name", None),
    "auc_text": (lambda p: _edit_meta(p, auc="high"), "auc", None),
    "auc_values_text": (lambda p: _edit_meta(p, auc={"loss": "0.9", "blind": [1]}), "auc.loss", None),
    "target_text": (lambda p: _edit_meta(p, target="gpt2", reference=[1]), "target", None),
    "target_name_mapping": (lambda p: _edit_meta(p, target={"name": {"x": 1}, "dtype": 32}), "target.name", None),
    "attacks_number": (lambda p: _edit_meta(p, attacks=5, n_members="ten", data=["a.txt"]), "attacks", None),
    "verdict_mapping": (lambda p: _edit_meta(p, verdict={"level": "ok"}), "verdict", None),
    "metrics_list": (lambda p: _write(p, "metrics.json", "[]"), None, "metrics.json is a list"),
    "metrics_empty": (lambda p: _write(p, "metrics.json", "{}"), None, "no attack"),
    "metrics_attack_text": (lambda p: _write(p, "metrics.json", '{"loss": "x"}'), None, "loss is text"),
    "metrics_auc_text": (lambda p: _write(p, "metrics.json", '{"loss": {"auc": "high"}}'), None, "auc"),
    "metrics_ci_short": (lambda p: _write(p, "metrics.json", '{"loss": {"auc": 0.5, "auc_ci": [0.1]}}'), None,
                         "auc_ci"),
    "metrics_roc_text": (lambda p: _write(p, "metrics.json", '{"loss": {"roc": {"fpr": ["a"], "tpr": [1]}}}'), None,
                         "roc"),
    "metrics_missing": (lambda p: (p / "metrics.json").unlink(), "metrics.json is missing", "missing"),
    "run_null": (lambda p: _write(p, "run.json", "null"), None, "run.json is null"),
    "run_report_text": (lambda p: _write(p, "run.json", '{"report": "one note"}'), None, "report"),
    "run_models_list": (lambda p: _write(p, "run.json", '{"models": {"target": [1]}}'), None, "models"),
    "run_verdict_text": (lambda p: _write(p, "run.json", '{"shift": {"verdict": "ok"}}'), None, "verdict"),
    "run_population_text": (lambda p: _write(p, "run.json", '{"population": {"attacks": {"loss": {"recall": "x"}}}}'),
                            None, "recall"),
    "run_known_truth_list": (lambda p: _write(p, "run.json", '{"extra": {"known_truth": [1]}}'), None, "known_truth"),
    "scores_missing": (lambda p: (p / "scores.csv").unlink(), "scores.csv is missing", "missing"),
    "scores_no_label": (lambda p: _write(p, "scores.csv", "text_id,loss\na,1\n"), None, "label"),
    "scores_bad_label": (lambda p: _write(p, "scores.csv", "text_id,label,loss\na,yes,1\n"), None, "label"),
    "scores_text_score": (lambda p: _write(p, "scores.csv", "text_id,label,loss\na,1,high\n"), None, "loss"),
    "scores_empty": (lambda p: _write(p, "scores.csv", ""), None, "scores.csv"),
    "meta_is_link": (lambda p: _link_meta(p), "link", "link"),
}
DAMAGED_ID = "20200101-000000-abcdef"


def _one_line(msg: str) -> None:
    assert msg and "\n" not in msg and "Traceback" not in msg, msg


@pytest.mark.parametrize("case", list(CASES))
def test_a_damaged_run_is_listed_flagged_refused_in_one_line_and_deletable(store, case):
    damage, listed_word, load_word = CASES[case]
    good = _save()
    p = _copy(good, DAMAGED_ID)
    damage(p)

    metas = runs.list_runs()
    assert sorted(m["id"] for m in metas) == sorted([good.id, DAMAGED_ID])
    by_id = {m["id"]: m for m in metas}
    assert "damaged" not in by_id[good.id]
    bad = by_id[DAMAGED_ID]
    for m in metas:  # every entry has the fields the pages read, of the right type
        assert isinstance(m["name"], str) and m["name"] and isinstance(m["created"], str)
        assert isinstance(m["created_ts"], (int, float)) and isinstance(m["attacks"], list)
        assert isinstance(m["auc"], dict) and all(v is None or isinstance(v, float) for v in m["auc"].values())
        assert all(m.get(r) is None or isinstance(m[r], dict) for r in ("target", "reference"))
        assert isinstance(m["data"], dict)
    if listed_word is None:
        assert "damaged" not in bad
    else:
        _one_line(bad["damaged"])
        assert listed_word.lower() in bad["damaged"].lower(), bad["damaged"]

    if load_word is None:  # a meta field of the wrong type: the run opens, the field named
        run = runs.load_run(DAMAGED_ID)
        assert listed_word in run.meta["damaged"] and isinstance(run.name, str)
        runs.rename_run(DAMAGED_ID, "fixed name")
        assert runs.load_run(DAMAGED_ID).name == "fixed name"
    else:
        with pytest.raises(DataError) as e:
            runs.load_run(DAMAGED_ID)
        _one_line(str(e.value))
        assert DAMAGED_ID in str(e.value) and load_word.lower() in str(e.value).lower(), str(e.value)
    latest = runs.latest_run()  # the newest run that opens
    assert latest is not None and (latest.id == good.id or load_word is None)

    runs.delete_run(DAMAGED_ID)
    assert not os.path.lexists(p)
    assert [m["id"] for m in runs.list_runs()] == [good.id]
    assert runs.load_run(good.id).attack_names() == ["loss"]


def test_rename_of_an_unreadable_meta_is_one_line(store):
    p = _copy(_save(), DAMAGED_ID)
    _write(p, "meta.json", "[]")
    with pytest.raises(DataError, match="meta.json is a list"):
        runs.rename_run(DAMAGED_ID, "x")
    (p / "meta.json").unlink()
    with pytest.raises(DataError, match="missing"):
        runs.rename_run(DAMAGED_ID, "x")


def test_a_save_beside_damaged_runs_works(store):
    p = _copy(_save(), DAMAGED_ID)
    _write(p, "meta.json", "null")
    again = runs.save_run(_result(1))  # save_run reads the listing (the newest run's content, the names taken)
    assert runs.load_run(again.id).attack_names() == ["loss"]


def _outside_run(tmp_path: Path, good: runs.StoredRun) -> tuple[Path, dict[str, bytes]]:
    """A folder outside the store holding a run's files and one more: what a link points to."""
    out = tmp_path / "outside"
    shutil.copytree(good.path, out)
    (out / "precious.txt").write_text("not the store's to delete")
    return out, {f.name: f.read_bytes() for f in out.iterdir()}


def test_a_linked_run_folder_is_never_followed_and_deleted_as_a_link(store, tmp_path):
    good = _save()
    out, files = _outside_run(tmp_path, good)
    link = store / DAMAGED_ID
    os.symlink(out, link)

    bad = {m["id"]: m for m in runs.list_runs()}[DAMAGED_ID]
    _one_line(bad["damaged"])
    assert "link" in bad["damaged"] and bad["name"] == DAMAGED_ID  # its meta.json is not read
    for fn in (runs.load_run, lambda i: runs.rename_run(i, "renamed")):
        with pytest.raises(DataError) as e:
            fn(DAMAGED_ID)
        _one_line(str(e.value))
    runs.delete_run(DAMAGED_ID)
    assert not os.path.lexists(link)
    assert {f.name: f.read_bytes() for f in out.iterdir()} == files  # the target untouched, renamed nowhere
    assert [m["id"] for m in runs.list_runs()] == [good.id]


def test_a_link_inside_a_run_folder_is_not_followed(store, tmp_path):
    good = _save()
    outside = tmp_path / "outside.csv"
    shutil.copy(good.path / "scores.csv", outside)
    p = _copy(good, DAMAGED_ID)
    (p / "scores.csv").unlink()
    os.symlink(outside, p / "scores.csv")
    assert "link" in {m["id"]: m for m in runs.list_runs()}[DAMAGED_ID]["damaged"]
    with pytest.raises(DataError, match="link"):
        runs.load_run(DAMAGED_ID)
    runs.delete_run(DAMAGED_ID)
    assert not os.path.lexists(p) and outside.read_bytes() == (good.path / "scores.csv").read_bytes()


def test_a_folder_that_is_no_run_is_neither_listed_nor_deleted(store):
    """Issue 67: a run is what carries the store's marker; a folder without it (a user's own, an empty one with a
    run's id) is not listed, not deleted, and counted as left alone."""
    good = _save()
    mine = store / "Documents"
    mine.mkdir()
    (mine / "letter.txt").write_text("mine")
    empty_run = store / DAMAGED_ID  # an empty folder with a run's id: nothing says the store wrote it
    empty_run.mkdir()
    assert {m["id"] for m in runs.list_runs()} == {good.id}
    assert runs.foreign_folders() == sorted(["Documents", DAMAGED_ID])
    for rid in ("Documents", DAMAGED_ID):
        with pytest.raises(DataError, match="not a run the store saved"):
            runs.delete_run(rid)
    assert (mine / "letter.txt").read_text() == "mine" and empty_run.is_dir()
    for bad in ("../runs", "..", "a/b", ""):
        with pytest.raises(DataError):
            runs.delete_run(bad)


def _twins() -> tuple[runs.StoredRun, runs.StoredRun]:
    """Two runs with the same name and the same created time (to the second and beyond)."""
    a, b = _save("twin", seed=1), _save("twin", seed=2)
    for r in (a, b):
        _edit_meta(r.path, created="2024-05-01 12:00:00", created_ts=1714564800.0)
    return a, b


def test_two_runs_with_the_same_name_and_time_are_two_runs(store):
    a, b = _twins()
    metas = runs.list_runs()
    assert sorted(m["id"] for m in metas) == sorted([a.id, b.id])
    runs.delete_run(a.id)
    assert [m["id"] for m in runs.list_runs()] == [b.id]


# ------------------------------------------------------------------ the Runs page (AppTest)
pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

PAGE_CASES = ("meta_list", "meta_null", "meta_not_json", "created_ts_text", "name_mapping", "auc_values_text",
              "target_text", "metrics_list", "run_null", "scores_no_label", "scores_missing")


_page, _clean = runs_page, no_exception  # tests/helpers.py: the Runs page in AppTest, no traceback


def _table(at: AppTest) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "Name" in d.value.columns)


def _damaged_store(good: runs.StoredRun) -> dict[str, str]:
    """One damaged run per page case; {run id: case}."""
    made = {}
    for i, case in enumerate(PAGE_CASES):
        rid = f"20200101-0000{i:02d}-abcdef"
        CASES[case][0](_copy(good, rid))
        made[rid] = case
    return made


@pytest.mark.slow
def test_the_runs_page_lists_every_damaged_run_and_the_others_work(store, tmp_path):
    good, other = _save("good run", seed=1), _save("other run", seed=2)
    made = _damaged_store(good)
    out, files = _outside_run(tmp_path, good)
    os.symlink(out, store / "20200102-000000-abcdef")
    made["20200102-000000-abcdef"] = "link"

    at = _page()
    _clean(at)
    table = _table(at)
    listed_damaged = runs.list_runs()
    n_damaged = sum(1 for m in listed_damaged if m.get("damaged"))
    rows = [v for v in table["Damaged"] if v]
    assert len(table) == len(made) + 2 and len(rows) == n_damaged >= 8
    assert all(v == "damaged" for v in rows)  # a short mark: the table fits the page; the reasons are under it
    why = [line for m in at.markdown for line in m.value.splitlines() if ": damaged: " in line]
    assert len(why) == n_damaged
    for word in ("list", "null", "not JSON", "created_ts", "name", "auc.loss", "target", "scores.csv is missing",
                 "link"):
        assert any(word in v for v in why), (word, why)

    # the sound runs compare and open as before
    at.selectbox(key="runs_a").set_value(other.id)
    at.selectbox(key="runs_b").set_value(good.id).run()
    _clean(at)
    assert any("ΔAUC" in t.value.columns for t in at.table)
    at.selectbox(key="runs_open").set_value(good.id).run()
    _clean(at)
    assert not at.error and any("LOSS" in t.value.index for t in at.table if "AUC [95% CI]" in t.value.columns)

    # each damaged run: one line saying why (or, for a meta field of the wrong type, the run and a warning)
    for rid, case in made.items():
        at.selectbox(key="runs_open").set_value(rid).run()
        _clean(at)
        said = " ".join(e.value for e in at.error) + " ".join(w.value for w in at.warning)
        assert "damaged" in said, (case, said)
        assert all("\n" not in e.value and "Traceback" not in e.value for e in at.error)

    # and each can be deleted from the page, the link as a link
    for rid in made:
        at.selectbox(key="runs_open").set_value(rid)
        at.checkbox(key="runs_confirm").check().run()
        at.button(key="runs_delete").click().run()
        _clean(at)
        assert rid not in {m["id"] for m in runs.list_runs()}, rid
    assert {m["id"] for m in runs.list_runs()} == {good.id, other.id}
    assert {f.name: f.read_bytes() for f in out.iterdir()} == files


@pytest.mark.slow
def test_the_runs_page_deletes_the_run_shown_of_two_with_the_same_name_and_time(store):
    for first in (True, False):  # the first listed of the two, then the second: each is the one deleted
        for m in runs.list_runs():
            runs.delete_run(m["id"])
        _twins()
        listed = [m["id"] for m in runs.list_runs()]
        shown, other = (listed[0], listed[1]) if first else (listed[1], listed[0])
        at = _page()
        _clean(at)
        assert len(set(at.selectbox(key="runs_open").options)) == 2  # two options, told apart
        at.selectbox(key="runs_open").set_value(shown).run()
        _clean(at)
        assert at.selectbox(key="runs_open").value == shown
        at.checkbox(key="runs_confirm").check().run()
        at.button(key="runs_delete").click().run()
        _clean(at)
        assert [m["id"] for m in runs.list_runs()] == [other], (first, shown, other)


def _unfenced(md: str) -> str:
    """A Markdown body without its inline code spans (shown verbatim) and backslash-escaped characters."""
    md = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", md)
    return re.sub(r"\\.", "", md)


def test_a_run_name_written_as_markdown_is_shown_as_text(store, monkeypatch):
    # the name is everywhere a user string goes: run name, note, warning, model name, data file name
    res = _result()
    res.report = [f"note {IMAGE_NAME}"]
    res.metrics["loss"]["warnings"] = [f"warning {IMAGE_NAME}"]
    res.models["target"]["name"] = IMAGE_NAME
    stored = runs.save_run(res, name=IMAGE_NAME, data={"members": [IMAGE_NAME]})
    _save("second", seed=3)  # two runs: the comparison tab is drawn too
    at = _page()
    _clean(at)
    at.selectbox(key="runs_open").set_value(stored.id)
    at.selectbox(key="runs_a").set_value(stored.id).run()
    _clean(at)
    assert at.selectbox(key="runs_open").value == stored.id

    markdown_like = [*at.markdown, *at.caption, *at.error, *at.warning, *at.info, *at.success, *at.title,
                     *at.header, *at.subheader, *at.expander]
    bodies = [getattr(e, "value", None) or getattr(e, "label", "") or "" for e in markdown_like]
    assert sum(IMAGE_NAME in b for b in bodies) >= 2  # the name, as code: in the run's header and the comparison
    for b in bodies:
        assert "![" not in _unfenced(b) and "](" not in _unfenced(b), b  # no image, no link: code or escaped
    shown = " ".join(bodies)
    assert re.search(r"\\?!\\\[x\\\]\\?\(http", shown)  # the note and the warning, escaped
    assert IMAGE_NAME in _table(at)["Name"].tolist()  # the table's cells are text


@pytest.mark.slow
def test_the_html_report_of_a_damaged_run_says_why_in_one_line(store, monkeypatch):
    import dashboard.results as results

    good = _save()
    p = _copy(good, DAMAGED_ID)
    _edit_meta(p, created_ts="yesterday", data=["a.txt"])  # opens, with its meta damaged
    run = runs.load_run(DAMAGED_ID)
    assert run.meta["damaged"] and run.meta["data"] == {}
    from mia_core.reports.report import build_report

    assert "<!DOCTYPE html>" in build_report(run)  # the normalised meta makes a report
    assert "could not be written" not in results.report_or_why(run)

    def broken(_run):
        raise TypeError("'list' object is not a mapping")

    results.report_html.clear()
    monkeypatch.setattr(results, "build_report", broken)
    at = _page()
    at.selectbox(key="runs_open").set_value(DAMAGED_ID).run()
    _clean(at)
    errs = [e.value for e in at.error if "HTML report" in e.value]
    assert len(errs) == 1 and "not a mapping" in errs[0] and "\n" not in errs[0], errs
    # a sound run's report is written on the click: a file that says why, not a failed download
    page = results.report_or_why(runs.load_run(good.id))
    assert "could not be written" in page and "not a mapping" in page
    results.report_html.clear()


def test_inspect_offers_no_damaged_run_to_switch_to(store):
    from dashboard.inspect import calibration_runs, related_run

    good = _save()
    p = _copy(good, "20990101-000000-abcdef")  # newer than the good run
    _write(p, "meta.json", "null")
    assert runs.list_runs()[0]["id"] == p.name  # listed first, damaged
    assert related_run("another-model")["id"] == good.id
    assert [m["id"] for m in calibration_runs("tiny-fp32")] == [good.id]
