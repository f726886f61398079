"""The persistent per-dataset ledger (dplens.core.privacy.ledger_store): totals, spends, resets, history, concurrency.

20 threads and 4 processes spend against one SQLite file at once: the total spent never exceeds the
budget, every accepted spend is recorded, and every refused one left no row.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dplens.core.data.fingerprint import dataset_fingerprint
from dplens.core.privacy.budget import RELATIVE_TOLERANCE as TOLERANCE
from dplens.core.privacy.budget import Budget, BudgetExceededError
from dplens.core.privacy.definitions import zcdp_epsilon
from dplens.core.privacy.ledger_store import DEFAULT_TOTAL_EPSILON, RESET_WARNING, LedgerStore
from dplens.core.privacy.store import connect, default_path

FP = dataset_fingerprint(np.arange(6.0), key=b"tests")  # keyed here: spawned processes import this under another home


@pytest.fixture
def store(tmp_path) -> LedgerStore:
    return LedgerStore(tmp_path / "ledger.sqlite3")


def test_store_lives_under_dplens_home(dplens_home):
    assert default_path() == dplens_home / "dplens.sqlite3"
    LedgerStore().ledger(FP)
    assert (dplens_home / "dplens.sqlite3").exists()
    assert oct((dplens_home / "dplens.sqlite3").stat().st_mode & 0o777) == "0o600"


def test_a_home_others_may_read_is_made_private(dplens_home):
    dplens_home.chmod(0o755)  # made by hand: mkdir under the usual umask
    LedgerStore().ledger(FP)
    assert oct(dplens_home.stat().st_mode & 0o777) == "0o700"


def test_a_home_that_cannot_be_made_private_is_refused_naming_it(dplens_home, monkeypatch):
    import pathlib

    dplens_home.chmod(0o755)

    def refuse(self, mode):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(pathlib.Path, "chmod", refuse)  # as on a folder of another user's, or a read-only mount
    with pytest.raises(ValueError, match=rf"DPLENS_HOME '{dplens_home}' has mode 0755 .* cannot be made 0700 "
                                         r"\(Operation not permitted\): make it 0700"):
        LedgerStore().ledger(FP)
    assert not (dplens_home / "dplens.sqlite3").exists()


def test_the_same_counts_have_unrelated_ids_under_two_installations(tmp_path, monkeypatch):
    from dplens.core.data import fingerprint

    counts, ids = np.arange(6.0), []
    for home in (tmp_path / "a", tmp_path / "b"):
        monkeypatch.setenv("DPLENS_HOME", str(home))
        ids.append(dataset_fingerprint(counts))
        key = home / "installation.key"
        assert oct(key.stat().st_mode & 0o777) == "0o600" and len(key.read_bytes()) == 32
        monkeypatch.setattr(fingerprint, "_KEYS", {})  # a new process reads the same key back
        assert dataset_fingerprint(counts) == ids[-1]
    assert ids[0] != ids[1] and fingerprint.plain_fingerprint(counts) not in ids
    assert len(ids[0]) == 64 and int(ids[0], 16) >= 0  # still a ledger id: 64 lowercase hex digits


def test_a_store_written_before_keys_is_rekeyed_and_keeps_no_plain_fingerprint(dplens_home, monkeypatch):
    import hashlib
    import json

    from dplens.core.data import fingerprint
    from dplens.core.data.domain import Histogram
    from dplens.core.release import workspace_store
    from dplens.core.release.workspace_store import WorkspaceStore

    counts = np.arange(6.0)
    plain, session = fingerprint.plain_fingerprint(counts), hashlib.sha1(b"old upload").hexdigest()[:12]
    # what a version-4 store held: plain SHA-256 fingerprints, and sessions keyed by a SHA-1 of the file
    monkeypatch.setattr(workspace_store, "dataset_fingerprint", fingerprint.plain_fingerprint)
    reference = WorkspaceStore().put_dataset(Histogram.from_counts(counts, name="old.csv"))
    workspace = WorkspaceStore().create()
    WorkspaceStore().save(workspace, {"dataset_key": f"upload:{session}:::", "uploads": {
        f"upload:{session}:::": reference}})
    LedgerStore().spend(plain, "release #1", Budget(0.5), mechanism="identity", export_id="e1")
    with sqlite3.connect(default_path()) as conn:
        conn.execute("INSERT INTO exports VALUES ('e1', ?, 'values', 'released', NULL, 't')", (plain,))
        conn.execute("DROP TABLE installation")
        conn.execute("PRAGMA user_version = 4")
    monkeypatch.undo()
    monkeypatch.setenv("DPLENS_HOME", str(dplens_home))

    keyed = dataset_fingerprint(counts)
    assert LedgerStore().ledger(keyed).spent.epsilon == 0.5  # opening re-keys: the ledger carries on
    assert [r["label"] for r in LedgerStore().history(keyed) if r["kind"] == "spend"] == ["release #1"]
    state = WorkspaceStore().load(workspace)
    (key, ref), = state["uploads"].items()
    assert state["dataset_key"] == key != f"upload:{session}:::" and ref.startswith(keyed + ":")
    assert WorkspaceStore().get_dataset(ref).name == "old.csv"
    files = [p for p in dplens_home.iterdir() if p.name.startswith("dplens.sqlite3")]
    dump = b"".join(p.read_bytes() for p in files)
    assert plain.encode() not in dump and session.encode() not in dump  # nowhere: tables, log, free pages
    with sqlite3.connect(default_path()) as conn:
        text = json.dumps(list(conn.iterdump()))
    assert keyed in text and plain not in text


def test_a_store_is_not_opened_under_another_installation_key(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite3"
    LedgerStore(path).spend(FP, "release #1", Budget(0.5), mechanism="identity")
    monkeypatch.setenv("DPLENS_HOME", str(tmp_path / "another-home"))  # or a lost key file
    with pytest.raises(ValueError, match="was written under another installation key .* restore its key"):
        LedgerStore(path).ledger(FP)


def test_fingerprint_is_the_content_not_the_name_or_labels():
    from dplens.core.data.domain import Histogram

    a = Histogram.from_counts([1, 2, 3], labels=(("a", "b", "c"),), name="one")
    b = Histogram.from_counts([1.0, 2.0, 3.0], name="two")
    assert dataset_fingerprint(a) == dataset_fingerprint(b)
    assert dataset_fingerprint(a) != dataset_fingerprint([1, 2, 4])
    assert dataset_fingerprint([[1, 2], [3, 4]]) != dataset_fingerprint([1, 2, 3, 4])  # the domain counts too


def test_unrecorded_dataset_shows_the_default_total(store):
    ledger = store.ledger(FP)
    assert ledger.total == Budget(DEFAULT_TOTAL_EPSILON) and not ledger.spends
    assert not store.recorded(FP) and store.history(FP) == []


def test_total_is_recorded_and_fixed_after_the_first_spend(store):
    store.set_total(FP, Budget(2.0))
    store.set_total(FP, Budget(3.0))  # still no spend: allowed, and recorded
    store.spend(FP, "release #1: identity", Budget(1.0), mechanism="identity", workload="prefix", export_id="x1")
    with pytest.raises(ValueError, match="fixed at epsilon=3 after the first release"):
        store.set_total(FP, Budget(50.0))
    assert store.ledger(FP).total.epsilon == 3.0
    rows = store.history(FP)
    assert [r["kind"] for r in rows] == ["total", "total", "spend"]
    spend = rows[-1]
    assert (spend["mechanism"], spend["epsilon"], spend["delta"], spend["rho"], spend["workload"],
            spend["export_id"]) == ("identity", 1.0, 0.0, None, "prefix", "x1")
    assert spend["time"].endswith("+00:00")


def test_first_spend_records_the_default_total(store):
    store.spend(FP, "release #1", Budget(0.5), mechanism="identity")
    assert store.recorded(FP)
    assert [r["kind"] for r in store.history(FP)] == ["total", "spend"]


def test_overspend_is_refused_naming_what_remains_and_records_nothing(store):
    store.set_total(FP, Budget(1.0))
    store.spend(FP, "a", Budget(0.75), mechanism="identity")
    with pytest.raises(BudgetExceededError, match="remaining is epsilon=0.25"):
        store.spend(FP, "b", Budget(0.5), mechanism="identity")
    assert len(store.history(FP)) == 2


def test_ledgers_are_per_dataset(store):
    other = dataset_fingerprint([1.0])
    store.spend(FP, "a", Budget(4.0), mechanism="identity")
    assert store.ledger(other).spent.epsilon == 0
    assert {d["fingerprint"]: d["spent"] for d in store.datasets()} == {FP: 4.0}


def test_rho_and_delta_are_stored_for_other_accountings(store):
    store.set_total(FP, Budget(1.0, 1e-6))
    store.spend(FP, "gauss", Budget(0.5, 1e-7), mechanism="gaussian", rho=0.125)
    row = store.history(FP)[-1]
    assert (row["epsilon"], row["delta"], row["rho"]) == (0.5, 1e-7, 0.125)


def test_a_rho_total_composes_by_sum_of_rho(store):
    total = store.set_total(FP, Budget.zcdp(0.5, 1e-6)).total
    assert (total.rho, total.delta) == (0.5, 1e-6) and total.epsilon == pytest.approx(5.221534, abs=1e-6)
    store.spend(FP, "pure", Budget(0.5), mechanism="identity")  # ε-DP ⇒ ε²/2 = 0.125
    ledger = store.spend(FP, "gauss", Budget(2.9, 1e-6), mechanism="gaussian", rho=0.25)
    assert ledger.spent.rho == pytest.approx(0.375) and ledger.remaining.rho == pytest.approx(0.125)
    assert store.ledger(FP).remaining == ledger.remaining  # read back from the store: the same
    assert ledger.remaining.epsilon == pytest.approx(zcdp_epsilon(0.125, 1e-6))
    with pytest.raises(BudgetExceededError, match=r"'big' needs rho=0.2; remaining is rho=0.125 of 0.5"):
        store.spend(FP, "big", Budget(1.0, 1e-6), mechanism="gaussian", rho=0.2)
    with pytest.raises(BudgetExceededError, match="implies no rho"):  # (ε, δ) with δ > 0: no ρ, refused
        store.spend(FP, "approx", Budget(0.01, 1e-9), mechanism="gaussian")
    assert [r["label"] for r in store.history(FP) if r["kind"] == "spend"] == ["pure", "gauss"]
    assert store.history(FP)[0]["rho"] == 0.5 and "ρ=0.5" in store.history(FP)[0]["label"]
    summary = store.datasets()[0]
    assert summary["unit"] == "ρ" and summary["spent"] == pytest.approx(0.375)
    assert summary["total"] == 0.5 and summary["spent"] + summary["remaining"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="fixed at rho=0.5"):
        store.set_total(FP, Budget.zcdp(1.0, 1e-6))


def test_an_epsilon_total_still_composes_epsilon_and_delta(store):
    store.set_total(FP, Budget(1.0, 1e-6))
    ledger = store.spend(FP, "gauss", Budget(0.75, 5e-7), mechanism="gaussian", rho=0.01)
    assert ledger.unit == "epsilon" and ledger.remaining == Budget(0.25, 5e-7)
    with pytest.raises(BudgetExceededError, match="remaining is epsilon=0.25"):
        store.spend(FP, "more", Budget(0.5), mechanism="identity")


def test_a_reset_may_switch_unit_and_the_old_epoch_stays(store):
    store.set_total(FP, Budget(1.0))
    store.spend(FP, "a", Budget(1.0), mechanism="identity")
    ledger = store.reset(FP, Budget.zcdp(0.1, 1e-6), reason="switch to zCDP")
    assert ledger.unit == "rho" and store.ledger(FP).remaining.rho == 0.1


def test_an_old_store_opens_and_keeps_its_history(tmp_path):
    """A store written before ρ totals (rho NULL everywhere, as the old INSERTs left it) reads unchanged."""
    path = tmp_path / "old.sqlite3"
    with connect(path) as conn:  # the schema (version 1) is unchanged: old files need no migration
        conn.execute("INSERT INTO budgets (fingerprint, name, epsilon, delta, epoch, created) "
                     "VALUES (?, 'old', 2.0, 1e-6, 0, 't0')", (FP,))
        conn.execute("INSERT INTO events (fingerprint, epoch, kind, label, epsilon, delta, time) "
                     "VALUES (?, 0, 'total', 'total ε=2', 2.0, 1e-6, 't0')", (FP,))
        conn.execute("INSERT INTO events (fingerprint, epoch, kind, label, mechanism, epsilon, delta, time) "
                     "VALUES (?, 0, 'spend', 'release #1', 'identity', 0.5, 0, 't1')", (FP,))
    store = LedgerStore(path)
    ledger = store.ledger(FP)
    assert ledger.unit == "epsilon" and ledger.total == Budget(2.0, 1e-6) and ledger.remaining.epsilon == 1.5
    assert [r["label"] for r in store.history(FP)] == ["total ε=2", "release #1"]
    assert store.spend(FP, "release #2", Budget(1.5), mechanism="identity").remaining.epsilon == 0.0


def test_reset_is_explicit_recorded_and_keeps_the_old_history(store):
    store.set_total(FP, Budget(1.0))
    store.spend(FP, "a", Budget(1.0), mechanism="identity")
    with pytest.raises(ValueError, match="needs a reason"):
        store.reset(FP, Budget(2.0), reason=" ")
    ledger = store.reset(FP, Budget(2.0), reason="new quarter's data release plan")
    assert ledger.remaining.epsilon == 2.0 and store.ledger(FP).remaining.epsilon == 2.0
    rows = store.history(FP)
    assert [(r["kind"], r["epoch"]) for r in rows] == [("total", 0), ("spend", 0), ("reset", 1)]
    assert RESET_WARNING in rows[-1]["note"] and "new quarter" in rows[-1]["note"]


def test_a_file_that_is_not_a_store_is_named_without_its_content(tmp_path):
    path = tmp_path / "secret.txt"
    path.write_text("TOP-SECRET-CONTENT " * 100)
    with pytest.raises(ValueError, match="is not a dplens store") as err:
        LedgerStore(path).ledger(FP)
    assert "TOP-SECRET" not in str(err.value)


def test_a_bad_fingerprint_is_refused(store):
    with pytest.raises(ValueError, match="64 lowercase hex"):
        store.ledger("../../etc/passwd")


# ----------------------------------------------------------------------------- concurrency
SPENDERS, ATTEMPTS, COST, TOTAL = 20, 8, 0.1, 7.05  # 160 attempts of 0.1 against 7.05: 70 fit


ZCDP_TOTAL, ZCDP_COST = Budget.zcdp(TOTAL, 1e-6), Budget(1.5, 1e-6, COST)  # the same race in rho
UNITS = {"epsilon": (Budget(TOTAL), Budget(COST)), "rho": (ZCDP_TOTAL, ZCDP_COST)}


def _spend_many(path: str, who: str, attempts: int, barrier, cost: Budget) -> list[str]:
    store, accepted = LedgerStore(path), []
    if barrier is not None:
        barrier.wait()
    for i in range(attempts):
        label = f"{who}-{i}"
        try:
            store.spend(FP, label, cost, mechanism="identity", export_id=label)
        except BudgetExceededError:
            continue
        accepted.append(label)
    return accepted


def _check_no_overspend_no_lost_record(store: LedgerStore, accepted: list[str]) -> None:
    ledger = store.ledger(FP)
    assert (ledger.spent.epsilon if ledger.unit == "epsilon" else ledger.spent.rho) <= TOTAL + TOLERANCE
    assert len(accepted) == 70  # the budget is used up exactly: no spend refused while it would have fitted
    spends = [r for r in store.history(FP) if r["kind"] == "spend"]
    assert sorted(r["label"] for r in spends) == sorted(accepted)  # no lost and no phantom record
    assert len({r["id"] for r in spends}) == len(spends)
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.parametrize("unit", UNITS)
def test_twenty_threads_never_overspend(store, unit):
    total, cost = UNITS[unit]
    store.set_total(FP, total)
    barrier, results = threading.Barrier(SPENDERS), []
    lock = threading.Lock()

    def worker(k: int) -> None:
        got = _spend_many(str(store.path), f"thread{k}", ATTEMPTS, barrier, cost)
        with lock:
            results.extend(got)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(SPENDERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    _check_no_overspend_no_lost_record(store, results)


@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.serial  # four interpreters at once: not beside another file's tests
def test_four_processes_never_overspend(store, unit, bare_main):
    total, cost = UNITS[unit]
    store.set_total(FP, total)
    context = multiprocessing.get_context("spawn")  # a fresh interpreter each: truly separate processes
    with context.Manager() as manager, context.Pool(4) as pool:
        barrier = manager.Barrier(4)  # all four start spending together
        parts = pool.starmap(_spend_many, [(str(store.path), f"proc{k}", SPENDERS * ATTEMPTS // 4, barrier, cost)
                                           for k in range(4)])
    _check_no_overspend_no_lost_record(store, [label for part in parts for label in part])


def test_a_pure_total_with_releases_converts_to_rho_or_to_a_delta_budget_keeping_its_spends(tmp_path):
    from dplens.core.privacy.ledger_store import default_total_for

    store, fp = LedgerStore(tmp_path / "s.sqlite3"), "c" * 64
    store.set_total(fp, Budget(2.0))
    store.spend(fp, "pure release", Budget(1.0), mechanism="identity")
    with pytest.raises(ValueError, match="needs a reason"):
        store.convert_total(fp, Budget.zcdp(2.0, 1e-6), reason=" ")
    with pytest.raises(ValueError, match="converts to rho <= 2"):
        store.convert_total(fp, Budget.zcdp(2.5, 1e-6), reason="zCDP from now on")
    assert store.ledger(fp).total == Budget(2.0)  # nothing recorded by a refusal
    converted = store.convert_total(fp, Budget.zcdp(2.0, 1e-6), reason="zCDP from now on")
    assert converted.spent.rho == pytest.approx(0.5) and converted.remaining.rho == pytest.approx(1.5)
    assert store.ledger(fp).spent.rho == pytest.approx(0.5)  # the pure release counts ε²/2 in the store too
    after = store.spend(fp, "gaussian", Budget(3.0, 1e-6, 1.0), mechanism="gaussian")
    assert after.remaining.rho == pytest.approx(0.5)
    assert [e["kind"] for e in store.history(fp)] == ["total", "spend", "total", "spend"]
    assert store.history(fp)[2]["note"].startswith("converted from ε=2: zCDP from now on")
    with pytest.raises(ValueError, match="only a pure epsilon total"):
        store.convert_total(fp, Budget.zcdp(1.0, 1e-6), reason="again")

    other = "d" * 64
    store.set_total(other, Budget(2.0))
    store.spend(other, "pure release", Budget(1.5), mechanism="identity")
    with pytest.raises(ValueError, match="converts to"):
        store.convert_total(other, Budget(3.0, 1e-6), reason="more epsilon is not a conversion")
    widened = store.convert_total(other, Budget(2.0, 1e-5), reason="(ε, δ) from now on")
    assert widened.remaining.epsilon == pytest.approx(0.5) and widened.remaining.delta == pytest.approx(1e-5)
    assert default_total_for("approx", 1e-6).delta == pytest.approx(1e-5)


# ----------------------------------------------------------------------------- the figures a page shows
_OPS = st.lists(st.one_of(
    st.tuples(st.just("pure"), st.floats(0.01, 2.0)),
    st.tuples(st.just("zcdp"), st.floats(0.001, 0.4)),
    st.tuples(st.just("approx"), st.floats(0.01, 2.0)),
    st.tuples(st.just("convert"), st.just(0.0)),
    st.tuples(st.just("reset-epsilon"), st.floats(0.5, 5.0)),
    st.tuples(st.just("reset-rho"), st.floats(0.05, 2.0)),
), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None)
@given(first=st.sampled_from(["epsilon", "rho"]), ops=_OPS)
def test_every_summary_sums_in_the_ledgers_own_unit(tmp_path_factory, first, ops):
    """Over random spends, refused overspends, conversions and resets, each dataset's summary (the Ledger page's
    "All datasets" rows) is in the ledger's own unit, spent + remaining = total, and it agrees with the ledger."""
    store = LedgerStore(tmp_path_factory.mktemp("l") / "ledger.sqlite3")
    store.set_total(FP, Budget(3.0) if first == "epsilon" else Budget.zcdp(1.0, 1e-6))
    for kind, amount in ops:
        try:
            if kind == "pure":
                store.spend(FP, kind, Budget(amount), mechanism="identity")
            elif kind == "zcdp":
                store.spend(FP, kind, Budget(zcdp_epsilon(amount, 1e-6), 1e-6, amount), mechanism="gaussian")
            elif kind == "approx":
                store.spend(FP, kind, Budget(amount, 1e-7), mechanism="gaussian")
            elif kind == "convert":
                old = store.ledger(FP).total
                store.convert_total(FP, Budget.zcdp(old.epsilon ** 2 / 2, 1e-6), reason="to rho")
            elif kind == "reset-epsilon":
                store.reset(FP, Budget(amount, 1e-6), reason="test")
            else:
                store.reset(FP, Budget.zcdp(amount, 1e-6), reason="test")
        except (BudgetExceededError, ValueError):
            pass  # refused: nothing recorded, and the figures below must still sum
        ledger, (row,) = store.ledger(FP), store.datasets()
        assert row["unit"] == ("ρ" if ledger.total.rho is not None else "ε")
        assert row["total"] == (ledger.total.rho if ledger.total.rho is not None else ledger.total.epsilon)
        assert row["spent"] + row["remaining"] == pytest.approx(row["total"], rel=1e-9, abs=1e-12)
        assert 0 <= row["remaining"] <= row["total"] and row["spends"] == len(ledger.spends)
