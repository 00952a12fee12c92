"""Bad input, part E: the cases the issue 13 sweep found already handled, kept as CLI tests.

Empty, blank-only and binary files, wrong encodings (UTF-16, Windows-1252: read, with a note),
broken CSV/JSONL, zip-slip archives (read in memory, never extracted), a text in both sets,
unknown attacks, garbage GGUF files, one-token texts, custom code (``trust_remote_code`` off),
nothing unpickled, and SIGINT (exit 130, then a re-run resumes from the cache with the scores
of a clean run).

Each case runs ``mia_core.cli.main`` in-process with the model loaders replaced (``reached``):
a case that must fail fails before any model is loaded; a case that must pass the input checks
gets as far as the loader (``Reached``). Each asserts exit 2, exactly one ``error:`` line, no
traceback, and that nothing was written outside ``--out`` and the cache. Cases already swept
at the CLI elsewhere are not repeated here: ``run`` with an empty, binary or overlapping set
and an unknown hub id (tests/test_engine.py), refused pickles in ``pytorch_model.bin``
(test_models_and_cache.py), /dev/zero and pipes (test_reads_and_quiet.py), document overlap
(test_outputs_and_settings.py).
"""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest
from helpers import (Reached, assert_one_error, command_line, listing,
                     stop_model_loads)

from mia_core.cli import main

@pytest.fixture
def reached(monkeypatch):
    """Every model load (and the masked-LM audit, and fine-tuning) raises ``Reached``."""
    stop_model_loads(monkeypatch)


# ----------------------------------------------------------------------------- files that are refused
def _zip(members: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)
    return buf.getvalue()


BAD_FILES = {  # case: (file name, content)
    "empty": ("empty.txt", b""),
    "blank": ("blank.txt", b"\n   \n\t\n\n"),
    "binary": ("binary.txt", bytes(range(256)) * 20),
    "broken-csv": ("broken.csv", b'text,label\n"a quote never closed,1\nsecond,0\n'),
    "broken-jsonl": ("broken.jsonl", b'{"text": "fine"}\n{"text": not json\n'),
    "zip-no-txt": ("notes.zip", _zip({"readme.md": "no text here"})),
    "overlap": ("overlap.txt", b"Another unseen non-member text here.\nSomething else entirely.\n"),
}
NEEDLES = {
    "empty": "empty.txt is empty",
    "blank": "no usable text",
    "binary": "looks like a binary file",
    "broken-csv": "is not a valid CSV file",
    "broken-jsonl": "broken.jsonl:2 is not valid JSON",
    "zip-no-txt": "holds no .txt file",
    "overlap": "text appears in both sets",
}
DOCUMENT_NEEDLES = {**NEEDLES, "blank": "blank.txt has no text",
                    "broken-csv": "documents must be .txt files", "broken-jsonl": "documents must be .txt files"}
COMMANDS = ["run", "mlm", "shift", "make-target", "documents"]
# already swept through the CLI in tests/test_engine.py (run) or not applicable (one set; books)
ELSEWHERE = {("run", "empty"), ("run", "binary"), ("run", "overlap"), ("make-target", "overlap"),
             ("documents", "overlap")}
SWEEP = [(c, k) for c in COMMANDS for k in BAD_FILES if (c, k) not in ELSEWHERE]


@pytest.mark.parametrize("command, case", SWEEP, ids=[f"{c}-{k}" for c, k in SWEEP])
def test_bad_file_is_one_error_line_before_any_model(command, case, work, reached, capsys):
    name, content = BAD_FILES[case]
    bad = work / name
    bad.write_bytes(content)
    before = listing(work)
    rc = main(command_line(command, work, bad))
    needle = (DOCUMENT_NEEDLES if command == "documents" else NEEDLES)[case]
    assert_one_error(rc, capsys.readouterr().err, needle)
    assert listing(work) == before  # not even --out


# ----------------------------------------------------------------------------- wrong encodings: read, with a note
ENCODED = {
    "utf16-le": ("utf16.txt", "naïve Ünïcode line one\nsecond line ✓\n".encode("utf-16-le"), "UTF-16-LE"),
    "cp1252": ("cp1252.txt", "café “quoted” one\nand € two\n".encode("cp1252"), "Windows-1252"),
}


@pytest.mark.parametrize("case", ENCODED)
def test_shift_reads_other_encodings_with_a_note(case, work, capsys):
    name, content, note = ENCODED[case]
    (work / name).write_bytes(content)
    before = listing(work)
    rc = main(command_line("shift", work, work / name))
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "Traceback" not in err and "error:" not in err
    assert sum(note in ln and ln.startswith("note:") for ln in err.splitlines()) == 1, err
    assert {p for p in listing(work) - before if not p.startswith("out")} == set()


@pytest.mark.parametrize("case", ENCODED)
@pytest.mark.parametrize("command", ["run", "mlm", "make-target", "documents"])
def test_other_encodings_pass_the_input_checks(command, case, work, reached, capsys):
    """Commands that need a model get as far as loading it (decoded without error), no file written."""
    name, content, _ = ENCODED[case]
    (work / name).write_bytes(content)
    before = listing(work)
    with pytest.raises(Reached):
        main(command_line(command, work, work / name))
    assert "error:" not in capsys.readouterr().err
    assert listing(work) == before


# ----------------------------------------------------------------------------- zip-slip: read in memory only
SLIP = _zip({"../../evil.txt": "escaped text one\nescaped text two\n", "/abs/evil2.txt": "absolute path text\n",
             "good.txt": "an ordinary member text\n"})


def _no_escape(work: Path):
    for root in (work, work.parent, work.parent.parent, Path.cwd(), Path("/abs")):
        assert not list(root.glob("evil*.txt")), root
    assert not list(work.rglob("evil*"))


@pytest.mark.parametrize("command", ["run", "mlm", "make-target", "documents"])
def test_zip_slip_members_are_never_extracted(command, work, reached, capsys):
    (work / "slip.zip").write_bytes(SLIP)
    before = listing(work)
    with pytest.raises(Reached):
        main(command_line(command, work, work / "slip.zip"))
    assert "error:" not in capsys.readouterr().err
    assert listing(work) == before
    _no_escape(work)


def test_zip_slip_through_shift(work, capsys):
    (work / "slip.zip").write_bytes(SLIP)
    before = listing(work)
    rc = main(command_line("shift", work, work / "slip.zip"))
    err = capsys.readouterr().err
    assert rc == 0 and "error:" not in err, err
    assert "slip.zip: read 3 texts" in err
    assert {p for p in listing(work) - before if not p.startswith("out")} == set()
    _no_escape(work)


# ----------------------------------------------------------------------------- run: attacks and models
def test_unknown_attack_before_any_model(work, reached, capsys):
    before = listing(work)
    rc = main(command_line("run", work, work / "m.txt") + ["--attacks", "loss,min_k,telepathy"])
    line = assert_one_error(rc, capsys.readouterr().err, "unknown attack")
    assert "telepathy" in line
    assert listing(work) == before


@pytest.mark.parametrize("content", [os.urandom(4096), b"GGUF\x03\x00\x00\x00truncated", b""],
                         ids=["random", "truncated-header", "empty"])
def test_garbage_gguf_model(content, work, capsys):
    (work / "model.gguf").write_bytes(content)
    before = listing(work)
    rc = main(command_line("run", work, work / "m.txt") + ["--model", str(work / "model.gguf"), "--attacks", "loss"])
    assert_one_error(rc, capsys.readouterr().err, "model.gguf")
    assert listing(work) == before  # a failed conversion leaves nothing outside the cache


@pytest.fixture(scope="module")
def smollm2_dir() -> Path:
    """The converted embedded model of the session's cache (module scope: resolved before ``work``
    points MIA_CACHE_DIR at an empty folder, so nothing is converted again)."""
    from mia_core.models import converted_gguf_dir, embedded_gguf_path

    return Path(converted_gguf_dir(embedded_gguf_path()))


def _custom_code_folder(work: Path, src: Path) -> Path:
    """A model folder whose config asks for custom code that would leave a marker if it ran."""
    folder = work / "custom"
    folder.mkdir()
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(src / f, folder / f)
    (folder / "config.json").write_text(json.dumps({
        "model_type": "mia_custom_xyz", "architectures": ["XModel"],
        "auto_map": {"AutoConfig": "configuration_x.XConfig", "AutoModelForCausalLM": "modeling_x.XModel",
                     "AutoModelForMaskedLM": "modeling_x.XModel"}}))
    code = f"open({str(work / 'RAN')!r}, 'w').write('custom code ran')\n"
    (folder / "configuration_x.py").write_text(code)
    (folder / "modeling_x.py").write_text(code)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("command", ["run", "mlm"])
def test_custom_code_is_not_run_without_trust_remote_code(command, smollm2_dir, work, capsys):
    folder = _custom_code_folder(work, smollm2_dir)
    before = listing(work)
    args = command_line(command, work, work / "m.txt")
    if command == "run":
        args += ["--model", str(folder), "--attacks", "loss"]
    else:
        args[args.index("some/mlm")] = args[args.index("some/ref")] = str(folder)
    line = assert_one_error(main(args), capsys.readouterr().err, "trust_remote_code")
    assert "custom code" in line
    assert not (work / "RAN").exists()
    assert listing(work) == before


# ----------------------------------------------------------------------------- nothing is unpickled
class _Payload:
    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_pickle_inputs_are_never_unpickled(work, reached, capsys):
    import pickle

    marker = work / "UNPICKLED"
    for name in ("data.pkl", "data.txt", "data.json"):
        (work / name).write_bytes(pickle.dumps([_Payload(marker)]))
        before = listing(work)
        rc = main(command_line("run", work, work / name))
        assert_one_error(rc, capsys.readouterr().err, name)
        assert not marker.exists() and listing(work) == before


def test_cache_entries_are_never_unpickled(work):
    """A planted cache entry holding a pickled object is treated as corrupt, not loaded (and not deleted:
    the next write of that entry replaces it)."""
    from mia_core.cache import ArrayCache

    marker = work / "UNPICKLED"
    cache = ArrayCache("stats", {"model": "planted"})
    h = "ab" * 16
    path = cache._path(h)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        np.savez(f, logprob=np.array([_Payload(marker)], dtype=object))
    assert cache.get(h) is None
    assert not marker.exists()
    assert cache.rejected and "unreadable" in cache.rejected[0][1]


# ----------------------------------------------------------------------------- one-token texts (a real tiny model)
def test_one_token_texts(work, tiny_llama, capsys):
    """A one-token text has no token 2..n, the tokens the attacks score by default: one error
    line, no results (the same with ``--no-prefix``, and by default: this tokenizer adds nothing in front). With
    ``--prefix always --score-first-token`` the BOS/EOS
    prefix makes its one token scorable (exit 0, finite scores)."""
    (work / "m1.txt").write_text("cat\ndog\nsun\n")
    (work / "n1.txt").write_text("hat\nfog\nrun\n")
    base = ["run", "--members", str(work / "m1.txt"), "--nonmembers", str(work / "n1.txt"), "--model", tiny_llama,
            "--attacks", "loss,zlib", "--bootstrap", "10", "--no-blind", "--no-cache"]
    before = listing(work)
    rc = main(base + ["--no-prefix", "--out", str(work / "out_np")])  # with progress bars: the error has its own line
    assert_one_error(rc, capsys.readouterr().err, "no member could be scored")
    assert listing(work) == before
    rc = main(base + ["--quiet", "--out", str(work / "out_default")])
    assert_one_error(rc, capsys.readouterr().err, "no member could be scored")
    assert listing(work) == before
    rc = main(base + ["--quiet", "--prefix", "always", "--score-first-token", "--out", str(work / "out")])
    err = capsys.readouterr().err
    assert rc == 0 and "error:" not in err and "Traceback" not in err, err
    import pandas as pd

    scores = pd.read_csv(work / "out" / "scores.csv")
    assert len(scores) == 6 and np.isfinite(scores[["loss", "zlib"]].to_numpy()).all()
    assert {p.split(os.sep)[0] for p in listing(work) - before} == {"out"}


# ----------------------------------------------------------------------------- SIGINT, then resume
def _texts(prefix: str, n: int) -> str:
    words = "the quiet river ran past old stone houses under a grey autumn sky".split()
    return "".join(f"{prefix} {i}: " + " ".join(words[(i + k) % len(words)] for k in range(9)) + "\n"
                   for i in range(n))


def _interrupt_run(common, work, env):
    """Start ``mia run`` and send SIGINT once its target pass has scored some windows, but not all.
    Returns the process, its stderr and whether SIGINT reached it while it was still running."""
    # SIGINT back to its default in the child: a test run started in the background of a shell
    # without job control (`nohup ... &`, some CI runners) inherits SIGINT *ignored*, and Python then
    # installs no KeyboardInterrupt handler, so the signal would do nothing
    proc = subprocess.Popen([sys.executable, "-m", "mia_core", "run", *common, "--out", str(work / "out_int")],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    err = bytearray()
    sent = threading.Event()

    def watch():
        while True:
            chunk = proc.stderr.read1(4096)
            if not chunk:
                return
            err.extend(chunk)
            counts = re.findall(rb"(\d+)/(\d+) windows", bytes(err))
            if not sent.is_set() and counts and 8 <= int(counts[-1][0]) < int(counts[-1][1]) and proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                sent.set()

    reader = threading.Thread(target=watch, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(10)
    return proc, err.decode(errors="replace"), sent.is_set()


@pytest.mark.slow
def test_sigint_exits_130_and_a_rerun_resumes_with_identical_scores(work, tiny_llama, capsys):
    (work / "bm.txt").write_text(_texts("member", 100))
    (work / "bn.txt").write_text(_texts("other", 100))
    common = ["--members", str(work / "bm.txt"), "--nonmembers", str(work / "bn.txt"), "--model", tiny_llama,
              "--attacks", "loss,zlib", "--bootstrap", "10", "--no-blind", "--batch-tokens", "16"]
    before = listing(work)
    # every progress message as a line (through a pipe the CLI prints one per 30 s by default)
    env = {**os.environ, "MIA_CACHE_DIR": str(work / "cache"), "MIA_PROGRESS_INTERVAL": "0"}
    # on a loaded machine the reader can fall behind the run's output and signal it only once the
    # target pass is over (or not at all): such an attempt says nothing, and is made again
    for attempt in range(3):
        for leftover in ("cache", "out_int"):  # what an attempt that ran to the end left
            shutil.rmtree(work / leftover, ignore_errors=True)
        proc, stderr, sent = _interrupt_run(common, work, env)
        if sent and len(list((work / "cache").rglob("*.npz"))) < 200:
            break
    assert sent, f"the run ended before it could be interrupted (3 attempts):\n{stderr[-2000:]}"
    assert proc.returncode == 130, stderr[-2000:]
    assert "Traceback" not in stderr and "error:" not in stderr
    lines = [ln.strip() for ln in re.split(r"[\r\n]", stderr) if ln.strip()]
    assert lines[-1] == "interrupted; everything computed so far is cached", lines[-3:]
    assert listing(work) == before  # no --out, no staging folder left behind
    cached = list((work / "cache").rglob("*.npz"))
    assert 0 < len(cached) < 200, len(cached)  # interrupted in the middle, with something cached

    capsys.readouterr()
    assert main(["run", *common, "--quiet", "--out", str(work / "resumed")]) == 0
    assert main(["run", *common, "--quiet", "--no-cache", "--out", str(work / "clean")]) == 0
    import pandas as pd

    resumed = pd.read_csv(work / "resumed" / "scores.csv")
    clean = pd.read_csv(work / "clean" / "scores.csv")
    assert list(resumed["text_hash"]) == list(clean["text_hash"]) and len(clean) == 200
    diff = np.abs(resumed[["loss", "zlib"]].to_numpy() - clean[["loss", "zlib"]].to_numpy()).max()
    assert diff <= 1e-6, diff
