"""Issue 37: reader corners and what the command line prints.

* A path longer than the system allows (``--members``, ``--labelled``, ``--suspect``, ``--validation``,
  ``--population``, ``--param dc_pdd.corpus=``) is one short ``error:`` line naming it (shortened), not a raw
  ``OSError: File name too long`` (or a line of thousands of characters).
* A folder of texts or books holding a symbolic link to a file outside it (``/etc/passwd``, a secret of the
  user's) is refused in one line naming the link, never read as a text or a book; a link inside the folder to a
  file inside it is still read.
* ``--param dc_pdd.corpus=`` an empty folder or a binary file is refused with the parameters, before any model
  loads (the command line, ``mia run`` and the API: it is part of the parameter's domain).
* Terminal escape sequences and other control characters in file and book names never reach the terminal raw
  from ``mia infer-dataset`` (its summary, its ``wrote`` line).
* ``mia infer-dataset`` prints the reader's notes (mixed encodings, duplicates dropped) before any model loads,
  as ``mia run`` does, and keeps them with the result's notes.

Every case that must fail does so before any model loads (``no_model``), except the one books run that prints
per-book results (a tiny random model, about a second).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import Reached, assert_one_error, empty_cache, stop_model_loads

from mia_core.cli import main
from mia_core.errors import DataError

ESC = ("\x1b", "\x07", "\x9b")  # what must never reach the terminal raw


def _texts(which: str, n: int = 12) -> str:
    """``n`` texts of the demo's members (``suspect``) or non-members (``validation``): one distribution, no
    near-duplicates between the two, so the model-free checks pass."""
    from mia_core.targets.demo import demo_paths

    lines = demo_paths()["members" if which == "suspect" else "nonmembers"].read_text().splitlines()
    return "\n".join(lines[:n]) + "\n"


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "s.txt").write_text(_texts("suspect"))
    (tmp_path / "v.txt").write_text(_texts("validation"))
    for side in ("sbooks", "vbooks"):
        (tmp_path / side).mkdir()
        for i in range(5):
            (tmp_path / side / f"{side}{i}.txt").write_text(f"Book {i} of {side} tells a story. " * 60)
    return tmp_path


# ------------------------------------------------------------------------------------ names too long
def _long(root: Path) -> str:
    return str(root / ("n" * 5000 + ".txt"))


@pytest.mark.parametrize("args", [
    ["run", "--members", "{long}", "--nonmembers", "{v}"],
    ["run", "--labelled", "{long}"],
    ["run", "--members", "{s}", "--nonmembers", "{v}", "--population", "{long}"],
    ["shift", "--members", "{s}", "--nonmembers", "{long}"],
    ["infer-dataset", "--suspect", "{long}", "--validation", "{v}"],
    ["infer-dataset", "--suspect", "{s}", "--validation", "{long}"],
    ["infer-dataset", "--suspect", "{s}", "--validation", "{v}", "--population", "{long}"],
    ["infer-dataset", "--books", "--suspect", "{long}", "--validation", "{vbooks}"],
    ["infer-dataset", "--suspect", "{s}", "--validation", "{v}", "--param", "dc_pdd.corpus={long}"],
    ["documents", "--members", "{long}", "--nonmembers", "{vbooks}"],
    ["run", "--members", "{s}", "--nonmembers", "{v}", "--train-members", "{long}", "--train-nonmembers", "{v}"],
    ["make-target", "--members", "{long}", "--population", "{v}", "--out", "{v}.out"],
    ["mlm", "--members", "{s}", "--nonmembers", "{v}", "--train-samples", "{long}"],
], ids=lambda a: " ".join(x for x in a if x.startswith("-") or not x.startswith("{")))
def test_a_name_longer_than_the_system_allows_is_one_short_line(args, data, no_model, capsys):
    given = {"long": _long(data), "s": str(data / "s.txt"), "v": str(data / "v.txt"), "vbooks": str(data / "vbooks")}
    argv = [a.format(**given) for a in args] + ["--quiet"]
    line = assert_one_error(main(argv), capsys.readouterr().err, "too long")
    assert len(line) < 500 and f"{len(given['long']):,} characters" in line, line[:600]



# ------------------------------------------------------------------------------------ links out of a folder
@pytest.fixture
def linked(data):
    """``sbooks`` and a texts folder, each with a link to a file outside (a user's secret) and one inside."""
    secret = data / "secret.txt"
    secret.write_text("my bank password is hunter2 " * 30)
    (data / "sbooks" / "zz-secret.txt").symlink_to(secret)
    (data / "sbooks" / "again.txt").symlink_to(data / "sbooks" / "sbooks0.txt")  # inside: may be read
    texts = data / "texts"
    texts.mkdir()
    for i in range(3):
        (texts / f"t{i}.txt").write_text(f"a text of its own, number {i}")
    (texts / "passwd.txt").symlink_to("/etc/passwd" if os.path.exists("/etc/passwd") else secret)
    return data


def test_a_folder_with_a_link_out_of_it_is_refused_by_the_readers(linked):
    from mia_core.data import read_texts
    from mia_core.documents import load_documents

    with pytest.raises(DataError, match="zz-secret.txt -> .*secret.txt.*not followed"):
        load_documents(linked / "sbooks")
    with pytest.raises(DataError, match="passwd.txt"):
        read_texts(linked / "texts")
    # without the link out, the link inside is read like a file
    (linked / "sbooks" / "zz-secret.txt").unlink()
    docs = load_documents(linked / "sbooks")
    assert sorted(d.name for d in docs) == ["again", *(f"sbooks{i}" for i in range(5))]
    assert not any("hunter2" in d.text for d in docs)


@pytest.mark.parametrize("argv", [
    ["infer-dataset", "--books", "--suspect", "{d}/sbooks", "--validation", "{d}/vbooks"],
    ["documents", "--members", "{d}/sbooks", "--nonmembers", "{d}/vbooks"],
    ["run", "--members", "{d}/texts", "--nonmembers", "{d}/v.txt"],
], ids=lambda a: a[0])
def test_a_folder_with_a_link_out_of_it_is_one_line_before_any_model(argv, linked, no_model, capsys):
    line = assert_one_error(main([a.format(d=linked) for a in argv] + ["--quiet"]), capsys.readouterr().err,
                            "symbolic link")
    assert "outside" in line and "hunter2" not in line


# ------------------------------------------------------------------------------------ DC-PDD's corpus
@pytest.fixture
def corpora(data):
    (data / "empty").mkdir()
    (data / "binary.txt").write_bytes(bytes(range(256)) * 20)
    (data / "binaries").mkdir()
    (data / "binaries" / "a.txt").write_bytes(b"\x00\x01\x02\x03" * 500)
    return data


@pytest.mark.parametrize("corpus, needle", [("empty", "no .txt file"), ("binary.txt", "binary"),
                                            ("binaries", "binary")])
def test_a_corpus_that_holds_no_text_is_refused_before_any_model(corpus, needle, corpora, no_model, capsys):
    c = corpora / corpus
    line = assert_one_error(main(["infer-dataset", "--suspect", str(corpora / "s.txt"), "--validation",
                                  str(corpora / "v.txt"), "--param", f"dc_pdd.corpus={c}", "--quiet"]),
                            capsys.readouterr().err, "dc_pdd.corpus")
    assert needle in line
    line = assert_one_error(main(["run", "--members", str(corpora / "s.txt"), "--nonmembers", str(corpora / "v.txt"),
                                  "--attacks", "dc_pdd", "--param", f"dc_pdd.corpus={c}", "--quiet",
                                  "--out", str(corpora / "out")]), capsys.readouterr().err, "dc_pdd.corpus")
    assert needle in line
    import mia_core

    s, v = _texts("suspect").splitlines(), _texts("validation").splitlines()
    with pytest.raises(DataError, match=f"dc_pdd.corpus.*{needle}"):
        mia_core.infer_dataset(s, v, "some/model", params={"dc_pdd": {"corpus": str(c)}})
    with pytest.raises(DataError, match=f"dc_pdd.corpus.*{needle}"):
        mia_core.audit(s, v, "some/model", attacks=["dc_pdd"], params={"dc_pdd": {"corpus": str(c)}})


def test_a_corpus_with_text_still_passes_the_checks(corpora, monkeypatch, capsys):
    """A folder of text passes the parameter check (and gets as far as the model)."""
    stop_model_loads(monkeypatch)
    good = corpora / "good"
    good.mkdir()
    (good / "a.txt").write_text("Some words of the domain, counted for their frequencies.\n" * 20)
    with pytest.raises(Reached):
        main(["run", "--members", str(corpora / "s.txt"), "--nonmembers", str(corpora / "v.txt"),
              "--attacks", "dc_pdd", "--param", f"dc_pdd.corpus={good}", "--quiet", "--out", str(corpora / "out")])


# ------------------------------------------------------------------------------------ what infer-dataset prints
SHIFTED_OLD = [f"The carriage drew up before the inn at dusk on the {i}th evening, and the coachman called for ale."
               for i in range(30)]
SHIFTED_NEW = [f"In 2024 the startup shipped update {i} of its app to the cloud, and users posted reviews online."
               for i in range(30)]


def test_infer_dataset_prints_no_control_character_and_its_reader_notes(tmp_path, monkeypatch, capsys):
    """A shifted validation set is refused without any model (the IID guard), so this runs in a second: the
    suspect file (named with escape sequences) mixes encodings and repeats a text; the output folder's name
    has escape sequences too. The reader's notes are printed (escaped), once, and kept in the saved notes; no
    control character reaches the terminal."""
    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path / "cache"))
    suspect = tmp_path / "suspect\x1b[31m\x1b]0;pwned\x07.txt"
    lines = [t.encode() for t in SHIFTED_NEW] + [SHIFTED_NEW[0].encode(), "Café in Zürich, déjà vu.".encode("cp1252")]
    suspect.write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "v.txt").write_text("\n".join(SHIFTED_OLD) + "\n")
    out = tmp_path / "out\x1b[2J\x9b1m"
    rc = main(["infer-dataset", "--suspect", str(suspect), "--validation", str(tmp_path / "v.txt"),
               "--model", str(tmp_path / "no-such-model"), "--out", str(out), "--quiet"])
    got = capsys.readouterr()
    assert rc == 0, got.err[-2000:]
    assert not any(c in got.out + got.err for c in ESC), repr(got.out + got.err)
    assert "VERDICT [refused]" in got.out and "wrote " in got.out and "out\\x1b[2J\\x9b1m" in got.out
    notes = [ln for ln in got.err.splitlines() if ln.startswith("note:")]
    mixed = [n for n in notes if "mixes encodings" in n or "not valid UTF-8" in n]
    assert len(mixed) == 1 and "suspect\\x1b[31m\\x1b]0;pwned\\x07.txt" in mixed[0], notes
    assert any("duplicate" in n for n in notes), notes
    assert "mixes encodings" not in got.out and "not valid UTF-8" not in got.out  # printed once, on stderr
    saved = json.loads((out / "dataset_inference.json").read_text())
    assert any("mixes encodings" in n or "not valid UTF-8" in n for n in saved["notes"])


def test_infer_dataset_prints_its_reader_notes_before_the_model_loads(data, monkeypatch, capsys):
    stop_model_loads(monkeypatch)
    mixed = data / "mixed.txt"
    mixed.write_bytes(_texts("suspect").encode() + "naïve café\n".encode() + "naïve café II\n".encode("cp1252"))
    with pytest.raises(Reached):
        main(["infer-dataset", "--suspect", str(mixed), "--validation", str(data / "v.txt"), "--quiet"])
    err = capsys.readouterr().err
    assert "note: mixed.txt: mixes encodings" in err, err


@pytest.mark.slow
def test_book_names_with_escape_sequences_are_printed_escaped(data, tmp_path, capsys, tiny_llama):
    """The per-book lines of a books run (a tiny random model: the names reach the summary only after scoring;
    no negative control, which would score every passage with the embedded model too)."""
    os.environ["MIA_CACHE_DIR"] = str(empty_cache(tmp_path / "cache2"))
    model = tiny_llama
    from mia_core.documents import demo_documents

    _, non = demo_documents()
    for i, d in enumerate(non[:10]):
        side = data / ("s-esc" if i % 2 == 0 else "v-esc")
        side.mkdir(exist_ok=True)
        (side / f"book\x1b[31m{i}\x1b]0;title\x07.txt").write_text(d.text)
    rc = main(["infer-dataset", "--books", "--suspect", str(data / "s-esc"), "--validation", str(data / "v-esc"),
               "--model", model, "--quiet", "--passage-words", "64", "--max-passages", "3", "--permutations", "99",
               "--features", "loss", "--folds", "2", "--device", "cpu", "--no-cache", "--control", "none"])
    got = capsys.readouterr()
    assert rc == 0, got.err[-2000:]
    assert not any(c in got.out + got.err for c in ESC), repr(got.out)
    assert "book\\x1b[31m0\\x1b]0;title\\x07" in got.out, got.out
