"""What a page keeps across page switches and tabs (issue 40), under ``AppTest``: the inputs of a page survive a
visit to another page (``dashboard.ui.keep_inputs``), a background job is found from a fresh session (a new tab:
the registry is process-wide) and a job the registry lost is said, Home counts every kind of saved run, the Runs
page shows words rather than codes, and Inspect's loss says which tokens it covers, as LOSS does."""
from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402


ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
CAL, DOC, RUNS, INSPECT = ("pages/2_Calibration_run.py", "pages/3_Document_audit.py", "pages/5_Runs.py",
                           "pages/1_Inspect_a_text.py")
TIMEOUT = 180


@pytest.fixture(scope="module", autouse=True)
def _env(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("MIA_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))
    mp.setenv("HF_HUB_OFFLINE", "1")
    yield
    mp.undo()


def _app(page: str | None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if page:
        at.switch_page(page)
    return at.run()


def _no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _duplication_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "had its value set via the Session State API" in r.getMessage()]


def test_calibration_and_document_inputs_survive_a_visit_to_other_pages(caplog):
    from streamlit.elements.lib import policies

    policies._shown_default_value_warning = False  # Streamlit logs it once a process: let it show here
    caplog.set_level(logging.WARNING)
    at = _app(CAL)
    _no_exception(at)
    at.radio(key="cal_source").set_value("paste").run()
    at.text_area(key="cal_members_text").set_value("a member text\nanother one").run()
    at.text_input(key="cal_name").set_value("my run name").run()
    at.number_input(key="cal_seed").set_value(7).run()
    at.checkbox(key="cal_blind").uncheck().run()
    at.switch_page(DOC).run()
    _no_exception(at)
    at.number_input(key="doc_folds").set_value(3).run()
    demo_model = at.checkbox(key="doc_demo_model").value
    at.checkbox(key="doc_demo_model").set_value(not demo_model).run()
    at.switch_page(RUNS).run()  # two other pages, then back to each
    at.switch_page("app.py").run()
    at.switch_page(CAL).run()
    _no_exception(at)
    assert at.radio(key="cal_source").value == "paste"
    assert at.text_area(key="cal_members_text").value == "a member text\nanother one"
    assert at.text_input(key="cal_name").value == "my run name"
    assert at.number_input(key="cal_seed").value == 7 and at.checkbox(key="cal_blind").value is False
    at.switch_page(DOC).run()
    _no_exception(at)
    assert at.number_input(key="doc_folds").value == 3 and at.checkbox(key="doc_demo_model").value is not demo_model
    at.button(key="go_doc")  # the button is there (its key was held too) and the page drew without an exception
    assert not _duplication_warnings(caplog), _duplication_warnings(caplog)


def test_a_pages_own_state_it_removed_is_not_put_back_after_a_page_switch():
    """Only what Streamlit dropped comes back: a key under the page's prefix that the page (here the test, between
    two runs) removed stays removed after a visit to another page; a widget's value comes back."""
    at = _app(CAL)
    at.text_input(key="cal_name").set_value("kept name").run()
    at.session_state["cal_reopen_marker"] = "once"
    at.run()  # noted with the page's entries (a plain value under cal_)
    del at.session_state["cal_reopen_marker"]  # the page consumed it (as Calibration pops a reopened run's id)
    at.run()
    at.switch_page(RUNS).run()
    at.switch_page(CAL).run()
    _no_exception(at)
    assert at.text_input(key="cal_name").value == "kept name"
    assert "cal_reopen_marker" not in at.session_state


def test_a_kept_field_outlives_the_runs_that_do_not_draw_it():
    """Inspect's pasted text (``dashboard.ui.kept``): still there after a look at the upload option, within the page,
    and after another page."""
    at = _app(INSPECT)
    _no_exception(at)
    at.text_area(key="inspect_text").set_value("my own paragraph to inspect").run()
    at.radio(key="inspect_source").set_value("Upload a .txt file").run()
    assert not [t for t in at.text_area if t.key == "inspect_text"]  # not drawn: Streamlit drops its value
    at.radio(key="inspect_source").set_value("Paste a paragraph").run()
    assert at.text_area(key="inspect_text").value == "my own paragraph to inspect"
    at.switch_page(RUNS).run()
    at.switch_page(INSPECT).run()
    _no_exception(at)
    assert at.text_area(key="inspect_text").value == "my own paragraph to inspect"


def test_no_button_key_starts_with_a_kept_prefix():
    """Streamlit refuses a button's value set through Session State, and a kept prefix's values are put back that
    way: the pages' buttons are named ``go_...`` (read from the code: every ``page_setup(keep=...)`` prefix against
    every button's key, an f-string's literal start included)."""
    import ast

    from mia_core.audits import AUDITS

    prefixes, keys = set(), []
    for path in [*(ROOT / "pages").glob("*.py"), *(ROOT / "dashboard").glob("*.py"), ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            kw = {k.arg: k.value for k in node.keywords}
            if name == "page_setup" and "keep" in kw:
                prefixes |= {c.value for c in kw["keep"].elts if isinstance(c, ast.Constant)}
                if any(isinstance(c, ast.JoinedStr) for c in kw["keep"].elts):  # a page made from a declaration
                    prefixes |= {a.replace("-", "_") + "_" for a in AUDITS}
            if name.endswith("button") and "key" in kw:
                v = kw["key"]
                head = v.value if isinstance(v, ast.Constant) else (
                    v.values[0].value if isinstance(v, ast.JoinedStr) and isinstance(v.values[0], ast.Constant) else "")
                keys.append((path.name, head))
    assert {"cal_", "doc_", "mlm_", "inspect_", "di_"} <= prefixes and len(keys) >= 8
    bad = [(f, k) for f, k in keys if k.startswith(tuple(prefixes))]
    assert not bad, bad


def _job(at_kind: str, gate: threading.Event):
    from dashboard.jobs import registry

    def work(progress):
        progress("documents: reading", 0.5)
        gate.wait(60)
        return {"result": None, "precision": None}

    return registry().start(at_kind, "a test audit", work)


def test_a_job_started_in_one_tab_is_found_from_a_new_tab():
    """The registry is ``st.cache_resource``: a second AppTest in this process is a second browser session."""
    gate = threading.Event()
    first = _app(DOC)
    job = _job("documents", gate)  # as if the first tab had pressed Run (its thread runs outside any session)
    try:
        second = _app(DOC)  # a new tab
        _no_exception(second)
        captions = [c.value for c in second.caption]
        assert any(c.startswith("Started in another tab at ") for c in captions), captions
        assert second.button(key="go_doc").disabled  # one audit of a kind at a time, whichever tab started it
    finally:
        gate.set()
    job_thread = [t for t in threading.enumerate() if t.name == f"mia-job-{job.id}"]
    for t in job_thread:
        t.join(30)
    assert job.status == "done"
    first.run()
    _no_exception(first)
    assert any("finished at" in c.value for c in first.caption)  # its result, once, said to come from another tab


def test_a_job_the_registry_lost_is_said_not_hidden():
    from dashboard.jobs import registry

    gate = threading.Event()
    job = _job("documents", gate)
    at = _app(DOC)
    assert at.button(key="go_doc").disabled
    registry.clear()  # the process-wide registry dropped, as a server restart would
    gate.set()
    at.run()
    _no_exception(at)
    warned = [w.value for w in at.warning]
    assert any("no longer known to the server" in w for w in warned), warned
    assert not at.button(key="go_doc").disabled
    assert job.id not in [j.id for j in registry().running()]


def _save_di_run() -> str:
    from test_app_pages import _save_di_run as save  # a real result of the test stage, saved by the store

    return save(books=False)


def test_home_counts_every_kind_of_saved_run_and_runs_shows_words():
    _save_di_run()
    at = _app(None)
    _no_exception(at)
    line = next(c.value for c in at.caption if "saved run" in c.value)
    assert line.startswith("1 saved run (1 dataset inference)"), line
    at.switch_page(RUNS).run()
    _no_exception(at)
    table = next(d.value for d in at.dataframe if "Verdict" in d.value.columns)
    assert set(table["Verdict"]) <= {"used", "not shown", "refused (the sets differ without the model)"}, table
    assert not any("_" in v for v in table["Verdict"])
    assert all(p == "–" or "<=" not in p for p in table["p-value"]), table["p-value"]


def test_p_values_and_verdicts_in_words():
    from dashboard.results import DI_VERDICT_WORDS, SHIFT_WORDS, p_words, verdict_words

    assert p_words(1 / 10_001, True) == "≤ 1e-4" and p_words(0.0123) == "0.0123" and p_words(3.2e-5) == "3.2e-5"
    assert verdict_words("not_shown", DI_VERDICT_WORDS) == "not shown"
    assert verdict_words("ok", SHIFT_WORDS) == "no shift seen" and verdict_words(None, SHIFT_WORDS) == "–"


def test_inspect_loss_says_its_tokens_and_agrees_with_loss(tiny_llama):
    """The summary's loss and the LOSS score cover the same tokens, and both say which."""
    import numpy as np

    from dashboard.inspect import scored_loss
    from mia_core.attacks import REGISTRY, AttackInputs

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["mp_target"] = "custom"
    at.session_state["mp_target_custom"] = tiny_llama
    at.switch_page(INSPECT).run()
    at.button(key="go_inspect").click().run()
    _no_exception(at)
    loss = float(next(m.value for m in at.metric if m.label == "Loss (mean NLL)"))
    score = float(at.table[0].value.loc["LOSS", "Score"])
    assert abs(loss + score) < 0.006, (loss, score)  # both shown to 2 decimals
    n = int(next(m.value for m in at.metric if m.label == "Tokens").replace(",", ""))
    assert f"over the {n - 1} scored tokens 2..{n}" in [c.value for c in at.caption]
    assert any(c.value.startswith(f"LOSS = −(the loss above: the mean over the {n - 1} scored tokens 2..{n}")
               for c in at.caption)
    stats = at.session_state["inspect_result"]["stats"]  # with the first token scored: 1..n after a prefix
    for first in (False, True):
        got, span = scored_loss(stats, first)
        want = -REGISTRY["loss"].score(AttackInputs(texts=["x"], target=[stats], first_token=first))[0]
        assert np.isclose(got, want), (first, got, want)
