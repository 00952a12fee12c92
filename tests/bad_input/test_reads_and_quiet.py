"""Bad input, part C: bounded reads, out of memory, and ``--quiet`` (issue 13, items 6 and 10).

* Every input is read under a hard cap whatever ``st_size`` says: ``/dev/zero`` and other
  devices are refused in one line; a pipe or ``<(...)`` that never ends stops at the limit
  (also under a 3 GB address-space limit, in a subprocess, without a ``MemoryError``).
* A ``MemoryError`` while reading is not blamed on ``--batch-tokens``.
* A forward batch that runs out of memory is retried with half the batch tokens (down to one
  window); one window that does not fit is one ``ModelError`` naming ``--context``. Tested by
  injecting the failure into the model call, and once for real: a subprocess under an
  address-space limit (``resource.setrlimit``) whose first batches do not fit.
* ``--quiet``: no transformers loading bar, no library warnings; each input note printed once.

Nothing here loads a model for a case that fails before loading (``no_model`` makes any
load fail the test).
"""
from __future__ import annotations

import dataclasses
import logging
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_one_error, run_mia, save_tiny_llama

from mia_core.cli import main
from mia_core.errors import DataError, ModelError

MEMBERS = "the cat sat on the mat today\nthe dog ran in the park\n\nthe dog ran in the park\n"
NONMEMBERS = "a bird flew over the house\nfish swim in the deep sea\n"


def listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def no_model(monkeypatch):
    """Any model load fails the test: these cases must fail before loading."""
    import mia_core.models as models

    def refuse(*a, **k):
        raise AssertionError("a model was loaded for a case that should fail before loading")

    for name in ("load_causal_lm", "load_masked_lm"):
        if hasattr(models, name):
            monkeypatch.setattr(models, name, refuse)


@pytest.fixture
def texts(tmp_path):
    (tmp_path / "m.txt").write_text(MEMBERS)
    (tmp_path / "n.txt").write_text(NONMEMBERS)
    return tmp_path


class Writer(threading.Thread):
    """Writes ``total`` bytes (or endlessly, until the reader closes) into a FIFO."""

    def __init__(self, fifo: Path, total: int | None = None, data: bytes = b"a text line\n" * 4096):
        super().__init__(daemon=True)
        self.fifo, self.total, self.data = fifo, total, data

    def run(self):
        try:
            with open(self.fifo, "wb") as fh:
                sent = 0
                while self.total is None or sent < self.total:
                    fh.write(self.data)
                    sent += len(self.data)
        except (BrokenPipeError, OSError):
            pass


def make_fifo(tmp_path: Path, name: str = "pipe") -> Path:
    p = tmp_path / name
    os.mkfifo(p)
    return p


# ------------------------------------------------------------------------------ the read API
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_devices_refused_by_every_reader(device):
    from mia_core.data import load_dataset, read_population, read_texts
    from mia_core.documents import load_documents

    for read in (lambda: read_texts(device), lambda: read_population(device), lambda: load_documents(device),
                 lambda: load_dataset(members=device, nonmembers=device)):
        with pytest.raises(DataError, match="character device"):
            read()


def test_fifo_read_is_capped(tmp_path):
    from mia_core.data import read_texts
    from mia_core.documents import load_documents

    for read in (read_texts, load_documents):
        fifo = make_fifo(tmp_path, f"pipe_{read.__name__}")
        w = Writer(fifo, total=1 << 20)  # 1 MiB into a 64 KiB limit
        w.start()
        with pytest.raises(DataError, match="larger than the 64.0 KiB limit"):
            read(fifo, max_bytes=64 << 10)
        w.join(10)
        assert not w.is_alive()


def test_fifo_within_the_limit_is_read(tmp_path):
    from mia_core.data import read_texts

    fifo = make_fifo(tmp_path)
    w = Writer(fifo, total=1, data=b"one\ntwo\n")
    w.start()
    recs = read_texts(fifo)
    w.join(10)
    assert [r.text for r in recs] == ["one", "two"]
    assert recs[0].source == f"{fifo}:1"  # a pipe is named by its full path (/dev/fd/63, not 63)


def test_unbounded_file_like_is_capped():
    """An upload-like stream without getvalue() or size is read under the cap too."""
    from mia_core.data import read_texts

    class Endless:
        name = "stream.txt"

        def read(self, n=-1):
            assert n is not None and n >= 0, "an unbounded read() of the stream"
            return b"x" * n

    with pytest.raises(DataError, match="larger than"):
        read_texts(Endless(), max_bytes=1 << 20)


def test_folder_total_is_capped(tmp_path):
    from mia_core.data import read_texts

    d = tmp_path / "books"
    d.mkdir()
    for i in range(3):
        (d / f"{i}.txt").write_text("word " * 100)
    with pytest.raises(DataError, match="limit"):
        read_texts(d, max_bytes=1000)
    assert len(read_texts(d, max_bytes=2000)) == 3


# ------------------------------------------------------------------------------ the CLI, in-process
@pytest.mark.parametrize("command", ["run", "shift", "mlm", "documents"])
def test_cli_dev_zero_members(command, texts, no_model, capsys):
    before = listing(texts)
    out = texts / "out"
    args = [command, "--members", "/dev/zero", "--nonmembers", str(texts / "n.txt"), "--out", str(out)]
    if command == "mlm":
        args += ["--model", "bert-base-uncased", "--reference", "bert-base-uncased", "--population", str(texts / "n.txt")]
    rc = main(args)
    assert_one_error(rc, capsys.readouterr().err, "/dev/zero is a character device")
    assert listing(texts) == before  # nothing written, not even --out


def test_cli_endless_fifo_nonmembers(texts, no_model, capsys, monkeypatch):
    """A pipe that never ends (``<(yes)``) stops at the size limit (here made small)."""
    import mia_core.data.sets as sets

    real = sets.read_texts

    def small_limit(path, **kw):
        kw["max_bytes"] = 256 << 10
        return real(path, **kw)

    monkeypatch.setattr(sets, "read_texts", small_limit)
    fifo = make_fifo(texts)
    w = Writer(fifo)
    w.start()
    before = listing(texts)
    rc = main(["run", "--members", str(texts / "m.txt"), "--nonmembers", str(fifo), "--out", str(texts / "out")])
    assert_one_error(rc, capsys.readouterr().err, "larger than the 256.0 KiB limit")
    w.join(10)
    assert listing(texts) == before


def test_memory_error_while_reading_is_not_blamed_on_batch_tokens(texts, no_model, capsys, monkeypatch):
    import mia_core.data.sets as sets

    def boom(*a, **k):
        raise MemoryError()

    monkeypatch.setattr(sets, "decode_bytes", boom)
    rc = main(["run", "--members", str(texts / "m.txt"), "--nonmembers", str(texts / "n.txt"),
               "--out", str(texts / "out")])
    line = assert_one_error(rc, capsys.readouterr().err, "out of memory reading the inputs")
    assert "batch-tokens" not in line


# ------------------------------------------------------------------------------ a real memory limit
def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/zero").exists() or sys.platform != "linux", reason="needs Linux /dev/zero")
def test_dev_zero_and_endless_pipe_under_a_memory_limit(texts):
    """The issue's case, as a user runs it: ``run --members /dev/zero`` and ``--members <(yes ...)``
    under a 3 GB address-space limit: one error line, no MemoryError, no traceback, nothing written."""
    before = listing(texts)
    r = run_mia("run", "--members", "/dev/zero", "--nonmembers", "n.txt", "--out", "out", cwd=texts,
                preexec_fn=_limit_memory, timeout=300)
    assert_one_error(r.returncode, r.stderr, "/dev/zero is a character device")
    assert "MemoryError" not in r.stderr and "batch-tokens" not in r.stderr
    cmd = f"{sys.executable} -m mia_core run --members <(yes member text here) --nonmembers n.txt --out out"
    r = subprocess.run(["bash", "-c", cmd], cwd=texts, capture_output=True, text=True, preexec_fn=_limit_memory,
                       timeout=300)
    assert_one_error(r.returncode, r.stderr, "is larger than the 200.0 MiB limit")
    assert "MemoryError" not in r.stderr and "batch-tokens" not in r.stderr
    assert listing(texts) == before


# ------------------------------------------------------------------------------ out of memory in the forward pass
@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    from mia_core.models import load_causal_lm

    return load_causal_lm(save_tiny_llama(tmp_path_factory.mktemp("tiny") / "tiny"), device="cpu")


class FailingModel:
    """The model, but a forward batch of more than ``max_tokens`` tokens raises out-of-memory."""

    def __init__(self, model, max_tokens: int, error):
        self.model, self.max_tokens, self.error, self.calls = model, max_tokens, error, []

    def __call__(self, input_ids, **kw):
        self.calls.append(tuple(input_ids.shape))
        if input_ids.numel() > self.max_tokens:
            raise self.error
        return self.model(input_ids=input_ids, **kw)

    def __getattr__(self, name):
        return getattr(self.model, name)


def _oom_errors():
    import torch

    return [torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
            RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory"),
            MemoryError()]


TEXTS = ["the cat sat on the mat today", "a bird flew over the house and away", "fish swim",
         " ".join(["a long text that needs several windows"] * 12)]


@pytest.mark.parametrize("error_index, texts_at, max_tokens",
                         [(0, slice(0, 3), 20), (1, slice(0, 3), 20), (2, slice(0, 3), 20), (0, slice(3, 4), 40)],
                         ids=["short-cuda", "short-cpu", "short-python", "windows-cuda"])
@pytest.mark.slow
def test_out_of_memory_batches_are_retried_smaller(tiny_lm, error_index, texts_at, max_tokens):
    """Short texts (several per batch) and one long text (several windows per batch)."""
    from mia_core.stats import StatsSettings, compute_stats

    texts = TEXTS[texts_at]
    st = StatsSettings(context=16, batch_tokens=4096)
    want = compute_stats(tiny_lm, texts, st, use_cache=False)
    failing = FailingModel(tiny_lm.model, max_tokens=max_tokens, error=_oom_errors()[error_index])
    lm = dataclasses.replace(tiny_lm, model=failing)
    with pytest.warns(RuntimeWarning, match="out of memory"):
        got = compute_stats(lm, texts, st, use_cache=False)
    assert any(r * n > max_tokens for r, n in failing.calls)  # it did fail, and recovered
    for a, b in zip(want, got):
        for f in ("logprob", "max_logprob", "mu", "sigma", "rank", "top_id"):
            np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=1e-5, atol=1e-6, err_msg=f)


def test_one_window_that_does_not_fit_names_the_settings(tiny_lm):
    from mia_core.stats import StatsSettings, compute_stats

    lm = dataclasses.replace(tiny_lm, model=FailingModel(tiny_lm.model, max_tokens=8, error=_oom_errors()[0]))
    with pytest.warns(RuntimeWarning), pytest.raises(ModelError) as e:
        compute_stats(lm, TEXTS, StatsSettings(context=16, batch_tokens=4096), use_cache=False)
    from mia_core.cli import build_parser, flag_names

    msg = e.value.worded(flag_names(build_parser()))  # the options it names, as the CLI words them
    assert "--context" in msg and "--batch-tokens" in msg and "\n" not in msg
    assert set(e.value.options) == {"context", "batch_tokens"}


def test_other_runtime_errors_are_not_retried(tiny_lm):
    from mia_core.stats import StatsSettings, compute_stats

    lm = dataclasses.replace(tiny_lm, model=FailingModel(tiny_lm.model, max_tokens=0, error=RuntimeError("shape")))
    with pytest.raises(RuntimeError, match="shape"):
        compute_stats(lm, TEXTS[:1], StatsSettings(context=16), use_cache=False)


# ------------------------------------------------------------------------------ --quiet
def test_quiet_output_silences_library_loggers_and_restores_them(capsys):
    from mia_core.cli.quiet import quiet_output

    log = logging.getLogger("bitsandbytes.backends.cpu.ops")
    env = dict(os.environ)
    with quiet_output(True):
        log.warning("Failed to load CPU gemm_4bit_forward from kernels-community")
        logging.getLogger("transformers.modeling_utils").warning("some transformers warning")
        import warnings

        warnings.warn("a library warning")
    assert capsys.readouterr().err == ""
    assert logging.getLogger("bitsandbytes").level == logging.NOTSET
    assert dict(os.environ) == env


@pytest.mark.slow
def test_quiet_run_prints_no_bars_and_each_note_once(tmp_path):
    """A whole ``run --quiet`` on a tiny local model, in a fresh process (transformers is
    first imported inside the quiet block, as for a user)."""
    model = save_tiny_llama(tmp_path / "tiny")
    (tmp_path / "m.txt").write_text(MEMBERS)
    (tmp_path / "n.txt").write_text(NONMEMBERS)
    r = run_mia("run", "--members", "m.txt", "--nonmembers", "n.txt", "--model", model, "--attacks", "loss,zlib",
                "--out", "out", "--quiet", "--no-cache", "--no-blind", "--bootstrap", "10", cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Loading weights" not in r.stderr and "%|" not in r.stderr and "it/s" not in r.stderr, r.stderr
    assert "warn" not in r.stderr.lower(), r.stderr
    both = r.stdout + "\n" + r.stderr
    for note in ("note: m.txt: read 3 texts as one text per line.", "note: n.txt: read 2 texts as one text per line.",
                 "note: m.txt: dropped 1 empty line.", "note: members: dropped 1 exact duplicate"):
        assert both.count(note) == 1, (note, both)


_PROBE = r'''
import json, resource, sys, warnings
import torch
from mia_core.models import load_causal_lm
from mia_core.stats import StatsSettings, compute_stats

torch.set_num_threads(1)  # no new threads (and their stacks) once the limit is set
lm = load_causal_lm(sys.argv[1], device="cpu")
texts = json.loads(sys.argv[2])
vm = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize:"))
limit = vm + 900 * 2**20  # what is mapped now, plus 900 MiB
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    stats = compute_stats(lm, texts, StatsSettings(context=256, batch_tokens=65536), use_cache=False)
print(json.dumps({"retries": [str(w.message) for w in caught if "out of memory" in str(w.message)],
                  "loss": [s.loss for s in stats]}))
'''


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc to size the memory limit")
def test_a_real_out_of_memory_under_a_memory_limit_is_retried_smaller(tiny_lm, tmp_path):
    """Not injected: a subprocess caps its address space at what it has mapped + 900 MiB and asks
    for batches of 65,536 tokens; each long text's windows (about 20 x 256 tokens, about 1 GB of
    logits) do not fit, the allocator really fails, the batch is halved until it fits, and the
    per-token statistics equal an unconstrained pass with small batches."""
    from mia_core.stats import StatsSettings, compute_stats
    import json

    texts = [" ".join(f"word{(i * 37 + k) % 101}" for i in range(1600)) for k in range(2)]
    script = tmp_path / "probe.py"
    script.write_text(_PROBE)
    r = subprocess.run([sys.executable, str(script), tiny_lm.info["location"], json.dumps(texts)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["retries"], "the memory limit did not cause an out-of-memory retry"
    want = [s.loss for s in compute_stats(tiny_lm, texts, StatsSettings(context=256, batch_tokens=512), use_cache=False)]
    assert np.allclose(got["loss"], want, rtol=0, atol=1e-5)
