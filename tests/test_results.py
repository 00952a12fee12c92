"""One result type for the three audits (``mia_core.runs.results.AuditResult``).

``RunResult`` (run), ``DocumentAuditResult`` (documents) and ``MlmAuditResult`` (mlm) all
have ``.metrics``, a DataFrame ``.scores``, ``.summary_text()`` and ``.save(dir)`` returning
``{name: path}``. The results are built by hand from small synthetic scores (no model).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mia_core import metrics as M
from mia_core.documents import DocumentAuditResult
from mia_core.mlm import MlmAuditResult
from mia_core.pipeline import RunResult
from mia_core.runs.results import AuditResult, json_default

RNG = np.random.default_rng(0)
LABELS = np.r_[np.ones(10, dtype=int), np.zeros(10, dtype=int)]
SCORES = LABELS + RNG.normal(0.0, 1.0, LABELS.size)
POP = RNG.normal(0.0, 1.0, 15)


def _metrics(scores=SCORES) -> dict:
    m = M.evaluate(LABELS, scores, n_bootstrap=20, seed=0)
    thr = M.population_threshold(POP, 0.1)
    m["population_threshold"] = {**M.decisions_at(LABELS, scores, thr), "alpha": 0.1, "n_population": POP.size}
    return m


def _run_result() -> RunResult:
    df = pd.DataFrame({"text_id": [f"t{i}" for i in range(LABELS.size)], "label": LABELS,
                       "text_hash": [f"h{i}" for i in range(LABELS.size)], "loss": SCORES})
    m = _metrics()
    pop = {"alpha": 0.1, "n_population": POP.size, "attacks": {"loss": m["population_threshold"]}}
    return RunResult(scores=df, metrics={"loss": m}, config={"attacks": ["loss"], "split": None},
                     models={"target": {"name": "tiny", "dtype": "fp32", "quantize": "none"}},
                     timings={"target_pass": np.float64(0.5)}, population=pop,
                     report=["a note"])


def _document_result() -> DocumentAuditResult:
    pipeline = "maxnorm_tf+hist"
    m = {"auc_mean": 0.75, "auc_std": 0.05, "tpr_at_fpr_mean": {"0.01": 0.1, "0.1": 0.4},
         "tpr_at_fpr_std": {"0.01": 0.02, "0.1": 0.05}, "pooled_auc": 0.74, "folds": []}
    names = [f"doc{i}" for i in range(LABELS.size)]
    df = pd.DataFrame({"document": names, "label": LABELS, "fold": np.arange(LABELS.size) % 2,
                       "n_tokens": np.full(LABELS.size, 500), "source": "(text)", f"prob:{pipeline}": SCORES})
    docs = [{"name": n, "label": int(lab), "source": "(text)", "n_tokens": 500, "n_chars": 2000,
             "strip": {"stripped": False}} for n, lab in zip(names, LABELS)]
    return DocumentAuditResult(documents=docs, labels=LABELS, settings={"folds": 2, "context": 128,
                                                                         "normalizations": ["maxnorm_tf"]},
                               model={"name": "tiny", "dtype": "fp32", "quantize": "none"},
                               metrics={pipeline: m}, scores=df)


def _mlm_result() -> MlmAuditResult:
    lr, loss = _metrics(), _metrics(SCORES * 0.5)
    rows = pd.DataFrame({"text_id": [f"m{i}" for i in range(LABELS.size)], "label": LABELS,
                         "text_hash": [f"h{i}" for i in range(LABELS.size)], "n_tokens": 40,
                         "likelihood_ratio": SCORES, "loss": SCORES * 0.5, "energy_target": -SCORES * 0.5,
                         "energy_reference": SCORES * 0.5,
                         "flagged_likelihood_ratio": SCORES >= lr["population_threshold"]["threshold"],
                         "flagged_loss": SCORES * 0.5 >= loss["population_threshold"]["threshold"]})
    flagged = rows["flagged_likelihood_ratio"].to_numpy()[:10]
    leak = {"n_flagged": int(flagged.sum()), "n_unflagged": int((~flagged).sum()),
            "flagged": {"n_tokens": 40.0}, "unflagged": {"n_tokens": 40.0}, "features": ["n_tokens"],
            "threshold": lr["population_threshold"]["threshold"]}
    return MlmAuditResult(
        metrics={"likelihood_ratio": lr, "loss": loss}, group_metrics=None, scores=rows,
        population_scores={"likelihood_ratio": POP.tolist(), "loss": (POP * 0.5).tolist()},
        leak_features={"likelihood_ratio": leak}, energies={"target": (-SCORES * 0.5).tolist()},
        settings={"k": 3, "seed": 0, "rate": 0.15, "alpha": 0.1, "max_length": 128, "batch_tokens": 8192,
                  "n_members": 10, "n_nonmembers": 10, "n_population": POP.size, "n_train_samples": 0},
        models={"target": {"name": "target"}, "reference": {"name": "reference"}}, warnings=["a warning"])


@pytest.mark.parametrize("make", [_run_result, _document_result, _mlm_result], ids=["run", "documents", "mlm"])
def test_every_audit_result_has_the_common_interface(make, tmp_path):
    res = make()
    assert isinstance(res, AuditResult)
    assert isinstance(res.metrics, dict) and res.metrics
    assert isinstance(res.scores, pd.DataFrame) and len(res.scores) == LABELS.size
    text = res.summary_text()
    assert isinstance(text, str) and text.strip()
    paths = res.save(tmp_path / "out")
    assert isinstance(paths, dict) and paths
    for name, p in paths.items():
        p = Path(p)
        assert p.exists(), name
        assert p.parent == tmp_path / "out"
        if p.suffix == ".json":
            assert isinstance(json.loads(p.read_text(encoding="utf-8")), dict)
        elif p.suffix == ".csv":
            assert len(pd.read_csv(p)) >= 1


def test_run_result_summary_and_files():
    res = _run_result()
    text = res.summary_text()
    assert text.splitlines()[0] == "target: tiny (fp32, none)"
    assert "10 members, 10 non-members; 20 texts evaluated" in text
    assert "threshold at 10% FPR on the population set (15 texts):" in text
    assert text.splitlines()[-1] == "note: a note"


def test_run_result_counts_leave_out_a_separate_training_set():
    res = _run_result()
    split = np.where(np.arange(LABELS.size) % 5 == 0, "train", "eval")
    res.scores["split"] = split
    # a separate training set (no split fraction): its rows are not part of the audited set
    assert "8 members, 8 non-members; 16 texts evaluated" in res.summary_text()
    # a split fraction: the audited set is split in two, all of it counts
    res.config["split"] = 0.2
    assert "10 members, 10 non-members; 16 texts evaluated" in res.summary_text()


def test_run_result_save_names(tmp_path):
    paths = _run_result().save(tmp_path)
    assert {k: p.name for k, p in paths.items()} == {"scores": "scores.csv", "metrics": "metrics.json",
                                                     "run": "run.json"}
    assert json.loads(paths["run"].read_text())["timings"] == {"target_pass": 0.5}


def test_mlm_result_save_keeps_the_cli_layout(tmp_path):
    res = _mlm_result()
    paths = res.save(tmp_path, extra={"data_notes": ["n"]})
    assert {k: p.name for k, p in paths.items()} == {"scores": "scores.csv", "metrics": "metrics.json",
                                                     "curves": "curves.json"}  # what metrics.json leaves out
    header = paths["scores"].read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[:5] == ["text_id", "label", "text_hash", "likelihood_ratio", "loss"]
    metrics = json.loads(paths["metrics"].read_text())
    assert set(metrics) == {"likelihood_ratio", "loss", "leak_features", "settings", "models", "warnings",
                            "data_notes"}
    assert "roc" not in metrics["likelihood_ratio"]
    assert "note: a warning" in res.summary_text()


def test_json_default_handles_numpy_and_paths():
    out = json.loads(json.dumps({"f": np.float32(0.5), "i": np.int64(3), "a": np.arange(2), "p": Path("x")},
                                default=json_default))
    assert out == {"f": 0.5, "i": 3, "a": [0, 1], "p": "x"}
