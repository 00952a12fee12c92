"""The Ray engine (``--engine ray``) gives the local engine's numbers, on a real local Ray cluster.

``ray.init(num_cpus=2)`` and two one-thread workers, on a random two-layer Llama (the SmolLM2
tokenizer): the baselines, the neighbourhood attack and a document audit (books cut into window
ranges that go to different workers) score within 1e-5 of the local path; what the workers
computed is in the driver's cache (a local re-run makes no model call); and the faults the issue
names stop with one line: a model a worker cannot load, an unreachable cluster, no Ray installed.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.ray]

pytest.importorskip("ray.data")

TOL = 1e-5


@pytest.fixture(scope="module")
def ray_cluster():
    import ray

    from mia_core.engines.ray_data import _quiet_ray_logs

    _quiet_ray_logs()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture()
def engine(ray_cluster):
    from mia_core.engines import make_engine

    return make_engine("ray", workers=2, batch_texts_tokens=256)  # small units: every call spreads over both


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    from helpers import empty_cache

    monkeypatch.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path / "cache")))


def _demo(n: int):
    from mia_core.targets.demo import demo_dataset

    ds = demo_dataset()
    mem = [t for t, y in zip(ds.texts, ds.labels) if y == 1][:n]
    non = [t for t, y in zip(ds.texts, ds.labels) if y == 0][:n]
    return mem, non


def _max_diff(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert np.array_equal(np.isnan(a), np.isnan(b))
    return float(np.nanmax(np.abs(a - b))) if a.size else 0.0


def test_run_scores_equal_the_local_engine(tiny_lm, engine):
    """Baselines and the neighbourhood attack (its neighbours scored on the workers); then the cache the
    driver filled makes a local re-run a pure cache read."""
    from mia_core.data import Dataset
    from mia_core.engines import use_engine
    from mia_core.pipeline import RunConfig, run_attacks
    from mia_core.stats import compute_stats

    mem, non = _demo(8)
    ds = Dataset(texts=mem + non, labels=[1] * 8 + [0] * 8, ids=[f"t{i}" for i in range(16)])
    attacks = ("loss", "zlib", "min_k", "min_k_pp", "neighbourhood")
    params = {"neighbourhood": {"n": 4}}
    local = run_attacks(ds, tiny_lm, config=RunConfig(attacks=attacks, params=params, use_cache=False, n_bootstrap=0))
    with use_engine(engine):
        remote = run_attacks(ds, tiny_lm, config=RunConfig(attacks=attacks, params=params, n_bootstrap=0))
    assert engine.last["units"] >= 2  # the last pass (neighbours) really was cut into several units
    for a in attacks:
        assert _max_diff(local.scores[a], remote.scores[a]) <= TOL, a
    # the driver stored every text the workers scored: a local pass over them is all cache hits
    compute_stats(tiny_lm, mem + non)
    assert compute_stats.last_cache.hits == len(mem + non) and compute_stats.last_cache.misses == 0


def test_document_audit_equals_the_local_engine(tiny_lm, engine):
    """Books of about 1,500 tokens in windows of 64: each book's window ranges go to both workers
    and are put back in order (the vocabulary-probability sums included)."""
    from mia_core.documents import run_document_audit
    from mia_core.engines import use_engine

    mem, non = _demo(24)
    members = [" ".join(mem[i:i + 6]) for i in range(0, 24, 6)]
    nonmembers = [" ".join(non[i:i + 6]) for i in range(0, 24, 6)]
    kw = dict(context=64, folds=2, n_estimators=20, partial_lengths=None, baselines=True,
              baseline_attacks=("loss", "zlib"), baseline_seq_len=64, baseline_max_sequences=4)
    local = run_document_audit(members, nonmembers, tiny_lm, use_cache=False, **kw)
    with use_engine(engine):
        remote = run_document_audit(members, nonmembers, tiny_lm, **kw)
    for s_loc, s_rem in zip(local._stats, remote._stats):
        assert np.array_equal(s_loc.token_ids, s_rem.token_ids)
        for f in ("logprob", "max_logprob", "mu", "sigma"):
            assert _max_diff(getattr(s_loc, f), getattr(s_rem, f)) <= TOL, f
        assert np.abs(s_loc.vocab_prob_sum - s_rem.vocab_prob_sum).max() <= 1e-4  # sums of ~1,500 probabilities
    prob = [c for c in local.scores.columns if c not in ("name", "label", "fold", "n_tokens", "source")]
    assert prob
    for c in prob:
        if local.scores[c].dtype.kind == "f":
            assert _max_diff(local.scores[c], remote.scores[c]) <= TOL, c


class _Stop(Exception):
    """An interrupt from the progress callback (what Ctrl-C or a closed page does to a run)."""


def _stop_half_way(lm, engine, book: str, st):
    """Score ``book`` on Ray, interrupted once 60 % of its tokens are back: ``(cache, hash, partial entry)``.

    Only the windows done *from the book's start* are kept; the workers may return later ranges first (a
    busy machine), so a stop at 60 % can find none of them done yet. The stop then comes later (80 %, 95 %)
    on a fresh try; a stop that never keeps anything fails."""
    from mia_core.cache import ArrayCache, text_hash
    from mia_core.engines import use_engine
    from mia_core.stats import cache_settings, compute_stats

    cache, h = ArrayCache("stats", cache_settings(lm, st)), text_hash(book)
    part = None
    # the last try stops at the first report short of the end: the ranges can come back in bursts (a loaded
    # machine), so that no report falls between 60 % and 100 % and the pass simply finishes
    for at in (0.6, 0.8, 0.95, 1e-9):
        def stop(msg, frac, at=at):
            if at <= frac < 1:
                raise _Stop(msg)

        try:
            with use_engine(engine):
                compute_stats(lm, [book], st, progress=stop)
        except _Stop:
            part = cache.get_partial(h)
            if part is not None:
                break
        else:  # finished without a report in [at, 1): this test's own entry is removed, and the next try stops sooner
            cache._path(h).unlink(missing_ok=True)
    assert part is not None and int(part["done_windows"]) > 0, "nothing of the stopped book was kept"
    return cache, h, part


def test_a_book_stopped_half_way_resumes_from_the_windows_done(tiny_lm, engine):
    """A long text in window ranges, stopped once most of its tokens are back: the windows done from its
    start are in the cache's partial entry (the local engine's format); the re-run sends only the rest to
    the workers, and the whole equals the local engine's statistics. Done, the partial entry is gone."""
    from mia_core.engines import use_engine
    from mia_core.stats import StatsSettings, compute_stats, tokenize

    mem, _ = _demo(16)
    book = " ".join(mem)
    n = len(tokenize(tiny_lm, book))
    st = StatsSettings(context=64, vocab_probs=True)
    local = compute_stats(tiny_lm, [book], st, use_cache=False)[0]
    cache, h, part = _stop_half_way(tiny_lm, engine, book, st)
    done = int(part["done_windows"])
    assert np.isfinite(part["logprob"]).sum() >= done * 60  # windows of 63 predictions
    with use_engine(engine):
        got = compute_stats(tiny_lm, [book], st)[0]
    assert engine.last["tokens"] <= n - done * 63 + 1  # only the windows not done went to the workers
    assert np.array_equal(local.token_ids, got.token_ids)
    for f in ("logprob", "max_logprob", "mu", "sigma", "rank", "top_id"):
        assert _max_diff(getattr(local, f), getattr(got, f)) <= TOL, f
    assert np.abs(local.vocab_prob_sum - got.vocab_prob_sum).max() <= 1e-4
    assert cache.get_partial(h) is None


def test_the_local_engine_resumes_a_book_the_ray_engine_left_half_done(tiny_lm, engine):
    """The partial entry Ray writes is the local engine's own: a local re-run starts from its done windows
    (marked here, so that recomputing them would show) and computes the rest."""
    from mia_core.stats import StatsSettings, compute_stats

    mem, _ = _demo(16)
    book = " ".join(mem[::-1])
    st = StatsSettings(context=64)
    local = compute_stats(tiny_lm, [book], st, use_cache=False)[0]
    cache, h, part = _stop_half_way(tiny_lm, engine, book, st)
    done_to = int(np.nonzero(np.isfinite(part["logprob"]))[0].max()) + 1  # text tokens the done windows cover
    part["logprob"][1] = 123.0  # a mark a recomputation would overwrite
    cache.put_partial(h, part)
    got = compute_stats(tiny_lm, [book], st)[0]  # the local engine
    assert got.logprob[1] == np.float32(123.0)
    assert _max_diff(local.logprob[2:], got.logprob[2:]) <= TOL
    assert done_to < len(got.logprob) and cache.get_partial(h) is None


def test_masked_lm_audit_and_neighbour_generation_equal_the_local_engine(engine):
    """The masked-LM audit's energies (target and reference, K masks each, re-made on the workers from the
    seed) and the neighbour generator's proposals run on the workers with the local numbers."""
    from mia_core.targets.demo import mlm_demo_paths
    from mia_core.engines import use_engine
    from mia_core.mlm import run_mlm_audit
    from mia_core.neighbours import NeighbourSettings, make_generator

    demo = mlm_demo_paths()
    lines = [Path(demo[k]).read_text().splitlines()[:6] for k in ("members", "nonmembers", "population")]
    for recipe in ("sum", "released"):  # the released code's recipe masks int(0.15 T) tokens: the workers must too
        kw = dict(k=2, n_bootstrap=0, device="cpu", recipe=recipe)
        local = run_mlm_audit(*lines, str(demo["target"]), demo["reference"], cache=False, **kw)
        with use_engine(engine):
            remote = run_mlm_audit(*lines, str(demo["target"]), demo["reference"], **kw)
        assert engine.last["kind"] == "mlm" and remote.settings["recipe"] == recipe
        for c in local.scores.columns:
            if local.scores[c].dtype.kind == "f":
                assert _max_diff(local.scores[c], remote.scores[c]) <= TOL, (recipe, c)

    gen = make_generator(NeighbourSettings(n=6), device="cpu")
    texts = lines[0]
    here = gen.generate(texts, use_cache=False)
    with use_engine(engine):
        there = gen.generate(texts)
    assert engine.last["kind"] == "neighbours"
    assert [[n.text for n in a] for a in here] == [[n.text for n in b] for b in there]


def test_the_workers_and_their_model_are_kept_between_calls_and_engines(tiny_lm, tiny_llama, ray_cluster, tmp_path):
    """A second call, even from a new engine, runs on the same two worker processes and builds no model (a
    new process imports torch and loads the model: seconds per pass); another model is built once per worker,
    and the first model again after it. Every call gives the local numbers."""
    from mia_core.engines import make_engine, use_engine
    from mia_core.models import load_causal_lm
    from mia_core.stats import StatsSettings, compute_stats

    mem, non = _demo(12)
    first = make_engine("ray", workers=2, batch_texts_tokens=128)
    with use_engine(first):
        a = compute_stats(tiny_lm, mem)
    pids = first.last["workers"]
    assert len(pids) == 2
    second = make_engine("ray", workers=2, batch_texts_tokens=128)
    with use_engine(second):
        b = compute_stats(tiny_lm, non)
    assert second.last["workers"] == pids and second.last["builds"] == 0, second.last
    import shutil

    import torch
    from transformers import LlamaForCausalLM

    folder = shutil.copytree(tiny_llama, tmp_path / "other")  # the tokenizer; weights of its own
    m = LlamaForCausalLM.from_pretrained(folder)
    with torch.no_grad():
        m.model.norm.weight.mul_(1.5)
    m.save_pretrained(folder)
    other = load_causal_lm(str(folder), device="cpu")
    with use_engine(second):
        compute_stats(other, mem[:6])
        assert second.last["builds"] == 2 and second.last["workers"] == pids, second.last
        compute_stats(tiny_lm, mem + non, StatsSettings(prefix="none"))
        assert second.last["builds"] == 2 and second.last["workers"] == pids, second.last
    local = compute_stats(tiny_lm, mem + non, use_cache=False)
    assert _max_diff([s.loss for s in local], [s.loss for s in a + b]) <= TOL


def test_a_model_the_workers_cannot_load_stops_in_one_line(tiny_lm, engine):
    import copy

    from mia_core.engines import use_engine
    from mia_core.errors import ModelError
    from mia_core.stats import compute_stats

    bad = copy.copy(tiny_lm)
    bad.load_args = {**tiny_lm.load_args, "spec": "/nonexistent/model-folder"}
    t0 = time.time()
    with use_engine(engine), pytest.raises(ModelError) as e:
        compute_stats(bad, _demo(3)[0])
    msg = str(e.value)
    assert "\n" not in msg and "could not load the model" in msg and "/nonexistent/model-folder" in msg, msg
    assert "0 of 3 texts" in msg
    assert time.time() - t0 < 120  # no hang (Ray would otherwise restart the actor for ever)


def test_a_worker_killed_mid_job_is_replaced_and_the_job_completes(tiny_lm, ray_cluster):
    """SIGKILL one worker once a tenth of the work is back: Ray restarts the actor and retries its unit;
    every text arrives, with the local engine's numbers."""
    import os
    import signal

    import psutil

    from mia_core.engines import make_engine, use_engine
    from mia_core.stats import compute_stats

    mem, non = _demo(60)
    texts = mem + non
    killed: list[int] = []

    def kill_one(msg, frac):
        if killed or frac < 0.1:
            return
        for p in psutil.process_iter(["pid", "cmdline"]):
            if "ray::MiaWorker" in " ".join(p.info["cmdline"] or []):
                os.kill(p.info["pid"], signal.SIGKILL)
                killed.append(p.info["pid"])
                return

    with use_engine(make_engine("ray", workers=2, batch_texts_tokens=64)):
        remote = compute_stats(tiny_lm, texts, progress=kill_one)
    assert killed, "no worker was found to kill"
    local = compute_stats(tiny_lm, texts, use_cache=False)
    assert all(r is not None for r in remote)
    assert max(_max_diff(a.logprob, b.logprob) for a, b in zip(local, remote)) <= TOL


def test_more_workers_than_the_cluster_holds_is_refused_at_once(ray_cluster):
    """Actors asking for CPUs or GPUs the cluster does not have would wait for ever: one line instead."""
    from mia_core.engines import make_engine
    from mia_core.errors import SettingsError

    with pytest.raises(SettingsError, match="the Ray cluster has 2 CPUs and 0 GPUs"):
        make_engine("ray", workers=3)
    with pytest.raises(SettingsError, match="GPUs"):
        make_engine("ray", workers=1, gpus_per_worker=1)


def test_unreachable_cluster_is_one_line_in_seconds():
    from mia_core.engines.ray_data import check_address
    from mia_core.errors import SettingsError

    t0 = time.time()
    with pytest.raises(SettingsError, match="cannot reach the Ray cluster at 127.0.0.1:9"):
        check_address("127.0.0.1:9", timeout=3)
    with pytest.raises(SettingsError, match="not host:port"):
        check_address("nonsense")
    assert time.time() - t0 < 10


def test_cli_engine_errors_come_before_any_model_load(tmp_path):
    """``--ray-address`` that does not answer, and ``--engine ray`` without Ray installed: one line each."""
    from helpers import assert_one_error, run_mia

    out = run_mia("run", "--demo", "--engine", "ray", "--ray-address", "127.0.0.1:9", "--out", tmp_path / "o")
    assert_one_error(out.returncode, out.stderr, "cannot reach the Ray cluster")
    blocked = ("import sys; sys.modules['ray'] = None; from mia_core.cli import main; "
               "sys.exit(main(['run', '--demo', '--engine', 'ray', '--out', %r]))" % str(tmp_path / "o2"))
    out = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=120)
    line = assert_one_error(out.returncode, out.stderr, "needs Ray")
    assert "pip install" in line


def test_units_shrink_towards_the_end_so_the_workers_finish_together():
    """Short texts are cut into units no larger than a 2 x workers-th of the work still to cut (down to an
    eighth of the regular size), largest first, so the last units out are short; every text is in exactly
    one unit, in length order; a unit size the user set is kept as it is. (No cluster: the plan only.)"""
    from mia_core.engines.ray_data import UNITS_PER_WORKER, RayEngine
    from mia_core.stats.workload import plan_units

    rng = np.random.default_rng(0)
    lengths = rng.integers(20, 120, size=400)
    plan = [(int(n), [0], (i,)) for i, n in enumerate(lengths)]  # (tokens, window starts, first tokens)
    idx = list(range(400))
    total = int(sum(lengths + 1))
    for workers in (1, 2, 8):
        eng = RayEngine(workers=workers)
        units = plan_units(eng, idx, plan, batch_tokens=2048, context=2048)
        size = max(2048, -(-total // (UNITS_PER_WORKER * workers)))
        sizes = [u["tokens"] for u in units]
        assert sorted(i["idx"] for u in units for i in u["items"]) == idx
        assert sizes == sorted(sizes, reverse=True)
        assert max(sizes) <= min(4 * 2048, size) + 120
        if total / (2 * workers) < size:  # the tail is tapered: the last unit is an eighth of a regular one
            assert sizes[-1] <= size / 4 and len(units) > -(-total // size)
        # each unit holds texts of neighbouring lengths (the order they were cut in)
        for u in units:
            ns = [lengths[i["idx"]] for i in u["items"]]
            assert ns == sorted(ns, reverse=True)
    fixed = plan_units(RayEngine(workers=2, unit_tokens=1000), idx, plan, batch_tokens=2048, context=2048)
    assert all(1000 <= u["tokens"] < 1000 + 121 for u in fixed[:-1]) and fixed[-1]["tokens"] > 0
