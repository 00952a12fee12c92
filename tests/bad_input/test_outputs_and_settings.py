"""Bad outputs and settings (issue 13, items 1, 2, 3, 7, 9, 12): one ``error:`` line, exit 2,
no traceback, refused before any model is loaded, and nothing written outside ``--out``.

Everything here runs in-process (``mia_core.cli.main`` with ``capsys``) with the model loaders
replaced by a function that fails the test: no case may get as far as loading a model.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from helpers import assert_one_error
from mia_core.runs import outputs
from mia_core.cli import main
from mia_core.documents import Document, check_document_overlap
from mia_core.documents.audit import learned_nothing_warning
from mia_core.errors import DataError, SettingsError
from mia_core.runs.outputs import OUTPUT_MARKER, check_output_dir, staged_output, write_marker

MEMBERS = "The first member text of this small set.\nThe second member text, a little longer.\nA third member.\n"
NONMEMBERS = "A non-member sentence that was never trained on.\nAnother unseen non-member text here.\nA third one.\n"


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "m.txt").write_text(MEMBERS)
    (d / "n.txt").write_text(NONMEMBERS)
    (d / "pop.txt").write_text("Population text one.\nPopulation text two.\nPopulation text three.\n")
    books = d / "books"
    for side in ("members", "nonmembers"):
        (books / side).mkdir(parents=True)
    for i in range(3):
        (books / "members" / f"m{i}.txt").write_text(f"Member book {i}. " * 50)
        (books / "nonmembers" / f"n{i}.txt").write_text(f"Non-member book {i}. " * 50)
    return d


def _listing(root: Path) -> set[str]:
    """Every path under ``root`` but the marker every published folder carries (:data:`OUTPUT_MARKER`)."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.name != OUTPUT_MARKER}


def _cmd(command: str, d: Path, out) -> list[str]:
    """A command line for ``command`` that is valid apart from ``--out`` (and whatever the test adds)."""
    if command == "run":
        return ["run", "--members", str(d / "m.txt"), "--nonmembers", str(d / "n.txt"), "--quiet", "--out", str(out)]
    if command == "documents":
        return ["documents", "--members", str(d / "books" / "members"), "--nonmembers", str(d / "books" / "nonmembers"),
                "--folds", "3", "--quiet", "--out", str(out)]
    if command == "mlm":
        return ["mlm", "--members", str(d / "m.txt"), "--nonmembers", str(d / "n.txt"), "--population",
                str(d / "pop.txt"), "--model", "some/mlm", "--reference", "some/ref", "--quiet", "--out", str(out)]
    if command == "shift":
        return ["shift", "--members", str(d / "m.txt"), "--nonmembers", str(d / "n.txt"), "--quiet", "--out", str(out)]
    if command == "make-target":
        return ["make-target", "--members", str(d / "m.txt"), "--quiet", "--out", str(out)]
    raise ValueError(command)


COMMANDS = ("run", "documents", "mlm", "shift", "make-target")


# ----------------------------------------------------------------------------- item 1: --out unwritable
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", ["file", "under_file", "proc"])
def test_unwritable_out_is_refused_before_any_model(command, case, tmp_path, data, no_model, capsys):
    f = tmp_path / "results.txt"
    f.write_text("not a folder")
    out = {"file": f, "under_file": f / "sub", "proc": Path("/proc/mia-x")}[case]
    before = _listing(tmp_path)
    rc = main(_cmd(command, data, out))
    line = assert_one_error(rc, capsys.readouterr().err, "--out")
    assert str(out) in line
    assert _listing(tmp_path) == before
    assert f.read_text() == "not a folder"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in read-only folders")
@pytest.mark.parametrize("command", COMMANDS)
def test_read_only_parent_is_refused(command, tmp_path, data, no_model, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        rc = main(_cmd(command, data, ro / "out"))
        assert_one_error(rc, capsys.readouterr().err, "cannot write")
        assert not (ro / "out").exists()
    finally:
        ro.chmod(0o755)


# ----------------------------------------------------------------------------- item 2: existing results
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("overwrite", [False, True])
def test_a_folder_the_tool_did_not_write_is_refused_and_never_offered_overwrite(command, overwrite, tmp_path, data,
                                                                                no_model, capsys):
    """Issue 27 item 1: before, --overwrite replaced any non-empty folder (the refusal even suggested it)."""
    out = tmp_path / "results"
    out.mkdir()
    (out / "metrics.json").write_text("{\"mine\": 1}")
    rc = main(_cmd(command, data, out) + (["--overwrite"] if overwrite else []))
    line = assert_one_error(rc, capsys.readouterr().err, "not written by this tool")
    assert "or --overwrite" not in line
    assert (out / "metrics.json").read_text() == "{\"mine\": 1}"
    assert _listing(out) == {"metrics.json"}


@pytest.mark.parametrize("command", COMMANDS)
def test_earlier_results_refused_without_overwrite(command, tmp_path, data, no_model, capsys):
    out = tmp_path / "results"
    out.mkdir()
    (out / "metrics.json").write_text("{\"mine\": 1}")
    write_marker(out)
    rc = main(_cmd(command, data, out))
    assert_one_error(rc, capsys.readouterr().err, "--overwrite")
    assert (out / "metrics.json").read_text() == "{\"mine\": 1}"


def test_shift_writes_through_a_staging_folder_and_overwrite_replaces_at_the_end(tmp_path, data, capsys):
    out = tmp_path / "results"
    cmd = _cmd("shift", data, out) + ["--folds", "2", "--bootstrap", "20"]
    assert main(cmd) == 0
    assert _listing(out) == {"shift.json"} and (out / OUTPUT_MARKER).is_file()
    assert json.loads((out / "shift.json").read_text())["blind"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "results"]  # no staging folder left
    capsys.readouterr()
    rc = main(cmd)  # the same --out again: refused, old results kept
    assert_one_error(rc, capsys.readouterr().err, "earlier run")
    (out / "old.txt").write_text("old")
    assert main(cmd + ["--overwrite"]) == 0
    assert _listing(out) == {"shift.json"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "results"]


def test_two_runs_with_the_same_out_keep_both(tmp_path, data, monkeypatch, capsys):
    """The other run publishes its folder while this one computes: this run's results go to a
    named sibling folder and the error line says where; the other run's files are untouched."""
    import mia_core.metrics.blind_baseline as shift_mod

    out = tmp_path / "results"
    real = shift_mod.shift_report

    def other_run_finishes_meanwhile(*a, **k):
        rep = real(*a, **k)
        out.mkdir()
        (out / "shift.json").write_text("{\"other\": true}")
        return rep

    monkeypatch.setattr(shift_mod, "shift_report", other_run_finishes_meanwhile)
    rc = main(_cmd("shift", data, out) + ["--folds", "2", "--bootstrap", "20"])
    line = assert_one_error(rc, capsys.readouterr().err, "another run")
    assert json.loads((out / "shift.json").read_text()) == {"other": True}
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("results.kept-")]
    assert len(kept) == 1 and str(kept[0]) in line
    assert json.loads((kept[0] / "shift.json").read_text())["blind"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["in", "results", kept[0].name])


def test_staged_output_engine(tmp_path):
    out = tmp_path / "a" / "b"  # parents are created at publication
    with staged_output(out) as tmp:
        assert tmp.parent == out.parent and tmp != out
        (tmp / "x.txt").write_text("1")
        assert not out.exists()
    assert (out / "x.txt").read_text() == "1"
    assert sorted(p.name for p in out.parent.iterdir()) == ["b"]
    # an exception leaves nothing behind and the old results alone
    with pytest.raises(KeyboardInterrupt):
        with staged_output(out, overwrite=True) as tmp:
            (tmp / "y.txt").write_text("2")
            raise KeyboardInterrupt
    assert _listing(out) == {"x.txt"} and sorted(p.name for p in out.parent.iterdir()) == ["b"]
    # an empty folder is fine without --overwrite
    empty = tmp_path / "empty"
    empty.mkdir()
    assert check_output_dir(empty) == empty.absolute()
    with staged_output(empty) as tmp:
        (tmp / "z.txt").write_text("3")
    assert _listing(empty) == {"z.txt"}
    assert (empty.stat().st_mode & 0o777) == (0o777 & ~_umask())  # usual permissions, not mkdtemp's 0700
    # --out a link to a folder: the folder it points to gets the results, the link stays
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with staged_output(tmp_path / "link") as tmp:
        (tmp / "w.txt").write_text("4")
    assert (tmp_path / "link").is_symlink() and _listing(real) == {"w.txt"}


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_check_output_dir_messages(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(SettingsError, match="not a folder"):
        check_output_dir(f)
    with pytest.raises(SettingsError, match="not a folder"):
        check_output_dir(f / "sub")
    with pytest.raises(SettingsError, match="cannot write"):
        check_output_dir("/proc/mia-x")
    with pytest.raises(SettingsError, match="empty"):
        check_output_dir("  ")
    assert outputs.check_output_dir(tmp_path / "new" / "deep") == (tmp_path / "new" / "deep").absolute()
    assert not (tmp_path / "new").exists()


# ----------------------------------------------------------------------------- item 3: documents overlap
def test_documents_same_books_on_both_sides(tmp_path, data, no_model, capsys):
    books = data / "books"
    # the same text, with other surrounding whitespace and another name
    (books / "nonmembers" / "copy.txt").write_text("\n\n" + (books / "members" / "m1.txt").read_text() + "\n  ")
    out = tmp_path / "o"
    before = _listing(tmp_path)
    rc = main(_cmd("documents", data, out))
    line = assert_one_error(rc, capsys.readouterr().err, "both sets")
    assert "m1.txt" in line and "copy.txt" in line
    assert _listing(tmp_path) == before


def test_documents_all_books_on_both_sides(data, no_model, capsys):
    side = str(data / "books" / "members")
    rc = main(["documents", "--members", side, "--nonmembers", side, "--quiet"])
    assert_one_error(rc, capsys.readouterr().err, "3 documents appear in both sets")


def test_check_document_overlap_engine():
    a = Document(name="a", text="Same book.", source="a.txt", strip={})
    b = Document(name="b", text="Other book.", source="b.txt", strip={})
    check_document_overlap([a], [b])
    with pytest.raises(DataError, match="a.txt and c.txt"):
        check_document_overlap([a], [b, Document(name="c", text="  Same book.\n", source="c.txt", strip={})])


def test_documents_too_few_for_the_folds_before_loading(data, no_model, capsys):
    rc = main(_cmd("documents", data, data / "o") + ["--folds", "5"])
    assert_one_error(rc, capsys.readouterr().err, "")


# ----------------------------------------------------------------------------- item 7: no attack
@pytest.mark.parametrize("spec", ["", " ", ",", " , ,"])
def test_empty_attack_list(spec, tmp_path, data, no_model, capsys):
    rc = main(_cmd("run", data, tmp_path / "o") + ["--attacks", spec])
    line = assert_one_error(rc, capsys.readouterr().err, "no attack")
    assert "loss" in line and "min_k" in line
    assert not (tmp_path / "o").exists()


def test_parse_attacks_engine():
    from mia_core.pipeline import parse_attacks

    with pytest.raises(SettingsError, match="choose from"):
        parse_attacks([])
    assert parse_attacks(" loss , zlib ") == ["loss", "zlib"]


# ----------------------------------------------------------------------------- item 9: numbers
BAD_NUMBERS = [
    ("run", "--alpha", ["5", "0", "1", "-0.1", "nan", "x"]),
    ("run", "--batch-tokens", ["-5", "1.5"]),  # 0: the device's default (RunOptions, issue 49)
    ("run", "--bootstrap", ["-1"]),
    ("run", "--seed", ["-1"]),
    ("run", "--k", ["0", "1.5"]),
    ("run", "--context", ["1", "-1"]),  # 0: the model's own (RunOptions, issue 49)
    ("run", "--n-neighbours", ["0"]),
    ("run", "--m-words", ["0"]),
    ("run", "--dropout", ["1", "-0.5"]),
    ("run", "--split", ["1", "2", "-0.5"]),  # 0 is no split, as in the API (RunOptions.split)
    ("run", "--split-seed", ["-3"]),
    ("run", "--neighbour-seed", ["-3"]),
    ("run", "--smia-epochs", ["0"]),
    ("documents", "--context", ["1"]),
    ("documents", "--folds", ["1", "0"]),
    ("documents", "--bins", ["0"]),
    ("documents", "--trees", ["0"]),
    ("documents", "--batch-tokens", ["0"]),
    ("documents", "--max-sequences", ["-1"]),
    ("documents", "--n-neighbours", ["-1"]),
    ("mlm", "--masks", ["0"]),
    ("mlm", "--mask-rate", ["0", "1"]),
    ("mlm", "--alpha", ["5"]),
    ("mlm", "--batch-tokens", ["-5"]),
    ("mlm", "--bootstrap", ["-1"]),
    ("shift", "--folds", ["1"]),
    ("shift", "--year-cutoff", ["-1"]),
    ("shift", "--bootstrap", ["-2"]),
    ("make-target", "--epochs", ["0"]),
    ("make-target", "--lr", ["0", "-1", "inf"]),
    ("make-target", "--max-length", ["1"]),
    ("make-target", "--batch-size", ["0"]),
    ("make-target", "--lora-r", ["0"]),
]


@pytest.mark.parametrize("command,flag,values", BAD_NUMBERS, ids=[f"{c}{f}" for c, f, _ in BAD_NUMBERS])
def test_bad_numbers_refused_while_reading_the_arguments(command, flag, values, tmp_path, data, no_model, capsys):
    before = _listing(tmp_path)
    for v in values:
        rc = main(_cmd(command, data, tmp_path / "o") + [flag, v])
        err = capsys.readouterr().err
        line = assert_one_error(rc, err, flag)
        assert v.strip() in line, line
        assert "usage:" not in err
    assert _listing(tmp_path) == before


def test_argparse_errors_are_one_line(capsys):
    for argv in (["run", "--no-such-flag"], ["no-such-command"], ["documents"], ["run", "--dtype", "fp8"],
                 ["cache", "explode"]):
        rc = main(argv)
        err = capsys.readouterr().err
        assert_one_error(rc, err)
        assert "usage:" not in err


def test_subprocess_argparse_error_exit_code(tmp_path):
    """What a shell sees: exit status 2 and one line (the only subprocess of this file)."""
    from helpers import run_mia

    r = run_mia("run", "--batch-tokens", "-5", cwd=tmp_path)
    assert_one_error(r.returncode, r.stderr, "--batch-tokens")
    assert list(tmp_path.iterdir()) == []


def test_good_numbers_still_accepted():
    from mia_core.cli import build_parser

    p = build_parser()
    a = p.parse_args(["run", "--alpha", "0.05", "--batch-tokens", "512", "--k", "1", "--dropout", "0"])
    assert (a.alpha, a.batch_tokens, a.k, a.dropout, a.bootstrap, a.seed, a.overwrite) == (0.05, 512, 1.0, 0.0, 1000, 0, False)
    a = p.parse_args(["documents", "--members", "x", "--nonmembers", "y", "--max-sequences", "0", "--overwrite"])
    assert a.max_sequences == 0 and a.n_neighbours == 0 and a.folds == 5 and a.overwrite
    a = p.parse_args(["make-target", "--members", "x", "--out", "o", "--lr", "1e-4", "--overwrite"])
    assert a.lr == 1e-4 and a.epochs == 3 and a.overwrite


# ----------------------------------------------------------------------------- item 12: learned nothing
def test_meta_classifier_that_learned_nothing_is_named():
    labels = np.array([1] * 6 + [0] * 6)
    split = [(np.r_[2:6, 8:12], np.r_[0:2, 6:8]), (np.r_[0:2, 4:8, 10:12], np.r_[2:4, 8:10]),
             (np.r_[0:4, 6:10], np.r_[4:6, 10:12])]
    oof = {"maxnorm_tf+hist": np.full(12, 0.45), "nonorm+agg": np.linspace(0, 1, 12)}
    w = learned_nothing_warning(oof, split, labels)
    assert "learned nothing for maxnorm_tf+hist:" in w and "0.45" in w and "nonorm+agg" not in w
    assert "6 members and 6 non-members" in w and "not a measurement" in w
    oof["nonorm+agg"] = np.full(12, 0.5)
    assert "every pipeline" in learned_nothing_warning(oof, split, labels)
    assert learned_nothing_warning({"nonorm+agg": np.linspace(0, 1, 12)}, split, labels) is None
