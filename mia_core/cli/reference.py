"""``docs/audits.md``, generated: every registered audit from its declaration (what it asks, its sets, its command,
page and run store folder, its options with their flags). ``tests/test_audit_command.py`` holds the file equal to
:func:`reference`; regenerate it with ``python -m mia_core.cli.reference > docs/audits.md``."""
from __future__ import annotations

import argparse

from ..audits import AUDITS
from . import COMMANDS
from .audit_command import flag_of


def hand_written() -> set[str]:
    """The commands a module of :data:`mia_core.cli.COMMANDS` adds (the other audits' are made from their
    declaration)."""
    sub = argparse.ArgumentParser().add_subparsers()
    for command in COMMANDS:
        command.register(sub)
    return set(sub.choices)


def _flag(name: str, field, made: bool) -> str:
    if not made:
        return "see `--help`"
    on = field.metadata["domain"].kind == "bool" and bool(field.default)
    return f"`{flag_of(('no_' if on else '') + name)}`"


def reference() -> str:
    """The page's Markdown (see the module docstring)."""
    written = hand_written()
    lines = ["# The audits", "",
             "Generated from the audit registry (`mia_core.audits`) by `python -m mia_core.cli.reference`; "
             "`tests/test_audit_command.py` holds this page equal to the code. An audit registered without a command "
             "module or a page of its own gets both from its declaration (`mia_core.cli.audit_command`, "
             "`dashboard.audit_page`; `docs/layout.md`, \"Adding an audit\").", ""]
    for name, a in AUDITS.items():
        made = name not in written
        sets = " ".join(f"{flag_of(s)} FILE..." for s in a.sets)
        store = a.store()
        lines += [f"## {a.title} (`{name}`)", "", f"{a.citation}. {a.about}".strip(), "",
                  f"- **Command:** `mia {name}`" + (f", made from the declaration: `mia {name} {sets} "
                                                  + ("[--demo] " if a.demo_words else "")
                                                  + "[--model MODEL] [options] [--out DIR] [--save]`" if made else ""),
                  f"- **Page:** `{a.page}`" + (", made from the declaration" if made else ""),
                  f"- **Sets:** {', '.join(f'`{s}`' for s in a.sets)}",
                  f"- **Saved runs:** `{store.subdir + '/' if store else ''}` in the runs folder"
                  if store else "- **Saved runs:** the runs folder itself (the calibration store)",
                  f"- **A saved folder holds:** `{a.marker}` (`mia_core.load` reads any audit's back)", "",
                  "| option | flag | default | values | meaning |", "|---|---|---|---|---|"]
        for n, f in a.options().declared().items():
            lines.append(f"| `{n}` | {_flag(n, f, made)} | `{f.default!r}` | {f.metadata['domain'].describe()} | "
                         f"{f.metadata['help']} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - the docs' generator
    print(reference(), end="")
