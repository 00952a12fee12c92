"""Issue 67, item 1: a run store deletes only what it wrote.

A run is recognised by the marker the store writes into it (``.mia-run.json``: the tool, its version, the kind and
the id); a folder without it is not a run, whatever files it holds: not listed, never deleted (through
``mia_core.runs``, ``mia_core.audits.saved`` and the Runs page), counted in one line. A damaged run (marker intact,
a file missing) stays deletable; a run saved before the marker (its id's form, a ``meta.json`` recording that id)
is still one. A delete renames the run aside first, so an interrupted delete leaves the run whole or gone.
Runs are built by hand from synthetic scores (no model).
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from helpers import empty_cache, no_exception, runs_page
from mia_core import metrics as M
from mia_core import runs
from mia_core.audits import audit_named
from mia_core.audits import saved
from mia_core.errors import DataError
from mia_core.pipeline import RunResult
from mia_core.runs.folder import RUN_MARKER


@pytest.fixture
def store(tmp_path, monkeypatch):
    d = tmp_path / "runs"
    d.mkdir()
    monkeypatch.setenv("MIA_RUNS_DIR", str(d))
    monkeypatch.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path / "cache")))
    return d


def _save(name: str, seed: int = 0) -> runs.StoredRun:
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(8, dtype=int), np.zeros(8, dtype=int)]
    scores = labels + rng.normal(0.0, 1.0, labels.size)
    df = pd.DataFrame({"text_id": [f"t{i}" for i in range(labels.size)], "label": labels,
                       "text_hash": [f"h{seed}-{i}" for i in range(labels.size)], "loss": scores})
    m = M.evaluate(labels, scores, n_bootstrap=20, seed=0)
    m["label"] = "LOSS"
    res = RunResult(scores=df, metrics={"loss": m}, config={"attacks": ["loss"], "split": None},
                    models={"target": {"name": "tiny", "identity": "tiny-fp32", "dtype": "fp32", "quantize": "none"}},
                    timings={}, report=[])
    return runs.save_run(res, name=name)


def _files(p) -> dict:
    return {str(f.relative_to(p)): f.read_bytes() for f in sorted(p.rglob("*")) if f.is_file()}


def test_a_saved_run_carries_the_marker(store):
    run = _save("a")
    rec = json.loads((run.path / RUN_MARKER).read_text())
    assert rec["tool"] == "mia-dashboard" and rec["kind"] == "run" and rec["id"] == run.id and rec["version"]


def test_a_users_folder_holding_run_files_is_never_listed_or_deleted(store):
    """The issue's two cases: ``myproject`` (scores.csv, notes.txt) and ``mine2`` (meta.json {"hello": 1},
    thesis.tex), through both doors; then the same in another audit's folder."""
    good = _save("good")
    mine = store / "myproject"
    mine.mkdir()
    (mine / "scores.csv").write_text("text_id,label,loss\na,1,0.5\n")
    (mine / "notes.txt").write_text("my notes")
    mine2 = store / "mine2"
    mine2.mkdir()
    (mine2 / "meta.json").write_text('{"hello": 1}')
    (mine2 / "thesis.tex").write_text("\\documentclass{article}")
    before = {p.name: _files(p) for p in (mine, mine2)}
    assert [m["id"] for m in runs.list_runs()] == [good.id]
    assert [m["id"] for m in saved.list_runs("run")] == [good.id]
    assert runs.foreign_folders() == ["mine2", "myproject"]
    for call in (lambda: runs.delete_run("myproject"), lambda: saved.delete_run("run", "mine2"),
                 lambda: saved.delete_run("run", "myproject")):
        with pytest.raises(DataError) as e:
            call()
        assert "not a run the store saved" in str(e.value) and "\n" not in str(e.value)
    assert {p.name: _files(p) for p in (mine, mine2)} == before

    docs = audit_named("documents").store()
    folder = docs.folder()
    theirs = folder / "20240101-000000-abcdef"  # the store's id form, a meta.json, but not the store's
    theirs.mkdir()
    (theirs / "meta.json").write_text('{"id": "someone-else"}')
    (theirs / "draft.txt").write_text("mine")
    assert saved.list_runs("documents") == []
    assert f"{docs.subdir}/{theirs.name}" in runs.foreign_folders()
    with pytest.raises(DataError, match="not a .* the store saved"):
        saved.delete_run("documents", theirs.name)
    assert (theirs / "draft.txt").read_text() == "mine"


def test_a_marker_of_another_tool_or_kind_is_not_the_stores(store):
    run = _save("a")
    (run.path / RUN_MARKER).write_text(json.dumps({"tool": "someone-else", "kind": "run", "id": run.id}))
    assert runs.list_runs() == [] and runs.foreign_folders() == [run.id]
    with pytest.raises(DataError):
        runs.delete_run(run.id)
    (run.path / RUN_MARKER).write_text(json.dumps({"tool": "mia-dashboard", "kind": "documents", "id": run.id}))
    with pytest.raises(DataError):
        runs.delete_run(run.id)
    assert (run.path / "scores.csv").exists()


def test_a_damaged_run_and_a_run_saved_before_the_marker_are_deletable(store):
    damaged, legacy = _save("damaged", 1), _save("legacy", 2)
    (damaged.path / "scores.csv").unlink()
    (damaged.path / "meta.json").unlink()
    (legacy.path / RUN_MARKER).unlink()  # as saved before issue 67: its meta.json records its id
    listed = {m["id"]: m for m in runs.list_runs()}
    assert set(listed) == {damaged.id, legacy.id} and "damaged" in listed[damaged.id]
    assert runs.load_run(legacy.id).attack_names() == ["loss"]
    runs.delete_run(damaged.id)
    saved.delete_run("run", legacy.id)
    assert not damaged.path.exists() and not legacy.path.exists() and runs.list_runs() == []


def test_an_interrupted_delete_leaves_the_run_whole_or_gone(store, monkeypatch):
    """The run is renamed aside in one step before anything is removed: the listing never shows half a run, and
    the next delete removes what an interrupted one left (only where it is the store's)."""
    import mia_core.runs.folder as S  # where remove_aside lives

    a, b = _save("a", 1), _save("b", 2)
    real = S.shutil.rmtree

    def interrupted(path, *args, **kw):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(S.shutil, "rmtree", interrupted)
    with pytest.raises(DataError) as e:
        runs.delete_run(a.id)
    assert "not removed completely" in str(e.value)
    assert [m["id"] for m in runs.list_runs()] == [b.id] and not a.path.exists()
    left = [p for p in store.iterdir() if p.name.startswith(f".{a.id}.deleting-")]
    assert len(left) == 1 and (left[0] / "scores.csv").exists()
    assert runs.foreign_folders() == []
    monkeypatch.setattr(S.shutil, "rmtree", real)
    runs.delete_run(b.id)
    assert list(store.iterdir()) == []


@pytest.mark.slow
def test_the_runs_page_lists_only_the_stores_runs_and_compares_two_healthy_ones(store):
    """The page's first view: no error box, the user's folder named as left alone (never offered), Compare's
    runs the two newest that open (a newer damaged run is not one of them)."""
    older, newer = _save("older", 1), _save("newer", 2)
    broken = _save("broken", 3)
    (broken.path / "metrics.json").unlink()
    mine = store / "myproject"
    mine.mkdir()
    (mine / "scores.csv").write_text("text_id,label,loss\na,1,0.5\n")
    (mine / "notes.txt").write_text("my notes")
    at = runs_page()
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    assert any("was not written by mia and is left alone" in c.value and "myproject" in c.value for c in at.caption)
    assert at.selectbox(key="runs_a").value == older.id and at.selectbox(key="runs_b").value == newer.id
    assert at.selectbox(key="runs_open").value == newer.id
    assert not any("myproject" in o for o in at.selectbox(key="runs_open").options)
    assert len(at.selectbox(key="runs_a").options) == 2  # the damaged run is not offered to compare
    at.selectbox(key="runs_open").set_value(broken.id).run()
    assert any("damaged" in e.value for e in at.error)  # chosen, it says why in one line
    at.checkbox(key="runs_confirm").check().run()
    at.button(key="runs_delete").click().run()
    no_exception(at)
    assert {m["id"] for m in runs.list_runs()} == {older.id, newer.id}  # the damaged one, deleted from the page
    assert (mine / "notes.txt").read_text() == "my notes"
