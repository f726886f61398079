"""Run every benchmark script in bench/ (``make bench``); each prints its own figures and targets.

Run: .venv/bin/python bench/run_all.py [NAME_FILTER ...]
Scripts run one after another with this interpreter; the exit code is 1 if any script failed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def scripts(filters: list[str]) -> list[Path]:
    """Every bench/*.py except this runner and results.py, optionally only those whose name contains a filter."""
    found = sorted(p for p in BENCH.glob("*.py")
                   if p.name not in (Path(__file__).name, "results.py") and not p.name.startswith("_"))
    return [p for p in found if not filters or any(f in p.name for f in filters)]


def main(argv: list[str]) -> int:
    failed = []
    for script in scripts(argv):
        print(f"\n===== {script.name} =====", flush=True)
        start = time.perf_counter()
        code = subprocess.run([sys.executable, str(script)], cwd=BENCH.parent).returncode
        print(f"----- {script.name}: exit {code}, {time.perf_counter() - start:.1f} s", flush=True)
        if code:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
