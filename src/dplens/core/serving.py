"""How the app is served: the explicit mode (``local`` or ``shared``) and the checks that keep local mode local.

``dplens app`` sets ``DPLENS_MODE`` for the server it starts: ``local`` (the default) serves one curator, with no
sign-in, to a browser on this machine; ``shared`` (``dplens app --shared``) makes every visitor sign in. The mode is
never guessed from the bind address: behind a reverse proxy the server listens on 127.0.0.1 and yet serves the
internet. Local mode therefore also refuses a request that shows it came from elsewhere (``local_refusal``).

>>> is_loopback("127.0.0.1"), is_loopback("[::1]"), is_loopback("localhost"), is_loopback("0.0.0.0")
(True, True, True, False)
>>> local_refusal({"Host": "127.0.0.1:8501"}, address="127.0.0.1") is None
True
>>> local_refusal({"Host": "127.0.0.1:8501", "X-Forwarded-For": "203.0.113.7"}, address="127.0.0.1")
'the request came through a proxy (it carries a X-Forwarded-For header)'
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

MODE_ENV = "DPLENS_MODE"
LOCAL, SHARED = "local", "shared"
MODES = (LOCAL, SHARED)
# Headers a proxy adds to say who the client was (RFC 7239 Forwarded, the de-facto X-Forwarded-*, nginx's
# X-Real-IP, Via (RFC 9110), and the CDN variants). Any of them in local mode: the browser is not on this machine.
FORWARDING_HEADERS = ("Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port",
                      "X-Forwarded-Server", "X-Real-IP", "Via", "X-Client-IP", "True-Client-IP", "CF-Connecting-IP",
                      "X-Cluster-Client-IP", "Fastly-Client-IP", "X-Original-Forwarded-For")
SHARED_HINT = ("to serve other people, run `dplens app --shared` (every curator signs in; docs: Security, "
               "\"Serving behind a reverse proxy\")")


def server_mode() -> str:
    """The mode from ``DPLENS_MODE`` (read at each call): ``local`` when unset (a bare script or AppTest run).

    Raises:
        ValueError: a value other than ``local`` or ``shared``, naming it.
    """
    raw = os.environ.get(MODE_ENV, "").strip().lower()
    if not raw:
        return LOCAL
    if raw not in MODES:
        raise ValueError(f"{MODE_ENV}={raw[:40]!r} is not a mode: use 'local' (one curator on this machine) or "
                         "'shared' (every curator signs in)")
    return raw


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address, brackets allowed for IPv6) names this machine only: ``localhost``,
    127.0.0.0/8 or ::1. Every other name, ``0.0.0.0`` (every interface) and an empty host are not."""
    host = host.strip().lower().removeprefix("[").removesuffix("]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_of(value: str) -> str | None:
    """The host name of a ``Host`` header (``name[:port]``) or an ``Origin`` (``scheme://name[:port]``)."""
    try:
        parts = urlsplit(value if "://" in value else f"//{value}")
        return parts.hostname or ""
    except ValueError:
        return None


def local_refusal(headers: Mapping[str, str], *, address: str | None) -> str | None:
    """Why a request may not be served in local mode, or None when it may.

    Args:
        headers: the request's headers (Streamlit's ``st.context.headers``: the WebSocket's upgrade request); names
            compare case-insensitively. An empty mapping (AppTest, a bare run) is a local request.
        address: the address the server listens on (``server.address``), or None when no server is serving (a
            bare run or AppTest); ``""`` is Streamlit's default, every interface.

    A local-mode request must show no forwarding header, a loopback ``Host`` and, when it has one, a loopback
    ``Origin`` (the page's own address: a plain reverse proxy that rewrites ``Host`` still passes the browser's
    ``Origin`` on), on a server that listens on loopback only. A proxy that rewrites both and adds no forwarding
    header cannot be told apart from a local browser: never put local mode behind one (docs: Security).
    """
    if address is not None and not is_loopback(address):
        return (f"the server listens on {address or 'every interface'}, not on this machine only "
                "(local mode serves 127.0.0.1, localhost or ::1)")
    named = {str(name).lower(): str(value) for name, value in headers.items()}
    for header in FORWARDING_HEADERS:
        if header.lower() in named:
            return f"the request came through a proxy (it carries a {header} header)"
    host = named.get("host")
    if host is not None and not is_loopback(_host_of(host) or ""):
        return "the request was addressed to a host name that is not this machine's loopback address"
    origin = named.get("origin")
    if origin is not None and origin.strip().lower() != "null" and not is_loopback(_host_of(origin) or ""):
        return "the page was opened from an address that is not this machine's loopback address"
    return None


__all__ = ["FORWARDING_HEADERS", "LOCAL", "MODES", "MODE_ENV", "SHARED", "SHARED_HINT", "is_loopback",
           "local_refusal", "server_mode"]
