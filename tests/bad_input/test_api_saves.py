"""Issue 37, lost data: every ``save(out_dir)`` of the API keeps the promises of ``--out``.

Before: ``RunResult.save``, the dataset-inference result's ``save`` and the document and masked-LM results'
``save`` wrote into any existing folder (a user's ``scores.csv`` / ``report.html`` overwritten), wrote *through*
a symbolic link named like one of their files (the link's target overwritten, a file created through a dangling
``metrics.json`` link), and replaced earlier results without being asked. Now each one goes through
``mia_core.runs.outputs.save_output``: a new or empty folder, or with ``overwrite=True`` one this tool wrote; written
into a temporary sibling (marked as the tool's) and published in one rename; anything else refused in one line.
The commands and stores that stage their folder themselves still call ``save`` into it.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mia_core.errors import MiaError, SettingsError
from mia_core.runs.outputs import OUTPUT_MARKER, staged_output


def _run():
    from mia_core.runs.results import RunResult

    return RunResult(scores=pd.DataFrame({"text_id": ["a", "b"], "label": [1, 0], "text_hash": ["h1", "h2"],
                                          "loss": [0.5, 0.7]}),
                     metrics={"loss": {"auc": 0.5}}, config={"attacks": ["loss"]}, models={}, timings={})


_DI: list = []


def _dataset_inference():
    """A real result without a model: a validation set the IID guard tells apart is refused before loading."""
    if not _DI:
        from mia_core.dataset_inference import run_dataset_inference

        old = [f"The carriage drew up before the inn at dusk on the {i}th evening, and the coachman called for ale."
               for i in range(30)]
        new = [f"In 2024 the startup shipped update {i} of its app to the cloud, and users posted reviews online."
               for i in range(30)]
        _DI.append(run_dataset_inference(new, old, "/no/such/model", n_permutations=99))
    assert _DI[0].summary["verdict"] == "refused"
    return _DI[0]


def _documents():
    from mia_core.documents.audit import DocumentAuditResult

    return DocumentAuditResult(documents=[{"name": "a", "label": 1}], labels=np.array([1]),
                               settings={"normalizations": []}, model={}, metrics={"MaxNormTF+hist": {"auc_mean": 0.5}},
                               scores=pd.DataFrame({"name": ["a"], "label": [1]}))


def _mlm():
    from mia_core.mlm.audit import MlmAuditResult

    return MlmAuditResult(metrics={}, group_metrics=None, population_scores={}, leak_features={}, energies={},
                          settings={}, models={},
                          scores=pd.DataFrame({"text_id": ["t1"], "label": [1], "likelihood_ratio": [0.1]}))


RESULTS = {"run": _run, "dataset_inference": _dataset_inference, "documents": _documents, "mlm": _mlm}
# a file each result writes (what a user's own file of the same name would lose)
OWN_FILE = {"run": "scores.csv", "dataset_inference": "report.html", "documents": "document_scores.csv",
            "mlm": "metrics.json"}


def _save(result, out, overwrite=None):
    """``result.save(out)``, with ``overwrite=`` only when given (the default is what a user writes first)."""
    return result.save(out) if overwrite is None else result.save(out, overwrite=overwrite)


def _one_line(e: MiaError) -> str:
    msg = str(e)
    assert "\n" not in msg and len(msg) < 400, msg
    return msg


def _tree(root) -> dict[str, str]:
    return {str(p.relative_to(root)): ("->" + str(p.readlink()) if p.is_symlink() else
                                       p.read_text() if p.is_file() else "/") for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("kind", RESULTS)
@pytest.mark.parametrize("overwrite", [None, True])
def test_a_folder_the_tool_did_not_write_is_never_written_into(kind, overwrite, tmp_path):
    mine = tmp_path / "my-analysis"
    mine.mkdir()
    (mine / OWN_FILE[kind]).write_text("my own work")
    (mine / "notes.txt").write_text("my notes")
    before = _tree(tmp_path)
    with pytest.raises(SettingsError) as e:
        _save(RESULTS[kind](), mine, overwrite)
    assert "was not written by this tool" in _one_line(e.value)
    assert _tree(tmp_path) == before  # nothing written, nothing left behind (no staging folder either)


@pytest.mark.parametrize("kind", RESULTS)
def test_never_written_through_a_link_named_like_an_output_file(kind, tmp_path):
    """A folder holding only links named like the result's files: the links' targets stay as they were, and a
    dangling link does not create its target."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("precious")
    trap = tmp_path / "trap"
    trap.mkdir()
    (trap / OWN_FILE[kind]).symlink_to(outside / "precious.txt")
    (trap / "metrics.json" if kind != "mlm" else trap / "scores.csv").symlink_to(outside / "created-through-a-link")
    before = _tree(tmp_path)
    for overwrite in (None, True):
        with pytest.raises(SettingsError):
            _save(RESULTS[kind](), trap, overwrite)
    assert _tree(tmp_path) == before
    assert not (outside / "created-through-a-link").exists()
    # the folder given as a link to a folder the tool did not write: refused too
    link = tmp_path / "link"
    link.symlink_to(trap, target_is_directory=True)
    with pytest.raises(SettingsError):
        RESULTS[kind]().save(link, overwrite=True)
    assert _tree(outside) == {"precious.txt": "precious"}


@pytest.mark.parametrize("kind", RESULTS)
def test_new_folder_then_earlier_results_refused_then_replaced_with_overwrite(kind, tmp_path):
    out = tmp_path / "deep" / "results"
    paths = RESULTS[kind]().save(out)
    assert all(p.is_file() and p.parent == out for p in paths.values()), paths
    assert (out / OUTPUT_MARKER).is_file() and (out / OWN_FILE[kind]).is_file()
    first = _tree(out)
    with pytest.raises(SettingsError) as e:  # the tool's own earlier results: not without overwrite
        RESULTS[kind]().save(out)
    assert "overwrite" in _one_line(e.value) and _tree(out) == first
    # a link dropped into the tool's folder since: overwrite replaces the folder, never writes through the link
    outside = tmp_path / "outside.txt"
    outside.write_text("not the tool's")
    (out / OWN_FILE[kind]).unlink()
    (out / OWN_FILE[kind]).symlink_to(outside)
    paths = RESULTS[kind]().save(out, overwrite=True)
    assert outside.read_text() == "not the tool's"
    assert not (out / OWN_FILE[kind]).is_symlink() and (out / OWN_FILE[kind]).is_file()
    assert (out / OUTPUT_MARKER).is_file() and set(paths.values()) <= set(out.iterdir())
    assert [p.name for p in tmp_path.joinpath("deep").iterdir()] == ["results"]  # no staging folder left
    # an empty folder (made by the user for it) is fine
    empty = tmp_path / "empty"
    empty.mkdir()
    RESULTS[kind]().save(empty)
    assert (empty / OWN_FILE[kind]).is_file()


@pytest.mark.parametrize("bad, needle", [(None, "folder path"), (5, "folder path"), ("", "empty"),
                                         ("a\x00b", "NUL")])
def test_a_bad_out_dir_is_one_line(bad, needle, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SettingsError) as e:
        _run().save(bad)
    assert needle in _one_line(e.value) and "out_dir" in str(e.value)
    with pytest.raises(SettingsError, match="overwrite"):
        _run().save(tmp_path / "x", overwrite="yes")
    assert list(tmp_path.iterdir()) == []


def test_the_staging_commands_and_the_stores_still_save(tmp_path, monkeypatch):
    """What ``mia run`` / ``infer-dataset`` / ``documents`` / ``mlm`` do (``save`` into the folder they staged,
    then publish it), the run store and the dataset-inference store: unchanged, and the result reads back."""
    import mia_core
    from mia_core.dataset_inference import store as di_store
    from mia_core.runs import load_run, save_run

    for kind, make in RESULTS.items():
        out = tmp_path / f"cli-{kind}"
        with staged_output(out) as tmp:
            kw = {"extra": {"data_notes": ["n"]}} if kind == "mlm" else {}
            paths = make().save(tmp, **kw)
            assert all(p.parent == tmp for p in paths.values())
        assert (out / OWN_FILE[kind]).is_file() and (out / OUTPUT_MARKER).is_file()
    assert json.loads((tmp_path / "cli-mlm" / "metrics.json").read_text())["data_notes"] == ["n"]
    again = mia_core.load(tmp_path / "cli-run")
    assert list(again.scores["text_id"]) == ["a", "b"]

    monkeypatch.setenv("MIA_RUNS_DIR", str(tmp_path / "runs"))
    stored = save_run(_run(), name="kept", root=tmp_path / "runs")
    assert load_run(stored.id, tmp_path / "runs").name == "kept"
    meta = di_store.save(_dataset_inference(), root=tmp_path / "runs")
    assert di_store.load_summary(meta["id"], tmp_path / "runs")["verdict"] == "refused"
    assert [m["id"] for m in di_store.list_runs(tmp_path / "runs")] == [meta["id"]]
