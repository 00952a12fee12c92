"""Time estimates that know the cache and the machine (issue 40): only the texts the statistics cache lacks count,
at this machine's measured speed for the model (and the line says when the speed is assumed or borrowed from
another model); the Document audit and Controlled experiment estimates; the time left of a running stage."""
from __future__ import annotations

import time

import pytest
from helpers import empty_cache

TEXTS = [f"On day {i} the {w} walked down to the harbour wall and counted {i + 3} boats coming in with the tide, "
         f"then went home to write it all down in the ledger by the window."
         for i, w in enumerate(["miller", "baker", "clerk", "sailor", "widow", "farmer", "smith", "weaver"] * 3)]


@pytest.fixture(scope="module")
def tiny_path(tiny_llama):
    return tiny_llama  # the session's tiny Llama folder (conftest.py)


@pytest.fixture
def lm(tiny_path, tmp_path, monkeypatch):
    """The tiny model, with a cache of its own (no statistics, no speed measured)."""
    from mia_core.models import load_causal_lm

    monkeypatch.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path / "cache")))
    return load_causal_lm(tiny_path, device="cpu", reuse=False)


def test_the_estimate_counts_only_the_texts_the_cache_lacks_at_the_models_own_speed(lm):
    from mia_core import estimate as E
    from mia_core.stats import speed
    from mia_core.api import plan_run
    from mia_core.stats import StatsSettings, compute_stats

    first, rest = TEXTS[:16], TEXTS[16:]
    before = plan_run(["loss"], texts=first, target_model=lm)
    assert "assumed 300 tokens/s for a 135M model" in before.estimate
    assert "nothing measured yet on this machine" in before.estimate
    assert "cached" not in before.estimate.split(" Lowercase")[0] and before.seconds > 0
    blind = plan_run(["loss"], texts=first, n_params=lm.n_params)  # the model not loaded: it cannot know
    assert "does not yet know the cache" in blind.estimate

    compute_stats(lm, first)  # scores them, stores them, records this model's speed (>= 500 tokens)
    assert E.count_tokens(first, lm.tokenizer) >= E.MIN_TOKENS and E.measured("cpu", lm.identity)
    same = plan_run(["loss"], texts=first, target_model=lm)
    assert "16 texts × 1 pass (target)" in same.estimate and "all cached: a few seconds" in same.estimate
    assert same.seconds == 0
    assert "this machine's measured speed for this model" in same.estimate

    more = plan_run(["loss"], texts=first + rest, target_model=lm)
    assert "16 of 24 texts already cached" in more.estimate and "for the other 8" in more.estimate
    per = E.speed(lm.n_params, "cpu", lm.identity)[0]
    assert more.seconds == pytest.approx(E.count_tokens(rest, lm.tokenizer) * per)  # the 8 new ones only
    # what the page hands its job for the whole run's time left: the passes' seconds and those with work
    assert (more.pass_seconds, more.todo_passes) == (pytest.approx(more.seconds), 1) and same.todo_passes == 0

    # the lower-cased pass and another window are other cache entries: nothing of them is cached
    lower = plan_run(["loss", "lowercase"], texts=first, target_model=lm)
    assert "16 of 32 texts already cached" in lower.estimate
    other = plan_run(["loss"], texts=first, target_model=lm, settings=StatsSettings(context=16))
    assert "cached" not in other.estimate.split(" Lowercase")[0]
    assert speed.cached_texts(lm, first + rest) == [True] * 16 + [False] * 8


def test_the_speed_says_where_it_comes_from(lm):
    from mia_core import estimate as E

    assert E.speed(135e6, "cpu")[1] == "assumed"
    E.record(6000, 20.0, 135_000_000, "cpu", "some-other-model")  # 300 tokens/s for a 135M model
    per, how, words = E.speed(270e6, "cpu", lm.identity)  # this model never measured: the other's, scaled
    assert how == "scaled" and per == pytest.approx(2 / 300) and "scaled by size" in words
    E.record(10, 1.0, lm.n_params, "cpu", lm.identity)  # too few tokens to say anything
    assert E.measured("cpu", lm.identity) is None
    E.record(1000, 2.0, lm.n_params, "cpu", lm.identity)
    per, how, words = E.speed(lm.n_params, "cpu", lm.identity)
    assert how == "measured" and per == pytest.approx(1 / 500) and "about 500 tokens/s" in words
    assert E.speed(lm.n_params, "cuda:0", lm.identity)[1] == "assumed"  # another device: nothing measured there


def test_the_warm_up_measurement_records_this_models_speed(lm):
    from mia_core import estimate as E
    from mia_core.stats import speed

    assert speed.measure(lm, TEXTS[:2]) is None and E.measured("cpu", lm.identity) is None  # too few tokens
    tps = speed.measure(lm, TEXTS)
    assert tps and tps > 0 and E.measured("cpu", lm.identity)["tokens_per_s"] == pytest.approx(tps)
    assert not list(_stats_dir().glob("**/*.npz"))  # nothing cached
    from mia_core.api.plan import measure_speed

    assert measure_speed(lm, TEXTS) is None  # the warm-up measures a model once per machine


def _stats_dir():
    from mia_core.paths import cache_root

    return cache_root() / "stats"


def test_the_dataset_inference_estimate_knows_the_cache(lm):
    from mia_core.api.inference import estimate_inference
    from mia_core.stats import compute_stats

    suspect, validation = TEXTS[:12], TEXTS[12:]
    plan, tests = estimate_inference(suspect, validation, target_model=lm, n_permutations=999)
    assert "already cached" not in plan.estimate and tests > 0
    compute_stats(lm, TEXTS)
    plan, _ = estimate_inference(suspect, validation, target_model=lm, n_permutations=999)
    assert "all cached: a few seconds" in plan.estimate and plan.seconds == 0


def test_the_dataset_inference_estimate_counts_the_negative_controls_pass(lm):
    """The control (auto, no reference: the base model over the same texts) is a second pass the run makes: the
    estimate before Run, and the whole run's time left started from it, count it (issue 53 item 1: the demo's
    estimate said 48 s for 2 x 52 s of passes)."""
    from mia_core.api.inference import estimate_inference

    fresh = [f"{t} (control pass)" for t in TEXTS]  # never scored: the cache holds none of them
    alone, _ = estimate_inference(fresh[:12], fresh[12:], target_model=lm, control="none")
    with_control, _ = estimate_inference(fresh[:12], fresh[12:], target_model=lm)
    assert with_control.todo_passes == alone.todo_passes + 1 and "negative control's pass" in with_control.estimate
    assert with_control.seconds == pytest.approx(2 * alone.seconds) and with_control.pass_seconds > alone.pass_seconds
    given, _ = estimate_inference(fresh[:12], fresh[12:], target_model=lm, reference=True)  # the reference is it
    assert "negative control" not in given.estimate


def test_the_inspect_neighbours_estimate(lm):
    """Issue 53 item 1: Inspect's neighbours showed no time before the button (they took 21 s). The estimate: each
    neighbour scored from where it differs from the text, NEIGHBOUR_SHARE of its tokens, at the measured speed."""
    from mia_core.api.inspect import estimate_neighbours
    from mia_core.api.plan import NEIGHBOUR_SHARE
    from mia_core.estimate import count_tokens, speed

    text = TEXTS[0]
    line, sec = estimate_neighbours(lm, text, 25)
    n_tok = count_tokens([text], lm.tokenizer)
    assert sec == pytest.approx(int(NEIGHBOUR_SHARE * 25 * n_tok) * speed(lm.n_params, "cpu", lm.identity)[0])
    assert line.startswith("about ") and "25 neighbours" in line and f"{n_tok:,} tokens" in line, line
    assert estimate_neighbours(lm, text, 100)[1] == pytest.approx(4 * sec, rel=0.01)
    assert "1 neighbour," in estimate_neighbours(lm, text, 1)[0]


def test_the_document_and_controlled_estimates(lm):
    from mia_core.api.documents import estimate_documents, prepare_documents
    from mia_core.api.targets import TRAIN_COST, estimate_build
    from mia_core.estimate import count_tokens, speed
    from mia_core.stats import StatsSettings, compute_stats

    books = [" ".join(TEXTS[i:i + 4]) for i in range(0, 24, 4)]
    request = prepare_documents(books[:3], books[3:], model=lm, folds=3, context=64, baselines=False,
                                partial_lengths=None)
    line, sec = estimate_documents(request, target=lm)
    assert "6 books × 1 pass" in line and "already cached" not in line and sec > 0 and "Then the random forests" in line
    compute_stats(lm, books[:2], StatsSettings(context=64, vocab_probs=True))  # what the audit's pass stores
    line, sec2 = estimate_documents(request, target=lm)
    assert "2 of 6 books already cached" in line and sec2 < sec
    assert "does not yet know the cache" in estimate_documents(request)[0]

    sets = {"members": TEXTS[:10], "nonmembers": TEXTS[10:20], "population": []}
    line, sec = estimate_build(sets, epochs=2, max_length=16, base=lm)
    per = speed(lm.n_params, "cpu", lm.identity)[0]
    n_mem = sum(min(16, count_tokens([t], lm.tokenizer)) for t in TEXTS[:10])
    assert n_mem == 160 and "2 epochs × 10 member texts (about 160 tokens)" in line
    assert "3 forward passes (an estimate from that rule)" in line
    assert sec == pytest.approx((2 * n_mem * TRAIN_COST + 2 * 160 + n_mem) * per)
    from mia_core.formatting import fmt_seconds

    assert line.startswith(f"About {fmt_seconds(sec)} in all: ")  # issue 53 item 1: the total first, then its parts
    assert estimate_build({"members": []}, epochs=2) == ("", 0.0)


def test_stage_eta_follows_the_recent_pace_not_a_slow_start():
    """A pass whose first texts ran one at a time (36 s for 5 %), then in bursts of a batch at once: its time
    left follows the pace of the later half, as the page redraws between reports."""
    from contextlib import contextmanager
    from unittest import mock

    from dashboard.jobs import Job, Stage
    from dashboard.ui import stage_eta

    @contextmanager
    def mock_clock(t):  # the job's clock at a report (the reports of a minute, made at once)
        with mock.patch("dashboard.jobs.time.time", return_value=t):
            yield

    now = time.time()
    t0 = now - 61.6
    name = "reference pass"

    def left(text):
        return float(text.split("about ")[1].split(" s")[0]) if " min " not in text else 60 * float(
            text.split("about ")[1].split(" min")[0]) + float(text.split(" min ")[1].split(" s")[0])

    # the job's reports: the slow start's last one, then the first burst's (Job.progress records each)
    job = Job("j", "calibration", "t", started=t0)
    with mock_clock(t0):
        job.progress(f"{name}: 0/200 windows", 0.0)
    with mock_clock(t0 + 36.6):
        job.progress(f"{name}: 10/200 windows", 0.05)
    early = stage_eta(job.snapshot()[0], 36.6, True)
    assert early  # the whole pace then: no other to go by
    with mock_clock(now):
        job.progress(f"{name}: 62/200 windows", 0.31)
    burst = job.snapshot()[0]
    got = left(stage_eta(burst, 61.6, True))
    whole = 61.6 * 0.69 / 0.31  # 137 s: the pace of the whole stage, slow start included
    recent = 0.69 / ((0.31 - 0.05) / (61.6 - 36.6))  # 66 s: the pace since the slow start
    assert abs(got - recent) < 2 and got < whole / 2
    # a stage with no report in its later half before the last has only its whole pace
    fresh = Stage(name, 0.31, "62/200 windows", started=t0, updated=now, history=[(now, 0.31)])
    assert abs(left(stage_eta(fresh, 61.6, True)) - whole) < 2


def test_the_document_audit_and_controlled_pages_show_an_estimate_before_run():
    """Before their Run buttons, with the bundled demo: the Document audit prices its 40 books (the demo target is
    not loaded here, so the line says it does not know the cache), the Controlled experiment its training."""
    pytest.importorskip("streamlit")
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from mia_core.api.documents import document_demo
    from mia_core.targets.demo import demo_corpus_files

    app = str(Path(__file__).resolve().parents[1] / "app.py")
    pages = []
    if document_demo():
        pages.append(("pages/3_Document_audit.py", "Estimate: 40 books × 1 pass (target)", "Then the random forests, 120 fits"))
    if any(p.stem == "members" for p in demo_corpus_files()):
        pages.append(("pages/6_Controlled_experiment.py", "Estimate: About ", "in all: 3 epochs × "))
    for page, start, also in pages:
        at = AppTest.from_file(app, default_timeout=120)
        at.switch_page(page)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        lines = [c.value for c in at.caption if c.value.startswith("Estimate:")]
        assert len(lines) == 1 and lines[0].startswith(start) and also in lines[0], (page, lines)


@pytest.mark.parametrize("content", ["[" * 200_000, "[" * (2 << 20), "[1, 2]", '{"cpu": "fast", "models": [1]}',
                                     '{"cpu": {"s_per_token_param": -1}, "models": {"cpu x": {"s_per_token_param": "nan"}}}',
                                     '{"cpu": {"s_per_token_param": 1e-12, "n_params": 0}}', "\udcff" * 10])
def test_a_damaged_or_hostile_speed_record_means_no_record(content, tmp_path, monkeypatch):
    """Issue 50: a ``throughput.json`` of 100 MB of ``[`` ended ``mia run`` in a RecursionError. A file too large,
    nested past Python's limit, not a mapping, or with unusable entries is read as no record; the next measured
    run writes a good one over it."""
    from mia_core import estimate as E

    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path))
    (tmp_path / E.FILE).write_text(content, encoding="utf-8", errors="surrogateescape")
    assert E.measured("cpu") is None and E.measured("cpu", "some-model") is None
    assert E.speed(135e6, "cpu", "some-model")[1] == "assumed"
    E.record(1000, 2.0, 135_000_000, "cpu", "some-model")
    assert E.speed(135e6, "cpu", "some-model")[1] == "measured"


def _job(expected, stages, started):
    from dashboard.jobs import Job, Stage

    job = Job(id="x", kind="calibration", title="t", started=started, expected=expected)
    for name, (t0, t1, fraction, message) in stages.items():
        job.stages[name] = Stage(name=name, fraction=fraction, message=message, started=t0, updated=t1)
    return job


def test_one_time_left_for_the_whole_run_revised_from_its_own_speed():
    """Issue 53 item 1: the estimate before Run said 100 s (80 s for two passes, 20 s after them); the machine is
    busier now and the passes run 3x slower. Before the first texts: the estimate less the time elapsed, said as
    the estimate; once a pass is under way: the time left for everything, from the run's own speed (3x)."""
    from dashboard.ui import whole_run_left

    exp = {"seconds": 100.0, "pass_seconds": 80.0, "passes": 2}
    t0 = 1000.0
    early = whole_run_left(_job(exp, {"target pass": (t0 + 2, t0 + 2, 0.0, "0/50 windows")}, t0), now=t0 + 4)
    assert early.startswith("Whole run: about 1 min 36 s left: the estimate before Run") and "busier" in early, early
    # the first pass is half done after 60 s (the estimate: 20 s for it): 3x; left: (80 x 0.75 + 20) x 3 = 240 s
    half = _job(exp, {"target pass": (t0, t0 + 60, 0.5, "25/50 windows")}, t0)
    half.stages["target pass"].history = [(t0, 0.0), (t0 + 6, 0.05), (t0 + 60, 0.5)]
    mid = whole_run_left(half, now=t0 + 60)  # 0.45 in 54 s: 60 s left of it, 120 s in all: 3x the 40 s per pass
    assert mid.startswith("Whole run: about 4 min 00 s left, from this run's own speed") and "3.0× the estimate" in mid, mid
    assert "25 % of 2 model passes done" in mid  # left: 60 + 40 x 3 (the reference pass) + 20 x 3 (after them)
    assert whole_run_left(half, now=t0 + 70).startswith("Whole run: about 3 min 50 s left")  # counts down between reports
    # a pass found all cached is not a pass: the reference's "all ... cached" stage does not count as work done
    cached = {"reference pass": (t0, t0, 1.0, "all 100 texts cached"), "target pass": (t0, t0 + 60, 0.5, "25/50 windows")}
    one = _job({**exp, "passes": 1, "pass_seconds": 40.0}, cached, t0)
    one.stages["target pass"].history = [(t0, 0.0), (t0 + 6, 0.05), (t0 + 60, 0.5)]
    got = whole_run_left(one, now=t0 + 60)  # 60 + (100 - 40) x 3
    assert got.startswith("Whole run: about 4 min 00 s left") and "50 % of 1 model pass done" in got, got
    late = {"target pass": (t0, t0 + 120, 1.0, "50/50 windows"), "reference pass": (t0 + 120, t0 + 240, 1.0, "done")}
    late["reference pass"] = (t0 + 120, t0 + 240, 1.0, "done (50 texts scored, 0 cached)")
    after = whole_run_left(_job(exp, late, t0), now=t0 + 250)
    assert after.startswith("Whole run: the model passes are done; about 50.0 s left"), after  # 20 s x 3 less 10 s
    assert whole_run_left(_job(None, late, t0), now=t0 + 250) == ""  # no estimate: nothing said
    # a slow start (40 s before the first texts were scored: reading, the first batch) is not the pace: the pace
    # since then is (0.2 in 20 s: 70 s left, 130 s in all, 2.6x the 50 s the estimate gave each pass)
    slow = _job({"seconds": 120.0, "pass_seconds": 100.0, "passes": 2},
                {"target pass": (t0, t0 + 60, 0.3, "15/50 windows")}, t0)
    slow.stages["target pass"].history = [(t0, 0.0), (t0 + 40, 0.1), (t0 + 60, 0.3)]
    got = whole_run_left(slow, now=t0 + 60)
    assert "2.6× the estimate's time" in got and got.startswith("Whole run: about 4 min 12 s left"), got


def test_a_build_whose_reports_give_the_whole_share_done_has_one_time_left_from_its_own_pace():
    """Issue 53 item 1, the Controlled experiment's build (a background job now): every report gives the whole
    build's share done (expected["fraction_is_whole"]). The estimate said 60 s; the build runs 2x slower."""
    from dashboard.ui import whole_run_left

    exp = {"seconds": 60.0, "fraction_is_whole": True}
    t0 = 1000.0
    early = whole_run_left(_job(exp, {"loading base model smollm2": (t0, t0 + 1, 0.0, "")}, t0), now=t0 + 3)
    assert early.startswith("Whole run: about 57.0 s left: the estimate before it started") and "busier" in early, early
    stages = {"loading base model smollm2": (t0, t0 + 1, 0.0, ""),
              "training": (t0 + 1, t0 + 30, 0.25, "epoch 1/2 step 3/6")}
    job = _job(exp, stages, t0)
    job.stages["training"].history = [(t0 + 1, 0.0), (t0 + 6, 0.05), (t0 + 30, 0.25)]
    mid = whole_run_left(job, now=t0 + 30)  # 0.2 in 24 s since its first steps: 90 s left, 120 s in all
    assert mid.startswith("Whole run: about 1 min 30 s left, from its own pace so far") and "2.0× the estimate" in mid, mid
    assert "25 % done" in mid
    late = _job(exp, {"training": (t0, t0 + 59.5, 0.995, "")}, t0)
    late.stages["training"].history = [(t0 + 1, 0.01), (t0 + 59.5, 0.995)]
    assert whole_run_left(late, now=t0 + 59.8).startswith("Whole run: finishing")


def test_a_masked_lm_estimate_counts_k_passes_of_every_text_through_each_model():
    """Issue 53 item 1, the Masked-LM page: K forward passes of each text through the target (evaluated, population
    and training samples) and the reference (not the training samples); twice K, twice the time; the demo's models'
    sizes read from their config.json before they load (the embedded encoder's for a delta on it)."""
    from mia_core.api.mlm import estimate_mlm, mlm_demo, prepare_mlm

    if mlm_demo() is None:
        pytest.skip("no masked-LM demo installed")
    two, four = prepare_mlm(demo=True, k=2), prepare_mlm(demo=True, k=4)
    line, s2 = estimate_mlm(two)
    assert s2 > 0 and estimate_mlm(four)[1] == pytest.approx(2 * s2)
    n = len(two.members) + len(two.nonmembers) + len(two.population)
    assert f"the target: {n} texts × K = 2 masks" in line and f"the reference: {n} texts × K = 2 masks" in line, line
    assert "135M assumed" not in line, line  # the sizes were read, not assumed
    with_train = prepare_mlm(demo=True, k=2, train_samples=two.members[:10])
    assert f"the target: {n + 10} texts" in estimate_mlm(with_train)[0]  # the loss attack's training samples
