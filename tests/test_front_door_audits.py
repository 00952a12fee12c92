"""The front door of the document-level and masked-LM audits (issue 39): ``prepare_documents`` / ``prepare_mlm``
check every setting and build the sets before any model loads, and return a request; ``audit_documents`` and
``audit_mlm`` go through them. No model is loaded here: every load and the masked-LM audit are stopped
(``helpers.stop_model_loads``)."""
from __future__ import annotations

import pytest

from helpers import Reached, stop_model_loads
from mia_core.api.documents import DocumentRequest, audit_documents, check_document_settings, prepare_documents
from mia_core.api.mlm import MlmRequest, audit_mlm, prepare_mlm, read_mlm_files
from mia_core.errors import DataError, SettingsError

BOOKS = [f"Book {i}: " + " ".join(f"word{i}_{j}" for j in range(60)) for i in range(6)]
OTHER = [f"Other {i}: " + " ".join(f"term{i}_{j}" for j in range(60)) for i in range(6)]
MEM = [f"The {w} walked to the harbour and counted the boats." for w in ("miller", "baker", "clerk", "sailor")]
NON = [f"A quiet rain fell on the {w} over the northern hills." for w in ("fox", "owl", "hare", "deer")]
POP = [f"Letters from home reached the {w} in the spring." for w in ("smith", "weaver", "tailor", "cooper")]


@pytest.fixture
def stopped(monkeypatch):
    """Every model load and the masked-LM audit raise ``Reached``."""
    stop_model_loads(monkeypatch)


def test_prepare_documents_checks_and_reads_before_any_model(stopped):
    req = prepare_documents(BOOKS[:3], OTHER[:3], folds=3, normalizations="maxnorm-tf", features="hist",
                            partial_lengths=[10], n_estimators=5)
    assert isinstance(req, DocumentRequest)
    assert [d.text for d in req.members] == BOOKS[:3] and [d.text for d in req.nonmembers] == OTHER[:3]
    assert req.settings["folds"] == 3 and req.settings["use_cache"] is True and req.model is None
    assert req.load["reference_dtype"] == req.load["dtype"] == "auto"
    with pytest.raises(SettingsError, match="fold"):  # 2 + 2 books cannot make 3 folds: said before any load
        prepare_documents(BOOKS[:2], OTHER[:2], folds=3)
    with pytest.raises(DataError, match="both"):
        prepare_documents(BOOKS[:3], BOOKS[2:5], folds=2)
    with pytest.raises(SettingsError, match="normali"):
        prepare_documents(BOOKS[:3], OTHER[:3], folds=2, normalizations="no-such-norm")
    with pytest.raises(SettingsError, match="demo"):
        prepare_documents(BOOKS[:3], OTHER[:3], demo=True)
    with pytest.raises(SettingsError, match="prepare_documents"):
        prepare_documents(BOOKS[:3], OTHER[:3], no_such_option=1)
    with pytest.raises(SettingsError, match="feature extractor 'nothing'"):
        check_document_settings(features="both,nothing")


def test_audit_documents_takes_cache_and_its_old_name(stopped):
    for kw in ({"cache": False}, {"use_cache": False}):
        with pytest.raises(Reached):  # checked and read, stopped at the model load
            audit_documents(BOOKS[:3], OTHER[:3], folds=3, **kw)
    with pytest.raises(SettingsError, match="use_cache"):
        audit_documents(BOOKS[:3], OTHER[:3], use_cache="no")


def test_prepare_mlm_checks_the_texts_before_any_model(stopped):
    req = prepare_mlm(MEM, NON, POP, model="bert-a", reference="bert-b", recipe="released", seed=3)
    assert isinstance(req, MlmRequest) and req.k == 20 and req.settings["seed"] == 3
    assert (req.members, req.nonmembers, req.population) == (MEM, NON, POP)
    with pytest.raises(DataError, match="population"):
        prepare_mlm(MEM, NON, MEM[:2], model="bert-a", reference="bert-b")
    with pytest.raises(DataError, match="group"):
        prepare_mlm(MEM, NON, POP, model="bert-a", reference="bert-b", member_groups=["a"] * 4)
    with pytest.raises(SettingsError, match="model"):
        prepare_mlm(MEM, NON, POP, reference="bert-b")


def test_audit_mlm_takes_the_models_as_keywords_or_positional(stopped):
    with pytest.raises(Reached):
        audit_mlm(MEM, NON, POP, model="bert-a", reference="bert-b", dtype="fp32", device="cpu")
    with pytest.raises(Reached):
        audit_mlm(MEM, NON, POP, "bert-a", "bert-b")
    with pytest.raises(SettingsError, match="dtype"):
        audit_mlm(MEM, NON, POP, model="bert-a", reference="bert-b", dtype="fp64")


def test_read_mlm_files_splits_members_ids_and_groups(tmp_path):
    table = tmp_path / "labelled.csv"
    rows = [("text", "label", "group")] + [(t, 1, f"g{i % 2}") for i, t in enumerate(MEM)] + \
        [(t, 0, f"h{i % 2}") for i, t in enumerate(NON)]
    table.write_text("\n".join(",".join(map(str, r)) for r in rows) + "\n")
    pop = tmp_path / "pop.txt"
    pop.write_text("\n".join(POP) + "\n")
    read = read_mlm_files(labelled=[str(table)], population=[str(pop)], group_column="group", mode="lines")
    assert read["members"] == MEM and read["nonmembers"] == NON and read["population"] == POP
    assert read["member_groups"] == ["g0", "g1", "g0", "g1"] and len(read["member_ids"]) == 4
    assert read["train_samples"] is None and "population_groups" not in read


def test_every_front_door_name_is_in_its_module():
    """mia_core.api.FRONT_DOOR lists what the CLI and the pages build their audits with: each name is there, public
    and documented."""
    import importlib

    from mia_core.api import FRONT_DOOR

    for module, names in FRONT_DOOR.items():
        m = importlib.import_module(f"mia_core.api.{module}")
        for name in names:
            obj = getattr(m, name)
            assert not name.startswith("_") and (obj.__doc__ or "").strip(), f"{module}.{name}"


def _engine_packages(files, *, relative_to=None) -> set[str]:
    """The top-level modules and packages of mia_core that ``files`` import (``mia_core.X`` or, for modules inside
    mia_core, ``..X``); mia_core.cli and the package itself (``__version__``) left out."""
    import ast

    out = set()
    for f in files:
        for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(n, ast.ImportFrom):
                if n.level and relative_to is not None:
                    parts = list(f.relative_to(relative_to).with_suffix("").parts)[: -n.level]
                    mods = [".".join(parts + [n.module])] if n.module else [".".join(parts + [a.name]) for a in n.names]
                else:
                    mods = ([n.module] if n.module != "mia_core" else [f"mia_core.{a.name}" for a in n.names]) \
                        if n.module else []
            elif isinstance(n, ast.Import):
                mods = [a.name for a in n.names]
            else:
                continue
            out |= {m.split(".")[1] for m in mods if m.startswith("mia_core.") and m.split(".")[1] not in ("cli",
                                                                                                    "__version__")}
    return out


def test_each_front_end_reaches_at_most_twelve_engine_packages():
    """Issue 39's bound: the CLI, and the pages with dashboard/, reach the engine through mia_core.api and at most
    a dozen of its top-level packages, never an audit's internals (documents, mlm, dataset_inference, stats...)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    cli = _engine_packages(sorted((root / "mia_core" / "cli").glob("*.py")), relative_to=root)
    pages = _engine_packages([*sorted((root / "dashboard").glob("*.py")), *sorted((root / "pages").glob("*.py")),
                              root / "app.py"])
    for name, got in (("the CLI", cli), ("the pages with dashboard/", pages)):
        assert "api" in got and len(got) <= 12, (name, sorted(got))
        assert not got & {"documents", "mlm", "dataset_inference", "pipeline", "smia"}, (name, sorted(got))


def _private_imports() -> dict[str, list[str]]:
    """Every private name (one leading underscore) a module of mia_core imports from another of its packages (a
    top-level module is a package of its own), as ``{"from_package -> to_package": [names]}``."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "mia_core"

    def package(parts: list[str]) -> str:  # parts below mia_core: ["audits", "traps"] -> "audits"
        return parts[0] if parts and parts[0] != "__init__" else "(top)"

    out: dict[str, list[str]] = {}
    for f in sorted(root.rglob("*.py")):
        rel = list(f.relative_to(root).with_suffix("").parts)
        base = rel[:-1]  # the package a relative import starts from
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                start = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                target = start + (node.module.split(".") if node.module else [])
            elif (node.module or "").startswith("mia_core."):
                target = node.module.split(".")[1:]
            else:
                continue
            private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            src = package(rel)
            if private and package(target) != src:
                out.setdefault(f"{src} -> {package(target)}", []).extend(private)
    return out


def test_the_registry_takes_no_private_name_and_the_engine_fewer_than_before():
    """Issue 69 item 3: the audit registry and the API check their inputs with the public ground floor
    (mia_core.inputs), not the API's private checkers; across the whole engine, private names taken from another
    package only go down (56 at bd99a7f, 26 of them audits -> api; 24 after, the six dataset_inference -> runs
    helpers public in runs/folder.py too)."""
    got = _private_imports()
    assert not {k: v for k, v in got.items() if k.startswith("audits ->")}, got
    assert sum(map(len, got.values())) <= 24, got
