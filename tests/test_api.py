"""The Python API (issue 31 item 1): ``mia_core.score / audit / plan_run / load`` and the README's example."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mia_core
from mia_core.errors import DataError, SettingsError

ROOT = Path(__file__).resolve().parents[1]
TEXTS = [f"The {w} sat by the window on day {i}, counting the boats that passed the harbour wall."
         for i, w in enumerate(["miller", "baker", "clerk", "sailor", "widow", "farmer", "smith", "weaver"])]


def test_the_api_is_exported_lazily():
    """``import mia_core`` loads no model library; the names appear on first use."""
    code = ("import sys, mia_core; assert 'torch' not in sys.modules and 'mia_core.api' not in sys.modules; "
            "f = mia_core.score; assert 'mia_core.api' in sys.modules; print(sorted(mia_core.__all__))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "audit" in r.stdout and "plan_run" in r.stdout
    with pytest.raises(AttributeError):
        mia_core.no_such_function  # noqa: B018


def test_score_equals_the_labelled_run_per_text(tiny_llama):
    """Unlabelled scoring is the labelled run's scoring stage: the same number for every text."""
    from mia_core.data import texts_from_strings
    from mia_core.models import load_causal_lm
    from mia_core.pipeline import RunConfig, run_attacks

    df = mia_core.score(TEXTS, tiny_llama, attacks="loss,zlib,min_k,min_k_pp", device="cpu", cache=False)
    assert list(df.columns) == ["text_id", "text_hash", "loss", "zlib", "min_k", "min_k_pp"] and len(df) == len(TEXTS)
    lm = load_causal_lm(tiny_llama, device="cpu")
    res = run_attacks(texts_from_strings(TEXTS[:4], TEXTS[4:]), lm, config=RunConfig(
        attacks=["loss", "zlib", "min_k", "min_k_pp"], n_bootstrap=0, blind=False, use_cache=False))
    for a in ("loss", "zlib", "min_k", "min_k_pp"):
        np.testing.assert_allclose(df[a].to_numpy(), res.scores[a].to_numpy(), rtol=1e-6)
    assert df["loss"].nunique() == len(TEXTS)  # not a constant
    assert df.attrs["config"]["scored_tokens"]["prefix"] == "auto"


def test_score_refuses_what_it_cannot_do_in_one_line(tiny_llama):
    with pytest.raises(SettingsError, match="labelled"):  # SMIA learns from labels
        mia_core.score(TEXTS, tiny_llama, attacks="smia", device="cpu")
    with pytest.raises(SettingsError, match="reference"):
        mia_core.score(TEXTS, tiny_llama, attacks="ref", device="cpu")
    with pytest.raises(SettingsError, match="min_k.k"):
        mia_core.score(TEXTS, tiny_llama, attacks="min_k", params={"min_k": {"k": 2}}, device="cpu")
    with pytest.raises(DataError, match="no texts"):
        mia_core.score([], tiny_llama, device="cpu")


def test_audit_save_load_round_trip(tiny_llama, tmp_path):
    res = mia_core.audit(TEXTS[:4], TEXTS[4:], tiny_llama, attacks="loss,min_k_pp", n_bootstrap=20, device="cpu",
                         blind=False)
    assert set(res.attack_names()) == {"loss", "min_k_pp"} and 0 <= res.metrics["loss"]["auc"] <= 1
    res.save(tmp_path / "run")
    back = mia_core.load(tmp_path / "run")
    assert back.metrics == res.metrics or back.metrics["loss"]["auc"] == res.metrics["loss"]["auc"]
    np.testing.assert_allclose(back.scores["loss"].to_numpy(), res.scores["loss"].to_numpy())
    assert list(back.scores["text_id"]) == list(res.scores["text_id"]) and back.config == res.config
    html = res._repr_html_()
    assert "<table" in html and "min_k_pp" in html
    with pytest.raises(DataError, match="does not hold a saved run"):
        mia_core.load(tmp_path)


def test_plan_run_says_what_runs_and_why_not():
    plan = mia_core.plan_run("all", texts=TEXTS, reference=False)
    assert "ref" in plan.skipped and "reference" in plan.skipped["ref"] and "smia" in plan.skipped
    assert "loss" in plan.attacks and plan.passes[0] == "target" and "reference" not in plan.passes
    assert plan.seconds and plan.seconds > 0 and "texts" in plan.estimate
    with pytest.raises(SettingsError, match="reference"):
        mia_core.plan_run("ref", reference=False)
    p2 = mia_core.plan_run("loss,lowercase,ref", reference=True)
    assert p2.passes == ["target", "target lower-cased", "reference"] and p2.estimate == ""
    assert "loss" in str(p2)


@pytest.mark.slow
def test_the_readme_example_runs(tmp_path, monkeypatch):
    """The README's API example, executed as written (in a scratch folder)."""
    text = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- api-example -->\s*```python\n(.*?)```", text, re.S)
    assert m, "the README's API example is marked <!-- api-example -->"
    monkeypatch.chdir(tmp_path)
    exec(compile(m.group(1), "README.md", "exec"), {"__name__": "__readme__"})
    assert (tmp_path / "api_demo_run" / "metrics.json").exists()


@pytest.mark.slow
def test_audit_mlm_and_documents_take_texts():
    """audit_mlm runs the masked-LM audit on plain lists (the bundled pair, a few texts, K = 2); audit_documents
    turns plain texts, paths or Documents into Documents the same way."""
    from mia_core.inputs import check_documents
    from mia_core.targets.demo import mlm_demo_paths
    from mia_core.documents import Document

    demo = mlm_demo_paths()
    m, n, p = (Path(demo[k]).read_text().splitlines()[:5] for k in ("members", "nonmembers", "population"))
    res = mia_core.audit_mlm(m, n, p, str(demo["target"]), demo["reference"], k=2, n_bootstrap=0, device="cpu")
    assert len(res.scores) == 10 and set(res.metrics) == {"likelihood_ratio", "loss"}
    assert res.scores["likelihood_ratio"].notna().all()
    docs = check_documents(["one book text", "another book"], "members")
    assert [d.name for d in docs] == ["m0001", "m0002"] and all(isinstance(d, Document) for d in docs)
    assert check_documents(docs, "members") is not docs and check_documents(docs, "members") == docs


def test_texts_may_come_from_a_generator_and_non_texts_are_refused(tiny_llama):
    df = mia_core.score((t for t in TEXTS), tiny_llama, attacks="loss", device="cpu", cache=False)
    assert len(df) == len(TEXTS)
    with pytest.raises(DataError, match="give texts"):
        mia_core.score((x for x in [1, 2, 3]), tiny_llama, device="cpu")
