"""The installed project (``pyproject.toml``): the ``mia`` console script, ``python -m mia_core``
and the bundled demo work from any working directory, not only from the repository root.

Each command runs in a subprocess whose working directory is a fresh temporary folder, so
nothing is found relative to the checkout: mia_core comes from the installed package
(``pip install -e .[all]`` in setup.sh) and the demo from its package data.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mia_core

MIA = Path(sys.executable).with_name("mia")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)  # only what is installed, nothing from the checkout
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_mia_version_from_another_directory(tmp_path):
    assert MIA.exists(), f"no `mia` console script next to {sys.executable}: run setup.sh (pip install -e .[all])"
    r = _run([str(MIA), "--version"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert mia_core.__version__ in r.stdout + r.stderr


def test_python_m_mia_core_help_from_another_directory(tmp_path):
    r = _run([sys.executable, "-m", "mia_core", "--help"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "run" in r.stdout and "usage" in r.stdout.lower()


def test_demo_assets_resolve_from_another_directory(tmp_path):
    code = (
        "import json; from mia_core.targets.demo import demo_paths; "
        "print(json.dumps({k: str(v) for k, v in demo_paths().items()}))"
    )
    r = _run([sys.executable, "-c", code], tmp_path)
    assert r.returncode == 0, r.stderr
    paths = json.loads(r.stdout)
    assert paths["reference"] == "smollm2"
    for key in ("members", "nonmembers", "population", "target"):
        p = Path(paths[key])
        assert p.is_absolute() and p.exists(), (key, p)
        assert not p.is_relative_to(tmp_path)
    assert (Path(paths["target"]) / "adapter_model.safetensors").is_file()
    assert Path(paths["members"]).parent.parent.name == "assets"
