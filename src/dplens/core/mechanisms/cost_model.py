"""What one mechanism run costs before it starts: the ``Cost`` record, the per-element constants measured on a
2-core machine (``bench/bench_bounds.py``), and the shared models the mechanisms' own ``cost`` methods use.

A mechanism states its estimate with a method ``cost(self, workload) -> Cost``; without one,
``default_cost`` assumes work linear in the number of cells n plus the workload's matvec, which is right for
the noise-on-cells families. The estimates are order-of-magnitude fits: they decide whether to warn, refuse
or leave a mechanism out of a sweep (``dplens.core.analysis.cost``), not how long to sleep.

>>> from dplens.core.mechanisms import MECHANISMS
>>> from dplens.core.queries.workloads import Prefix
>>> mwem = mechanism_cost(MECHANISMS["mwem"], Prefix(4096))
>>> identity = mechanism_cost(MECHANISMS["identity"], Prefix(4096))
>>> mwem.seconds > identity.seconds
True
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from dplens.core.data.limits import MAX_QUERIES
from dplens.core.mechanisms.contract import Mechanism, check_parameters
from dplens.core.queries.workloads import Workload, dense_entries, matvec_elements  # noqa: F401  (re-exported: the cost models' structure)

# Per-element costs of vectorised NumPy on this class of machine (bench/bench_bounds.py).
SECONDS_PER_ELEMENT = 5e-9
OVERHEAD_SECONDS = 2e-4   # Python overhead of one run of a simple mechanism


@dataclass(frozen=True)
class Cost:
    """Estimated wall seconds and peak bytes of one mechanism run, the setting that drives them, and the answers its
    release lists (one per query of the workload; ``mechanism_cost`` fills it in).

    >>> Cost(2.0, 1e6, "rounds") .scaled(10).seconds
    20.0
    """

    seconds: float
    bytes: float
    driver: str = ""
    answers: float = 0.0

    def scaled(self, runs: float) -> Cost:
        """``runs`` repetitions in sequence: time adds up, peak memory does not."""
        return dataclasses.replace(self, seconds=self.seconds * runs)

    def describe(self) -> str:
        """'about 3.2 s and 120 MB' (rounded for people)."""
        return f"about {seconds_text(self.seconds)} and {bytes_text(self.bytes)}"


def seconds_text(value: float) -> str:
    """Seconds for people: '3.2 s', '4.5 min', '2.1 h'."""
    return f"{value:.2g} s" if value < 120 else f"{value / 60:.3g} min" if value < 7200 else f"{value / 3600:.3g} h"


def bytes_text(value: float) -> str:
    """Bytes for people: '120 MB'."""
    for unit, size in (("GB", 2**30), ("MB", 2**20), ("kB", 2**10)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f} B"


def default_cost(workload: Workload, *, passes: float = 4.0, driver: str = "") -> Cost:
    """Work linear in the cells plus ``passes`` matvecs; memory a few vectors of n and m floats."""
    m, n = workload.shape
    elements = passes * (n + matvec_elements(workload))
    return Cost(OVERHEAD_SECONDS + SECONDS_PER_ELEMENT * elements, 8.0 * (6 * n + 3 * m),
                driver or f"the domain ({n:,} cells) and the workload ({m:,} queries)")


def tree_cost(workload: Workload, granularity: int, branching: int, *, dense_gram: bool) -> Cost:
    """Greedy-H's weighted hierarchy over at most 4096 units (DAWA: over its buckets); ``dense_gram`` adds
    Greedy-H's unit × unit Gram."""
    m, n = workload.shape
    units = min(n, 4096)
    tree = SECONDS_PER_ELEMENT * (20 * units * granularity + 30 * (n + matvec_elements(workload))
                                  + 40 * n * math.log2(max(n, 2)))  # DAWA's partition and the tree's layout
    memory = 8.0 * (4 * units * granularity / branching + 64 * n + 3 * m)
    if dense_gram:
        memory += 8.0 * units * units  # the unit × unit Gram (dense, MAX_UNITS = 4096)
        tree += SECONDS_PER_ELEMENT * 10 * units * units
    return Cost(OVERHEAD_SECONDS + tree, memory,
                f"granularity={granularity} over {n:,} cells (and the workload, {m:,} queries)")


def sorting_cost(workload: Workload, factor: float) -> Cost:
    """Linear work plus ``factor`` · n log n for a sort or grouping pass over the cells (AHP 10, SReB_GCA 60)."""
    n = workload.shape[1]
    base = default_cost(workload)
    return dataclasses.replace(base, seconds=base.seconds + SECONDS_PER_ELEMENT * factor * n * math.log2(max(n, 2)))


def mechanism_cost(mechanism: Mechanism, workload: Workload) -> Cost:
    """Seconds and peak bytes of one run of ``mechanism`` on ``workload`` (settings checked first): its own
    ``cost`` method, else ``default_cost``.

    Raises:
        ValueError: a setting outside its documented range (``check_parameters``).
    """
    mechanism = check_parameters(mechanism)
    answers = float(workload.shape[0])
    own = getattr(mechanism, "cost", None)
    # past MAX_QUERIES answers check_cost refuses the run whatever it costs, and some models read the workload's rows
    cost = own(workload) if callable(own) and answers <= MAX_QUERIES else default_cost(workload)
    return dataclasses.replace(cost, answers=answers)
