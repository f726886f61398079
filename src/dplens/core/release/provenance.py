"""Provenance of released data: a file is "already private" only when this installation knows it.

When a release is charged, the hash of its released values is recorded with its export id in the same
transaction (``LedgerStore.spend(..., values_hash=...)``). A file loaded back is already private only when its
values hash to a recorded export, or when the curator records a statement that it is another installation's
release (``LedgerStore.state_external``). Anything else — a CSV with a fractional count, a JSON carrying an
export's metadata keys — is raw data, and a release from it is charged like any other.

The hash is over the values as exports write them (10 significant digits, CSV and JSON alike), so the
CSV and the JSON export of one release have the same hash.

>>> values_hash([1.5, -2.0], "counts") == values_hash(np.array([1.5000000000001, -2.0]), "counts")
True
>>> values_hash([1.5, -2.0], "counts") == values_hash([1.5, -2.0], "answers")
False
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from dplens.core.data.released import ReleasedData
    from dplens.core.privacy.ledger_store import LedgerStore

VALUE_FORMAT = ".10g"  # what exports write (dplens.core.release.export)


def exported_number(value: float) -> str:
    """A released value as every export writes it.

    >>> exported_number(1 / 3)
    '0.3333333333'
    """
    return f"{float(value):{VALUE_FORMAT}}"


def values_hash(values: npt.ArrayLike, kind: str) -> str:
    """SHA-256 of the released ``values`` (as exported) and their ``kind`` ("counts" or "answers")."""
    if kind not in ("counts", "answers"):
        raise ValueError(f"kind must be 'counts' or 'answers', got {kind!r}")
    digest = hashlib.sha256(kind.encode())
    digest.update(",".join(exported_number(v) for v in np.asarray(values, dtype=float).ravel()).encode())
    return digest.hexdigest()


def recognise(store: LedgerStore, data: bytes,
              filename: str | None = None) -> tuple[ReleasedData | None, dict[str, object] | None]:
    """(released data, its recorded export) when ``data`` is an export this installation's store knows, else
    (released data or None, None). Only a known export may be treated as already private.

    >>> import tempfile, pathlib
    >>> from dplens.core.privacy.ledger_store import LedgerStore
    >>> store = LedgerStore(pathlib.Path(tempfile.mkdtemp()) / "s.sqlite3")
    >>> recognise(store, b"bin,count\\n0,-2.5\\n1,3\\n")[1] is None  # looks like an export; nobody released it here
    True
    """
    from dplens.core.data.released import load_release

    try:
        released = load_release(data, filename)
    except ValueError:
        return None, None
    return released, store.known_export(values_hash(released.values, released.kind))
