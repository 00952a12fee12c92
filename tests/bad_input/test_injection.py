"""Bad input, part F: injection into what people read (issue 27, item 6; the Runs page is tested elsewhere).

* Spreadsheet formulas: a text id or document name starting with ``=``, ``+``, ``-``, ``@``, a tab or a
  carriage return is written to ``scores.csv`` / ``document_scores.csv`` (and the dashboard's CSV
  downloads) with a leading ``'`` (OWASP, "CSV Injection"); numbers, negative ones included, stay numbers;
  a stored run read back (``mia_core.runs.load_run``) gives the ids exactly as they were.
* Terminal escapes: a file name or zip-member name holding ``ESC [31m`` or ``\\nerror: forged`` is printed
  with its control characters escaped, so the CLI prints exactly one ``error:`` line and no ESC byte; the
  same for notes, progress lines and the printed report.
* Markdown: a name in a dashboard message (``show_error`` and the other message helpers) shows as text,
  never as a link or an image.
* Host header (DNS rebinding): the real server, started with the project's ``.streamlit/config.toml``,
  refuses the WebSocket of a page that reaches it as ``evil.example`` (Host and Origin both foreign,
  the rebinding case) and accepts the loopback names; ``dashboard.hosts`` applies the same list in
  ``app.py`` for Streamlit versions without ``server.allowedHosts``.
"""
from __future__ import annotations

import base64
import csv
import io
import os
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import Reached, assert_one_error, stop_model_loads

from mia_core.cli import main

ROOT = Path(__file__).resolve().parents[2]
FORMULAS = ["=cmd|' /C calc'!A0", "+1", "-2+3", "@SUM(A1)", "\t=1+1", "\r=1+1"]
PLAIN = ["plain id", "'already quoted", "a=b", "x-1"]
IDS = FORMULAS + PLAIN
SCORES = np.array([-3.25, 1.5, -0.125, 2.0, -7.0, 0.5, -1.0, 4.0, -2.5, 0.0])
LABELS = np.array([1, 0, 1, 0, 1, 0, 1, 0, 1, 0])
FORGED = "m\x1b[31mred\nerror: forged"  # a file name that colours the terminal and starts a line of its own


def _raw_rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _assert_neutralised(cells: list[str], originals: list[str]) -> None:
    for cell, orig in zip(cells, originals):
        if orig.startswith(("=", "+", "-", "@", "\t", "\r", "'")):
            assert cell == "'" + orig, (cell, orig)
        else:
            assert cell == orig, (cell, orig)
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell


# ----------------------------------------------------------------------------- spreadsheet formulas
def _run_result():
    from mia_core import metrics as M
    from mia_core.pipeline import RunResult

    df = pd.DataFrame({"text_id": IDS, "label": LABELS, "text_hash": [f"h{i}" for i in range(len(IDS))],
                       "group": ["-g1", "g2"] * 5, "loss": SCORES})
    return RunResult(scores=df, metrics={"loss": M.evaluate(LABELS, SCORES, n_bootstrap=0, seed=0)},
                     config={"attacks": ["loss"], "split": None}, models={"target": {"name": "tiny"}}, timings={})


def test_scores_csv_neutralises_formula_ids_and_a_stored_run_reads_them_back_exactly(tmp_path):
    from mia_core import runs

    res = _run_result()
    path = res.save(tmp_path / "out")["scores"]
    rows = _raw_rows(path)
    _assert_neutralised([r["text_id"] for r in rows], IDS)
    _assert_neutralised([r["group"] for r in rows], ["-g1", "g2"] * 5)
    # the scores are numbers, a negative one included: not quoted, not prefixed
    assert [float(r["loss"]) for r in rows] == SCORES.tolist()
    assert rows[0]["loss"] == "-3.25"
    assert pd.read_csv(path)["loss"].dtype.kind == "f"

    stored = runs.save_run(res, name="formulas", root=tmp_path / "runs")
    back = runs.load_run(stored.id, root=tmp_path / "runs").scores
    assert back["text_id"].tolist() == IDS
    assert back["group"].tolist() == ["-g1", "g2"] * 5
    assert back["loss"].dtype.kind == "f" and back["loss"].tolist() == SCORES.tolist()
    assert back["label"].tolist() == LABELS.tolist()


def test_document_and_mlm_csvs_neutralise_names(tmp_path):
    from mia_core.documents import DocumentAuditResult
    from mia_core.mlm import MlmAuditResult
    from mia_core.runs.results import read_csv

    pipeline = "maxnorm_tf+hist"
    docs = pd.DataFrame({"document": IDS, "label": LABELS, "fold": np.arange(10) % 2, "n_tokens": 500,
                         "source": "(text)", f"prob:{pipeline}": SCORES})
    res = DocumentAuditResult(
        documents=[{"name": n, "label": int(lab), "source": "(text)", "n_tokens": 500, "n_chars": 2000,
                    "strip": {"stripped": False}} for n, lab in zip(IDS, LABELS)],
        labels=LABELS, settings={"folds": 2, "context": 128, "normalizations": ["maxnorm_tf"]},
        model={"name": "tiny"}, metrics={pipeline: {"auc_mean": 0.5, "auc_std": 0.0}}, scores=docs)
    path = res.save(tmp_path / "docs", token_values=False)["scores"]
    rows = _raw_rows(path)
    _assert_neutralised([r["document"] for r in rows], IDS)
    assert [float(r[f"prob:{pipeline}"]) for r in rows] == SCORES.tolist()
    assert read_csv(path)["document"].tolist() == IDS

    mlm_scores = pd.DataFrame({"text_id": IDS, "label": LABELS, "text_hash": "h", "likelihood_ratio": SCORES,
                               "loss": -SCORES})
    mlm = MlmAuditResult(metrics={}, group_metrics=None, scores=mlm_scores, population_scores={},
                         leak_features={}, energies={}, settings={}, models={}, warnings=[])
    path = mlm.save(tmp_path / "mlm")["scores"]
    rows = _raw_rows(path)
    _assert_neutralised([r["text_id"] for r in rows], IDS)
    assert [float(r["loss"]) for r in rows] == (-SCORES).tolist()
    back = read_csv(path, dtype={"text_id": str})
    assert back["text_id"].tolist() == IDS and back["likelihood_ratio"].tolist() == SCORES.tolist()


def test_download_csv_text_is_neutralised():
    from mia_core.runs.results import csv_text

    text = csv_text(pd.DataFrame({"book": IDS, "score": SCORES, "kind": pd.Categorical(IDS)}))
    rows = list(csv.DictReader(io.StringIO(text)))
    _assert_neutralised([r["book"] for r in rows], IDS)
    _assert_neutralised([r["kind"] for r in rows], IDS)  # a categorical column too (its categories are mapped)
    assert [float(r["score"]) for r in rows] == SCORES.tolist()


# ----------------------------------------------------------------------------- terminal escapes in the CLI
@pytest.fixture
def reached(monkeypatch):
    stop_model_loads(monkeypatch)


def _run(work: Path, members: Path) -> list[str]:
    return ["run", "--members", str(members), "--nonmembers", str(work / "n.txt"), "--quiet",
            "--out", str(work / "out")]


def test_a_file_name_cannot_forge_an_error_line_or_colour_the_terminal(work, reached, capsys):
    bad = work / (FORGED + ".txt")
    bad.write_bytes(b"")  # empty: the error names the file
    rc = main(_run(work, bad))
    err = capsys.readouterr().err
    line = assert_one_error(rc, err, "is empty")
    assert "\x1b" not in err and "\r" not in err
    assert "m\\x1b[31mred\\nerror: forged.txt is empty" in line
    assert err.count("\n") == 1  # the one line, nothing else


def test_a_zip_member_name_cannot_forge_an_error_line(work, reached, capsys):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("x\x1b[2J\r\nerror: forged.bin", b"not a text")
    (work / "m.zip").write_bytes(buf.getvalue())
    rc = main(_run(work, work / "m.zip"))
    err = capsys.readouterr().err
    line = assert_one_error(rc, err, "holds no .txt file")
    assert "\x1b" not in err and "\r" not in err
    assert "x\\x1b[2J\\r\\nerror: forged.bin" in line


def test_notes_naming_a_file_are_one_line_each(work, reached, capsys):
    good = work / (FORGED + ".txt")
    good.write_text("The first member text of this set.\nThe second member text, longer.\n")
    with pytest.raises(Reached):  # the inputs pass; their notes are printed before the model loads
        main(_run(work, good))
    err = capsys.readouterr().err
    assert "\x1b" not in err
    lines = err.splitlines()
    assert lines and all(ln.startswith(("note", "warning")) for ln in lines), err
    assert any("m\\x1b[31mred\\nerror: forged.txt" in ln for ln in lines), err


def test_progress_lines_and_the_printed_report_escape_controls(capsys):
    from mia_core.cli.common import ProgressBar, print_notes
    from mia_core.cli.quiet import without_printed_notes
    from mia_core.errors import safe_lines, safe_text

    with ProgressBar(plain=True, interval=0) as bar:
        bar(f"document 1/2 ({FORGED}): scoring", 0.5)
    print_notes([FORGED], "warning")
    err = capsys.readouterr().err
    assert "\x1b" not in err and len(err.splitlines()) == 2, err
    assert all(ln.startswith(("document", "warning:")) for ln in err.splitlines()), err

    note = f"{FORGED}.txt: read 2 texts"
    summary = f"target: tiny\x1b[2J\nAUC 0.5\nnote: {note}\nnote: another"
    shown = without_printed_notes(summary, [note])  # the note was printed already: dropped whole
    assert shown == "target: tiny\\x1b[2J\nAUC 0.5\nnote: another"
    assert safe_lines("a\x1b[1m\nb\u202ec\x9b") == "a\\x1b[1m\nb\\u202ec\\x9b"
    assert safe_text("C:\\data\\x.txt") == "C:\\data\\x.txt"  # backslashes are left alone


def test_the_cli_in_a_subprocess_prints_one_error_line(work):
    """What a user's terminal gets, bytes and all (python -m mia_core, no capture in between)."""
    bad = work / (FORGED + ".txt")
    bad.write_bytes(b"")
    p = subprocess.run([sys.executable, "-m", "mia_core", "shift", "--members", str(bad), "--nonmembers",
                        str(work / "n.txt"), "--quiet", "--out", str(work / "out")],
                       capture_output=True, env={**os.environ, "MIA_CACHE_DIR": str(work / "cache")}, timeout=300)
    err = p.stderr.decode("utf-8", "replace")
    assert b"\x1b" not in p.stderr and b"\r" not in p.stderr
    assert_one_error(p.returncode, err, "forged.txt is empty")


# ----------------------------------------------------------------------------- Markdown in dashboard messages
def test_dashboard_messages_show_names_as_text():
    markdown_it = pytest.importorskip("markdown_it")
    from dashboard.ui import md_text
    from mia_core.errors import safe_text

    cases = ["members ![x](http://evil.example/beacon.png) is empty.", "[click](javascript:alert(1)) is empty",
             "<http://evil.example> is empty", "**bold** _it_ `code` $x$ ~~gone~~ :red[red]",
             "# heading", "- item", "1. item", "> quote", "a | b", "&#x202e;", FORGED]
    md = markdown_it.MarkdownIt("commonmark").enable("strikethrough").enable("table")
    for s in cases:
        m = md_text(s)
        assert "\n" not in m and "\x1b" not in m
        tokens = md.parse(m)
        kinds = {t.type for t in tokens} | {c.type for t in tokens for c in (t.children or [])}
        assert kinds <= {"paragraph_open", "paragraph_close", "inline", "text", "softbreak"}, (s, m, kinds)
        shown = "".join(c.content for t in tokens if t.type == "inline" for c in t.children if c.type == "text")
        assert shown == safe_text(s), (s, m, shown)
    # GitHub's bare links (remark-gfm, which Streamlit uses): no "http://", "www." or e-mail left to match
    for s in ("see http://evil.example/x", "www.evil.example", "me@evil.example"):
        m = md_text(s)
        assert "http://" not in m and "www." not in m and "@" not in m.replace("\\@", ""), m
    assert md_text("my_model_name not found locally") == "my_model_name not found locally"


def test_show_error_renders_the_escaped_text():
    from streamlit.testing.v1 import AppTest

    def page():
        from dashboard.ui import show_error

        show_error(ValueError("members ![x](http://evil.example/b.png)\x1b[31m is empty."))

    at = AppTest.from_function(page).run()
    (box,) = at.error
    assert box.value == "members !\\[x\\](http\\://evil.example/b.png)\\\\x1b\\[31m is empty."


# ----------------------------------------------------------------------------- Host header (DNS rebinding)
def test_host_check():
    from dashboard.hosts import LOOPBACK, host_allowed

    for ok in ("localhost", "localhost:8501", "LOCALHOST:8501", "127.0.0.1:8501", "[::1]:8501", "localhost."):
        assert host_allowed(ok, LOOPBACK), ok
    for bad in ("evil.example", "evil.example:8501", "localhost.evil.example", "localhost@evil.example",
                "localhost:notaport", "localhost/x", "", None, "127.0.0.1.evil.example"):
        assert not host_allowed(bad, LOOPBACK), bad
    assert host_allowed("evil.example", ["*"]) and host_allowed("evil.example", [])
    assert host_allowed("a.b.example:1", ["*.b.example"]) and not host_allowed("ab.example", ["*.b.example"])


def test_app_stops_a_session_under_a_foreign_host(monkeypatch):
    import streamlit as st

    from dashboard import hosts

    shown = []
    monkeypatch.setattr(st, "error", lambda *a, **k: shown.append(a))
    monkeypatch.setattr(hosts, "allowed_hosts", lambda: list(hosts.LOOPBACK))
    for host, refused in (("evil.example:8501", True), ("localhost:8501", False), (None, False)):
        monkeypatch.setattr(st, "context", type("Ctx", (), {"headers": {"Host": host} if host else {}})())
        assert hosts.refuse_foreign_host() is refused, host
    assert len(shown) == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _handshake(port: int, host: str, origin: str | None) -> str:
    """The status line of a WebSocket handshake on Streamlit's session endpoint."""
    key = base64.b64encode(os.urandom(16)).decode()
    head = [f"GET /_stcore/stream HTTP/1.1", f"Host: {host}", "Upgrade: websocket", "Connection: Upgrade",
            "Sec-WebSocket-Version: 13", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Protocol: streamlit"]
    if origin:
        head.append(f"Origin: {origin}")
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        return s.recv(200).decode("latin-1").split("\r\n")[0]


@pytest.mark.slow
def test_the_server_refuses_a_rebound_host(tmp_path):
    """The real server with the project's config (about a second to start; the handshake runs no page)."""
    import streamlit as st

    try:
        st.get_option("server.allowedHosts")
    except Exception:  # noqa: BLE001
        pytest.skip("this Streamlit has no server.allowedHosts (app.py's check covers it: test above)")
    port = _free_port()
    log = open(tmp_path / "server.log", "wb")
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)],
                              cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                              env={**os.environ, "MIA_NO_PRELOAD": "1", "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"})
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()
                time.sleep(0.2)
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
            assert " 101 " in _handshake(port, host, f"http://{host}"), host
        # DNS rebinding: the page's own name, for Host and Origin alike (same origin for the browser)
        assert " 403 " in _handshake(port, f"evil.example:{port}", f"http://evil.example:{port}")
        assert " 403 " in _handshake(port, f"evil.example:{port}", None)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
