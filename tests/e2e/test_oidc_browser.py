"""Shared mode in a real browser (docs/security.md): local mode refuses a proxied browser; with a local OpenID Connect
provider, two curators signed in to `dplens app --shared` each see only their own ledgers and workspaces."""

from __future__ import annotations

import json
import os
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from tests.e2e._actions import click, go, wait_text
from tests.e2e.conftest import ROOT, free_port, launch, stop

pytestmark = pytest.mark.e2e
DPLENS = Path(sys.executable).parent / "dplens"


def _start_app(args: list[str], env: dict[str, str], cwd: Path = ROOT, port: int | None = None):
    """`dplens app ARGS --port P` on loopback; (process, base url) once its health check answers."""
    port = port or free_port()
    return launch([str(DPLENS), "app", "--port", str(port), *args], port, env=env, cwd=cwd,
                  log_path=Path(env["DPLENS_HOME"] + ".log"))


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    return {"DPLENS_HOME": str(home), "DPLENS_ADMINS": "", "HOME": str(tmp_path),
            "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", **extra}


def test_a_proxied_browser_is_refused_by_a_local_server(browser, tmp_path):
    """HTTP level: a real `dplens app` (local mode), and Chromium sending X-Forwarded-For as a proxy would."""
    server, url = _start_app([], _env(tmp_path))
    try:
        proxied = browser.new_context(extra_http_headers={"X-Forwarded-For": "203.0.113.7"})
        page = proxied.new_page()
        page.goto(url)
        wait_text(page, "runs in local mode")
        assert page.get_by_text("dplens app --shared").count() >= 1
        proxied.close()
        direct = browser.new_context()
        page = direct.new_page()
        page.goto(url)
        wait_text(page, "Start here:")
        assert page.get_by_text("runs in local mode").count() == 0
        direct.close()
    finally:
        stop(server)


class _Provider:
    """A minimal OpenID Connect provider on loopback: discovery, JWKS, an authorize endpoint that approves
    ``user`` at once (no login form), and a token endpoint issuing an RS256 ``id_token`` (joserfc, which Authlib
    uses) with ``email_verified`` true. Streamlit's st.login (Authlib) checks its signature, issuer, audience,
    expiry and nonce."""

    def __init__(self) -> None:
        self.key = RSAKey.generate_key(2048, private=True)
        self.kid = "dplens-test"
        self.user = "alice@example.org"
        self.codes: dict[str, dict] = {}
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _json(self, doc: dict, status: int = 200) -> None:
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                if url.path == "/.well-known/openid-configuration":
                    self._json(provider.discovery())
                elif url.path == "/jwks":
                    public = provider.key.as_dict(private=False)
                    self._json({"keys": [{**public, "kid": provider.kid, "alg": "RS256", "use": "sig"}]})
                elif url.path == "/authorize":
                    query = dict(parse_qsl(url.query))
                    code = secrets.token_urlsafe(16)
                    provider.codes[code] = {"email": provider.user, "nonce": query.get("nonce"),
                                            "client_id": query.get("client_id")}
                    self.send_response(302)
                    self.send_header("Location", f"{query['redirect_uri']}?" + urlencode(
                        {"code": code, "state": query.get("state", "")}))
                    self.end_headers()
                else:
                    self._json({"error": "not_found"}, 404)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                form = dict(parse_qsl(self.rfile.read(length).decode()))
                grant = provider.codes.pop(form.get("code", ""), None)
                if urlsplit(self.path).path != "/token" or grant is None:
                    self._json({"error": "invalid_grant"}, 400)
                    return
                self._json({"access_token": secrets.token_urlsafe(16), "token_type": "Bearer", "expires_in": 3600,
                            "id_token": provider.id_token(grant)})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def discovery(self) -> dict:
        return {"issuer": self.url, "authorization_endpoint": f"{self.url}/authorize",
                "token_endpoint": f"{self.url}/token", "jwks_uri": f"{self.url}/jwks",
                "response_types_supported": ["code"], "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"], "scopes_supported": ["openid", "email"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
                "claims_supported": ["sub", "email", "email_verified"]}

    def id_token(self, grant: dict) -> str:
        now = int(time.time())
        claims = {"iss": self.url, "sub": grant["email"], "aud": grant["client_id"], "iat": now, "exp": now + 600,
                  "email": grant["email"], "email_verified": True}
        if grant["nonce"]:
            claims["nonce"] = grant["nonce"]
        return jwt.encode({"alg": "RS256", "kid": self.kid}, claims, self.key)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def oidc_provider():
    provider = _Provider()
    yield provider
    provider.close()


def _sign_in(browser, url: str):
    context = browser.new_context()
    page = context.new_page()
    page.goto(url)
    click(page, page.get_by_role("button", name="Sign in"), page.get_by_text("Signed in as"))
    return context, page


def _ledger_page(page) -> str:
    """The ledgers the Ledger page offers in its "History of" list (the tables are drawn on a canvas)."""
    go(page, "Ledger")
    click(page, page.get_by_role("combobox", name="History of"), page.get_by_role("option"))
    names = " | ".join(page.get_by_role("option").all_inner_texts())
    page.keyboard.press("Escape")
    return names


def test_two_curators_signed_in_through_oidc_see_only_their_own(browser, tmp_path, oidc_provider):
    """`dplens app --shared` with Streamlit's st.login against the local provider: Alice and Bob sign in; each
    Ledger page lists only their own ledgers, and Bob opening Alice's ?ws= link gets a workspace of his own."""
    from dplens.core.data.fingerprint import dataset_fingerprint
    from dplens.core.privacy.budget import Budget
    from dplens.core.privacy.ledger_store import LedgerStore

    alice, bob = "alice@example.org", "bob@example.org"
    LedgerStore(owner=alice).set_total(dataset_fingerprint([3.0, 1.0, 4.0]), Budget(2.0), name="alice-ledger.csv")
    LedgerStore(owner=bob).set_total(dataset_fingerprint([2.0, 7.0]), Budget(3.0), name="bob-ledger.csv")
    port = free_port()
    site = tmp_path / "site"
    (site / ".streamlit").mkdir(parents=True)
    (site / ".streamlit" / "secrets.toml").write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{secrets.token_urlsafe(32)}"\n'
        'client_id = "dplens-test"\n'
        'client_secret = "not-a-secret"\n'
        f'server_metadata_url = "{oidc_provider.url}/.well-known/openid-configuration"\n')
    env = _env(tmp_path, DPLENS_HOME=os.environ["DPLENS_HOME"])
    server, url = _start_app(["--shared"], env, cwd=site, port=port)
    try:
        oidc_provider.user = alice
        a_context, a_page = _sign_in(browser, url)
        assert a_page.get_by_text(f"Signed in as {alice}").count() >= 1
        a_ws = dict(parse_qsl(urlsplit(a_page.url).query)).get("ws")
        mine = _ledger_page(a_page)
        assert "alice-ledger.csv" in mine and "bob-ledger.csv" not in mine

        oidc_provider.user = bob
        b_context, b_page = _sign_in(browser, url)
        assert b_page.get_by_text(f"Signed in as {bob}").count() >= 1
        theirs = _ledger_page(b_page)
        assert "bob-ledger.csv" in theirs and "alice-ledger.csv" not in theirs
        assert a_ws, "a signed-in session has a ?ws= workspace id in its address"
        b_page.goto(f"{url}/?ws={a_ws}")
        wait_text(b_page, f"Signed in as {bob}")
        b_page.wait_for_function(f"!window.location.search.includes({a_ws!r})", timeout=120_000)
        assert a_ws not in b_page.url  # never adopted: Bob's own workspace, not Alice's
        assert "alice-ledger.csv" not in _ledger_page(b_page)
        a_context.close()
        b_context.close()
    finally:
        stop(server)
