"""MWEM: multiplicative weights with the exponential mechanism (Hardt, Ligett, McSherry, NIPS 2012).

The total is not assumed public: ``total_ratio``·ε buys a noisy total N̂ = Σx + Lap(1/(total_ratio·ε))
(floored at 1), and the synthetic histogram starts uniform with mass N̂. The rest of the budget is split
evenly over ``rounds`` rounds and, inside a round, evenly between

1. selecting the query the current estimate answers worst, by the exponential mechanism with score
   |q(x) − q(A)| (sensitivity = the largest |W_ij|), and
2. measuring it with Laplace noise scaled to that query's sensitivity,

followed by ``update_rounds`` passes of the multiplicative-weights update
A ← A · exp(q (m − q(A)) / (2N̂)), renormalised to N̂, over every measurement so far (DPBench's
variant). The release is the average of the per-round estimates, as in the paper.

With ``public_total=True`` the total is taken as known, as DPBench's MWEM does (dpcomp_core's
``mwemND_engine``): Σx starts the estimate exactly, no budget buys it, and all of ε goes to the rounds.
That is an assumption the user opts into: the release then shows Σx exactly (its estimate sums to it), so it
is ε-DP only for neighbouring data sets of the same, public size (replace-one: one record's value changed),
and every step is calibrated to that relation (a measured row's sensitivity is max − min of its entries; the
selection's is max|Wᵢⱼ| for 0/1 interval rows, 2·max|Wᵢⱼ| otherwise). Under add/remove-one neighbours it
is not differentially private at all; the default (a noisy total) is.

``rounds="auto"`` picks T as DPBench's MWEM* does (Hay et al., SIGMOD 2016: MWEM with T tuned on its data;
the table is dpcomp_core's ``mwemND_adaptive_engine``): by interpolation in records × ε, from 2 rounds below
100 to 140 above 10^7 (1-D; a 2-D input uses DPBench's 2-D table). The records are the noisy total N̂ (or the
public total), already released, so choosing T from them costs no privacy (post-processing).

The estimate stays constant on the "atoms" (cells that every measured query treats alike), so the
updates run on at most 2T + 1 atoms for range workloads instead of n cells.

>>> import numpy as np
>>> from dplens.core.queries.workloads import Prefix
>>> release = MWEM().run(np.arange(8.0), Prefix(8), 1.0, np.random.default_rng(0))
>>> release.privacy_loss <= 1.0, round(float(release.estimate.sum()), 6) > 0
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dplens.core.mechanisms.contract import (
    FLAG_RANGE,
    RATIO_RANGE,
    Range,
    Release,
    check_inputs,
    check_ratio,
    exponential_mechanism,
    setting,
)
from dplens.core.mechanisms.cost_model import OVERHEAD_SECONDS, SECONDS_PER_ELEMENT, Cost, matvec_elements
from dplens.core.mechanisms.measurement import (
    LaplaceMeasurement,
    MeasurementRecord,
    NoisyAnswers,
    PrivateChoice,
    pure_epsilon,
    stated_at,
)
from dplens.core.privacy.definitions import Privacy, PureDP
from dplens.core.queries.workloads import (
    Ranges,
    Workload,
    as_intervals,
    max_abs_entry,
    row_range,
)
from dplens.core.validate import integer

# DPBench's MWEM* rule (dpcomp_core's mwemND_adaptive_engine): rounds T at records × ε, interpolated linearly
AUTO_ROUNDS = {
    1: ((0.0, 1.0, 10.0, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e20),
        (2, 2, 2, 4, 8, 12, 60, 80, 140, 140, 140, 140)),
    2: ((0.0, 500.0, 1e3, 5e3, 1e4, 1e5, 5e5, 1e6, 5e6, 1e7, 1e8, 1e20),
        (12, 12, 12, 32, 32, 60, 120, 140, 140, 140, 140, 140)),
}
MAX_AUTO_ROUNDS = 140


def auto_rounds(total: float, epsilon: float, dimensions: int = 1) -> int:
    """DPBench's MWEM* number of rounds for ``total`` records at ``epsilon`` (its 1-D or 2-D table).

    >>> auto_rounds(190_000, 0.1), auto_rounds(190_000, 1.0), auto_rounds(2_000, 1.0, dimensions=2)
    (16, 62, 17)
    """
    scale_epsilon, rounds = AUTO_ROUNDS[2 if dimensions >= 2 else 1]
    return int(np.interp(max(total, 0.0) * epsilon, scale_epsilon, rounds))


def _interval(row: np.ndarray) -> tuple[int, int] | None:
    """(start, stop) when the row is the 0/1 indicator of cells start … stop − 1, else None."""
    cells = np.flatnonzero(row)
    if cells.size and cells[-1] - cells[0] + 1 == cells.size and np.all(row[cells] == 1):
        return int(cells[0]), int(cells[-1]) + 1
    return None


def _query_row(workload: Workload, index: int, spans: Ranges | None = None) -> np.ndarray:
    if spans is not None:  # an interval row (as_intervals): set its indicator, skip the O(n + m) rmatvec
        row = np.zeros(workload.shape[1])
        row[spans.lo[index]:spans.hi[index] + 1] = 1.0
        return row
    unit = np.zeros(workload.shape[0])
    unit[index] = 1.0
    return workload.rmatvec(unit)


@dataclass(frozen=True)
class MWEM:
    """MWEM with a noisy total (``total_ratio`` of ε) and history-wide MW updates.

    Data-dependent, so ``expected_mse`` is None.
    """

    summary: ClassVar[str] = "MWEM: learns a synthetic histogram by repeatedly fixing the worst-answered query."

    rounds: int | str = setting(10, Range(1, 1000, integer=True, choices=("auto",)))
    total_ratio: float = setting(0.05, RATIO_RANGE)
    update_rounds: int = setting(100, Range(1, 1000, integer=True))
    average: bool = setting(False, FLAG_RANGE)
    public_total: bool = setting(False, FLAG_RANGE)
    name: str = "mwem"
    data_dependent: bool = True

    def __post_init__(self) -> None:
        if self.rounds != "auto":
            integer("rounds", self.rounds)
        integer("update_rounds", self.update_rounds)
        check_ratio(self.total_ratio, "total_ratio")

    def cost(self, workload: Workload) -> Cost:
        """Rounds × (three matvecs and the compiled multiplicative updates over the atoms of the measured queries)."""
        m, n = workload.shape
        rounds = MAX_AUTO_ROUNDS if self.rounds == "auto" else int(self.rounds)  # "auto": at most the table's top
        updates = int(self.update_rounds)
        per_round = 3 * matvec_elements(workload) + 4 * m + 6 * n
        atoms = min(n, 2 * rounds + 1) if row_range(workload, 0) is not None else n  # interval rows: few atoms
        seconds = SECONDS_PER_ELEMENT * (rounds * per_round + 0.2 * rounds * updates * atoms)  # compiled updates
        return Cost(OVERHEAD_SECONDS * rounds + seconds, 8.0 * (8 * n + 4 * m + rounds * n),
                    f"rounds={rounds} × update_rounds={updates} over {n:,} cells and {m:,} queries")

    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release:
        dimensions = np.ndim(x)
        x, epsilon = check_inputs(x, workload, privacy)
        n = x.size
        spans = as_intervals(workload)  # interval rows are set directly, their spans known (no scans)
        sensitivity = max_abs_entry(workload)
        if self.public_total:  # DPBench's assumption, opted into: Σx is public, neighbours keep it (replace-one)
            epsilon_total, total = 0.0, max(float(x.sum()), 1.0)
            records: list[MeasurementRecord] = []
            # a score |q(x) − q(A)| moves by max(q) − min(q) when one record changes cell: ≤ max|q| for 0/1 rows
            sensitivity = sensitivity if spans is not None else 2.0 * sensitivity
        else:
            epsilon_total = self.total_ratio * epsilon
            total_measurement = LaplaceMeasurement(1.0 / epsilon_total)
            total = max(float(total_measurement.noisy(float(x.sum()), rng)), 1.0)
            records = [NoisyAnswers("the total", total_measurement, 1.0, np.array([total]))]
        # "auto": from the total already released (noisy, or public by assumption), so no further privacy cost
        rounds = auto_rounds(total, epsilon, dimensions) if self.rounds == "auto" else int(self.rounds)
        epsilon_round = (epsilon - epsilon_total) / rounds
        epsilon_select = epsilon_measure = epsilon_round / 2
        true_answers = workload.matvec(x)
        estimate = np.full(n, total / n)
        average = np.zeros(n)
        rows, measured = [], []
        atom_of = np.zeros(n, dtype=np.int64)
        ends = {0, n}
        # while every measured query is an interval: the atoms are segments
        intervals: list[tuple[int, int]] | None = []
        candidates = np.ones(true_answers.size, dtype=bool)
        for _ in range(rounds):
            if not candidates.any():  # every query measured: later rounds would only re-measure
                candidates[:] = True
            scores = np.abs(true_answers - workload.matvec(estimate))
            remaining = np.flatnonzero(candidates)
            chosen = int(remaining[exponential_mechanism(scores[remaining], epsilon_select, sensitivity, rng)])
            candidates[chosen] = False  # a measured query is no longer a candidate (DPBench's variant)
            records.append(PrivateChoice(f"query {chosen}, chosen by the exponential mechanism", epsilon_select))
            row = _query_row(workload, chosen, spans)
            # the query's own sensitivity: max|q| under add/remove, max(q) − min(q) under replace-one
            row_sensitivity = float(row.max() - row.min()) if self.public_total else float(np.abs(row).max())
            scale = row_sensitivity / epsilon_measure
            rows.append(row)
            if scale > 0:
                measurement = LaplaceMeasurement(scale)
                measured.append(float(measurement.noisy(float(true_answers[chosen]), rng)))
                records.append(NoisyAnswers(f"query {chosen}", measurement, row_sensitivity, np.array(measured[-1:])))
            else:  # a query that no one record can move (all zero; constant when the total is public): no noise
                measured.append(float(true_answers[chosen]))
            # atoms: cells that every measured query treats alike (the new row refines the old atoms)
            span = (int(spans.lo[chosen]), int(spans.hi[chosen]) + 1) if spans is not None else _interval(row)
            if intervals is not None and span is not None:
                intervals.append(span)
                ends.update(span)
                bounds = np.array(sorted(ends))
                first, atom_of = bounds[:-1], np.repeat(np.arange(bounds.size - 1), np.diff(bounds))
                runs = np.searchsorted(bounds, np.array(intervals)).tolist()  # (first atom, stop atom) per query
            else:
                intervals = runs = None
                _, value = np.unique(row, return_inverse=True)
                _, first, atom_of = np.unique(atom_of * (int(value.max()) + 1) + value.ravel(),
                                              return_index=True, return_inverse=True)
                atom_of = atom_of.ravel()
            estimate = self._update(estimate, first, atom_of, rows, measured, total, runs)
            average += estimate
        estimate = average / rounds if self.average else estimate
        # sequential composition over the rounds: the worst case over the queries the rounds could have chosen, so
        # each measurement counts at its query's own sensitivity (plus the total's, when it is measured)
        loss = pure_epsilon(records)
        total_key = "total" if self.public_total else "noisy_total"
        release = Release(self.name, PureDP(epsilon), loss, workload.matvec(estimate), estimate,
                          {"rounds": self.rounds, "total_ratio": self.total_ratio,
                           "update_rounds": self.update_rounds, "average": self.average,
                           "public_total": self.public_total,
                           **({"rounds_used": rounds} if self.rounds == "auto" else {}),
                           "neighbouring": "replace_one" if self.public_total else "add_remove", total_key: total},
                          {"selected_rows": len(rows)}, workload=workload, measurements=tuple(records))
        return stated_at(release, privacy)

    def _update(self, estimate: np.ndarray, first: np.ndarray, atom_of: np.ndarray, rows: list[np.ndarray],
                measured: list[float], total: float, runs: list[tuple[int, int]] | None) -> np.ndarray:
        """``update_rounds`` MW passes over all measurements from the current estimate, on the atoms.

        The estimate is constant on the atoms of the earlier rows, which the current atoms refine.
        """
        size = np.bincount(atom_of).astype(float)
        queries = [row[first] for row in rows]     # query j's value on each atom
        # the exponent is clipped only to keep floats finite when the noise dwarfs the total
        limits = [30.0 / max(float(np.abs(q).max()), 1e-300) for q in queries]
        mass = size * estimate[first]              # estimate mass per atom
        half_inverse_total = 1.0 / (2.0 * total)
        if runs is not None:
            mass = self._interval_passes(mass, runs, measured, total, half_inverse_total)
        elif all(np.all((q == 0) | (q == 1)) for q in queries):
            mass = self._counting_passes(mass, queries, measured, total, half_inverse_total)
        else:
            for _ in range(self.update_rounds):
                for query, answer, limit in zip(queries, measured, limits, strict=True):
                    error = (answer - float(query @ mass)) * half_inverse_total
                    mass *= np.exp(query * max(-limit, min(limit, error)))
                    mass *= total / mass.sum()
        return (mass / size)[atom_of]

    def _counting_passes(self, mass: np.ndarray, queries: list[np.ndarray], measured: list[float], total: float,
                         half_inverse_total: float) -> np.ndarray:
        """The same passes for 0/1 queries: only the atoms inside a query change, and the normalisation is
        carried as the running sum S (A = total · mass / S), renormalised once per pass (compiled loop;
        the exponent is clipped to ±30 only to keep floats finite when noise dwarfs the total)."""
        from dplens.core.mechanisms.kernels import mw_counting_passes

        inside = [np.flatnonzero(q) for q in queries]
        indptr = np.concatenate(([0], np.cumsum([a.size for a in inside]))).astype(np.int64)
        indices = np.concatenate(inside).astype(np.int64) if inside else np.zeros(0, dtype=np.int64)
        targets = np.array([answer * half_inverse_total for answer in measured])
        return mw_counting_passes(np.asarray(mass, dtype=float), indptr, indices, targets, float(total),
                                  self.update_rounds, 30.0)

    def _interval_passes(self, mass: np.ndarray, runs: list[tuple[int, int]], measured: list[float], total: float,
                         half_inverse_total: float) -> np.ndarray:
        """The counting passes when every query covers a run of consecutive atoms (compiled loop)."""
        from dplens.core.mechanisms.kernels import mw_interval_passes

        scaled = [answer * half_inverse_total for answer in measured]
        # the exponent lies in [target − 1/2, target] (share ≤ running): clipping can only bind when a
        # noisy answer dwarfs the total, so the usual case runs the loop without the clip
        if max(map(abs, scaled)) + 0.5 >= 30.0:
            atoms = np.arange(mass.size)
            queries = [((atoms >= a) & (atoms < b)).astype(float) for a, b in runs]
            return self._counting_passes(mass, queries, measured, total, half_inverse_total)
        starts = np.array([a for a, _ in runs], dtype=np.int64)
        stops = np.array([b for _, b in runs], dtype=np.int64)
        return mw_interval_passes(np.asarray(mass, dtype=float), starts, stops, np.array(scaled), float(total),
                                  self.update_rounds)

    def expected_mse(self, workload: Workload, privacy: Privacy | float) -> None:
        return None
