"""Dataset fingerprint: the key of a dataset's privacy ledger (the budget belongs to the data, not the session).

A fingerprint is keyed: ``dataset_fingerprint`` is the HMAC-SHA-256, under the installation's secret key
(``installation_key``: 32 random bytes in ``$DPLENS_HOME/installation.key``, mode 0600, made on first use), of the
*plain digest*: the SHA-256 of a canonical encoding of the counts and the domain sizes (the tag
``dplens-fingerprint-v1``, the number of axes, each axis size as 8-byte little-endian, then every count as a
little-endian IEEE-754 double in C (row-major) order, with ``-0.0`` written as ``0.0``). A plain digest shown on a
page or kept in a file would let anyone holding a guess of the counts (a neighbouring dataset, one person more or
less) confirm it; without the key the fingerprint confirms nothing, and two installations give the same file two
unrelated ids. The key is applied to the plain digest, not to the counts, so that a store written before keys
existed is re-keyed without its counts (``keyed``, ``dplens.core.privacy.store``).

Labels, axis names and the dataset's name are left out: the same counts uploaded under another file name, in
another tab or after a restart share one ledger. Any change to a count or to the shape gives another fingerprint
(and so a fresh ledger; see docs/protection.md and docs/security.md). Losing the key file therefore loses every
ledger: the store refuses to open under another key (``key_id``).

>>> key = b"doctest key"
>>> dataset_fingerprint([1, 2, 3], key=key) == dataset_fingerprint(np.array([1.0, 2.0, 3.0]), key=key)
True
>>> dataset_fingerprint([1, 2, 3], key=key) == dataset_fingerprint([[1, 2, 3]], key=key)
False
>>> dataset_fingerprint([1, 2, 3], key=key) == dataset_fingerprint([1, 2, 3], key=b"another installation")
False
>>> zero = dataset_fingerprint([0.0], key=key)
>>> len(zero), zero == dataset_fingerprint([-0.0], key=key)
(64, True)
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from pathlib import Path

import numpy as np

from dplens.core.data.home import default_home, secret_file

FINGERPRINT_TAG = b"dplens-fingerprint-v1"
RECORDS_TAG = b"dplens-records-v1"
KEYED_TAG = b"dplens-keyed-v2"  # what the key is applied to: this tag, then a plain digest in hex
SESSION_TAG = b"dplens-session-id-v1"  # session keys of uploads (``session_digest``)
KEY_FILE = "installation.key"
KEY_BYTES = 32

_KEYS: dict[str, bytes] = {}
_KEYS_LOCK = threading.Lock()


def installation_key(home: Path | None = None) -> bytes:
    """The installation's secret key, ``home``/``installation.key`` (default ``$DPLENS_HOME``), made on first use.

    Made with mode 0600 in a private home (``private_home``), atomically: when several processes start at once,
    the first key linked into place is everyone's. Read once per process and home.

    Raises:
        ValueError: when the file is not a key (its size is not 32 bytes), naming it and the way out.
    """
    folder = home if home is not None else default_home()
    path = folder / KEY_FILE
    with _KEYS_LOCK:
        if str(path) not in _KEYS:
            _KEYS[str(path)] = _read_or_make_key(path)
        return _KEYS[str(path)]


def _read_or_make_key(path: Path) -> bytes:
    key = secret_file(path, lambda: secrets.token_bytes(KEY_BYTES), limit=KEY_BYTES + 1)
    if len(key) != KEY_BYTES:
        raise ValueError(f"installation key {str(path)!r} holds {len(key)} bytes, not {KEY_BYTES}: restore it from "
                         "a backup (every ledger fingerprint is keyed by it), or point DPLENS_HOME elsewhere")
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)
    return key


def keyed(plain: str, *, key: bytes | None = None) -> str:
    """The keyed fingerprint of a plain digest (hex): HMAC-SHA-256 under ``key`` (default: the installation's).

    >>> keyed("ab" * 32, key=b"k") == keyed("ab" * 32, key=b"k") != keyed("ab" * 32, key=b"other")
    True
    """
    secret = key if key is not None else installation_key()
    return hmac.new(secret, KEYED_TAG + plain.encode(), hashlib.sha256).hexdigest()


def key_id(*, key: bytes | None = None) -> str:
    """A public name of the key (an HMAC of a fixed text under it): what a store records to refuse another key."""
    secret = key if key is not None else installation_key()
    return hmac.new(secret, b"dplens-key-id", hashlib.sha256).hexdigest()[:16]


def plain_fingerprint(counts) -> str:
    """Hex SHA-256 of the canonical counts and domain sizes (module docstring): what stores before version 5 kept.

    Never shown nor stored: ``dataset_fingerprint`` keys it.
    """
    array = np.asarray(getattr(counts, "counts", counts), dtype="<f8")
    digest = hashlib.sha256(FINGERPRINT_TAG)
    digest.update(np.array([array.ndim, *array.shape], dtype="<i8").tobytes())
    digest.update(np.ascontiguousarray(array + 0.0).tobytes())  # + 0.0 turns -0.0 into 0.0
    return digest.hexdigest()


def dataset_fingerprint(counts, *, key: bytes | None = None) -> str:
    """The keyed fingerprint of the counts (module docstring); accepts a Histogram too."""
    return keyed(plain_fingerprint(counts), key=key)


def records_fingerprint(data: bytes, *, key: bytes | None = None) -> str:
    """The keyed fingerprint of a raw-records file (tag ``dplens-records-v1`` + its bytes): the ledger key of every
    histogram binned from it, whatever the column or the bins (the same people, however they are counted).

    >>> key = b"doctest key"
    >>> records_fingerprint(b"age\\n31\\n", key=key) == records_fingerprint(b"age\\n31\\n", key=key)
    True
    >>> records_fingerprint(b"age\\n31\\n", key=key) != dataset_fingerprint([1.0], key=key)
    True
    """
    return keyed(hashlib.sha256(RECORDS_TAG + bytes(data)).hexdigest(), key=key)


def session_digest(data: bytes, *, key: bytes | None = None) -> str:
    """12 hex digits naming uploaded bytes within a session (``upload:…`` keys, kept in session configs), keyed so
    that a config carries no plain hash of the file.

    >>> len(session_digest(b"a,b\\n1,2\\n", key=b"k")), session_digest(b"x", key=b"k") == session_digest(b"x", key=b"j")
    (12, False)
    """
    secret = key if key is not None else installation_key()
    return hmac.new(secret, SESSION_TAG + bytes(data), hashlib.sha256).hexdigest()[:12]
