"""Issue 31 item 6: an error names the problem, a front end names the control.

An engine error writes each setting it is about as ``{api_name}`` and lists it in ``options``
(``mia_core.errors``): ``str(e)`` reads the Python API's name, the CLI prints the flag
(``mia_core.cli.flag_names``), a page the widget's label (``dashboard.options.LABELS``). Fast, no model.
"""
from __future__ import annotations

import ast
import re
import time
from pathlib import Path

import pytest

from mia_core.cli import build_parser, flag_names, main
from mia_core.errors import DataError, MiaError, SettingsError, Worded

ROOT = Path(__file__).resolve().parents[1]
AMBIGUOUS = "label,a,b\n1,hello there,foo bar\n0,good night,baz qux\n1,x y,z w\n0,p q,r s\n"


@pytest.fixture
def ambiguous_table(tmp_path):
    """A labelled table with two text-like columns and none called 'text': the engine asks for the text column."""
    p = tmp_path / "t.csv"
    p.write_text(AMBIGUOUS)
    return p


def _engine_error(path) -> DataError:
    from mia_core.data import load_dataset

    with pytest.raises(DataError) as e:
        load_dataset(labelled=path)
    return e.value


def test_one_engine_error_in_each_front_ends_words(ambiguous_table, tmp_path, capsys):
    e = _engine_error(ambiguous_table)
    assert e.options == ("text_column",)
    # the Python API: its parameter name
    assert str(e).endswith("choose it with text_column.") and "--" not in str(e)
    # the CLI: the flag, as before
    assert main(["shift", "--labelled", str(ambiguous_table), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and err[-1].endswith("choose it with --text-column.")
    # the pages: the widget's label
    from dashboard.options import LABELS, worded

    assert worded(e).endswith(f"choose it with {LABELS['text_column']}.")
    assert LABELS["text_column"] == "Text column of tables" and "--" not in worded(e)


def test_the_pages_error_boxes_and_jobs_use_the_labels(ambiguous_table, monkeypatch):
    import dashboard.ui as ui
    from dashboard.jobs import JobRegistry

    shown = []
    monkeypatch.setattr(ui.st, "error", lambda body, **kw: shown.append(body))
    ui.show_error(_engine_error(ambiguous_table))
    assert len(shown) == 1 and "Text column of tables" in shown[0] and "--text-column" not in shown[0]

    def fail(progress):
        raise SettingsError("lower {folds}", options=("folds",))

    job = JobRegistry().start("test", "failing job", fail)
    for _ in range(200):
        if not job.running:
            break
        time.sleep(0.01)
    assert job.status == "error" and job.error == "lower Folds"


def test_skip_reasons_are_notes_in_each_front_ends_words():
    from dashboard.options import worded
    from mia_core.pipeline import plan_attacks

    _, skipped = plan_attacks("all", have=set())
    why = skipped["ref"]
    assert isinstance(why, Worded) and why == "needs a reference model (reference)"
    assert why.worded(flag_names(build_parser())) == "needs a reference model (--reference)"
    assert "Reference model" in worded(why)


def test_every_option_an_engine_message_names_has_a_flag_and_a_label():
    """The options named in the engine's messages (and in the notes it words): the CLI has a flag for
    each (none falls back to its bare API name), the pages a label or a description."""
    from dashboard.options import labels

    flags, words = flag_names(build_parser()), labels()
    named = _named_options()
    assert {"batch_tokens", "context", "reference", "population", "recall.prefix", "out", "overwrite"} <= named
    cli_only_names = {"out_dir"}  # finetune's own folder: make-target checks --out itself first
    assert not {o for o in named - cli_only_names if not flags.get(o, "").startswith("--")}
    assert not named - set(words)


# ----------------------------------------------------------------------------- no flag in an engine message
ERRORS = {"MiaError", "DataError", "ModelError", "SettingsError", "Worded"}
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_BACKTICKED = re.compile(r"`[^`]*`")  # a command to type (`pip install --no-deps x`, `mia cache clear --models`)


def _engine_modules():
    for p in sorted((ROOT / "mia_core").rglob("*.py")):
        if "cli" not in p.relative_to(ROOT / "mia_core").parts:
            yield p


def _strings(node, constants: dict) -> list[str]:
    """The literal text of ``node``: string constants and f-string parts, module constants followed."""
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.append(n.value)
        elif isinstance(n, ast.Name) and n.id in constants:
            out += _strings(constants[n.id], {})
    return out


def _messages(tree: ast.Module):
    """``(line, text)`` of every string inside a call that builds an engine error (``raise XError(...)``,
    ``return XError(...)``...) or a worded note."""
    constants = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign)
                 for t in n.targets if isinstance(t, ast.Name)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            name = n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", None)
            if name in ERRORS:
                for arg in [*n.args, *(k.value for k in n.keywords)]:
                    for s in _strings(arg, constants):
                        yield n.lineno, s


def _mia_flags() -> set[str]:
    return {f for v in flag_names(build_parser()).values() for f in _FLAG.findall(v)}


def test_no_engine_message_names_a_flag():
    mia_flags = _mia_flags()
    found = []
    for p in _engine_modules():
        for line, s in _messages(ast.parse(p.read_text(), str(p))):
            hits = set(_FLAG.findall(_BACKTICKED.sub("", s))) & mia_flags
            if hits:
                found.append(f"{p.relative_to(ROOT)}:{line}: {sorted(hits)}")
    assert not found, "an engine message names a CLI flag; write {api_name} and pass options=(...):\n" + \
        "\n".join(found)


def test_the_missing_input_reasons_name_options_not_flags():
    from mia_core.attacks.base import OPTIONAL_INPUTS

    for template, options in OPTIONAL_INPUTS.values():
        assert not _FLAG.findall(template)
        assert sorted(re.findall(r"\{([\w.]+)\}", template)) == sorted(options)


def test_the_check_sees_a_flag():
    """The source check itself: a flag in a raised message is found, a backticked command is not."""
    src = ('raise SettingsError("lower --folds")\n'
           'raise ModelError(f"got {x}: try --quantize int8")\n'
           'raise ModelError("run `mia cache clear --models`")\n'
           'M = "give --population"\nraise SettingsError(M)\n')
    flags = _mia_flags()
    hits = [h for _, s in _messages(ast.parse(src)) for h in _FLAG.findall(_BACKTICKED.sub("", s)) if h in flags]
    assert hits == ["--folds", "--quantize", "--population"]


def _named_options() -> set[str]:
    """Every ``options=(...)`` literal in the engine, and the options of the missing-input reasons."""
    from mia_core.attacks.base import OPTIONAL_INPUTS

    out = {o for _, opts in OPTIONAL_INPUTS.values() for o in opts}
    for p in _engine_modules():
        for n in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(n, ast.keyword) and n.arg == "options" and isinstance(n.value, (ast.Tuple, ast.List)):
                out |= {e.value for e in n.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    out |= {"out", "overwrite"}  # mia_core.runs.outputs: the folder's option is a parameter (default "out")
    return out


def test_a_wrapped_error_keeps_its_options():
    inner = SettingsError("{folds} must be at least 2", options=("folds",))
    outer = MiaError(inner, options=("seed",))
    assert outer.options == ("folds", "seed") and outer.worded({"folds": "--folds"}) == "--folds must be at least 2"
    assert MiaError(Worded("give {population}", ("population",))).worded({"population": "P"}) == "give P"
