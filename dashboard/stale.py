"""A result is shown as the answer only to the inputs it came from (issue 53 item 3).

A page keeps, with its result, the signature of the inputs the run started from (:func:`signature`: its parts read
from the widgets, without reading a file: uploads by name, size and upload id, long texts by their hash). When the
page's inputs differ, :func:`result_box` says which parts changed and folds the result away under "Previous
result, from the previous inputs"; a result of unknown inputs (another tab's, one reopened from Runs) has no
signature and is labelled by its page instead. Every page that shows a result uses it: Calibration run, Document
audit, Masked-LM audit, Dataset inference and the pages made from an audit's declaration (``dashboard.audit_page``).
"""
from __future__ import annotations

import hashlib

import streamlit as st

from .ui import md_text


def _plain(v):
    """``v`` as a value that compares equal exactly when the input is the same."""
    if hasattr(v, "file_id") or (hasattr(v, "getvalue") and hasattr(v, "name")):  # an upload
        return ("file", getattr(v, "name", None), getattr(v, "size", None), getattr(v, "file_id", None))
    if isinstance(v, dict):
        return tuple(sorted((str(k), _plain(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple, set, frozenset)):
        items = [_plain(x) for x in v]
        return tuple(sorted(items, key=repr)) if isinstance(v, (set, frozenset)) else tuple(items)
    if isinstance(v, str) and len(v) > 200:
        return ("text", hashlib.sha256(v.encode("utf-8", "surrogatepass")).hexdigest())
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return repr(v)


def signature(**parts) -> dict[str, str]:
    """The inputs' signature, one entry per named part (``data=...``, ``model=...``, ``settings=...``)."""
    return {k: repr(_plain(v)) for k, v in parts.items()}


def stale_parts(was: dict | None, now: dict, words: dict[str, str]) -> list[str]:
    """The parts (in ``words``) whose signature differs from the one the result came from; none when unknown."""
    if not was:
        return []
    return [w for k, w in words.items() if was.get(k) != now.get(k)]


def result_box(stale: list[str], *, button: str, title: str):
    """Where the result is drawn: the page itself, or, when the inputs changed (``stale``), a folded expander under
    a line that says what changed and which button answers the current inputs."""
    if not stale:
        return st.container()
    st.info(f"**The inputs have changed** ({', '.join(stale)}) since this result: press **{button}** for the current "
            "ones. The previous result is kept below, labelled.", icon=":material/history:")
    return st.expander(md_text(f"Previous result, from the previous inputs: {title}"), expanded=False)
