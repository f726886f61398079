"""The papers' small worked examples (Li et al., Huang et al., Chen et al.) for showing each mechanism's structure."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dplens.core.mechanisms.sreb_gca import expected_bin_error, ggs, groups_from_cuts
from dplens.core.papers.literal import wda_synthetic_workload
from dplens.core.queries.workloads import Explicit


def example_workloads() -> dict[str, Explicit]:
    """The papers' small worked examples, for showing each mechanism's structure.

    >>> sorted(example_workloads())[:2]
    ['OM Algorithm 3 counterexample', 'OM Example 1']
    """
    fig1 = np.zeros((8, 6))
    for row, cols in enumerate([[0, 1], [0, 1, 2], [1, 2], [2], [2], [3], [0, 1], [5]]):
        fig1[row, cols] = 1
    census = np.zeros((6, 8))  # cells Sex × Race{W,B} × Salary{H,L}; q5 = q1+q3, q6 = q2+q4
    for q in range(4):
        census[q, [q, 4 + q]] = 1
    census[4], census[5] = census[0] + census[2], census[1] + census[3]
    example1 = np.array([[.3657, 0, .9812, 0], [0, .0645, 0, 0], [0, .5879, .7602, 0], [0, 0, 0, .7310],
                         [0, .7313, 0, 0], [0, 0, .7122, .9053]])
    return {"WDA Fig. 1": Explicit(fig1, label="WDA Fig. 1"),
            "WDA 12×13 synthetic": wda_synthetic_workload(),
            "OM Example 1": Explicit(example1, label="OM Example 1"),
            "OM census": Explicit(census, label="OM census (intro)"),
            "OM Algorithm 3 counterexample": Explicit(np.array([[1.0, 1], [1, -1], [2, 0]]),
                                                      label="OM Algorithm 3 counterexample")}


def ggs_example_table(values: np.ndarray, scale: float, error_floor: float = 1.0) -> pd.DataFrame:
    """GGS groups of sorted ``values`` at λ2 = ``scale`` (oracle grouping: no stage-1 noise) with each bin's
    exact expected relative error, next to DP_BASE's λ/max(H, δ). The error is the exact |a| + (λ2/k)·e^{−|a|k/λ2}
    from the proof of Chen et al.'s Theorem 1 (a = bias, k = group size), not the theorem's bound |a| + λ2/k.

    >>> ggs_example_table(np.array([1.0, 1, 2, 3, 8, 9, 10, 100, 120, 1000]), 10.0).group.tolist()
    [0, 0, 0, 0, 1, 1, 1, 2, 3, 4]
    """
    values = np.asarray(values, dtype=float)
    groups = groups_from_cuts(np.arange(values.size), ggs(values, scale, error_floor))
    floor = np.maximum(values, error_floor)
    return pd.DataFrame({"bin value": values,
                         "group": np.concatenate([np.full(g.size, i) for i, g in enumerate(groups)]),
                         "expected relative error": expected_bin_error(values, groups, scale) / floor,
                         "DP_BASE": scale / floor})
