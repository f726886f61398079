"""Bounded inputs: every upload up to 50 MB is accepted or refused in <= 5 s and <= 1 GB.

Run: .venv/bin/python bench/bench_bounds.py [--only NAME]
Each case is built by one subprocess and loaded by a fresh one, so that the loader's peak memory
(ru_maxrss: interpreter, imports, the upload's bytes and the parse; "+MB" is the parse alone) is its own. Prints wall
and CPU seconds, peak MB, the outcome, and the ratio
to each target (<= 1 meets it). Timings on a shared machine are noisy: compare rows of one run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from results import Recorder

ROOT = Path(__file__).resolve().parent.parent
MB = 2**20

# name -> (python expression building the bytes, loader, wall-time target in s)
CASES: dict[str, tuple[str, str, float]] = {
    "one-row CSV, 10^6 numbers (2 MB)": ("','.join(['1'] * 10**6).encode()", "histogram", 1.0),
    "one-row CSV, 10^5 numbers": ("','.join(['1'] * 10**5).encode()", "histogram", 1.0),
    "50 MB count column, 25 M rows (refused: cells)": ("b'count\\n' + b'1\\n' * (25 * 10**6 - 4)", "histogram", 5.0),
    "48 MB header-less matrix 2048 x 2048": (
        "('\\n'.join([','.join(['12345678901'] * 2048)] * 2048)).encode()", "histogram", 5.0),
    "44 MB label,count, 4 M rows (accepted)": (
        "b'label,count\\n' + b''.join(b'%07d,%d\\n' % (i, i % 97) for i in range(4 * 10**6 - 1))",
        "histogram", 5.0),
    "50 MB row,col,count 2-D, 4 M rows": (
        "b'row,col,count\\n' + b''.join(b'%d,%d,5\\n' % divmod(i, 2048) for i in range(4 * 10**6))",
        "histogram", 5.0),
    "50 MB JSON counts (refused: values)": ("b'{\"counts\": [' + b'1,' * (25 * 10**6 - 10) + b'1]}'",
                                            "histogram", 5.0),
    "40 MB JSON counts, 4 M values": ("b'{\"counts\": [' + b'12345678,' * (4 * 10**6 - 1) + b'1]}'",
                                      "histogram", 5.0),
    "16 MB ragged CSV, 4 M rows (last row)": ("b'label,count\\n' + b'a,1\\n' * (4 * 10**6 - 1) + b'b,1,2\\n'",
                                              "histogram", 5.0),
    "50 MB records, 7 M rows, numeric bins": (
        "b'age,city\\n' + b''.join(b'%d,c%d\\n' % (i % 100, i % 7) for i in range(7 * 10**6))", "records-bins", 5.0),
    "50 MB records, 7 M rows, categorical": (
        "b'age,city\\n' + b''.join(b'%d,c%d\\n' % (i % 100, i % 7) for i in range(7 * 10**6))", "records-cat", 5.0),
    "50 MB .npy float64, 6.5 M cells (refused: cells)": (
        "(lambda b: (np.save(b, np.ones(6_500_000)), b.getvalue())[1])(io.BytesIO())", "histogram", 5.0),
}

BUILD = r"""
import io, sys
import numpy as np
data = {expr}
open(sys.argv[1], "wb").write(data)
"""

CHILD = r"""
import io, json, resource, sys, time
import numpy as np
sys.path.insert(0, {root!r})
from dplens.core.data.datasets import DataError, histogram_from_records, load_histogram
data = open(sys.argv[1], "rb").read()  # the server holds the upload's bytes, as here
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
wall, cpu = time.perf_counter(), time.process_time()
try:
    if {loader!r} == "histogram":
        h = load_histogram(data)
    elif {loader!r} == "records-bins":
        h = histogram_from_records(data, "age", bins=10)
    else:
        h = histogram_from_records(data, "city")
    outcome = f"accepted {{h.domain.size:,}} cells"
except DataError as err:
    outcome = f"refused: {{str(err)[:70]}}"
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"size": len(data), "wall": wall, "cpu": cpu, "peak": peak / 1024, "extra": (peak - base) / 1024,
                  "outcome": outcome}}))
"""


def run(name: str) -> dict:
    expr, loader, _ = CASES[name]
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "upload")
        subprocess.run([sys.executable, "-c", BUILD.format(expr=expr), path], check=True, timeout=600)
        code = CHILD.format(root=str(ROOT), loader=loader)
        out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, timeout=600,
                             check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run the cases whose name contains this text")
    args = parser.parse_args()
    print(f"{'case':<50} {'MB':>5} {'wall s':>7} {'cpu s':>6} {'peak MB':>8} {'+MB':>6} {'ratio':>6}  outcome")
    with Recorder("bench_bounds", args) as rec:
        for name, (_, _, target) in CASES.items():
            if args.only and args.only not in name:
                continue
            r = run(name)
            ratio = max(r["wall"] / target, r["peak"] / 1024)  # both targets: time, and 1 GB peak
            print(f"{name:<50} {r['size'] / MB:5.1f} {r['wall']:7.2f} {r['cpu']:6.2f} {r['peak']:8.0f} "
                  f"{r['extra']:6.0f} {ratio:6.2f}  {r['outcome']}", flush=True)
            rec.row(name=name, size_mb=r["size"] / MB, wall_s=r["wall"], cpu_s=r["cpu"], peak_mb=r["peak"],
                    parse_mb=r["extra"], target_wall_s=target, ratio=ratio, outcome=r["outcome"])


if __name__ == "__main__":
    main()
