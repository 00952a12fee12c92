"""The command and the docs made from an audit's declaration (``mia_core.cli.audit_command``,
``mia_core.cli.reference``): an audit registered without a command module gets ``mia NAME`` with a flag per set and
per option (their defaults, checks and help from the ``Options`` fields), and ``docs/audits.md`` is the registry's.
The command's run on a real model is ``tests/test_extraction.py``'s."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from mia_core.audits import AUDITS

ROOT = Path(__file__).resolve().parent.parent


def _commands():
    from mia_core.cli import build_parser

    return build_parser()._subparsers._group_actions[0].choices


def test_docs_audits_md_is_the_registry_s():
    from mia_core.cli.reference import reference

    assert (ROOT / "docs" / "audits.md").read_text(encoding="utf-8") == reference(), \
        "regenerate: python -m mia_core.cli.reference > docs/audits.md"
    assert "audits.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_every_registered_audit_is_a_command_and_the_others_are_made_from_their_declaration():
    from mia_core.cli.reference import hand_written

    commands = _commands()
    assert set(AUDITS) <= set(commands)
    assert {"run", "documents", "mlm", "infer-dataset"} <= hand_written() and "extraction" not in hand_written()


def test_a_new_audit_gets_its_command_from_its_declaration(monkeypatch):
    """A throwaway audit (the extraction audit's declaration under another name, with a third set): its command has a
    flag per set and per option, checks an option by its domain while the arguments are read, and a true/false
    option that is on by default is a ``--no-`` switch."""
    import contextlib
    import io

    from mia_core.cli import main

    toy = replace(AUDITS["extraction"], name="toy-audit", title="Toy audit", sets=("members", "nonmembers", "extra"))
    monkeypatch.setitem(AUDITS, "toy-audit", toy)
    p = _commands()["toy-audit"]
    flags = {s for a in p._actions for s in a.option_strings}
    assert {"--members", "--nonmembers", "--extra", "--model", "--prefix-tokens", "--suffix-tokens", "--n-bootstrap",
            "--seed", "--batch-tokens", "--no-cache", "--out", "--save", "--quiet"} <= flags
    args = p.parse_args(["--members", "a.txt", "--nonmembers", "b.txt", "--extra", "c.txt", "--prefix-tokens", "12",
                         "--no-cache"])
    assert (args.prefix_tokens, args.suffix_tokens, args.cache) == (12, 50, False)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["toy-audit", "--members", "a.txt", "--nonmembers", "b.txt", "--extra", "c.txt",
                   "--suffix-tokens", "0"])
    lines = [line for line in err.getvalue().splitlines() if line.startswith("error:")]
    assert rc == 2 and len(lines) == 1 and "--suffix-tokens must be in [1, 4096]" in lines[0], err.getvalue()


def test_the_demo_flag_brings_the_demo_s_sets_model_and_settings_and_refuses_sets_beside_it(monkeypatch, tmp_path):
    """``--demo`` (an audit that declares a demo): its sets and model reach ``prepare``, its own settings are said
    on stderr; sets given beside it, or no sets and no ``--demo``, are one line before anything is read."""
    import mia_core.cli.audit_command as command
    from helpers import mia

    seen = {}

    from mia_core.errors import SettingsError

    def fake_prepare(name, **inputs):
        seen.update(inputs, name=name)
        raise SettingsError("stopped before any model loads")

    monkeypatch.setattr(command, "prepare", fake_prepare)
    p = mia("extraction", "--demo", "--quiet")
    assert "stopped before any model loads" in p.stderr
    assert seen["name"] == "extraction" and len(seen["members"]) == len(seen["nonmembers"]) == 100
    assert seen["model"].endswith("demo/target") and (seen["prefix_tokens"], seen["suffix_tokens"]) == (16, 16)
    assert "the demo runs with --prefix-tokens 16, --suffix-tokens 16 (its own)" in p.stderr
    for args, words in ((("--demo", "--members", tmp_path / "m.txt"), "--demo brings its own sets"),
                        ((), "give --members and --nonmembers, or --demo")):
        p = mia("extraction", *args)
        lines = [line for line in p.stderr.splitlines() if line.startswith("error:")]
        assert p.returncode == 2 and len(lines) == 1 and words in lines[0], p.stderr
