"""Who is using the app: the curator whose ledgers, workspaces and uploads the store shows (docs: Security).

The mode is explicit (``dplens.core.serving``): ``dplens app`` sets ``DPLENS_MODE`` for its server, and it is never
guessed from the bind address (behind a reverse proxy the server listens on 127.0.0.1 yet serves the internet).

* **Local** (``dplens app``, ``make run``; ``DPLENS_MODE`` unset or ``local``): one curator, ``"local"``, no
  sign-in, for a browser on this machine. A request that shows it came from elsewhere (a forwarding header such
  as ``X-Forwarded-For``, a ``Host`` or ``Origin`` that is not loopback, or a server listening beyond loopback) is
  refused with a page saying how to run shared mode (``dplens.core.serving.local_refusal``). A bare script run
  (AppTest) is local.
* **Shared** (``dplens app --shared``; ``DPLENS_MODE=shared``): the curator signs in with Streamlit's OpenID
  Connect (``st.login``, configured in ``.streamlit/secrets.toml`` ``[auth]``) and is their email, normalised
  (``normalise_email``). The provider must send the claims ``email`` and ``email_verified`` with the JSON value
  ``true``: a missing claim, the string ``"true"`` or anything else is not a verification, and the visitor is not
  signed in. Until then the page shows a sign-in button and stops. An unknown ``DPLENS_MODE`` value counts as
  shared (sign-in required) and the page says so.

Admins (``DPLENS_ADMINS``: comma-separated emails, normalised the same way) see every curator's ledgers and may
reset any; a curator is an admin only if their normalised email equals one of them exactly.
"""
from __future__ import annotations

import os

import streamlit as st
from streamlit import runtime

from dplens.core.privacy.store import LOCAL_OWNER
from dplens.core.serving import LOCAL, SHARED_HINT, local_refusal, server_mode

LOCAL_CURATOR = LOCAL_OWNER
LOCAL_ADDRESSES = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
ADMINS_ENV = "DPLENS_ADMINS"
REQUIRED_CLAIMS = ("The identity provider must send the claims `email` (one address) and `email_verified` "
                   "with the value `true`.")


def local_mode() -> bool:
    """Whether the app serves one local curator without sign-in: ``DPLENS_MODE`` unset or ``local`` (read at each
    call). An unknown value is not local: failing closed, every visitor must sign in."""
    try:
        return server_mode() == LOCAL
    except ValueError:
        return False


def _listening_address() -> str | None:
    """``server.address`` of the real server running this script, or None when none is (AppTest, a bare run)."""
    return str(st.get_option("server.address") or "").strip() if _serving() else None


def local_request_refusal() -> str | None:
    """Why this session may not be served in local mode (``dplens.core.serving.local_refusal`` on its headers)."""
    try:
        headers = dict(st.context.headers)
    except Exception:  # noqa: BLE001 - no request context (a bare run): nothing came through a proxy
        headers = {}
    return local_refusal(headers, address=_listening_address())


def _serving() -> bool:
    """Whether a real Streamlit server runs this script (AppTest installs a stand-in runtime, a bare run none)."""
    return runtime.exists() and type(runtime.get_instance()) is runtime.Runtime


def normalise_email(email: str) -> str | None:
    """The one form in which emails are compared: the whole address stripped of surrounding blanks, lower-cased.

    Applied alike to the provider's ``email`` claim and to every ``DPLENS_ADMINS`` entry, so that an admin is
    an exact match after it. Returns None for what is not one address (no single ``@`` between non-empty parts,
    or blanks or control characters inside): such a claim signs nobody in.

    >>> normalise_email("  Alice@Example.ORG ")
    'alice@example.org'
    >>> normalise_email("alice@example.org, root@example.org") is None
    True
    """
    address = email.strip().lower()
    local, at, domain = address.partition("@")
    if not (local and at and domain) or "@" in domain or not address.isprintable() or any(c.isspace() for c in address):
        return None
    return address


def admins() -> frozenset[str]:
    """The admins' emails from ``DPLENS_ADMINS`` (comma-separated), each normalised; entries that are not one
    address are dropped."""
    entries = (normalise_email(entry) for entry in os.environ.get(ADMINS_ENV, "").split(","))
    return frozenset(entry for entry in entries if entry is not None)


def is_admin(curator: str) -> bool:
    """Whether ``curator`` is a signed-in admin: their normalised email is exactly one in ``DPLENS_ADMINS`` (the
    localhost curator owns every ledger and needs no rights)."""
    address = normalise_email(curator)
    return curator != LOCAL_CURATOR and address is not None and address in admins()


def signed_in() -> str | None:
    """The curator now: ``"local"`` in local mode, the signed-in verified email (normalised), or None.

    Only ``email_verified is True`` (the JSON boolean) counts: a provider that omits the claim, or sends the string
    ``"false"`` (truthy in Python), would otherwise let anyone sign in as any address, an admin's included.
    """
    if local_mode():
        return LOCAL_CURATOR
    user = st.user
    if not user.get("is_logged_in") or user.get("email_verified") is not True:
        return None
    email = user.get("email")
    return normalise_email(email) if isinstance(email, str) else None


def _providers() -> list[str | None]:
    """The sign-in providers configured in ``[auth]``: None for the default one, else each named section."""
    from streamlit.auth_util import get_secrets_auth_section

    try:
        auth = get_secrets_auth_section()
    except Exception:  # noqa: BLE001 - an unreadable secrets file is "not configured"
        return []
    named = [name for name, value in auth.items() if hasattr(value, "keys")]
    return ([None] if "client_id" in auth else []) + named


def _sign_in_page() -> None:
    st.title("dplens")
    if st.user.get("is_logged_in"):
        st.error(f"Your identity provider gave no verified email: dplens needs one to keep curators apart. "
                 f"{REQUIRED_CLAIMS} Ask the administrator to request the `email` scope from a provider that "
                 f"verifies addresses.")
        st.button("Sign out", on_click=st.logout, key="identity_sign_out")
        return
    try:
        server_mode()
    except ValueError as err:
        st.warning(f"{err}; until it is fixed every visitor must sign in.")
    providers = _providers()
    if not providers:
        st.error("This server runs in shared mode (`dplens app --shared`), so every curator must sign in, but "
                 "sign-in is not configured: add an `[auth]` section to `.streamlit/secrets.toml` (docs: Security), "
                 "or serve one curator on this machine only (`dplens app` without `--shared`).")
        return
    from streamlit.auth_util import is_authlib_installed

    if not is_authlib_installed():
        st.error("Sign-in is configured but Streamlit's sign-in needs Authlib: install `streamlit[auth]` "
                 "(Authlib ≥ 1.3.2) in the server's environment (docs/security.md).")
        return
    st.info("Sign in to see your datasets, workspaces and privacy budgets. Each curator sees only their own. "
            + REQUIRED_CLAIMS)
    for provider in providers:
        label = "Sign in" if provider is None else f"Sign in with {provider}"
        st.button(label, on_click=st.login, args=() if provider is None else (provider,),
                  key=f"identity_sign_in_{provider or 'default'}", type="primary")


def _local_refusal_page(reason: str) -> None:
    st.title("dplens")
    st.error(f"This dplens server runs in local mode: one curator, no sign-in, for a browser on this machine only. "
             f"It refused this page because {reason}. Open it on the server's own machine "
             f"(http://127.0.0.1:<port>), or, {SHARED_HINT}.")


def current_curator() -> str:
    """The curator using the app (``"local"`` in local mode); in shared mode, shows sign-in and stops until signed in.
    In local mode a request from elsewhere (``local_request_refusal``) is refused with a page and stopped."""
    if local_mode():
        reason = local_request_refusal()
        if reason is not None:
            _local_refusal_page(reason)
            st.stop()
    curator = signed_in()
    if curator is None:
        _sign_in_page()
        st.stop()
    return curator


__all__ = ["ADMINS_ENV", "LOCAL_CURATOR", "admins", "current_curator", "is_admin", "local_mode",
           "local_request_refusal", "normalise_email", "signed_in"]
