"""Bad uploads through every page that takes uploads or text, under Streamlit's ``AppTest``.

The same bad inputs as the command-line sweep (issue 13): an empty file, a binary file, a file in
a wrong encoding that still decodes (read, with a note: not an error), broken CSV / JSONL, a zip
with a path-traversal member (zip-slip: read in memory, never extracted), the same text as member
and non-member, an upload over the size limit (the limit lowered for the test), an empty attack
list, a nonsense model. Each case asserts: no exception, an error box naming the problem, and
nothing written to the runs folder, the cache or the test's folders.

No model is ever loaded: the sidebar's target is a hub id that does not exist (refused in well
under a second with ``HF_HUB_OFFLINE=1``) or a missing path, and every check fails before a page
would load one. One ``AppTest`` per page is shared by that page's cases (each case sets every
upload it relies on), which keeps the whole file to a few seconds per page.
"""
from __future__ import annotations

import io
import os
import tempfile
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from helpers import empty_cache  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TIMEOUT = 120
NONSENSE_MODEL = "nonsense-org/no-such-model-mia-test"  # a hub id that exists nowhere
MISSING_MODEL = "/nonexistent/mia-test-model"  # a path that does not exist

# ------------------------------------------------------------------ the bad (and good) files
GOOD_M = "\n".join(f"The member sentence number {i} talks about old ships and long voyages." for i in range(8))
GOOD_N = "\n".join(f"A different non-member line {i} describes rain over quiet northern hills." for i in range(8))
CP1252 = ("Café au lait with a naïve résumé, déjà vu all over again.\n"
          "The façade was painted — twice — by a señor from Zürich.\n"
          "Crème brûlée is served after the main course tonight.\n").encode("cp1252")
BINARY = bytes(range(256)) * 16  # NUL bytes and control characters
BROKEN_CSV = b'text,label\n"an unterminated quoted text,1\nsecond row text here,0\n'
BROKEN_JSONL = b'{"text": "a fine first text here"}\n{"text": "the second one is cut\n'
ZIPSLIP_NAME = "mia_zipslip_escape.txt"


def _zipslip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("../../" + ZIPSLIP_NAME, "A text hidden behind a path that climbs out of the folder.\n"
                                             "Another line of that escaping text, long enough to score.")
        zf.writestr("/tmp/" + ZIPSLIP_NAME, "An absolute member path that must not be written anywhere at all.")
    return buf.getvalue()


def _book(i: int, words: int = 300) -> bytes:
    return (f"Book {i}. " + " ".join(f"word{(i * 7 + j) % 97}" for j in range(words)) + "\n").encode()


def _f(name: str, data: bytes | str) -> tuple[str, bytes, str]:
    return (name, data.encode() if isinstance(data, str) else data, "application/octet-stream")


def _zipslip_escaped() -> list[Path]:
    """Where a zip-slip extraction of ``_zipslip()`` would land, seen from the usual working folders."""
    bases = {Path.cwd(), ROOT, Path(tempfile.gettempdir())}
    out = {Path("/tmp") / ZIPSLIP_NAME}
    for b in bases:
        out |= {b / ZIPSLIP_NAME, b.parent / ZIPSLIP_NAME, b.parent.parent / ZIPSLIP_NAME}
    return [p for p in out if p.exists()]


# ------------------------------------------------------------------ environment
@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A fresh runs folder and statistics cache (the converted models linked in) for this module."""
    mp = pytest.MonkeyPatch()
    runs = tmp_path_factory.mktemp("runs")
    cache = empty_cache(tmp_path_factory.mktemp("cache"))
    mp.setenv("MIA_RUNS_DIR", str(runs))
    mp.setenv("MIA_CACHE_DIR", str(cache))
    mp.setenv("HF_HUB_OFFLINE", "1")
    yield {"runs": runs, "cache": cache}
    mp.undo()


def _listing(*roots: Path) -> set[str]:
    out = set()
    for r in roots:
        for dirpath, dirnames, filenames in os.walk(r):
            if Path(dirpath) == r and "models" in dirnames:
                dirnames.remove("models")  # the linked converted models
            for n in dirnames + filenames:
                out.add(os.path.join(dirpath, n))
    return out


@pytest.fixture
def untouched(env, tmp_path):
    """Asserts after the test that nothing appeared in the runs folder or ``tmp_path``, nothing but
    an empty subfolder in the cache, and that no zip member escaped."""
    before = _listing(env["runs"], tmp_path)
    cache_before = _listing(env["cache"])
    yield
    assert _listing(env["runs"], tmp_path) == before
    new = _listing(env["cache"]) - cache_before
    assert all(os.path.isdir(p) and not os.listdir(p) for p in new), new  # at most an empty cache subfolder
    assert not _zipslip_escaped()


def _make(page: str, model: str | None = NONSENSE_MODEL) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if model is not None:
        at.session_state["mp_target"] = "custom"
        at.session_state["mp_target_custom"] = model
    at.switch_page(page)
    at.run()
    _clean(at)
    return at


def _clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _errors(at: AppTest) -> list[str]:
    return [e.value for e in at.main.error]


def _captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


def _assert_error(at: AppTest, *needles: str) -> str:
    """No exception, and an error box in the page that names the problem (every needle, any case)."""
    _clean(at)
    errs = _errors(at)
    hit = [e for e in errs if all(n.lower() in e.lower() for n in needles)]
    assert hit, f"no error naming {needles}: {errs}"
    assert "Traceback" not in " ".join(errs)
    return hit[0]


def _limit(monkeypatch, nbytes: int = 64) -> None:
    """Lower the readers' size limit (the default is 200 MiB: too big to upload in a test)."""
    import mia_core.data
    from mia_core.data import load_dataset, read_population, read_texts
    from mia_core.documents import load_documents

    for fn in (load_dataset, read_population, read_texts, load_documents):
        monkeypatch.setitem(fn.__kwdefaults__, "max_bytes", nbytes)
    monkeypatch.setattr(mia_core.data, "MAX_BYTES", nbytes)


# ------------------------------------------------------------------ Calibration run
CAL = "pages/2_Calibration_run.py"
CAL_CASES = {  # case: (members, non-members, needles of the error)
    "empty": ([_f("m.txt", b"")], [_f("n.txt", GOOD_N)], ("m.txt", "empty")),
    "blank": ([_f("m.txt", b"  \n\n \t\n")], [_f("n.txt", GOOD_N)], ("m.txt",)),
    "binary": ([_f("m.txt", BINARY)], [_f("n.txt", GOOD_N)], ("m.txt", "binary")),
    "broken_csv": ([_f("m.csv", BROKEN_CSV)], [_f("n.txt", GOOD_N)], ("m.csv", "csv")),
    "broken_jsonl": ([_f("m.txt", GOOD_M)], [_f("n.jsonl", BROKEN_JSONL)], ("n.jsonl",)),
    "pdf": ([_f("m.txt", b"%PDF-1.4 not really")], [_f("n.txt", GOOD_N)], ("m.txt", "pdf")),
    "same_text": ([_f("m.txt", GOOD_M)], [_f("n.txt", GOOD_M)], ("both",)),
    "zip_without_txt": ([_f("m.zip", b"PK\x03\x04 not a zip at all")], [_f("n.txt", GOOD_N)], ("m.zip", "zip")),
}


@pytest.fixture(scope="module")
def cal_app(env):
    at = _make(CAL)
    at.radio(key="cal_source").set_value("upload").run()
    _clean(at)
    assert any("not found locally" in e.value for e in at.sidebar.error)  # the nonsense model, one line
    return at


def _cal_click(at: AppTest, members, nonmembers, attacks=("loss", "zlib")) -> AppTest:
    at.file_uploader(key="cal_members").set_value(members)
    at.file_uploader(key="cal_nonmembers").set_value(nonmembers)
    at.multiselect(key="cal_attacks").set_value(list(attacks))
    return at.button(key="go_cal").click().run()


@pytest.mark.parametrize("case", list(CAL_CASES))
def test_calibration_bad_uploads(cal_app, untouched, case):
    members, nonmembers, needles = CAL_CASES[case]
    _assert_error(_cal_click(cal_app, members, nonmembers), *needles)
    assert not any("running for" in m.value for m in cal_app.markdown)  # no job started


def test_calibration_wrong_encoding_is_read_with_a_note(cal_app, untouched):
    at = _cal_click(cal_app, [_f("m.txt", CP1252)], [_f("n.txt", GOOD_N)])
    assert "Windows-1252" in _captions(at)
    err = _assert_error(at, "no target model loaded")  # the next check: the data itself was fine
    assert "m.txt" not in err


def test_calibration_zipslip_is_read_in_memory(cal_app, untouched):
    at = _cal_click(cal_app, [_f("m.zip", _zipslip())], [_f("n.txt", GOOD_N)])
    _assert_error(at, "no target model loaded")  # the archive's texts were read, nothing extracted


def test_calibration_over_the_size_limit(cal_app, untouched, monkeypatch):
    _limit(monkeypatch)
    _assert_error(_cal_click(cal_app, [_f("m.txt", GOOD_M)], [_f("n.txt", GOOD_N)]), "m.txt", "limit")


def test_calibration_empty_attack_list(cal_app, untouched):
    _assert_error(_cal_click(cal_app, [_f("m.txt", GOOD_M)], [_f("n.txt", GOOD_N)], attacks=()), "attack")


def test_calibration_unknown_attack_is_refused_by_the_page_logic():
    """The page's multiselect offers only known attacks; the check behind it names an unknown one."""
    from dashboard.calibration import build_config
    from mia_core.data import texts_from_strings
    from mia_core.errors import SettingsError

    ds = texts_from_strings(GOOD_M, GOOD_N)
    with pytest.raises(SettingsError, match="unknown attack.*no_such_attack"):
        build_config(["loss", "no_such_attack"], {}, split=None, n_bootstrap=0, seed=0, context=None, blind=False,
                     dataset=ds, reference=None)
    with pytest.raises(SettingsError, match="at least one attack"):
        build_config([], {}, split=None, n_bootstrap=0, seed=0, context=None, blind=False, dataset=ds, reference=None)


def test_calibration_nonsense_model(cal_app, untouched):
    err = _assert_error(_cal_click(cal_app, [_f("m.txt", GOOD_M)], [_f("n.txt", GOOD_N)]), "no target model loaded")
    assert NONSENSE_MODEL in err and "not found" in err


# ------------------------------------------------------------------ Document audit
DOC = "pages/3_Document_audit.py"
BOOKS_M = [_f(f"m{i}.txt", _book(i)) for i in range(2)]
BOOKS_N = [_f(f"n{i}.txt", _book(10 + i)) for i in range(2)]
DOC_CASES = {
    "empty": ([_f("m0.txt", b"")] + BOOKS_M[1:], BOOKS_N, ("m0.txt", "empty")),
    "blank": ([_f("m0.txt", b"\n   \n")] + BOOKS_M[1:], BOOKS_N, ("m0.txt", "no text")),
    "binary": ([_f("m0.txt", BINARY)] + BOOKS_M[1:], BOOKS_N, ("m0.txt", "binary")),
    "csv": ([_f("books.csv", BROKEN_CSV)], BOOKS_N, ("books.csv", ".txt")),
    "jsonl": (BOOKS_M, [_f("books.jsonl", BROKEN_JSONL)], ("books.jsonl", ".txt")),
    "broken_zip": ([_f("m.zip", b"PK\x03\x04 not a zip")], BOOKS_N, ("m.zip", "zip")),
    "same_text": (BOOKS_M, [_f("copy.txt", _book(0))] + BOOKS_N[1:], ("both sets", "copy.txt")),
    "too_few_for_folds": (BOOKS_M[:1], BOOKS_N[:1], ("fold",)),
}


@pytest.fixture(scope="module")
def doc_app(env):
    at = _make(DOC, model=MISSING_MODEL)
    at.radio(key="doc_source").set_value("upload")  # the bundled demo is the default source
    at.number_input(key="doc_folds").set_value(2)
    at.run()
    _clean(at)
    return at


def _doc_click(at: AppTest, members, nonmembers, norms=None) -> AppTest:
    at.file_uploader(key="doc_members_up").set_value(members)
    at.file_uploader(key="doc_nonmembers_up").set_value(nonmembers)
    if norms is not None:
        at.multiselect(key="doc_norms").set_value(norms)
    return at.button(key="go_doc").click().run()


@pytest.mark.parametrize("case", list(DOC_CASES))
def test_document_bad_uploads(doc_app, untouched, case):
    from dashboard.jobs import registry

    members, nonmembers, needles = DOC_CASES[case]
    before = registry().latest("documents")
    at = _doc_click(doc_app, members, nonmembers)
    _assert_error(at, *needles)
    assert registry().latest("documents") is before  # nothing started (a result shown before stays: nothing lost)


def test_document_wrong_encoding_is_read_with_a_note(doc_app, untouched):
    at = _doc_click(doc_app, [_f("m0.txt", CP1252)] + BOOKS_M[1:], BOOKS_N)
    assert "Windows-1252" in _captions(at)
    _assert_error(at, "target model is not loaded")


def test_document_zipslip_is_read_in_memory(doc_app, untouched):
    at = _doc_click(doc_app, [_f("m.zip", _zipslip())], BOOKS_N)
    _assert_error(at, "target model is not loaded")  # two books read from the zip, nothing extracted


def test_document_over_the_size_limit(doc_app, untouched, monkeypatch):
    _limit(monkeypatch)
    _assert_error(_doc_click(doc_app, BOOKS_M, BOOKS_N), "m0.txt", "limit")


def test_document_no_normalisation(doc_app, untouched):
    import mia_core.documents as docs

    _assert_error(_doc_click(doc_app, BOOKS_M, BOOKS_N, norms=[]), "normalisation")
    doc_app.multiselect(key="doc_norms").set_value(list(docs.NORMALIZATIONS))


def test_document_nonsense_model(doc_app, untouched):
    err = _assert_error(_doc_click(doc_app, BOOKS_M, BOOKS_N), "target model is not loaded")
    assert MISSING_MODEL in err


# ------------------------------------------------------------------ Masked-LM audit
MLM = "pages/4_Masked_LM_audit.py"
POP = _f("p.txt", "\n".join(f"Population line {i} about gardens, trains and letters from home." for i in range(8)))
MLM_CASES = {
    "empty": ([_f("m.txt", b"")], [_f("n.txt", GOOD_N)], [POP], ("m.txt", "empty")),
    "binary": ([_f("m.txt", GOOD_M)], [_f("n.txt", BINARY)], [POP], ("n.txt", "binary")),
    "broken_csv": ([_f("m.csv", BROKEN_CSV)], [_f("n.txt", GOOD_N)], [POP], ("m.csv", "csv")),
    "broken_jsonl": ([_f("m.txt", GOOD_M)], [_f("n.txt", GOOD_N)], [_f("p.jsonl", BROKEN_JSONL)], ("p.jsonl",)),
    "same_text": ([_f("m.txt", GOOD_M)], [_f("n.txt", GOOD_M)], [POP], ("both",)),
    "population_overlap": ([_f("m.txt", GOOD_M)], [_f("n.txt", GOOD_N)], [_f("p.txt", GOOD_M)], ("population",)),
    "no_population": ([_f("m.txt", GOOD_M)], [_f("n.txt", GOOD_N)], None, ("population",)),
}


@pytest.fixture(scope="module")
def mlm_app(env):
    at = _make(MLM, model=None)
    at.radio(key="mlm_source").set_value("upload")  # the bundled demo is the default source
    at.text_input(key="mlm_target").input(NONSENSE_MODEL)
    at.text_input(key="mlm_reference").input(MISSING_MODEL)
    at.number_input(key="mlm_bootstrap").set_value(0)
    at.run()
    _clean(at)
    return at


def _mlm_click(at: AppTest, members, nonmembers, population) -> AppTest:
    at.file_uploader(key="mlm_members_up").set_value(members)
    at.file_uploader(key="mlm_nonmembers_up").set_value(nonmembers)
    at.file_uploader(key="mlm_population_up").set_value(population)
    return at.button(key="go_mlm").click().run()


@pytest.mark.parametrize("case", list(MLM_CASES))
def test_mlm_bad_uploads(mlm_app, untouched, case):
    from dashboard.jobs import registry

    members, nonmembers, population, needles = MLM_CASES[case]
    before = registry().latest("mlm")
    at = _mlm_click(mlm_app, members, nonmembers, population)
    _assert_error(at, *needles)
    assert registry().latest("mlm") is before  # nothing started (a result shown before stays: nothing lost)


def test_mlm_wrong_encoding_is_read_with_a_note(mlm_app, untouched):
    at = _mlm_click(mlm_app, [_f("m.txt", CP1252)], [_f("n.txt", GOOD_N)], [POP])
    assert "Windows-1252" in _captions(at)
    err = _assert_error(at, NONSENSE_MODEL)  # the next step: loading the (nonsense) target
    assert "m.txt" not in err


def test_mlm_zipslip_is_read_in_memory(mlm_app, untouched):
    at = _mlm_click(mlm_app, [_f("m.zip", _zipslip())], [_f("n.txt", GOOD_N)], [POP])
    _assert_error(at, NONSENSE_MODEL)


def test_mlm_over_the_size_limit(mlm_app, untouched, monkeypatch):
    _limit(monkeypatch)
    _assert_error(_mlm_click(mlm_app, [_f("m.txt", GOOD_M)], [_f("n.txt", GOOD_N)], [POP]), "m.txt", "limit")


def test_mlm_nonsense_model(mlm_app, untouched):
    err = _assert_error(_mlm_click(mlm_app, [_f("m.txt", GOOD_M)], [_f("n.txt", GOOD_N)], [POP]), NONSENSE_MODEL)
    assert "not found" in err


# ------------------------------------------------------------------ Inspect a text
INSPECT = "pages/1_Inspect_a_text.py"
INSPECT_CASES = {
    "empty": (_f("book.txt", b""), ("book.txt", "empty")),
    "blank": (_f("book.txt", b" \n\n\t \n"), ("empty",)),
    "binary": (_f("book.txt", BINARY), ("book.txt", "binary")),
    "pdf": (_f("book.txt", b"%PDF-1.7 ..."), ("book.txt", "pdf")),
}


@pytest.fixture(scope="module")
def inspect_app(env):
    at = _make(INSPECT)
    assert any("not found locally" in e.value for e in at.sidebar.error)
    at.radio(key="inspect_source").set_value("Upload a .txt file").run()
    _clean(at)
    return at


def _inspect_click(at: AppTest, upload) -> AppTest:
    at.file_uploader(key="inspect_upload").set_value(upload)
    return at.button(key="go_inspect").click().run()


@pytest.mark.parametrize("case", list(INSPECT_CASES))
def test_inspect_bad_uploads(inspect_app, untouched, case):
    upload, needles = INSPECT_CASES[case]
    _assert_error(_inspect_click(inspect_app, upload), *needles)


def test_inspect_wrong_encoding_is_read_with_a_note(inspect_app, untouched):
    at = _inspect_click(inspect_app, _f("book.txt", CP1252))
    assert "Windows-1252" in _captions(at)
    _assert_error(at, "no target model loaded")


def test_inspect_over_the_size_limit(inspect_app, untouched, monkeypatch):
    _limit(monkeypatch)
    _assert_error(_inspect_click(inspect_app, _f("book.txt", GOOD_M)), "book.txt", "limit")


def test_inspect_nonsense_model(inspect_app, untouched):
    err = _assert_error(_inspect_click(inspect_app, _f("book.txt", GOOD_M)), "no target model loaded")
    assert NONSENSE_MODEL in err


# ------------------------------------------------------------------ Controlled experiment
CX = "pages/6_Controlled_experiment.py"
CX_CASES = {
    "empty": ([_f("c.txt", b"")], ("c.txt", "empty")),
    "binary": ([_f("c.txt", BINARY)], ("c.txt", "binary")),
    "broken_csv": ([_f("c.csv", BROKEN_CSV)], ("c.csv", "csv")),
    "broken_jsonl": ([_f("c.jsonl", BROKEN_JSONL)], ("c.jsonl",)),
    "broken_zip": ([_f("c.zip", b"PK\x03\x04 nope")], ("c.zip", "zip")),
    "zipslip_too_small": ([_f("c.zip", _zipslip())], ("corpus has",)),  # read in memory: 3 texts, too few
    "same_text_only": ([_f("c.txt", "\n".join(["One and the same line of text."] * 20))], ("corpus has 1 text",)),
    "no_upload": (None, ("upload a corpus",)),
}


@pytest.fixture(scope="module")
def cx_app(env):
    at = _make(CX, model=None)
    if at.radio(key="cx_source").value != "upload":
        at.radio(key="cx_source").set_value("upload").run()
    at.text_input(key="cx_name").input("bad-input-test")
    at.run()
    _clean(at)
    return at


def _cx_click(at: AppTest, corpus) -> AppTest:
    at.file_uploader(key="cx_upload").set_value(corpus)
    return at.button(key="go_cx").click().run()


def _no_experiment(env) -> None:
    assert not (env["cache"] / "controlled" / "bad-input-test").exists()


@pytest.mark.parametrize("case", list(CX_CASES))
def test_controlled_bad_uploads(cx_app, untouched, env, case):
    from dashboard.jobs import registry

    corpus, needles = CX_CASES[case]
    before = registry().latest("controlled")  # the build is a background job: another test's may be there
    _assert_error(_cx_click(cx_app, corpus), *needles)
    _no_experiment(env)
    assert registry().latest("controlled") is before  # nothing started


def test_controlled_wrong_encoding_is_read_with_a_note(cx_app, untouched, env):
    at = _cx_click(cx_app, [_f("c.txt", CP1252)])  # 3 texts: read fine, too few to split
    assert "Windows-1252" in _captions(at)
    _assert_error(at, "corpus has 3 texts")
    _no_experiment(env)


def test_controlled_over_the_size_limit(cx_app, untouched, env, monkeypatch):
    _limit(monkeypatch)
    _assert_error(_cx_click(cx_app, [_f("c.txt", GOOD_M)]), "c.txt", "limit")
    _no_experiment(env)


def test_controlled_nonsense_base_model(cx_app, untouched, env):
    cx_app.selectbox(key="cx_base").set_value("custom").run()
    cx_app.text_input(key="cx_base_custom").input(MISSING_MODEL)
    at = _cx_click(cx_app, [_f("c.txt", GOOD_M + "\n" + GOOD_N)])
    _assert_error(at, MISSING_MODEL)  # refused before the split files are written
    _no_experiment(env)
    cx_app.selectbox(key="cx_base").set_value("smollm2").run()
