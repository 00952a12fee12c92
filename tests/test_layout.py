"""The layout's rule (docs/layout.md): no import circle, and no module imports a layer above it.

Every import of the product's files is read (``mia_core/``, ``dashboard/``, ``pages/``, ``app.py``), those inside
functions too (a deferred import still ties two modules together), and resolved to the file it loads. Two graphs
must have no circle:

* **files**: ``a.py`` imports ``b.py`` (``from .pkg import name`` is the submodule ``name`` when there is one, else
  the package's ``__init__.py``);
* **rooms**: the engine's top-level packages and modules (``mia_core/stats/``, ``mia_core/estimate.py``...) and the
  front ends (``dashboard/``, ``pages/``, ``app.py``). Layers are the order of a graph with no circle, so a circle
  here is what a picture of the layout shows as an import running back up a layer (a module of ``stats/`` that
  imports ``estimate.py`` while ``estimate.py`` imports ``stats/``).
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [*sorted((ROOT / "mia_core").rglob("*.py")), *sorted((ROOT / "dashboard").rglob("*.py")),
           *sorted((ROOT / "pages").glob("*.py")), ROOT / "app.py"]
SKIP = ("mia_core/assets/",)  # the bundled assets' own scripts (how the demo data were made), not the product


def _module_file(dotted: str) -> Path | None:
    base = ROOT.joinpath(*dotted.split("."))
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


def _package_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1]) if parts[-1] != "__init__" else ".".join(parts[:-1])


def _imports(path: Path) -> set[Path]:
    """The product files that ``path`` imports (anywhere in it)."""
    out: set[Path] = set()
    pkg = _package_of(path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for a in node.names:
                f = _module_file(a.name)
                if f:
                    out.add(f)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                up = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)] if pkg else []
                base = ".".join([*up, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for a in node.names:
                f = _module_file(f"{base}.{a.name}") if a.name != "*" else None
                f = f or _module_file(base)
                if f:
                    out.add(f)
    out.discard(path)
    return out


def _room(path: Path) -> str:
    rel = path.relative_to(ROOT).as_posix()
    top = rel.split("/")
    if top[0] in ("dashboard", "pages"):
        return top[0] + "/"
    if top[0] == "mia_core" and len(top) > 2:
        return f"mia_core/{top[1]}/"
    return rel


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _graphs() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    files, rooms = {}, {}
    for path in SOURCES:
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(SKIP):
            continue
        targets = {t for t in _imports(path) if not t.relative_to(ROOT).as_posix().startswith(SKIP)}
        files[rel] = {t.relative_to(ROOT).as_posix() for t in targets}
        rooms.setdefault(_room(path), set()).update(_room(t) for t in targets if _room(t) != _room(path))
    return files, rooms


def test_no_import_circle_between_files():
    files, _ = _graphs()
    assert len(files) > 150  # the product's files were found
    assert _circles(files) == []


def test_no_import_runs_back_up_a_layer():
    _, rooms = _graphs()
    assert {"mia_core/stats/", "mia_core/api/", "dashboard/", "mia_core/estimate.py"} <= set(rooms)
    assert _circles(rooms) == []


def test_the_check_sees_a_circle():
    """Not vacuous: the graph of today's tree with one import added back (``estimate.py`` using ``stats/`` while a
    module of ``stats/`` records its speed in ``estimate.py``) has a circle in both graphs."""
    files, rooms = _graphs()
    assert "mia_core/estimate.py" in files["mia_core/stats/entry.py"]  # the arrow down that exists
    files["mia_core/estimate.py"].add("mia_core/stats/compute.py")
    files["mia_core/stats/compute.py"].add("mia_core/stats/entry.py")
    rooms["mia_core/estimate.py"].add("mia_core/stats/")
    assert _circles(files) and _circles(rooms) == [["mia_core/estimate.py", "mia_core/stats/"]]
