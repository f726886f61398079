"""Cost of the persistent ledger: one spend (a BEGIN IMMEDIATE transaction) alone and under contention.

Run: .venv/bin/python bench/bench_ledger.py
Prints milliseconds per spend and spends per second for 1 thread, 20 threads and 4 processes against one
SQLite file in a temporary DPLENS_HOME, with wall time next to this process's CPU time.
"""

from __future__ import annotations

import multiprocessing
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results import Recorder, record  # noqa: E402

from dplens.core.data.fingerprint import dataset_fingerprint  # noqa: E402
from dplens.core.privacy.budget import Budget  # noqa: E402
from dplens.core.privacy.ledger_store import LedgerStore  # noqa: E402

FP = dataset_fingerprint([1.0, 2.0, 3.0])
SPENDS = 400  # in total, per scenario


def _spend(path: str, count: int) -> None:
    store = LedgerStore(path)
    for i in range(count):
        store.spend(FP, f"bench {i}", Budget(1e-6), mechanism="identity")


def _run(label: str, path: str, start) -> None:
    LedgerStore(path).set_total(FP, Budget(1.0))
    wall, cpu = time.perf_counter(), time.process_time()
    start()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    spent = len(LedgerStore(path).ledger(FP).spends)
    print(f"{label:<28} {spent:>4} spends  wall {wall:6.2f} s  cpu(this process) {cpu:6.2f} s  "
          f"{1000 * wall / spent:6.2f} ms/spend  {spent / wall:7.0f} spends/s")
    record(name=label, spends=spent, wall_s=wall, cpu_this_process_s=cpu, ms_per_spend=1000 * wall / spent,
           spends_per_s=spent / wall)


def main() -> None:
    with Recorder("bench_ledger"):
        run()


def run() -> None:
    home = Path(tempfile.mkdtemp(prefix="dplens-bench-ledger-"))
    _run("1 thread", str(home / "one.sqlite3"), lambda: _spend(str(home / "one.sqlite3"), SPENDS))

    def threads() -> None:
        workers = [threading.Thread(target=_spend, args=(str(home / "threads.sqlite3"), SPENDS // 20))
                   for _ in range(20)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    _run("20 threads", str(home / "threads.sqlite3"), threads)

    def processes() -> None:
        with multiprocessing.get_context("spawn").Pool(4) as pool:
            pool.starmap(_spend, [(str(home / "procs.sqlite3"), SPENDS // 4)] * 4)

    _run("4 processes (incl. spawn)", str(home / "procs.sqlite3"), processes)


if __name__ == "__main__":
    main()
