"""The bundled demo (mia_core.demo, mia_core/assets/demo): three disjoint text sets and a committed LoRA
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
from mia_core.demo import demo_dataset, demo_paths, demo_population
from mia_core.metrics import evaluate
from mia_core.models import TARGET_MARKER, load_causal_lm
from mia_core.stats import compute_stats

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
    t_stats = compute_stats(target, texts, use_cache=False)
    r_stats = compute_stats(ref, texts, use_cache=False)
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
