"""The persistent privacy ledger: one per dataset fingerprint, in the SQLite store (``core.privacy.store``).

The budget belongs to the data, not to a browser session: the app's tabs and sessions, the command
line and a restarted server all read and charge the same ledger for the same counts. The values
handed out are ``core.privacy.budget.Ledger`` (immutable; the current epoch's spends), so the composition
rule and its tolerance live in one place.

* ``set_total`` records the curator's total; allowed until the first spend, then fixed.
* ``spend`` is one ``BEGIN IMMEDIATE`` transaction: read the ledger, check the cost fits
  (``Ledger.spend``), insert the spend. Concurrent spenders (threads, processes) are serialised by
  SQLite's write lock, so together they never exceed the total.
* ``reset`` starts a fresh budget for the same data: an explicit, recorded action that voids the
  guarantee (the old spends stay in the history, under the previous epoch).

>>> import tempfile
>>> store = LedgerStore(Path(tempfile.mkdtemp()) / "dplens.sqlite3")
>>> fp = "f" * 64
>>> store.set_total(fp, Budget(1.0)).total.epsilon
1.0
>>> store.spend(fp, "release #1: identity", Budget(0.25), mechanism="identity").remaining.epsilon
0.75
>>> [e["kind"] for e in store.history(fp)]
['total', 'spend']
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.privacy.budget import Budget, BudgetExceededError, Ledger
from core.privacy.store import connect, default_path, transaction

DEFAULT_TOTAL_EPSILON = 5.0  # a dataset's total until the curator records one
DEFAULT_TOTAL = Budget(DEFAULT_TOTAL_EPSILON)
RESET_WARNING = ("Starting a fresh budget for the same data voids the differential-privacy guarantee: "
                 "every release already made still leaks, and the new budget adds to it.")
HISTORY_COLUMNS = ("id", "time", "kind", "epoch", "label", "mechanism", "epsilon", "delta", "rho",
                   "workload", "export_id", "workspace", "note", "fingerprint")


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


@dataclass(frozen=True)
class LedgerStore:
    """The ledgers in the store at ``path`` (default: ``$DPLENS_HOME/dplens.sqlite3``); holds only the path."""

    path: Path = field(default_factory=default_path)

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path).expanduser())

    def _read(self, conn, fingerprint: str, default_total: Budget) -> tuple[Ledger, int | None]:
        row = conn.execute("SELECT epsilon, delta, rho, epoch FROM budgets WHERE fingerprint = ?",
                           (fingerprint,)).fetchone()
        if row is None:
            return Ledger(default_total), None
        spends = conn.execute("SELECT label, epsilon, delta, rho FROM events WHERE fingerprint = ? AND epoch = ? "
                              "AND kind = 'spend' ORDER BY id", (fingerprint, row[3])).fetchall()
        return (Ledger(Budget(row[0], row[1], row[2]), tuple((label, Budget(e, d, r)) for label, e, d, r in spends)),
                row[3])

    def ledger(self, fingerprint: str, *, default_total: Budget = DEFAULT_TOTAL) -> Ledger:
        """The dataset's ledger now (``default_total`` and no spends when nothing is recorded yet)."""
        with connect(self.path) as conn:
            return self._read(conn, _check_fingerprint(fingerprint), default_total)[0]

    def recorded(self, fingerprint: str) -> bool:
        """Whether a total has been recorded for this dataset."""
        with connect(self.path) as conn:
            return conn.execute("SELECT 1 FROM budgets WHERE fingerprint = ?",
                                (_check_fingerprint(fingerprint),)).fetchone() is not None

    def _record_total(self, conn, fingerprint: str, total: Budget, epoch: int | None, *, kind: str,
                      name: str, workspace: str | None, note: str | None) -> int:
        if epoch is None:
            epoch = 0
            conn.execute("INSERT INTO budgets (fingerprint, name, epsilon, delta, rho, epoch, created) "
                         "VALUES (?, ?, ?, ?, ?, 0, ?)",
                         (fingerprint, name, total.epsilon, total.delta, total.rho, _now()))
        else:
            epoch += kind == "reset"
            conn.execute("UPDATE budgets SET epsilon = ?, delta = ?, rho = ?, epoch = ?, name = CASE WHEN ? = '' "
                         "THEN name ELSE ? END WHERE fingerprint = ?",
                         (total.epsilon, total.delta, total.rho, epoch, name, name, fingerprint))
        conn.execute("INSERT INTO events (fingerprint, epoch, kind, label, epsilon, delta, rho, workspace, note, time) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (fingerprint, epoch, kind, f"{kind} {total_label(total)}", total.epsilon, total.delta,
                      total.rho, workspace, note, _now()))
        return epoch

    def set_total(self, fingerprint: str, total: Budget, *, name: str = "", workspace: str | None = None) -> Ledger:
        """Record the dataset's total budget; refused once the current epoch has a spend.

        Raises:
            ValueError: when spends exist (the total is fixed after the first release; ``reset`` instead).
        """
        _check_fingerprint(fingerprint)
        if not total.epsilon > 0:
            raise ValueError(f"total budget epsilon must be > 0, got {total.epsilon!r}")
        with connect(self.path) as conn, transaction(conn):
            ledger, epoch = self._read(conn, fingerprint, total)
            if ledger.spends:
                fixed = (f"epsilon={ledger.total.epsilon:g}" if ledger.total.rho is None
                         else f"rho={ledger.total.rho:g}")
                raise ValueError(f"the total budget is fixed at {fixed} after the first "
                                 f"release ({len(ledger.spends)} spend(s)); starting a fresh budget is a reset, "
                                 "which voids the guarantee")
            if epoch is not None and ledger.total == total:
                return ledger
            self._record_total(conn, fingerprint, total, epoch, kind="total", name=name, workspace=workspace,
                               note=None)
        return Ledger(total)

    def spend(self, fingerprint: str, label: str, cost: Budget, *, mechanism: str, workload: str | None = None,
              export_id: str | None = None, rho: float | None = None, workspace: str | None = None,
              name: str = "", note: str | None = None, default_total: Budget = DEFAULT_TOTAL,
              values_hash: str | None = None) -> Ledger:
        """Charge ``cost`` atomically (check and insert in one ``BEGIN IMMEDIATE`` transaction).

        With ``export_id`` and ``values_hash`` (``core.release.provenance.values_hash`` of the released values), the
        export is recorded in the same transaction: the file comes back as already private only if it is known.

        The first spend on an unrecorded dataset records ``default_total`` first. ``rho`` (zCDP; or
        ``cost.rho``) is stored with the spend. The check is ``Ledger.spend``: basic composition of
        (ε, δ) under an (ε, δ) total, Σρ under a ρ total (where a δ > 0 spend without ρ is refused).

        Raises:
            BudgetExceededError: naming the remaining budget; nothing is recorded.
        """
        _check_fingerprint(fingerprint)
        if rho is not None and not rho >= 0:
            raise ValueError(f"rho must be >= 0 or None, got {rho!r}")
        if rho is not None and cost.rho is None:
            cost = replace(cost, rho=float(rho))
        with connect(self.path) as conn, transaction(conn):
            ledger, epoch = self._read(conn, fingerprint, default_total)
            after = ledger.spend(label, cost)  # raises BudgetExceededError: the transaction rolls back
            if epoch is None:
                epoch = self._record_total(conn, fingerprint, ledger.total, None, kind="total", name=name,
                                           workspace=workspace, note="default total, recorded at the first spend")
            conn.execute("INSERT INTO events (fingerprint, epoch, kind, label, mechanism, epsilon, delta, rho, "
                         "workload, export_id, workspace, note, time) "
                         "VALUES (?, ?, 'spend', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (fingerprint, epoch, label, mechanism, cost.epsilon, cost.delta, cost.rho, workload, export_id,
                          workspace, note, _now()))
            if values_hash is not None:
                if export_id is None:
                    raise ValueError("a recorded export needs its export_id")
                conn.execute("INSERT INTO exports (export_id, fingerprint, values_hash, kind, note, time) "
                             "VALUES (?, ?, ?, 'released', ?, ?)", (export_id, fingerprint, values_hash, label, _now()))
        return after

    def known_export(self, values_hash: str) -> dict[str, object] | None:
        """The recorded export whose released values hash to ``values_hash`` (released here or stated), else None."""
        with connect(self.path) as conn:
            row = conn.execute("SELECT export_id, fingerprint, kind, note, time FROM exports WHERE values_hash = ? "
                               "ORDER BY time LIMIT 1", (str(values_hash),)).fetchone()
        return None if row is None else dict(zip(("export_id", "fingerprint", "kind", "note", "time"), row, strict=True))

    def state_external(self, values_hash: str, *, name: str, statement: str) -> str:
        """Record the curator's statement that a file this store never released is another installation's DP release.

        Returns the new export id; the statement (and file name) is kept with it.
        """
        if not (isinstance(statement, str) and statement.strip()):
            raise ValueError("loading another installation's export as private needs a statement of where it is from")
        export_id = new_export_id()
        with connect(self.path) as conn, transaction(conn):
            conn.execute("INSERT INTO exports (export_id, fingerprint, values_hash, kind, note, time) "
                         "VALUES (?, ?, ?, 'stated', ?, ?)",
                         (export_id, "0" * 64, str(values_hash), f"{name}: {statement.strip()}", _now()))
        return export_id

    def reset(self, fingerprint: str, total: Budget, *, reason: str, workspace: str | None = None) -> Ledger:
        """Start a fresh budget for the same data (recorded with ``reason``; see RESET_WARNING).

        Raises:
            ValueError: without a reason, or for a total that is not > 0.
        """
        _check_fingerprint(fingerprint)
        if not (isinstance(reason, str) and reason.strip()):
            raise ValueError("a budget reset needs a reason: it voids the guarantee and is recorded")
        if not total.epsilon > 0:
            raise ValueError(f"total budget epsilon must be > 0, got {total.epsilon!r}")
        with connect(self.path) as conn, transaction(conn):
            _, epoch = self._read(conn, fingerprint, total)
            self._record_total(conn, fingerprint, total, epoch, kind="reset" if epoch is not None else "total",
                               name="", workspace=workspace, note=f"{reason.strip()} — {RESET_WARNING}")
        return Ledger(total)

    def history(self, fingerprint: str | None = None) -> list[dict[str, object]]:
        """Every recorded action (all epochs), oldest first; one dataset's or all of them."""
        query = f"SELECT {', '.join(HISTORY_COLUMNS)} FROM events"
        args: tuple = ()
        if fingerprint is not None:
            query, args = query + " WHERE fingerprint = ?", (_check_fingerprint(fingerprint),)
        with connect(self.path) as conn:
            return [dict(zip(HISTORY_COLUMNS, row, strict=True)) for row in conn.execute(query + " ORDER BY id", args)]

    def datasets(self) -> list[dict[str, object]]:
        """One summary per recorded dataset: fingerprint, name, total, spent, remaining, spends, epoch."""
        with connect(self.path) as conn:
            rows = conn.execute("SELECT fingerprint, name, epoch FROM budgets ORDER BY created").fetchall()
            out = []
            for fingerprint, name, epoch in rows:
                ledger = self._read(conn, fingerprint, DEFAULT_TOTAL)[0]
                out.append({"fingerprint": fingerprint, "name": name, "unit": ledger.unit,
                            "total": ledger.total.epsilon, "spent": ledger.spent.epsilon,
                            "remaining": ledger.remaining.epsilon, "total_rho": ledger.total.rho,
                            "spent_rho": ledger.spent.rho if ledger.unit == "rho" else None,
                            "remaining_rho": ledger.remaining.rho, "delta": ledger.total.delta,
                            "spends": len(ledger.spends), "epoch": epoch})
            return out


__all__ = ["DEFAULT_TOTAL_EPSILON", "RESET_WARNING", "BudgetExceededError", "LedgerStore", "new_export_id",
           "total_label"]
