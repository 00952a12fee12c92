"""Bad input, part F: resources and wording (issue 27, item 7).

* One text longer than the limit (``MAX_TEXT_CHARS``, or ``MIA_MAX_TEXT_CHARS``) is refused in
  one line naming its source, its length, the limit and how to raise it, as it is read: before
  any tokenizer and any model (a fast tokenizer handed a 50 MB text aborts the process with a
  Rust backtrace, exit 134, under a 4 GB address-space limit). Documents too. Once for real: a
  subprocess under a 4 GB address-space limit given a 50 MB text.
* ``shift`` out of memory: the ``error:`` line names no flag ``shift`` does not have (it used to
  say ``--batch-tokens`` and int8/int4). The failure is injected (``MemoryError``).
* A file mixing UTF-8 lines and Windows-1252 lines is decoded line by line (each line right, a
  note naming how many lines took the fallback and the first one); a file entirely in
  Windows-1252 is read as before.
* The same text in NFC and in NFD (or with other whitespace) in both sets is refused; the texts
  themselves are kept and scored exactly as given.

Every refusal is one ``error:`` line, exit 2, no traceback, before any model is loaded
(``reached`` turns every model load into ``Reached``, which would escape ``main`` and fail the test).
"""
from __future__ import annotations

import argparse
import re
import resource
import sys
import types
import unicodedata
from pathlib import Path

import pytest
from helpers import Reached, assert_one_error, command_line, listing, run_mia, stop_model_loads

from mia_core.cli import build_parser, main
from mia_core.data import (MAX_TEXT_CHARS, check_text_length, decode_bytes, load_dataset, max_text_chars,
                           texts_from_strings)
from mia_core.documents import check_document_overlap, load_documents
from mia_core.errors import DataError, SettingsError

from helpers import BAD_MEMBERS as MEMBERS, BAD_NONMEMBERS as NONMEMBERS  # noqa: E402
ENV = "MIA_MAX_TEXT_CHARS"


@pytest.fixture
def reached(monkeypatch):
    """Every model load (and the masked-LM audit, and fine-tuning) raises ``Reached``."""
    stop_model_loads(monkeypatch)


# ----------------------------------------------------------------------------- one text too long
COMMANDS = ["run", "mlm", "shift", "make-target", "documents"]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_text_above_the_limit_is_one_line_before_any_model(command, work, reached, capsys, monkeypatch):
    monkeypatch.setenv(ENV, "1000")
    bad = work / "long.txt"
    bad.write_text("word " * 300 + "\n")  # one text (or document) of 1,499 characters
    before = listing(work)
    rc = main(command_line(command, work, bad))
    where = f"{bad}: one document" if command == "documents" else "long.txt:1: one text"
    line = assert_one_error(rc, capsys.readouterr().err, f"{where} of 1,499 characters")
    assert "above the 1,000-character limit" in line and ENV in line
    assert listing(work) == before  # not even --out


def test_the_default_limit_refuses_one_character_more(work, reached, capsys):
    """The real limit, not a lowered one: MAX_TEXT_CHARS characters pass the reader, one more does not."""
    assert max_text_chars() == MAX_TEXT_CHARS == 10_000_000
    ok = work / "ok.txt"
    ok.write_text("x" * MAX_TEXT_CHARS + "\nA second member text.\n")
    with pytest.raises(Reached):  # read, checked, as far as the model loader
        main(command_line("run", work, ok))
    bad = work / "bad.txt"
    bad.write_text("A first member text.\n" + "x" * (MAX_TEXT_CHARS + 1) + "\n")
    rc = main(command_line("run", work, bad))
    line = assert_one_error(rc, capsys.readouterr().err, "bad.txt:2: one text of 10,000,001 characters")
    assert "10,000,000-character limit" in line and "GiB of memory" in line and ENV in line


def test_the_environment_variable_raises_the_limit(work, reached, capsys, monkeypatch):
    bad = work / "long.txt"
    bad.write_text("word " * 300 + "\nA second member text.\n")
    monkeypatch.setenv(ENV, "1000")
    assert_one_error(main(command_line("run", work, bad)), capsys.readouterr().err, ENV)
    monkeypatch.setenv(ENV, "2_000")
    with pytest.raises(Reached):
        main(command_line("run", work, bad))


@pytest.mark.parametrize("value", ["abc", "0", "-5", "1.5"])
def test_a_bad_limit_in_the_environment_is_one_line(value, work, reached, capsys, monkeypatch):
    monkeypatch.setenv(ENV, value)
    rc = main(command_line("run", work, work / "m.txt"))
    assert_one_error(rc, capsys.readouterr().err, f"{ENV} must be a positive whole number")
    with pytest.raises(SettingsError):
        max_text_chars()


def test_pasted_texts_and_documents_are_checked_too(work, monkeypatch):
    monkeypatch.setenv(ENV, "100")
    with pytest.raises(DataError, match=r"^non-members:2: one text of 101 characters, above the 100-character limit"):
        texts_from_strings(["short"], ["fine", "y" * 101])
    book = work / "big_book.txt"
    book.write_text("z" * 150)
    with pytest.raises(DataError, match=r"big_book.txt: one document of 150 characters.*shorter documents"):
        load_documents(book)


def test_the_tokenizer_is_never_handed_a_text_above_the_limit(monkeypatch):
    """The last guard, for texts that reach scoring another way (the Python API, generated texts)."""
    from mia_core.stats import tokenize

    handed = []

    def tokenizer(text, **kw):
        handed.append(len(text))
        return {"input_ids": [1, 2, 3]}

    lm = types.SimpleNamespace(name="tiny", tokenizer=tokenizer)
    monkeypatch.setenv(ENV, "50")
    assert tokenize(lm, "a" * 50).tolist() == [1, 2, 3]
    with pytest.raises(DataError, match=r"scoring with tiny: one text of 51 characters"):
        tokenize(lm, "a" * 51)
    assert handed == [50]


def test_check_text_length_names_source_length_limit_and_remedy(monkeypatch):
    monkeypatch.setenv(ENV, "10")
    check_text_length("0123456789", "a.txt:1")
    with pytest.raises(DataError) as e:
        check_text_length("x" * 12_345, "a.txt:7\x1b[31m")
    msg = str(e.value)
    assert msg.startswith("a.txt:7\\x1b[31m: one text of 12,345 characters, above the 10-character limit")
    assert ENV in msg and "\n" not in msg


@pytest.mark.slow
def test_a_50_mb_text_under_a_4_gb_limit_is_one_line_not_a_rust_abort(tmp_path):
    """What the issue saw: a 50 MB text under ``ulimit -v 4000000`` aborted inside the tokenizer
    (exit 134, a Rust backtrace). Now refused as it is read, in the user's own process set-up."""
    big = tmp_path / "big.txt"
    with open(big, "w", encoding="utf-8") as fh:
        fh.write("A short member text.\n")
        for _ in range(50):
            fh.write("The quick brown fox jumps over the lazy dog. " * 22_223)
        fh.write("\n")
    (tmp_path / "n.txt").write_text(NONMEMBERS)
    limit = 4_000_000 * 1024

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    proc = run_mia("run", "--members", big, "--nonmembers", tmp_path / "n.txt", "--attacks", "loss", "--quiet",
                   env_extra={"MIA_CACHE_DIR": str(tmp_path / "cache"), ENV: ""}, preexec_fn=cap, timeout=300)
    assert "panicked" not in proc.stderr and "memory allocation" not in proc.stderr, proc.stderr[-2000:]
    n = len("The quick brown fox jumps over the lazy dog. ") * 22_223 * 50 - 1  # the last space trimmed
    line = assert_one_error(proc.returncode, proc.stderr, f"big.txt:2: one text of {n:,} characters")
    assert ENV in line


# ----------------------------------------------------------------------------- shift out of memory
def _shift_flags() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {s for a in sub.choices["shift"]._actions for s in a.option_strings}


def _raise_memory_error(*a, **k):
    raise MemoryError()


INJECT = {  # where the report runs out of memory
    "blind-baseline": ("mia_core.metrics.blind_baseline", "blind_baseline"),
    "logistic-regression": ("sklearn.linear_model", "LogisticRegression.fit"),
    "near-duplicates": ("mia_core.data.overlap", "near_duplicate_pairs"),
}


@pytest.mark.parametrize("where", INJECT)
def test_shift_out_of_memory_names_only_flags_shift_has(where, work, reached, capsys, monkeypatch):
    import importlib

    module, attr = INJECT[where]
    owner = importlib.import_module(module)
    if "." in attr:
        cls, attr = attr.split(".")
        owner = getattr(owner, cls)
    monkeypatch.setattr(owner, attr, _raise_memory_error)
    rc = main(command_line("shift", work, work / "m.txt"))
    line = assert_one_error(rc, capsys.readouterr().err, "out of memory")
    named = set(re.findall(r"--[a-z][a-z0-9-]*", line))
    assert named <= _shift_flags(), f"names flags shift does not have: {named - _shift_flags()}: {line}"
    assert "int8" not in line and "int4" not in line and "context" not in line  # no model in shift
    assert "3 members and 3 non-members" in line and "fewer or shorter texts" in line
    assert not (work / "out").exists()


# ----------------------------------------------------------------------------- mixed encodings
MIXED_LINES = ["café au lait, served hot", "naïve “quoted” text for € 5", "plain ASCII line",
               "Ünïcode ✓ survives", "Crème brûlée after dinner"]
CP1252_AT = (1, 4)  # 0-based lines written in Windows-1252; the others in UTF-8


def _mixed_bytes(newline: bytes = b"\n") -> bytes:
    return newline.join(t.encode("cp1252" if i in CP1252_AT else "utf-8") for i, t in enumerate(MIXED_LINES)) + newline


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_mixed_utf8_and_cp1252_lines_are_each_decoded_right(newline):
    notes: list[str] = []
    text, enc = decode_bytes(_mixed_bytes(newline), "mixed.txt", notes)
    assert text.split("\n")[:-1] == MIXED_LINES
    assert enc == "utf-8+cp1252"
    assert len(notes) == 1 and "mixes encodings: 2 lines not valid UTF-8 (first: line 2)" in notes[0], notes
    assert "Windows-1252" in notes[0]


def test_mixed_file_with_a_utf8_bom_is_decoded_per_line_too():
    notes: list[str] = []
    text, _ = decode_bytes(b"\xef\xbb\xbf" + _mixed_bytes(), "bom.txt", notes)
    assert text.split("\n")[:-1] == MIXED_LINES
    assert "first: line 2" in notes[0]


def test_a_line_outside_cp1252_falls_back_to_latin1_per_line():
    notes: list[str] = []
    text, enc = decode_bytes("café\n".encode() + b"caf\xe9 \x81 end\n", "l.txt", notes)
    assert text == "café\ncafé \x81 end\n" and enc == "utf-8+latin-1"
    assert "1 line not valid UTF-8 (first: line 2)" in notes[0] and "Latin-1" in notes[0]


def test_a_file_entirely_in_cp1252_is_read_as_before():
    notes: list[str] = []
    text, enc = decode_bytes("café naïve\nsmart “quotes” and € sign\n".encode("cp1252"), "c.txt", notes)
    assert text == "café naïve\nsmart “quotes” and € sign\n" and enc == "cp1252"
    assert len(notes) == 1 and "not valid UTF-8; read as Windows-1252" in notes[0]


def test_mixed_file_through_the_readers_and_the_cli(work, capsys):
    (work / "mixed.txt").write_bytes(_mixed_bytes())
    ds = load_dataset(work / "mixed.txt", work / "n.txt")
    assert ds.members() == MIXED_LINES
    assert any("mixes encodings" in n and "line 2" in n for n in ds.report)
    rc = main(command_line("shift", work, work / "mixed.txt"))
    err = capsys.readouterr().err
    assert rc == 0 and "Traceback" not in err and "error:" not in err, err
    assert sum(ln.startswith("note:") and "mixes encodings" in ln for ln in err.splitlines()) == 1, err
    book = work / "mixed_book.txt"
    book.write_bytes(_mixed_bytes())
    doc = load_documents(book)[0]
    assert doc.text == "\n".join(MIXED_LINES) and doc.strip["encoding"] == "utf-8+cp1252"


# ----------------------------------------------------------------------------- NFC / NFD in both sets
SENTENCE = "Le café est fermé le dimanche, à Noël et à Pâques."
NFD = unicodedata.normalize("NFD", SENTENCE)


def test_nfc_and_nfd_spellings_are_the_same_text():
    assert NFD != SENTENCE and unicodedata.normalize("NFC", NFD) == SENTENCE
    with pytest.raises(DataError, match=r"text appears in both sets: members:1 and non-members:2 "
                                        r"\(the same text up to Unicode normal form"):
        texts_from_strings([SENTENCE, "another member"], ["a non-member", NFD])
    with pytest.raises(DataError, match="members:2 and non-members:1"):  # the other way round
        texts_from_strings(["a member", NFD], [SENTENCE])
    with pytest.raises(DataError, match="in both sets"):  # whitespace: wrapping, tabs, no-break spaces
        texts_from_strings(["the same  words\there"], ["the\u00a0same words\nhere"])


def test_similar_texts_that_differ_are_not_refused():
    ds = texts_from_strings(["Le café est ouvert.", "Same Case"], ["Le cafe est ouvert.", "same case"])
    assert len(ds) == 4


def test_texts_are_scored_as_given_not_normalised(work):
    (work / "m_nfd.txt").write_text(NFD + "\n" + MEMBERS, encoding="utf-8")
    ds = load_dataset(work / "m_nfd.txt", work / "n.txt")
    assert ds.members()[0] == NFD  # only the comparison normalises


@pytest.mark.parametrize("command", ["run", "shift", "mlm"])
def test_nfc_nfd_overlap_is_one_line_before_any_model(command, work, reached, capsys):
    (work / "m_nfc.txt").write_text(MEMBERS + SENTENCE + "\n", encoding="utf-8")
    (work / "n.txt").write_text(NONMEMBERS + NFD + "\n", encoding="utf-8")
    before = listing(work)
    rc = main(command_line(command, work, work / "m_nfc.txt"))
    line = assert_one_error(rc, capsys.readouterr().err, "text appears in both sets: m_nfc.txt:4 and n.txt:4")
    assert "Unicode normal form" in line
    assert listing(work) == before


def test_nfc_nfd_documents_are_one_line_before_any_model(work, reached, capsys):
    text = (SENTENCE + " ") * 30
    (work / "mbooks" / "cafe.txt").write_text(text, encoding="utf-8")
    (work / "nbooks" / "cafe_copy.txt").write_text(unicodedata.normalize("NFD", text), encoding="utf-8")
    rc = main(["documents", "--members", str(work / "mbooks"), "--nonmembers", str(work / "nbooks"), "--folds", "2",
               "--quiet"])
    assert_one_error(rc, capsys.readouterr().err, "document appears in both sets")
    with pytest.raises(DataError, match="cafe.txt and .*cafe_copy.txt"):
        check_document_overlap(load_documents(work / "mbooks"), load_documents(work / "nbooks"))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
