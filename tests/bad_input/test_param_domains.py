"""Attack parameters outside their declared domain (issue 27, item 5): refused before any model loads.

Every attack parameter has a declared domain (``DOMAINS`` next to ``DEFAULTS`` in its attack module,
``mia_core.options``), checked by one function (``mia_core.attacks.check_params``) that the
CLI (``--param``, ``--smia-save``, ``--smia-load``), the pipeline (``run_attacks`` ->
``pipeline.check_config``) and the calibration page (``dashboard.calibration.build_config``) call.
nan, inf, negative counts, fractions out of range, wrong types, device files and /proc paths are one
line naming the parameter, the value and the domain; ``mia run`` exits 2 with one ``error:`` line.

The CLI cases run in-process (``mia_core.cli.main``) with the model loader replaced by a function that
fails the test; the pipeline cases hand ``run_attacks`` a target that fails the test when touched.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from helpers import assert_one_error, run_mia
from mia_core.attacks import REGISTRY, check_params
from mia_core.cli import main
from mia_core.errors import DataError, MiaError, SettingsError

MEMBERS = "The first member text of this small set.\nThe second member text, a little longer.\nA third member.\n" \
          "A fourth member text.\n"
NONMEMBERS = "A non-member sentence that was never trained on.\nAnother unseen non-member text here.\n" \
             "A third one.\nAnd a fourth non-member.\n"


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "m.txt").write_text(MEMBERS)
    (d / "n.txt").write_text(NONMEMBERS)
    return d


def _run(d, *extra) -> list[str]:
    return ["run", "--members", str(d / "m.txt"), "--nonmembers", str(d / "n.txt"), "--quiet",
            "--out", str(d.parent / "out"), *extra]


class NoModel:
    """A target model that fails the test when anything of it is used."""

    def __getattr__(self, name):
        raise AssertionError(f"the target model was used ({name}) before the settings were checked")


# ----------------------------------------------------------------------------- numbers and words
BAD_VALUES = [
    ("min_k.k", ["nan", "inf", "-inf", "5", "0", "-0.1", "abc"]),
    ("min_k_pp.k", ["nan", "2"]),
    ("rmia.gamma", ["inf", "nan", "0", "-1"]),
    ("rmia.a", ["1.5", "-0.1", "nan"]),
    ("rmia.n_z", ["0", "-3", "2.5", "inf"]),
    ("rmia.seed", ["-1"]),
    ("rmia.online", ["maybe"]),
    ("neighbourhood.n", ["0", "-1", "inf", "nan", "2.5"]),
    ("neighbourhood.m", ["0"]),
    ("neighbourhood.dropout", ["1", "-0.5", "nan"]),
    ("neighbourhood.seed", ["-1"]),
    ("neighbourhood.generator", ["bogus"]),
    ("smia.n", ["-4"]),
    ("smia.epochs", ["0", "-5", "inf"]),
    ("smia.lr", ["0", "-1", "inf", "nan"]),
    ("smia.batch_size", ["1"]),
    ("smia.batch_texts", ["1", "-2"]),
    ("smia.weight_decay", ["-0.1", "inf"]),
    ("smia.val_fraction", ["0", "1", "nan"]),
    ("smia.train_seed", ["-1"]),
    ("smia.standardise", ["maybe"]),
    ("recall.n_shots", ["0", "-2", "1.5", "inf"]),
    ("dc_pdd.a", ["0", "-0.01", "inf", "nan"]),
    ("dc_pdd.first_occurrence", ["perhaps"]),
    ("gradnorm.p", ["l3"]),
    ("ref.form", ["quotient"]),
]


@pytest.mark.parametrize("param,values", BAD_VALUES, ids=[p for p, _ in BAD_VALUES])
def test_cli_bad_value_is_one_line_before_any_model(param, values, data, no_model, capsys):
    for v in values:
        rc = main(_run(data, "--param", f"{param}={v}"))
        err = capsys.readouterr().err
        line = assert_one_error(rc, err, f"--param {param}")
        assert v in line, line
        assert not (data.parent / "out").exists()


# ----------------------------------------------------------------------------- paths
PATHS = [
    ("recall.prefix", "/dev/zero"),
    ("recall.prefix", "/dev/stdin"),
    ("recall.prefix", "/proc/self/environ"),
    ("dc_pdd.corpus", "/dev/urandom"),
    ("dc_pdd.corpus", "/proc/cpuinfo"),
    ("smia.load", "/dev/zero"),
    ("smia.save", "/dev/null"),
    ("smia.save", "/proc/mia-x"),
    ("rmia.references", "/dev/zero"),
    ("rmia.references", "some/model,/proc/self"),
]


@pytest.mark.parametrize("param,path", PATHS, ids=[f"{p}={v}" for p, v in PATHS])
def test_cli_device_and_proc_paths_are_refused_before_any_model(param, path, data, no_model, capsys):
    rc = main(_run(data, "--param", f"{param}={path}"))
    line = assert_one_error(rc, capsys.readouterr().err, f"--param {param}")
    assert path.split(",")[-1] in line and ("/dev" in line or "/proc" in line), line


def test_missing_input_file_is_one_line(data, no_model, capsys):
    for param in ("recall.prefix", "dc_pdd.corpus", "smia.load"):
        rc = main(_run(data, "--param", f"{param}={data / 'nope.txt'}"))
        line = assert_one_error(rc, capsys.readouterr().err, f"--param {param}")
        assert "not found" in line


@pytest.mark.parametrize("case", ["proc", "file", "under_file", "device"])
def test_smia_save_unwritable_is_one_line_before_training(case, data, no_model, capsys):
    f = data / "taken.txt"
    f.write_text("not a folder")
    path = {"proc": "/proc/mia-smia", "file": str(f), "under_file": str(f / "sub"), "device": "/dev/null"}[case]
    rc = main(_run(data, "--attacks", "smia", "--split", "0.5", "--smia-save", path))
    line = assert_one_error(rc, capsys.readouterr().err, "--smia-save")
    assert path in line
    assert f.read_text() == "not a folder"


def test_smia_load_that_is_not_a_saved_model_is_one_line(data, no_model, capsys):
    for path, needle in (("/dev/zero", "/dev"), (str(data), "not a saved SMIA model")):
        rc = main(_run(data, "--attacks", "smia", "--smia-load", path))
        line = assert_one_error(rc, capsys.readouterr().err, "--smia-load")
        assert needle in line


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_gpus_per_worker_must_be_a_finite_number_at_least_0(value, data, no_model, capsys):
    rc = main(_run(data, "--gpus-per-worker", value))
    assert_one_error(rc, capsys.readouterr().err, "--gpus-per-worker")


@pytest.mark.slow
def test_subprocess_rmia_gamma_inf(tmp_path):
    """What a shell sees (the one subprocess here): exit 2 and one line, before the (missing) model."""
    (tmp_path / "m.txt").write_text(MEMBERS)
    (tmp_path / "n.txt").write_text(NONMEMBERS)
    r = run_mia("run", "--model", tmp_path / "no-such-model", "--members", tmp_path / "m.txt", "--nonmembers",
                tmp_path / "n.txt", "--attacks", "loss,rmia", "--population", tmp_path / "n.txt",
                "--param", "rmia.gamma=inf", "--out", tmp_path / "out", "--quiet", cwd=tmp_path)
    line = assert_one_error(r.returncode, r.stderr, "rmia.gamma")
    assert "inf" in line and "> 0" in line and "no-such-model" not in r.stderr


# ----------------------------------------------------------------------------- the Python API
API_BAD = [
    ("min_k", "k", float("nan")),
    ("min_k", "k", float("inf")),
    ("min_k", "k", 5),
    ("min_k", "k", "0.5x"),
    ("rmia", "gamma", float("inf")),
    ("rmia", "gamma", 0),
    ("rmia", "a", -0.5),
    ("rmia", "n_z", -1),
    ("neighbourhood", "n", -3),
    ("neighbourhood", "n", 2.5),
    ("neighbourhood", "n", True),
    ("smia", "epochs", float("nan")),
    ("smia", "lr", float("-inf")),
    ("smia", "save", "/dev/null"),
    ("recall", "n_shots", np.int64(0)),
    ("recall", "prefix", "/dev/zero"),
    ("dc_pdd", "a", np.float64(np.inf)),
    ("dc_pdd", "corpus", "/proc/self/environ"),
    ("gradnorm", "p", None),
]


@pytest.mark.parametrize("attack,name,value", API_BAD, ids=[f"{a}.{n}={v!r}" for a, n, v in API_BAD])
def test_run_attacks_refuses_before_touching_the_model(attack, name, value):
    from mia_core.data import texts_from_strings
    from mia_core.pipeline import RunConfig, run_attacks

    ds = texts_from_strings(MEMBERS.splitlines(), NONMEMBERS.splitlines())
    cfg = RunConfig(attacks=["loss", attack], params={attack: {name: value}}, n_bootstrap=0, blind=False)
    with pytest.raises(SettingsError) as e:
        run_attacks(ds, NoModel(), config=cfg, population=ds)
    msg = str(e.value)
    assert "\n" not in msg and f"{attack}.{name}" in msg, msg
    assert cfg.params == {attack: {name: value}} or math.isnan(float(value))  # the caller's config is left as given


def test_check_config_refuses_the_runs_own_numbers():
    from mia_core.pipeline import RunConfig, check_config
    from mia_core.stats import StatsSettings

    for kw, needle in (({"n_bootstrap": -1}, "n_bootstrap"), ({"population_alpha": float("nan")}, "population_alpha"),
                       ({"population_alpha": 1.5}, "population_alpha"), ({"split": 1.0}, "split"),
                       ({"seed": -2}, "seed"), ({"stats": StatsSettings(context=1)}, "stats.context"),
                       ({"stats": StatsSettings(batch_tokens=-8)}, "stats.batch_tokens")):
        with pytest.raises(SettingsError, match=needle):
            check_config(RunConfig(**kw))
    good = check_config(RunConfig(attacks=["min_k"], params={"min_k": {"k": "0.5"}}, split=0.5))
    assert good.params == {"min_k": {"k": 0.5}}


def test_calibration_page_uses_the_same_check():
    from dashboard.calibration import build_config
    from mia_core.data import texts_from_strings

    ds = texts_from_strings(MEMBERS.splitlines(), NONMEMBERS.splitlines())
    population = texts_from_strings(["A population text that is in neither audited set."],
                                    ["Another known non-member, also disjoint from both sets."])
    kw = dict(split=None, n_bootstrap=0, seed=0, context=None, blind=False, dataset=ds, reference=object(),
              population=population)
    for attack, name, value in (("rmia", "gamma", float("inf")), ("min_k", "k", float("nan")),
                                ("recall", "prefix", "/dev/zero"), ("dc_pdd", "a", -1.0)):
        with pytest.raises(SettingsError) as e:
            build_config([attack], {attack: {name: value}}, **kw)
        assert f"{attack}.{name}" in str(e.value) and "\n" not in str(e.value)
    cfg = build_config(["min_k", "rmia"], {"min_k": {"k": 1}, "rmia": {"gamma": 2, "n_z": "all"}}, **kw)
    assert cfg.params == {"min_k": {"k": 1.0}, "rmia": {"gamma": 2.0, "n_z": None}}


def test_calibration_page_widgets_and_run_button_use_the_domains(tmp_path, monkeypatch):
    """The page builds every parameter widget from its domain (no exception with every attack ticked)
    and pressing Run with a device file as ReCaLL's prefix is one error box naming the parameter,
    before the page looks for a model (the sidebar's target is a hub id that exists nowhere)."""
    pytest.importorskip("streamlit")
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from helpers import empty_cache

    monkeypatch.setenv("MIA_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("MIA_CACHE_DIR", str(empty_cache(tmp_path / "cache")))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120)
    at.session_state["mp_target"] = "custom"
    at.session_state["mp_target_custom"] = "nonsense-org/no-such-model-mia-test"
    at.switch_page("pages/2_Calibration_run.py")
    at.run()
    at.radio(key="cal_source").set_value("upload").run()
    at.file_uploader(key="cal_members").set_value([("m.txt", MEMBERS.encode(), "text/plain")])
    at.file_uploader(key="cal_nonmembers").set_value([("n.txt", NONMEMBERS.encode(), "text/plain")])
    at.multiselect(key="cal_attacks").set_value(list(REGISTRY)).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.number_input(key="cal_param_min_k_k").max == 1.0  # (0, 1] from min_k's declared domain
    a = at.text_input(key="cal_param_rmia_a")  # optional (unset: tuned): a text box, its domain in the help
    assert a.value == "" and "[0, 1]" in a.help and "auto" in a.help
    at.text_input(key="cal_param_recall_prefix").set_value("/dev/zero")
    at.button(key="go_cal").click().run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.main.error]
    assert any("recall.prefix" in e and "/dev/zero" in e for e in errors), errors
    assert not any("no target model" in e for e in errors)


# ----------------------------------------------------------------------------- writing the SMIA model
def test_smia_save_failure_after_training_is_one_line(tmp_path):
    from mia_core.attacks.smia import SmiaModel, build_net, save_smia

    f = tmp_path / "file.txt"
    f.write_text("x")
    model = SmiaModel(build_net(4), 4, np.zeros(5), np.ones(5), {})
    with pytest.raises(SettingsError) as e:
        save_smia(model, f / "sub")
    assert "cannot save the trained SMIA model" in str(e.value) and "\n" not in str(e.value)
    assert (save_smia(model, tmp_path / "ok") / "smia.json").exists()


# ----------------------------------------------------------------------------- good values
def test_every_parameter_has_a_domain_and_its_default_lies_in_it():
    for name, a in REGISTRY.items():
        assert set(a.domains) == set(a.params), name
        for key, default in a.params.items():
            got = a.domains[key].check(default, f"{name}.{key}")
            assert got == default or (default is None and got is None), (name, key, default, got)
            assert a.domains[key].describe()


def test_an_attack_without_declared_domains_cannot_be_registered():
    from mia_core.attacks import Attack, register
    from mia_core.options import number

    with pytest.raises(ValueError, match="declared domains"):
        register(Attack("bad_attack", "Bad", ("target",), lambda inputs, **k: None, "-", {"t": 1.0}))
    with pytest.raises(SettingsError, match="bad_attack.t"):
        register(Attack("bad_attack", "Bad", ("target",), lambda inputs, **k: None, "-", {"t": 2.0},
                        domains={"t": number(0, 1)}))
    assert "bad_attack" not in REGISTRY


def test_boundary_and_word_values_are_accepted(tmp_path):
    from mia_core.cli.run import parse_params

    (tmp_path / "pre.txt").write_text("a known non-member text\n")
    items = ["min_k.k=1", "min_k_pp.k=1e-3", "rmia.a=0", "rmia.gamma=1e-6", "rmia.n_z=all", "smia.batch_texts=0",
             "smia.lr=5e-6", "smia.epochs=20.0", "neighbourhood.dropout=0", "neighbourhood.generator=offline",
             "dc_pdd.corpus=bundled", "dc_pdd.first_occurrence=no", f"recall.prefix={tmp_path / 'pre.txt'}",
             f"smia.save={tmp_path / 'new' / 'deeper'}", "recall.separator= | "]
    got = parse_params(items, {})
    assert got["min_k"]["k"] == 1.0 and got["rmia"] == {"a": 0.0, "gamma": 1e-6, "n_z": None}
    assert got["smia"]["batch_texts"] == 0 and got["smia"]["epochs"] == 20 and type(got["smia"]["epochs"]) is int
    assert got["dc_pdd"] == {"corpus": None, "first_occurrence": False}
    assert got["recall"]["separator"] == " | "
    assert not (tmp_path / "new").exists()  # checking the folder to save to leaves nothing behind
    assert check_params(got) == got


def test_list_params_shows_the_domains(capsys):
    assert main(["run", "--list-params"]) == 0
    out = capsys.readouterr().out
    for needle in ("k=0.2", "in (0, 1]", "gamma=1.0", "> 0 (a finite number)", "0 or >= 2", "one of difference, ratio",
                   "no /dev, /proc or /sys path"):
        assert needle in out, needle


def test_errors_are_mia_errors_for_every_front_end():
    """A missing input file is a DataError (as every missing input); everything else a SettingsError."""
    with pytest.raises(DataError, match="not found"):
        check_params({"recall": {"prefix": "/no/such/prefix.txt"}})
    with pytest.raises(SettingsError):
        check_params({"recall": {"prefix": "/dev/zero"}})
    with pytest.raises(SettingsError, match="unknown attack"):
        check_params({"no_such": {}})
    with pytest.raises(SettingsError, match="no parameter 'q'"):
        check_params({"min_k": {"q": 1}})
    assert issubclass(DataError, MiaError)
