"""What every bench shares: its figures written as data, and where the shared data sets are.

Not a bench itself (``run_all.py`` skips it). A bench records its figures with

    with Recorder("bench_mmopt", args) as rec:
        rec.row(label="prefix 256", wall_s=1.2, cpu_s=1.1, rmse=5.2)

(or ``record(label=..., ...)`` from code deeper down, which adds the row to the recorder in use)

and on a normal exit the file ``bench/results/bench_mmopt.json`` holds the date (UTC), the git commit,
the machine, the load average at start and end, the total wall and CPU seconds, the command-line
arguments and the rows. Units go into the key names (``wall_s``, ``cpu_ms``, ``peak_mb``). A bench that
fails (an exception, a non-zero exit) or records no row leaves the previous file alone. ``docs/gen_ref.py`` renders the
files as tables in the documentation.

Shared data (DPBench histograms, Adult): ``shared_data()`` is ``$DPLENS_SHARED_DATA`` if set, else
``<repository>/../shared/data`` (``shared_spec()`` is the ``spec`` folder beside it); ``require()`` prints ``skipped:
<path> absent (set DPLENS_SHARED_DATA)`` and exits 0 when a path is missing.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
SHARED_ENV = "DPLENS_SHARED_DATA"
REQUIRED_KEYS = ("bench", "date", "commit", "machine", "load_start", "load_end", "wall_s", "cpu_s", "args", "rows")


def shared_data(*parts: str) -> Path:
    """The shared data folder (``$DPLENS_SHARED_DATA``, else ``<repository>/../shared/data``), joined with parts."""
    base = os.environ.get(SHARED_ENV)
    return (Path(base) if base else ROOT.parent / "shared" / "data").joinpath(*parts)


def shared_spec(*parts: str) -> Path:
    """The shared reference texts (e.g. ``peer-reference.md``): the ``spec`` folder beside the shared data."""
    return shared_data().parent.joinpath("spec", *parts)


def require(*paths: Path) -> None:
    """Exit 0 with a ``skipped:`` line when any of ``paths`` is absent."""
    for path in paths:
        if not Path(path).exists():
            print(f"skipped: {path} absent (set {SHARED_ENV})")
            sys.exit(0)


def dpcomp_modules(*names: str) -> tuple[tuple[Any, ...] | None, str]:
    """dpcomp_core's modules ``names`` (e.g. ``"algorithm.dawa"``) imported from ``$DPCOMP_SRC`` and '', or None and
    why the peer columns are skipped (unset, no package there, or an import that failed)."""
    import importlib

    source = os.environ.get("DPCOMP_SRC")
    if not source:
        return None, "DPCOMP_SRC is not set (a folder holding a Python-3-runnable dpcomp_core package)"
    if not (Path(source) / "dpcomp_core").is_dir():
        return None, f"DPCOMP_SRC={source} holds no dpcomp_core package"
    sys.path.insert(0, source)
    try:
        return tuple(importlib.import_module(f"dpcomp_core.{name}") for name in names), ""
    except Exception as err:  # noqa: BLE001 - any import failure only skips the peer columns
        return None, f"importing dpcomp_core from {source} failed: {type(err).__name__}: {err}"


def git_commit(root: Path = ROOT) -> str:
    """HEAD's short hash, with ``+dirty`` when tracked files differ from it; ``unknown`` outside git."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30,
                              check=True).stdout.strip()
    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def machine() -> dict[str, Any]:
    return {"platform": platform.platform(), "machine": platform.machine(), "python": platform.python_version(),
            "cpu_count": os.cpu_count()}


def cpu_seconds() -> float:
    """User + system CPU of this process and of its children that have been waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _plain(value: Any) -> Any:
    """JSON-ready: NumPy scalars and arrays to Python, non-finite floats to None, paths to strings."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return portable(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    return portable(str(value))


def portable(text: str) -> str:
    """``text``, or ``<path:NAME>`` when it is an absolute path: a results file names no folder of one machine.

    >>> portable("/home/someone/hdmm/src"), portable("--trials"), portable("results.csv")
    ('<path:src>', '--trials', 'results.csv')
    """
    return f"<path:{Path(text).name}>" if os.path.isabs(text) else text


_ACTIVE: list[Recorder] = []


def record(**fields: Any) -> dict[str, Any] | None:
    """Add a row to the innermost recorder in use (nothing when there is none, e.g. a function run alone)."""
    return _ACTIVE[-1].row(**fields) if _ACTIVE else None


class Recorder:
    """Collects a bench's rows and writes ``<directory>/<bench>.json`` when its ``with`` block ends normally."""

    def __init__(self, bench: str, args: Any = None, directory: str | os.PathLike | None = None) -> None:
        self.bench = Path(bench).stem
        self.options = _plain(vars(args) if hasattr(args, "__dict__") else args)
        self.directory = Path(directory) if directory is not None else RESULTS
        self.rows: list[dict[str, Any]] = []
        self.path = self.directory / f"{self.bench}.json"

    def __enter__(self) -> Recorder:
        self._date = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        self._load = load_average()
        self._wall, self._cpu = time.perf_counter(), cpu_seconds()
        self._meter = TreeMeter(os.getpid()).start()
        _ACTIVE.append(self)
        return self

    def row(self, **fields: Any) -> dict[str, Any]:
        """Add one row of figures (a name or label and numbers whose keys carry their unit)."""
        row = _plain(fields)
        self.rows.append(row)
        return row

    def result(self) -> dict[str, Any]:
        """The file's content. ``cpu_s`` is the CPU of this process tree, workers included (the larger of psutil's
        samples and the reaped children's rusage: ``os.times`` alone misses a forkserver's workers), and
        ``peak_rss_mb``/``peak_pss_mb`` the tree's peak memory as sampled."""
        tree = self._meter.stop()
        own = cpu_seconds() - self._cpu
        return {"bench": self.bench, "date": self._date.isoformat().replace("+00:00", "Z"), "commit": git_commit(),
                "machine": machine(), "load_start": self._load, "load_end": load_average(),
                "wall_s": round(time.perf_counter() - self._wall, 3), "cpu_s": round(max(own, tree.cpu_s), 3),
                "peak_rss_mb": round(tree.peak_rss / 2**20, 1), "peak_pss_mb": round(tree.peak_pss / 2**20, 1),
                "args": [portable(a) for a in sys.argv[1:]], "options": self.options, "rows": self.rows}

    def write(self) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.result(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return self.path

    def __exit__(self, kind, error, trace) -> bool:
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        ok = kind is None or (kind is SystemExit and error.code in (None, 0))
        if ok and self.rows:  # a skipped bench (no rows) keeps its previous file too
            print(f"results written to {self.write()}", file=sys.stderr)
        return False


def tree_cpu_seconds(process=None) -> float:
    """User + system CPU of ``process`` (default: this one) and every live process under it (psutil)."""
    import psutil

    process = process or psutil.Process()
    total = 0.0
    for p in [process, *process.children(recursive=True)]:
        try:
            times = p.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def wait_quiet(process=None, limit: float = 120.0) -> float:
    """Seconds until ``process`` (default: this one) and its children use under 5 % of a core over one second:
    their start-up work (e.g. a server's worker warm-up) done."""
    start = time.perf_counter()
    while time.perf_counter() - start < limit:
        before = tree_cpu_seconds(process)
        time.sleep(1.0)
        if tree_cpu_seconds(process) - before < 0.05:
            break
    return time.perf_counter() - start


class Sampled(NamedTuple):
    """One command measured as a process tree: wall seconds, CPU seconds of the whole tree, peak tree RSS and PSS
    (bytes), its exit code and output."""

    wall_s: float
    cpu_s: float
    peak_rss: int
    peak_pss: int
    returncode: int
    stdout: str
    stderr: str


class TreeUse(NamedTuple):
    """What a ``TreeMeter`` saw: CPU seconds of the tree, peak tree RSS and PSS (bytes)."""

    cpu_s: float
    peak_rss: int
    peak_pss: int


SAMPLING_SHARE = 0.05  # at most this share of one core goes to TreeMeter's sampling (its pause stretches)


class TreeMeter:
    """Samples the process tree under ``pid`` every ``every`` seconds (or less often, so that sampling stays within
    ``SAMPLING_SHARE`` of a core) on a thread (psutil): each process's CPU (its
    reaped children's included) and the tree's RSS and PSS. PSS splits the pages a forked worker shares with its
    forkserver, so its sum is the tree's; RSS counts them once per process. A worker's CPU is counted up to its last
    sample (at most ``every`` seconds short), also after it ends. Sampling costs CPU in the sampling process (it
    reads each process's memory map): the sampling thread's own CPU is not counted.

    >>> meter = TreeMeter(os.getpid()).start()
    >>> _ = sum(i * i for i in range(200_000))
    >>> use = meter.stop()
    >>> use.cpu_s > 0 and use.peak_rss > 0
    True
    """

    def __init__(self, pid: int, every: float = 0.02) -> None:
        self.pid, self.every = pid, every
        self._cpu: dict[int, float] = {}
        self._before: dict[int, float] = {}
        self._sampling_cpu = 0.0
        self._peak = [0, 0]
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample_until_done, daemon=True)

    def start(self) -> TreeMeter:
        self._sample()  # the CPU the tree had used before: not counted
        self._before = dict(self._cpu)
        self._thread.start()
        return self

    def stop(self) -> TreeUse:
        if not self._done.is_set():
            self._done.set()
            self._thread.join()
            self._sample()
        used = sum(cpu - self._before.get(pid, 0.0) for pid, cpu in self._cpu.items())
        return TreeUse(used - (self._sampling_cpu if self.pid == os.getpid() else 0.0), self._peak[0], self._peak[1])

    def _sample_until_done(self) -> None:
        pause = self.every
        while not self._done.wait(pause):
            before = time.thread_time()
            self._sample()
            # Reading a large process's memory map takes ~10 ms: at every 20 ms that was half a core, taken from
            # the run being measured. The pause stretches so that sampling stays within its share of one core.
            pause = max(self.every, (time.thread_time() - before) / SAMPLING_SHARE)
        self._sampling_cpu = time.thread_time()  # this thread's CPU: the meter's own cost

    def _sample(self) -> None:
        import psutil  # type: ignore[import-untyped]  # no stubs installed

        try:
            root = psutil.Process(self.pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        rss = pss = 0
        for process in tree:
            try:
                with process.oneshot():
                    memory = process.memory_full_info()
                    times = process.cpu_times()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            rss, pss = rss + memory.rss, pss + memory.pss
            self._cpu[process.pid] = max(self._cpu.get(process.pid, 0.0), times.user + times.system
                                         + times.children_user + times.children_system)
        self._peak[:] = max(self._peak[0], rss), max(self._peak[1], pss)


def run_sampled(argv: list[str], *, env: dict[str, str] | None = None, cwd: str | Path | None = None,
                every: float = 0.02) -> Sampled:
    """Run ``argv`` while a ``TreeMeter`` samples its process tree every ``every`` seconds. The CPU is the larger of
    the sampled sum and the reaped children's rusage (a process that ends between two samples is still counted)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    meter = TreeMeter(proc.pid, every).start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - start
    use = meter.stop()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    reaped = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return Sampled(wall, max(reaped, use.cpu_s), use.peak_rss, use.peak_pss, proc.returncode, stdout, stderr)
