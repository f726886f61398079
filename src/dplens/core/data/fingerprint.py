"""Dataset fingerprint: the key of a dataset's privacy ledger (the budget belongs to the data, not the session).

``dataset_fingerprint`` is the SHA-256 of a canonical encoding of the counts and the domain sizes:
the tag ``dplens-fingerprint-v1``, the number of axes, each axis size (8-byte little-endian), then
every count as a little-endian IEEE-754 double in C (row-major) order, with ``-0.0`` written as
``0.0``. Labels, axis names and the dataset's name are left out: the same counts uploaded under
another file name, in another tab or after a restart share one ledger. Any change to a count or to
the shape gives another fingerprint (and so a fresh ledger; see the README's "What the ledger
protects").

>>> dataset_fingerprint([1, 2, 3]) == dataset_fingerprint(np.array([1.0, 2.0, 3.0]))
True
>>> dataset_fingerprint([1, 2, 3]) == dataset_fingerprint([[1, 2, 3]])
False
>>> len(dataset_fingerprint([0.0])), dataset_fingerprint([0.0]) == dataset_fingerprint([-0.0])
(64, True)
"""

from __future__ import annotations

import hashlib

import numpy as np

FINGERPRINT_TAG = b"dplens-fingerprint-v1"
RECORDS_TAG = b"dplens-records-v1"


def dataset_fingerprint(counts) -> str:
    """Hex SHA-256 of the canonical counts and domain sizes (module docstring); accepts a Histogram too."""
    array = np.asarray(getattr(counts, "counts", counts), dtype="<f8")
    digest = hashlib.sha256(FINGERPRINT_TAG)
    digest.update(np.array([array.ndim, *array.shape], dtype="<i8").tobytes())
    digest.update(np.ascontiguousarray(array + 0.0).tobytes())  # + 0.0 turns -0.0 into 0.0
    return digest.hexdigest()


def records_fingerprint(data: bytes) -> str:
    """Hex SHA-256 of a raw-records file (tag ``dplens-records-v1`` + its bytes): the ledger key of every
    histogram binned from it, whatever the column or the bins (the same people, however they are counted).

    >>> records_fingerprint(b"age\\n31\\n") == records_fingerprint(b"age\\n31\\n") != dataset_fingerprint([1.0])
    True
    """
    return hashlib.sha256(RECORDS_TAG + bytes(data)).hexdigest()
