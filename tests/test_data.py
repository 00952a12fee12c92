"""Tests for mia_core.data (every input format, every bad-input case) and mia_core.documents.books
(loading books, Gutenberg stripping)."""
import io
import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mia_core import data as D
from mia_core.documents import load_documents, strip_gutenberg
from mia_core.errors import DataError, SettingsError

DATA = Path(__file__).parent / "data"
THOREAU = DATA / "pg71_thoreau_civil_disobedience.txt"


def _w(path: Path, content, encoding="utf-8") -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode(encoding))
    return path


# ---------------------------------------------------------------------------------------
# plain text
# ---------------------------------------------------------------------------------------
def test_txt_lines_mode_drops_empty_lines_and_keeps_inner_whitespace(tmp_path):
    m = _w(tmp_path / "members.txt", "first  text\r\n\r\n  second\ttext  \r\nthird\r\n")
    n = _w(tmp_path / "nonmembers.txt", "other one\nother two\n\n\n")
    ds = D.load_dataset(m, n)
    assert ds.members() == ["first  text", "second\ttext", "third"]
    assert ds.nonmembers() == ["other one", "other two"]
    assert ds.labels.tolist() == [1, 1, 1, 0, 0]
    assert ds.ids == ["m0001", "m0002", "m0003", "n0001", "n0002"]
    assert ds.sources == ["members.txt:1", "members.txt:3", "members.txt:4", "nonmembers.txt:1", "nonmembers.txt:2"]
    assert ds.groups is None and len(ds) == 5
    report = " ".join(ds.report)
    assert "members.txt: dropped 1 empty line" in report
    assert "nonmembers.txt: dropped 2 empty lines" in report


def test_txt_auto_picks_paragraphs(tmp_path):
    paras = "Line one of a\nwrapped paragraph.\n\nSecond paragraph\nalso wrapped\nover three lines.\n\nThird.\n"
    p = _w(tmp_path / "m.txt", paras)
    recs = D.read_texts(p)
    assert [r.text for r in recs] == ["Line one of a\nwrapped paragraph.",
                                      "Second paragraph\nalso wrapped\nover three lines.", "Third."]
    assert [r.source for r in recs] == ["m.txt:1", "m.txt:4", "m.txt:8"]
    assert len(D.read_texts(p, mode="lines")) == 6
    assert len(D.read_texts(p, mode="blank")) == 3
    # one text per line with one stray blank line stays in lines mode
    lines = "\n".join(f"sentence number {i}" for i in range(30)) + "\n\n" + "\n".join(f"more {i}" for i in range(30))
    assert len(D.read_texts(_w(tmp_path / "l.txt", lines))) == 60
    with pytest.raises(SettingsError):
        D.read_texts(p, mode="sentences")


def test_real_paragraph_file_from_jsonl(tmp_path):
    paras = [json.loads(x)["text"] for x in (DATA / "paragraphs.jsonl").read_text().splitlines()[:40]]
    m = _w(tmp_path / "members.txt", "\n\n".join(p.replace(". ", ".\n", 1) for p in paras[:20]))
    n = _w(tmp_path / "nonmembers.jsonl", "\n".join(json.dumps({"text": p}) for p in paras[20:]))
    ds = D.load_dataset(m, n)
    assert ds.n_members == 20 and ds.n_nonmembers == 20
    assert ds.nonmembers()[0] == paras[20].strip()


# ---------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------
def test_csv_labelled_with_groups_and_ids(tmp_path):
    p = _w(tmp_path / "data.csv",
           'id,text,label,patient\n'
           'a1,"A note, with a comma",1,p1\n'
           'a2,"multi\nline note",member,p1\n'
           'a3,third note,0,p2\n'
           'a4,fourth note,false,p2\n'
           'a5,fifth note,nonmember,p3\n')
    ds = D.load_dataset(labelled=p, group_column="patient")
    assert ds.texts == ["A note, with a comma", "multi\nline note", "third note", "fourth note", "fifth note"]
    assert ds.labels.tolist() == [1, 1, 0, 0, 0]
    assert ds.ids == ["a1", "a2", "a3", "a4", "a5"]
    assert ds.groups == ["p1", "p1", "p2", "p2", "p3"]
    assert ds.sources[0] == "data.csv:row 2"


def test_csv_text_column_detection_and_override(tmp_path):
    only = _w(tmp_path / "only.csv", "n,passage\n1,hello there\n2,general kenobi\n")
    assert [r.text for r in D.read_texts(only)] == ["hello there", "general kenobi"]
    named = _w(tmp_path / "named.csv", "title,Content\nt1,body one\nt2,body two\n")
    assert [r.text for r in D.read_texts(named)] == ["body one", "body two"]
    assert [r.text for r in D.read_texts(named, text_column="title")] == ["t1", "t2"]
    two = _w(tmp_path / "two.csv", "title,body,score\nt1,b1,3\nt2,b2,4\n")
    with pytest.raises(DataError, match=r"cannot tell which column.*'title', 'body', 'score'"):
        D.read_texts(two)
    with pytest.raises(DataError, match=r"no text column 'txt'; its columns are 'title', 'body', 'score'"):
        D.read_texts(two, text_column="txt")


def test_csv_without_text_column_lists_columns(tmp_path):
    p = _w(tmp_path / "nums.csv", "a,b\n1,2\n3,4\n")
    with pytest.raises(DataError, match=r"'a', 'b'"):
        D.read_texts(p)


def test_tsv(tmp_path):
    p = _w(tmp_path / "d.tsv", "text\tlabel\nx y\t1\nz w\t0\n")
    ds = D.load_dataset(labelled=p)
    assert ds.members() == ["x y"] and ds.nonmembers() == ["z w"]


def test_jsonl_and_json(tmp_path):
    jl = _w(tmp_path / "d.jsonl", '{"input": "one", "label": true}\n\n{"input": "two", "label": false}\n'
                                  '{"input": "three", "label": 1}\n')
    ds = D.load_dataset(labelled=jl)
    assert ds.texts == ["one", "two", "three"] and ds.labels.tolist() == [1, 0, 1]
    assert ds.sources == ["d.jsonl:1", "d.jsonl:3", "d.jsonl:4"]
    js = _w(tmp_path / "d.json", json.dumps([{"sentence": "alpha", "label": "member"},
                                             {"sentence": "beta", "label": "non-member"}]))
    ds = D.load_dataset(labelled=js)
    assert ds.members() == ["alpha"] and ds.nonmembers() == ["beta"]
    assert ds.sources == ["d.json:item 1", "d.json:item 2"]
    bad = _w(tmp_path / "bad.jsonl", '{"text": "ok"}\n{"text": oops}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:2 is not valid JSON"):
        D.read_texts(bad)
    notlist = _w(tmp_path / "n.json", '"just a string"')
    with pytest.raises(DataError, match="list of objects"):
        D.read_texts(notlist)


def test_bad_label_values(tmp_path):
    p = _w(tmp_path / "d.csv", "text,label\na,1\nb,maybe\nc,2\n")
    with pytest.raises(DataError, match=r"1/0, true/false or member/nonmember; found 'maybe' \(d.csv:row 3\), '2'"):
        D.load_dataset(labelled=p)
    nolab = _w(tmp_path / "n.csv", "text,y\na,1\n")
    with pytest.raises(DataError, match="no label column 'label'"):
        D.load_dataset(labelled=nolab)
    txt = _w(tmp_path / "plain.txt", "a\nb\n")
    with pytest.raises(DataError, match="has no labels"):
        D.load_dataset(labelled=txt)


def test_labelled_file_with_only_one_class(tmp_path):
    p = _w(tmp_path / "d.csv", "text,label\na,1\nb,1\n")
    with pytest.raises(DataError, match="no non-members given"):
        D.load_dataset(labelled=p)


def test_missing_group_column(tmp_path):
    p = _w(tmp_path / "d.csv", "text,label\na,1\nb,0\n")
    with pytest.raises(DataError, match="no group column 'patient'"):
        D.load_dataset(labelled=p, group_column="patient")


# ---------------------------------------------------------------------------------------
# zip and folders
# ---------------------------------------------------------------------------------------
def _zip(path: Path, files: dict) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, content in files.items():
            zf.writestr(name, content)
    return path


def test_zip_of_txt_one_text_each(tmp_path):
    m = _zip(tmp_path / "m.zip", {"b.txt": "second doc\nline two", "a.txt": "first doc", "notes.md": "x",
                                  "__MACOSX/._a.txt": "junk"})
    n = _zip(tmp_path / "n.zip", {"dir/c.txt": "third doc".encode("cp1252")})
    ds = D.load_dataset(m, n)
    assert ds.members() == ["first doc", "second doc\nline two"]
    assert ds.sources == ["m.zip:a.txt", "m.zip:b.txt", "n.zip:dir/c.txt"]


def test_zip_without_txt(tmp_path):
    z = _zip(tmp_path / "x.zip", {"a.csv": "text\nhello", "b.pdf": "%PDF"})
    with pytest.raises(DataError, match=r"x.zip holds no .txt file \(it contains a.csv, b.pdf"):
        D.read_texts(z)
    broken = _w(tmp_path / "broken.zip", b"PK\x03\x04 this is not a zip")
    with pytest.raises(DataError, match="not a valid zip"):
        D.read_texts(broken)


def test_zip_bomb_guard(tmp_path):
    z = _zip(tmp_path / "bomb.zip", {"big.txt": "a" * 3_000_000})
    assert z.stat().st_size < 50_000
    with pytest.raises(DataError, match=r"bomb.zip unpacks to 2.9 MiB of text, above the 1.0 MiB limit"):
        D.read_texts(z, max_bytes=2**20)
    with pytest.raises(DataError, match="unpacks to"):
        load_documents(z, max_bytes=2**20)


def test_folder_of_txt(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    _w(d / "one.txt", "doc one")
    _w(d / "two.txt", "doc two")
    _w(d / "skip.csv", "x")
    assert [r.text for r in D.read_texts(d)] == ["doc one", "doc two"]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match="holds no .txt file"):
        D.read_texts(empty)


# ---------------------------------------------------------------------------------------
# bad inputs and encodings
# ---------------------------------------------------------------------------------------
def test_file_not_found(tmp_path):
    with pytest.raises(DataError, match="file not found"):
        D.load_dataset(tmp_path / "nope.txt", tmp_path / "nope2.txt")


def test_empty_and_whitespace_only_files(tmp_path):
    with pytest.raises(DataError, match="empty.txt is empty"):
        D.read_texts(_w(tmp_path / "empty.txt", b""))
    with pytest.raises(DataError, match="no usable text"):
        D.read_texts(_w(tmp_path / "blank.txt", "\n \n\t\n"))
    with pytest.raises(DataError, match="is empty"):
        D.read_texts(_w(tmp_path / "empty.csv", b""))
    with pytest.raises(DataError, match="has no rows"):
        D.read_texts(_w(tmp_path / "header.csv", "text,label\n"))


def test_real_binary_file_refused(tmp_path):
    real = Path(sys.executable).resolve().read_bytes()[:20000]  # an ELF executable
    assert b"\x00" in real
    p = _w(tmp_path / "members.txt", real)
    with pytest.raises(DataError, match="members.txt looks like a binary file"):
        D.read_texts(p)
    # binary without NUL bytes, not valid UTF-8 (mostly control bytes)
    p2 = _w(tmp_path / "noise.txt", bytes(range(1, 32)) * 50 + b"\xff\xfe\xfd")
    with pytest.raises(DataError, match="binary"):
        D.read_texts(p2)
    with pytest.raises(DataError, match="PDF"):
        D.read_texts(_w(tmp_path / "paper.txt", b"%PDF-1.4\n..."))
    with pytest.raises(DataError, match="unsupported format '.pkl'"):
        D.read_texts(_w(tmp_path / "model.pkl", b"\x80\x04K\x01."))


def test_latin1_and_cp1252_fallback_loses_nothing(tmp_path):
    p = _w(tmp_path / "m.txt", "café naïve\nsmart “quotes” and € sign\n", encoding="cp1252")
    notes = []
    recs = D.read_texts(p, notes=notes)
    assert [r.text for r in recs] == ["café naïve", "smart “quotes” and € sign"]
    assert any("not valid UTF-8" in n and "cp1252" in n for n in notes)
    # byte 0x81 is undefined in cp1252: Latin-1 still maps every byte
    p2 = _w(tmp_path / "l.txt", b"caf\xe9 \x81 end\n")
    notes = []
    assert D.read_texts(p2, notes=notes)[0].text == "caf\xe9 \x81 end"
    assert any("Latin-1" in n for n in notes)
    ds = D.load_dataset(p, _w(tmp_path / "n.txt", "plain ascii\n"))
    assert any("cp1252" in n for n in ds.report)


def test_utf16_and_utf8_bom(tmp_path):
    text = "naïve Ünïcode\nsecond line ✓\n"
    p = _w(tmp_path / "u16.txt", text, encoding="utf-16")  # with BOM
    assert p.read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff")
    assert [r.text for r in D.read_texts(p)] == ["naïve Ünïcode", "second line ✓"]
    p2 = _w(tmp_path / "bom.csv", "\ufefftext,label\nhé,1\nho,0\n")
    ds = D.load_dataset(labelled=p2)
    assert ds.texts == ["hé", "ho"]
    p3 = _w(tmp_path / "u16le.txt", "plain text here\nand more\n", encoding="utf-16-le")  # no BOM
    notes = []
    assert [r.text for r in D.read_texts(p3, notes=notes)] == ["plain text here", "and more"]
    assert any("UTF-16-LE" in n for n in notes)


def test_huge_file_refused_with_size(tmp_path):
    p = _w(tmp_path / "big.txt", "x" * 3_000_000)
    with pytest.raises(DataError, match=r"big.txt is 2.9 MiB, above the 1.0 MiB limit"):
        D.load_dataset(p, p, max_bytes=2**20)


def test_uploaded_file_like_object():
    class Upload(io.BytesIO):
        name = "pasted.csv"
    up = Upload(b"text,label\nfrom upload,1\nother,0\n")
    ds = D.load_dataset(labelled=up)
    assert ds.members() == ["from upload"] and ds.sources[0] == "pasted.csv:row 2"


# ---------------------------------------------------------------------------------------
# set-level checks
# ---------------------------------------------------------------------------------------
def test_empty_sets(tmp_path):
    m = _w(tmp_path / "m.txt", "a\n")
    with pytest.raises(DataError, match="no non-members given"):
        D.load_dataset(m, None)
    with pytest.raises(DataError, match="no members given"):
        D.load_dataset(None, m)
    with pytest.raises(DataError, match="no members given"):
        D.texts_from_strings([], ["x"])
    with pytest.raises(DataError, match="no non-members given"):
        D.texts_from_strings(["x"], ["", "  "])
    with pytest.raises(DataError, match="not both"):
        D.load_dataset(m, m, labelled=m)


def test_duplicates_dropped_and_reported(tmp_path):
    m = _w(tmp_path / "members.txt", "alpha\nbeta\nalpha\ngamma\nbeta\n")
    n = _w(tmp_path / "nonmembers.txt", "delta\n")
    ds = D.load_dataset(m, n)
    assert ds.members() == ["alpha", "beta", "gamma"]
    rep = " ".join(ds.report)
    assert "dropped 2 exact duplicates" in rep
    assert "members.txt:3 repeats members.txt:1" in rep and "members.txt:5 repeats members.txt:2" in rep


def test_overlap_between_sets_names_both_lines(tmp_path):
    m = _w(tmp_path / "members.txt", "one\ntwo\nthree\nshared text\n")
    n = _w(tmp_path / "nonmembers.txt", "\n".join(f"other {i}" for i in range(16)) + "\nshared text\n")
    with pytest.raises(DataError) as e:
        D.load_dataset(m, n)
    assert "text appears in both sets: members.txt:4 and nonmembers.txt:17" in str(e.value)
    many_m = _w(tmp_path / "mm.txt", "\n".join(f"t{i}" for i in range(8)))
    many_n = _w(tmp_path / "nn.txt", "\n".join(f"t{i}" for i in range(8)))
    with pytest.raises(DataError, match=r"8 texts appear in both sets: mm.txt:1 and nn.txt:1;.* \.\.\."):
        D.load_dataset(many_m, many_n)
    # the same text labelled both ways in one labelled file
    lab = _w(tmp_path / "d.csv", "text,label\nsame,1\nother,0\nsame,0\n")
    with pytest.raises(DataError, match=r"d.csv:row 2 and d.csv:row 4"):
        D.load_dataset(labelled=lab)


def test_min_chars(tmp_path):
    m = _w(tmp_path / "m.txt", "ok text here\nhi\n")
    n = _w(tmp_path / "n.txt", "another text\n")
    ds = D.load_dataset(m, n, min_chars=5)
    assert ds.members() == ["ok text here"]
    assert any("shorter than 5 characters" in r and "m.txt:2" in r for r in ds.report)


def test_texts_from_strings_and_dataset_ops():
    ds = D.texts_from_strings(["a text", "b text", "a text"], ["c text", "d text"], groups=["g1", "g1", "g1", "g2", "g3"])
    assert ds.members() == ["a text", "b text"]
    assert ds.groups == ["g1", "g1", "g2", "g3"]
    assert ds.ids == ["m0001", "m0002", "n0001", "n0002"]
    sub = ds.subset([1, 3])
    assert sub.texts == ["b text", "d text"] and sub.labels.tolist() == [1, 0] and sub.groups == ["g1", "g3"]
    masked = ds.subset(np.array([True, False, True, False]))
    assert masked.ids == ["m0001", "n0001"]
    pasted = D.texts_from_strings("first pasted\nsecond pasted\n", "third pasted")
    assert pasted.members() == ["first pasted", "second pasted"]
    assert pasted.sources[1] == "members:2"
    with pytest.raises(DataError, match="in both sets: members:1 and non-members:1"):
        D.texts_from_strings(["same"], ["same"])


def test_id_collision_across_sets_falls_back(tmp_path):
    m = _w(tmp_path / "m.csv", "id,text\n1,aaa\n2,bbb\n")
    n = _w(tmp_path / "n.csv", "id,text\n1,ccc\n2,ddd\n")
    ds = D.load_dataset(m, n)
    assert ds.ids == ["m0001", "m0002", "n0001", "n0002"]
    assert any("generated ids" in r for r in ds.report)


def test_read_population_groups_duplicates_and_dataset(tmp_path):
    csv = _w(tmp_path / "pop.csv", "text,patient\nfirst text,7\nsecond text,8\nfirst text,9\n")
    more = _w(tmp_path / "more.csv", "text\nthird text\nsecond text\n")
    notes: list[str] = []
    recs = D.read_population([csv, more], group_column="patient", notes=notes)
    assert [r.text for r in recs] == ["first text", "second text", "third text"]
    assert [r.group for r in recs] == ["7", "8", None]
    assert "population: more.csv has no 'patient' column; its texts have no group." in notes
    assert notes[-1] == "population: dropped 2 exact duplicates."
    with pytest.raises(DataError, match="file not found"):  # other errors still raise after the retry
        D.read_population(tmp_path / "missing.txt", group_column="patient")
    ds = D.read_population(str(csv), dedupe=False, as_dataset=True)
    assert ds.texts == ["first text", "second text", "first text"] and ds.ids == ["p0000", "p0001", "p0002"]
    assert ds.labels.tolist() == [0, 0, 0] and ds.sources[0] == "pop.csv:row 2" and ds.report == []
    with pytest.raises(DataError, match="the training samples hold no usable text"):
        D.read_population([], role="training samples")


# ---------------------------------------------------------------------------------------
# documents and Gutenberg
# ---------------------------------------------------------------------------------------
def test_strip_gutenberg_real_file():
    raw = THOREAU.read_bytes().decode("utf-8")
    body, rep = strip_gutenberg(raw)
    norm = raw.replace("\r\n", "\n")
    start = norm.index("*** START OF THIS PROJECT GUTENBERG EBOOK")
    end = norm.index("*** END OF THIS PROJECT GUTENBERG EBOOK")
    assert rep["stripped"] is True
    assert rep["title"] == "On the Duty of Civil Disobedience"
    assert rep["header_chars"] > start and rep["footer_chars"] > len(norm) - end
    assert rep["header_chars"] + len(body) + rep["footer_chars"] == len(norm)
    assert norm[rep["header_chars"]:rep["header_chars"] + len(body)] == body
    assert body.startswith("Typed by Sameer Parekh.")
    assert "I heartily accept the motto" in body[:600]
    assert body.endswith("but not yet\nanywhere seen.")
    assert "START OF" not in body and "END OF" not in body and "Project Gutenberg" not in body
    assert "\r" not in body


def test_strip_gutenberg_variants():
    text = ("\ufeffTitle: A Tale\n  of Two Lines\nAuthor: Someone\r\n\r\n"
            "***start of the project gutenberg ebook a tale***\r\n\r\nThe body.\r\nMore body.\r\n\r\n"
            "***END OF THE PROJECT GUTENBERG EBOOK A TALE***\r\nlicense text\r\n")
    body, rep = strip_gutenberg(text)
    assert body == "The body.\nMore body."
    assert rep["stripped"] and rep["title"] == "A Tale of Two Lines"
    assert rep["header_chars"] > 0 and rep["footer_chars"] > 0
    plain, rep2 = strip_gutenberg("No markers here.\n")
    assert plain == "No markers here." and rep2["stripped"] is False and rep2["title"] is None


def test_load_documents_file_folder_zip_list(tmp_path):
    docs = load_documents(THOREAU)
    assert len(docs) == 1 and docs[0].name == "pg71_thoreau_civil_disobedience"
    assert docs[0].strip["stripped"] and docs[0].text.startswith("Typed by")
    raw = load_documents(THOREAU, strip=False)[0]
    assert raw.text.startswith("The Project Gutenberg EBook") and not raw.strip["stripped"]
    books = load_documents(DATA / "books")
    assert len(books) == len(list((DATA / "books").glob("*.txt"))) and all(len(b.text) > 1000 for b in books)
    z = _zip(tmp_path / "docs.zip", {"x/one.txt": "*** START OF X ***\nbody one\n*** END OF X ***\n",
                                     "two.txt": "body two"})
    zd = load_documents([z, THOREAU])
    # zip members in path order, then the next input
    assert [d.name for d in zd] == ["two", "one", "pg71_thoreau_civil_disobedience"]
    assert zd[1].text == "body one" and zd[1].source == "docs.zip:x/one.txt" and zd[1].strip["stripped"]
    assert zd[0].text == "body two" and not zd[0].strip["stripped"]
    with pytest.raises(DataError, match="documents must be .txt"):
        load_documents(_w(tmp_path / "d.csv", "text\nx\n"))
    with pytest.raises(DataError, match="file not found"):
        load_documents(tmp_path / "missing.txt")
    with pytest.raises(DataError, match="no text between its Gutenberg"):
        load_documents(_w(tmp_path / "hollow.txt", "*** START OF X ***\n\n*** END OF X ***\n"))
