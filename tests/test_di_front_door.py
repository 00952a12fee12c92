"""Dataset inference's front door (issue 39): ``mia_core.api.inference.prepare_inference`` makes every model-free
check once, before any model loads, and ``execute_inference`` runs on those checks without making them again; the
CLI and the page build their runs through it; the run is written as short stages."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mia_core.errors import DataError, SettingsError

ROOT = Path(__file__).resolve().parents[1]
OLD = [f"The carriage drew up before the inn at dusk on the {i}th evening, and the coachman called for ale."
       for i in range(30)]
NEW = [f"In 2024 the startup shipped update {i} of its app to the cloud, and users posted reviews online."
       for i in range(30)]


def test_the_checks_are_made_once_and_the_run_uses_them(monkeypatch):
    """A shifted validation set: refused by the IID guard, so no model is loaded (the model does not exist)."""
    from mia_core.api.inference import execute_inference, prepare_inference
    from mia_core.dataset_inference import audit

    request = prepare_inference(NEW + NEW[:2], OLD, model="/no/such/model", n_permutations=99,
                                read_notes=["a reader's note"])
    assert len(request.suspect) == 30 and any("duplicate" in n for n in request.notes)
    assert request.checked.mode == "texts" and not request.books and request.estimate_note is None

    def again(*a, **k):
        raise AssertionError("the checks were made again")

    monkeypatch.setattr(audit, "check_text_run", again)
    monkeypatch.setattr(audit, "check_inputs", again)
    res = execute_inference(request)
    assert res.summary["verdict"] == "refused" and res.summary["n_suspect"] == 30
    assert res.report[0] == "a reader's note" and any("duplicate" in n for n in res.report)


def test_bad_input_is_one_line_before_any_model():
    from mia_core.api.inference import prepare_inference

    with pytest.raises(DataError, match="at least 10"):
        prepare_inference(NEW[:3], OLD, model="/no/such/model")
    with pytest.raises(SettingsError, match="correction"):
        prepare_inference(NEW, OLD, correction="bonferroni")
    with pytest.raises(SettingsError, match="population"):
        prepare_inference(NEW, OLD, books=True, population=["a text"])


def test_the_time_of_the_tests_is_said_when_it_is_long():
    from mia_core.api.inference import prepare_inference

    request = prepare_inference(NEW, OLD, n_permutations=1_000_000, combination="nonneg")  # the slower fit
    assert request.tests_seconds >= 10
    assert request.estimate_note.startswith("the permutation tests (1,000,000 permutations) will take about")


def test_books_are_checked_and_cut_once():
    from mia_core.api.inference import prepare_inference, read_inference_sets

    sets = read_inference_sets(demo="demo", books=True)
    assert len(sets.suspect) == 20 and len(sets.validation) == 20 and Path(sets.target).name == "target"
    null = read_inference_sets(demo="demo_null", books=True)
    assert [d.name for d in null.suspect + null.validation] == [d.name for d in sets.validation[::2]
                                                                 + sets.validation[1::2]]
    request = prepare_inference(sets.suspect, sets.validation, books=True, passage_words=64)
    cut = request.checked.cut
    assert request.books and len(cut) == 40 and len({len(c) for c in cut}) == 1
    assert request.checked.settings["passages_per_book"] == len(cut[0])
    assert any("every book is read as" in n for n in request.notes)
    with pytest.raises(DataError, match="at least 5"):
        prepare_inference(sets.suspect[:3], sets.validation, books=True)


def test_the_demo_texts_and_the_population_are_read_through_one_function(tmp_path):
    from mia_core.api.inference import read_inference_sets
    from mia_core.targets.demo import demo_paths

    pop = tmp_path / "p.txt"
    pop.write_text("one known non-member\nanother one\n")
    sets = read_inference_sets(population=[str(pop)], demo="demo_null", mode="lines")
    d = demo_paths()
    assert sets.suspect == d["population"].read_text().splitlines()[:len(sets.suspect)]
    assert sets.population == ["one known non-member", "another one"] and sets.notes  # the population's notes
    with pytest.raises(SettingsError, match="demo"):
        read_inference_sets(demo="other")


def test_param_items_are_read_as_mia_run_reads_them():
    from mia_core.cli.common import parse_params as parse_param_items

    assert parse_param_items(["min_k.k=0.1", "dc_pdd.a=0.5"]) == {"min_k": {"k": 0.1}, "dc_pdd": {"a": 0.5}}
    assert parse_param_items(None) == {}
    for bad, needle in (("nonsense", "write ATTACK.NAME=VALUE"), ("nope.k=1", "unknown attack"),
                        ("min_k.nope=1", "has no parameter"), ("dc_pdd.a=-1", "dc_pdd.a")):
        with pytest.raises(SettingsError, match=needle):
            parse_param_items([bad])


def test_the_default_level_is_the_engines():
    from mia_core.api.inference import DEFAULT_ALPHA
    from mia_core.dataset_inference import DEFAULT_ALPHA as ENGINE

    assert DEFAULT_ALPHA == ENGINE


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            out.add("." * node.level + (node.module or ""))
    return out


def test_the_cli_is_a_thin_parser_over_the_api():
    got = {m for m in _imports(ROOT / "mia_core" / "cli" / "infer.py") if m.startswith(".")}
    assert got <= {"..api", "..api.inference", "..errors", "..runs.outputs", ".common"}, got


def test_the_stages_are_short_functions():
    long = []
    for path in (ROOT / "mia_core" / "dataset_inference").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 80:
                long.append(f"{path.name}:{node.name}")
    assert not long, long


def test_books_of_one_name_are_numbered_apart():
    """Issue 50: six zip members of one name became six books of one name (their lines and p-values could not be
    told apart). The check stage numbers repeated names across both sets, and says so."""
    from mia_core.api.inference import prepare_inference
    from mia_core.documents import Document

    def books(word):
        return [Document(name="chapter.txt", text=" ".join(f"{word}{i} line {j} of a long tale" for j in range(60)),
                         source="(test)", strip={"stripped": False}) for i in range(6)]

    req = prepare_inference(books("harbour"), books("mountain"), books=True, passage_words=16)
    names = [d.name for d in [*req.checked.suspect, *req.checked.validation]]
    assert len(set(names)) == 12 and names[:2] == ["chapter.txt", "chapter.txt_2"] and names[-1] == "chapter.txt_12"
    assert any("11 books shared a name" in n for n in req.checked.notes)
