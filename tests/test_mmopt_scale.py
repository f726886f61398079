"""mm-opt at scale: the compiled objective and L-BFGS steps find the same strategy as the NumPy code, bit for bit.

The reference optimiser below is the projected L-BFGS as it was before the compiled steps (matrix.py at commit
7a269c0), kept verbatim as the oracle, driven by the NumPy objective ``matrix._objective`` (the generic path, on the
workload's ``gram_rows``). Sizes are small and seeded; no timing is asserted (bench/bench_mmopt.py measures it).
"""

from __future__ import annotations

import dataclasses
import tracemalloc

import numpy as np
import pytest
from scipy.linalg.blas import daxpy, ddot

from dplens.core.analysis.cost import RunTooLargeError, check_cost, estimate_cost
from dplens.core.data.limits import MAX_QUERIES
from dplens.core.mechanisms import MECHANISMS, matrix, matrix_kernels
from dplens.core.mechanisms.matrix import MEMORY, WINDOW, _objective, objective_function, optimise_p_identity
from dplens.core.privacy.definitions import PureDP
from dplens.core.queries.workloads import (
    AllRange,
    Identity,
    Prefix,
    dense,
    gram_rows,
    parse_workload,
    query_rows,
    random_range,
    row_range,
    separable_gram,
)
from dplens.core.release.kernel import HistogramRequest, preflight

RANGE_KINDS = (Prefix, AllRange)


def reference_lbfgs(function, x, iterations, tolerance, window=None):
    """matrix._projected_lbfgs before the compiled steps (commit 7a269c0), verbatim."""
    window = WINDOW if window is None else window
    size = x.size
    x = np.maximum(x, 0.0)
    value, grad = function(x)
    s_pairs, y_pairs = np.empty((MEMORY, size)), np.empty((MEMORY, size))
    rho, alpha, y_norms = np.empty(MEMORY), np.empty(MEMORY), np.empty(MEMORY)
    stored, head = 0, 0
    history = [value]
    for _ in range(iterations):
        free = (x > 0.0) | (grad <= 0.0)
        q = grad * free
        order = [(head - 1 - i) % MEMORY for i in range(stored)]
        for i in order:
            alpha[i] = rho[i] * ddot(s_pairs[i], q)
            q = daxpy(y_pairs[i], q, a=-alpha[i])
        q *= 1.0 / (rho[order[0]] * y_norms[order[0]]) if stored else (
            0.1 / max(np.abs(grad).max(), 1e-300))
        for i in reversed(order):
            q = daxpy(s_pairs[i], q, a=alpha[i] - rho[i] * ddot(y_pairs[i], q))
        q *= free
        if ddot(grad, q) <= 0.0:
            q, stored = grad * free * (0.1 / max(np.abs(grad).max(), 1e-300)), 0
        step, grad_x = 1.0, ddot(grad, x)
        while True:
            trial = np.subtract(x, q) if step == 1.0 else np.subtract(x, step * q)
            np.maximum(trial, 0.0, out=trial)
            trial_value, trial_grad = function(trial)
            if trial_value <= value + 1e-4 * (ddot(grad, trial) - grad_x):
                break
            step *= 0.5
            if step < 1e-10:
                return x, value
        s = np.subtract(trial, x, out=s_pairs[head])
        y = np.subtract(trial_grad, grad, out=y_pairs[head])
        curvature, y_norms[head] = ddot(s, y), ddot(y, y)
        if curvature > 1e-12 * y_norms[head]:
            rho[head] = 1.0 / curvature
            head, stored = (head + 1) % MEMORY, min(stored + 1, MEMORY)
        x, value, grad = trial, trial_value, trial_grad
        history.append(value)
        if len(history) > window and history[-1 - window] - value <= tolerance * window * value:
            break
    return x, value


def reference_strategy(workload, p: int, seed: int = 0) -> tuple[np.ndarray, float]:
    """One start of ``optimise_p_identity`` as it was: the reference L-BFGS on the NumPy objective."""
    n = workload.shape[1]
    gram_diag = workload.column_norms(2) ** 2
    setting = matrix.settings(n, p)
    start = np.random.default_rng(seed).random(p * n)
    if setting.start != 1.0:
        start *= setting.start
    return reference_lbfgs(lambda flat: _objective(flat, p, workload, gram_diag), start, setting.iterations,
                           setting.tolerance, setting.window)


@pytest.fixture
def compiled(monkeypatch):
    """The compiled passes at every size (by default only from COMPILED_ENTRIES entries of Θ on)."""
    monkeypatch.setattr(matrix, "COMPILED_ENTRIES", 0)


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("kind", RANGE_KINDS, ids=lambda k: k.__name__)
@pytest.mark.parametrize(("n", "p"), [(2, 1), (7, 3), (100, 5), (300, 8), (1000, 4)])
def test_compiled_objective_is_the_numpy_objective_bit_for_bit(kind, n, p):
    workload = kind(n)
    theta = np.random.default_rng(n + p).random(p * n) * np.where(np.arange(p * n) % 7 == 0, 0.0, 1.0)
    function = objective_function(workload, p)
    assert isinstance(function, matrix._SeparableObjective)
    value, grad = function(theta)
    ref_value, ref_grad = _objective(theta, p, workload, workload.column_norms(2) ** 2)
    assert value == ref_value
    assert np.array_equal(grad, ref_grad)
    value_again, _ = function(theta)  # the reused buffers leave no trace
    assert value_again == value


def test_small_strategies_and_other_workloads_keep_the_numpy_objective():
    assert not isinstance(objective_function(Prefix(1024), 64), matrix._SeparableObjective)  # numba not worth loading
    assert isinstance(objective_function(Prefix(2048), 64), matrix._SeparableObjective)
    assert separable_gram(random_range(16, 5, seed=1)) is None
    assert separable_gram(Identity(4)) is None
    assert not isinstance(objective_function(random_range(4096, 5, seed=1), 64), matrix._SeparableObjective)
    assert not isinstance(objective_function(Prefix(1), 2**17), matrix._SeparableObjective)  # one column


@pytest.mark.parametrize("kind", RANGE_KINDS, ids=lambda k: k.__name__)
def test_separable_gram_is_the_dense_gram(kind):
    left, right = separable_gram(kind(9))
    gram = dense(kind(9)).T @ dense(kind(9))
    i, j = np.indices(gram.shape)
    np.testing.assert_array_equal(left[np.minimum(i, j)] * right[np.maximum(i, j)], gram)


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("kind", RANGE_KINDS, ids=lambda k: k.__name__)
@pytest.mark.parametrize("n", [256, 512])
def test_optimiser_finds_the_strategy_the_numpy_code_found(kind, n):
    # same seeded start, same settings: every iterate is bit for bit the old one, so the strategy and its trace are
    # too (the 1e-9 the scale work promised, with room: a 1e-16 change of the rounding moves the stop by 0.01-0.3 %)
    workload = kind(n)
    p = matrix.auto_p(n)
    theta, trace = matrix.single_threaded(reference_strategy, workload, p)  # BLAS threads change the sums
    strategy = matrix.single_threaded(optimise_p_identity, workload, p, 1, 0)
    assert strategy.trace == pytest.approx(trace, rel=1e-9)
    assert strategy.trace == trace
    assert np.array_equal(strategy.theta, theta.reshape(p, n))


@pytest.mark.parametrize("count", [*range(1, 20), 127, 128, 129, 136, 255, 256, 257, 1000, 4099, 70_000])
def test_row_sum_is_numpys_pairwise_sum(count):
    rows = np.random.default_rng(count).standard_normal((2, count)) * 10.0 ** np.random.default_rng(1).uniform(
        -6, 6, (2, count))
    assert [matrix_kernels.row_sum(row) for row in rows] == rows.sum(axis=1).tolist()


def test_projected_step_is_numpys_subtract_and_maximum():
    rng = np.random.default_rng(5)
    x, q = rng.standard_normal(64), rng.standard_normal(64)
    x[:8], q[:4], x[8:12], q[12:16], x[16:20] = -0.0, 0.0, np.nan, np.nan, q[16:20]
    for step in (1.0, 0.5, 2.0**-20):
        expected = np.subtract(x, q) if step == 1.0 else np.subtract(x, step * q)
        np.maximum(expected, 0.0, out=expected)
        out = np.empty_like(x)
        matrix_kernels.projected_step(x, q, step, out)
        assert np.array_equal(out.view(np.int64), expected.view(np.int64))  # signs of zero and NaNs too


# ----------------------------------------------------------------------------- all-range beyond MAX_QUERIES
BIG = 16384  # all-range: 134,225,920 queries, 8 × MAX_QUERIES
OVER = 5793  # the smallest all-range past MAX_QUERIES (16,782,321 queries)


def test_all_range_is_an_implicit_operator_at_any_size():
    workload = parse_workload("all-range", (BIG,))
    assert workload.shape == (BIG * (BIG + 1) // 2, BIG) and workload.shape[0] > MAX_QUERIES
    k = np.arange(BIG, dtype=float)
    np.testing.assert_array_equal(workload.column_norms(1), (k + 1) * (BIG - k))
    left, right = separable_gram(workload)
    assert left[-1] == BIG and right[0] == BIG
    v = np.random.default_rng(0).random((2, BIG))
    cells = np.arange(BIG)
    columns = np.stack([left[np.minimum(cells, j)] * right[np.maximum(cells, j)] for j in range(3)], axis=1)
    np.testing.assert_allclose(gram_rows(workload, v)[:, :3], v @ columns, rtol=1e-12)
    last = workload.shape[0] - 1
    assert row_range(workload, last) == (BIG - 1, BIG - 1) and row_range(workload, BIG) == (1, 1)
    np.testing.assert_array_equal(query_rows(workload, BIG - 1, BIG + 1).sum(axis=0), [BIG, 1])  # [0, n−1], [1, 1]


def test_all_range_refuses_to_list_its_queries_naming_the_limit():
    workload = AllRange(BIG)
    with pytest.raises(ValueError, match=r"all-range on n=16384 has 134,225,920 queries, more than "
                                         r"MAX_QUERIES=16,777,216 .*its answers would list one value per query"):
        workload.matvec(np.ones(BIG))
    with pytest.raises(ValueError, match="its end points would list one value per query"):
        workload.intervals()
    small = AllRange(6)  # below the limit nothing changed
    np.testing.assert_array_equal(small.matvec(np.arange(6.0)), dense(small) @ np.arange(6.0))


@pytest.mark.parametrize("name", ["laplace-on-answers", "identity", "mm-opt", "hb", "wda", "dawa"])
def test_every_run_past_max_queries_is_refused_before_any_work(name):
    mechanism = MECHANISMS[name]
    workload = AllRange(BIG)
    with pytest.raises(RunTooLargeError, match=r"would release 134,225,920 answers \(one per query of the workload\), "
                                               r"more than MAX_QUERIES=16,777,216"):
        check_cost(estimate_cost(mechanism, workload))  # wda's own model would read the rows: not asked
    with pytest.raises(ValueError, match=r"a run would release 134,225,920 answers"):
        mechanism.run(np.ones(BIG), workload, 1.0, np.random.default_rng(0))  # mm-opt: before its optimisation


def test_the_release_kernel_refuses_it_in_preflight():
    request = HistogramRequest("mm-opt", {}, PureDP(1.0), AllRange(BIG), "all-range", 0.0)
    assert preflight(request).refusal.startswith("mm-opt on this input would release 134,225,920 answers")


def test_mm_opt_expected_mse_past_max_queries_needs_no_rows():
    # a small p keeps it quick; the strategy and its error come from the Gram alone: nothing of length m is built
    mechanism = dataclasses.replace(MECHANISMS["mm-opt"], p=2)
    workload = AllRange(OVER)
    tracemalloc.start()
    try:
        mse = mechanism.expected_mse(workload, 1.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * workload.shape[0] / 4  # a quarter of one float per query
    strategy = mechanism.strategy(workload)
    trace, _ = _objective(strategy.theta.ravel(), 2, workload, workload.column_norms(2) ** 2)  # the NumPy path
    assert mse == pytest.approx(2.0 * trace / workload.shape[0], rel=1e-12)
    identity = MECHANISMS["identity"].expected_mse(workload, 1.0)
    assert 0 < mse < identity  # p = 2 already beats the identity strategy on all ranges
