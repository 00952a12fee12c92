"""The blind baseline of a re-run comes from the cache (``mia_core.metrics.blind_baseline.cached_blind_baseline``):
the same texts in the same order with the same settings are not classified again; another order, seed or text is;
``--no-cache`` always computes; ``mia cache`` lists and clears the ``blind`` namespace like the others.

The classifier's calls are counted by wrapping ``_out_of_fold_scores`` (the cross-validation), never mocked.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mia_core
from mia_core import paths
from mia_core.cli import main
from mia_core.metrics import blind_baseline as bb

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
SETTINGS = {"folds": 3, "seed": 0, "n_bootstrap": 20, "top_features": 3}
TEXTS = [f"The {w} sat by the window on day {i}, counting the boats that passed the harbour wall."
         for i, w in enumerate(["miller", "baker", "clerk", "sailor", "widow", "farmer", "smith", "weaver"])]


def _jsonl(path):
    return [json.loads(line)["text"] for line in path.open(encoding="utf-8") if line.strip()]


@pytest.fixture(scope="module")
def sets():
    """Six verse lines as members, six modern paragraphs as non-members (short: a cheap baseline)."""
    verse = _jsonl(DATA / "verse.jsonl")[:6]
    modern = [json.loads(line)["text"][:300] for line in (DATA / "paragraphs.jsonl").open(encoding="utf-8")
              if line.strip() and json.loads(line)["modern"]][:6]
    return verse, modern


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private, empty cache folder."""
    root = tmp_path / "cache"
    monkeypatch.setenv("MIA_CACHE_DIR", str(root))
    monkeypatch.setattr(paths, "_CHECKED", set())
    return root


@pytest.fixture
def calls(monkeypatch):
    """How many times the cross-validated classifier ran (``calls[0]``)."""
    n = [0]
    real = bb._out_of_fold_scores

    def counted(*a, **k):
        n[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(bb, "_out_of_fold_scores", counted)
    return n


def _dump(d) -> str:
    return json.dumps(d, sort_keys=True)


def _entries(root: Path) -> list[Path]:
    return sorted((root / "blind").rglob("*.npz")) if (root / "blind").is_dir() else []


def test_same_texts_twice_are_classified_once(cache_dir, calls, sets):
    m, n = sets
    first = bb.blind_baseline(m, n, **SETTINGS, cache=True)
    assert calls[0] == 1 and len(_entries(cache_dir)) == 1
    second = bb.blind_baseline(m, n, **SETTINGS, cache=True)
    assert calls[0] == 1, "the second call ran the classifier again"
    assert _dump(second) == _dump(first)
    assert second == first  # every value round-trips exactly (floats, lists, nested dicts)
    uncached = bb.blind_baseline(m, n, **SETTINGS)  # the default: no cache
    assert calls[0] == 2 and _dump(uncached) == _dump(first)


def test_another_order_seed_settings_or_text_is_computed_again(cache_dir, calls, sets):
    m, n = sets
    base = bb.blind_baseline(m, n, **SETTINGS, cache=True)
    assert calls[0] == 1
    swapped = bb.blind_baseline(m[::-1], n, **SETTINGS, cache=True)  # oof_scores are in input order
    assert calls[0] == 2
    assert swapped["oof_scores"] != base["oof_scores"]
    bb.blind_baseline(n, m, **SETTINGS, cache=True)  # the sides swapped
    assert calls[0] == 3
    bb.blind_baseline(m, n, **{**SETTINGS, "seed": 1}, cache=True)
    assert calls[0] == 4
    bb.blind_baseline(m, n, **{**SETTINGS, "n_bootstrap": 21}, cache=True)
    assert calls[0] == 5
    bb.blind_baseline([m[0] + " "] + m[1:], n, **SETTINGS, cache=True)  # one text changed by one space
    assert calls[0] == 6
    bb.blind_baseline(m, n, **SETTINGS, cache=True)  # the first one is still there
    assert calls[0] == 6 and len(_entries(cache_dir)) == 6


def test_cache_off_computes_every_time(cache_dir, calls, sets):
    m, n = sets
    for i in range(2):
        bb.shift_report(m, n, folds=3, n_bootstrap=20, cache=False)
        assert calls[0] == i + 1
    assert _entries(cache_dir) == []


def test_a_damaged_entry_is_recomputed_and_replaced(cache_dir, calls, sets):
    from mia_core.cache import collect_notes

    m, n = sets
    first = bb.blind_baseline(m, n, **SETTINGS, cache=True)
    (entry,) = _entries(cache_dir)
    entry.write_bytes(b"not an npz")
    with collect_notes() as notes:
        again = bb.blind_baseline(m, n, **SETTINGS, cache=True)
    assert calls[0] == 2 and _dump(again) == _dump(first)
    assert any("recomputed" in x for x in notes), notes
    bb.blind_baseline(m, n, **SETTINGS, cache=True)
    assert calls[0] == 2  # stored again


def test_an_entry_of_other_texts_is_not_used(cache_dir, calls, sets):
    """An entry copied over another key's file fails the store's own check (it says which texts it is for)."""
    m, n = sets
    bb.blind_baseline(m, n, **SETTINGS, cache=True)
    bb.blind_baseline(m[::-1], n, **SETTINGS, cache=True)
    a, b = _entries(cache_dir)
    b.write_bytes(a.read_bytes())
    bb.blind_baseline(m, n, **SETTINGS, cache=True)
    bb.blind_baseline(m[::-1], n, **SETTINGS, cache=True)
    assert calls[0] == 3  # one of the two was recomputed


def test_a_read_only_cache_is_read_and_an_unusable_one_is_skipped(cache_dir, calls, sets, monkeypatch, tmp_path):
    m, n = sets
    first = bb.blind_baseline(m, n, **SETTINGS, cache=True)
    monkeypatch.setattr(paths, "_probe_write", lambda root: (_ for _ in ()).throw(OSError(30, "Read-only file system")))
    monkeypatch.setattr(paths, "_CHECKED", set())
    assert _dump(bb.blind_baseline(m, n, **SETTINGS, cache=True)) == _dump(first) and calls[0] == 1
    bb.blind_baseline(m[::-1], n, **SETTINGS, cache=True)  # computed, not stored, no error
    assert calls[0] == 2 and len(_entries(cache_dir)) == 1
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("MIA_CACHE_DIR", str(blocker))
    monkeypatch.setattr(paths, "_CHECKED", set())
    assert _dump(bb.blind_baseline(m, n, **SETTINGS, cache=True)) == _dump(first) and calls[0] == 3


@pytest.mark.slow
def test_a_hit_imports_none_of_the_classifier_modules(cache_dir, sets):
    m, n = sets
    bb.shift_report(m, n, folds=SETTINGS["folds"], n_bootstrap=SETTINGS["n_bootstrap"], cache=True)  # stored
    code = ("import json, sys\n"
            "from mia_core.metrics.blind_baseline import shift_report\n"
            f"m, n = json.loads({json.dumps(json.dumps([m, n]))})\n"
            f"r = shift_report(m, n, folds={SETTINGS['folds']}, n_bootstrap={SETTINGS['n_bootstrap']}, cache=True)\n"
            "heavy = ('sklearn.feature_extraction', 'sklearn.pipeline', 'sklearn.linear_model', "
            "'sklearn.model_selection')\n"
            "assert r['blind']['n_members'] == len(m)\n"
            "print(json.dumps(sorted(k for k in sys.modules if k.startswith(heavy))))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


# --------------------------------------------------------------------------- through the pipeline and `mia cache`


@pytest.mark.slow
def test_a_rerun_reuses_the_blind_baseline_and_mia_cache_lists_it(tiny_llama, cache_dir, calls, capsys):
    def run(**kw):
        return mia_core.audit(TEXTS[:4], TEXTS[4:], tiny_llama, attacks="loss", n_bootstrap=20, device="cpu", **kw)

    first = run()
    assert calls[0] == 1 and first.shift is not None and "blind" in first.metrics
    second = run()
    assert calls[0] == 1, "the re-run classified the texts again"
    assert _dump(second.shift) == _dump(first.shift)
    assert _dump(second.metrics["blind"]) == _dump(first.metrics["blind"])
    np.testing.assert_array_equal(second.scores["loss"].to_numpy(), first.scores["loss"].to_numpy())
    assert len(_entries(cache_dir)) == 1
    no_cache = run(cache=False)
    assert calls[0] == 2 and _dump(no_cache.shift) == _dump(first.shift)

    capsys.readouterr()
    assert main(["cache", "info"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["namespaces"]["blind"]["files"] == 2  # the entry and its settings.json
    assert main(["cache", "clear", "--dry-run"]) == 0
    listed = capsys.readouterr().out
    assert "blind (1 file" in listed, listed
    assert main(["cache", "clear", "--yes"]) == 0
    assert not (cache_dir / "blind").exists()
    run()
    assert calls[0] == 3  # cleared: computed again
