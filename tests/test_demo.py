"""The bundled demo (mia_core.targets.demo, mia_core/assets/demo): three disjoint text sets and a committed LoRA
target on the embedded SmolLM2 that loads offline and whose membership the baseline attacks
detect: LOSS AUC >= 0.7, and the reference attack (the base SmolLM2 as reference) at least as
strong.

Scoring 200 texts with the 135M model twice (target + reference) takes minutes on a 2-core
CPU, so the attack check uses a fixed subset: the first ``N_EVAL`` members and the first
``N_EVAL`` non-members of the (already shuffled) demo files. The full 100 + 100 figures are
in mia_core/assets/README.md.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from mia_core.attacks import REGISTRY, AttackInputs
from mia_core.targets.demo import demo_dataset, demo_paths, demo_population
from mia_core.metrics import evaluate
from mia_core.models import TARGET_MARKER, load_causal_lm
from mia_core.stats import compute_stats, settings_for

pytestmark = pytest.mark.slow

N_EVAL = 50


@pytest.fixture(scope="module", autouse=True)
def _offline():
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    yield
    mp.undo()


def test_demo_sets_are_disjoint_and_complete():
    p = demo_paths()
    assert p["reference"] == "smollm2"
    ds = demo_dataset()
    assert ds.n_members == 100 and ds.n_nonmembers == 100
    pop = demo_population()
    assert len(pop) == 100
    mem, non = set(ds.members()), set(ds.nonmembers())
    assert not (mem & non) and not (mem & set(pop)) and not (non & set(pop))
    words = [len(t.split()) for t in ds.texts + pop]
    assert min(words) >= 40 and max(words) <= 60
    meta = json.loads((p["target"] / TARGET_MARKER).read_text())
    assert meta["base"] == "smollm2" and meta["method"] == "lora"
    log = json.loads((p["target"] / "training_log.json").read_text())
    assert log["n_members"] == 100 and log["command"].startswith("python -m mia_core make-target")
    size = sum(f.stat().st_size for f in p["target"].iterdir())
    assert size < 12 * 2**20  # small enough to commit


@pytest.fixture(scope="module")
def scored():
    ds = demo_dataset()
    mem, non = ds.members()[:N_EVAL], ds.nonmembers()[:N_EVAL]
    texts = mem + non
    target = load_causal_lm(str(demo_paths()["target"]))
    ref = load_causal_lm("smollm2")
    assert target.base_spec == "smollm2"
    # through the statistics cache: the dataset-inference demo tests of the same unit (conftest.GROUPS) score
    # these texts with these two models too (the base as their negative control), and whichever runs first
    # computes them. The base is scored as a run scores a reference: with the target's prefix (settings_for)
    t_stats = compute_stats(target, texts)
    r_stats = compute_stats(ref, texts, settings_for(ref, target))
    labels = np.array([1] * len(mem) + [0] * len(non))
    same = target.same_tokenizer(ref)
    return texts, labels, t_stats, r_stats, same


def test_demo_target_is_not_its_base(scored):
    texts, labels, t_stats, r_stats, same = scored
    assert same
    t = np.array([s.loss for s in t_stats])
    r = np.array([s.loss for s in r_stats])
    # members got much likelier under the target; non-members stayed about as likely
    assert (r - t)[labels == 1].mean() > (r - t)[labels == 0].mean() + 0.3


def test_demo_membership_is_detectable(scored):
    texts, labels, t_stats, r_stats, same = scored
    loss = evaluate(labels, REGISTRY["loss"].score(AttackInputs(texts, target=t_stats)), n_bootstrap=0)
    ref = evaluate(labels, REGISTRY["ref"].score(
        AttackInputs(texts, target=t_stats, reference=r_stats, same_tokenizer=same)), n_bootstrap=0)
    assert loss["auc"] >= 0.7, loss["auc"]
    assert ref["auc"] >= loss["auc"] - 0.02, (ref["auc"], loss["auc"])


# ------------------------------------------------------------------ Document-audit demo
def test_demo_documents_are_member_or_nonmember_passages():
    from mia_core.documents import demo_documents

    members, nonmembers = demo_documents()
    assert len(members) == 20 and len(nonmembers) == 20
    ds = demo_dataset()
    mem, non = set(ds.members()), set(ds.nonmembers())
    for docs, own in ((members, mem), (nonmembers, non)):
        for d in docs:
            parts = d.text.split("\n\n")
            assert len(parts) == 5 and all(p in own for p in parts), d.name  # a member document is all members
    names = [d.name for d in members + nonmembers]
    assert len(set(names)) == 40
    # four documents of each kind per novel, so the two sets are matched book for book
    books = lambda docs: sorted(d.name.rsplit("_", 1)[0] for d in docs)  # noqa: E731
    assert books(members) == books(nonmembers) and len(set(books(members))) == 5


def test_documents_demo_cli_detects_the_member_documents(tmp_path):
    """``mia documents --demo``: the demo target, 5-fold cross-validation over the 20 + 20 demo
    documents; RatioNormTF + AggFE separates them (0.91 with the defaults; here fewer trees and
    pipelines, to keep the test short), and TPR at 1 %/10 % FPR is not estimable on 4 held-out
    non-members per fold, so it reads n/e."""
    from helpers import mia

    out = tmp_path / "docs"
    r = mia("documents", "--demo", "--quiet", "--no-baselines", "--partial-lengths", "none", "--trees", "100",
                "--normalization", "nonorm,rationorm-tf", "--features", "agg", "--out", out)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "20 member and 20 non-member documents" in r.stderr
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith(("NoNorm", "RatioNormTF"))]
    assert len(rows) == 2 and all(ln.count("n/e") == 2 for ln in rows), r.stdout
    metrics = json.loads((out / "document_metrics.json").read_text())
    best = max(m["auc_mean"] for m in metrics["pipelines"].values())
    assert best >= 0.75, {p: m["auc_mean"] for p, m in metrics["pipelines"].items()}
    assert metrics["model"]["name"] == "demo target"


# ------------------------------------------------------------------ Masked-LM audit demo
def test_mlm_demo_target_is_shipped_with_its_recipe():
    from mia_core.targets.demo import MLM_TARGET_COMMAND, mlm_demo_paths

    p = mlm_demo_paths()
    assert p["reference"] == "embedded"
    meta = json.loads((p["target"] / "proposer.json").read_text())
    assert meta["command"] == MLM_TARGET_COMMAND
    # trained on the members, held out on the non-members: the members' masked-token loss fell well below
    assert meta["train"]["loss"] < meta["held_out"]["loss"] - 0.3, (meta["train"], meta["held_out"])
    size = sum(f.stat().st_size for f in p["target"].iterdir())
    assert size < 5 * 2**20  # the top layer and the head in fp16


def test_mlm_demo_cli_separates_members(tmp_path):
    """``mia mlm --demo`` with K = 2 (K = 10 by default: LR AUC 0.931, loss 0.746; README): the
    likelihood ratio finds the members, and beats the target's loss alone, as in the paper."""
    from helpers import mia

    out = tmp_path / "mlm"
    r = mia("mlm", "--demo", "--masks", "2", "--bootstrap", "100", "--quiet", "--out", out)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "100 members, 100 non-members, 100 population texts" in r.stdout
    metrics = json.loads((out / "metrics.json").read_text())
    lr, loss = metrics["likelihood_ratio"]["auc"], metrics["loss"]["auc"]
    assert lr >= 0.8 and lr > loss + 0.1, (lr, loss)


def test_loading_the_demo_target_reports_its_steps():
    """What the dashboard's loading bar shows: each step of loading a LoRA target, in order (a cold cache would
    add the GGUF conversion's steps before them): the base and the adapter the first time, its merged copy once
    there is one (``tests/test_startup.py`` loads both ways). Weights read now: a deferred load has two steps
    (``tests/test_deferred_load.py``)."""
    seen = []
    load_causal_lm(str(demo_paths()["target"]), reuse=False, progress=lambda m, f: seen.append((m, f)),
                   defer_weights=False)
    msgs = [m for m, _ in seen]
    if any(m.startswith("loading the merged copy") for m in msgs):
        steps = [next(i for i, m in enumerate(msgs) if m.startswith("loading the merged copy"))]
    else:
        steps = [next(i for i, m in enumerate(msgs) if m.startswith("loading the base model")),
                 msgs.index("applying the LoRA adapter")]
    assert 0 < steps[0] and steps == sorted(steps) and steps[-1] < len(msgs) - 1 and msgs[-1].startswith("loaded")
    fracs = [f for _, f in seen]
    assert fracs == sorted(fracs) and fracs[-1] == 1.0
