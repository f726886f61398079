"""An on-disk cache of data-independent strategies (mm-opt's optimised strategy, Greedy-H's hierarchy, ...).

Optimising a strategy depends only on the workload and the mechanism's settings, never on the data, so
it can outlive the process that computed it: a later grid, or a resumed one, loads it from
``$DPLENS_HOME/strategies`` instead of optimising again.

Two kinds of file, both pickles written atomically (temporary file + ``os.replace``):

- an *entry* holds one item of one in-memory strategy cache (a ``StrategyCache``, named by its unique
  name). Its file name is a stable hash of (cache name, cache key) and of the *code version* of the module
  owning the cache (where it was created): a hash of its source file and of the source files of the
  ``core`` modules it imports from. A changed optimiser (or objective) therefore never reuses a stale
  strategy.
- a *job* lists the entries one (mechanism, workload) fills, keyed by the mechanism's settings, the code
  version of its module and the workload's content, so that the entries can be found before computing.

It is the user's own directory (mode 0700, files 0600), so pickle is acceptable; a folder owned by
someone else or writable by others is neither read nor written (its files could run code when
unpickled). A file that cannot be
read (truncated, corrupt, written by other code) counts as a miss, is removed and is recomputed. Entries
above ``max_entry_bytes`` are not stored, and beyond ``max_files`` the least recently used files go.

>>> import tempfile
>>> from dplens.core.mechanisms import matrix  # creates the cache "mm-opt strategies"
>>> store = StrategyStore(tempfile.mkdtemp())
>>> store.save_entry("mm-opt strategies", ("k", 1), [1.0, 2.0])
True
>>> store.load_entry("mm-opt strategies", ("k", 1))
(True, [1.0, 2.0])
>>> store.load_entry("mm-opt strategies", ("k", 2))[0], store.hits, store.misses
(False, 1, 1)
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import os
import pickle
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

import numpy as np

from dplens.core.mechanisms.cache import cache_named
from dplens.core.privacy.store import DEFAULT_HOME
from dplens.core.validate import integer

FOLDER_NAME = "strategies"  # under DPLENS_HOME
MAX_ENTRY_BYTES = 64 * 2**20  # a pickled entry above this is not stored (mm-opt at 4096 cells: about 2 MB)
MAX_FILES = 512  # entries and jobs kept; the least recently used go beyond it
FORMAT = 2  # the layout of a stored file; bump it to ignore every older file (2: entries keyed by cache name)


def default_folder() -> Path:
    """``$DPLENS_HOME/strategies`` (``DPLENS_HOME`` read at each call; default ``~/.local/share/dplens``)."""
    return Path(os.environ.get("DPLENS_HOME") or DEFAULT_HOME).expanduser() / FOLDER_NAME


def _feed(digest, obj: object) -> None:
    """Feed a canonical, type-tagged encoding of ``obj`` to ``digest`` (stable across processes and runs)."""
    if obj is None or isinstance(obj, bool | int | float | complex | str):
        digest.update(f"{type(obj).__name__}:{obj!r};".encode())
    elif isinstance(obj, bytes | bytearray):
        digest.update(b"bytes:%d:" % len(obj))
        digest.update(bytes(obj))
    elif isinstance(obj, tuple | list):
        digest.update(f"{type(obj).__name__}:{len(obj)}(".encode())
        for item in obj:
            _feed(digest, item)
        digest.update(b")")
    elif isinstance(obj, dict):
        digest.update(f"dict:{len(obj)}(".encode())
        for key in sorted(obj, key=stable_hash):
            _feed(digest, key)
            _feed(digest, obj[key])
        digest.update(b")")
    elif isinstance(obj, frozenset | set):
        digest.update(f"set:{len(obj)}(".encode())
        for part in sorted(stable_hash(item) for item in obj):
            digest.update(part.encode())
        digest.update(b")")
    elif isinstance(obj, np.ndarray | np.generic):
        array = np.ascontiguousarray(obj)
        digest.update(f"array:{array.dtype.str}:{array.shape}:".encode())
        digest.update(array.tobytes())
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        kind = type(obj)
        digest.update(f"dataclass:{kind.__module__}.{kind.__qualname__}(".encode())
        for f in dataclasses.fields(obj):
            digest.update(f"{f.name}=".encode())
            _feed(digest, getattr(obj, f.name))
        digest.update(b")")
    else:  # rare in cache keys; pickle is deterministic for one object built the same way
        other = type(obj)
        digest.update(f"pickle:{other.__module__}.{other.__qualname__}:".encode())
        digest.update(pickle.dumps(obj, protocol=4))


def stable_hash(obj: object) -> str:
    """A SHA-256 of ``obj``'s content, equal in every process for equal keys (unlike ``hash``).

    Arrays are hashed whole (a ``repr`` would elide their middle), dataclasses by class and fields.

    >>> stable_hash(("ranges", 4, b"ab")) == stable_hash(("ranges", 4, b"ab")) != stable_hash(("ranges", 4, b"ac"))
    True
    """
    digest = hashlib.sha256()
    _feed(digest, obj)
    return digest.hexdigest()


_VERSIONS: dict[str, str] = {}
_VERSIONS_LOCK = threading.Lock()


def code_version(module_name: str) -> str:
    """A hash of the source of ``module_name`` and of the ``core`` modules it imports names from.

    Computed once per process (a module's code does not change under a running process).
    """
    with _VERSIONS_LOCK:
        if module_name not in _VERSIONS:
            module = importlib.import_module(module_name)
            names = {module_name}
            for value in vars(module).values():
                owner = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
                if isinstance(owner, str) and (owner == "dplens.core" or owner.startswith("dplens.core.")):
                    names.add(owner)
            digest = hashlib.sha256()
            for name in sorted(names):
                source = getattr(sys.modules.get(name), "__file__", None)
                digest.update(name.encode() + b"\0")
                if source:
                    with contextlib.suppress(OSError):
                        digest.update(Path(source).read_bytes())
            _VERSIONS[module_name] = digest.hexdigest()[:32]
        return _VERSIONS[module_name]


class StrategyStore:
    """Strategy-cache entries on disk, under ``folder`` (default ``$DPLENS_HOME/strategies``).

    ``hits``, ``misses``, ``corrupt`` and ``saved`` count what happened (entries and jobs), for tests and
    benches. Safe to share between threads; several processes may use one folder (writes are atomic).
    """

    def __init__(self, folder: str | Path | None = None, *, max_entry_bytes: int = MAX_ENTRY_BYTES,
                 max_files: int = MAX_FILES) -> None:
        integer("max_files", max_files)
        self.folder = Path(folder) if folder is not None else default_folder()
        self.max_entry_bytes = int(max_entry_bytes)
        self.max_files = int(max_files)
        self.hits = self.misses = self.corrupt = self.saved = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"StrategyStore({str(self.folder)!r})"

    # ------------------------------------------------------------ files

    def _path(self, kind: str, digest: str) -> Path:
        return self.folder / f"{kind}-{digest}.pkl"

    def _private(self) -> bool:
        """False when the folder belongs to another user or others may write to it."""
        try:
            status = self.folder.stat()
        except FileNotFoundError:
            return True  # created 0700 on the first write
        except OSError:
            return False
        return status.st_uid == os.getuid() and not status.st_mode & 0o022

    def _read(self, path: Path, identity: dict) -> tuple[bool, object]:
        if not self._private():
            self._count("misses")
            return False, None
        try:
            with open(path, "rb") as file:
                record = pickle.load(file)
        except FileNotFoundError:
            self._count("misses")
            return False, None
        except Exception:  # noqa: BLE001 - truncated, corrupt or foreign: any unpickling error means "recompute"
            record = None
        if not (isinstance(record, dict) and record.get("format") == FORMAT
                and all(stable_hash(record.get(k)) == stable_hash(v) for k, v in identity.items())):
            self._count("corrupt")
            self._count("misses")
            with contextlib.suppress(OSError):
                path.unlink()
            return False, None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: kept longest
        self._count("hits")
        return True, record["value"]

    def _write(self, path: Path, identity: dict, value: object) -> bool:
        try:
            data = pickle.dumps({"format": FORMAT, **identity, "value": value}, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            return False  # not picklable: kept in memory only
        if len(data) > self.max_entry_bytes or not self._private():
            return False
        try:
            home = self.folder.parent
            home.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.folder.mkdir(mode=0o700, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".partial-")  # mode 0600
            try:
                with os.fdopen(handle, "wb") as file:
                    file.write(data)
                os.replace(temporary, path)  # atomic: a reader sees the old file or the whole new one
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        except OSError:
            return False  # a read-only or full disk: the cache is an optimisation, never an error
        self._count("saved")
        self._prune()
        return True

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def _prune(self) -> None:
        """Keep the ``max_files`` most recently used files."""
        try:
            files = [entry for entry in os.scandir(self.folder) if entry.name.endswith(".pkl")]
        except OSError:
            return
        if len(files) <= self.max_files:
            return
        def used(entry) -> float:
            try:
                return entry.stat().st_mtime
            except OSError:
                return 0.0
        files.sort(key=used)
        for entry in files[:len(files) - self.max_files]:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)

    # ------------------------------------------------------------ entries

    def _entry_identity(self, cache: str, key: object) -> dict:
        """ValueError when no cache is called ``cache`` (``cache_named``)."""
        return {"cache": cache, "key": key, "version": code_version(cache_named(cache).module)}

    def load_entry(self, cache: str, key: object) -> tuple[bool, object]:
        """(True, value) when the entry ``key`` of the cache named ``cache`` is stored for today's code, else
        (False, None)."""
        identity = self._entry_identity(cache, key)
        return self._read(self._path("entry", stable_hash(identity)), identity)

    def save_entry(self, cache: str, key: object, value: object) -> bool:
        """Store one entry of the cache named ``cache``; False when it is too large, not picklable or the disk
        refuses."""
        identity = self._entry_identity(cache, key)
        return self._write(self._path("entry", stable_hash(identity)), identity, value)

    # ------------------------------------------------------------ jobs: what one (mechanism, workload) fills

    def _job_identity(self, mechanism: object, workload_key: object) -> dict:
        module = type(mechanism).__module__
        return {"mechanism": mechanism, "version": code_version(module), "workload": workload_key}

    def load(self, mechanism: object, workload_key: object) -> dict[str, dict] | None:
        """The cache entries ``mechanism`` fills for the workload with key ``workload_key``, by cache name, or None.

        None unless the job and every entry it lists are stored for today's code (and its caches exist).
        """
        identity = self._job_identity(mechanism, workload_key)
        found, listed = self._read(self._path("job", stable_hash(identity)), identity)
        if not found or not isinstance(listed, list | tuple):
            return None
        entries: dict[str, dict] = {}
        for cache, key in listed:
            try:
                found, value = self.load_entry(cache, key)
            except ValueError:  # a cache renamed or removed since: recompute
                return None
            if not found:
                return None
            entries.setdefault(cache, {})[key] = value
        return entries

    def save(self, mechanism: object, workload_key: object, entries: Mapping[str, Mapping]) -> bool:
        """Store the cache entries ``mechanism`` filled for the workload with key ``workload_key`` (by cache name).

        The job is stored only when all its entries were: a later ``load`` finds all or nothing.
        """
        listed = []
        for cache, items in entries.items():
            for key, value in items.items():
                if not self.save_entry(cache, key, value):
                    return False
                listed.append((cache, key))
        identity = self._job_identity(mechanism, workload_key)
        return self._write(self._path("job", stable_hash(identity)), identity, listed)
