"""The embedded database behind the ledger and the workspaces: one SQLite file under ``DPLENS_HOME``.

Where it lives: ``$DPLENS_HOME/dplens.sqlite3``, with ``DPLENS_HOME`` defaulting to
``~/.local/share/dplens``. The directory is created with mode 0700 and the file made 0600: it holds
the uploaded datasets (true counts) as well as the ledger.

Tables (schema version 1, ``PRAGMA user_version``):

* ``budgets``: one row per dataset ledger, keyed by the dataset fingerprint (``core.data.fingerprint``):
  the current total (ε, δ, and ρ: NULL for an (ε, δ) total; set for a ρ-zCDP total, whose ε is then its
  CKS ε at δ) and the epoch (a reset starts a new epoch; only the current epoch's spends count).
* ``events``: append-only history of every ledger action: ``total`` (the total recorded), ``spend``
  (mechanism, ε, δ, ρ, workload, export id, workspace, time) and ``reset`` (with the reason).
* ``workspaces``: a session's working set as JSON, keyed by the workspace id in the URL.
* ``datasets``: uploaded histograms by fingerprint, so a workspace can restore its uploads.

Writers use ``BEGIN IMMEDIATE`` (``transaction``): the write lock is taken before the first read, so
a check and the insert that depends on it are one atomic step across threads and processes.

>>> import tempfile
>>> path = Path(tempfile.mkdtemp()) / "dplens.sqlite3"
>>> with connect(path) as conn:
...     conn.execute("PRAGMA user_version").fetchone()[0]
1
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

DEFAULT_HOME = "~/.local/share/dplens"
DATABASE_NAME = "dplens.sqlite3"
SCHEMA_VERSION = 2  # 2: the exports table (provenance of released values)
BUSY_TIMEOUT_SECONDS = 60.0  # how long a writer waits for another's transaction (20 concurrent spenders)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS budgets (
    fingerprint TEXT PRIMARY KEY,
    name TEXT NOT NULL DEFAULT '',
    epsilon REAL NOT NULL CHECK (epsilon >= 0),
    delta REAL NOT NULL DEFAULT 0 CHECK (delta >= 0 AND delta < 1),
    rho REAL CHECK (rho IS NULL OR rho >= 0),
    epoch INTEGER NOT NULL DEFAULT 0,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    fingerprint TEXT NOT NULL REFERENCES budgets (fingerprint),
    epoch INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('total', 'spend', 'reset')),
    label TEXT NOT NULL DEFAULT '',
    mechanism TEXT,
    epsilon REAL NOT NULL CHECK (epsilon >= 0),
    delta REAL NOT NULL DEFAULT 0 CHECK (delta >= 0),
    rho REAL CHECK (rho IS NULL OR rho >= 0),
    workload TEXT,
    export_id TEXT,
    workspace TEXT,
    note TEXT,
    time TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_dataset ON events (fingerprint, epoch, kind);
CREATE TABLE IF NOT EXISTS workspaces (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    updated TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS exports (
    export_id TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    values_hash TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('released', 'stated')),
    note TEXT,
    time TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS exports_by_values ON exports (values_hash);
CREATE TABLE IF NOT EXISTS datasets (
    fingerprint TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    shape TEXT NOT NULL,
    counts BLOB NOT NULL,
    labels TEXT NOT NULL,
    axis_names TEXT NOT NULL
);
"""


def default_path() -> Path:
    """``$DPLENS_HOME/dplens.sqlite3`` (``DPLENS_HOME`` read at each call; default ``~/.local/share/dplens``)."""
    return Path(os.environ.get("DPLENS_HOME") or DEFAULT_HOME).expanduser() / DATABASE_NAME


@contextlib.contextmanager
def connect(path: Path | str | None = None) -> Iterator[sqlite3.Connection]:
    """An autocommit connection to the store at ``path`` (default ``default_path()``), schema ensured; closed after.

    Raises:
        ValueError: when the store cannot be opened (the message names the path, never file content).
    """
    path = Path(path) if path is not None else default_path()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
    except (OSError, sqlite3.Error) as err:
        raise ValueError(f"cannot open the dplens store at {str(path)!r}: {type(err).__name__}") from None
    try:
        try:
            _ensure_schema(conn, path)
        except sqlite3.DatabaseError as err:
            raise ValueError(f"{str(path)!r} is not a dplens store ({type(err).__name__}); "
                             "point DPLENS_HOME or --ledger elsewhere") from None
        yield conn
    finally:
        conn.close()


def _ensure_schema(conn: sqlite3.Connection, path: Path) -> None:
    if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
        return
    conn.execute("PRAGMA journal_mode=WAL")  # readers never block the writer; persistent per file
    with transaction(conn):
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:  # another process won
            for statement in filter(str.strip, _SCHEMA.split(";")):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    with contextlib.suppress(OSError):
        path.chmod(0o600)


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on any exception): one atomic check-and-write."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
