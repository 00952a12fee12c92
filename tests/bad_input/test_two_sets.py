"""Issue 67, items 3 and 4: every audit that takes two sets says, before any model loads, when its two sets are one
(and how many texts a partial overlap shares), refuses empty texts, takes its sets by position through
``mia_core.audits.prepare`` as ``mia_core.audit`` does, and names the line of a stray NUL byte in a text file.
"""
from __future__ import annotations

import pytest

from helpers import assert_one_error, mia
from mia_core.audits import prepare
from mia_core.errors import DataError, SettingsError

MEMBERS = ["The first member text of this small set.", "The second member text, a little longer.",
           "A third member text about rivers."]
NONMEMBERS = ["A non-member sentence that was never trained on.", "Another unseen non-member text here.",
              "A third one, unseen as well."]


def _file(path, texts):
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("command", ["extraction", "run", "mlm", "documents"])
def test_the_same_set_twice_is_refused_in_one_line_before_any_model_loads(command, work, no_model):
    m = _file(work / "same.txt", MEMBERS)
    if command == "documents":
        args = ["documents", "--members", str(work / "mbooks"), "--nonmembers", str(work / "mbooks")]
    elif command == "mlm":
        args = ["mlm", "--members", m, "--nonmembers", m, "--population", str(work / "pop.txt"), "--model", "some/mlm",
                "--reference", "some/ref"]
    else:
        args = [command, "--members", m, "--nonmembers", m]
    p = mia(*args, "--quiet", "--out", str(work / "out"))
    line = assert_one_error(p.returncode, p.stderr, "are the same")
    assert "given twice" in line
    assert not (work / "out").exists()


def test_a_partial_overlap_is_named_with_its_count(work, no_model):
    with pytest.raises(DataError) as e:
        prepare("extraction", members=MEMBERS, nonmembers=NONMEMBERS[:2] + MEMBERS[1:])
    assert "2 texts appear in both sets" in str(e.value) and "member 2 and non-member 3" in str(e.value)
    p = mia("extraction", "--members", _file(work / "a.txt", MEMBERS),
            "--nonmembers", _file(work / "b.txt", NONMEMBERS + MEMBERS[:1]), "--quiet")
    assert_one_error(p.returncode, p.stderr, "text appears in both sets")


def test_empty_texts_are_refused_before_the_model_loads(no_model):
    with pytest.raises(DataError) as e:
        prepare("extraction", members=["", "  "], nonmembers=NONMEMBERS)
    assert "2 of the 2 members are empty" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(DataError, match="1 of the 3 non-members is empty"):
        prepare("extraction", members=MEMBERS, nonmembers=NONMEMBERS[:2] + [""])


def test_prepare_takes_the_sets_by_position_as_audit_does(no_model):
    by_position = prepare("extraction", MEMBERS, NONMEMBERS, prefix_tokens=4)
    by_keyword = prepare("extraction", members=MEMBERS, nonmembers=NONMEMBERS, prefix_tokens=4)
    assert by_position == by_keyword
    with pytest.raises(SettingsError, match="takes 2 set"):
        prepare("extraction", MEMBERS, NONMEMBERS, MEMBERS)
    with pytest.raises(SettingsError, match="given twice"):
        prepare("extraction", MEMBERS, members=MEMBERS)


def test_a_nul_byte_in_a_text_file_names_its_line(work, no_model):
    bad = work / "nul.txt"
    bad.write_bytes(b"first member line\nsecond has a \x00 in it\nthird member line\n")
    p = mia("run", "--members", str(bad), "--nonmembers", str(work / "n.txt"), "--quiet")
    line = assert_one_error(p.returncode, p.stderr, "NUL byte")
    assert "line 2" in line and "binary" not in line
