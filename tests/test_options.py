"""Declared options (``mia_core.options``): an audit's settings have one home, and every front end reads it.

For every registered audit's ``Options`` class (``mia_core.audits``) and the shift check's: each default is inside its
domain; a value just outside each bound is refused in one line naming the option, the same by the API's
``prepare_*``, the command line's flag and the engine's own guard; the page's widget limits are the domain's bounds;
the docs' option table is the one the fields make; an unknown option and a number given as text are refused.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from mia_core.audits import AUDITS
from mia_core.dataset_inference.options import InferenceOptions
from mia_core.api.shift import ShiftOptions
from mia_core.targets.options import SplitOptions, TargetOptions
from mia_core.engines.options import EngineOptions
from mia_core.pipeline.options import RunOptions
from mia_core.documents.options import DocumentOptions
from mia_core.errors import SettingsError
from mia_core.mlm.options import MlmOptions
from mia_core.extraction.options import ExtractionOptions

ROOT = Path(__file__).resolve().parent.parent
# every registered audit's options (mia_core.audits), and the shift check's (a check of the data, not an audit)
OPTIONS = [*(a.options() for a in AUDITS.values()), ShiftOptions, TargetOptions,  # and a target's fine-tune,
           SplitOptions, EngineOptions]  # a controlled experiment's split, where the passes run
# the ones there are today are found (a new audit's are taken from the registry without an edit here)
assert set(OPTIONS) >= {InferenceOptions, MlmOptions, DocumentOptions, ShiftOptions, RunOptions, TargetOptions,
                        ExtractionOptions, SplitOptions, EngineOptions}
TEXTS = [f"suspect text number {i} about a quiet harbour town and its boats" for i in range(12)]
OTHER = [f"validation text number {i} about a busy mountain road and its inns" for i in range(12)]
FLAGS = {"alpha": "--alpha", "folds": "--folds", "n_permutations": "--permutations", "passage_words": "--passage-words",
         "max_passages": "--max-passages"}


def _outside(d) -> list:
    """Values just outside a number domain's bounds."""
    out = []
    if d.lo is not None:
        v = d.lo if d.lo_open else (d.lo - 1 if d.kind == "int" else d.lo - 1e-3)
        while v in d.also:  # a single value allowed below the bound (a context of 0): the next one down
            v -= 1
        out.append(v)
    if d.hi is not None:
        out.append(d.hi if d.hi_open else (d.hi + 1 if d.kind == "int" else d.hi + 1e-3))
    return out


@pytest.mark.parametrize("cls", OPTIONS, ids=lambda c: c.__name__)
def test_every_default_is_inside_its_domain_and_an_instance_is_frozen(cls):
    o = cls.check()
    for name, f in cls.declared().items():
        assert f.metadata["help"] and "\n" not in f.metadata["help"], name
        assert cls.check_some(**{name: f.default})[name] == f.default
    with pytest.raises(Exception):
        o.seed = 2  # frozen: a checked instance stays checked


@pytest.mark.parametrize("cls", OPTIONS, ids=lambda c: c.__name__)
def test_a_value_outside_a_bound_is_one_line_naming_the_option(cls):
    seen = 0
    for name, f in cls.declared().items():
        d = f.metadata["domain"]
        if d.kind not in ("int", "float"):
            continue
        for v in _outside(d):
            with pytest.raises(SettingsError) as e:
                cls.check(**{name: v})
            assert e.value.options[-1] == name and "\n" not in str(e.value) and f"{{{name}}}" in e.value.template
            seen += 1
    assert seen >= sum(f.metadata["domain"].kind in ("int", "float") for f in cls.declared().values())
    with pytest.raises(SettingsError, match="no setting 'no_such_option'"):
        cls.check(no_such_option=99)
    whole_number = next(n for n, f in cls.declared().items() if f.metadata["domain"].kind == "int")  # e.g. the seed
    with pytest.raises(SettingsError, match=r"\(text\)"):
        cls.check(**{whole_number: "5"})  # a Python caller gives a number as a number
    assert getattr(cls.check(strict=False, **{whole_number: "5"}), whole_number) == 5  # the command line's text


def test_the_api_the_cli_and_the_engine_refuse_the_same_values(capsys):
    """One limit each: ``prepare_inference`` (the API), ``mia infer-dataset``'s flags and the engine's guard."""
    from helpers import mia

    from mia_core.api.inference import prepare_inference
    from mia_core.dataset_inference.stages import check_test_settings

    for name, flag in FLAGS.items():
        for v in _outside(InferenceOptions.domain(name)):
            with pytest.raises(SettingsError) as e:
                prepare_inference(TEXTS, OTHER, **{name: v})
            assert e.value.options[-1] == name, (name, v)
            out = mia("infer-dataset", "--demo", flag, str(v))
            lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
            assert out.returncode == 2 and len(lines) == 1 and flag in lines[0] and str(v) in lines[0], out.stderr
    with pytest.raises(SettingsError) as e:
        check_test_settings(alpha=0.7, folds=5, n_permutations=999)
    assert "alpha" in e.value.options
    with pytest.raises(SettingsError) as e:
        check_test_settings(alpha=0.01, folds=21, n_permutations=999)
    assert "folds" in e.value.options
    # inside every domain: accepted by all three
    req = prepare_inference(TEXTS, OTHER, alpha=0.5, folds=20, n_permutations=99)
    assert req.settings["folds"] == 20 and req.settings["alpha"] == 0.5


MLM_FLAGS = {"alpha": "--alpha", "k": "--masks", "rate": "--mask-rate", "batch_tokens": "--batch-tokens"}


def test_the_masked_lm_api_cli_and_engine_refuse_the_same_values():
    from helpers import mia

    from mia_core.api.mlm import prepare_mlm
    from mia_core.mlm.stages import check_inputs

    for name, flag in MLM_FLAGS.items():
        for v in _outside(MlmOptions.domain(name)):
            with pytest.raises(SettingsError) as e:
                prepare_mlm(demo=True, **{name: v})
            assert e.value.options[-1] == name, (name, v)
            out = mia("mlm", "--demo", flag, str(v))
            lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
            assert out.returncode == 2 and len(lines) == 1 and flag in lines[0] and str(v) in lines[0], out.stderr
    for bad in ({"alpha": 1.0}, {"rate": 0.0}, {"k": 1001}, {"seed": -1}):
        with pytest.raises(SettingsError) as e:
            check_inputs(TEXTS[:3], OTHER[:3], [f"a population text {i}" for i in range(3)], **bad)
        assert set(bad) <= set(e.value.options), (bad, e.value.options)


def test_the_masked_lm_page_limits_are_the_domains():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.switch_page("pages/4_Masked_LM_audit.py").run()
    assert not at.exception, [e.value for e in at.exception]
    for key, name in (("mlm_alpha", "alpha"), ("mlm_k", "k"), ("mlm_seed", "seed"), ("mlm_bootstrap", "n_bootstrap")):
        w = at.number_input(key=key)
        lim = MlmOptions.widget_limits(name)
        assert (w.min, w.max) == (lim["min_value"], lim["max_value"]), (key, w.min, w.max, lim)


def test_the_page_limits_are_the_domains():
    from dashboard.dataset_inference import SETTINGS, limits

    for key, name in SETTINGS.items():
        d, got = InferenceOptions.domain(name), limits(key)
        if d.lo_open:
            assert d.lo < got["min_value"] < d.lo + (d.hi - d.lo) * 1e-3
        else:
            assert got["min_value"] == d.lo
        assert got["max_value"] == d.hi and isinstance(got["max_value"], int if d.kind == "int" else float)


def test_the_options_agree_with_the_engines_own_lists():
    from mia_core.dataset_inference import options as O
    from mia_core.dataset_inference.verdict import CORRECTIONS
    from mia_core.stats.settings import PREFIX_MODES

    assert tuple(O.PREFIXES) == tuple(PREFIX_MODES) and set(O.CORRECTIONS) == set(CORRECTIONS)
    assert math.isclose(O.DEFAULT_ALPHA, __import__("mia_core.api.inference", fromlist=["x"]).DEFAULT_ALPHA)
    from mia_core.data.overlap import DEFAULT_YEAR_CUTOFF

    assert ShiftOptions.default("year_cutoff") == DEFAULT_YEAR_CUTOFF
    from mia_core.pipeline import options as R

    assert tuple(R.PREFIXES) == tuple(PREFIX_MODES)


@pytest.mark.parametrize("cls,doc", [(InferenceOptions, "docs/dataset-inference.md"), (MlmOptions, "docs/mlm.md"),
                                     (DocumentOptions, "docs/documents.md"), (ShiftOptions, "docs/metrics.md"),
                                     (RunOptions, "docs/api.md"), (TargetOptions, "docs/controlled-targets.md")])
def test_the_docs_table_is_the_one_the_fields_make(cls, doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    start = text.index(f"<!-- options:{cls.__name__} -->") + len(f"<!-- options:{cls.__name__} -->")
    table = text[start:text.index("<!-- /options -->", start)].strip()
    assert table == cls.table(), "regenerate the table: python -c 'from ... import %s as O; print(O.table())'" % cls.__name__


def test_the_shared_bounds_hold_on_every_path():
    """A seed and a bootstrap count have one bound each (``mia_core.options.SEED`` / ``BOOTSTRAP``): ``mia run``'s
    flags and ``prepare_run`` refuse 10**12 resamples in one line before any model loads (issue 50: one path
    skipped the cap and sat at "metrics 95 %")."""
    from helpers import mia

    from mia_core.api.request import prepare_run
    from mia_core.data import texts_from_strings
    from mia_core.options import BOOTSTRAP, SEED

    assert BOOTSTRAP.hi == 1_000_000 and SEED.hi == 2**32 - 1
    for flag, value in (("--bootstrap", "1000000000000"), ("--seed", str(2**32))):
        out = mia("run", "--demo", flag, value)
        lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
        assert out.returncode == 2 and len(lines) == 1 and flag in lines[0] and value in lines[0], out.stderr
    data = texts_from_strings(TEXTS[:4], OTHER[:4])
    for kw in ({"n_bootstrap": 10**12}, {"seed": 2**32}):
        with pytest.raises(SettingsError) as e:
            prepare_run(data, **kw)
        assert "\n" not in str(e.value) and next(iter(kw)) in str(e.value)


def test_folds_beyond_the_units_are_reported_as_the_folds_used():
    """Issue 50: ``--folds`` above the number of units was accepted and reported as asked ("100 folds") while the
    test cut one unit per fold. The settings now record the folds used, and a note says why."""
    from mia_core.api.inference import prepare_inference

    from mia_core.documents import Document

    def books(word, n):
        return [Document(name=f"{word}{i}", text=" ".join(f"{word}{i} line {j} of a long tale" for j in range(60)),
                         source="(test)", strip={"stripped": False}) for i in range(n)]

    req = prepare_inference(books("harbour", 6), books("mountain", 6), books=True, folds=15, passage_words=16)
    assert req.checked.settings["folds"] == 12
    assert any("15 folds were asked for" in n and "12 folds" in n for n in req.checked.notes), req.checked.notes
    assert prepare_inference(TEXTS[:10], OTHER[:10], folds=20).checked.settings["folds"] == 20  # 20 texts: kept


def test_the_document_options_are_the_audits_keywords_and_the_one_check_of_them():
    """Issue 49: DocumentOptions declares every setting of run_document_audit (no more, no fewer) and is the check the
    API, the engine and the command line use: a list, pairs or a mapping are read by their declared domain, and a bad
    one is one line naming the option, before any book is read."""
    import inspect

    from helpers import mia
    from mia_core.api.documents import check_document_settings
    from mia_core.documents import run_document_audit

    own = {"member_docs", "nonmember_docs", "lm", "reference", "progress"}
    assert set(DocumentOptions.declared()) == set(inspect.signature(run_document_audit).parameters) - own
    o = check_document_settings(normalizations="MaxNormTF, nonorm", features="both", partial_lengths="100, 200",
                                partial_pipelines=[("maxnorm_tf", "hist")], n_jobs=-1, baseline_attacks="loss,zlib")
    assert o.normalizations == ("maxnorm_tf", "nonorm") and o.features == ("hist", "agg")
    assert o.partial_lengths == (100, 200) and o.partial_pipelines == (("maxnorm_tf", "hist"),) and o.n_jobs == -1
    assert o.baseline_attacks == ("loss", "zlib") and check_document_settings(partial_lengths="none").partial_lengths \
        is None
    for name, value, said in (("partial_lengths", [100, 0], "partial_lengths[1]"),
                              ("partial_pipelines", [("maxnorm_tf", "histo")], "maxnorm_tf+histo"),
                              ("normalizations", "maxnorm", "unknown normalisation"), ("n_jobs", 0, "n_jobs"),
                              ("baseline_neighbours", "sometimes", "baseline_neighbours")):
        with pytest.raises(SettingsError) as e:
            check_document_settings(**{name: value})
        assert said in str(e.value) and "\n" not in str(e.value) and e.value.options[-1] == name, (name, str(e.value))
    r = mia("documents", "--demo", "--partial-lengths", "100,zero")  # the flag's check is the domain's, before a read
    assert r.returncode == 2 and "--partial-lengths" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = mia("documents", "--demo", "--trees", "0")
    assert r.returncode == 2 and "--trees must be >= 1 (a whole number), or none, got 0" in r.stderr, r.stderr


def test_the_document_page_limits_are_the_domains():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / "3_Document_audit.py"), default_timeout=60).run()
    for key, name in (("doc_context", "context"), ("doc_folds", "folds"), ("doc_bins", "n_bins"),
                      ("doc_trees", "n_estimators"), ("doc_seed", "seed")):
        w, lim = at.number_input(key=key), DocumentOptions.widget_limits(name)
        assert (w.min, w.max) == (lim.get("min_value"), lim.get("max_value")), (key, w.min, w.max, lim)


def test_the_run_options_are_prepare_runs_keywords_and_the_pages_limits():
    """Issue 49: RunOptions declares the calibration run's own settings, under prepare_run's keyword names, and is the
    check of them for prepare_run, audit and score (one line naming the option) and for a RunConfig built by hand
    (check_config); the Calibration page's number widgets take their limits from it (a context of 0, the model's
    own, stays reachable)."""
    import inspect

    from streamlit.testing.v1 import AppTest

    import mia_core
    from mia_core.api.request import prepare_run
    from mia_core.data import texts_from_strings
    from mia_core.pipeline import RunConfig, check_config
    from mia_core.stats import StatsSettings

    assert set(RunOptions.declared()) <= set(inspect.signature(prepare_run).parameters)
    ds = texts_from_strings(TEXTS[:4], OTHER[:4])
    for name, value in (("alpha", 1.0), ("split", 1.5), ("context", 1), ("n_bootstrap", -1), ("prefix", "sometimes"),
                        ("blind", "yes"), ("split_seed", -1)):
        with pytest.raises(SettingsError) as e:
            prepare_run(ds, model="smollm2", attacks="loss", **{name: value})
        assert e.value.options[-1] == name and "\n" not in str(e.value), (name, str(e.value))
    with pytest.raises(SettingsError, match="alpha"):
        mia_core.audit(TEXTS[:4], OTHER[:4], alpha=0)
    with pytest.raises(SettingsError, match="prefix"):
        mia_core.score(TEXTS[:2], "smollm2", prefix="sometimes")
    with pytest.raises(SettingsError, match="RunConfig.stats.context"):
        check_config(RunConfig(attacks=["loss"], stats=StatsSettings(context=1)))
    assert prepare_run(ds, model="smollm2", attacks="loss", prefix=True, split=0).config.split is None
    at = AppTest.from_file(str(ROOT / "pages" / "2_Calibration_run.py"), default_timeout=60).run()
    for key, name in (("cal_boot", "n_bootstrap"), ("cal_seed", "seed"), ("cal_ctx", "context")):
        w, lim = at.number_input(key=key), RunOptions.widget_limits(name)
        assert (w.min, w.max) == (lim.get("min_value"), lim.get("max_value")), (key, w.min, w.max, lim)
    assert RunOptions.widget_limits("context")["min_value"] == 0


def test_every_declared_default_lies_inside_its_widget_limits():
    """A page's number widget starts at the declared default: a limit that excludes it would silently change the
    setting (the traps page showed max_perplexity 101 for the declared 100: an open lower end of [1, 1e6) had moved
    in by a ten-thousandth of the whole range)."""
    import importlib
    import pkgutil

    import mia_core
    from mia_core.options import Options

    for m in pkgutil.walk_packages(mia_core.__path__, "mia_core."):
        if m.name.endswith("options"):
            importlib.import_module(m.name)
    seen = 0

    def every(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from every(sub)

    for cls in set(every(Options)):
        for name, f in cls.declared().items():
            d = f.metadata["domain"]
            if d.kind not in ("int", "float") or not isinstance(f.default, (int, float)) or isinstance(f.default, bool):
                continue
            lim = cls.widget_limits(name)
            seen += 1
            assert lim.get("min_value", f.default) <= f.default <= lim.get("max_value", f.default), (cls, name, lim)
    assert seen >= 20


def test_the_page_widgets_outside_the_audits_take_their_limits_from_declared_domains():
    """The Controlled experiment's split, the engine's workers, Inspect's neighbours and the calibration page's attack
    parameters: each number widget's limits are a declared domain's (no limit written on a page), and the front door
    refuses a value outside it in one line naming it."""
    from mia_core.api import widget_limits
    from mia_core.api.data import split_corpus
    from mia_core.attacks import REGISTRY

    assert SplitOptions.widget_limits("members_pct") == {"min_value": 0, "max_value": 100}
    assert EngineOptions.widget_limits("workers") == {"min_value": 1}
    assert widget_limits(REGISTRY["neighbourhood"].domains["n"]) == {"min_value": 1}
    pages = {p.name: p.read_text(encoding="utf-8") for p in [*(ROOT / "pages").glob("*.py"),
                                                              *(ROOT / "dashboard").glob("*.py")]}
    assert "min_value=0, max_value=100" not in pages["6_Controlled_experiment.py"]
    assert '"Ray workers", 1, 1024' not in pages["engine.py"] and '"Neighbours", 1, 200' not in pages["inspect.py"]
    texts = [f"text {i}" for i in range(20)]
    with pytest.raises(SettingsError) as e:
        split_corpus(texts, (120, -10, -10), 0)
    assert "members_pct" in e.value.options and "\n" not in str(e.value)
    assert [len(v) for v in split_corpus(texts, (40, 40, 20), 0).values()] == [8, 8, 4]
    from mia_core.engines import make_engine

    for kw, name in ((dict(workers=0), "workers"), (dict(gpus_per_worker=-1), "gpus_per_worker"),
                     (dict(cpus_per_worker=0), "cpus_per_worker")):
        with pytest.raises(SettingsError) as e:  # the engine's own guard, before Ray is imported
            make_engine("ray", **kw)
        assert name in e.value.options and "\n" not in str(e.value), kw
