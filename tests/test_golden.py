"""Behaviour pinned before the package restructuring (issue 11): the outputs of ``run``,
``documents`` and ``mlm`` equal the golden files saved before anything moved.

``tests/golden_outputs.py`` holds the commands and the comparison rules. The goldens pin behaviour, not library
versions: a version that differs from the goldens' is reported (a warning) beside a comparison that passes, and named
in the message of one that fails.
"""
import json
import shutil
import warnings

import pytest

from golden_outputs import (GOLDEN, NAMES, VERSIONS, compared_files, differences, environment_versions,
                            failure_message, run_golden, version_changes)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_outputs_equal_the_golden_files(name, tmp_path, monkeypatch):
    """With an empty statistics cache, so that every model pass really runs."""
    from helpers import empty_cache

    monkeypatch.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path / "cache")))
    assert compared_files(GOLDEN / name), f"no golden files for {name}"
    out = run_golden(name, tmp_path)
    diffs, changes = differences(GOLDEN / name, out), version_changes(GOLDEN / name, out)
    assert not diffs, failure_message(name, diffs, changes)
    if changes:
        warnings.warn(f"{name}: outputs equal tests/golden/{name} within tolerance under other versions than the "
                      f"goldens': {', '.join(changes)}", UserWarning, stacklevel=1)


def test_the_comparison_sees_a_changed_score(tmp_path):
    """The comparison is not vacuous: one changed score is reported."""
    import pandas as pd

    shutil.copytree(GOLDEN / "mlm", tmp_path / "mlm")
    path = tmp_path / "mlm" / "scores.csv"
    df = pd.read_csv(path)
    df.loc[0, "loss"] = df.loc[0, "loss"] * (1 + 1e-3)
    df.to_csv(path, index=False)
    diffs = differences(GOLDEN / "mlm", tmp_path / "mlm")
    assert any("scores.csv" in d and "loss" in d for d in diffs)


def _changed_version(tmp_path, name="target", package="transformers", version="99.0.0"):
    shutil.copytree(GOLDEN / name, tmp_path / name)
    log = tmp_path / name / "training_log.json"
    record = json.loads(log.read_text(encoding="utf-8"))
    record["versions"][package] = version
    log.write_text(json.dumps(record, indent=2), encoding="utf-8")
    return tmp_path / name


def test_a_changed_version_alone_is_reported_not_failed(tmp_path):
    """Outputs made under another transformers release, equal within tolerance: no difference, one change named."""
    new = _changed_version(tmp_path)
    assert differences(GOLDEN / "target", new) == []
    changes = version_changes(GOLDEN / "target", new)
    assert any(c.startswith("transformers ") and c.endswith("-> 99.0.0") for c in changes), changes


def test_a_failure_names_the_changed_versions_and_the_changed_outputs(tmp_path):
    new = _changed_version(tmp_path)
    summary = new / "adapter_model.safetensors.summary.json"
    data = json.loads(summary.read_text(encoding="utf-8"))
    key = sorted(data)[0]
    data[key]["sum"] += 1.0
    summary.write_text(json.dumps(data), encoding="utf-8")
    diffs = differences(GOLDEN / "target", new)
    message = failure_message("target", diffs, version_changes(GOLDEN / "target", new))
    assert f"adapter_model.safetensors.{key}.sum" in message and "transformers" in message and "99.0.0" in message
    assert "the code" in failure_message("target", diffs, [])


def test_the_goldens_record_the_versions_they_were_checked_on():
    """``tests/golden/VERSIONS.json`` names every computing package; the comparison reads the installed ones."""
    then = json.loads(VERSIONS.read_text(encoding="utf-8"))["versions"]
    now = environment_versions()
    assert set(then) == set(now) and {"torch", "transformers", "peft", "python"} <= set(then)
