"""One exception family for everything a user can get wrong.

The CLI prints ``MiaError`` messages as one line and exits non-zero; the dashboard
shows them in an ``st.error`` box. Anything else escaping is a bug.

:func:`safe_text` is how every message that may carry a user string (a file or zip-member name,
a text id, a model name) is printed: control characters escaped, one line.
"""
from __future__ import annotations

import re


class MiaError(Exception):
    """A problem the user can fix (bad input, unknown model, too little data...)."""


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
