"""Provenance of released data: a file is "already private" only when a key the curator trusts vouches for it.

A JSON export is signed by the installation that released it (``dplens.core.data.signing``). A file loaded back is
already private when its signature verifies under this installation's public key or under a key the curator added
as trusted (``LedgerStore.trust_key``), or, for the values-only CSV (unsigned), when its values hash to an export
this installation recorded: when a release is charged, the hash of its released values is recorded with its export
id in the same transaction (``LedgerStore.spend(..., values_hash=...)``). Anything else — a CSV with a fractional
count, a JSON carrying an export's metadata keys, another installation's export whose key is not trusted, a signed
file with one value changed — is raw data, and a release from it is charged like any other. There is no unsigned
"trust me" statement any more: a curator who trusts another installation trusts its key, once, with a reason.

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

from dplens.core.data.signing import key_id, public_key, verify_export

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
    """(released data, its provenance) when ``data`` is an export signed by a key ``store``'s curator trusts
    (``{"kind": "signed", "key_id", "signer"}``: ``signer`` is "this installation" or the trusted key's name) or
    one this installation recorded (``{"kind": "released", ...}``), else (released data or None, None). Only a
    recognised export may be treated as already private.

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
    own = public_key()
    trusted = {own: "this installation"} | {bytes(k["public_key"]): str(k["name"]) for k in store.trusted_keys()}
    signer = verify_export(data, trusted)
    if signer is not None:
        name = next(label for raw, label in trusted.items() if key_id(raw) == signer)
        return released, {"kind": "signed", "key_id": signer, "signer": name}
    return released, store.known_export(values_hash(released.values, released.kind))
