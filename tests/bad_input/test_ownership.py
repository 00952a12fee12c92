"""Issue 27, items 1, 3 and 7 (read-only cache): the tool deletes only what it wrote and can recognise
as its own, and allocates a model only when its files and the machine can hold it.

Before: ``mia cache clear`` removed every subfolder of the cache folder but ``models/`` without asking
(saved runs, and another tool's folders when ``MIA_CACHE_DIR`` was shared); ``--out . --overwrite``
wiped the working folder; a symlinked ``--out`` replaced the folder it points to; ``--out /etc`` was
refused with "or --overwrite to replace it"; an ``--out`` name of 230-255 characters failed after the
whole run; a config declaring absurdly many layers was allocated until memory ran out; a read-only,
filled cache could not be used even with ``--no-cache`` or for ``cache info``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_one_error

from mia_core import paths
from mia_core.cache import ArrayCache, text_hash
from mia_core.cli import main
from mia_core.runs.outputs import OUTPUT_MARKER, check_output_dir, staged_output, write_marker


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): (p.read_bytes().decode("latin-1") if p.is_file() else "/") for p in sorted(root.rglob("*"))}


@pytest.fixture
def shared_cache(tmp_path, monkeypatch):
    """A cache folder shared with other tools (MIA_CACHE_DIR=~/.cache, say): their folders, a user's notes,
    a saved run, a converted model copy, cached statistics, and a user's file dropped into a settings folder."""
    root = tmp_path / "shared"
    monkeypatch.setenv("MIA_CACHE_DIR", str(root))
    monkeypatch.delenv("MIA_RUNS_DIR", raising=False)
    for d, f in [("huggingface/hub", "ref.txt"), ("pip", "wheel.txt"), ("notes", "todo.txt")]:
        (root / d).mkdir(parents=True)
        (root / d / f).write_text(f"someone else's {f}")
    c = ArrayCache("stats", {"model": "x", "v": 1})
    for t in ("one", "two", "three"):
        c.put(text_hash(t), {"logprob": np.zeros(4, dtype=np.float32)})
    (c.dir / "my-notes.txt").write_text("a user's file inside a settings folder")
    run = root / "runs" / "20260101-000000-abcdef"
    run.mkdir(parents=True)
    (run / "meta.json").write_text(json.dumps({"name": "my saved run"}))
    from mia_core.audits import AUDITS
    from mia_core.runs.folder import write_run_marker

    write_run_marker(run, "run", run.name)  # what the store writes into its runs (issue 67)

    for a in AUDITS.values():  # the other audits' runs (issue 49: one store), each in its store's folder
        if a.store() is not None:
            other = a.store().folder(root / "runs") / "20260102-000000-abcdef"
            other.mkdir()
            (other / "meta.json").write_text(json.dumps({"name": f"a saved {a.name} run"}))
            write_run_marker(other, a.store().kind, other.name)
    model = root / "models" / "smollm2-0123"
    model.mkdir(parents=True)
    (model / "mia_converted.json").write_text("{}")
    (model / "model.safetensors").write_text("weights")
    (root / "models" / "someone-elses-model").mkdir()
    return root


def test_cache_clear_lists_first_and_asks(shared_cache, capsys):
    before = _tree(shared_cache)
    rc = main(["cache", "clear"])  # pytest's stdin is no terminal: nothing is removed without --yes
    out, err = capsys.readouterr()
    assert_one_error(rc, err, "--yes")
    from mia_core.audits import AUDITS

    # one run of each registered audit's kind
    assert "will remove: stats (3 files" in out and f"kept: {len(AUDITS)} saved runs " in out and "kept: 1 converted" in out
    assert "huggingface/" in out and "notes/" in out and "my-notes.txt" in out
    assert _tree(shared_cache) == before
    assert main(["cache", "clear", "--dry-run"]) == 0
    assert _tree(shared_cache) == before


def test_cache_clear_removes_only_its_own_files(shared_cache, capsys):
    root = shared_cache
    notes = root / "runs" / "_notes" / "20260102-000000-abcdef"  # named like a store's, without its marker
    notes.mkdir(parents=True)
    (notes / "meta.json").write_text("{}")
    lookalike = root / "runs" / "_documents" / "20260103-000000-abcdef"  # a run's name, no meta.json: not the store's
    lookalike.mkdir()
    (lookalike / "notes.txt").write_text("a user's notes")
    before = _tree(shared_cache)
    assert main(["cache", "clear", "--yes"]) == 0
    after = _tree(shared_cache)
    gone = set(before) - set(after)
    assert gone and all(p.startswith("stats/") for p in gone), gone
    assert not any(p.endswith(".npz") for p in after)
    for p in ("huggingface/hub/ref.txt", "pip/wheel.txt", "notes/todo.txt", "runs/20260101-000000-abcdef/meta.json",
              "runs/_masked_lm/20260102-000000-abcdef/meta.json", "models/smollm2-0123/model.safetensors",
              "models/someone-elses-model"):
        assert after[p] == before[p]
    kept = [p for p in after if p.endswith("my-notes.txt")]
    assert len(kept) == 1 and after[kept[0]] == "a user's file inside a settings folder"
    # asked for: saved runs and converted models go too; the others' folders still stay
    capsys.readouterr()
    assert main(["cache", "clear", "--yes", "--runs", "--models"]) == 0
    after = _tree(shared_cache)
    assert not any(p.startswith("runs/2026") for p in after) and "models/smollm2-0123" not in after
    assert not any("20260102" in p and "_notes" not in p for p in after), [p for p in after if p.startswith("runs/")]
    assert after["runs/_documents/20260103-000000-abcdef/notes.txt"] == "a user's notes"  # never the look-alike
    assert "runs/_notes/20260102-000000-abcdef/meta.json" in after  # nor a folder no store marked
    assert "models/someone-elses-model" in after and after["notes/todo.txt"] == "someone else's todo.txt"


def test_cache_clear_refuses_a_folder_that_is_not_its_cache(tmp_path, monkeypatch, capsys):
    other = tmp_path / "project"
    (other / "src").mkdir(parents=True)
    (other / "src" / "main.py").write_text("print('mine')")
    monkeypatch.setenv("MIA_CACHE_DIR", str(other))
    before = _tree(other)
    assert_one_error(main(["cache", "clear", "--yes"]), capsys.readouterr().err, "does not look like")
    assert _tree(other) == before


def test_cache_clear_never_follows_links(shared_cache, tmp_path, capsys):
    precious = tmp_path / "precious"
    (precious / "ab").mkdir(parents=True)
    (precious / "ab" / ("ab" + "0" * 30 + ".npz")).write_text("looks like an entry, is not ours")
    (precious / "settings.json").write_text("{}")
    (shared_cache / "stats" / ("f" * 20)).symlink_to(precious)  # a settings-key name, but a link
    assert main(["cache", "clear", "--yes", "--runs", "--models"]) == 0
    assert (precious / "ab" / ("ab" + "0" * 30 + ".npz")).read_text() == "looks like an entry, is not ours"


# --------------------------------------------------------------------------- a read-only, filled cache

@pytest.fixture
def read_only(monkeypatch):
    """The cache folder refuses new files (a read-only mount; root ignores permission bits, so the
    write probe is made to fail the way a read-only file system makes it fail)."""
    def refuse(root):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(paths, "_probe_write", refuse)
    monkeypatch.setattr(paths, "_CHECKED", set())


def test_read_only_cache_is_read_not_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path / "c"))
    c = ArrayCache("stats", {"m": 1})
    c.put(text_hash("a"), {"x": np.arange(3)})
    monkeypatch.setattr(paths, "_probe_write", lambda root: (_ for _ in ()).throw(OSError(30, "Read-only file system")))
    monkeypatch.setattr(paths, "_CHECKED", set())
    assert main(["cache", "info"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["namespaces"]["stats"]["files"] >= 2 and "Read-only" in info["read_only"]
    ro = ArrayCache("stats", {"m": 1})
    assert ro.read_only and ro.get(text_hash("a"))["x"].tolist() == [0, 1, 2]
    before = _tree(tmp_path)
    ro.put(text_hash("b"), {"x": np.arange(2)})  # not stored, no error
    assert _tree(tmp_path) == before
    assert_one_error(main(["cache", "clear", "--yes"]), capsys.readouterr().err, "cannot write")
    assert _tree(tmp_path) == before


def test_runs_on_a_read_only_cache_with_and_without_no_cache(tmp_path, monkeypatch, capsys, read_only):
    """The embedded model's converted copy is in the (read-only) cache: a run reads it, scores, stores nothing
    new and says so; with --no-cache too. Before, both stopped on 'cannot write in it'."""
    import pandas as pd
    from helpers import empty_cache

    monkeypatch.setattr(paths, "_probe_write", lambda root: None)  # build the cache folder first
    cache = empty_cache(tmp_path / "cache")
    monkeypatch.setenv("MIA_CACHE_DIR", str(cache))
    monkeypatch.setattr(paths, "_probe_write", lambda root: (_ for _ in ()).throw(OSError(30, "Read-only file system")))
    monkeypatch.setattr(paths, "_CHECKED", set())
    (tmp_path / "m.txt").write_text("The old lighthouse keeper counted ships every night.\nRain fell on the quiet harbour.\n")
    (tmp_path / "n.txt").write_text("A green parrot argued with the baker at dawn.\nThe violin lessons started late.\n")
    before = _tree(cache)
    scores = []
    for extra in ([], ["--no-cache"]):
        out = tmp_path / f"out{len(scores)}"
        rc = main(["run", "--members", str(tmp_path / "m.txt"), "--nonmembers", str(tmp_path / "n.txt"),
                   "--attacks", "loss", "--bootstrap", "10", "--out", str(out), *extra])
        out_text, err = capsys.readouterr()
        assert rc == 0, err
        if not extra:  # the run's notes say so
            assert "is read-only: cached statistics are read from it" in out_text
        scores.append(pd.read_csv(out / "scores.csv")["loss"].to_numpy())
    assert _tree(cache) == before
    np.testing.assert_allclose(scores[0], scores[1], atol=1e-6)


# --------------------------------------------------------------------------- --out and --overwrite

@pytest.fixture
def texts(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "m.txt").write_text("\n".join(f"member line {i} about ships and the sea" for i in range(6)))
    (d / "n.txt").write_text("\n".join(f"other line {i} about rain over the hills" for i in range(6)))
    return d


def _shift(d: Path, out) -> list[str]:
    return ["shift", "--members", str(d / "m.txt"), "--nonmembers", str(d / "n.txt"), "--folds", "2",
            "--bootstrap", "20", "--quiet", "--out", str(out)]


def test_out_dot_overwrite_never_replaces_the_working_folder(texts, tmp_path, monkeypatch, capsys):
    work = tmp_path / "work"
    work.mkdir()
    (work / "thesis.tex").write_text("three years of work")
    write_marker(work)  # even a folder the tool once wrote into is not replaced while it is the working folder
    monkeypatch.chdir(work)
    line = assert_one_error(main(_shift(texts, ".") + ["--overwrite"]), capsys.readouterr().err, "working folder")
    assert "--out ." in line and (work / "thesis.tex").read_text() == "three years of work"
    assert_one_error(main(_shift(texts, tmp_path) + ["--overwrite"]), capsys.readouterr().err, "working folder")


def test_symlinked_out_is_never_replaced_through_the_link(texts, tmp_path, capsys):
    real = tmp_path / "real"
    real.mkdir()
    (real / "keep.txt").write_text("mine")
    write_marker(real)
    (tmp_path / "link").symlink_to(real)
    line = assert_one_error(main(_shift(texts, tmp_path / "link") + ["--overwrite"]), capsys.readouterr().err,
                            "symbolic link")
    assert str(real) in line
    assert (real / "keep.txt").read_text() == "mine" and (tmp_path / "link").is_symlink()


def test_overwrite_replaces_a_folder_the_tool_wrote(texts, tmp_path, capsys):
    out = tmp_path / "results"
    assert main(_shift(texts, out)) == 0
    assert json.loads((out / OUTPUT_MARKER).read_text())["tool"] == "mia-dashboard"
    (out / "shift.json").write_text("old")
    assert main(_shift(texts, out) + ["--overwrite"]) == 0
    assert (out / "shift.json").read_text() != "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "results"]


def test_out_replaced_meanwhile_by_a_foreign_folder_is_kept(tmp_path):
    """The up-front check passed (the folder was ours); by publication time something else stands there:
    it is kept and this run's results go beside it."""
    from mia_core.errors import SettingsError

    out = tmp_path / "results"
    out.mkdir()
    write_marker(out)
    with pytest.raises(SettingsError, match="kept"):
        with staged_output(out, overwrite=True) as tmp:
            (tmp / "new.txt").write_text("new")
            (out / OUTPUT_MARKER).unlink()
            (out / "user.txt").write_text("put here meanwhile")
    assert (out / "user.txt").read_text() == "put here meanwhile"


@pytest.mark.parametrize("n", [230, 250, 255])
def test_long_out_names_that_the_file_system_takes_work_end_to_end(texts, tmp_path, n, capsys):
    out = tmp_path / ("r" * n)
    assert main(_shift(texts, out)) == 0  # before: the staging folder's name overflowed, after the whole run
    assert (out / "shift.json").is_file()


def test_too_long_out_name_refused_up_front(tmp_path):
    from mia_core.errors import SettingsError

    with pytest.raises(SettingsError, match="shorter"):
        check_output_dir(tmp_path / "new" / ("x" * 256))


# --------------------------------------------------------------------------- sizes before allocation

def _tiny_llama(folder: Path, layers_declared: int) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                      num_key_value_heads=2, max_position_embeddings=32)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    data = json.loads((folder / "config.json").read_text())
    data["num_hidden_layers"] = layers_declared
    (folder / "config.json").write_text(json.dumps(data))
    return folder


def test_config_far_larger_than_its_checkpoint_refused_before_allocation(tmp_path, monkeypatch):
    from mia_core.errors import ModelError
    from mia_core.models import causal

    folder = _tiny_llama(tmp_path / "m", 10_000_000)
    called = []
    monkeypatch.setattr("transformers.AutoModelForCausalLM.from_pretrained", lambda *a, **k: called.append(1))
    with pytest.raises(ModelError, match="declares 10,000,000 layers.*nothing was allocated"):
        causal._from_pretrained(str(folder), "fp32", "none", "cpu", False, True, "m")
    assert not called


def test_model_larger_than_free_memory_refused_without_blaming_batch_tokens(tmp_path, monkeypatch):
    from mia_core.errors import ModelError
    from mia_core.models import verify

    folder = _tiny_llama(tmp_path / "m", 1)
    monkeypatch.setattr(verify, "_available_bytes", lambda device: (1000, "this machine has"))
    with pytest.raises(ModelError, match="needs about .* GiB") as e:
        from mia_core.models import causal

        causal._from_pretrained(str(folder), "fp32", "none", "cpu", False, True, "m")
    assert "batch-tokens" not in str(e.value)
    monkeypatch.undo()
    from mia_core.models import causal

    model, _ = causal._from_pretrained(str(folder), "fp32", "none", "cpu", False, True, "m")  # the honest one loads
    assert sum(p.numel() for p in model.parameters()) > 0


def test_size_estimate_is_close_for_real_configs():
    """The estimate the checks rest on, against exact counts of models built on the meta device."""
    import torch
    from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig

    from mia_core.models.verify import config_params

    for cfg in (LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                            num_attention_heads=9, num_key_value_heads=3, hidden_act="silu", tie_word_embeddings=True),
                GPT2Config()):
        with torch.device("meta"):
            exact = sum(p.numel() for p in AutoModelForCausalLM.from_config(cfg).parameters())
        assert 0.7 * exact <= config_params(cfg) <= 1.05 * exact, (type(cfg).__name__, config_params(cfg), exact)


# --------------------------------------------------------------------------- a mismatch the user insists on

@pytest.mark.slow
def test_weight_mismatch_refused_unless_asked_then_recorded_everywhere(tmp_path, monkeypatch, capsys):
    """A config declaring one layer more than the checkpoint holds: refused in one line that names the way
    to insist; with --accept-weight-mismatch the run goes on and says so in its models, notes and report."""
    from helpers import empty_cache, save_tiny_llama

    monkeypatch.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path / "cache")))
    folder = tmp_path / "tiny"
    save_tiny_llama(folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["num_hidden_layers"] += 1
    (folder / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "m.txt").write_text("The old lighthouse keeper counted ships.\nRain fell on the harbour.\n")
    (tmp_path / "n.txt").write_text("A green parrot argued with the baker.\nThe violin lessons started late.\n")
    args = ["run", "--members", str(tmp_path / "m.txt"), "--nonmembers", str(tmp_path / "n.txt"), "--model",
            str(folder), "--attacks", "loss", "--bootstrap", "10", "--quiet"]
    line = assert_one_error(main(args + ["--out", str(tmp_path / "a")]), capsys.readouterr().err, "missing")
    assert "--accept-weight-mismatch" in line and not (tmp_path / "a").exists()
    assert main(args + ["--out", str(tmp_path / "b"), "--accept-weight-mismatch"]) == 0
    out = capsys.readouterr().out
    assert "WARNING: the target model" in out and "do not match its checkpoint" in out
    run = json.loads((tmp_path / "b" / "run.json").read_text())
    assert "missing" in run["models"]["target"]["weights_not_verified"]
    assert any("do not match its checkpoint" in n for n in run["report"])
    # the accepted load is never handed to a caller that did not ask
    assert_one_error(main(args + ["--out", str(tmp_path / "c")]), capsys.readouterr().err, "missing")


def test_write_split_never_replaces_a_users_file(tmp_path):
    """Issue 50: ``api.targets.write_split`` overwrote the ``members.txt`` of a folder the user named. Now a folder
    of the user's, or a split file that is a symbolic link, is one line and nothing is written; a new folder is
    marked as the tool's, and writing the split there again replaces only its own files."""
    from mia_core.api.targets import write_split
    from mia_core.errors import SettingsError

    sets = {"members": ["a member text"], "nonmembers": ["a non-member text"], "population": []}
    user = tmp_path / "my-data"
    user.mkdir()
    (user / "members.txt").write_text("the user's own members, irreplaceable\n")
    before = _tree(user)
    with pytest.raises(SettingsError, match="did not write") as e:
        write_split(sets, user)
    assert "\n" not in str(e.value) and _tree(user) == before

    own = tmp_path / "experiment"
    files = write_split(sets, own)
    assert (own / OUTPUT_MARKER).is_file() and set(files) == {"members", "nonmembers"}
    assert files["members"].read_text() == "a member text\n"
    files = write_split({**sets, "members": ["another member"]}, own)  # its own folder: replaced
    assert files["members"].read_text() == "another member\n" and not list(own.glob(".*.tmp-*"))

    secret = tmp_path / "secret.txt"
    secret.write_text("not to be touched\n")
    (own / "nonmembers.txt").unlink()
    (own / "nonmembers.txt").symlink_to(secret)
    with pytest.raises(SettingsError, match="symbolic link"):
        write_split(sets, own)
    assert secret.read_text() == "not to be touched\n"
