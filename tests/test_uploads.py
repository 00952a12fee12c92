"""Upload boxes (issue 53 item 8): every file a box holds is listed in words (Streamlit's own list shows three at a
time), a box that mixes .zip archives with single files says so, and "Clear these files" empties it (a new widget:
a file uploader's files cannot be removed through session state). AppTest cannot upload a file, so the summary and
the key rotation are checked directly, and every page that has upload boxes is drawn with them."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from dashboard.ui import _clear_uploads, upload_key, upload_summary


def _f(name: str, size: int = 1000):
    return SimpleNamespace(name=name, size=size)


def test_every_file_is_listed_with_its_kind_count_and_size():
    files = [_f(f"book{i}.txt", 2048) for i in range(9)]
    line, mixed = upload_summary(files)
    assert line.startswith("9 files (.txt, 18.0 KiB): "), line
    assert all(f"book{i}.txt" in line for i in range(9)) and mixed is None
    line, _ = upload_summary([_f("one.zip")])
    assert line.startswith("1 file (.zip"), line  # one file, not "1 files"


def test_a_box_mixing_archives_and_single_files_says_so():
    files = [_f("members.zip")] + [_f(f"extra{i}.txt") for i in range(8)]
    _, mixed = upload_summary(files)
    assert mixed and "1 .zip archive with 8 other files" in mixed and "Clear these files" in mixed, mixed
    assert upload_summary([_f("a.zip"), _f("b.zip")])[1] is None  # only archives: nothing mixed


def test_clearing_a_box_gives_it_a_new_key_once_per_press(monkeypatch):
    import streamlit as st

    state: dict = {}
    monkeypatch.setattr(st, "session_state", state)
    assert upload_key("di_suspect_up") == "di_suspect_up"
    _clear_uploads("di_suspect_up")
    first = upload_key("di_suspect_up")
    _clear_uploads("di_suspect_up")
    assert first != "di_suspect_up" and upload_key("di_suspect_up") not in (first, "di_suspect_up")
    assert upload_key("di_validation_up") == "di_validation_up"  # the other box keeps its files


@pytest.mark.parametrize("page,choose", [
    ("pages/2_Calibration_run.py", ("cal_source", "upload")),
    ("pages/3_Document_audit.py", ("doc_source", "upload")),
    ("pages/7_Dataset_inference.py", ("di_source", "upload")),
])
def test_the_pages_draw_their_upload_boxes(page, choose):
    from streamlit.testing.v1 import AppTest

    from pathlib import Path

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / page), default_timeout=60).run()
    at.radio(key=choose[0]).set_value(choose[1]).run()
    assert not at.exception, at.exception
    assert not any(b.label == "Clear these files" for b in at.button)  # nothing uploaded: nothing to clear
