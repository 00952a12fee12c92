"""Damaged dataset-inference runs on the Runs page (issue 37), under Streamlit's ``AppTest``.

A saved dataset-inference run is a folder ``<runs dir>/_dataset_inference/<id>/`` with ``meta.json`` and
``report.html`` (``mia_core.dataset_inference.store``). Each kind of damage to ``meta.json`` (a name missing
or not text, a p-value or a blind-baseline AUC that is not a number, a creation time that is not a time, a
file that is not JSON, not a mapping, missing, a link) is shown beside one good run: the page renders without
an exception, the good run is still listed with its verdict, the damaged one is listed as damaged with one
line saying why. A ``report.html`` that is a link (to a file anywhere on the machine) is not handed out.

The run folders are written by hand (no model, no audit): a few ms each.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from helpers import empty_cache, no_exception, runs_page

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

GOOD_ID = "20240102-030405-abcdef"
GOOD_NAME = "the good dataset-inference run"
SECRET = "SECRET CONTENT OUTSIDE THE RUN FOLDER"


def _meta(run_id: str, **fields) -> dict:
    meta = {"id": run_id, "name": f"run {run_id}", "created": "2024-01-02 03:04", "created_ts": 1704164645.0,
            "model": "tiny", "verdict": "used", "p_value": 0.001, "p_value_is_bound": False, "n_suspect": 20,
            "n_validation": 20, "alpha": 0.01, "blind_auc": 0.52, "mode": "texts"}
    meta.update(fields)
    return {k: v for k, v in meta.items() if v is not _DROP}


_DROP = object()


def _run(store: Path, run_id: str, meta=None, *, raw: str | None = None, report: str | None = "<html>ok</html>") -> Path:
    from mia_core.runs.folder import write_run_marker

    d = store / run_id
    d.mkdir(parents=True)
    write_run_marker(d, "dataset_inference", run_id)  # as the store writes it (issue 67: what it may list and delete)
    if raw is not None:
        (d / "meta.json").write_text(raw)
    elif meta is not None:
        (d / "meta.json").write_text(json.dumps(meta))
    if report is not None:
        (d / "report.html").write_text(report)
    (d / "dataset_inference.json").write_text("{}")
    return d


def _meta_link(d: Path, tmp: Path) -> None:
    other = tmp / "elsewhere-meta.json"
    other.write_text(json.dumps(_meta(d.name)))
    os.symlink(other, d / "meta.json")


# damage kind: (meta fields, or raw meta.json text, or a function of (folder, tmp_path))
DAMAGE = {
    "name_missing": {"name": _DROP},
    "name_mapping": {"name": {"a": 1}},
    "name_number": {"name": 5},
    "p_value_text": {"p_value": "0.01"},
    "p_value_list": {"p_value": [0.5]},
    "p_value_over_one": {"p_value": 7},
    "blind_auc_text": {"blind_auc": "high"},
    "blind_auc_mapping": {"blind_auc": {"auc": 0.5}},
    "created_ts_text": {"created_ts": "yesterday"},
    "created_ts_huge_int": {"created_ts": 10**400},
    "created_ts_far_future": {"created_ts": 1e300},
    "created_ts_bool": {"created_ts": True},
    "sizes_text": {"n_suspect": "twenty", "n_validation": [1]},
    "mode_number": {"mode": 3},
    "everything_wrong": {"name": [], "p_value": "x", "blind_auc": "y", "created_ts": "z", "verdict": 1, "model": 2,
                         "created": 3, "alpha": "a", "p_value_is_bound": "no"},
    "meta_list": "[1, 2, 3]",
    "meta_null": "null",
    "meta_not_json": "{not json",
    "meta_empty": "",
    "meta_missing": None,
    "meta_link": _meta_link,
}
DAMAGED_ID = "20240101-000000-abc123"


@pytest.fixture
def store(tmp_path, monkeypatch) -> Path:
    runs = tmp_path / "runs"
    (runs / "_dataset_inference").mkdir(parents=True)
    monkeypatch.setenv("MIA_RUNS_DIR", str(runs))
    monkeypatch.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path / "cache")))
    _run(runs / "_dataset_inference", GOOD_ID, _meta(GOOD_ID, name=GOOD_NAME))
    return runs / "_dataset_inference"


def _damage(store: Path, tmp: Path, run_id: str, kind: str) -> None:
    how = DAMAGE[kind]
    if isinstance(how, dict):
        _run(store, run_id, _meta(run_id, **how))
    elif isinstance(how, str):
        _run(store, run_id, raw=how)
    elif how is None:
        _run(store, run_id)
    else:
        how(_run(store, run_id), tmp)


_page, _clean = runs_page, no_exception  # tests/helpers.py: the Runs page in AppTest, no traceback


def _di_table(at: AppTest) -> pd.DataFrame:
    tables = [d.value for d in at.dataframe if "Verdict" in d.value.columns]
    assert tables, "the dataset-inference table is not shown"
    return tables[0]


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_dataset_inference_run_is_listed_as_damaged_and_hides_nothing(kind, store, tmp_path):
    _damage(store, tmp_path, DAMAGED_ID, kind)
    from mia_core.dataset_inference import store as di_store

    listed = {m["id"]: m for m in di_store.list_runs()}  # the engine: every run, every field of its type
    assert set(listed) == {GOOD_ID, DAMAGED_ID}
    assert not listed[GOOD_ID].get("damaged") and listed[DAMAGED_ID].get("damaged")
    for m in listed.values():
        assert isinstance(m["name"], str) and m["name"] and isinstance(m["created"], str)
        assert isinstance(m["created_ts"], float)
        assert m["p_value"] is None or isinstance(m["p_value"], (int, float))
        assert m["blind_auc"] is None or isinstance(m["blind_auc"], (int, float))
        assert "\n" not in m.get("damaged", "")

    at = _page()
    _clean(at)
    table = _di_table(at)
    assert len(table) == 2, table
    good = table[table["Name"] == GOOD_NAME]
    assert len(good) == 1 and good["Verdict"].iloc[0] == "used" and good["Blind AUC"].iloc[0] == "0.520"
    bad = table[table["Name"] != GOOD_NAME]
    assert bad["Verdict"].iloc[0].startswith("damaged: "), bad
    assert "\n" not in bad["Verdict"].iloc[0]
    # the good run's report is handed out
    at.selectbox(key="runs_di_open").set_value(GOOD_ID).run()
    _clean(at)
    assert at.get("download_button")


def test_every_damaged_run_at_once_and_a_report_that_is_a_link(store, tmp_path):
    for i, kind in enumerate(DAMAGE):
        _damage(store, tmp_path, f"20230101-0000{i:02d}-abc123", kind)
    secret = tmp_path / "secret.html"
    secret.write_text(SECRET)
    link_id = "20240105-000000-fedcba"
    d = _run(store, link_id, _meta(link_id, name="report is a link"), report=None)
    os.symlink(secret, d / "report.html")
    inside_id = "20240106-000000-fedcba"  # a link to a file inside its own folder is not served either
    d = _run(store, inside_id, _meta(inside_id, name="report links inside"), report=None)
    (d / "real.html").write_text("<html>inside</html>")
    os.symlink(d / "real.html", d / "report.html")
    fifo_id = "20240107-000000-fedcba"  # a report that is not a regular file
    d = _run(store, fifo_id, _meta(fifo_id, name="report is a fifo"), report=None)
    os.mkfifo(d / "report.html")

    at = _page()
    _clean(at)
    table = _di_table(at)
    assert len(table) == len(DAMAGE) + 4
    assert GOOD_NAME in set(table["Name"])
    assert sum(v.startswith("damaged: ") for v in table["Verdict"]) == len(DAMAGE)
    assert any("damaged" in w.value for w in at.warning)

    for rid in (link_id, inside_id, fifo_id):
        at.selectbox(key="runs_di_open").set_value(rid).run()
        _clean(at)
        assert not at.get("download_button"), rid  # not served
        assert any("not served" in c.value for c in at.caption), [c.value for c in at.caption]
    at.selectbox(key="runs_di_open").set_value(GOOD_ID).run()
    _clean(at)
    assert at.get("download_button")
    assert secret.read_text() == SECRET


def test_the_store_never_reads_a_report_through_a_link(store, tmp_path):
    from mia_core.dataset_inference import store as di_store
    from mia_core.errors import DataError

    secret = tmp_path / "secret.html"
    secret.write_text(SECRET)
    rid = "20240105-000000-fedcba"
    d = _run(store, rid, _meta(rid), report=None)
    os.symlink(secret, d / "report.html")
    with pytest.raises(DataError, match="link"):
        di_store.read_report(rid)
    assert di_store.read_report(GOOD_ID) == b"<html>ok</html>"
    with pytest.raises(DataError, match="no report"):
        di_store.read_report(_run(store, "20240108-000000-fedcba", _meta("x"), report=None).name)


# ---------------------------------------------------------------------------- the calibration runs beside them
def _calibration_run(name: str, seed: int = 0):
    """A calibration run saved in the store from synthetic scores (no model)."""
    import numpy as np

    from mia_core import metrics as M
    from mia_core import runs
    from mia_core.pipeline import RunResult

    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(10, dtype=int), np.zeros(10, dtype=int)]
    df = pd.DataFrame({"text_id": [f"t{i}" for i in range(20)], "label": labels,
                       "text_hash": [f"h{seed}-{i}" for i in range(20)], "loss": labels + rng.normal(0, 1, 20)})
    m = M.evaluate(labels, df["loss"].to_numpy(), n_bootstrap=20, seed=0)
    m["label"] = "LOSS"
    res = RunResult(scores=df, metrics={"loss": m}, config={"attacks": ["loss"], "split": None},
                    models={"target": {"name": "tiny", "identity": "tiny-fp32", "dtype": "fp32", "quantize": "none"}},
                    timings={}, report=[])
    return runs.save_run(res, name=name)


def _listing_within(seconds: float, fn):
    """``fn()`` in a thread: its result, or a failure when it has not returned in ``seconds`` (a listing that
    opens a FIFO blocks for ever)."""
    import threading

    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - reported below
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"the listing did not return in {seconds} s (it opened a FIFO?)"
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_calibration_runs_with_huge_numbers_or_a_fifo_never_stop_the_listing(store, tmp_path):
    from mia_core import runs

    good = _calibration_run("good calibration run", seed=1)
    for i, edit in enumerate(({"created_ts": 10**400}, {"auc": {"loss": 10**400}}, {"n_members": 10**400})):
        bad = _calibration_run(f"damaged {i}", seed=2 + i)
        meta = json.loads((bad.path / "meta.json").read_text())
        meta.update(edit)
        (bad.path / "meta.json").write_text(json.dumps(meta))
    fifo = _calibration_run("meta is a fifo", seed=9)
    (fifo.path / "meta.json").unlink()
    os.mkfifo(fifo.path / "meta.json")
    di_fifo = _run(store, "20240109-000000-fedcba", None)
    os.mkfifo(di_fifo / "meta.json")

    listed = {m["id"]: m for m in _listing_within(20, runs.list_runs)}
    assert not listed[good.id].get("damaged") and "not a regular file" in listed[fifo.id]["damaged"]
    assert sum(1 for m in listed.values() if m.get("damaged")) == 4
    for m in listed.values():
        assert all(v is None or abs(v) < 1e300 for v in m["auc"].values())
    from mia_core.dataset_inference import store as di_store

    di = {m["id"]: m for m in _listing_within(20, di_store.list_runs)}
    assert "not a regular file" in di[di_fifo.name]["damaged"] and not di[GOOD_ID].get("damaged")

    at = _page()
    _clean(at)
    names = set(next(d.value for d in at.dataframe if "Best AUC" in d.value.columns)["Name"])
    assert "good calibration run" in names
    assert GOOD_NAME in set(_di_table(at)["Name"])
