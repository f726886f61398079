"""Gradual releases in progress: one row per walk in the store's ``walks`` table (``dplens.core.privacy.store``).

A walk (``dplens.core.release.kernel.start_walk``) is drawn whole at its start, least private step last; its steps
are released one at a time (``release_walk_step``). The steps not yet released are as secret as the true counts:
they live only here, in the owner-only store file, are read only by their curator (every query filters by owner),
never appear in an export, a log or a page, and are wiped when the walk is abandoned.

>>> import tempfile, pathlib
>>> walks = WalkStore(pathlib.Path(tempfile.mkdtemp()) / "s.sqlite3")
>>> walk = walks.create(np.array([[4.0, 1.0], [3.0, 2.0]]), fingerprint="a" * 64, epoch=0, name="toy",
...                     mechanism="identity", definition="pure", schedule=(0.5, 1.0))
>>> walk.steps, walk.released, walks.get(walk.id).epsilons
(2, 0, (0.5, 1.0))
"""

from __future__ import annotations

import datetime as dt
import json
import math
import secrets
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dplens.core.privacy.store import LOCAL_OWNER, connect, default_path, transaction

WALK_DEFINITIONS = ("pure", "zcdp")  # a Laplace walk's schedule: ε_t, or ρ_t (Laplace at ε_t = √(2ρ_t))


@dataclass(frozen=True)
class Walk:
    """A walk's record (never its values): whose, on which dataset and ledger epoch, its schedule and progress."""

    id: str
    owner: str
    fingerprint: str
    epoch: int
    name: str
    mechanism: str
    definition: str
    schedule: tuple[float, ...]  # ε_1 < … < ε_T (pure) or ρ_1 < … < ρ_T (zcdp), as the curator gave them
    cells: int
    released: int
    status: str
    note: str | None
    output_dir: str | None = None  # where the command line writes its steps (``dplens gradual``)
    plan: dict | None = None  # a strategy mechanism's walk: its settings, workload spec and histogram shape

    @property
    def steps(self) -> int:
        return len(self.schedule)

    @property
    def state(self) -> str:
        """"complete" once every step of an active walk is released, else its status ("active", "abandoned")."""
        return "complete" if self.status == "active" and self.released == self.steps else self.status

    @property
    def epsilons(self) -> tuple[float, ...]:
        """The Laplace walk's ε_t: the schedule itself, or √(2ρ_t) (ε-DP implies ε²/2-zCDP, Bun & Steinke 2016)."""
        return self.schedule if self.definition == "pure" else tuple(math.sqrt(2 * r) for r in self.schedule)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


_COLUMNS = ("id, owner, fingerprint, epoch, name, mechanism, definition, schedule, cells, released, status, note, "
            "output_dir, plan")


def _walk(row: tuple) -> Walk:
    walk_id, owner, fingerprint, epoch, name, mechanism, definition, schedule, cells, released, status, *rest = row
    note, out, plan = rest
    return Walk(walk_id, owner, fingerprint, int(epoch), name, mechanism, definition,
                tuple(float(s) for s in json.loads(schedule)), int(cells), int(released), status, note, out,
                json.loads(plan) if plan else None)


@dataclass(frozen=True)
class WalkStore:
    """The walks of one curator (``owner``) in the store at ``path`` (default ``default_path()``)."""

    path: Path = field(default_factory=default_path)
    owner: str = LOCAL_OWNER

    def create(self, values: np.ndarray, *, fingerprint: str, epoch: int, name: str, mechanism: str,
               definition: str, schedule: tuple[float, ...], output_dir: str | None = None,
               plan: dict | None = None) -> Walk:
        """Record a new walk (``values``: one row per step, most private first); its id is random."""
        values = np.asarray(values, dtype=np.float64)
        if definition not in WALK_DEFINITIONS:
            raise ValueError(f"a walk's definition must be one of {WALK_DEFINITIONS}, got {definition!r}")
        if values.ndim != 2 or values.shape[0] != len(schedule) or values.shape[1] == 0:
            raise ValueError(f"a walk needs one row of values per step: {len(schedule)} steps, got {values.shape}")
        walk_id, now = secrets.token_hex(8), _now()
        with connect(self.path) as conn, transaction(conn):
            conn.execute(f"INSERT INTO walks ({_COLUMNS}, walk, created, updated) VALUES "
                         "(?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 'active', NULL, ?, ?, ?, ?, ?)",
                         (walk_id, self.owner, fingerprint, int(epoch), name, mechanism, definition,
                          json.dumps([float(s) for s in schedule]), values.shape[1], output_dir,
                          None if plan is None else json.dumps(plan), values.tobytes(), now, now))
        return self.get(walk_id)

    def get(self, walk_id: str) -> Walk:
        """This curator's walk ``walk_id``; ValueError naming it when there is none (another curator's included)."""
        with connect(self.path) as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM walks WHERE id = ? AND owner = ?",
                               (str(walk_id), self.owner)).fetchone()
        if row is None:
            raise ValueError(f"no walk {walk_id!r} for this curator (`dplens gradual status` lists yours)")
        return _walk(row)

    def walks(self, fingerprint: str | None = None) -> list[Walk]:
        """This curator's walks (of one dataset, or all), oldest first."""
        query, args = f"SELECT {_COLUMNS} FROM walks WHERE owner = ?", [self.owner]
        if fingerprint is not None:
            query, args = query + " AND fingerprint = ?", [self.owner, fingerprint]
        with connect(self.path) as conn:
            return [_walk(row) for row in conn.execute(query + " ORDER BY created", args).fetchall()]

    def step_values(self, walk: Walk, step: int) -> np.ndarray:
        """The values of ``step`` (1-based) of this curator's walk: only the next step or one already released."""
        if not 1 <= step <= min(walk.released + 1, walk.steps):
            raise ValueError(f"step {step} of walk {walk.id} is not the next one (released {walk.released} of "
                             f"{walk.steps})")
        with connect(self.path) as conn:
            row = conn.execute("SELECT walk FROM walks WHERE id = ? AND owner = ? AND status = 'active'",
                               (walk.id, self.owner)).fetchone()
        if row is None:
            raise ValueError(f"walk {walk.id} is not active")
        return np.frombuffer(row[0], dtype=np.float64).reshape(walk.steps, walk.cells)[step - 1].copy()

    def mark_released(self, conn: sqlite3.Connection, walk: Walk, step: int) -> None:
        """Inside the charging transaction: step ``step`` is released, if it is still the next one (else raise, and
        the charge rolls back: another session released it first)."""
        done = conn.execute("UPDATE walks SET released = ?, updated = ? WHERE id = ? AND owner = ? AND released = ? "
                            "AND status = 'active'", (step, _now(), walk.id, self.owner, step - 1)).rowcount
        if done != 1:
            raise ValueError(f"step {step} of walk {walk.id} was released by another session; nothing was charged")

    def abandon(self, walk_id: str, reason: str) -> Walk:
        """Stop a walk for good, recording why; its unreleased steps are wiped (what was released stays released)."""
        walk = self.get(walk_id)
        if walk.status != "active":
            raise ValueError(f"walk {walk_id} is already {walk.status}")
        if not (isinstance(reason, str) and reason.strip()):
            raise ValueError("abandoning a walk needs a reason, which is recorded")
        with connect(self.path) as conn, transaction(conn):
            conn.execute("UPDATE walks SET status = 'abandoned', note = ?, walk = x'', updated = ? WHERE id = ? "
                         "AND owner = ?", (reason.strip(), _now(), walk.id, self.owner))
        return self.get(walk_id)
