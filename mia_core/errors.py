"""One exception family for everything a user can get wrong.

The CLI prints ``MiaError`` messages as one line and exits non-zero; the dashboard
shows them in an ``st.error`` box. Anything else escaping is a bug.

**An error names the problem; the front end names the control.** A message about a setting
writes the setting as ``{name}``, the API's parameter name, and lists it in ``options``::

    raise SettingsError("{batch_tokens} must be at least 1, got 0", options=("batch_tokens",))

``str(e)`` reads "batch_tokens must be at least 1, got 0" (what a Python user passes);
:meth:`MiaError.worded` puts each front end's own word there: the CLI its flag
(``mia_core.cli.flag_names``: "--batch-tokens"), a page its widget's label or a description
(``dashboard.options.LABELS``: "the batch size (tokens)"). Only the listed names are replaced, so braces
in a file name or a user's text are left as they are. A note that is not an error but names settings the
same way (a skipped attack's reason) is a :class:`Worded` string; :func:`in_words` words either.

:func:`safe_text` is how every message that may carry a user string (a file or zip-member name,
a text id, a model name) is printed: control characters escaped, one line.
"""
from __future__ import annotations

import re


class MiaError(Exception):
    """A problem the user can fix (bad input, unknown model, too little data...).

    ``options``: the settings the message is about, by their API parameter names, each written
    ``{name}`` in ``message`` (see the module docstring); a :class:`Worded` message brings its own."""

    def __init__(self, message: str = "", *, options: tuple[str, ...] | list[str] = ()):
        self.template = getattr(message, "template", None) or str(message)
        self.options = tuple(dict.fromkeys((*getattr(message, "options", ()), *options)))
        super().__init__(self.worded())

    def worded(self, names: "dict[str, str] | None" = None) -> str:
        """The message with each option as ``names`` calls it (its API name where ``names`` has none)."""
        return _word(self.template, self.options, names)


def _word(template: str, options: tuple[str, ...], names: "dict[str, str] | None") -> str:
    out = template
    for o in options:
        out = out.replace("{" + o + "}", (names or {}).get(o, o))
    return out


class Worded(str):
    """A note about settings that is not an error (a skipped attack's reason): a ``str`` that reads with
    the API's names, written and worded like a :class:`MiaError` message (``Worded("needs {reference}",
    ("reference",))``; ``.worded(names)``)."""

    def __new__(cls, template: str, options: tuple[str, ...] | list[str] = ()):
        self = super().__new__(cls, _word(str(template), tuple(options), None))
        self.template, self.options = str(template), tuple(options)
        return self

    def worded(self, names: "dict[str, str] | None" = None) -> str:
        """The note with each option as ``names`` calls it (its API name where ``names`` has none)."""
        return _word(self.template, self.options, names)


def in_words(text, names: "dict[str, str] | None" = None) -> str:
    """``text`` (a :class:`MiaError`, a :class:`Worded` note, or anything else) with its options as
    ``names`` calls them; anything else as ``str(text)``."""
    worded = getattr(text, "worded", None)
    return worded(names) if callable(worded) else str(text)


class DataError(MiaError):
    """Input files or texts that cannot be used as given."""


class ModelError(MiaError):
    """A model that cannot be found, loaded or run."""


class SettingsError(MiaError):
    """Incompatible or invalid settings (e.g. a saved SMIA model applied to other settings)."""


# Characters that must not reach a terminal or a log as they are: C0 and C1 controls (ESC starts a
# terminal escape sequence, CR and LF start a new line that can pass for another ``error:`` line), DEL,
# the Unicode line and paragraph separators, and the bidirectional overrides that reorder what is shown.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match) -> str:
    c = m.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def safe_text(s) -> str:
    """``s`` as one printable line: control characters shown as escapes (``\\x1b``, ``\\n``, ``\\r``,
    ``\\t``, ``\\u202e``...), so a file name, zip member name, text id or model name inside a message
    cannot colour or clear the terminal, move the cursor, or start a line of its own (a forged
    ``error:``). Everything else, backslashes included, is left as it is."""
    return _UNSAFE.sub(_escape, str(s))


def safe_lines(s) -> str:
    """:func:`safe_text` for a multi-line report: its line breaks are kept, every other control
    character is escaped."""
    return "\n".join(safe_text(line) for line in str(s).split("\n"))
