"""The embedded database behind the ledger and the workspaces: one SQLite file under ``DPLENS_HOME``.

Where it lives: ``$DPLENS_HOME/dplens.sqlite3``, with ``DPLENS_HOME`` defaulting to
``~/.local/share/dplens``. The directory is created with mode 0700 (one that exists with access for others, such
as 0755, is tightened to 0700, or refused with a message when that cannot be done) and the file made 0600: it
holds the uploaded datasets (true counts) as well as the ledger.

Tables (schema version 7, ``PRAGMA user_version``). Everything a curator keeps has an ``owner`` (the
curator's id: ``"local"`` for the one curator of a localhost server and the command line, else the signed-in
email; ``ui.identity``), and every read filters by it:

* ``budgets``: one row per ledger, keyed by (owner, dataset fingerprint ``dplens.core.data.fingerprint``): the
  current total (ε, δ, and ρ: NULL for an (ε, δ) total; set for a ρ-zCDP total, whose ε is then its
  CKS ε at δ) and the epoch (a reset starts a new epoch; only the current epoch's spends count).
* ``events``: append-only history of every ledger action: ``total`` (the total recorded), ``spend``
  (mechanism, ε, δ, ρ, workload, export id, workspace, time) and ``reset`` (with the reason). The workspace
  id is kept for the store only: no page or export shows it.
* ``workspaces``: a session's working set as JSON, keyed by a server-minted workspace id, bound to its owner.
* ``uploads``: uploaded histograms per (owner, fingerprint, variant), the variant naming the file name, labels
  and axis names, so a workspace restores its own upload and never another curator's.
* ``exports``: the provenance of released values (export id, values hash). Rows of kind ``stated`` (the unsigned
  "another installation's release" statement of versions 2-6) are kept as history but no longer make a file
  private: signed exports replaced them (``dplens.core.data.signing``).
* ``trusted_keys``: per curator, the public keys of other installations whose signed exports count as already
  private (key id, raw key, a name and the reason, recorded when the curator added it).
* ``walks``: gradual releases in progress (``dplens.core.release.walk_store``), per owner and dataset: the schedule,
  how many steps were released, and the whole walk, whose unreleased steps are as secret as the true counts.

A version-1 or -2 store is upgraded in place on first open: its ledgers, workspaces and uploads become the
``"local"`` curator's (the only one those versions knew); a version-3 store gains the ``walks`` table, and a
version-4 or -5 one the walks' ``plan`` column, and a version-6 one the ``trusted_keys`` table. A store of version 1
to 4 kept plain SHA-256 fingerprints of the counts: in the same transaction every ``fingerprint`` column, and every
fingerprint and upload session key inside the workspaces' state, is re-keyed under the installation's key
(``dplens.core.data.fingerprint.keyed``), and the file is then vacuumed so that no copy of a plain fingerprint stays
in it. The ``installation`` table records which key (``key_id``): a store is not opened under another key, whose
fingerprints would all miss their ledgers.

Writers use ``BEGIN IMMEDIATE`` (``transaction``): the write lock is taken before the first read, so
a check and the insert that depends on it are one atomic step across threads and processes.

>>> import tempfile
>>> path = Path(tempfile.mkdtemp()) / "dplens.sqlite3"
>>> with connect(path) as conn:
...     conn.execute("PRAGMA user_version").fetchone()[0]
7
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from dplens.core.data.fingerprint import key_id, keyed
from dplens.core.data.home import default_home, private_home

DATABASE_NAME = "dplens.sqlite3"
# 2: the exports table (provenance of released values); 3: owners; 4: walks; 5: keyed fingerprints; 6: a walk's plan;
# 7: trusted_keys (signed exports; 'stated' exports no longer count)
SCHEMA_VERSION = 7
FINGERPRINT_COLUMNS = ("budgets", "events", "exports", "uploads", "walks")  # tables with a ``fingerprint`` column
# Session keys of uploads (dplens.ui.datasets) that a workspace keeps: their 12 hex digits were a plain SHA-1 of
# the file before version 5.
_SESSION_KEY = re.compile(r"\b(upload|released|derived|scaled):([0-9a-f]{12})\b")
_HEX_64 = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")
LOCAL_OWNER = "local"  # the one curator of a localhost server and of the command line
BUSY_TIMEOUT_SECONDS = 60.0  # how long a writer waits for another's transaction (20 concurrent spenders)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS budgets (
    owner TEXT NOT NULL DEFAULT 'local',
    fingerprint TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    epsilon REAL NOT NULL CHECK (epsilon >= 0),
    delta REAL NOT NULL DEFAULT 0 CHECK (delta >= 0 AND delta < 1),
    rho REAL CHECK (rho IS NULL OR rho >= 0),
    epoch INTEGER NOT NULL DEFAULT 0,
    created TEXT NOT NULL,
    PRIMARY KEY (owner, fingerprint)
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    owner TEXT NOT NULL DEFAULT 'local',
    fingerprint TEXT NOT NULL,
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
CREATE INDEX IF NOT EXISTS events_by_ledger ON events (owner, fingerprint, epoch, kind);
CREATE TABLE IF NOT EXISTS workspaces (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL DEFAULT 'local',
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
CREATE TABLE IF NOT EXISTS uploads (
    owner TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    variant TEXT NOT NULL,
    name TEXT NOT NULL,
    shape TEXT NOT NULL,
    counts BLOB NOT NULL,
    labels TEXT NOT NULL,
    axis_names TEXT NOT NULL,
    PRIMARY KEY (owner, fingerprint, variant)
);
CREATE TABLE IF NOT EXISTS trusted_keys (
    owner TEXT NOT NULL,
    key_id TEXT NOT NULL,
    public_key BLOB NOT NULL CHECK (length(public_key) = 32),
    name TEXT NOT NULL,
    reason TEXT NOT NULL,
    added TEXT NOT NULL,
    PRIMARY KEY (owner, key_id)
);
CREATE TABLE IF NOT EXISTS installation (
    key_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS walks (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    mechanism TEXT NOT NULL,
    definition TEXT NOT NULL CHECK (definition IN ('pure', 'zcdp')),
    schedule TEXT NOT NULL,
    cells INTEGER NOT NULL CHECK (cells > 0),
    walk BLOB NOT NULL,
    released INTEGER NOT NULL DEFAULT 0 CHECK (released >= 0),
    status TEXT NOT NULL CHECK (status IN ('active', 'abandoned')),
    note TEXT,
    output_dir TEXT,
    plan TEXT,
    created TEXT NOT NULL,
    updated TEXT NOT NULL
);
"""

# Version 1-2 tables rebuilt with an owner (copied as the "local" curator's), then dropped.
_UPGRADE_COPIES = (
    ("budgets", "budgets_v2", "INSERT INTO budgets (owner, fingerprint, name, epsilon, delta, rho, epoch, created) "
                              "SELECT 'local', fingerprint, name, epsilon, delta, rho, epoch, created FROM budgets_v2"),
    ("events", "events_v2",
     "INSERT INTO events (id, owner, fingerprint, epoch, kind, label, mechanism, epsilon, delta, "
                            "rho, workload, export_id, workspace, note, time) SELECT id, 'local', fingerprint, epoch, "
                            "kind, label, mechanism, epsilon, delta, rho, workload, export_id, workspace, note, time "
                            "FROM events_v2"),
    ("workspaces", "workspaces_v2", "INSERT INTO workspaces (id, owner, state, updated) "
                                    "SELECT id, 'local', state, updated FROM workspaces_v2"),
    ("datasets", "datasets_v2", "INSERT OR IGNORE INTO uploads (owner, fingerprint, variant, name, shape, counts, "
                                "labels, axis_names) SELECT 'local', fingerprint, '', name, shape, counts, labels, "
                                "axis_names FROM datasets_v2"),
)


def default_path() -> Path:
    """``$DPLENS_HOME/dplens.sqlite3`` (``DPLENS_HOME`` read at each call; default ``~/.local/share/dplens``)."""
    return default_home() / DATABASE_NAME


@contextlib.contextmanager
def connect(path: Path | str | None = None) -> Iterator[sqlite3.Connection]:
    """An autocommit connection to the store at ``path`` (default ``default_path()``), schema ensured; closed after.

    Raises:
        ValueError: when the store cannot be opened (the message names the path, never file content).
    """
    path = Path(path) if path is not None else default_path()
    try:
        if path.parent == default_home():
            private_home(path.parent)
        else:  # a --ledger file elsewhere: its folder is the user's choice (the file itself is made 0600)
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
    except (OSError, sqlite3.Error) as err:
        raise ValueError(f"cannot open the dplens store at {str(path)!r}: {type(err).__name__}") from None
    try:
        try:
            _ensure_schema(conn, path)
            recorded = conn.execute("SELECT key_id FROM installation").fetchone()
        except sqlite3.DatabaseError as err:
            raise ValueError(f"{str(path)!r} is not a dplens store ({type(err).__name__}); "
                             "point DPLENS_HOME or --ledger elsewhere") from None
        if recorded is None or recorded[0] != key_id():
            # under another key every fingerprint would miss its ledger: each dataset would start a fresh budget
            raise ValueError(f"the dplens store {str(path)!r} was written under another installation key than "
                             f"{str(default_home() / 'installation.key')!r}: its ledgers would all read as new, so it "
                             "is not opened; point DPLENS_HOME at the installation that wrote it (or restore its key)")
        yield conn
    finally:
        conn.close()


def _ensure_schema(conn: sqlite3.Connection, path: Path) -> None:
    if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
        return
    conn.execute("PRAGMA journal_mode=WAL")  # readers never block the writer; persistent per file
    conn.execute("PRAGMA secure_delete = ON")  # the re-keying overwrites the plain fingerprints it replaces
    rekeyed = False
    with transaction(conn):
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:  # else another process won
            _upgrade(conn)
            rekeyed = _rekey(conn) if version < 5 else False
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    if rekeyed:  # no copy of a plain fingerprint may stay in the log or in free pages
        with contextlib.suppress(sqlite3.OperationalError):  # busy readers: secure_delete has zeroed them already
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with contextlib.suppress(OSError):
        path.chmod(0o600)


def _upgrade(conn: sqlite3.Connection) -> None:
    """Create the schema; a version-1/2 store's tables are rebuilt with an owner ("local") and copied over."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    old = [(table, renamed, copy) for table, renamed, copy in _UPGRADE_COPIES if table in tables
           and "owner" not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}]
    for table, renamed, _ in old:
        conn.execute(f"ALTER TABLE {table} RENAME TO {renamed}")
    conn.execute("DROP INDEX IF EXISTS events_by_dataset")
    for statement in filter(str.strip, _SCHEMA.split(";")):
        conn.execute(statement)
    if "plan" not in {row[1] for row in conn.execute("PRAGMA table_info(walks)")}:  # a version-4/5 walks table
        conn.execute("ALTER TABLE walks ADD COLUMN plan TEXT")
    for _, renamed, copy in old:
        conn.execute(copy)
        conn.execute(f"DROP TABLE {renamed}")


def _rekey(conn: sqlite3.Connection) -> bool:
    """Version 5: key every fingerprint (``dplens.core.data.fingerprint.keyed``) and the session keys workspaces
    keep, in the caller's transaction; record the key's id. True when there was anything to re-key."""
    key = key_id()
    conn.execute("DELETE FROM installation")
    conn.execute("INSERT INTO installation (key_id) VALUES (?)", (key,))
    plain = {row[0] for table in FINGERPRINT_COLUMNS
             for row in conn.execute(f"SELECT DISTINCT fingerprint FROM {table}")}
    workspaces = conn.execute("SELECT id, state FROM workspaces").fetchall()
    if not plain and not workspaces:
        return False
    conn.create_function("dplens_keyed", 1, lambda value: keyed(value), deterministic=True)
    for table in FINGERPRINT_COLUMNS:
        conn.execute(f"UPDATE {table} SET fingerprint = dplens_keyed(fingerprint)")

    def rekey_state(state: str) -> str:
        state = _HEX_64.sub(lambda m: keyed(m.group()) if m.group() in plain else m.group(), state)
        return _SESSION_KEY.sub(lambda m: f"{m.group(1)}:{keyed(m.group(2))[:12]}", state)

    conn.executemany("UPDATE workspaces SET state = ? WHERE id = ?",
                     [(rekey_state(state), workspace) for workspace, state in workspaces])
    return True


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
