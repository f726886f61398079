"""An on-disk cache of data-independent strategies (mm-opt's optimised strategy, Greedy-H's hierarchy, ...).

Optimising a strategy depends only on the workload and the mechanism's settings, never on the data, so
it can outlive the process that computed it: a later grid, or a resumed one, loads it from
``$DPLENS_HOME/strategies`` instead of optimising again.

Two kinds of file, both ``.npz`` archives of plain arrays written atomically (temporary file + ``os.replace``):

- an *entry* holds one item of one in-memory strategy cache (a ``StrategyCache``, named by its unique
  name). Its file name is a stable hash of (cache name, cache key) and of the *code version* of the module
  owning the cache (where it was created): a hash of its source file and of the source files of the
  ``core`` modules it imports from. A changed optimiser (or objective) therefore never reuses a stale
  strategy.
- a *job* lists the entries one (mechanism, workload) fills, keyed by the mechanism's settings, the code
  version of its module and the workload's content, so that the entries can be found before computing.

Nothing read from the folder can run code: files are never unpickled. A value is stored as a JSON tree (numbers,
strings, tuples, lists, dicts, and the fields of ``dplens`` dataclasses, rebuilt without calling any constructor)
whose arrays (numeric, finite) and sparse matrices sit beside it in the archive, read with
``allow_pickle=False``; a value of any other type is kept in memory only. A file is read only if it is a regular
file of at most ``max_entry_bytes`` (checked before reading), in a folder of the user's own that others may not
write to. A file that cannot be read (planted, truncated, corrupt, written by other code) counts as a miss, is
removed and is recomputed. Pickles of the former format (``*.pkl``) are never opened: the next write deletes them.
Entries above ``max_entry_bytes`` are not stored, and beyond ``max_files`` the least recently used files go.
The store trusts a file's numbers (a strategy is used as read): it is a cache in the user's private folder.

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
import io
import json
import os
import pickle
import stat
import sys
import tempfile
import threading
import zipfile
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

import numpy as np
import scipy.sparse as sp

from dplens.core.data.home import default_home
from dplens.core.mechanisms.cache import cache_named
from dplens.core.validate import integer

FOLDER_NAME = "strategies"  # under DPLENS_HOME
MAX_ENTRY_BYTES = 64 * 2**20  # a stored file above this is neither written nor read (mm-opt at 4096 cells: 2 MB)
MAX_FILES = 512  # entries and jobs kept; the least recently used go beyond it
FORMAT = 3  # the layout of a stored file; bump it to ignore every older file (3: .npz of plain arrays, no pickle)
SUFFIX = ".npz"
LEGACY_SUFFIX = ".pkl"  # format 2 and older: pickles, never opened (deleted at the next write)
ARRAY_KINDS = "biufc"  # bool, integers, floats, complex: what an array read back may hold
MAX_ARRAY_DIMENSIONS = 4


def default_folder() -> Path:
    """``$DPLENS_HOME/strategies`` (``DPLENS_HOME`` read at each call; default ``~/.local/share/dplens``)."""
    return default_home() / FOLDER_NAME


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


class _Unreadable(Exception):
    """A stored file that is not one this store wrote (planted, truncated, foreign): a miss."""


def _encode(value: object, arrays: list[np.ndarray]) -> object:
    """``value`` as a JSON tree whose arrays are appended to ``arrays``; TypeError for what cannot be kept so."""
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind is tuple or kind is list:
        return {"t" if kind is tuple else "l": [_encode(item, arrays) for item in value]}  # type: ignore[attr-defined]
    if kind is dict:
        return {"d": [[_encode(k, arrays), _encode(v, arrays)] for k, v in value.items()]}  # type: ignore[attr-defined]
    if kind is bytes:
        return {"b": _array(np.frombuffer(value, dtype=np.uint8), arrays)}  # type: ignore[call-overload]
    if kind is np.ndarray or isinstance(value, np.generic):
        array = np.asarray(value)
        if array.dtype.kind not in ARRAY_KINDS or array.ndim > MAX_ARRAY_DIMENSIONS:
            raise TypeError(f"an array of dtype {array.dtype} and {array.ndim} dimensions is not stored")
        return {"a" if kind is np.ndarray else "s": _array(array, arrays)}
    if kind is sp.csr_matrix:
        parts = (value.data, value.indices, value.indptr)  # type: ignore[attr-defined]
        return {"csr": [_encode(part, arrays) for part in parts], "shape": list(value.shape)}  # type: ignore[attr-defined]
    if dataclasses.is_dataclass(value) and kind.__module__.startswith("dplens."):
        fields = {f.name: _encode(getattr(value, f.name), arrays) for f in dataclasses.fields(value)}
        return {"dc": f"{kind.__module__}:{kind.__qualname__}", "f": fields}
    raise TypeError(f"a {kind.__module__}.{kind.__qualname__} is not stored (not plain data)")


def _array(array: np.ndarray, arrays: list[np.ndarray]) -> int:
    arrays.append(np.ascontiguousarray(array))
    return len(arrays) - 1


def _decode(tree: object, arrays: list[np.ndarray]) -> object:
    """The value ``_encode`` made ``tree`` of; _Unreadable for anything it would not have written."""
    if tree is None or type(tree) in (bool, int, float, str):
        return tree
    if type(tree) is not dict or len(tree) not in (1, 2):
        raise _Unreadable("not a tagged node")
    tag, body = next(iter(tree.items()))
    if tag in ("t", "l") and type(body) is list:
        items = [_decode(item, arrays) for item in body]
        return tuple(items) if tag == "t" else items
    if tag == "d" and type(body) is list:
        return {_decode(k, arrays): _decode(v, arrays) for k, v in body}
    if tag in ("a", "s", "b") and type(body) is int and 0 <= body < len(arrays):
        array = arrays[body]
        if tag == "b":
            return array.astype(np.uint8).tobytes() if array.dtype == np.uint8 and array.ndim == 1 else _refuse()
        return array if tag == "a" else array[()] if array.ndim == 0 else _refuse()
    if tag == "csr" and type(body) is list and len(body) == 3:
        data, indices, indptr = (_decode(part, arrays) for part in body)
        shape = tree.get("shape")
        if not (type(shape) is list and len(shape) == 2 and all(type(size) is int for size in shape)):
            raise _Unreadable("a sparse matrix without its shape")
        matrix = sp.csr_matrix((data, indices, indptr), shape=tuple(shape))
        matrix.check_format(full_check=True)  # ValueError on indices out of range
        return matrix
    if tag == "dc" and type(body) is str and type(tree.get("f")) is dict:
        return _dataclass(body, {name: _decode(v, arrays) for name, v in tree["f"].items()})
    raise _Unreadable(f"unknown node {tag!r}")


def _refuse() -> object:
    raise _Unreadable("a scalar or bytes node of the wrong shape")


def _dataclass(name: str, fields: dict[str, object]) -> object:
    """An instance of the dataclass ``module:qualname``, from an already imported ``dplens`` module, with
    ``fields`` set as pickle would (no constructor or other code of the file's choosing runs)."""
    module_name, _, qualname = name.partition(":")
    module = sys.modules.get(module_name) if module_name.startswith("dplens.") else None
    kind: object = module
    for part in qualname.split("."):
        kind = getattr(kind, part, None) if part.isidentifier() else None
    if not (isinstance(kind, type) and dataclasses.is_dataclass(kind) and kind.__module__ == module_name):
        raise _Unreadable(f"{name!r} is not a dplens dataclass")
    if set(fields) != {f.name for f in dataclasses.fields(kind)}:
        raise _Unreadable(f"the fields of {name!r} changed")
    instance = object.__new__(kind)
    for field, value in fields.items():
        object.__setattr__(instance, field, value)
    return instance


def _pack(record: dict) -> bytes:
    """``record`` as the bytes of an uncompressed ``.npz``: its JSON tree as UTF-8 bytes, then its arrays."""
    arrays: list[np.ndarray] = []
    tree = json.dumps(_encode(record, arrays), separators=(",", ":")).encode()
    buffer = io.BytesIO()
    members = {"tree": np.frombuffer(tree, dtype=np.uint8), **{f"a{i}": a for i, a in enumerate(arrays)}}
    np.savez(buffer, **members)  # type: ignore[arg-type]  # numpy's stub types **kwds as its allow_pickle
    return buffer.getvalue()


def _unpack(data: bytes) -> object:
    """What ``_pack`` packed; _Unreadable (or another exception) for anything else. Never unpickles."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
        names = {info.filename for info in infos}
        if (any(info.compress_type != zipfile.ZIP_STORED for info in infos)  # sizes bounded by the file's
                or names != {"tree.npy", *(f"a{i}.npy" for i in range(len(infos) - 1))}):
            raise _Unreadable("not an archive this store wrote")
        arrays = []
        for i in range(len(infos) - 1):
            array = np.load(io.BytesIO(archive.read(f"a{i}.npy")), allow_pickle=False)
            if (array.dtype.kind not in ARRAY_KINDS or array.ndim > MAX_ARRAY_DIMENSIONS
                    or (array.dtype.kind in "fc" and not np.isfinite(array).all())):
                raise _Unreadable(f"array {i} is not finite numeric data")
            arrays.append(array)
        tree = np.load(io.BytesIO(archive.read("tree.npy")), allow_pickle=False)
    if tree.dtype != np.uint8 or tree.ndim != 1:
        raise _Unreadable("no JSON tree")
    return _decode(json.loads(tree.tobytes().decode()), arrays)


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
        return self.folder / f"{kind}-{digest}{SUFFIX}"

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
            record = _unpack(self._bounded_bytes(path))
        except FileNotFoundError:
            self._count("misses")
            return False, None
        except Exception:  # noqa: BLE001 - planted, truncated, corrupt or foreign: any error means "recompute"
            record = None
        if not (isinstance(record, dict) and record.get("format") == FORMAT
                and record.get("identity") == stable_hash(identity) and "value" in record):
            self._count("corrupt")
            self._count("misses")
            with contextlib.suppress(OSError):
                path.unlink()
            return False, None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: kept longest
        self._count("hits")
        return True, record["value"]

    def _bounded_bytes(self, path: Path) -> bytes:
        """The bytes of ``path`` if it is a regular file of at most ``max_entry_bytes``, sized before reading.

        Not following a symbolic link, nor blocking on a FIFO: a planted ``/dev/zero`` or pipe is refused.
        """
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(handle, "rb") as file:
            status = os.fstat(file.fileno())
            if not stat.S_ISREG(status.st_mode) or status.st_size > self.max_entry_bytes:
                raise _Unreadable(f"{path.name} is not a regular file of at most {self.max_entry_bytes} bytes")
            data = file.read(self.max_entry_bytes + 1)
        if len(data) > self.max_entry_bytes:
            raise _Unreadable(f"{path.name} grew past {self.max_entry_bytes} bytes")
        return data

    def _write(self, path: Path, identity: dict, value: object) -> bool:
        try:
            data = _pack({"format": FORMAT, "identity": stable_hash(identity), "value": value})
        except (TypeError, ValueError):
            return False  # not plain data: kept in memory only
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
        """Keep the ``max_files`` most recently used files; delete (never open) files of the pickle format."""
        try:
            found = list(os.scandir(self.folder))
        except OSError:
            return
        for entry in found:
            if entry.name.endswith(LEGACY_SUFFIX):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
        files = [entry for entry in found if entry.name.endswith(SUFFIX)]
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
        """Store one entry of the cache named ``cache``; False when it is too large, not plain data or the disk
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
