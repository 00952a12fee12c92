"""The pages' "where the model passes run" setting: local (this process) or Ray workers.

:func:`engine_widgets` draws the choice (in a page's advanced settings) and returns it;
:func:`engine_for` turns it into a ``mia_core.engines`` engine when Run is pressed (Ray is started, or
joined, then: a missing Ray or an unreachable address is a one-line ``SettingsError`` before any model
loads). One Ray cluster serves the whole server: started by the first run that asks for it, joined by
later ones, left running until the server stops.
"""
from __future__ import annotations

import streamlit as st

from mia_core.engines import LocalEngine, make_engine
from mia_core.engines.options import EngineOptions

ENGINE_LABELS = {"local": "This process (local)", "ray": "Ray workers"}


def engine_widgets(prefix: str) -> dict:
    """The engine choice: ``{"kind", "workers", "address"}``. Keys are ``{prefix}_engine`` etc."""
    c = st.columns(3)
    kind = c[0].selectbox("Where the model passes run", list(ENGINE_LABELS), format_func=ENGINE_LABELS.get,
                          key=f"{prefix}_engine",
                          help="Ray: Ray workers, each keeping its model between passes, give the same numbers and share "
                               "this server's statistics cache (needs pip install 'mia-dashboard[ray]'). The "
                               "neighbours' generation and embeddings stay in this process.")
    workers = int(c[1].number_input("Ray workers", value=EngineOptions.default("workers"), step=1,
                                    key=f"{prefix}_workers", disabled=kind != "ray",
                                    **EngineOptions.widget_limits("workers")))  # the declared option's limits
    address = c[2].text_input("Ray cluster address", key=f"{prefix}_ray_address", disabled=kind != "ray",
                              placeholder="empty: start one on this machine",
                              help="host:port of a cluster started with `ray start --head` (or $RAY_ADDRESS)")
    return {"kind": kind, "workers": workers, "address": address.strip() or None}


def engine_for(choice: dict):
    """The engine of :func:`engine_widgets`' choice (``SettingsError`` in one line when Ray cannot start)."""
    if choice.get("kind", "local") == "local":
        return LocalEngine()
    return make_engine("ray", workers=int(choice.get("workers") or 1), address=choice.get("address"))
