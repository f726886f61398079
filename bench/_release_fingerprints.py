"""Fingerprints of every registered histogram mechanism's seeded releases, to show a refactor changed no release.

Run it on two checkouts and compare the files (not a benchmark: ``bench/run_all.py`` skips it):

    .venv/bin/python bench/_release_fingerprints.py after.json
    (cd OLD_CHECKOUT && PYTHONPATH=src:. NEW_CHECKOUT/.venv/bin/python \\
        NEW_CHECKOUT/bench/_release_fingerprints.py NEW_CHECKOUT/before.json)
    .venv/bin/python bench/_release_fingerprints.py --compare before.json after.json

Each entry is mechanism/input/seed → [SHA-256 prefix of the answers and estimate, privacy loss as a hex float]:
eight inputs (64-cell prefix, 50 random ranges, an 8 × 8 grid of prefix pairs, a dense and a sparse explicit W, a
stack of the three kinds, all-range, a Kron with an explicit factor), two seeds, ε = 0.7, exploration noise. Mechanisms
renamed since are listed under their former name (``RENAMED``), so old and new files line up.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import scipy.sparse

try:
    from dplens.core.mechanisms import MECHANISMS
    from dplens.core.queries.workloads import AllRange, Explicit, Kron, Prefix, Stack, random_range
except ImportError:  # a checkout from before the dplens package
    from core.mechanisms import MECHANISMS  # type: ignore[no-redef]
    from core.queries.workloads import AllRange, Explicit, Kron, Prefix, Stack, random_range  # type: ignore[no-redef]

FORMER_NAMES = {"gaussian-eigen": "gaussian-mm-opt"}  # current name → the name older checkouts use


def fingerprints() -> dict[str, list[str]]:
    x = np.random.default_rng(3).poisson(20, 64).astype(float)
    grid = np.random.default_rng(4).poisson(5, (8, 8)).astype(float)
    matrix = np.random.default_rng(5).integers(0, 2, (20, 64)).astype(float)
    inputs = (("prefix", x, Prefix(64)), ("ranges", x, random_range(64, 50, seed=1)),
              ("grid", grid, Kron((Prefix(8), Prefix(8)))),
              # the workloads whose closed forms have their own paths (dense and sparse W, stacks, Krons of them)
              ("explicit", x, Explicit(matrix)), ("sparse", x, Explicit(scipy.sparse.csr_matrix(matrix))),
              ("stack", x, Stack((Prefix(64), random_range(64, 10, seed=2), Explicit(matrix)))),
              ("all-range", x, AllRange(64)), ("grid-explicit", grid, Kron((Explicit(matrix[:5, :8]), Prefix(8)))))
    out = {}
    for name, mechanism in sorted(MECHANISMS.items()):
        for label, data, workload in inputs:
            for seed in range(2):
                key = f"{FORMER_NAMES.get(name, name)}/{label}/{seed}"
                try:
                    release = mechanism.run(data, workload, 0.7, np.random.default_rng(seed))
                except ValueError as err:  # e.g. a 1-D-only mechanism on the grid: the refusal is the fingerprint
                    out[key] = ["refused", type(err).__name__]
                    continue
                values = np.asarray(release.answers, float).tobytes()
                if release.estimate is not None:
                    values += np.asarray(release.estimate, float).tobytes()
                out[key] = [hashlib.sha256(values).hexdigest()[:16], float(release.privacy_loss).hex()]
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--compare"] and len(argv) == 3:
        before, after = (json.loads(Path(path).read_text()) for path in argv[1:])
        differ = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        print(f"{len(before)} before, {len(after)} after, {len(differ)} differ")
        for key in differ:
            print(f"  {key}: {before.get(key)} -> {after.get(key)}")
        return 1 if differ else 0
    if len(argv) != 1:
        print(__doc__)
        return 2
    prints = fingerprints()
    with open(argv[0], "w") as handle:
        json.dump(prints, handle, indent=0, sort_keys=True)
    print(f"{len(prints)} fingerprints written to {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
