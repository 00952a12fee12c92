"""The lock (``requirements-lock.txt``, ``tools/lock.py``): made from today's ``pyproject.toml``, every range
satisfied by its pin, every pin hashed, and the environment the tests run in is the lock, exactly."""
import importlib.metadata as md
import re
import shutil
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import lock  # noqa: E402

ENV = {"python_version": "3.11", "python_full_version": lock.PYTHON, "sys_platform": "linux",
       "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix", "implementation_name": "cpython",
       "platform_python_implementation": "CPython"}


def _requirements() -> list[Requirement]:
    spec = lock.inputs()
    lines = list(spec["dependencies"]) + [r for extra in spec["optional-dependencies"].values() for r in extra]
    lines += spec["models"] + [spec["torch"]]
    reqs = [Requirement(line) for line in lines]
    return [r for r in reqs if lock.canonical(r.name) != "mia-dashboard"
            and (r.marker is None or r.marker.evaluate({**ENV, "extra": ""}))]


def test_the_lock_was_made_from_todays_pyproject():
    assert lock.check() == []


def test_every_range_of_pyproject_is_satisfied_by_its_pin():
    pins = lock.pins()
    for req in _requirements():
        name = lock.canonical(req.name)
        assert name in pins, f"{req} is not in the lock"
        assert req.specifier.contains(Version(pins[name]), prereleases=True), f"{req}: the lock pins {pins[name]}"


def test_every_pin_carries_its_hash():
    text = lock.LOCK.read_text(encoding="utf-8")
    blocks = re.split(r"\n(?=[a-z0-9])", text)
    pinned = [b for b in blocks if lock._PIN.match(b)]
    assert len(pinned) == len(lock.pins()) >= 90
    assert all("--hash=sha256:" in b for b in pinned), [b.split()[0] for b in pinned if "--hash" not in b]


def test_the_tests_run_in_the_locked_environment():
    """``./setup.sh`` installs the lock exactly: each pin at its version, nothing the lock does not name (but the
    project itself and pip, which the virtual environment brings). Not where setup.sh installed the ranges (a
    platform the lock is not for: it leaves ``.venv/mia-unlocked``)."""
    if (Path(sys.prefix) / "mia-unlocked").exists():
        pytest.skip((Path(sys.prefix) / "mia-unlocked").read_text(encoding="utf-8").strip())
    pins = lock.pins()
    import sysconfig

    # the virtual environment's own site-packages: not what a test put on sys.path (Ray adds its thirdparty_files)
    where = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    installed = {lock.canonical(d.metadata["Name"]): d.version for d in md.distributions(path=where)}
    wrong = {n: (v, installed.get(n)) for n, v in pins.items() if installed.get(n) != v}
    assert not wrong, f"installed versions differ from the lock (run ./setup.sh): {wrong}"
    extra = sorted(set(installed) - set(pins) - {"mia-dashboard", "pip"})
    assert not extra, f"installed but not in the lock: {extra}"


def test_a_changed_range_makes_the_lock_stale(tmp_path, monkeypatch):
    """The check is not vacuous: a range moved in pyproject.toml, or another model wheel, is reported."""
    copy = tmp_path / "pyproject.toml"
    shutil.copy(lock.PYPROJECT, copy)
    copy.write_text(copy.read_text(encoding="utf-8").replace('"transformers>=5.0,<6"', '"transformers>=5.0,<5.30"'),
                    encoding="utf-8")
    monkeypatch.setattr(lock, "PYPROJECT", copy)
    (problem,) = lock.check()
    assert "pyproject.toml" in problem and "tools/lock.py --write" in problem
    monkeypatch.setattr(lock, "PYPROJECT", ROOT / "pyproject.toml")
    models = tmp_path / "requirements-models.txt"
    models.write_text(lock.MODELS.read_text(encoding="utf-8").replace("0.1.2", "0.1.3"), encoding="utf-8")
    monkeypatch.setattr(lock, "MODELS", models)
    assert len(lock.check()) == 1


@pytest.mark.parametrize("text,expected", [("torch==2.13.0+cpu \\\n    --hash=sha256:ab\n", {"torch": "2.13.0+cpu"}),
                                           ("Jinja2==3.1.6 \\\n", {"jinja2": "3.1.6"}), ("# x==1\n", {})])
def test_pins_reads_the_lock_format(text, expected):
    assert lock.pins(text) == expected
