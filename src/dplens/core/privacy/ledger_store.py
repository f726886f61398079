"""The persistent privacy ledger: one per dataset fingerprint, in the SQLite store (``dplens.core.privacy.store``).

The budget belongs to the data, not to a browser session: the app's tabs and sessions, the command
line and a restarted server all read and charge the same ledger for the same counts. The values
handed out are ``dplens.core.privacy.budget.Ledger`` (immutable; the current epoch's spends), so the composition
rule and its tolerance live in one place.

* ``set_total`` records the curator's total; allowed until the first spend, then fixed.
* ``spend`` is one ``BEGIN IMMEDIATE`` transaction: read the ledger, check the cost fits
  (``Ledger.spend``), insert the spend. Concurrent spenders (threads, processes) are serialised by
  SQLite's write lock, so together they never exceed the total.
* ``reset`` starts a fresh budget for the same data: an explicit, recorded action that voids the
  guarantee (the old spends stay in the history, under the previous epoch). Only the ledger's owner or an
  admin may reset it.

Every ledger has an owner (the curator: ``"local"`` on a localhost server and the command line, else the
signed-in email; ``ui.identity``). ``LedgerStore(owner=...)`` reads and charges only that owner's ledgers;
two curators with the same counts keep two ledgers, and neither sees the other's. A spend, total or reset
made from a workspace (``workspace=``) is refused when that workspace belongs to another owner. The public keys a
curator trusts (``trust_key``: other installations whose signed exports count as already private) are theirs too.

>>> import tempfile
>>> store = LedgerStore(Path(tempfile.mkdtemp()) / "dplens.sqlite3")
>>> fp = "f" * 64
>>> store.set_total(fp, Budget(1.0)).total.epsilon
1.0
>>> store.spend(fp, "release #1: identity", Budget(0.25), mechanism="identity").remaining.epsilon
0.75
>>> [e["kind"] for e in store.history(fp)]
['total', 'spend']
>>> LedgerStore(store.path, owner="b@example.org").history(fp)
[]
"""

from __future__ import annotations

import datetime as dt
import secrets
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dplens.core.data.signing import key_id
from dplens.core.privacy.budget import Budget, BudgetExceededError, Ledger, within
from dplens.core.privacy.store import LOCAL_OWNER, connect, default_path, transaction
from dplens.core.validate import positive

DEFAULT_TOTAL_EPSILON = 5.0  # a dataset's total until the curator records one
DEFAULT_TOTAL = Budget(DEFAULT_TOTAL_EPSILON)
DEFAULT_DELTA_RELEASES = 10  # an (ε, δ) default total has δ for this many releases at the session's δ


def default_total_for(definition: str, delta: float) -> Budget:
    """A dataset's total until the curator records one, in the unit of the privacy definition in use: ε = 5
    (pure); (ε = 5, δ for ``DEFAULT_DELTA_RELEASES`` releases at ``delta``) for (ε, δ); for zCDP the ρ whose
    ε at ``delta`` is 5, so a first zCDP release is charged in ρ rather than refused for want of a δ budget.

    >>> default_total_for("pure", 1e-6) == DEFAULT_TOTAL
    True
    >>> total = default_total_for("zcdp", 1e-6)
    >>> round(total.rho, 4), round(total.epsilon, 6)
    (0.4631, 5.0)
    """
    if definition == "zcdp":
        from dplens.core.privacy.definitions import zcdp_rho

        return Budget.zcdp(zcdp_rho(DEFAULT_TOTAL_EPSILON, delta), delta)
    if definition == "approx":
        return Budget(DEFAULT_TOTAL_EPSILON, min(DEFAULT_DELTA_RELEASES * delta, 1e-3))
    return DEFAULT_TOTAL
RESET_WARNING = ("Starting a fresh budget for the same data voids the differential-privacy guarantee: "
                 "every release already made still leaks, and the new budget adds to it.")
# What history() returns (pages and the ledger CSV show it): never the workspace id, which the store keeps.
HISTORY_COLUMNS = ("id", "time", "kind", "epoch", "label", "mechanism", "epsilon", "delta", "rho",
                   "workload", "export_id", "note", "fingerprint")


def new_export_id() -> str:
    """A random id tying an export to its ledger spend (no seed, nothing derived from the data).

    >>> len(new_export_id())
    32
    """
    return secrets.token_hex(16)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def total_label(total: Budget) -> str:
    """A total in its native unit: ``ε=1`` or ``ρ=0.5 (ε=5.22 at δ=1e-06)``.

    >>> total_label(Budget(1.0, 1e-6)), total_label(Budget.zcdp(0.5, 1e-6))
    ('ε=1', 'ρ=0.5 (ε=5.222 at δ=1e-06)')
    """
    if total.rho is not None:
        return f"ρ={total.rho:g} (ε={total.epsilon:.4g} at δ={total.delta:g})"
    return f"ε={total.epsilon:g}"


def _check_fingerprint(fingerprint: str) -> str:
    if not (isinstance(fingerprint, str) and len(fingerprint) == 64
            and all(c in "0123456789abcdef" for c in fingerprint)):
        raise ValueError(f"fingerprint must be 64 lowercase hex digits (SHA-256), got {str(fingerprint)[:80]!r}")
    return fingerprint


def _check_owner(owner: object) -> str:
    if not (isinstance(owner, str) and owner.strip() and len(owner) <= 320):
        raise ValueError(f"owner must be a curator id (1-320 characters), got {str(owner)[:80]!r}")
    return owner


def workspace_owner(conn: sqlite3.Connection, workspace: str | None) -> str | None:
    """The owner of a stored workspace, or None (no workspace, or one the store does not know)."""
    if workspace is None:
        return None
    row = conn.execute("SELECT owner FROM workspaces WHERE id = ?", (str(workspace),)).fetchone()
    return None if row is None else row[0]


def _check_workspace(conn: sqlite3.Connection, workspace: str | None, owner: str) -> None:
    found = workspace_owner(conn, workspace)
    if found is not None and found != owner:
        raise ValueError("the workspace and the ledger belong to different curators: a ledger is charged only from "
                         "its owner's workspaces (pass the curator's store: ui.ledger.ledger_store()); nothing was "
                         "recorded")


@dataclass(frozen=True)
class LedgerStore:
    """The ledgers of ``owner`` in the store at ``path`` (default: ``$DPLENS_HOME/dplens.sqlite3``).

    ``owner`` (default ``"local"``: the localhost curator and the command line) is whose ledgers every method
    reads and charges; a method's ``owner=`` keyword names another owner's (only ``reset`` by an admin needs it).
    """

    path: Path = field(default_factory=default_path)
    owner: str = LOCAL_OWNER

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path).expanduser())
        _check_owner(self.owner)

    def _owner(self, owner: str | None) -> str:
        return self.owner if owner is None else _check_owner(owner)

    def _read(self, conn: sqlite3.Connection, owner: str, fingerprint: str,
              default_total: Budget) -> tuple[Ledger, int | None]:
        row = conn.execute("SELECT epsilon, delta, rho, epoch FROM budgets WHERE owner = ? AND fingerprint = ?",
                           (owner, fingerprint)).fetchone()
        if row is None:
            return Ledger(default_total), None
        spends = conn.execute("SELECT label, epsilon, delta, rho FROM events WHERE owner = ? AND fingerprint = ? "
                              "AND epoch = ? AND kind = 'spend' ORDER BY id", (owner, fingerprint, row[3])).fetchall()
        return (Ledger(Budget(row[0], row[1], row[2]), tuple((label, Budget(e, d, r)) for label, e, d, r in spends)),
                row[3])

    def ledger(self, fingerprint: str, *, default_total: Budget = DEFAULT_TOTAL, owner: str | None = None) -> Ledger:
        """The dataset's ledger now (``default_total`` and no spends when nothing is recorded yet)."""
        owner = self._owner(owner)
        with connect(self.path) as conn:
            return self._read(conn, owner, _check_fingerprint(fingerprint), default_total)[0]

    def recorded(self, fingerprint: str, *, owner: str | None = None) -> bool:
        """Whether a total has been recorded for this dataset (by this owner)."""
        owner = self._owner(owner)
        with connect(self.path) as conn:
            return conn.execute("SELECT 1 FROM budgets WHERE owner = ? AND fingerprint = ?",
                                (owner, _check_fingerprint(fingerprint))).fetchone() is not None

    def _record_total(self, conn: sqlite3.Connection, owner: str, fingerprint: str, total: Budget,
                      epoch: int | None, *, kind: str, name: str, workspace: str | None, note: str | None) -> int:
        if epoch is None:
            epoch = 0
            conn.execute("INSERT INTO budgets (owner, fingerprint, name, epsilon, delta, rho, epoch, created) "
                         "VALUES (?, ?, ?, ?, ?, ?, 0, ?)",
                         (owner, fingerprint, name, total.epsilon, total.delta, total.rho, _now()))
        else:
            epoch += kind == "reset"
            conn.execute("UPDATE budgets SET epsilon = ?, delta = ?, rho = ?, epoch = ?, name = CASE WHEN ? = '' "
                         "THEN name ELSE ? END WHERE owner = ? AND fingerprint = ?",
                         (total.epsilon, total.delta, total.rho, epoch, name, name, owner, fingerprint))
        conn.execute("INSERT INTO events (owner, fingerprint, epoch, kind, label, epsilon, delta, rho, workspace, "
                     "note, time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (owner, fingerprint, epoch, kind, f"{kind} {total_label(total)}", total.epsilon, total.delta,
                      total.rho, workspace, note, _now()))
        return epoch

    def set_total(self, fingerprint: str, total: Budget, *, name: str = "", workspace: str | None = None,
                  owner: str | None = None) -> Ledger:
        """Record the dataset's total budget; refused once the current epoch has a spend.

        Raises:
            ValueError: when spends exist (the total is fixed after the first release; ``reset`` instead),
            or ``workspace`` belongs to another owner.
        """
        _check_fingerprint(fingerprint)
        owner = self._owner(owner)
        positive("total budget epsilon", total.epsilon)
        with connect(self.path) as conn, transaction(conn):
            _check_workspace(conn, workspace, owner)
            ledger, epoch = self._read(conn, owner, fingerprint, total)
            if ledger.spends:
                fixed = (f"epsilon={ledger.total.epsilon:g}" if ledger.total.rho is None
                         else f"rho={ledger.total.rho:g}")
                raise ValueError(f"the total budget is fixed at {fixed} after the first "
                                 f"release ({len(ledger.spends)} spend(s)); starting a fresh budget is a reset, "
                                 "which voids the guarantee")
            if epoch is not None and ledger.total == total:
                return ledger
            self._record_total(conn, owner, fingerprint, total, epoch, kind="total", name=name,
                               workspace=workspace, note=None)
        return Ledger(total)

    def spend(self, fingerprint: str, label: str, cost: Budget, *, mechanism: str, workload: str | None = None,
              export_id: str | None = None, rho: float | None = None, workspace: str | None = None,
              name: str = "", note: str | None = None, default_total: Budget = DEFAULT_TOTAL,
              values_hash: str | None = None, owner: str | None = None,
              within: Callable[[sqlite3.Connection, int], None] | None = None) -> Ledger:
        """Charge ``cost`` atomically (check and insert in one ``BEGIN IMMEDIATE`` transaction).

        ``within(conn, epoch)`` runs inside that transaction after the charge is recorded (a gradual release marks
        its step released there); an exception from it rolls the charge back.

        With ``export_id`` and ``values_hash`` (``dplens.core.release.provenance.values_hash`` of the released values),
        the export is recorded in the same transaction: the file comes back as already private only if it is known.

        The first spend on an unrecorded dataset records ``default_total`` first. ``rho`` (zCDP; or
        ``cost.rho``) is stored with the spend. The check is ``Ledger.spend``: basic composition of
        (ε, δ) under an (ε, δ) total, Σρ under a ρ total (where a δ > 0 spend without ρ is refused).

        Raises:
            BudgetExceededError: naming the remaining budget; nothing is recorded.
            ValueError: ``workspace`` belongs to another owner (nothing is recorded).
        """
        _check_fingerprint(fingerprint)
        owner = self._owner(owner)
        if rho is not None and not rho >= 0:
            raise ValueError(f"rho must be >= 0 or None, got {rho!r}")
        if rho is not None and cost.rho is None:
            cost = replace(cost, rho=float(rho))
        with connect(self.path) as conn, transaction(conn):
            _check_workspace(conn, workspace, owner)
            ledger, epoch = self._read(conn, owner, fingerprint, default_total)
            after = ledger.spend(label, cost)  # raises BudgetExceededError: the transaction rolls back
            if epoch is None:
                epoch = self._record_total(conn, owner, fingerprint, ledger.total, None, kind="total", name=name,
                                           workspace=workspace, note="default total, recorded at the first spend")
            conn.execute("INSERT INTO events (owner, fingerprint, epoch, kind, label, mechanism, epsilon, delta, rho, "
                         "workload, export_id, workspace, note, time) "
                         "VALUES (?, ?, ?, 'spend', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (owner, fingerprint, epoch, label, mechanism, cost.epsilon, cost.delta, cost.rho, workload,
                          export_id, workspace, note, _now()))
            if values_hash is not None:
                if export_id is None:
                    raise ValueError("a recorded export needs its export_id")
                conn.execute("INSERT INTO exports (export_id, fingerprint, values_hash, kind, note, time) "
                             "VALUES (?, ?, ?, 'released', ?, ?)", (export_id, fingerprint, values_hash, label, _now()))
            if within is not None:
                within(conn, epoch)
        return after

    def epoch(self, fingerprint: str, *, owner: str | None = None) -> int | None:
        """The current epoch of the dataset's ledger (a reset starts a new one), or None before anything is recorded."""
        with connect(self.path) as conn:
            return self._read(conn, self._owner(owner), _check_fingerprint(fingerprint), DEFAULT_TOTAL)[1]

    def known_export(self, values_hash: str) -> dict[str, object] | None:
        """The export this installation released whose values hash to ``values_hash``, else None. (A ``stated`` row,
        the unsigned statement of stores before version 7, no longer counts: ``dplens.core.data.signing``.)"""
        with connect(self.path) as conn:
            row = conn.execute("SELECT export_id, fingerprint, kind, note, time FROM exports WHERE values_hash = ? "
                               "AND kind = 'released' ORDER BY time LIMIT 1", (str(values_hash),)).fetchone()
        return None if row is None else dict(zip(("export_id", "fingerprint", "kind", "note", "time"), row,
                                                 strict=True))

    def trust_key(self, public_key: bytes, *, name: str, reason: str) -> str:
        """Record, for this store's curator, that exports signed by ``public_key`` (raw Ed25519, 32 bytes) are
        already private; ``name`` says whose it is and ``reason`` why it is trusted (both shown on the Ledger page).
        Returns the key's id. Trusting a key again updates its name and reason.

        Raises:
            ValueError: a key that is not 32 bytes, or an empty name or reason (nothing is recorded).
        """
        raw = bytes(public_key)
        if len(raw) != 32:
            raise ValueError(f"a trusted key is a raw Ed25519 public key of 32 bytes, got {len(raw)}")
        for label, text in (("name", name), ("reason", reason)):
            if not (isinstance(text, str) and text.strip()):
                raise ValueError(f"trusting another installation's key needs a {label}: it is recorded and shown on "
                                 "the Ledger page, since every export that key signs then counts as already private")
        kid = key_id(raw)
        with connect(self.path) as conn, transaction(conn):
            conn.execute("INSERT INTO trusted_keys (owner, key_id, public_key, name, reason, added) "
                         "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (owner, key_id) DO UPDATE SET name = excluded.name, "
                         "reason = excluded.reason", (self.owner, kid, raw, name.strip()[:200], reason.strip()[:500],
                                                      _now()))
        return kid

    def untrust_key(self, key_id: str) -> bool:
        """Stop trusting the key ``key_id`` for this store's curator; True when it was trusted."""
        with connect(self.path) as conn, transaction(conn):
            return conn.execute("DELETE FROM trusted_keys WHERE owner = ? AND key_id = ?",
                                (self.owner, str(key_id))).rowcount > 0

    def trusted_keys(self) -> list[dict[str, Any]]:
        """This curator's trusted keys, oldest first: ``key_id``, ``public_key`` (raw bytes), ``name``, ``reason``,
        ``added``. Another curator's are never listed."""
        with connect(self.path) as conn:
            rows = conn.execute("SELECT key_id, public_key, name, reason, added FROM trusted_keys WHERE owner = ? "
                                "ORDER BY added", (self.owner,)).fetchall()
        return [dict(zip(("key_id", "public_key", "name", "reason", "added"), row, strict=True)) for row in rows]

    def reset(self, fingerprint: str, total: Budget, *, reason: str, workspace: str | None = None,
              owner: str | None = None, admin: bool = False) -> Ledger:
        """Start a fresh budget for the same data (recorded with ``reason``; see RESET_WARNING).

        The caller is this store's ``owner``; ``owner=`` names the ledger to reset (default: the caller's own).
        Only the ledger's owner, or an admin (``admin=True``: ``dplens.ui.identity.is_admin``), may reset it.

        Raises:
            ValueError: another owner's ledger without ``admin``; without a reason; for a total that is not > 0.
        """
        _check_fingerprint(fingerprint)
        target = self._owner(owner)
        if target != self.owner and not admin:
            raise ValueError("only the ledger's owner or an admin may reset a budget: this ledger belongs to another "
                             "curator; nothing was recorded")
        if not (isinstance(reason, str) and reason.strip()):
            raise ValueError("a budget reset needs a reason: it voids the guarantee and is recorded")
        positive("total budget epsilon", total.epsilon)
        by = "" if target == self.owner else f" (reset by admin {self.owner})"
        with connect(self.path) as conn, transaction(conn):
            _check_workspace(conn, workspace, self.owner)
            _, epoch = self._read(conn, target, fingerprint, total)
            self._record_total(conn, target, fingerprint, total, epoch, kind="reset" if epoch is not None else "total",
                               name="", workspace=workspace, note=f"{reason.strip()}{by} — {RESET_WARNING}")
        return Ledger(total)

    def convert_total(self, fingerprint: str, total: Budget, *, reason: str, workspace: str | None = None) -> Ledger:
        """Record a weaker total that keeps every spend so far: a pure ε total (δ = 0) becomes a ρ total with
        ρ = ε²/2 (its pure spends count ε²/2, as ε-DP implies ε²/2-zCDP), or an (ε, δ) total with the same ε and a
        δ > 0. The guarantee becomes the new total's (weaker than pure ε-DP), so the reason is recorded.

        Raises:
            ValueError: no reason; the ledger is not a pure ε total with spends; the new total is not one of the two
            conversions; or the spends so far do not fit it. Nothing is recorded.
        """
        _check_fingerprint(fingerprint)
        if not (isinstance(reason, str) and reason.strip()):
            raise ValueError("converting a budget weakens its guarantee; it needs a reason, which is recorded")
        with connect(self.path) as conn, transaction(conn):
            _check_workspace(conn, workspace, self.owner)
            ledger, epoch = self._read(conn, self.owner, fingerprint, DEFAULT_TOTAL)
            old = ledger.total
            if epoch is None or not ledger.spends or old.rho is not None or old.delta > 0:
                raise ValueError("only a pure epsilon total with releases on it is converted (before the first "
                                 "release, set the total instead); nothing was recorded")
            to_rho = total.rho is not None and within(total.rho, old.epsilon**2 / 2)
            to_delta = total.rho is None and total.epsilon == old.epsilon and 0 < total.delta < 1
            if not (to_rho or to_delta):
                raise ValueError(f"a pure epsilon={old.epsilon:g} total converts to rho <= {old.epsilon**2 / 2:g} "
                                 f"(epsilon²/2) or to (epsilon={old.epsilon:g}, delta > 0); got {total_label(total)}")
            converted = Ledger(total)
            for label, cost in ledger.spends:
                converted = converted.spend(label, cost)  # raises BudgetExceededError: nothing recorded
            # recorded as a "total" row of the same epoch (the spends stay); the note says it is a conversion
            self._record_total(conn, self.owner, fingerprint, total, epoch, kind="total", name="",
                               workspace=workspace, note=f"converted from {total_label(old)}: {reason.strip()}; the "
                                                         "releases made so far are kept and counted in the new unit")
        return converted

    def history(self, fingerprint: str | None = None, *, owner: str | None = None,
                every_owner: bool = False) -> list[dict[str, Any]]:
        """The owner's recorded actions (all epochs), oldest first; one dataset's or all of them (each row maps
        a column of ``HISTORY_COLUMNS`` to its stored value).

        ``every_owner`` (an admin's view) adds every owner's, each row naming its ``owner``. No row carries
        the workspace id.
        """
        columns = HISTORY_COLUMNS + (("owner",) if every_owner else ())
        query, clauses, args = f"SELECT {', '.join(columns)} FROM events", [], []
        if not every_owner:
            clauses, args = ["owner = ?"], [self._owner(owner)]
        if fingerprint is not None:
            clauses.append("fingerprint = ?")
            args.append(_check_fingerprint(fingerprint))
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        with connect(self.path) as conn:
            return [dict(zip(columns, row, strict=True)) for row in conn.execute(query + " ORDER BY id", args)]

    def datasets(self, *, owner: str | None = None, every_owner: bool = False) -> list[dict[str, Any]]:
        """One summary per recorded ledger of the owner: fingerprint, name, unit, total, spent, remaining, delta,
        spends, epoch. Total, spent and remaining are all in the ledger's own ``unit`` ("ρ" under a zCDP total, else
        "ε"; ``Ledger.amounts``), so spent + remaining = total.

        ``every_owner`` (an admin's view) lists every owner's ledgers, each naming its ``owner``.
        """
        query = "SELECT owner, fingerprint, name, epoch FROM budgets"
        args: tuple[str, ...] = ()
        if not every_owner:
            query, args = query + " WHERE owner = ?", (self._owner(owner),)
        with connect(self.path) as conn:
            rows = conn.execute(query + " ORDER BY created", args).fetchall()
            out = []
            for row_owner, fingerprint, name, epoch in rows:
                ledger = self._read(conn, row_owner, fingerprint, DEFAULT_TOTAL)[0]
                total, spent, remaining = ledger.amounts()
                out.append({**({"owner": row_owner} if every_owner else {}),
                            "fingerprint": fingerprint, "name": name, "unit": ledger.unit_symbol,
                            "total": total, "spent": spent, "remaining": remaining, "delta": ledger.total.delta,
                            "spends": len(ledger.spends), "epoch": epoch})
            return out


__all__ = ["DEFAULT_TOTAL_EPSILON", "RESET_WARNING", "BudgetExceededError", "LedgerStore", "new_export_id",
           "total_label"]
