"""The CLI's progress through a pipe or into a log (CI, ``nohup``, ``| tee``): plain lines, a few per
stage, never the ``\\r``-redrawn bars that pile up there as one endless line."""
from __future__ import annotations

import pytest
from helpers import run_mia, save_tiny_llama
from tiny_lm import paragraphs

from mia_core.cli.common import ProgressBar

pytestmark = pytest.mark.slow


def test_plain_progress_prints_a_stage_start_and_end_only(capsys):
    bar = ProgressBar(plain=True, interval=1e9)
    for stage in ("target pass", "metrics"):
        for i in range(500):
            bar(f"{stage}: {i + 1}/500 windows", (i + 1) / 500)
    bar.close()
    err = capsys.readouterr().err
    assert "\r" not in err
    assert err.splitlines() == ["target pass:   0%  1/500 windows", "target pass: 100%  500/500 windows",
                                "metrics:   0%  1/500 windows", "metrics: 100%  500/500 windows"]
    bar = ProgressBar(plain=True, interval=0)  # every call is due: one line each, still no bar
    for i in range(3):
        bar(f"x: {i}", i / 2)
    assert len(capsys.readouterr().err.splitlines()) == 3



def test_plain_progress_counts_a_stage_that_counts_items_as_one(capsys):
    """A document audit's stage names its document ("document 3/40 (name)"): through a pipe that was one
    line per book (40 for the demo); now the stage's first line, the interval's, and the next stage's."""
    bar = ProgressBar(plain=True, interval=1e9)
    for i in range(40):
        for w in range(3):
            bar(f"document {i + 1}/40 (book{i}): token statistics: {w}/3 windows", (3 * i + w) / 200)
    bar("meta-classifier: fold 1/5", 0.6)
    bar.close()
    assert capsys.readouterr().err.splitlines() == [
        "document 1/40 (book0):   0%  token statistics: 0/3 windows", "meta-classifier:  60%  fold 1/5"]


def test_cli_through_a_pipe_prints_lines_not_bars(tmp_path):
    model = save_tiny_llama(tmp_path / "llama")
    P = paragraphs()
    (tmp_path / "m.txt").write_text("\n".join(p[:200] for p in P[:4]) + "\n")
    (tmp_path / "n.txt").write_text("\n".join(p[:200] for p in P[4:8]) + "\n")
    r = run_mia("run", "--members", tmp_path / "m.txt", "--nonmembers", tmp_path / "n.txt", "--mode", "lines",
                "--model", model, "--attacks", "loss", "--no-cache", "--no-blind", "--out", tmp_path / "out",
                env_extra={"MIA_PROGRESS_INTERVAL": "30"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert "\r" not in r.stderr  # neither ours nor the libraries' ("Loading weights")
    progress = [ln for ln in r.stderr.splitlines() if not ln.startswith(("note:", "warning"))]
    assert any(ln.startswith("target pass:") and "100%" in ln for ln in progress), r.stderr
    assert len(progress) <= 12, r.stderr
