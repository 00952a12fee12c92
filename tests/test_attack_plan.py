"""Which attacks run (issue 12, item 7), and every attack parameter from the command line.

``--attacks all`` runs every attack the given inputs allow and says what it skipped and why;
an attack named explicitly that lacks an input stops the run with one line, before any model
is loaded. ``--param ATTACK.NAME=VALUE`` reaches every registered parameter.
"""
from __future__ import annotations

import pytest

from helpers import assert_one_error
from mia_core.attacks import REGISTRY
from mia_core.cli import main
from mia_core.cli.run import list_params, parse_params
from mia_core.errors import SettingsError
from mia_core.pipeline import plan_attacks

MEMBERS = "The first member text of this small set.\nThe second member text, a little longer.\nA third member.\n"
NONMEMBERS = "A non-member sentence that was never trained on.\nAnother unseen non-member text here.\nA third one.\n"


class ModelLoaded(Exception):
    pass


@pytest.fixture
def no_model(monkeypatch):
    """Loading a model raises ``ModelLoaded``: a check that must come first did not."""
    def boom(*a, **k):
        raise ModelLoaded("a model was loaded")

    import mia_core.models as models

    monkeypatch.setattr(models, "load_causal_lm", boom)


@pytest.fixture
def data(tmp_path):
    (tmp_path / "m.txt").write_text(MEMBERS)
    (tmp_path / "n.txt").write_text(NONMEMBERS)
    return tmp_path


def _run(d, *extra):
    return ["run", "--members", str(d / "m.txt"), "--nonmembers", str(d / "n.txt"), "--quiet",
            "--out", str(d / "out"), *extra]


# ----------------------------------------------------------------------------- the plan
def test_all_skips_what_the_inputs_do_not_allow_and_says_why():
    from mia_core.cli import build_parser, flag_names

    flags = flag_names(build_parser())  # each reason names its options; the CLI words them as flags
    run, skipped = plan_attacks("all", have=set())
    assert {"loss", "zlib", "lowercase", "min_k", "min_k_pp", "neighbourhood"} <= set(run)
    assert "ref" in skipped and "--reference" in skipped["ref"].worded(flags)
    assert "smia" in skipped and "--split" in skipped["smia"].worded(flags) and "split" in skipped["smia"]
    assert not set(run) & set(skipped)
    assert set(run) | set(skipped) == set(REGISTRY)
    # every attack that needs a population says so when there is none
    for name, a in REGISTRY.items():
        if "population" in a.inputs_needed():
            assert "--population" in skipped[name].worded(flags) and "--" not in skipped[name]
    # with every input, nothing is skipped
    run, skipped = plan_attacks("all", have={"reference", "labels", "population"})
    assert skipped == {} and run == list(REGISTRY)


def test_named_attacks_that_cannot_run_stop_the_run():
    with pytest.raises(SettingsError, match="reference model") as e:
        plan_attacks("loss,ref", have=set())
    assert "\n" not in str(e.value)
    with pytest.raises(SettingsError, match="split"):
        plan_attacks(["smia"], have={"reference"})
    assert plan_attacks("loss,ref", have={"reference"}) == (["loss", "ref"], {})


# ----------------------------------------------------------------------------- the command line
@pytest.mark.parametrize("attacks, needle", [("smia", "labelled texts"), ("loss,ref", "--reference")])
def test_named_attack_without_its_input_is_refused_before_any_model(attacks, needle, data, no_model, capsys):
    rc = main(_run(data, "--attacks", attacks))
    assert_one_error(rc, capsys.readouterr().err, needle)
    assert not (data / "out").exists()


def test_all_prints_what_it_skips_before_loading_a_model(data, no_model, capsys):
    with pytest.raises(ModelLoaded):
        main(_run(data, "--attacks", "all"))
    err = capsys.readouterr().err
    assert "skipping smia" in err and "skipping ref" in err


def test_population_that_overlaps_the_audited_texts_is_refused_before_any_model(data, no_model, capsys):
    (data / "pop.txt").write_text("A third member.\nSomething else entirely, never seen.\n")
    rc = main(_run(data, "--population", str(data / "pop.txt")))
    assert_one_error(rc, capsys.readouterr().err, "disjoint")


# ----------------------------------------------------------------------------- --param
def test_param_reaches_every_registered_parameter_with_its_type(tmp_path):
    (tmp_path / "texts.txt").write_text("one text\n")
    (tmp_path / "smia").mkdir()
    for f in ("smia.safetensors", "smia.json"):
        (tmp_path / "smia" / f).write_text("")
    # parameters whose domain is a file, a folder or a generator spec (checked when given)
    valid = {"prefix": tmp_path / "texts.txt", "corpus": tmp_path / "texts.txt", "save": tmp_path / "new",
             "load": tmp_path / "smia", "generator": "offline", "windows": "2,3",
             "member_prefix": tmp_path / "texts.txt"}
    for name, a in REGISTRY.items():
        for key, default in a.params.items():
            kind = a.param_type(key)
            value = {bool: "true", int: "3", float: "0.5"}.get(kind, str(valid.get(key, "x")))
            if key in a.choices:
                value = a.choices[key][-1]
            got = parse_params([f"{name}.{key}={value}"], {})[name][key]
            assert type(got) is kind, (name, key, got)
    assert parse_params(["min_k.k=0.1", "smia.epochs=20"], {"min_k": {"k": 0.2}}) == {
        "min_k": {"k": 0.1}, "smia": {"epochs": 20}}


@pytest.mark.parametrize("item, needle", [
    ("min_k", "ATTACK.NAME=VALUE"),
    ("nope.k=1", "unknown attack"),
    ("min_k.q=1", "no parameter 'q'"),
    ("min_k.k=abc", "expected a number"),
    ("smia.epochs=2.5", "whole number"),
    ("ref.form=quotient", "must be one of difference, ratio"),
])
def test_bad_param_is_one_line_before_any_model(item, needle, data, no_model, capsys):
    rc = main(_run(data, "--param", item))
    assert_one_error(rc, capsys.readouterr().err, needle)


def test_list_params(capsys):
    assert main(["run", "--list-params"]) == 0
    out = capsys.readouterr().out
    assert out == list_params() + "\n"
    for name in REGISTRY:
        assert name in out
    assert "k=0.2" in out


def test_every_attack_registers_itself_in_the_registry_order():
    """Issue 31 item 7: each attack file registers itself with @register on its score; the import order in
    attacks/__init__.py is the registry's order (every table, "all", the page's list)."""
    import inspect

    from mia_core.attacks import REGISTRY, register
    from mia_core.attacks.base import Attack

    assert list(REGISTRY) == ["loss", "zlib", "lowercase", "ref", "min_k", "min_k_pp", "neighbourhood", "smia",
                              "gradnorm", "rmia", "recall", "dc_pdd", "wbc", "con_recall"]
    for name, a in REGISTRY.items():
        src = inspect.getsource(inspect.getmodule(a.score))
        assert f'@register("{name}"' in src, name
    with pytest.raises(ValueError, match="parameters and declared domains differ"):
        register(Attack("bad", "Bad", ("target",), lambda inputs: None, "", {"k": 1}))
    assert "bad" not in REGISTRY
