"""``mia --help`` stays fast: building the CLI parser imports none of the heavy libraries.

The parser needs names only (commands, flags, attack names and parameters, defaults); pandas, torch,
transformers, sklearn, scipy, plotly, pyarrow ... are imported by the commands that use them.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "torch", "transformers", "sklearn", "scipy", "peft", "plotly", "pyarrow", "bitsandbytes", "ray",
         "sentence_transformers")


def _python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_building_the_parser_imports_no_heavy_library():
    code = ("import sys, mia_core.cli as c; c.build_parser(); "
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = _python("-c", code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_help_and_version_import_no_heavy_library():
    for argv in (["--help"], ["run", "--help"], ["--version"]):
        code = ("import sys, runpy\n"
                f"sys.argv = ['mia', *{argv!r}]\n"
                "try:\n    runpy.run_module('mia_core', run_name='__main__')\n"
                "except SystemExit as e:\n    code = e.code\n"
                f"print('HEAVY', sorted(m for m in {HEAVY!r} if m in sys.modules), code, file=sys.stderr)")
        out = _python("-c", code)
        assert "HEAVY [] 0" in out.stderr, (argv, out.stderr[-2000:])


def test_help_lists_every_command():
    out = _python("-m", "mia_core", "--help")
    assert out.returncode == 0, out.stderr
    from mia_core.cli import COMMANDS, build_parser

    import argparse

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert len(sub.choices) >= len(COMMANDS)
    for name in sub.choices:
        assert name in out.stdout, name
    for name in ("run", "infer-dataset", "cache", "make-target", "make-references", "build-proposer", "documents",
                 "mlm", "shift"):
        assert name in out.stdout, name
