"""Workspaces: a session's working set, kept in the store (``core.privacy.store``) under an id carried in the URL.

A workspace holds what a reload must bring back: the uploaded datasets (by fingerprint; their
counts are stored once in ``datasets``), the selected dataset and workload, the selected
mechanisms and settings, and the release history with the released values. It never holds the
budget: that is the dataset's ledger (``core.privacy.ledger_store``), shared by every workspace.

>>> import tempfile
>>> store = WorkspaceStore(Path(tempfile.mkdtemp()) / "dplens.sqlite3")
>>> wid = new_workspace_id()
>>> store.save(wid, {"dataset_key": "sample:smooth"})
>>> store.load(wid)
{'dataset_key': 'sample:smooth'}
>>> store.load(new_workspace_id()) is None
True
"""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.data.domain import Histogram
from core.data.fingerprint import dataset_fingerprint
from core.mechanisms import Release
from core.privacy.store import connect, default_path, transaction
from core.release.export import _jsonable

_WORKSPACE_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")


def new_workspace_id() -> str:
    """A random, unguessable workspace id (it is all a URL needs to reopen the workspace).

    >>> is_workspace_id(new_workspace_id())
    True
    """
    return secrets.token_urlsafe(16)


def is_workspace_id(text: object) -> bool:
    """Whether ``text`` has the shape of a workspace id (URL text is checked before any lookup).

    >>> is_workspace_id("abc"), is_workspace_id("x" * 22), is_workspace_id("../" * 8)
    (False, True, False)
    """
    return isinstance(text, str) and _WORKSPACE_ID.fullmatch(text) is not None


def release_to_dict(release: Release) -> dict:
    """A JSON-able record of a release's published values and params (never its display-only details).

    >>> r = Release("identity", 1.0, 1.0, np.array([1.5]), np.array([[1.5]]), {"noise_scale": np.float64(1)})
    >>> release_from_dict(json.loads(json.dumps(release_to_dict(r)))).estimate.shape
    (1, 1)
    """
    estimate = None if release.estimate is None else np.asarray(release.estimate, dtype=float)
    return {"mechanism": release.mechanism, "epsilon": float(release.epsilon),
            "privacy_loss": float(release.privacy_loss),
            "answers": np.asarray(release.answers, dtype=float).tolist(),
            "estimate": None if estimate is None else estimate.ravel().tolist(),
            "estimate_shape": None if estimate is None else list(estimate.shape),
            "params": _jsonable(dict(release.params))}


def release_from_dict(doc: dict) -> Release:
    """The release ``release_to_dict`` recorded."""
    estimate = doc["estimate"]
    if estimate is not None:
        estimate = np.array(estimate, dtype=float).reshape(doc["estimate_shape"])
    return Release(doc["mechanism"], doc["epsilon"], doc["privacy_loss"], np.array(doc["answers"], dtype=float),
                   estimate, doc["params"])


@dataclass(frozen=True)
class WorkspaceStore:
    """Workspaces and uploaded datasets in the store at ``path`` (default ``$DPLENS_HOME/dplens.sqlite3``)."""

    path: Path = field(default_factory=default_path)

    def load(self, workspace_id: str) -> dict | None:
        """The saved working set, or None (unknown id, or text that is not an id)."""
        if not is_workspace_id(workspace_id):
            return None
        with connect(self.path) as conn:
            row = conn.execute("SELECT state FROM workspaces WHERE id = ?", (workspace_id,)).fetchone()
        return None if row is None else json.loads(row[0])

    def save(self, workspace_id: str, state: dict) -> None:
        """Replace the working set saved under ``workspace_id``."""
        if not is_workspace_id(workspace_id):
            raise ValueError(f"workspace id must be 16-64 URL-safe characters, got {str(workspace_id)[:80]!r}")
        text = json.dumps(state, allow_nan=False)
        with connect(self.path) as conn, transaction(conn):
            conn.execute("INSERT OR REPLACE INTO workspaces (id, state, updated) VALUES (?, ?, ?)",
                         (workspace_id, text, dt.datetime.now(dt.UTC).isoformat(timespec="seconds")))

    def put_dataset(self, hist: Histogram) -> str:
        """Keep an uploaded histogram (once per fingerprint); returns its fingerprint."""
        fingerprint = dataset_fingerprint(hist)
        counts = np.ascontiguousarray(hist.counts, dtype="<f8")
        with connect(self.path) as conn, transaction(conn):
            conn.execute("INSERT OR IGNORE INTO datasets (fingerprint, name, shape, counts, labels, axis_names) "
                         "VALUES (?, ?, ?, ?, ?, ?)",
                         (fingerprint, hist.name, json.dumps(list(counts.shape)), counts.tobytes(),
                          json.dumps([list(axis) for axis in hist.labels]), json.dumps(list(hist.domain.names))))
        return fingerprint

    def get_dataset(self, fingerprint: str) -> Histogram | None:
        """The histogram stored under ``fingerprint``, or None."""
        with connect(self.path) as conn:
            row = conn.execute("SELECT name, shape, counts, labels, axis_names FROM datasets WHERE fingerprint = ?",
                               (fingerprint,)).fetchone()
        if row is None:
            return None
        name, shape, counts, labels, axis_names = row
        array = np.frombuffer(counts, dtype="<f8").reshape(json.loads(shape))
        return Histogram.from_counts(array, labels=json.loads(labels), name=name, axis_names=json.loads(axis_names))
