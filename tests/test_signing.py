"""Signed exports instead of statements: an export is already private only where its signature verifies
under this installation's key or a key the curator trusts; trust is per curator and recorded with its reason."""

from __future__ import annotations

import json
import os
import sqlite3
import stat

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dplens.cli import main
from dplens.core.data import signing
from dplens.core.mechanisms import Release
from dplens.core.privacy.definitions import PureDP
from dplens.core.privacy.ledger_store import LedgerStore
from dplens.core.privacy.store import connect, default_path
from dplens.core.release.export import release_to_json
from dplens.core.release.provenance import recognise, values_hash
from tests.test_app import APP

A, B = "alice@example.org", "bob@example.org"


def _export() -> bytes:
    r = Release("identity", PureDP(1.0), 1.0, np.array([-1.5, 2.0, 7.25]), np.array([-1.5, 2.0, 7.25]),
                {"noise_scale": 1.0})
    return release_to_json(r, workload="identity", noise_path="secure", dataset="ages.csv").encode()


@pytest.fixture
def other_installation(tmp_path, monkeypatch):
    """An export made by a second installation (its own DPLENS_HOME), and that installation's public key file."""
    here = os.environ["DPLENS_HOME"]
    monkeypatch.setenv("DPLENS_HOME", str(tmp_path / "other-home"))
    theirs, pem = _export(), tmp_path / "theirs.pem"
    assert main(["ledger", "--public-key", str(pem)]) == 0
    monkeypatch.setenv("DPLENS_HOME", here)
    return theirs, pem


def test_the_signing_key_is_made_once_0600_next_to_the_installation_key():
    key = signing.signing_key()
    path = default_path().parent / signing.SIGNING_KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and b"PRIVATE KEY" in path.read_bytes()
    assert signing.signing_key() is key and len(signing.public_key()) == 32


def test_an_export_of_this_installation_verifies_and_is_charged_nothing():
    released, record = recognise(LedgerStore(), _export(), "r.json")
    assert record == {"kind": "signed", "key_id": signing.key_id(signing.public_key()), "signer": "this installation"}
    assert released.values.tolist() == [-1.5, 2.0, 7.25]


def test_another_installations_export_verifies_only_after_its_key_is_trusted(other_installation, capsys):
    theirs, pem = other_installation
    assert recognise(LedgerStore(), theirs, "theirs.json")[1] is None  # raw data: charged
    assert main(["ledger", "--trust-key", str(pem), "--name", "census bureau", "--reason", "their 2020 release"]) == 0
    assert "trusted key" in capsys.readouterr().out
    record = recognise(LedgerStore(), theirs, "theirs.json")[1]
    assert record["kind"] == "signed" and record["signer"] == "census bureau"
    (kept,) = LedgerStore().trusted_keys()
    assert kept["reason"] == "their 2020 release" and kept["key_id"] == record["key_id"]
    assert LedgerStore().untrust_key(kept["key_id"])
    assert recognise(LedgerStore(), theirs, "theirs.json")[1] is None


def test_trust_by_curator_a_does_not_apply_to_curator_b(other_installation):
    theirs, pem = other_installation
    LedgerStore(owner=A).trust_key(signing.read_public_key(pem.read_bytes()), name="census", reason="A's partner")
    assert recognise(LedgerStore(owner=A), theirs, "t.json")[1]["kind"] == "signed"
    assert recognise(LedgerStore(owner=B), theirs, "t.json")[1] is None
    assert LedgerStore(owner=B).trusted_keys() == [] and LedgerStore().trusted_keys() == []


@pytest.mark.parametrize("tamper", [
    lambda d: d["counts"].__setitem__(0, -1.4),           # a value
    lambda d: d.__setitem__("epsilon", 0.5),              # the stated privacy
    lambda d: d.__setitem__("dataset", "other.csv"),      # any metadata
    lambda d: d.__setitem__("extra", 1),                  # a member added
    lambda d: d["signature"].__setitem__("value", d["signature"]["value"][::-1]),
    lambda d: d.pop("signature"),
])
def test_a_tampered_export_fails_verification(tamper):
    doc = json.loads(_export())
    tamper(doc)
    data = json.dumps(doc).encode()
    assert signing.verify_export(data, [signing.public_key()]) is None
    assert recognise(LedgerStore(), data, "r.json")[1] is None


def test_reformatting_a_signed_export_keeps_it_valid():
    doc = json.loads(_export())
    assert signing.verify_export(json.dumps(doc, indent=4, sort_keys=True).encode(), [signing.public_key()])


def test_a_statement_recorded_by_an_older_store_no_longer_makes_a_file_private():
    """Stores before version 7 kept unsigned 'stated' exports, installation-wide: they are history now."""
    forged = json.dumps({"mechanism": "identity", "epsilon": 1000.0, "delta": 0.0, "privacy_loss": 1000.0,
                         "workload": "identity", "noise_path": "secure", "noise_sampler": "opendp-integer-laplace",
                         "neighbouring": "add/remove", "counts": [4.0, 9.0]}).encode()
    with connect() as conn:
        conn.execute("INSERT INTO exports VALUES ('e', ?, ?, 'stated', 'trust me', 't')",
                     ("0" * 64, values_hash([4.0, 9.0], "counts")))
    assert recognise(LedgerStore(), forged, "raw.json")[1] is None


def test_a_version_6_store_gains_trusted_keys(tmp_path):
    path = tmp_path / "old.sqlite3"
    with connect(path):
        pass
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE trusted_keys")
        conn.execute("PRAGMA user_version = 6")
    store = LedgerStore(path)
    store.trust_key(b"\x01" * 32, name="n", reason="r")
    assert [k["name"] for k in store.trusted_keys()] == ["n"]


@pytest.mark.parametrize(("data", "words"), [
    (b"not a key", "not an Ed25519 public key in PEM"),
    (b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "not an Ed25519 public key"),
    (b"x" * 5000, "at most 4096 bytes"),
], ids=["text", "not-ed25519", "too-long"])
def test_a_bad_key_file_is_one_line(tmp_path, data, words, capsys):
    path = tmp_path / "k.pem"
    path.write_bytes(data)
    assert main(["ledger", "--trust-key", str(path), "--name", "n", "--reason", "r"]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err


def test_trust_needs_a_name_and_a_reason(other_installation, capsys):
    _, pem = other_installation
    assert main(["ledger", "--trust-key", str(pem), "--name", "census"]) == 2
    assert "needs a reason" in capsys.readouterr().err and LedgerStore().trusted_keys() == []


def test_the_ledger_page_trusts_a_key_and_shows_it(other_installation):
    theirs, pem = other_installation
    at = AppTest.from_file(APP, default_timeout=60).run()
    at = at.switch_page("pages/ledger.py").run()
    assert not at.exception
    assert any(b.label == "This installation's public key (PEM)" for b in at.get("download_button"))
    at.file_uploader(key="ledger_trust_file").set_value(("theirs.pem", pem.read_bytes(), "application/x-pem-file"))
    at.text_input(key="ledger_trust_name").set_value("census bureau")
    at.text_input(key="ledger_trust_reason").set_value("their 2020 release")
    at = next(b for b in at.button if b.label == "Trust this key").click().run()
    assert not at.exception
    assert any("Trusted key" in s.value for s in at.success), [e.value for e in at.error]
    shown = next(d.value for d in at.dataframe if "reason" in d.value.columns)
    assert shown["name"].tolist() == ["census bureau"] and shown["reason"].tolist() == ["their 2020 release"]
    assert recognise(LedgerStore(), theirs, "theirs.json")[1]["signer"] == "census bureau"
