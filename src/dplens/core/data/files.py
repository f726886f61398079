"""Reading a file named by a user (a ``file:`` workload's query matrix), bounded before any byte is read.

A path may name anything: ``/dev/zero`` reports a size of 0 and never ends, a FIFO blocks until someone writes to
it, and a sparse file claims terabytes. So the size is taken from the open file's own status (no race with a
rename between a check and the read), only a regular file is read, and never more than the limit allows.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "q.csv"
>>> _ = path.write_bytes(b"1,0\\n")
>>> read_bounded(path, what="query-matrix file")
b'1,0\\n'
>>> read_bounded("/dev/zero", what="query-matrix file")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
ValueError: query-matrix file '/dev/zero' is a character device, not a regular file; only regular files of at
most 50 MB (MAX_UPLOAD_BYTES) are read
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dplens.core.data.limits import MAX_UPLOAD_BYTES

_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a pipe"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def check_size(size: int, *, what: str, name: str | None = None, limit: int = MAX_UPLOAD_BYTES,
               limit_name: str = "MAX_UPLOAD_BYTES") -> None:
    """ValueError, one line naming the file, its size and the limit, when ``size`` bytes are more than ``limit``.

    >>> check_size(60 * 2**20, what="query-matrix file", name="q.csv")
    Traceback (most recent call last):
    ValueError: query-matrix file 'q.csv' is 60.0 MB; at most 50 MB (MAX_UPLOAD_BYTES) are read
    """
    if size > limit:
        named = f"{what} {name[:120]!r}" if name is not None else what
        raise ValueError(f"{named} is {size / 2**20:,.1f} MB; at most {_bound(limit, limit_name)} are read")


def _bound(limit: int, limit_name: str) -> str:
    return f"{limit / 2**20:.0f} MB ({limit_name})"


def read_bounded(path: str | Path, *, what: str, limit: int = MAX_UPLOAD_BYTES,
                 limit_name: str = "MAX_UPLOAD_BYTES") -> bytes:
    """The bytes of the regular file at ``path``, its size checked against ``limit`` before reading.

    Args:
        path: the file named by the user.
        what: what the file is, for the message ("query-matrix file").
        limit: the most bytes read; ``limit_name`` names it in the message.

    Raises:
        ValueError: one line naming the file, its size (or kind) and the limit, when it is larger than ``limit``,
            is not a regular file, or cannot be read.
    """
    name = str(path)[:120]
    bound = _bound(limit, limit_name)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below, once its kind is known
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise ValueError(f"cannot read {what} {name!r}: {err.strerror or err}") from None
    with os.fdopen(handle, "rb") as file:
        status = os.fstat(file.fileno())
        if not stat.S_ISREG(status.st_mode):
            kind = next((words for test, words in _KINDS if test(status.st_mode)), "a special file")
            raise ValueError(f"{what} {name!r} is {kind}, not a regular file; only regular files of at most {bound} "
                             "are read")
        check_size(status.st_size, what=what, name=name, limit=limit, limit_name=limit_name)
        data = file.read(limit + 1)  # a file that grew since its status was taken is still read only this far
    if len(data) > limit:
        raise ValueError(f"{what} {name!r} grew past {bound} while it was read; at most {bound} are read")
    return data
