"""Every public definition of the engine has a docstring (issue 39 item 6): the MkDocs site's API reference
(mkdocstrings, numpydoc style) is generated from them, and ``help()`` shows the same text.

What counts as public, read from the source with ``ast`` (nothing is imported):

- module-level functions and classes whose names do not start with ``_`` (also those defined under a
  module-level ``if`` / ``try``, e.g. an optional import's fallback);
- public methods (and properties) of those classes; a property's ``.setter`` / ``.deleter`` and
  ``typing.overload`` stubs are covered by the definition they belong to; functions nested inside
  functions are not public.

``mia_core/cli/`` is walked like every other package, argparse plumbing included: its public names are not
internal — ``cli/__init__.py`` assembles the parser from each command module's ``register`` and runs its
command function, ``cli/common.py``'s argument groups, number types and ``ProgressBar`` are shared by every
command, and the tests import ``build_parser``, ``flag_names``, ``parse_params``, ``list_params``,
``quiet_output`` and ``ProgressBar`` directly. What is internal there is already named with a leading ``_``.

Every module under ``mia_core/`` is held to it (the asset scripts under ``mia_core/assets/`` included), so a new
module or a new public definition without a docstring fails at once; there is no list of the files done any
more (the ``DONE`` tuple that grew while the files were being documented).
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mia_core"


def _decorator_names(node) -> set[str]:
    names = set()
    for d in node.decorator_list:
        d = d.func if isinstance(d, ast.Call) else d
        names.add(d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", ""))
    return names


def _covered_elsewhere(node) -> bool:
    """A property's setter / deleter and an ``@overload`` stub: the main definition carries the docstring."""
    return bool(_decorator_names(node) & {"setter", "deleter", "overload"})


def _top_level(body):
    """Module-level statements, looking into module-level ``if`` / ``try`` blocks."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _top_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body + node.orelse + node.finalbody
                                  + [s for h in node.handlers for s in h.body])
        else:
            yield node


DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def public_definitions(path: Path) -> list[tuple[str, bool]]:
    """``(qualified name, has a docstring)`` for each public definition of one module, in source order."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in _top_level(tree.body):
        if not isinstance(node, DEFS) or node.name.startswith("_") or _covered_elsewhere(node):
            continue
        out.append((f"{node.name}:{node.lineno}", ast.get_docstring(node) is not None))
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, DEFS) and not item.name.startswith("_") and not _covered_elsewhere(item):
                    out.append((f"{node.name}.{item.name}:{item.lineno}", ast.get_docstring(item) is not None))
    return out


def modules(root: Path = PACKAGE) -> list[str]:
    """Every module of the package, as a path relative to ``mia_core/``."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.py"))


def missing(files) -> list[str]:
    """``file: name:line`` for each public definition of ``files`` (relative to ``mia_core/``) without a
    docstring."""
    return [f"{f}: {name}" for f in files for name, has in public_definitions(PACKAGE / f) if not has]


def test_the_walk_covers_the_whole_package():
    """Not a vacuous pass: every package of the engine is walked and hundreds of public definitions seen."""
    files = modules()
    for f in ("__init__.py", "cli/__init__.py", "cli/common.py", "attacks/base.py", "runs/results.py",
              "neighbours/base.py", "assets/demo/make_demo_data.py"):
        assert f in files, f
    assert {f.split("/")[0] for f in files if "/" in f} >= {
        "api", "assets", "attacks", "cache", "cli", "data", "dataset_inference", "documents", "engines", "metrics",
        "mlm", "models", "neighbours", "pipeline", "reports", "runs", "smia", "stats", "targets"}
    assert sum(len(public_definitions(PACKAGE / f)) for f in files) > 500


def test_every_public_definition_of_the_engine_has_a_docstring():
    assert missing(modules()) == []


def test_the_walk_sees_public_definitions_and_skips_private_ones(tmp_path):
    src = tmp_path / "m.py"
    src.write_text('def f():\n    """Doc."""\n\n\ndef g():\n    pass\n\n\ndef _h():\n    pass\n\n\n'
                   'class C:\n    def m(self):\n        pass\n\n    def _p(self):\n        pass\n\n'
                   '    @property\n    def x(self):\n        """X."""\n\n    @x.setter\n    def x(self, v):\n'
                   '        pass\n\n\nif True:\n    def k():\n        def inner():\n            pass\n')
    assert public_definitions(src) == [("f:1", True), ("g:5", False), ("C:13", False), ("C.m:14", False),
                                       ("C.x:21", True), ("k:30", False)]


if __name__ == "__main__":  # the count over the whole package: python tests/test_docstrings.py
    everything = [d for f in modules() for d in public_definitions(PACKAGE / f)]
    gaps = missing(modules())
    print(f"{len(everything)} public definitions, {len(gaps)} without a docstring")
    print("\n".join(gaps))
