"""One real-browser end-to-end test: the dashboard served by ``streamlit run``, driven in headless
Chromium with Playwright.

It pastes a paragraph on the Inspect page, analyses it with the embedded SmolLM2 and checks the
coloured per-token spans (with their hover text); then runs a small calibration on pasted texts
and waits for the ROC chart. Then it runs the calibration again (all cached) and
opens the Runs page on the two runs' comparison, and runs the Document-audit and Masked-LM-audit demos.
Screenshots go to ``tests/artifacts/`` (git-ignored): ``inspect_tokens.png``, ``inspect_page.png``,
``calibration_roc.png``, ``calibration_page.png``, ``runs_compare.png``, ``documents_page.png`` and
``documents_results.png``, ``mlm_page.png`` and ``mlm_results.png``, ``controlled_page.png`` and
``controlled_results.png`` (a one-epoch LoRA target on 20 demo passages).

Needs Debian's ``chromium`` (``apt-get install -y chromium``) and ``pip install playwright``
(Playwright's own browser download is not used: the system Chromium is launched directly).
Skips cleanly when either is missing.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"
DATA = ROOT / "tests" / "data"
CHROMIUM = next((p for p in ("/usr/bin/chromium", shutil.which("chromium") or "", shutil.which("chromium-browser") or "")
                 if p and Path(p).exists()), None)
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = [
    pytest.mark.slow, pytest.mark.browser,
    pytest.mark.skipif(importlib.util.find_spec("playwright") is None,
                       reason="playwright is not installed (pip install playwright)"),
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _serve(env: dict, log: Path):
    """``streamlit run app.py`` on a free localhost port with ``env``, its output in ``log``: the URL."""
    port = _free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.headless", "true",
             "--server.address", "localhost", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://localhost:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                pytest.fail(f"streamlit did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


SERVED: dict = {}  # the served dashboard's runs folder (server)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env["MIA_RUNS_DIR"] = SERVED["runs"] = str(tmp_path_factory.mktemp("runs"))
    with _serve(env, tmp_path_factory.mktemp("log") / "streamlit.log") as url:
        yield url


def _paragraphs(n: int, source: str) -> list[str]:
    rows = [json.loads(line) for line in (DATA / "paragraphs.jsonl").read_text(encoding="utf-8").splitlines()]
    return [r["text"] for r in rows if r["source"] == source][:n]


def _wait_idle(page, timeout: float = 240.0) -> None:
    """Wait until Streamlit has finished the current script run."""
    page.wait_for_timeout(500)
    page.wait_for_selector("[data-testid='stStatusWidget']", state="detached", timeout=timeout * 1000)


def _type(page, label: str, value: str, role: str = "spinbutton") -> None:
    """Type ``value`` into the input labelled ``label`` (a number box, or ``role="textbox"``), press Enter and wait
    for the page to re-run with it."""
    box = page.get_by_role(role, name=label)
    box.fill(value)
    box.press("Enter")
    _wait_idle(page)


def _analyse(page, paragraph: str) -> None:
    """On the Inspect page: paste ``paragraph``, press Analyse, wait for the coloured tokens."""
    box = page.get_by_role("textbox", name="Text to inspect")
    box.wait_for(timeout=180_000)
    box.fill(paragraph)
    box.press("Control+Enter")
    _wait_idle(page)
    page.get_by_role("button", name="Analyse").click()
    page.locator(".mia-tok").first.wait_for(timeout=240_000)


def _press(page, name: str, started, tries: int = 3, wait_s: float = 30.0) -> None:
    """Click the button ``name`` until the page shows that its work started (``started(main text)`` is
    true). A click that lands while the page is still re-running after the last input can be lost on a busy
    machine (seen once: the Run button clicked, nothing started, the test waited out its 300 s)."""
    for _ in range(tries):
        _wait_idle(page)
        page.get_by_role("button", name=name).click()
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if started(page.locator("[data-testid='stMain']").inner_text()):
                return
            page.wait_for_timeout(500)
    raise AssertionError(f"pressing {name!r} started nothing ({tries} tries)")


def _text_when(page, selector: str, needles, timeout_s: float = 180.0) -> str:
    """The element's text once every needle shows in it (the score table renders after the tokens)."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        text = page.locator(selector).inner_text()
        if all(n in text for n in needles) or time.monotonic() > deadline:
            return text
        page.wait_for_timeout(500)


def _visit(page, label: str) -> None:
    """Go to a page through the sidebar's links (the same browser session: ``page.goto`` would start a new one,
    as a reload does, and the session's state with it)."""
    page.locator("[data-testid='stSidebarNav'] a", has_text=label).first.click()
    _wait_idle(page)


def _value_when(page, box, want: str, timeout_s: float = 20.0, *, prefix: bool = False) -> str:
    """The input's value once it is ``want`` (``prefix``: once it starts with it; a page coming back redraws its
    widgets in steps: a value read in between can be a partial one), or its last value after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = box.input_value()
        if (got.startswith(want) if prefix else got == want) or time.monotonic() > deadline:
            return got
        page.wait_for_timeout(300)


def _caption(page, starting: str) -> str:
    """The text of the first caption that starts with ``starting`` ("" when there is none)."""
    for c in page.locator("[data-testid='stCaptionContainer']").all():
        t = c.inner_text().strip()
        if t.startswith(starting):
            return t
    return ""


def _reports_name_their_models(runs_dir: str) -> None:
    """Every report the pages' runs offer for download (built by the same functions the Runs page calls) names the
    audited model and the data: the calibration runs' (their target's name and identity) and the dataset-inference
    runs' ("What was audited": the model, the sets, the verdict)."""
    from html import escape as html_escape

    from dashboard.results import report_or_why
    from mia_core import runs
    from mia_core.api.inference import inference_report, list_inference_runs

    cal, di = runs.list_runs(runs_dir), list_inference_runs()
    assert cal and di, (cal, di)
    for m in cal:
        run = runs.load_run(m["id"], runs_dir)
        html = report_or_why(run)
        target = run.models.get("target") or {}
        assert target.get("name") and all(html_escape(str(target.get(k))) in html for k in ("name", "identity")), \
            (m["id"], target)
    for m in di:
        html = inference_report(m["id"]).decode("utf-8")
        assert "What was audited" in html and "demo target" in html, m["name"]


def test_inspect_and_calibration_in_a_browser(server, monkeypatch, tmp_path):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    paragraph = _paragraphs(1, "pg35_wells_time_machine.txt")[0]
    pool = _paragraphs(12, "pg43_stevenson_jekyll_and_hyde.txt")
    members, nonmembers = pool[0::2], pool[1::2]  # one source split alternately: no distribution shift
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 2000})
        try:
            # ---- Inspect a text: paste, analyse, per-token view
            page.goto(f"{server}/Inspect_a_text", wait_until="networkidle")
            _analyse(page, paragraph)
            tokens = page.locator(".mia-tok")
            assert tokens.count() > 20
            title = tokens.nth(5).get_attribute("title") or ""
            assert "probability" in title and "top prediction" in title and "rank" in title
            _wait_idle(page)
            body = _text_when(page, "[data-testid='stMain']", ("LOSS", "Min-K%"))
            page.locator(".mia-tokens").first.screenshot(path=str(ARTIFACTS / "inspect_tokens.png"))
            page.screenshot(path=str(ARTIFACTS / "inspect_page.png"), full_page=True)
            assert "LOSS" in body and "Min-K%" in body

            # ---- Calibration run on pasted texts
            page.goto(f"{server}/Calibration_run", wait_until="networkidle")
            page.get_by_text("Paste texts", exact=True).click()
            _wait_idle(page)
            m = page.get_by_role("textbox", name="Members: one text per line (or paragraphs separated by blank lines)", exact=True)
            m.fill("\n".join(members))
            m.press("Control+Enter")
            n = page.get_by_role("textbox", name="Non-members: one text per line")
            n.fill("\n".join(nonmembers))
            n.press("Control+Enter")
            _wait_idle(page)
            # ---- the newcomer's path (issue 40): another page mid-task and back keeps what was entered
            _visit(page, "Inspect a text")
            _visit(page, "Calibration run")
            kept = _value_when(page, page.get_by_role("textbox", name="Non-members: one text per line"),
                               "\n".join(nonmembers))
            assert kept == "\n".join(nonmembers), kept[:200]
            _press(page, "Run the attacks", lambda t: "running for" in t or "AUC [95% CI]" in t)
            roc = page.locator(".js-plotly-plot").filter(has_text="ROC")
            roc.first.wait_for(timeout=300_000)  # the early results' ROC may come first
            # the finished run: its table has CIs and the notes about its numbers (early results have neither)
            text = _text_when(page, "[data-testid='stMain']", ("AUC [95% CI]", "Read these numbers with"),
                              timeout_s=300.0)
            _wait_idle(page)
            page.wait_for_timeout(1000)
            text = _text_when(page, "[data-testid='stMain']", ("AUC [95% CI]", "TPR@1% FPR"))
            roc.first.screenshot(path=str(ARTIFACTS / "calibration_roc.png"))
            page.screenshot(path=str(ARTIFACTS / "calibration_page.png"), full_page=True)
            assert "AUC [95% CI]" in text and "TPR@1% FPR" in text
            # ---- issue 53: the model is named before Run; changed data marks the result as the old inputs' (item 3)
            assert "Model tested:" in text, text[-2000:]
            m = page.get_by_role("textbox", name="Members: one text per line (or paragraphs separated by blank lines)",
                                 exact=True)
            m.fill("\n".join(members[:-1]))
            m.press("Control+Enter")
            _wait_idle(page)
            seen = _text_when(page, "[data-testid='stMain']", ("The inputs have changed",), timeout_s=60.0)
            assert "Previous result, from the previous inputs" in seen, seen[-2000:]
            m.fill("\n".join(members))  # back to the inputs the result came from: its answer again
            m.press("Control+Enter")
            _wait_idle(page)
            page.wait_for_timeout(1000)
            assert "The inputs have changed" not in page.locator("[data-testid='stMain']").inner_text()

            # ---- the same run again (everything cached): two runs to compare on the Runs page
            page.get_by_text("Advanced", exact=True).click()
            _type(page, "Run name (optional)", "second run", role="textbox")
            estimate = _caption(page, "Estimate:")
            run_button = page.get_by_role("button", name="Run the attacks")
            t0 = time.monotonic()
            run_button.click()
            page.wait_for_timeout(2000)
            deadline = time.monotonic() + 300
            while not run_button.is_enabled() and time.monotonic() < deadline:  # disabled while the run goes
                page.wait_for_timeout(500)
            took = time.monotonic() - t0
            _wait_idle(page)
            # printed, not asserted (timing never decides a test): the cached re-run's estimate vs its time
            print(f"\ncached calibration re-run: estimate {estimate!r}; took {took:.1f} s (with the page's waits)")
            assert "all cached" in estimate, estimate  # the estimate knows the cache (issue 40)
            page.goto(f"{server}/Runs", wait_until="networkidle")
            _wait_idle(page)
            seen = _text_when(page, "[data-testid='stMain']", ("Compare two runs", "ΔAUC", "second run"))
            page.screenshot(path=str(ARTIFACTS / "runs_compare.png"), full_page=True)
            assert "ΔAUC" in seen and "second run" in seen and "Traceback" not in seen

            # ---- Document audit on the bundled demo (the default source), fewer trees and no partial curve
            page.goto(f"{server}/Document_audit", wait_until="networkidle")
            _wait_idle(page)
            page.screenshot(path=str(ARTIFACTS / "documents_page.png"), full_page=True)
            page.get_by_text("More settings").click()
            _type(page, "Random-forest trees", "50")
            page.get_by_text("Partial-document curve (AUC vs tokens").click()
            _wait_idle(page)
            _press(page, "Run the document audit", lambda t: "running for" in t or "3 · Results" in t)
            seen = _text_when(page, "[data-testid='stMain']", ("3 · Results", "Per-book membership probability"),
                              timeout_s=420.0)
            _wait_idle(page, timeout=300.0)
            page.screenshot(path=str(ARTIFACTS / "documents_results.png"), full_page=True)
            assert "Model demo target · context 128 · 5 folds" in seen and "Traceback" not in seen, seen[-3000:]

            # ---- Masked-LM audit on the bundled demo (the default source), K = 2
            page.goto(f"{server}/Masked_LM_audit", wait_until="networkidle")
            _wait_idle(page)
            page.screenshot(path=str(ARTIFACTS / "mlm_page.png"), full_page=True)
            _type(page, "K: masking patterns per text", "2")
            _press(page, "Run the masked-LM audit", lambda t: "running for" in t or "4 · Results" in t)
            seen = _text_when(page, "[data-testid='stMain']", ("4 · Results", "At the population threshold"),
                              timeout_s=300.0)
            _wait_idle(page, timeout=300.0)
            page.screenshot(path=str(ARTIFACTS / "mlm_results.png"), full_page=True)
            assert "100 members · 100 non-members" in seen and "Traceback" not in seen

            # ---- Controlled experiment: a one-epoch LoRA target on 20 demo passages (8 members)
            page.goto(f"{server}/Controlled_experiment", wait_until="networkidle")
            _wait_idle(page)
            _text_when(page, "[data-testid='stMain']", ("Controlled experiment",))
            page.screenshot(path=str(ARTIFACTS / "controlled_page.png"), full_page=True)
            for label, value in (("Use at most this many texts of the corpus (0 = all)", "20"), ("Epochs", "1")):
                _type(page, label, value)
            page.get_by_role("button", name="Build the target").click()
            # a background job now (issue 53 item 1): a look at it running, not asserted (it may end first)
            _text_when(page, "[data-testid='stMain']", ("Whole run",), timeout_s=30.0)
            page.screenshot(path=str(ARTIFACTS / "controlled_running.png"), full_page=True)
            seen = _text_when(page, "[data-testid='stMain']", ("4 · Your target", "Target folder"), timeout_s=420.0)
            _wait_idle(page, timeout=300.0)
            page.screenshot(path=str(ARTIFACTS / "controlled_results.png"), full_page=True)
            assert "Target folder" in seen and "Traceback" not in seen

            # ---- Dataset inference on the bundled demo (its members vs its non-members), 999 permutations
            page.goto(f"{server}/Dataset_inference", wait_until="networkidle")
            _wait_idle(page)
            _type(page, "Permutations", "999")
            _visit(page, "Runs")
            _visit(page, "Dataset inference")
            kept = _value_when(page, page.get_by_role("spinbutton", name="Permutations"), "999")
            assert kept == "999", kept
            _press(page, "Run dataset inference", lambda t: "running for" in t or "3 · Verdict" in t)
            seen = _text_when(page, "[data-testid='stMain']", ("3 · Verdict", "Texts that stand out"), timeout_s=420.0)
            _wait_idle(page, timeout=300.0)
            page.screenshot(path=str(ARTIFACTS / "dataset_inference_results.png"), full_page=True)
            assert "Used" in seen and "Traceback" not in seen, seen[-3000:]
            # ---- another source after a result: the old verdict is not shown as the new inputs' (issue 40)
            page.get_by_text("Demo null: unseen vs non-members", exact=True).click()
            _wait_idle(page)
            seen = _text_when(page, "[data-testid='stMain']", ("The inputs have changed",), timeout_s=60.0)
            page.screenshot(path=str(ARTIFACTS / "dataset_inference_changed_source.png"), full_page=True)
            assert "The inputs have changed" in seen and "Previous result, from the previous inputs" in seen, \
                seen[-3000:]
            # ---- the saved run and its report name the model, the data and the verdict; Home counts it
            _visit(page, "Runs")
            _text_when(page, "[data-testid='stMain']", ("Dataset-inference run",))
            picked = page.locator("[data-testid='stSelectbox']").filter(has_text="Dataset-inference run") \
                .locator("input").first.input_value()
            page.screenshot(path=str(ARTIFACTS / "runs_page.png"), full_page=True)
            assert "demo target" in picked and "used" in picked, picked  # the run's name: its model and verdict
            # ---- issue 49: the one run store lists the document and masked-LM runs made above; one reopens in its page
            runs_text = page.locator("[data-testid='stMain']").inner_text()
            assert "Document-level audit" in runs_text and "Masked-LM audit" in runs_text, runs_text[-3000:]
            page.get_by_role("button", name="Show in Document audit page").click()
            seen = _text_when(page, "[data-testid='stMain']", ("Reopened from Runs", "Not kept with a saved run"),
                              timeout_s=60.0)
            page.screenshot(path=str(ARTIFACTS / "documents_reopened.png"), full_page=True)
            assert "Its inputs are not restored" in seen and "Not kept with a saved run" in seen, seen[-3000:]
            # ---- issue 49: the page made from an audit's declaration (dashboard.audit_page), on the bundled demo
            page.goto(f"{server}/Verbatim_extraction", wait_until="networkidle")
            _wait_idle(page)
            seen = _text_when(page, "[data-testid='stMain']", ("Model tested:", "The demo runs with"))
            assert "Prefix tokens" in seen and "Suffix tokens" in seen, seen[-2000:]  # a widget per declared option
            _press(page, "Run the verbatim extraction audit", lambda t: "running for" in t or "3 · Result" in t)
            _text_when(page, "[data-testid='stMain']", ("3 · Result", "extractable share, members"), timeout_s=300.0)
            _wait_idle(page, timeout=300.0)
            seen = _text_when(page, "[data-testid='stMain']", ("evidence of training", "Saved in Runs as"))
            page.screenshot(path=str(ARTIFACTS / "extraction_results.png"), full_page=True)
            assert "only the members' excess over it is evidence of training" in seen and "Saved in Runs as" in seen, \
                seen[-3000:]
            # ---- issue 68: Copyright traps, the three steps in order on a small batch (8 traps of 16 tokens, one
            # bucket) made by the sidebar's model; the test on that same model (it never saw them), the loss alone:
            # 2 + 2 inserted vs 4 held out in one bucket has 70 equally likely splits, so p >= 1/70 > alpha 0.01 and
            # the verdict cannot be "trained on the traps" whatever the scores, and the page says so at once
            page.goto(f"{server}/Copyright_traps", wait_until="networkidle")
            _wait_idle(page)
            _text_when(page, "[data-testid='stMain']", ("1 · Make the traps", "3 · Test a model"), timeout_s=60.0)
            for label, value in (("Count", "8"), ("Tokens", "16"), ("Buckets", "1"), ("Max perplexity", "100000")):
                _type(page, label, value)
            _type(page, "Seed", "1", role="textbox")
            _press(page, "Make the traps", lambda t: "running for" in t or "traps to insert" in t)
            seen = _text_when(page, "[data-testid='stMain']", ("traps to insert", "SHA-256"), timeout_s=300.0)
            _wait_idle(page, timeout=300.0)
            assert "4 traps to insert, 4 held out (secret)" in seen, seen[-2000:]
            # the test's floor, 1/70 above alpha, said now, while more traps can still be made (before publishing)
            assert "allows is 0.0143, not below the pre-registered alpha 0.01: the test can never say" in seen, \
                seen[-2000:]
            paras, docs = _paragraphs(9, "pg43_stevenson_jekyll_and_hyde.txt"), []
            for i in range(3):  # three documents of three paragraphs each
                (tmp_path / f"chapter{i}.txt").write_text("\n\n".join(paras[3 * i:3 * i + 3]) + "\n", encoding="utf-8")
                docs.append(str(tmp_path / f"chapter{i}.txt"))
            page.locator("input[type=file]").first.set_input_files(docs)
            _wait_idle(page)
            _press(page, "Insert the traps", lambda t: "running for" in t or "copies placed in" in t)
            seen = _text_when(page, "[data-testid='stMain']", ("copies placed in",), timeout_s=120.0)
            _wait_idle(page)
            assert "22 copies placed in 3 documents, checked from the written files" in seen, seen[-2000:]
            page.get_by_text("the loss alone", exact=True).click()
            _wait_idle(page)
            _press(page, "Run the test", lambda t: "running for" in t or "mean exposure" in t)
            seen = _text_when(page, "[data-testid='stMain']", ("mean exposure", "Exposure of the inserted traps"),
                              timeout_s=300.0)
            _wait_idle(page, timeout=300.0)
            page.screenshot(path=str(ARTIFACTS / "traps_results.png"), full_page=True)
            page.locator("[data-testid='stPlotlyChart']").first.screenshot(path=str(ARTIFACTS / "traps_scores.png"))
            assert "Not shown: p = " in seen and "(pre-registered alpha 0.01)" in seen, seen[-3000:]
            assert "4 + 4" in seen and "Traceback" not in seen, seen[-3000:]
            page.goto(server, wait_until="networkidle")  # Home (its sidebar link reads "app" after a page URL)
            _wait_idle(page)
            home = _text_when(page, "[data-testid='stMain']", ("dataset inference",), timeout_s=60.0)
            page.screenshot(path=str(ARTIFACTS / "home.png"), full_page=True)
            assert "1 document audit" in home and "1 masked-LM audit" in home and "1 dataset inference" in home, \
                home[-1500:]
            assert "1 verbatim extraction" in home and "1 copyright traps" in home, home[-1500:]
            # ---- issue 53 item 2: a run over uploaded books, reopened from Runs, says its inputs are not restored and
            # that Run tests the page's own (the run saved here from synthetic features: the path is the page's)
            from test_app_pages import _save_di_run

            uploaded = _save_di_run(True, name="my uploaded books", root=SERVED["runs"],
                                    inputs={"source": "upload", "unit": "books", "model": "smollm2",
                                            "suspect_files": ["mine.zip"], "validation_files": ["public.zip"]})
            _visit(page, "Runs")  # the newest run is chosen first
            _text_when(page, "[data-testid='stMain']", ("Dataset-inference run",))
            picked = _value_when(page, page.locator("[data-testid='stSelectbox']").filter(
                has_text="Dataset-inference run").locator("input").first, "my uploaded books", prefix=True)
            assert picked.startswith("my uploaded books"), picked
            page.get_by_role("button", name="Show in Dataset inference page").click()
            seen = _text_when(page, "[data-testid='stMain']", ("Reopened from the Runs page",), timeout_s=60.0)
            page.screenshot(path=str(ARTIFACTS / "dataset_inference_reopened_uploads.png"), full_page=True)
            assert "my uploaded books" in seen and "not restored" in seen and "tests those, not this run's" in seen, \
                seen[-3000:]
            from mia_core.dataset_inference import store

            store.delete(uploaded, SERVED["runs"])  # not a run of the demo: the reports' check below is the demo's
            # ---- issue 53 item 5: a too-small upload is refused before Run (Run off, the previous result kept)
            import tempfile

            small = Path(tempfile.mkdtemp())
            for i in range(3):
                (small / f"suspect{i}.txt").write_text(f"suspect text {i} about the harbour\n")
                (small / f"validation{i}.txt").write_text(f"validation text {i} about the mountain road\n")
            page.goto(f"{server}/Dataset_inference", wait_until="networkidle")
            _wait_idle(page)
            page.get_by_text("Upload files", exact=True).click()
            _wait_idle(page)
            boxes = page.locator("input[type=file]")
            boxes.nth(0).set_input_files([str(small / f"suspect{i}.txt") for i in range(3)])
            boxes.nth(1).set_input_files([str(small / f"validation{i}.txt") for i in range(3)])
            seen = _text_when(page, "[data-testid='stMain']", ("Run is not available yet", "3 files (.txt"),
                              timeout_s=60.0)
            page.screenshot(path=str(ARTIFACTS / "dataset_inference_too_small.png"), full_page=True)
            assert "Model tested:" in seen and "Previous result, from the previous inputs" in seen, seen[-3000:]
            assert not page.get_by_role("button", name="Run dataset inference").is_enabled()
            shutil.rmtree(small)
            monkeypatch.setenv("MIA_RUNS_DIR", SERVED["runs"])
            _reports_name_their_models(SERVED["runs"])
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "failure.png"), full_page=True)  # what the page showed
            raise
        finally:
            browser.close()


@pytest.fixture(scope="module")
def newcomer_server(tmp_path_factory):
    """A server as a newcomer starts it: the start-up warm-up preload on (the other tests turn it off),
    nothing in the statistics cache (only the converted embedded model is linked in)."""
    from helpers import empty_cache

    env = {k: v for k, v in os.environ.items() if k != "MIA_NO_PRELOAD"}
    env.setdefault("HF_HUB_OFFLINE", "1")
    env["MIA_RUNS_DIR"] = str(tmp_path_factory.mktemp("runs"))
    env["MIA_CACHE_DIR"] = str(empty_cache(tmp_path_factory.mktemp("newcomer") / "cache"))
    log = tmp_path_factory.mktemp("log") / "streamlit-newcomer.log"
    with _serve(env, log) as url:
        yield url, log, Path(env["MIA_CACHE_DIR"])


def _table_aucs(page) -> dict[str, float]:
    """{attack label: AUC} from the results table on the page (the first number of the AUC cell)."""
    import re

    out = {}
    for row in page.locator("[data-testid='stTable'] tr").all():
        cells = [c.inner_text().strip() for c in row.locator("th, td").all()]
        if len(cells) >= 2:
            m = re.match(r"([01]\.\d+)", cells[1])
            if m:
                out[cells[0]] = float(m.group(1))
    return out


def test_a_newcomers_first_hour_shows_the_numbers_a_cold_cli_run_gives(newcomer_server):
    """The newcomer's path (issue 30): open the home page (the warm-up starts loading the demo models),
    open Inspect before the warm-up ends and analyse a paragraph, then run the demo calibration. The
    loss, the sidebar's parameter count and the demo AUCs must be a healthy model's: the loss of a cold
    load in this process, 135M parameters, and the AUCs of a cold `mia run --demo` (DEMO_EXPECTED_AUC,
    measured that way; the page says it checked them)."""
    from playwright.sync_api import sync_playwright

    from mia_core.attacks import REGISTRY
    from mia_core.targets.demo import DEMO_EXPECTED_AUC
    from mia_core.models import load_causal_lm
    from mia_core.stats import compute_stats
    from mia_core.attacks.base import scored_tokens

    url, log, cache = newcomer_server
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    paragraph = _paragraphs(1, "pg35_wells_time_machine.txt")[0]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 2000})
        try:
            page.goto(url, wait_until="networkidle")  # the first page view starts the warm-up
            page.goto(f"{url}/Inspect_a_text", wait_until="networkidle")  # while it loads
            _analyse(page, paragraph)
            _wait_idle(page)
            loss_text = page.locator("[data-testid='stMetric']").filter(has_text="Loss (mean NLL)") \
                .locator("[data-testid='stMetricValue']").inner_text()
            sidebar = page.locator("[data-testid='stSidebar']").inner_text()
            page.screenshot(path=str(ARTIFACTS / "newcomer_inspect.png"), full_page=True)

            page.goto(f"{url}/Calibration_run", wait_until="networkidle")
            _press(page, "Run the attacks", lambda t: "running for" in t or "AUC [95% CI]" in t)
            seen = _text_when(page, "[data-testid='stMain']", ("AUC [95% CI]", "Known truth checked"), timeout_s=600.0)
            _wait_idle(page, timeout=300.0)
            aucs = _table_aucs(page)
            page.screenshot(path=str(ARTIFACTS / "newcomer_demo_run.png"), full_page=True)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    server_log = log.read_text(errors="replace")
    assert "MISSING" not in server_log and "newly initialized" not in server_log, server_log[-3000:]
    cold = load_causal_lm("smollm2", reuse=False)
    want = scored_tokens(compute_stats(cold, [paragraph], use_cache=False))[0].loss
    assert abs(float(loss_text) - want) < 0.006, (loss_text, want)
    assert "135M params" in sidebar and "163M" not in sidebar, sidebar
    assert "THESE FIGURES ARE WRONG" not in seen and "Traceback" not in seen
    labels = {REGISTRY[a].label: a for a in DEMO_EXPECTED_AUC}
    got = {labels[k]: v for k, v in aucs.items() if k in labels}
    assert {"loss", "zlib", "min_k", "min_k_pp", "ref"} <= set(got), aucs
    for a, v in got.items():
        assert abs(v - DEMO_EXPECTED_AUC[a]) <= 0.0015, (a, v, DEMO_EXPECTED_AUC[a])
    # checked healthy above: the demo statistics the cold server computed go to the suite's shared cache, where the
    # demo unit's later tests read them instead of computing them again (tests/conftest.py: LAST_IN_UNIT)
    from helpers import share_statistics
    from mia_core.paths import cache_root

    share_statistics(cache, cache_root())
