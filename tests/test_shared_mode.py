"""The serving mode is explicit (docs/security.md): `dplens app` serves one local curator on loopback, `--shared` makes
every visitor sign in, and local mode refuses what came through a proxy (docs: Security)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from dplens.cli import main
from dplens.core.serving import FORWARDING_HEADERS, is_loopback, local_refusal, server_mode
from dplens.ui import identity
from tests.test_app import APP

LOCAL_HOST = {"Host": "127.0.0.1:8501", "Origin": "http://127.0.0.1:8501"}


@pytest.mark.parametrize("header", FORWARDING_HEADERS)
def test_local_mode_behind_a_proxy_header_is_refused(header):
    reason = local_refusal({**LOCAL_HOST, header.lower(): "203.0.113.7"}, address="127.0.0.1")
    assert reason is not None and header in reason


@pytest.mark.parametrize("headers", [
    {"Host": "dplens.example.org"},                                        # a proxy passing the public name
    {"Host": "127.0.0.1:8501", "Origin": "https://dplens.example.org"},    # nginx's default Host, browser's Origin
    {"Host": "192.168.1.5:8501"},                                          # another machine on the network
    {"Host": "localhost.attacker.example:8501"},                           # DNS rebinding
])
def test_local_mode_refuses_a_host_or_origin_that_is_not_loopback(headers):
    assert local_refusal(headers, address="127.0.0.1") is not None


@pytest.mark.parametrize("headers", [
    {}, LOCAL_HOST, {"host": "localhost:8501", "origin": "http://localhost:8501"},
    {"Host": "[::1]:8501", "Origin": "http://[::1]:8501"}, {"Host": "127.0.0.2"},
    {"Host": "127.0.0.1", "Origin": "null"},
])
def test_a_browser_on_this_machine_is_served_in_local_mode(headers):
    assert local_refusal(headers, address="127.0.0.1") is None
    assert local_refusal(headers, address=None) is None  # AppTest, a bare run


@pytest.mark.parametrize("address", ["0.0.0.0", "", "192.168.1.5", "::"])
def test_local_mode_refuses_a_server_listening_beyond_loopback(address):
    """`streamlit run app.py` without `dplens app` (DPLENS_MODE unset) on every interface is not local."""
    assert "listens on" in local_refusal(LOCAL_HOST, address=address)


def test_the_mode_is_read_from_the_environment_and_an_unknown_value_fails_closed(monkeypatch):
    monkeypatch.delenv("DPLENS_MODE", raising=False)
    assert server_mode() == "local" and identity.local_mode()
    monkeypatch.setenv("DPLENS_MODE", "shared")
    assert server_mode() == "shared" and not identity.local_mode()
    monkeypatch.setenv("DPLENS_MODE", "lcoal")
    with pytest.raises(ValueError, match="DPLENS_MODE='lcoal' is not a mode"):
        server_mode()
    assert not identity.local_mode()  # sign-in required


def test_a_bare_apptest_run_is_local_and_shared_mode_asks_for_sign_in(monkeypatch):
    monkeypatch.delenv("DPLENS_MODE", raising=False)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception and not any("local mode" in e.value for e in at.error)
    monkeypatch.setenv("DPLENS_MODE", "shared")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert any("sign in" in e.value.lower() for e in [*at.error, *at.info]), [e.value for e in at.error]


def test_the_address_a_request_came_through_is_not_guessed_from_the_bind_address(monkeypatch):
    """The old rule: 127.0.0.1 meant local. Behind a proxy the server listens there and serves the internet."""
    monkeypatch.delenv("DPLENS_MODE", raising=False)
    monkeypatch.setattr(identity, "_listening_address", lambda: "127.0.0.1")
    monkeypatch.setattr(identity.st, "context", type("C", (), {"headers": {"Host": "127.0.0.1:8501",
                                                                          "X-Forwarded-For": "203.0.113.7"}})())
    assert "X-Forwarded-For" in identity.local_request_refusal()


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "dplens.example.org", "::"])
def test_a_non_loopback_host_without_shared_is_refused_by_the_cli(host, capsys, monkeypatch):
    monkeypatch.setattr("os.execv", lambda *a: pytest.fail("the server was started"))
    assert main(["app", "--host", host]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--host" in err and "--shared" in err and "Traceback" not in err


def test_the_cli_sets_the_mode_it_serves(monkeypatch):
    started = []
    monkeypatch.setattr("os.execv", lambda *a: started.append(a))
    monkeypatch.setattr("os.chdir", lambda *_: None)
    for argv, mode in ((["app"], "local"), (["app", "--shared", "--host", "0.0.0.0"], "shared"),
                       (["app", "--shared"], "shared")):
        monkeypatch.setenv("DPLENS_MODE", "something else")
        main(argv)
        assert server_mode() == mode
    assert len(started) == 3
    assert is_loopback("::1") and not is_loopback("")

