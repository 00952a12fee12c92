"""The dashboard answers only under the host names it is served by (DNS rebinding).

A web page can make its own host name resolve to 127.0.0.1 after it has loaded (DNS rebinding). For the
browser that page is then the same origin as the dashboard: it sends ``Host: evil.example:8501`` and
``Origin: http://evil.example:8501``, and Streamlit's WebSocket origin check lets a same-origin
connection through whatever its Host. So the page could drive the dashboard: read the texts and the
results, start runs, load models. The Host header is the one thing that still names the attacker's domain.

``.streamlit/config.toml`` sets ``server.allowedHosts`` to the loopback names, which Streamlit (1.61 and
later) checks in the WebSocket handshake: a foreign Host gets ``403`` and no session. :func:`refuse_foreign_host`,
called first thing in ``app.py``, applies the same list to the session itself, for Streamlit versions
without that option (there, when the server listens on a loopback address only, the loopback names). The
static page (``GET /``) is still served to any Host: it is the same file for everyone and does nothing
without the WebSocket. Serving the dashboard under another name needs that name in
``server.allowedHosts`` (``--server.allowedHosts myhost.example``; ``*`` accepts any).
"""
from __future__ import annotations

from urllib.parse import urlparse

LOOPBACK = ("localhost", "127.0.0.1", "::1")


def host_allowed(host: str | None, allowed) -> bool:
    """Whether a ``Host`` header (``name[:port]``) is one of ``allowed`` (host names; the port is ignored;
    ``*.example.com`` matches its subdomains; ``*`` anything; an empty list anything, as in Streamlit).
    A missing, malformed or user-info-carrying Host is refused."""
    allowed = [str(a).strip().lower().rstrip(".") for a in (allowed or [])]
    if not allowed or "*" in allowed:
        return True
    if not host:
        return False
    try:
        parsed = urlparse(f"//{host}")
        name = parsed.hostname
        _ = parsed.port  # a port that is not a number is a malformed Host
    except ValueError:
        return False
    if (not name or parsed.username is not None or parsed.password is not None or parsed.path or parsed.query
            or parsed.fragment):
        return False
    name = name.lower().rstrip(".")
    return any(name == a or (a.startswith("*.") and name.endswith(a[1:])) for a in allowed)


def allowed_hosts() -> list[str]:
    """``server.allowedHosts``; where this Streamlit has no such option, the loopback names when the server
    listens on a loopback address only, else ``[]`` (any Host, as Streamlit itself)."""
    import streamlit as st

    try:
        return list(st.get_option("server.allowedHosts") or [])
    except Exception:  # noqa: BLE001 - Streamlit < 1.61: "Config key not defined"
        pass
    try:
        address = (st.get_option("server.address") or "").strip("[]").lower()
    except Exception:  # noqa: BLE001
        address = ""
    return list(LOOPBACK) if address in LOOPBACK else []


def refuse_foreign_host() -> bool:
    """True (after one line on the page) when this session's browser reached the server under a Host that is
    not allowed; ``app.py`` then stops before any page runs. A session without request headers (not a
    browser: Streamlit's AppTest) is not refused."""
    import streamlit as st

    try:
        host = st.context.headers.get("Host")
    except Exception:  # noqa: BLE001 - no request context
        return False
    if host is None or host_allowed(host, allowed_hosts()):
        return False
    st.error("This dashboard only answers under the host names it is served by (`server.allowedHosts` in "
             ".streamlit/config.toml); this page reached it under another one.")
    return True
