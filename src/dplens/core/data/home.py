"""``DPLENS_HOME``: the folder of one installation (its store, strategy cache and secret key), kept private.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp()) / "home"
>>> oct(private_home(folder).stat().st_mode & 0o777)
'0o700'
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

DEFAULT_HOME = "~/.local/share/dplens"


def default_home() -> Path:
    """``$DPLENS_HOME`` (read at each call; default ``~/.local/share/dplens``)."""
    return Path(os.environ.get("DPLENS_HOME") or DEFAULT_HOME).expanduser()


def private_home(folder: Path) -> Path:
    """``folder`` (``DPLENS_HOME``), created 0700, or tightened to 0700 when it exists with access for others.

    A home made by hand (``mkdir``: 0755 under the usual umask) would let every local user read the true counts.

    Raises:
        ValueError: when it has access for others and cannot be tightened (another user's folder, a read-only
            file system), naming the folder, its mode and the way out.
    """
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    status = folder.stat()
    mode = stat.S_IMODE(status.st_mode)
    if not mode & 0o077:
        return folder
    problem = f"belongs to user id {status.st_uid}" if status.st_uid != os.getuid() else ""
    if not problem:
        try:
            folder.chmod(0o700)
            return folder
        except OSError as err:
            problem = f"cannot be made 0700 ({err.strerror or err})"
    raise ValueError(f"DPLENS_HOME {str(folder)!r} has mode {mode:04o} (others may read the true counts kept there) "
                     f"and {problem}: make it 0700 (chmod 700) or point DPLENS_HOME at a folder of your own")


def secret_file(path: Path, make: Callable[[], bytes], *, limit: int) -> bytes:
    """The first ``limit`` bytes of the secret file ``path`` in a private home, made from ``make()`` on first use.

    Written 0600 to a temporary file and linked into place, so that when several processes start at once the first
    file linked is everyone's; a file others may read is tightened to 0600.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "home" / "demo.key"
    >>> secret_file(path, lambda: b"one", limit=8), secret_file(path, lambda: b"two", limit=8)
    (b'one', b'one')
    >>> oct(path.stat().st_mode & 0o777)
    '0o600'
    """
    if not path.exists():
        private_home(path.parent)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-")  # mode 0600
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(make())
                file.flush()
                os.fsync(file.fileno())
            with contextlib.suppress(FileExistsError):  # another process made one first: theirs is the key
                os.link(temporary, path)
        finally:
            os.unlink(temporary)
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)
    with open(path, "rb") as file:
        return file.read(limit)
