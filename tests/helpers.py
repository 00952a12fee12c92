"""Small helpers shared by several test modules (imported as ``helpers``; pyproject.toml's [tool.pytest.ini_options] puts tests/ on the path)."""
from __future__ import annotations

import os
from pathlib import Path


def shared_neighbours_cache(tmp_path_factory) -> Path:
    """A statistics cache shared by the neighbour test modules of one session.

    The converted embedded model of the real cache is linked in, so it is not converted again.
    """
    return empty_cache(tmp_path_factory.getbasetemp() / "neighbours-cache")


def empty_cache(root: Path) -> Path:
    """A cache folder with nothing cached but the converted models of the real cache (linked in)."""
    from mia_core.paths import cache_root

    real_models = cache_root() / "models"
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "models").exists():
        real_models.mkdir(parents=True, exist_ok=True)
        os.symlink(real_models, root / "models")
    return root


def share_statistics(src: Path, dst: Path) -> int:
    """Copy into the cache folder ``dst`` the token-statistics entries (``stats/``) of the cache folder ``src``
    that ``dst`` lacks, each at its own place and written whole (a temporary file, then one hard link): what a test's
    private cache computed, for the tests that read the shared one (an entry says what it is for and is checked on
    every read, so a copy is used only where it is the entry asked for). Adds files only, never replaces one.
    The number of entries copied."""
    import shutil

    n = 0
    for f in sorted((src / "stats").glob("*/*/*.npz")) + sorted((src / "stats").glob("*/settings.json")):
        if f.name.endswith(".partial.npz") or f.name.startswith("."):
            continue
        to = dst / f.relative_to(src)
        if to.exists():
            continue
        to.parent.mkdir(parents=True, exist_ok=True)
        tmp = to.with_name(f".{to.name}.{os.getpid()}.copy.tmp")
        shutil.copyfile(f, tmp)
        try:
            os.link(tmp, to)  # not os.replace: an entry another process stored meanwhile stays
            n += f.suffix == ".npz"
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    return n


def save_tiny_llama(out: Path, seed: int = 0) -> str:
    """A random 2-layer Llama (hidden 32) with the embedded SmolLM2 tokenizer, saved as a local HF folder (``seed``:
    its weights' torch seed)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from mia_core.models import converted_gguf_dir, embedded_gguf_path

    tok = AutoTokenizer.from_pretrained(str(converted_gguf_dir(embedded_gguf_path())), local_files_only=True)
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256,
                      tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def run_mia(*args, cwd=None, env_extra=None, timeout=600, **kw):
    """``python -m mia_core ARGS`` in a subprocess (what a user runs): the CompletedProcess."""
    import subprocess
    import sys

    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "mia_core", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout, **kw)


def mia(*args, env_extra=None, cwd=None):
    """``mia ARGS`` run in this process (``mia_core.cli.main``), as :func:`run_mia` gives it: a CompletedProcess
    with the exit code and what the command printed on stdout and stderr (neither a terminal, as through a pipe).

    For tests of what a command prints, writes or refuses, where the process boundary itself is not what is
    checked (that stays :func:`run_mia`'s: signals, memory limits, a fresh interpreter's imports and output): it
    saves the interpreter's start and reuses the models this worker already loaded. The environment and the
    working folder are put back afterwards."""
    import contextlib
    import io
    import subprocess

    from mia_core.cli import main

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    saved, here = dict(os.environ), os.getcwd()
    os.environ.update(env_extra or {})
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)
    return subprocess.CompletedProcess(["mia", *argv], rc, out.getvalue(), err.getvalue())


def assert_one_error(rc: int, stderr: str, needle: str = "") -> str:
    """Bad input: exit code 2, exactly one ``error:`` line (containing ``needle``, case-insensitive),
    no traceback. Returns the error line."""
    assert "Traceback" not in stderr, stderr
    lines = [ln for ln in stderr.splitlines() if ln.startswith("error:")]
    assert rc == 2 and len(lines) == 1, f"exit {rc}, error lines {lines}:\n{stderr[-2000:]}"
    assert needle.lower() in lines[0].lower(), lines[0]
    return lines[0]


# ---------------------------------------------------------------------------- bad-input tests (tests/bad_input)
BAD_MEMBERS = "The first member text of this small set.\nThe second member text, a little longer.\nA third member.\n"
BAD_NONMEMBERS = "A non-member sentence that was never trained on.\nAnother unseen non-member text here.\nA third one.\n"
BAD_POPULATION = "Population text one.\nPopulation text two.\nPopulation text three.\n"


class Reached(Exception):
    """Raised where a model would be loaded: the inputs passed every check."""


def stop_model_loads(monkeypatch, stop=None) -> None:
    """Every model load (and the masked-LM audit, and fine-tuning) calls ``stop`` (default: raise ``Reached``)."""
    import mia_core.cli.target as target_cli
    import mia_core.mlm as mlm
    import mia_core.mlm.stages  # noqa: F401 - imported before the patch: it binds load_masked_lm when it is imported
    import mia_core.models as models

    def reach(*a, **k):
        raise Reached()

    stop = stop or reach
    monkeypatch.setattr(models, "load_causal_lm", stop)
    monkeypatch.setattr(models, "load_masked_lm", stop, raising=False)
    monkeypatch.setattr(mlm, "run_mlm_audit", stop)
    monkeypatch.setattr(target_cli, "make_target", stop)


def good_inputs(root: Path, monkeypatch) -> Path:
    """Good inputs in ``root`` (members, non-members, population, two books a side), a private cache in
    ``root/cache``."""
    monkeypatch.setenv("MIA_CACHE_DIR", str(root / "cache"))
    (root / "m.txt").write_text(BAD_MEMBERS)
    (root / "n.txt").write_text(BAD_NONMEMBERS)
    (root / "pop.txt").write_text(BAD_POPULATION)
    for side in ("mbooks", "nbooks"):
        (root / side).mkdir()
        for i in range(2):
            (root / side / f"{side}{i}.txt").write_text(f"Book {i} of {side}. " * 40)
    return root


def command_line(command: str, work: Path, bad: Path) -> list[str]:
    """``command`` with ``bad`` as its members (books for ``documents``), otherwise the valid inputs of
    :func:`good_inputs` in ``work``."""
    out = str(work / "out")
    if command == "run":
        return ["run", "--members", str(bad), "--nonmembers", str(work / "n.txt"), "--quiet", "--out", out]
    if command == "mlm":
        return ["mlm", "--members", str(bad), "--nonmembers", str(work / "n.txt"), "--population",
                str(work / "pop.txt"), "--model", "some/mlm", "--reference", "some/ref", "--quiet", "--out", out]
    if command == "shift":
        return ["shift", "--members", str(bad), "--nonmembers", str(work / "n.txt"), "--folds", "2",
                "--bootstrap", "10", "--quiet", "--out", out]
    if command == "make-target":
        return ["make-target", "--members", str(bad), "--quiet", "--out", out]
    if command == "documents":
        return ["documents", "--members", str(bad), str(work / "mbooks"), "--nonmembers", str(work / "nbooks"),
                "--folds", "2", "--quiet", "--out", out]
    raise ValueError(command)


def listing(root: Path, skip: tuple[str, ...] = ("cache",)) -> set[str]:
    """Every path under ``root`` except those under the ``skip`` folders."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.relative_to(root).parts[0] not in skip}


def _always():
    from mia_core.stats import StatsSettings

    return StatsSettings(prefix="always")


# the BOS/EOS token in front of every text: the context the tests' by-hand computations (and the tiny
# models, trained with it) use
ALWAYS = _always()


def runs_page():
    """The Runs page as a user reaches it (the app, then the page), run once in Streamlit's AppTest."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=120)
    at.switch_page("pages/5_Runs.py")
    return at.run()


def no_exception(at) -> None:
    """No traceback on an AppTest page."""
    assert not at.exception, [e.value for e in at.exception]
