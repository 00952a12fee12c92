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

from pathlib import Path

from ..errors import DataError
from ..models import EMBEDDED_NAME, TARGET_MARKER
from ..paths import ASSETS

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


def installed_demo() -> dict | None:
    """:func:`demo_paths` when the demo's files are installed, else None (a page then offers no demo)."""
    try:
        paths = demo_paths()
    except DataError:
        return None
    return paths if all(Path(str(paths[k])).exists() for k in ("members", "nonmembers")) else None


def demo_reference(demo: dict) -> str:
    """The demo's reference model spec (the embedded model unless the demo names another)."""
    return str(demo.get("reference") or EMBEDDED_NAME)


def demo_corpus_files() -> list[Path]:
    """The bundled demo texts (``mia_core/assets/demo/*.txt``): the default frequency corpus of the Inspect
    page and the Controlled-experiment page's corpus."""
    return sorted(p for p in DEMO_DIR.glob("*.txt") if p.is_file()) if DEMO_DIR.is_dir() else []


def demo_dataset():
    """The demo members (label 1) and non-members (label 0) as a :class:`mia_core.data.Dataset`."""
    from ..data import load_dataset

    p = demo_paths()
    return load_dataset(members=p["members"], nonmembers=p["nonmembers"], mode="lines")


def demo_population() -> list[str]:
    """The demo population texts (known non-members kept apart for threshold calibration)."""
    from ..data import read_texts

    return [r.text for r in read_texts(demo_paths()["population"], mode="lines")]


MLM_TARGET_DIR = DEMO_DIR / "mlm_target"
MLM_TARGET_STEPS = 100
MLM_TARGET_LR = 3e-3
MLM_TARGET_COMMAND = "python -m mia_core build-proposer --mlm-demo-target"


def mlm_demo_paths() -> dict:
    """The Masked-LM audit demo (Mireshghallah et al. 2022 in miniature): ``{"members", "nonmembers",
    "population", "target": Path, "reference": "embedded"}``.

    The reference is the embedded masked LM (``mia_core.neighbours.proposer``: MiniLM-L6 with a
    masked-LM head trained on the eight bundled corpus novels, none of them a demo book); the
    target is that model trained further on the demo's 100 member passages
    (``assets/demo/mlm_target``, made by :func:`build_mlm_demo_target`). Non-members and the
    population come from the same five novels and were never trained on. Raises ``DataError``
    when a file is missing.
    """
    from ..neighbours.proposer import META, WEIGHTS

    p = demo_paths()
    missing = [str(MLM_TARGET_DIR / f) for f in (WEIGHTS, META) if not (MLM_TARGET_DIR / f).exists()]
    if missing:
        raise DataError(f"the bundled masked-LM demo is incomplete, missing: {', '.join(missing)}.")
    return {"members": p["members"], "nonmembers": p["nonmembers"], "population": p["population"],
            "target": MLM_TARGET_DIR, "reference": "embedded"}


def build_mlm_demo_target(out=None, *, steps: int = MLM_TARGET_STEPS, lr: float = MLM_TARGET_LR, seed: int = 0,
                          progress=None) -> dict:
    """Fine-tune the embedded masked LM on the demo's members (the same parameters its own training
    changed: the top encoder layer and the masked-LM head; BERT's masking recipe, 32 x 128-token
    chunks per step, the members run together so that every member token is in a chunk) and write
    the delta to ``out`` (default ``assets/demo/mlm_target``). The non-members are the held-out
    set. Returns the metadata written beside it."""
    from ..neighbours.proposer import ASSET_DIR, build_proposer
    from ..progress import noop

    p = demo_paths()

    def read(path):
        return "\n\n".join(ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip())

    return build_proposer(
        out or MLM_TARGET_DIR, steps=steps, lr=lr, seed=seed, init=ASSET_DIR, documents=[read(p["members"])],
        held_out=[read(p["nonmembers"])], progress=progress or noop,
        data="mia_core/assets/demo/members.txt (the 100 demo member passages), starting from the embedded proposer",
        command=MLM_TARGET_COMMAND + (f" --steps {steps}" if steps != MLM_TARGET_STEPS else "")
        + (f" --seed {seed}" if seed else ""),
    )


# --------------------------------------------------------------------------- known truth

# The demo is the one audit whose answer is known: its target was fine-tuned on members.txt, so a healthy
# run gives these AUCs (the default settings: fp32, no quantisation, the default window and prefix; 100 + 100
# texts; measured by `mia run --demo`, the same on an AMD EPYC and an Intel Xeon to 3 decimals). A run that
# scores far from them (KNOWN_TRUTH_TOLERANCE) audited something else than the demo target: a broken model
# load scored LOSS 0.499 and ref 0.529 under a green blind-baseline banner.
DEMO_EXPECTED_AUC = {"loss": 0.840, "zlib": 0.764, "lowercase": 0.730, "min_k": 0.748, "min_k_pp": 0.842,
                     "ref": 0.980}  # scored as the target was trained (issue 28: its first token too)
KNOWN_TRUTH_TOLERANCE = 0.05


def _demo_texts() -> tuple[set, set] | None:
    from ..cache import text_hash

    try:
        p = demo_paths()
    except DataError:
        return None
    sets = []
    for role in ("members", "nonmembers"):
        sets.append({text_hash(ln.strip()) for ln in p[role].read_text(encoding="utf-8").splitlines() if ln.strip()})
    return sets[0], sets[1]


def is_demo_run(dataset, target, reference=None, config=None) -> bool:
    """Whether a run is the bundled demo as shipped: the demo target (full precision, default window and
    prefix, no condition), on exactly the demo's members and non-members."""
    from pathlib import Path

    from ..cache import text_hash

    try:
        if target.source is None or Path(target.source).resolve() != (DEMO_DIR / "target").resolve():
            return False
    except OSError:
        return False
    if target.quantize != "none" or target.dtype not in ("fp32", "bf16"):
        return False
    st = getattr(config, "stats", None)
    if st is not None and (st.context or st.prefix != "auto" or st.condition):
        return False
    demo = _demo_texts()
    if demo is None:
        return False
    labels = [int(x) for x in dataset.labels]
    mem = {text_hash(t) for t, y in zip(dataset.texts, labels) if y == 1}
    non = {text_hash(t) for t, y in zip(dataset.texts, labels) if y == 0}
    return (mem, non) == demo


def known_truth(metrics: dict, reference=None) -> dict:
    """Compare a demo run's AUCs with :data:`DEMO_EXPECTED_AUC`: ``{"ok", "message", "attacks": {name:
    {"auc", "expected"}}}``. ``ref`` is compared only when the reference is the embedded SmolLM2."""
    rows, bad = {}, []
    for name, expected in DEMO_EXPECTED_AUC.items():
        m = metrics.get(name)
        if not isinstance(m, dict) or m.get("auc") is None:
            continue
        if name == "ref" and (reference is None or getattr(reference, "source", None) != EMBEDDED_NAME):
            continue
        auc = float(m["auc"])
        rows[name] = {"auc": round(auc, 4), "expected": expected}
        if not abs(auc - expected) <= KNOWN_TRUTH_TOLERANCE:
            bad.append(f"{name} {auc:.3f} (expected {expected:.3f})")
    if bad:
        message = ("THESE FIGURES ARE WRONG. This is the bundled demo, whose answer is known, and the run is far "
                   f"from it: {', '.join(bad)}, tolerance {KNOWN_TRUTH_TOLERANCE}. The models this run used are "
                   "not the demo's as shipped (a broken load, a damaged install or cache): restart, clear the "
                   "cache (`mia cache clear`) and run the demo again.")
    else:
        message = (f"Known truth checked: the demo's AUCs match a healthy run's ({', '.join(rows)}, within "
                   f"{KNOWN_TRUTH_TOLERANCE}).")
    return {"ok": not bad, "message": message, "attacks": rows}
