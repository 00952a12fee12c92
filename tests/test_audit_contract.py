"""The audit contract (``mia_core.audits``): every registered audit, on tiny models trained here on known members.

For each audit of the registry, as scikit-learn's common checks do for estimators:

* its declaration is whole: options an ``Options`` class whose every option ``prepare`` takes, the sets it reads,
  a request class, a result class with ``save``, ``load``, ``summary_text`` and ``to_json``, a page, a CLI command;
* a value just outside each numeric option's bound is refused by ``prepare`` in one line naming the option, before
  any model loads;
* on its tiny inputs of known membership (``Audit.example``) it runs through the generic front door
  (``mia_core.audits.prepare`` / ``execute``), finds the members (its headline AUC >= 0.75, or for dataset inference
  the verdict "used"), and its result saves, reads back equal (the same figures, table and report) and, saved again,
  writes the same files;
* in the one run store (``mia_core.audits.saved``) the result is saved, listed under its kind with its name, model
  and headline, opened back equal, compared with itself (no difference), and deleted; a folder the store did not
  write, or a link, is refused and left as it was.

A new audit registered without one of these fails here.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

import mia_core
from mia_core.audits import AUDITS, Known, execute, load_result, prepare
from mia_core.errors import SettingsError
from mia_core.options import Options

ROOT = Path(__file__).resolve().parent.parent
NAMES = list(AUDITS)


@pytest.fixture(scope="module")
def known(tmp_path_factory, memorised_llama) -> Known:
    """Members a tiny Llama (the session's ``memorised_llama``: 60 epochs, greedy decoding reproduces them) and a tiny
    BERT (25 epochs) were trained on, never-trained non-members and population, and references of the same
    architectures trained on other paragraphs."""
    import torch

    from tiny_lm import make_tokenizer, small_bert_tokenizer, train_tiny_lm, train_tiny_mlm

    root = tmp_path_factory.mktemp("audits")
    mp = pytest.MonkeyPatch()
    mp.setenv("MIA_CACHE_DIR", str(root / "cache"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        texts, order = memorised_llama["texts"], memorised_llama["order"]
        members, nonmembers, population, other = ([texts[i] for i in order[a:b]]
                                                  for a, b in ((0, 24), (24, 48), (48, 60), (60, 140)))
        assert members == memorised_llama["members"]
        causal_ref = train_tiny_lm(other, make_tokenizer(texts), root / "causal_reference", epochs=8, hidden=64, seed=1)
        btok = small_bert_tokenizer(texts, root / "bert_tok")
        masked = train_tiny_mlm(members, btok, root / "masked", epochs=25, seed=1)
        masked_ref = train_tiny_mlm(other, btok, root / "masked_reference", epochs=8, seed=2)
        yield Known(members=members, nonmembers=nonmembers, population=population, causal=memorised_llama["folder"],
                    causal_reference=str(causal_ref), masked=str(masked), masked_reference=str(masked_ref))
    finally:
        torch.set_num_threads(threads)
        mp.undo()


def test_the_registry_declares_each_audit_whole():
    from mia_core.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    # today's, in the registry's order (a new audit registered after them is checked here without an edit)
    assert NAMES[:5] == ["run", "documents", "mlm", "infer-dataset", "extraction"]
    for name, a in AUDITS.items():
        assert a.name == name and a.title and a.citation and a.sets
        assert issubclass(a.options(), Options), name
        assert (ROOT / a.page).is_file(), (name, a.page)
        assert name in commands, name  # `mia NAME` runs it
        res = a.result()
        for method in ("save", "summary_text", "to_json"):
            assert callable(getattr(res, method, None)), (name, method)
        assert callable(a.load) and callable(a.example) and callable(a.headline), name
        store = a.store()  # its runs' place in the run store (None: the calibration run's own)
        assert (store is None) == (name == "run"), name
        if store is not None:
            assert store.subdir.startswith("_") and store.words, name
    subdirs = [a.store().subdir for a in AUDITS.values() if a.store() is not None]
    assert len(set(subdirs)) == len(subdirs), subdirs  # no two kinds share a folder


@pytest.mark.parametrize("name", NAMES)
def test_every_option_is_taken_and_one_outside_its_bound_is_one_line_before_any_model_loads(name, known, monkeypatch):
    from helpers import stop_model_loads
    from test_options import _outside

    stop_model_loads(monkeypatch)
    a = AUDITS[name]
    example = a.example(known)
    opts = a.options()
    for option in opts.declared():
        request = a.prepare(**{**example, option: opts.default(option)})  # every declared option is a keyword
        assert isinstance(request, a.request()), (name, option)
    seen = 0
    for option, f in opts.declared().items():
        d = f.metadata["domain"]
        if d.kind not in ("int", "float"):
            continue
        for v in _outside(d):
            with pytest.raises(SettingsError) as e:
                prepare(name, **{**example, option: v})
            msg = str(e.value)
            assert "\n" not in msg and option in e.value.options, (name, option, v, msg, e.value.options)
            seen += 1
    assert seen >= 1, name


def _plain(x):
    """``x`` as its JSON text reads back (NaN and infinities as null, numpy values as Python's): equal figures
    compare equal whether they were computed or read from a file."""
    from mia_core.runs.results import json_default

    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {str(k): clean(w) for k, w in v.items()}
        if isinstance(v, list):
            return [clean(w) for w in v]
        return v

    return clean(json.loads(json.dumps(x, default=json_default, allow_nan=True)))


def _files(folder: Path) -> dict[str, bytes]:
    """Every file a result wrote, with the random ids plotly gives each chart's element in an HTML report made the
    same, and the minute an HTML report says it was written made the same (a slow machine saves the second copy
    in the next minute: CI failed so at stop 80); the per-token values aside (a result read back has none in
    memory), and the folder's marker (``.mia-output.json``, with the second it was written)."""
    uuid = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    written = re.compile(rb"report written \d{4}-\d\d-\d\d \d\d:\d\d")
    return {p.relative_to(folder).as_posix(): written.sub(b"report written T", uuid.sub(b"id", p.read_bytes()))
            for p in sorted(folder.rglob("*"))
            if p.is_file() and "token_values" not in p.parts and not p.name.startswith(".mia-output")}


@pytest.mark.parametrize("name", NAMES)
def test_known_members_are_found_and_the_result_saves_and_reads_back_equal(name, known, tmp_path):
    a = AUDITS[name]
    seen = []
    result = execute(prepare(name, **a.example(known)), progress=lambda m, f: seen.append((m, f)))
    assert isinstance(result, a.result()), type(result)
    # progress(message, fraction), the one convention
    assert seen and all(isinstance(m, str) and 0.0 <= f <= 1.0 for m, f in seen), seen[:3]
    headline = a.headline(result)
    if headline is not None:
        assert headline >= 0.75, (name, headline)
    else:  # dataset inference: a p-value, and the verdict it gives
        assert result.summary["verdict"] == "used", result.summary_text()
    first = tmp_path / "first"
    result.save(first)
    back = load_result(name, first)
    assert isinstance(back, type(result)), type(back)  # a run comes back as the run store's StoredRun
    assert type(mia_core.load(first)) is type(back)  # the one `load` knows each audit's folder
    assert _plain(back.to_json()) == _plain(result.to_json())
    assert _plain(back.metrics) == _plain(result.metrics)
    pd.testing.assert_frame_equal(back.scores.reset_index(drop=True), result.scores.reset_index(drop=True),
                                  check_dtype=False)
    assert back.summary_text() == result.summary_text()
    again = tmp_path / "again"
    back.save(again)
    saved, resaved = _files(first), _files(again)
    assert sorted(resaved) == sorted(saved)
    assert [f for f in saved if resaved[f] != saved[f]] == []  # names them, not 5 MB of bytes
    _the_run_store_keeps_it(name, result, tmp_path / "runs")


def _the_run_store_keeps_it(name, result, root: Path) -> None:
    """Saved, listed, opened back equal, compared, deleted; what the store did not write is never deleted."""
    from mia_core.audits import saved
    from mia_core.errors import DataError

    a = AUDITS[name]
    meta = saved.save_run(name, result, root=root)
    listed = saved.list_runs(name, root=root)
    assert [m["id"] for m in listed] == [meta["id"]] and listed[0]["kind"] == name
    assert not listed[0].get("damaged") and listed[0]["name"].strip(), listed[0]
    assert [m["id"] for m in saved.list_runs(root=root)] == [meta["id"]]  # every kind's listing has it
    if a.store() is not None:
        described = a.describe(result)
        assert listed[0]["name"] == described["name"] and listed[0]["model"] == described["model"]
        assert listed[0]["data"] == described["data"] and listed[0]["model"], listed[0]
    back = saved.open_run(name, meta["id"], root=root)
    assert _plain(back.to_json()) == _plain(result.to_json())
    rows = saved.compare_runs(name, result, back)
    assert rows and all(r["difference"] in (None, 0.0) for r in rows), rows
    assert any(r["difference"] == 0.0 for r in rows), rows
    folder = (a.store().folder(root) if a.store() is not None else root)
    # a user's folder beside the runs; for the other kinds also one named like a run but without the meta.json
    # the store writes (the calibration store takes a folder of its id form as a run damaged: it lists it)
    foreigns = [folder / "my-notes"] + ([folder / "20250101-000000-abcdef"] if a.store() is not None else [])
    for foreign in foreigns:
        foreign.mkdir()
        (foreign / "keep.txt").write_text("not the store's")
        with pytest.raises(DataError) as e:
            saved.delete_run(name, foreign.name, root=root)
        assert "\n" not in str(e.value) and (foreign / "keep.txt").is_file()
    with pytest.raises(DataError):
        saved.delete_run(name, "../" + meta["id"], root=root)  # never a path outside the store
    saved.delete_run(name, meta["id"], root=root)
    assert meta["id"] not in {m["id"] for m in saved.list_runs(name, root=root)}
    assert all((f / "keep.txt").is_file() for f in foreigns)


def test_the_run_store_answers_bad_types_in_one_line(tmp_path):
    """The run store's front door (``mia_core.audits.saved``): a wrong kind, a result of another audit, an id that
    is not one, each one line, nothing written."""
    from mia_core.audits import saved
    from mia_core.errors import MiaError

    calls = [lambda: saved.save_run("documents", "a result", root=tmp_path),
             lambda: saved.save_run("run", None, root=tmp_path),
             lambda: saved.compare_runs("mlm", 1, 2),
             lambda: saved.open_run("mlm", 5, root=tmp_path),
             lambda: saved.open_run("documents", "20250101-000000-abcdef", root=tmp_path),
             lambda: saved.delete_run("documents", "../x", root=tmp_path),
             lambda: saved.list_runs("no-such-audit", root=tmp_path)]
    for call in calls:
        with pytest.raises(MiaError) as e:
            call()
        assert "\n" not in str(e.value) and str(e.value), str(e.value)
    assert not any(p.is_file() and p.name == "meta.json" for p in tmp_path.rglob("*"))
