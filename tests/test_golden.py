"""Behaviour pinned before the package restructuring (issue 11): the outputs of ``run``,
``documents`` and ``mlm`` equal the golden files saved before anything moved.

``tests/golden_outputs.py`` holds the three commands and the comparison rules.
"""
import pytest

from golden_outputs import GOLDEN, NAMES, compared_files, differences, run_golden

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", NAMES)
def test_outputs_equal_the_golden_files(name, tmp_path, monkeypatch):
    """With an empty statistics cache, so that every model pass really runs."""
    from helpers import empty_cache

    monkeypatch.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path / "cache")))
    assert compared_files(GOLDEN / name), f"no golden files for {name}"
    out = run_golden(name, tmp_path)
    diffs = differences(GOLDEN / name, out)
    assert not diffs, f"{name}: outputs differ from tests/golden/{name}:\n" + "\n".join(diffs[:20])


def test_the_comparison_sees_a_changed_score(tmp_path):
    """The comparison is not vacuous: one changed score is reported."""
    import shutil

    import pandas as pd

    shutil.copytree(GOLDEN / "mlm", tmp_path / "mlm")
    path = tmp_path / "mlm" / "scores.csv"
    df = pd.read_csv(path)
    df.loc[0, "loss"] = df.loc[0, "loss"] * (1 + 1e-3)
    df.to_csv(path, index=False)
    diffs = differences(GOLDEN / "mlm", tmp_path / "mlm")
    assert any("scores.csv" in d and "loss" in d for d in diffs)
