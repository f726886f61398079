"""Curators kept apart on a shared server (docs/security.md).

Shared mode is what ``ui.identity`` reads: ``DPLENS_MODE=shared`` (set by ``dplens app --shared``), and
``st.user`` (AppTest's ``user``) signed in with an email. Curator A's datasets, history, budget and workspace stay
A's: B sees none of them, cannot reset A's budget, cannot open A's workspace by its id, and B's upload of the same
counts is B's own.
"""

from __future__ import annotations

import sqlite3

import pytest
from streamlit.testing.v1 import AppTest

from dplens.core.data.domain import Histogram
from dplens.core.data.fingerprint import dataset_fingerprint, plain_fingerprint
from dplens.core.privacy.budget import Budget
from dplens.core.privacy.ledger_store import LedgerStore
from dplens.core.privacy.store import SCHEMA_VERSION, connect, default_path
from dplens.core.release.export import history_to_csv
from dplens.core.release.workspace_store import WorkspaceStore, new_workspace_id
from tests.test_app import APP

A, B, ADMIN = "alice@example.org", "bob@example.org", "root@example.org"
LEDGER = "pages/ledger.py"
COUNTS = [5.0, 1.0, 0.0, 7.0]


@pytest.fixture
def shared(monkeypatch):
    """A shared server (``dplens app --shared``): every curator signs in."""
    monkeypatch.setenv("DPLENS_MODE", "shared")


def _session(email: str | None, *, ws: str | None = None, upload: Histogram | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.user = {"is_logged_in": False} if email is None else {"is_logged_in": True, "email": email,
                                                             "email_verified": True}
    if ws is not None:
        at.query_params["ws"] = ws
    if upload is not None:
        at.session_state["uploads"] = {"upload:t": upload}
        at.session_state["dataset_key"] = "upload:t"
    return at.run()


def _alice_spent_half(name: str = "alice-secret.csv") -> tuple[AppTest, str]:
    """A uploads her counts, records a total of 1 in the sidebar and spends 0.5 from her workspace."""
    at = _session(A, upload=Histogram.from_counts(COUNTS, labels=(("a", "b", "c", "d"),), name=name))
    at.number_input(key="sidebar_total_epsilon").set_value(1.0).run()
    fingerprint = dataset_fingerprint(COUNTS)
    LedgerStore(owner=A).spend(fingerprint, "release: identity", Budget(0.5), mechanism="identity",
                               workspace=at.session_state.workspace_id)
    assert not at.exception and LedgerStore(owner=A).ledger(fingerprint).remaining.epsilon == pytest.approx(0.5)
    return at, fingerprint


def test_localhost_has_one_curator_and_no_sign_in():
    at = AppTest.from_file(APP, default_timeout=60).run()  # AppTest's default address: this machine only
    assert not at.exception
    assert at.session_state.workspace_owner == "local"
    labels = [b.proto.label for b in at.button]
    assert not [label for label in labels if label.startswith("Sign")]
    assert not [c.value for c in at.caption if c.value.startswith("Signed in as")]


def test_a_shared_server_asks_for_sign_in_and_shows_nothing_else(shared, monkeypatch):
    at = _session(None)  # sign-in not configured: say so, show nothing
    assert not at.exception and "sign-in is not configured" in at.error[0].value
    assert not at.metric and "workspace_id" not in at.session_state
    monkeypatch.setattr("dplens.ui.identity._providers", lambda: [None])  # an [auth] section with one provider
    monkeypatch.setattr("streamlit.auth_util.is_authlib_installed", lambda: True)
    at = _session(None)
    assert not at.exception and [b.proto.label for b in at.button] == ["Sign in"]
    assert not at.metric and "workspace_id" not in at.session_state
    with connect() as conn:
        assert conn.execute("SELECT COUNT(*) FROM workspaces").fetchone()[0] == 0


def test_curator_b_sees_none_of_a_datasets_or_history(shared):
    alice, fingerprint = _alice_spent_half()
    alice = alice.switch_page(LEDGER).run()
    assert not alice.exception and fingerprint in alice.dataframe[0].value["Fingerprint"].tolist()
    workspace = alice.session_state.workspace_id
    for frame in alice.dataframe:  # A's own page never shows a workspace id either
        assert "workspace" not in frame.value.columns and workspace not in frame.value.to_csv()
    assert workspace.encode() not in history_to_csv(LedgerStore(owner=A).history(fingerprint))

    bob = _session(B)
    assert [c.value for c in bob.caption if c.value.startswith("Signed in as bob@example")]
    bob = bob.switch_page(LEDGER).run()
    assert not bob.exception
    shown = "".join(frame.value.to_csv() for frame in bob.dataframe)
    assert fingerprint not in shown and "alice-secret" not in shown and workspace not in shown
    assert not [label for label in bob.selectbox(key="ledger_dataset").options if fingerprint[:12] in label]
    assert not [row for row in LedgerStore(owner=B).history() if row["fingerprint"] == fingerprint]
    assert LedgerStore(owner=B).datasets() == []


def test_curator_b_cannot_reset_a_budget(shared, monkeypatch):
    alice, fingerprint = _alice_spent_half()
    with pytest.raises(ValueError, match="only the ledger's owner or an admin may reset"):
        LedgerStore(owner=B).reset(fingerprint, Budget(100.0), reason="mine now", owner=A)
    # B holding the same counts resets on the Ledger page: B's own ledger, never A's
    bob = _session(B, upload=Histogram.from_counts(COUNTS, name="bob.csv")).switch_page(LEDGER).run()
    bob.number_input(key="ledger_reset_total").set_value(100.0)
    bob.text_input(key="ledger_reset_reason").set_value("fresh start")
    bob.checkbox(key="ledger_reset_confirm").check()
    bob.button[-1].click().run()
    assert not bob.exception and bob.session_state.ledger.remaining.epsilon == 100.0
    assert LedgerStore(owner=A).ledger(fingerprint).remaining.epsilon == pytest.approx(0.5)
    assert [r["kind"] for r in LedgerStore(owner=A).history(fingerprint)] == ["total", "spend"]
    # an admin may reset anyone's ledger; the record names the admin
    monkeypatch.setenv("DPLENS_ADMINS", f" {ADMIN.upper()} , other@example.org")
    from dplens.ui.identity import is_admin

    assert is_admin(ADMIN) and not is_admin(B) and not is_admin("local")
    LedgerStore(owner=ADMIN).reset(fingerprint, Budget(2.0), reason="new study", owner=A, admin=is_admin(ADMIN))
    assert LedgerStore(owner=A).ledger(fingerprint).remaining.epsilon == 2.0
    assert f"reset by admin {ADMIN}" in LedgerStore(owner=A).history(fingerprint)[-1]["note"]


def test_an_admin_sees_every_curator_ledger_read_only(shared, monkeypatch):
    _, fingerprint = _alice_spent_half()
    monkeypatch.setenv("DPLENS_ADMINS", ADMIN)
    admin = _session(ADMIN).switch_page(LEDGER).run()
    assert not admin.exception
    [everyone] = [frame.value for frame in admin.dataframe if "Curator" in frame.value.columns]
    assert (everyone["Curator"].tolist(), everyone["Fingerprint"].tolist()) == ([A], [fingerprint])
    bob = _session(B).switch_page(LEDGER).run()  # not an admin: no such table
    assert not [frame for frame in bob.dataframe if "Curator" in frame.value.columns]


@pytest.mark.parametrize(("claim", "curator"), [
    (None, None), ("false", None), ("true", None), (False, None), (1, None), (True, A)],
    ids=["missing", "string-false", "string-true", "false", "one", "true"])
def test_only_the_json_boolean_true_verifies_an_email(monkeypatch, claim, curator):
    from dplens.ui import identity

    user = {"is_logged_in": True, "email": f"  {A.upper()} "}
    if claim is not None:
        user["email_verified"] = claim
    monkeypatch.setattr(identity, "local_mode", lambda: False)
    monkeypatch.setattr(identity.st, "user", user)
    assert identity.signed_in() == curator


@pytest.mark.parametrize("email", ["root@example.org@evil.org", "root@example.org, bob@example.org",
                                   "root @example.org", "@example.org", "root@", "root@example.org\x00"])
def test_what_is_not_one_address_signs_nobody_in(monkeypatch, email):
    from dplens.ui import identity

    monkeypatch.setattr(identity, "local_mode", lambda: False)
    monkeypatch.setattr(identity.st, "user", {"is_logged_in": True, "email": email, "email_verified": True})
    assert identity.signed_in() is None


def test_an_admin_whose_provider_omits_email_verified_is_refused(shared, monkeypatch):
    _, fingerprint = _alice_spent_half()
    monkeypatch.setenv("DPLENS_ADMINS", ADMIN)
    at = AppTest.from_file(APP, default_timeout=60)
    at.user = {"is_logged_in": True, "email": ADMIN}  # no email_verified claim at all
    at.run()
    assert not at.exception and "workspace_id" not in at.session_state and not at.dataframe
    assert "no verified email" in at.error[0].value and "`email_verified`" in at.error[0].value
    shown = "".join(frame.value.to_csv() for frame in at.switch_page(LEDGER).run().dataframe)
    assert fingerprint not in shown and A not in shown


def test_only_an_exact_admin_address_is_an_admin(monkeypatch):
    from dplens.ui.identity import admins, is_admin

    monkeypatch.setenv("DPLENS_ADMINS", " Admin@X.org ,not an address, ,a@b@c")
    assert admins() == {"admin@x.org"}
    assert is_admin("admin@x.org") and is_admin(" ADMIN@x.org ")  # the documented normalisation, both sides
    for near_miss in ("admin@x.org.evil", "admin@x.or", "xadmin@x.org", "admin@x.org\u200b", "admin@x.org\n.evil",
                      "not an address", "local"):
        assert not is_admin(near_miss), near_miss


def test_curator_b_cannot_open_a_workspace_by_its_id(shared):
    alice, _ = _alice_spent_half()
    workspace = alice.session_state.workspace_id
    bob = _session(B, ws=workspace)
    assert not bob.exception
    assert bob.session_state.workspace_id != workspace and bob.query_params["ws"] != workspace
    assert "upload:t" not in bob.session_state.uploads and bob.session_state.workspace_owner == B
    # nothing B did touched A's workspace: A's link still restores A's upload
    again = _session(A, ws=workspace)
    assert again.session_state.workspace_id == workspace
    assert again.session_state.uploads["upload:t"].name == "alice-secret.csv"
    # and the store refuses B's writes or spends through A's workspace
    with pytest.raises(ValueError, match="another curator"):
        WorkspaceStore(owner=B).save(workspace, {"dataset_key": "sample:smooth"})
    with pytest.raises(ValueError, match="belong to different curators"):
        LedgerStore(owner=B).spend(dataset_fingerprint(COUNTS), "x", Budget(0.1), mechanism="identity",
                                   workspace=workspace)


def test_b_upload_of_the_same_counts_keeps_b_file_name_and_labels(shared):
    alice, _ = _alice_spent_half()
    bob = _session(B, upload=Histogram.from_counts(COUNTS, labels=(("w", "x", "y", "z"),), name="bob-file.csv"))
    assert not bob.exception
    restored = _session(B, ws=bob.session_state.workspace_id).session_state.uploads["upload:t"]
    assert restored.name == "bob-file.csv" and list(restored.labels[0]) == ["w", "x", "y", "z"]
    mine = _session(A, ws=alice.session_state.workspace_id).session_state.uploads["upload:t"]
    assert mine.name == "alice-secret.csv" and list(mine.labels[0]) == ["a", "b", "c", "d"]


def test_an_unknown_workspace_id_starts_a_new_workspace():
    unknown = new_workspace_id()  # the right shape, never minted by this server
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = unknown
    at.run()
    assert not at.exception
    assert at.session_state.workspace_id != unknown and at.query_params["ws"] == at.session_state.workspace_id
    assert WorkspaceStore().load(unknown) is None and WorkspaceStore().load(at.session_state.workspace_id) is not None


_VERSION_2 = """
CREATE TABLE budgets (fingerprint TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', epsilon REAL NOT NULL,
    delta REAL NOT NULL DEFAULT 0, rho REAL, epoch INTEGER NOT NULL DEFAULT 0, created TEXT NOT NULL);
CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, fingerprint TEXT NOT NULL REFERENCES budgets (fingerprint),
    epoch INTEGER NOT NULL, kind TEXT NOT NULL, label TEXT NOT NULL DEFAULT '', mechanism TEXT,
    epsilon REAL NOT NULL, delta REAL NOT NULL DEFAULT 0, rho REAL, workload TEXT, export_id TEXT, workspace TEXT,
    note TEXT, time TEXT NOT NULL);
CREATE INDEX events_by_dataset ON events (fingerprint, epoch, kind);
CREATE TABLE workspaces (id TEXT PRIMARY KEY, state TEXT NOT NULL, updated TEXT NOT NULL);
CREATE TABLE exports (export_id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, values_hash TEXT NOT NULL,
    kind TEXT NOT NULL, note TEXT, time TEXT NOT NULL);
CREATE TABLE datasets (fingerprint TEXT PRIMARY KEY, name TEXT NOT NULL, shape TEXT NOT NULL, counts BLOB NOT NULL,
    labels TEXT NOT NULL, axis_names TEXT NOT NULL);
PRAGMA user_version = 2;
"""


def test_a_version_2_store_upgrades_to_the_local_curator():
    plain, fingerprint, workspace = plain_fingerprint(COUNTS), dataset_fingerprint(COUNTS), new_workspace_id()
    hist = Histogram.from_counts(COUNTS, name="old-upload")
    conn = sqlite3.connect(default_path())
    conn.executescript(_VERSION_2)
    conn.execute("INSERT INTO budgets VALUES (?, 'old', 2.0, 0, NULL, 0, 't0')", (plain,))  # unkeyed then
    conn.execute("INSERT INTO events (fingerprint, epoch, kind, label, mechanism, epsilon, workspace, time) "
                 "VALUES (?, 0, 'spend', 'release #1', 'identity', 0.5, ?, 't1')", (plain, workspace))
    conn.execute("INSERT INTO workspaces VALUES (?, ?, 't1')",
                 (workspace, f'{{"uploads": {{"upload:t": "{plain}"}}}}'))
    conn.execute("INSERT INTO datasets VALUES (?, 'old-upload', '[4]', ?, '[[\"0\", \"1\", \"2\", \"3\"]]', '[\"x\"]')",
                 (plain, hist.counts.astype("<f8").tobytes()))
    conn.commit()
    conn.close()
    local = LedgerStore()
    assert local.ledger(fingerprint).remaining.epsilon == pytest.approx(1.5)
    assert [r["label"] for r in local.history(fingerprint)] == ["release #1"]
    assert "workspace" not in local.history(fingerprint)[0]
    assert WorkspaceStore().load(workspace) == {"uploads": {"upload:t": fingerprint}}
    assert WorkspaceStore().get_dataset(fingerprint).name == "old-upload"  # a version-2 workspace's bare fingerprint
    assert LedgerStore(owner=B).datasets() == [] and WorkspaceStore(owner=B).load(workspace) is None
    with connect() as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "datasets" not in tables and not [t for t in tables if t.endswith("_v2")]
    assert local.spend(fingerprint, "release #2", Budget(1.5), mechanism="identity").remaining.epsilon == 0.0


def test_a_secure_release_on_a_shared_server_charges_the_signed_in_curators_ledger(shared):
    """The Release page's kernel call charges the curator who clicked, never the 'local' ledger or another's."""
    at = _session(A, upload=Histogram.from_counts(COUNTS, labels=(("a", "b", "c", "d"),), name="mine.csv"))
    at = at.switch_page("pages/release.py").run()
    at.radio(key="release_noise_path").set_value("secure")
    at.selectbox(key="release_mechanism").set_value("identity")
    at.number_input(key="release_epsilon").set_value(0.5)
    at = at.button(key="release_spend").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    fingerprint = dataset_fingerprint(COUNTS)
    assert LedgerStore(owner=A).ledger(fingerprint).spent.epsilon == pytest.approx(0.5)
    assert LedgerStore(owner=B).ledger(fingerprint).spent.epsilon == 0
    assert LedgerStore().ledger(fingerprint).spent.epsilon == 0
