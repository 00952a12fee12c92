import os
from pathlib import Path

import pytest

# mia_core comes from the installed project (setup.sh: ``pip install -e .[all]``); the tests'
# own helper modules (helpers, tiny_lm, golden_outputs) and the dashboard's ``dashboard``
# package are importable through the ``pythonpath`` of pyproject.toml's [tool.pytest.ini_options].
# Tests never reach a model hub; the statistics cache lives in a per-session folder
# unless the caller set MIA_CACHE_DIR (the converted embedded model is then reused).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# the server's start-up preload of the demo models (dashboard/warmup.py) would load two models in the
# background of whichever test first runs app.py; its own test turns it back on
os.environ.setdefault("MIA_NO_PRELOAD", "1")
os.environ.setdefault("MIA_CACHE_DIR", str(Path.home() / ".cache" / "mia-dashboard-tests"))

# Parallel workers (pytest-xdist: PYTEST_XDIST_WORKER is gw0, gw1, ...) share the statistics cache above (its
# entries are written atomically, and the converted models published in one rename), so what one test computed
# the others read, as in one process. One torch thread each: two workers on two cores (set before torch is
# imported; the subprocesses a test starts inherit it).
WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if WORKER:
    os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> str:
    """A random 2-layer Llama (hidden 32, seeded: the same weights every time) with the embedded SmolLM2 tokenizer,
    saved once per session (per worker) as a local HF folder (``helpers.save_tiny_llama``). Read only: a test that
    changes a model's files saves its own copy."""
    from helpers import save_tiny_llama

    return save_tiny_llama(tmp_path_factory.mktemp("tiny_llama"))


@pytest.fixture(scope="module")
def tiny_lm(tiny_llama):
    """``tiny_llama`` loaded on the CPU (``mia_core.models.load_causal_lm``), once per module."""
    from mia_core.models import load_causal_lm

    return load_causal_lm(tiny_llama, device="cpu")


@pytest.fixture(scope="module")
def neighbours_env(tmp_path_factory):
    """Offline hub, the statistics cache that holds the offline neighbours (``helpers.shared_neighbours_cache``),
    and a folder of the module's own (yielded)."""
    from helpers import shared_neighbours_cache

    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("MIA_CACHE_DIR", str(shared_neighbours_cache(tmp_path_factory)))
    yield tmp_path_factory.mktemp("neighbours-env")
    mp.undo()


@pytest.fixture(scope="session")
def memorised_llama(tmp_path_factory) -> dict:
    """A tiny Llama (hidden 64) trained 60 epochs, on one thread, on 24 paragraphs of ``tests/data/paragraphs.jsonl``
    (greedy decoding reproduces them) and never on 24 others: ``{"folder", "members", "nonmembers", "texts",
    "order"}`` (``order``: the seeded permutation the sets were cut from). Trained once per session (per worker;
    ``GROUPS["memorised"]`` puts its users on one); read only."""
    import numpy as np

    from tiny_lm import make_tokenizer, paragraphs, train_tiny_lm

    texts = paragraphs()
    order = np.random.default_rng(7).permutation(len(texts))
    members, nonmembers = [texts[i] for i in order[:24]], [texts[i] for i in order[24:48]]
    folder = train_tiny_lm(members, make_tokenizer(texts), tmp_path_factory.mktemp("memorised_llama"), epochs=60,
                           hidden=64)
    return {"folder": str(folder), "members": members, "nonmembers": nonmembers, "texts": texts, "order": order}


def pytest_runtest_setup(item):
    """Before a test's fixtures: let a start-up warm-up that an earlier page test began (``app.py`` run by
    AppTest) finish its imports, so that the test's own ``from transformers import ...`` does not race it
    (``dashboard.warmup.wait_imports``: Python's import deadlock guard hands one thread a partial module)."""
    import sys

    warmup = sys.modules.get("dashboard.warmup")
    if warmup is not None:
        warmup.wait_imports()


# ------------------------------------------------------------------------------------------- parallel workers
# pyproject.toml's pytest options run the suite on one pytest-xdist worker per core (``-n logical``). A unit of
# work is a test file, so that a file's module-scoped fixtures are built once, on one worker, except for the
# units of GROUPS: tests in different files that compute the same heavy statistics (the demo target's, shared
# through the statistics cache: the first computes, the others read, as they did in one process) go to one
# worker together, and a file with two long independent tests is cut in two. Every entry of GROUPS must name a
# collected test (a whole run stops at collection otherwise: a renamed test would silently leave its group).
# Units start longest first, by what the last whole run measured: pytest's own durations (setup, call and
# teardown of every test) summed per unit, which that run writes to DURATIONS (tests/durations.json, committed:
# a fresh clone schedules by the last run its author made); a unit it does not know counts 0 and keeps its
# collection order. The figures only order; they never decide a test. (xdist's own ``xdist_group`` marks are not
# used: with pytest 9.2, xdist 3.8's ``--dist loadgroup`` groups nothing.)
GROUPS = {
    "demo": ("tests/test_demo.py", "tests/test_app_pages.py::test_document_page_demo_runs_offline",
             "tests/test_app_pages.py::test_mlm_page_demo_runs_offline",
             "tests/test_app_pages.py::test_dataset_inference_page_demo_gives_a_verdict_offline",
             "tests/test_app_pages.py::test_dataset_inference_page_book_demo_shows_each_book_and_the_floor",
             "tests/test_dataset_inference.py::test_demo_members_are_detected_and_the_null_is_not",
             "tests/test_dataset_inference.py::test_books_demo_the_collection_is_detected_and_the_null_is_not",
             "tests/test_di_real_nulls.py"),
    "browser-walk": ("tests/test_browser.py::test_inspect_and_calibration_in_a_browser",),
    "browser-newcomer": ("tests/test_browser.py::test_a_newcomers_first_hour_shows_the_numbers_a_cold_cli_run_gives",),
    # they train the memorised tiny Llama (the session fixture memorised_llama): once, on one worker
    "memorised": ("tests/test_audit_contract.py", "tests/test_extraction.py",
                  "tests/test_traps.py::test_the_page_refuses_in_one_line_and_tests_a_record"),
}
DURATIONS = Path(__file__).with_name("durations.json")


def measured() -> dict[str, float]:
    """``{unit: seconds}`` of the last whole run (empty when there is none)."""
    import json

    try:
        return {k: float(v) for k, v in json.loads(DURATIONS.read_text(encoding="utf-8"))["units"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


# tests that run last in their unit: the demo unit's two users of the demo target's and its base's statistics over the
# demo sets, which the newcomer's cold server (browser-newcomer, started beside the demo unit) computes too and, once
# its checks pass, copies into the shared cache (helpers.share_statistics): run after the unit's other 300 s, they
# read them there (where the newcomer has not finished, or runs elsewhere, the first computes them, as before)
LAST_IN_UNIT = ("tests/test_app_pages.py::test_dataset_inference_page_demo_gives_a_verdict_offline",
                "tests/test_demo.py")


def unit(nodeid: str) -> str:
    """The unit of work of the test ``nodeid``: its group in GROUPS, else its file."""
    for name, members in GROUPS.items():
        if any(nodeid == m or nodeid.startswith((m + "[", m + "::")) for m in members):
            return name
    return nodeid.split("::", 1)[0]


def _whole_suite(config) -> bool:
    """The run collects the whole suite: no test path, ``-k`` or ``-m`` narrows it."""
    root = Path(str(config.rootpath))
    paths = {Path(a.split("::", 1)[0]).resolve() if Path(a.split("::", 1)[0]).is_absolute()
             else (Path(str(config.invocation_params.dir)) / a.split("::", 1)[0]).resolve() for a in config.args}
    return (paths == {(root / "tests").resolve()} and not config.option.keyword and not config.option.markexpr
            and not any("::" in a for a in config.args))


def pytest_collection_modifyitems(config, items):
    """On a worker: longest unit first (the last whole run's durations); inside a unit the tests keep their order (a
    stable sort), but for those of LAST_IN_UNIT, which go to its end. A whole run first checks that every GROUPS
    entry names a collected test."""
    if _whole_suite(config):
        ids = [it.nodeid for it in items]
        lost = [m for members in GROUPS.values() for m in members
                if not any(i == m or i.startswith((m + "[", m + "::")) for i in ids)]
        if lost:
            raise pytest.UsageError(f"tests/conftest.py GROUPS names tests that were not collected: {lost}")
    if WORKER:
        seconds = measured()
        items.sort(key=lambda it: (-seconds.get(unit(it.nodeid), 0), unit(it.nodeid) if seconds.get(unit(it.nodeid))
                                   else "", any(it.nodeid.startswith(m) for m in LAST_IN_UNIT)))


_SPENT: dict[str, float] = {}


def pytest_runtest_logreport(report):
    """On the controller (or in one process): every test's setup, call and teardown, summed per unit."""
    if not WORKER:
        _SPENT[unit(report.nodeid)] = _SPENT.get(unit(report.nodeid), 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    """After a whole run that went to its end: its durations per unit, written to DURATIONS when a unit came or
    went, or one moved by more than a quarter and 5 s (so that noise does not rewrite the file every run)."""
    import json

    if WORKER or not _SPENT or not _whole_suite(session.config) or session.shouldstop or exitstatus not in (0, 1):
        return
    new = {k: round(v, 1) for k, v in sorted(_SPENT.items(), key=lambda kv: -kv[1])}
    old = measured()
    if set(old) == set(new) and all(abs(new[k] - old[k]) <= max(5.0, 0.25 * old[k]) for k in new):
        return
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "?") if Path("/proc/cpuinfo").exists() else "?"
    record = {"note": "pytest's durations (setup + call + teardown) summed per unit of work (tests/conftest.py), "
                      "written by the last whole run; they order the units, longest first",
              "machine": f"{cpu}, {os.cpu_count()} cores", "units": new}
    tmp = DURATIONS.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    tmp.replace(DURATIONS)


def pytest_xdist_make_scheduler(config, log):
    """xdist's scope scheduling, with :func:`unit` as the scope, in the order collected above (its own reordering
    by test count turned off)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit(nodeid)

    config.option.loadscopereorder = False
    return ByUnit(config, log)
