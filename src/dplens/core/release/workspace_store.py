"""Workspaces: a session's working set, kept in the store (``dplens.core.privacy.store``) under an id carried in the
URL.

A workspace holds what a reload must bring back: the uploaded datasets (by reference to ``uploads``,
stored once per owner, counts, name and labels), the selected dataset and workload, the selected
mechanisms and settings, and the release history with the released values. It never holds the
budget: that is the owner's ledger for the dataset (``dplens.core.privacy.ledger_store``), shared by the
owner's workspaces.

Workspaces belong to their owner (the curator, ``ui.identity``): ids are minted here (``create``), and
``load`` returns nothing for an id the store does not know or that another owner holds, so a link with
someone else's id never opens (or adopts) their workspace; ``save`` never writes over another owner's.

>>> import tempfile
>>> store = WorkspaceStore(Path(tempfile.mkdtemp()) / "dplens.sqlite3", owner="a@example.org")
>>> wid = store.create()
>>> store.save(wid, {"dataset_key": "sample:smooth"})
>>> store.load(wid)
{'dataset_key': 'sample:smooth'}
>>> store.load(new_workspace_id()) is None
True
>>> WorkspaceStore(store.path, owner="b@example.org").load(wid) is None
True
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import secrets
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dplens.core.data import limits
from dplens.core.data.domain import Histogram
from dplens.core.data.fingerprint import dataset_fingerprint
from dplens.core.mechanisms import Release
from dplens.core.privacy.definitions import (
    ZCDP,
    Privacy,
    privacy_from_record,
    privacy_record,
    target,
    zcdp_rho,
)
from dplens.core.privacy.store import LOCAL_OWNER, connect, default_path, transaction
from dplens.core.release.export import jsonable

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

    >>> from dplens.core.privacy.definitions import PureDP
    >>> r = Release("identity", PureDP(1.0), 1.0, np.array([1.5]), np.array([[1.5]]), {"noise_scale": np.float64(1)})
    >>> back = release_from_dict(json.loads(json.dumps(release_to_dict(r))))
    >>> back.estimate.shape, back.budget
    ((1, 1), PureDP(epsilon=1.0))
    """
    estimate = None if release.estimate is None else np.asarray(release.estimate, dtype=float)
    return {"mechanism": release.mechanism, "budget": privacy_record(release.budget),
            "privacy_loss": float(release.privacy_loss),
            "answers": np.asarray(release.answers, dtype=float).tolist(),
            "estimate": None if estimate is None else estimate.ravel().tolist(),
            "estimate_shape": None if estimate is None else list(estimate.shape),
            "params": jsonable(dict(release.params))}


def release_from_dict(doc: dict) -> Release:
    """The release ``release_to_dict`` recorded (or, saved before releases held their budget, the ε it ran at).

    >>> old = {"mechanism": "gaussian-hb", "epsilon": 1.0, "privacy_loss": 1.0, "answers": [0.0], "estimate": None,
    ...        "params": {"definition": "zcdp", "delta": 1e-6}}
    >>> back = release_from_dict(old)
    >>> back.budget == ZCDP(zcdp_rho(1.0, 1e-6)), back.loss_unit
    (True, 'rho')
    """
    estimate = doc["estimate"]
    if estimate is not None:
        estimate = np.array(estimate, dtype=float).reshape(doc["estimate_shape"])
    budget, loss = _recorded_budget(doc)
    return Release(doc["mechanism"], budget, loss, np.array(doc["answers"], dtype=float), estimate, doc["params"])


def _recorded_budget(doc: dict) -> tuple[Privacy, float]:
    """(budget, loss in its unit): as recorded, or from an older record's ε ("ε at δ") and its definition."""
    if "budget" in doc:
        return privacy_from_record(doc["budget"]), float(doc["privacy_loss"])
    epsilon, loss, params = float(doc["epsilon"]), float(doc["privacy_loss"]), doc.get("params") or {}
    definition = params.get("definition", "pure")
    if definition == "zcdp":  # older records kept the loss as ε at δ too
        delta = float(params["delta"])
        return ZCDP(zcdp_rho(epsilon, delta)), zcdp_rho(loss, delta) if loss > 0 else 0.0
    return target(definition, epsilon, float(params.get("delta", 0.0))), loss


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class WorkspaceStore:
    """``owner``'s workspaces and uploads in the store at ``path`` (default ``$DPLENS_HOME/dplens.sqlite3``).

    ``owner`` defaults to ``"local"`` (the localhost curator); no method reads or writes another owner's rows.
    """

    path: Path = field(default_factory=default_path)
    owner: str = LOCAL_OWNER

    def __post_init__(self) -> None:
        if not (isinstance(self.owner, str) and self.owner.strip() and len(self.owner) <= 320):
            raise ValueError(f"owner must be a curator id (1-320 characters), got {str(self.owner)[:80]!r}")

    def _check_quota(self, conn: sqlite3.Connection, adding: int) -> None:
        """Refuse to store ``adding`` more bytes when the owner's uploads and workspaces would pass the quota."""
        used = conn.execute(
            "SELECT (SELECT COALESCE(SUM(LENGTH(counts) + LENGTH(labels)), 0) FROM uploads WHERE owner = ?) + "
            "(SELECT COALESCE(SUM(LENGTH(state)), 0) FROM workspaces WHERE owner = ?)",
            (self.owner, self.owner)).fetchone()[0]
        quota = limits.MAX_STORE_BYTES
        if used + adding > quota:
            raise ValueError(f"the store holds {used / 2**20:.1f} MB for this curator and this would add "
                             f"{adding / 2**20:.1f} MB; the quota is {quota / 2**20:.3g} MB (DPLENS_MAX_STORE_MB): "
                             "start a new workspace without old uploads, or ask the operator to raise the quota")

    def create(self) -> str:
        """A new, empty workspace of the owner, under an id minted here; returns the id."""
        workspace_id = new_workspace_id()
        with connect(self.path) as conn, transaction(conn):
            conn.execute("INSERT INTO workspaces (id, owner, state, updated) VALUES (?, ?, '{}', ?)",
                         (workspace_id, self.owner, _now()))
        return workspace_id

    def load(self, workspace_id: str) -> dict | None:
        """The owner's saved working set, or None (unknown id, another owner's, or text that is not an id)."""
        if not is_workspace_id(workspace_id):
            return None
        with connect(self.path) as conn:
            row = conn.execute("SELECT state FROM workspaces WHERE id = ? AND owner = ?",
                               (workspace_id, self.owner)).fetchone()
        return None if row is None else json.loads(row[0])

    def save(self, workspace_id: str, state: dict) -> None:
        """Replace the working set saved under ``workspace_id`` (a new id becomes the owner's).

        Raises:
            ValueError: not an id, or the id is another owner's workspace (nothing is written).
        """
        if not is_workspace_id(workspace_id):
            raise ValueError(f"workspace id must be 16-64 URL-safe characters, got {str(workspace_id)[:80]!r}")
        text = json.dumps(state, allow_nan=False)
        with connect(self.path) as conn, transaction(conn):
            previous = conn.execute("SELECT LENGTH(state) FROM workspaces WHERE id = ? AND owner = ?",
                                    (workspace_id, self.owner)).fetchone()
            self._check_quota(conn, len(text) - (previous[0] if previous else 0))
            written = conn.execute("INSERT INTO workspaces (id, owner, state, updated) VALUES (?, ?, ?, ?) "
                                   "ON CONFLICT (id) DO UPDATE SET state = excluded.state, updated = excluded.updated "
                                   "WHERE workspaces.owner = excluded.owner",
                                   (workspace_id, self.owner, text, _now())).rowcount
            if not written:
                raise ValueError("this workspace belongs to another curator; nothing was saved")

    def put_dataset(self, hist: Histogram) -> str:
        """Keep an uploaded histogram for the owner (once per counts, name, labels); returns its reference.

        The reference is ``<fingerprint>:<variant>``, the variant naming the file name, labels and axis names:
        the same counts uploaded under another name (or by another curator) are kept apart.
        """
        fingerprint = dataset_fingerprint(hist)
        counts = np.ascontiguousarray(hist.counts, dtype="<f8")
        labels = json.dumps([list(axis) for axis in hist.labels])
        axis_names = json.dumps(list(hist.domain.names))
        variant = hashlib.sha256(json.dumps([hist.name, labels, axis_names]).encode()).hexdigest()[:16]
        with connect(self.path) as conn, transaction(conn):
            known = conn.execute("SELECT 1 FROM uploads WHERE owner = ? AND fingerprint = ? AND variant = ?",
                                 (self.owner, fingerprint, variant)).fetchone()
            if known is None:
                self._check_quota(conn, counts.nbytes + len(labels))
            conn.execute("INSERT OR IGNORE INTO uploads (owner, fingerprint, variant, name, shape, counts, labels, "
                         "axis_names) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (self.owner, fingerprint, variant, hist.name, json.dumps(list(counts.shape)),
                          counts.tobytes(), labels, axis_names))
        return f"{fingerprint}:{variant}"

    def get_dataset(self, reference: str) -> Histogram | None:
        """The owner's histogram stored under ``reference`` (``put_dataset``'s; a bare fingerprint from a
        version-2 workspace finds the upload migrated with it), or None."""
        fingerprint, _, variant = str(reference).partition(":")
        with connect(self.path) as conn:
            row = conn.execute("SELECT name, shape, counts, labels, axis_names FROM uploads WHERE owner = ? AND "
                               "fingerprint = ? AND variant = ?", (self.owner, fingerprint, variant)).fetchone()
        if row is None:
            return None
        name, shape, counts, labels, axis_names = row
        array = np.frombuffer(counts, dtype="<f8").reshape(json.loads(shape))
        return Histogram.from_counts(array, labels=json.loads(labels), name=name, axis_names=json.loads(axis_names))
