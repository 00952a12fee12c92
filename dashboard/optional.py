"""Engine modules that other parts of the project add: used when present, "not available yet" otherwise.

* ``mia_core.demo``        bundled demo set + fine-tuned demo target (``demo_paths()``).
* ``mia_core.neighbours``  neighbour generation (neighbourhood attack, SMIA).
* ``mia_core.modify``      modified-member comparison.

Each accessor returns the module (or a value from it) or ``None``; an ``ImportError`` inside the
module itself is treated as "not available" too, so a half-written module never breaks a page.
"""
from __future__ import annotations

import importlib
from pathlib import Path

from mia_core.paths import ASSETS


def module(name: str):
    """``mia_core.<name>`` or None when it does not exist (yet)."""
    try:
        return importlib.import_module(f"mia_core.{name}")
    except ImportError:
        return None


def demo_paths() -> dict | None:
    """``mia_core.demo.demo_paths()`` when the demo exists and its files are there, else None."""
    mod = module("demo")
    if mod is None or not hasattr(mod, "demo_paths"):
        return None
    try:
        paths = mod.demo_paths()
    except Exception:  # noqa: BLE001 - a missing/partial demo is "not available"
        return None
    if not paths or not paths.get("members") or not paths.get("nonmembers"):
        return None
    if not all(Path(str(paths[k])).exists() for k in ("members", "nonmembers")):
        return None
    return paths


def demo_reference(demo: dict) -> str:
    """The demo's reference model spec (the embedded model unless the demo names another)."""
    return str(demo.get("reference") or "smollm2")


def demo_corpus_files() -> list[Path]:
    """The bundled demo corpus (``mia_core/assets/demo/*.txt``) used as the default R^TF reference corpus."""
    folder = ASSETS / "demo"
    return sorted(p for p in folder.glob("*.txt") if p.is_file()) if folder.is_dir() else []


def has_attack(name: str) -> bool:
    from mia_core.attacks import REGISTRY

    return name in REGISTRY
