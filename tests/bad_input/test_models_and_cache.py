"""Bad models, devices, hub ids and cache folders (issue 13, items 4, 5, 8, 10 (int4 label), 11).

Each CLI case asserts exit code 2, exactly one ``error:`` line, no traceback, and that nothing
was written outside the cache. No case loads a real model: the failures happen while the
(tiny, broken) model files are read, or before anything is read at all.
"""
from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import assert_one_error, listing, run_mia

from mia_core.cli import main
from mia_core.errors import ModelError, SettingsError

TEXTS = [f"The quiet harbour town number {i} woke up to the sound of gulls and distant bells." for i in range(12)]


@pytest.fixture
def work(work):
    """conftest.py's inputs and private cache, and members / non-members / population files of ``TEXTS``."""
    tmp_path = work
    (tmp_path / "members.txt").write_text("\n".join(TEXTS[:6]) + "\n", encoding="utf-8")
    (tmp_path / "nonmembers.txt").write_text("\n".join(TEXTS[6:10]) + "\n", encoding="utf-8")
    (tmp_path / "population.txt").write_text("\n".join(TEXTS[10:]) + "\n", encoding="utf-8")
    return tmp_path


@pytest.fixture(scope="module")
def tokenizer_files(tmp_path_factory) -> Path:
    """A tiny BPE tokenizer (with a mask token) saved once; model folders copy its files."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(TEXTS, trainers.BpeTrainer(vocab_size=200, special_tokens=["[PAD]", "[UNK]", "[MASK]",
                                                                                         "[CLS]", "[SEP]"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", mask_token="[MASK]",
                                   cls_token="[CLS]", sep_token="[SEP]", eos_token="[SEP]")
    out = tmp_path_factory.mktemp("tokenizer")
    fast.save_pretrained(str(out))
    return out


def model_folder(root: Path, tokenizer_files: Path, *, kind: str = "llama", weights: str = "corrupt") -> Path:
    """A model folder with a valid config and tokenizer and broken weights.

    ``weights``: ``corrupt`` (garbage ``model.safetensors``), ``truncated`` (a header promising
    more than the file holds), ``code`` (a ``pytorch_model.bin`` whose pickle calls a function),
    ``garbage-bin`` (a ``pytorch_model.bin`` that is no checkpoint).
    """
    import shutil

    from transformers import BertConfig, LlamaConfig

    folder = root / f"{kind}-{weights}"
    folder.mkdir()
    for f in tokenizer_files.iterdir():
        shutil.copy(f, folder / f.name)
    cfg = (LlamaConfig(vocab_size=200, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                       num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64)
           if kind == "llama" else
           BertConfig(vocab_size=200, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, max_position_embeddings=64))
    cfg.save_pretrained(str(folder))
    if weights == "corrupt":
        (folder / "model.safetensors").write_bytes(b"\x00not a safetensors file" * 64)
    elif weights == "truncated":
        (folder / "model.safetensors").write_bytes((10**6).to_bytes(8, "little") + b'{"a": {"dtype": "F32", ')
    elif weights == "code":
        class Payload:  # harmless if it ever ran; torch's weights_only must refuse it anyway
            def __reduce__(self):
                return (os.path.join, ("a", "b"))

        with open(folder / "pytorch_model.bin", "wb") as f:
            pickle.dump({"weight": Payload()}, f, protocol=2)
    elif weights == "garbage-bin":
        (folder / "pytorch_model.bin").write_bytes(b"this is not a checkpoint" * 32)
    return folder


@pytest.fixture
def no_loading(monkeypatch):
    """Fail the test if any model loader gets past its checks."""
    import mia_core.models.causal as causal
    import mia_core.models.gguf as gguf
    import mia_core.models.masked as masked

    def boom(*a, **k):
        raise AssertionError("a model was loaded although the settings were bad")

    monkeypatch.setattr(causal, "_load", boom)
    monkeypatch.setattr(gguf, "_convert_gguf", boom)
    monkeypatch.setattr(masked, "_load", boom)


def run_args(work: Path, model: str, *extra: str) -> list[str]:
    return ["run", "--members", str(work / "members.txt"), "--nonmembers", str(work / "nonmembers.txt"),
            "--model", model, "--attacks", "loss", "--bootstrap", "10", "--out", str(work / "out"), "--quiet", *extra]


def mlm_args(work: Path, model: str, *extra: str) -> list[str]:
    return ["mlm", "--members", str(work / "members.txt"), "--nonmembers", str(work / "nonmembers.txt"),
            "--population", str(work / "population.txt"), "--model", model, "--reference", model,
            "--bootstrap", "10", "--out", str(work / "out"), "--quiet", *extra]


# --------------------------------------------------------------------------- item 4: broken model files

@pytest.mark.parametrize("weights, needle", [
    ("corrupt", "safetensors file is corrupt"),
    ("truncated", "safetensors file is corrupt"),
    ("code", "would run code"),
    ("garbage-bin", "not a checkpoint"),
])
@pytest.mark.parametrize("command", ["run", "mlm"])
def test_broken_model_files_are_one_line_errors(work, tokenizer_files, capsys, command, weights, needle):
    folder = model_folder(work, tokenizer_files, kind="llama" if command == "run" else "bert", weights=weights)
    before = listing(work)
    rc = main((run_args if command == "run" else mlm_args)(work, str(folder)))
    line = assert_one_error(rc, capsys.readouterr().err, needle)
    assert folder.name in line
    assert listing(work) == before  # no --out, nothing else written (the cache is allowed)


def test_code_running_bin_names_the_call_and_safetensors(work, tokenizer_files, capsys):
    folder = model_folder(work, tokenizer_files, weights="code")
    line = assert_one_error(main(run_args(work, str(folder))), capsys.readouterr().err, "refused")
    assert "it calls " in line and "path.join" in line  # the function the pickle would have called
    assert "safetensors" in line


@pytest.mark.slow
def test_broken_embedder_is_one_line_error(work, tokenizer_files):
    from mia_core.models import load_embedder

    folder = model_folder(work, tokenizer_files, kind="bert", weights="corrupt")
    with pytest.raises(ModelError, match="safetensors file is corrupt") as e:
        load_embedder(str(folder), device="cpu")
    assert "\n" not in str(e.value)


def test_load_error_translations():
    from safetensors import SafetensorError

    from mia_core.models import load_error

    refused = pickle.UnpicklingError(
        "Weights only load failed. In PyTorch 2.6, ...\n\n\nTrying to load unsupported GLOBAL posix.system whose "
        "module posix is blocked.\n\nCheck the documentation")
    msg = str(load_error(refused, "evil", what="masked LM"))
    assert "would run code (it calls posix.system)" in msg and "safetensors" in msg and "\n" not in msg
    garbage = pickle.UnpicklingError("Weights only load failed. ...\nUnsupported operand 103\n")
    assert "not a checkpoint" in str(load_error(garbage, "x"))
    assert "corrupt or incomplete" in str(load_error(SafetensorError("Error while deserializing header: x\nmore"), "x"))
    missing = OSError("nobody/x is not a local folder and is not a valid model identifier listed on ...")
    assert "is not on the hub" in str(load_error(missing, "nobody/x", hub=True))


# --------------------------------------------------------------------------- item 4: the device

def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.parametrize("device, needle", [
    ("cuda:99", "device 'cuda:99'"),
    ("mps", "device 'mps'"),
    ("nonsense", "is not a device"),
    ("cpu:1", "device 'cpu:1'"),
])
@pytest.mark.parametrize("command", ["run", "mlm", "make-target"])
def test_missing_device_is_refused_before_loading(work, capsys, no_loading, command, device, needle):
    if device == "mps":
        import torch

        if torch.backends.mps.is_available():
            pytest.skip("this machine has mps")
    before = listing(work)
    if command == "run":
        argv = run_args(work, "smollm2", "--device", device)
    elif command == "mlm":
        argv = mlm_args(work, "bert-base-uncased", "--device", device)
    else:
        argv = ["make-target", "--members", str(work / "members.txt"), "--out", str(work / "out"), "--quiet",
                "--device", device]
    assert_one_error(main(argv), capsys.readouterr().err, needle)
    assert listing(work) == before


@pytest.mark.skipif(_has_cuda(), reason="this machine has CUDA")
def test_cuda_without_cuda_is_refused_before_loading(work, capsys, no_loading):
    rc = main(run_args(work, "smollm2", "--device", "cuda"))
    assert_one_error(rc, capsys.readouterr().err, "no CUDA GPU")


def test_resolve_device():
    from mia_core.models import default_device, resolve_device

    assert resolve_device("auto") == resolve_device(None) == resolve_device("") == default_device()
    assert resolve_device(" CPU ") == "cpu"
    for bad in ("gpu", "cuda:x", "cuda:-1", "tpu"):
        with pytest.raises(SettingsError, match="is not a device"):
            resolve_device(bad)


# --------------------------------------------------------------------------- item 5: unreachable hub

def _closed_port() -> int:
    """A local port nothing listens on (connections are refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_unknown_hub_id_without_network_fails_in_seconds(work):
    """Before: 52-55 s of retries. Now one reachability check, then the error."""
    env = {"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0", "HF_ENDPOINT": f"http://127.0.0.1:{_closed_port()}",
           "HF_HOME": str(work / "hf"), "MIA_CACHE_DIR": str(work / "cache")}
    before = listing(work, skip=("cache", "hf"))
    t0 = time.monotonic()
    p = run_mia(*run_args(work, "nobody-here/no-such-model-xyz"), env_extra=env, timeout=120)
    elapsed = time.monotonic() - t0
    assert_one_error(p.returncode, p.stderr, "not in the local cache and the hub is not reachable")
    # generous (process start-up and imports take 5-15 s on a busy 2-core machine): the point is not
    # retrying for a minute (without the check: 58 s of retries against a closed port, plus start-up)
    assert elapsed < 40, f"took {elapsed:.0f}s"
    assert listing(work, skip=("cache", "hf")) == before


def test_hub_local_only_decisions(monkeypatch):
    from mia_core.models import hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub.hub_local_only("org/x") is True  # offline: never contacts the hub
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    monkeypatch.setattr(hub, "hub_reachable", lambda *a, **k: True)
    assert hub.hub_local_only("org/x") is False  # reachable: may download
    monkeypatch.setattr(hub, "hub_reachable", lambda *a, **k: False)
    monkeypatch.setattr(hub, "in_hub_cache", lambda repo_id: True)
    assert hub.hub_local_only("org/x") is True  # unreachable but cached: the cached copy, at once
    monkeypatch.setattr(hub, "in_hub_cache", lambda repo_id: False)
    with pytest.raises(ModelError, match="not in the local cache and the hub is not reachable"):
        hub.hub_local_only("org/x")


def test_hub_reachable_is_quick_for_a_closed_port():
    from mia_core.models import hub

    t0 = time.monotonic()
    assert hub.hub_reachable(f"http://127.0.0.1:{_closed_port()}", timeout=3) is False
    assert time.monotonic() - t0 < 5


# --------------------------------------------------------------------------- item 8: unusable cache folder

def _unusable_caches(tmp_path: Path) -> list[tuple[str, str]]:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    cases = [(str(a_file), "it is a file"), (str(a_file / "sub"), "cannot create it"),
             ("/proc/mia-no-such-dir", "cannot create it")]
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "read-only"
        ro.mkdir()
        ro.chmod(0o500)
        cases.append((str(ro), "cannot write in it"))
    return cases


@pytest.mark.parametrize("action", ["info", "clear"])
def test_cache_command_with_unusable_cache_dir(tmp_path, monkeypatch, capsys, action):
    for cache_dir, needle in _unusable_caches(tmp_path):
        monkeypatch.setenv("MIA_CACHE_DIR", cache_dir)
        before = listing(tmp_path, skip=())
        line = assert_one_error(main(["cache", action]), capsys.readouterr().err, needle)
        assert f"MIA_CACHE_DIR={cache_dir}" in line
        assert listing(tmp_path, skip=()) == before


def test_run_with_unusable_cache_dir_blames_the_cache_not_the_model(work, monkeypatch, capsys):
    import mia_core.models.causal as causal
    import mia_core.models.gguf as gguf

    def boom(*a, **k):
        raise AssertionError("a model was read although the cache folder was unusable")

    monkeypatch.setattr(gguf, "_convert_gguf", boom)
    monkeypatch.setattr(causal, "_from_pretrained", boom)
    a_file = work / "a-file"
    a_file.write_text("not a folder")
    monkeypatch.setenv("MIA_CACHE_DIR", str(a_file))
    before = listing(work)
    line = assert_one_error(main(run_args(work, "smollm2")), capsys.readouterr().err, "MIA_CACHE_DIR")
    assert "could not load" not in line
    assert listing(work) == before


@pytest.mark.parametrize("command", ["run", "mlm"])
def test_unusable_cache_dir_is_refused_before_a_local_model_loads(work, monkeypatch, capsys, no_loading, command):
    """Not only the embedded model (whose conversion needs the cache): the CLI checks the cache
    folder before any loader runs, whatever the model."""
    a_file = work / "a-file"
    a_file.write_text("not a folder")
    monkeypatch.setenv("MIA_CACHE_DIR", str(a_file))
    before = listing(work)
    args = run_args(work, str(work)) if command == "run" else mlm_args(work, str(work))
    assert_one_error(main(args), capsys.readouterr().err, "MIA_CACHE_DIR")
    assert listing(work) == before


def test_cache_subdir_that_is_a_file(tmp_path, monkeypatch):
    from mia_core.paths import cache_subdir

    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path))
    (tmp_path / "stats").write_text("in the way")
    with pytest.raises(SettingsError, match="it is a file"):
        cache_subdir("stats")


# --------------------------------------------------------------------------- item 11: concurrent conversions

CONVERT = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    import mia_core.models.gguf as conversion

    gguf, barrier = Path(sys.argv[1]), Path(sys.argv[2])

    def fake_convert(src, folder, progress=None):  # stands in for the 20-50 s conversion; slow enough to overlap
        (folder / "config.json").write_text(json.dumps({"writer": str(folder)}))
        barrier.joinpath(folder.name).touch()
        t0 = time.time()
        while len(list(barrier.iterdir())) < 2 and time.time() - t0 < 30:
            time.sleep(0.02)  # both processes are converting at once
        (folder / "model.safetensors").write_bytes(b"w" * 100000)

    conversion._convert_gguf = fake_convert
    out = conversion.converted_gguf_dir(gguf)
    assert (out / "model.safetensors").stat().st_size == 100000
    print(out)
""")


def test_two_processes_converting_the_same_gguf(tmp_path):
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF" + b"\x00" * 1000)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = {**os.environ, "MIA_CACHE_DIR": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, "-c", CONVERT, str(gguf), str(barrier)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    assert len(list(barrier.iterdir())) == 2  # each had its own temporary folder
    published = {out.strip() for out, _ in outs}
    assert len(published) == 1
    models = tmp_path / "cache" / "models"
    folders = [p.name for p in models.iterdir()]
    assert folders == [Path(published.pop()).name], folders  # one complete folder, no temporary left
    done = models / folders[0]
    assert sorted(p.name for p in done.iterdir()) == ["config.json", "mia_converted.json", "model.safetensors"]


def test_publish_dir_replaces_a_stale_folder_and_keeps_a_complete_one(tmp_path):
    from mia_core.models.gguf import CONVERTED_MARKER, publish_dir

    out = tmp_path / "model"
    out.mkdir()
    (out / "half-written").write_text("crashed")  # no marker: a stale leftover
    tmp = tmp_path / "model.tmp-1-a"
    tmp.mkdir()
    (tmp / CONVERTED_MARKER).write_text("{}")
    assert publish_dir(tmp, out) == out
    assert sorted(p.name for p in out.iterdir()) == [CONVERTED_MARKER] and not tmp.exists()
    late = tmp_path / "model.tmp-2-b"
    late.mkdir()
    (late / CONVERTED_MARKER).write_text('{"late": true}')
    assert publish_dir(late, out) == out
    assert (out / CONVERTED_MARKER).read_text() == "{}" and not late.exists()  # the first one stays
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


# --------------------------------------------------------------------------- item 10: the int4 label

def test_int4_is_labelled_with_its_compute_dtype(monkeypatch):
    import mia_core.models.causal as causal

    seen = {}

    def fake_load(ms, dtype, quantize, device, trust_remote_code, progress, record=None):
        seen.update(dtype=dtype, quantize=quantize)
        return causal.LoadedModel(model=None, tokenizer=None, name=ms.display, identity=f"x|{dtype}|{quantize}",
                                  dtype=dtype, quantize=quantize, device=device, max_context=8, load_seconds=0.0,
                                  n_params=0)

    monkeypatch.setattr(causal, "_load", fake_load)
    monkeypatch.setattr(causal, "resolve_spec", lambda spec: causal.ModelSpec("local", "/nowhere", "m"))
    lm = causal.load_causal_lm("m", dtype="fp32", quantize="int4", device="cpu", reuse=False)
    assert (lm.dtype, lm.quantize) == ("bf16", "int4") and seen["dtype"] == "bf16"
    assert causal.load_causal_lm("m", dtype="fp16", quantize="int4", device="cpu", reuse=False).dtype == "fp16"
    assert causal.load_causal_lm("m", dtype="fp32", quantize="none", device="cpu", reuse=False).dtype == "fp32"


def test_a_read_only_cache_is_said_once(tmp_path, monkeypatch, caplog):
    """Every store a run opens meets the read-only cache: the note is logged once per process, not once per store
    (it was printed two or three times in one run)."""
    import logging

    from mia_core.cache import store

    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path / "ro-cache"))
    monkeypatch.setattr(store, "cache_writable", lambda: "a read-only folder")
    monkeypatch.setattr(store, "_LOGGED", set(), raising=False)
    with caplog.at_level(logging.WARNING, logger="mia_core.cache"):
        for namespace in ("stats", "blind", "loads", "stats"):
            store.ArrayCache(namespace, {"model": "m"})
    said = [r.getMessage() for r in caplog.records if "is read-only" in r.getMessage()]
    assert len(said) == 1, said
