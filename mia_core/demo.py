"""The bundled demo: a controlled target with known members, ready offline.

``mia_core/assets/demo/`` (package data) holds 300 passages of 40-60 words from five
public-domain novels (Project Gutenberg; titles, authors and the exact split in
``mia_core/assets/README.md``), dealt at random (seed 0) into three distribution-matched sets
of 100 (every set draws 20 from every book):

* ``members.txt``: the texts the demo target was fine-tuned on (label 1),
* ``nonmembers.txt``: never trained on (label 0; also the held-out set of the fine-tune),
* ``population.txt``: more never-trained-on texts, for calibrating thresholds
  (Mireshghallah et al. 2022 §2.4) without touching the evaluation sets,

and ``target/``, a LoRA adapter on the embedded SmolLM2-135M-Instruct trained on the members
by ``python -m mia_core make-target`` (the command is in ``target/training_log.json``). Its
base, the embedded model, is the natural reference model.
"""
from __future__ import annotations


from .errors import DataError
from .models import EMBEDDED_NAME, TARGET_MARKER
from .paths import ASSETS

DEMO_DIR = ASSETS / "demo"


def demo_paths() -> dict:
    """``{"members", "nonmembers", "population", "target": Path, "reference": "smollm2"}``.

    Raises ``DataError`` when a file of the demo is missing (e.g. an install without assets).
    """
    paths = {
        "members": DEMO_DIR / "members.txt",
        "nonmembers": DEMO_DIR / "nonmembers.txt",
        "population": DEMO_DIR / "population.txt",
        "target": DEMO_DIR / "target",
    }
    missing = [str(p) for k, p in paths.items() if not (p / TARGET_MARKER if k == "target" else p).exists()]
    if missing:
        raise DataError(f"the bundled demo is incomplete, missing: {', '.join(missing)}.")
    return {**paths, "reference": EMBEDDED_NAME}


def demo_dataset():
    """The demo members (label 1) and non-members (label 0) as a :class:`mia_core.data.Dataset`."""
    from .data import load_dataset

    p = demo_paths()
    return load_dataset(members=p["members"], nonmembers=p["nonmembers"], mode="lines")


def demo_population() -> list[str]:
    """The demo population texts (known non-members kept apart for threshold calibration)."""
    from .data import read_texts

    return [r.text for r in read_texts(demo_paths()["population"], mode="lines")]


def demo_documents() -> tuple[list, list]:
    """The Document-audit demo: ``(member_documents, nonmember_documents)``, 20 of each.

    Each document is five demo passages of one novel in reading order (about 250 words,
    ``assets/demo/documents.json``, built by ``assets/demo/make_demo_documents.py``): member
    documents only from ``members.txt``, which the demo target was fine-tuned on, non-member
    documents only from ``nonmembers.txt``. Short documents, not whole books: a target that had
    read whole books would take hours to build and to audit on a CPU, and the steps of Meeus
    et al. (2024) are the same at any length. Raises ``DataError`` when a file is missing.
    """
    import json

    from .documents import Document

    paths = demo_paths()
    spec_path = DEMO_DIR / "documents.json"
    if not spec_path.exists():
        raise DataError(f"the bundled demo is incomplete, missing: {spec_path}.")
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    out = []
    for role in ("members", "nonmembers"):
        lines = [ln for ln in paths[role].read_text(encoding="utf-8").splitlines() if ln.strip()]
        out.append([Document(name=d["name"], text="\n\n".join(lines[i] for i in d["lines"]),
                             source=f"{paths[role].name} lines {', '.join(str(i + 1) for i in d['lines'])} ({d['book']})",
                             strip={"stripped": False, "header_chars": 0, "footer_chars": 0, "title": None,
                                    "encoding": "utf-8", "notes": []})
                    for d in spec["sets"][role]])
    return out[0], out[1]
