"""Workloads: every implicit operator equals its dense matrix (Hypothesis), the spec parser, the size guards."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dplens.core.queries.workloads import (
    WORKLOAD_PARAMETERS,
    WORKLOADS,
    AllRange,
    Explicit,
    Identity,
    Kron,
    Prefix,
    Ranges,
    Stack,
    Total,
    dense,
    l1_sensitivity,
    l2_sensitivity,
    parse_workload,
    random_range,
    squared_frobenius,
)

PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
sizes = st.integers(1, 9)


def _matrix(draw, m, n, sparse):
    values = draw(st.lists(st.integers(-3, 3), min_size=m * n, max_size=m * n))
    matrix = np.array(values, dtype=float).reshape(m, n)
    return sp.csr_matrix(matrix) if sparse else matrix


@st.composite
def one_d(draw, n=None):
    """A 1-D workload on n cells, of any kind (including the combinators)."""
    n = n or draw(sizes)
    kind = draw(st.sampled_from(["identity", "total", "prefix", "all-range", "ranges", "random-range",
                                 "explicit", "sparse", "stack"]))
    if kind == "identity":
        return Identity(n)
    if kind == "total":
        return Total(n)
    if kind == "prefix":
        return Prefix(n)
    if kind == "all-range":
        return AllRange(n)
    if kind == "ranges":
        ends = np.sort(np.array(draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                                               min_size=1, max_size=8))), axis=1)
        return Ranges(n, ends[:, 0], ends[:, 1])
    if kind == "random-range":
        return random_range(n, draw(st.integers(1, 12)), seed=draw(st.integers(0, 99)))
    if kind in ("explicit", "sparse"):
        return Explicit(_matrix(draw, draw(st.integers(1, 6)), n, kind == "sparse"))
    return Stack(tuple(draw(one_d(n=n)) for _ in range(draw(st.integers(1, 3)))))


@st.composite
def any_workload(draw):
    """1-D workloads, Kronecker products of small factors, and the 2-D registry specs."""
    kind = draw(st.sampled_from(["1-d", "kron", "spec-2d"]))
    if kind == "1-d":
        return draw(one_d())
    if kind == "kron":
        return Kron((draw(one_d(n=draw(st.integers(1, 5)))), draw(one_d(n=draw(st.integers(1, 5))))))
    shape = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    return parse_workload(draw(st.sampled_from(["marginals", "range-2d", "prefix-2d", "identity", "total"])),
                          shape)


@PROPERTY
@given(w=any_workload(), data=st.data())
def test_implicit_operator_equals_its_dense_matrix(w, data):
    matrix = dense(w)
    m, n = w.shape
    assert matrix.shape == (m, n)
    x = np.array(data.draw(st.lists(st.floats(-100, 100), min_size=n, max_size=n)))
    y = np.array(data.draw(st.lists(st.floats(-100, 100), min_size=m, max_size=m)))
    np.testing.assert_allclose(w.matvec(x), matrix @ x, atol=1e-8)
    np.testing.assert_allclose(w.rmatvec(y), matrix.T @ y, atol=1e-8)
    np.testing.assert_allclose(w.column_norms(1), np.abs(matrix).sum(axis=0), atol=1e-9)
    np.testing.assert_allclose(w.column_norms(2), np.sqrt((matrix**2).sum(axis=0)), atol=1e-9)
    assert l1_sensitivity(w) == pytest.approx(np.abs(matrix).sum(axis=0).max())
    assert l2_sensitivity(w) == pytest.approx(np.sqrt((matrix**2).sum(axis=0)).max())
    assert squared_frobenius(w) == pytest.approx((matrix**2).sum())
    assert w.describe()


def test_known_closed_forms(fig1):
    assert AllRange(3).column_norms(1).tolist() == [3.0, 4.0, 3.0]
    assert Prefix(4).rmatvec(np.ones(4)).tolist() == [4.0, 3.0, 2.0, 1.0]
    assert l1_sensitivity(fig1.workload) == 4.0
    assert squared_frobenius(fig1.workload) == 13.0
    np.testing.assert_array_equal(fig1.workload.matvec(fig1.x), fig1.answers)


def test_operators_check_vector_lengths():
    with pytest.raises(ValueError, match=r"x must have shape \(4,\)"):
        Prefix(4).matvec(np.ones(3))
    with pytest.raises(ValueError, match=r"y must have shape \(10,\)"):
        AllRange(4).rmatvec(np.ones(3))
    with pytest.raises(ValueError, match="ord must be 1 or 2"):
        Identity(3).column_norms(3)


@pytest.mark.parametrize("build, message", [
    (lambda: Identity(0), "n must be an integer >= 1, got 0"),
    (lambda: Ranges(4, [2], [1]), "0 <= lo <= hi < n=4"),
    (lambda: Ranges(4, [0], [4]), "0 <= lo <= hi < n=4"),
    (lambda: Explicit(np.zeros((0, 3))), "non-empty 2-D matrix"),
    (lambda: Explicit([[1.0, np.nan]]), "finite"),
    (lambda: Stack((Identity(2), Identity(3))), "share the domain size"),
])
def test_constructors_reject_bad_input(build, message):
    with pytest.raises(ValueError, match=message):
        build()


# ----------------------------------------------------------------------------- parser
@pytest.mark.parametrize("spec, shape, expected", [
    ("identity", (5,), (5, 5)),
    ("total", (5,), (1, 5)),
    ("prefix", 5, (5, 5)),
    ("all-range", (5,), (15, 5)),
    (" Random-Range : m=7, seed=3 ", (50,), (7, 50)),
    ("marginals", (3, 4), (7, 12)),
    ("range-2d", (3, 4), (60, 12)),
    ("prefix-2d", (3, 4), (12, 12)),
    ("identity", (3, 4), (12, 12)),
])
def test_parse_workload_builds_each_registry_entry(spec, shape, expected):
    assert parse_workload(spec, shape).shape == expected


def test_every_registry_entry_has_a_description_and_parses():
    for name, (description, _) in WORKLOADS.items():
        assert description
        if name != "file":
            shape = (4, 5) if "2-D" in description else (20,)
            assert parse_workload(name, shape).shape[1] == int(np.prod(shape))
    assert set(WORKLOAD_PARAMETERS) <= set(WORKLOADS)


def test_random_range_is_seeded():
    a = parse_workload("random-range:m=20,seed=4", (100,))
    b = parse_workload("random-range:m=20,seed=4", (100,))
    c = parse_workload("random-range:m=20,seed=5", (100,))
    x = np.arange(100.0)
    np.testing.assert_array_equal(a.matvec(x), b.matvec(x))
    assert not np.array_equal(a.matvec(x), c.matvec(x))
    # without a seed the ranges come from the rng argument
    d = parse_workload("random-range:m=20", (100,), np.random.default_rng(1))
    e = parse_workload("random-range:m=20", (100,), np.random.default_rng(1))
    np.testing.assert_array_equal(d.matvec(x), e.matvec(x))


@pytest.mark.parametrize("spec, shape, message", [
    ("nonsense", (4,), r"unknown workload 'nonsense'; choose one of identity, "),
    ("random-range:q=3", (4,), r"workload 'random-range' does not take \['q'\]; it takes \['m', 'seed'\]"),
    ("prefix:m=3", (4,), r"workload 'prefix' does not take \['m'\]; it takes none"),
    ("random-range:m", (4,), r"workload parameter 'm' must look like key=value"),
    ("random-range:m=abc", (4,), r"workload parameter m must be an integer, got 'abc'"),
    ("random-range:m=2.5", (4,), r"workload parameter m must be an integer, got '2.5'"),
    ("random-range:seed=x1", (4,), r"workload parameter seed must be an integer, got 'x1'"),
    ("random-range:m=0", (4,), r"m must be an integer >= 1, got 0"),
    ("random-range:m=-5", (4,), r"m must be an integer >= 1, got -5"),
    ("marginals", (16,), r"workload 'marginals' needs a 2-D histogram, got shape \(16,\)"),
    ("range-2d", (16,), r"workload 'range-2d' needs a 2-D histogram"),
    ("prefix-2d", (16,), r"workload 'prefix-2d' needs a 2-D histogram"),
    ("file", (4,), r"workload 'file:' specs are refused here: query files come only from uploads"),
])
def test_parse_workload_errors_name_the_problem(spec, shape, message):
    with pytest.raises(ValueError, match=message):
        parse_workload(spec, shape)


def test_file_workload_reads_query_rows(tmp_path):
    path = tmp_path / "queries.csv"
    path.write_text("a,b,c\n1,1,0\n0,1,1\n1,1,1\n")  # header row is skipped
    w = parse_workload(f"file:{path}", (3,), allow_files=True)
    np.testing.assert_array_equal(dense(w), [[1, 1, 0], [0, 1, 1], [1, 1, 1]])
    assert l1_sensitivity(w) == 3.0
    headerless = tmp_path / "plain.csv"
    headerless.write_text("0.5,0,0\n")
    assert parse_workload(f"file:{headerless}", 3, allow_files=True).matvec(np.array([2.0, 1, 1])).tolist() == [1.0]


@pytest.mark.parametrize("text, message", [
    ("1,1\n0,1\n", "query matrix has 2 columns but the histogram has 3 cells"),
    ("1,x,0\n", "query-matrix CSV must hold only numbers"),
    ("\n\n", "query-matrix CSV is empty"),
])
def test_file_workload_errors(tmp_path, text, message):
    path = tmp_path / "q.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        parse_workload(f"file:{path}", (3,), allow_files=True)


def test_file_workload_errors_never_quote_the_content(tmp_path):
    path = tmp_path / "secret.csv"
    path.write_text("a,b,c\nroot:x:0:0,root,/bin/bash\n")
    with pytest.raises(ValueError, match="data row 1, column 1 is not a number") as err:
        parse_workload(f"file:{path}", (3,), allow_files=True)
    assert "root" not in str(err.value)


def test_file_workload_missing_file_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="cannot read query-matrix file .*missing.csv"):
        parse_workload(f"file:{tmp_path / 'missing.csv'}", (3,), allow_files=True)


# ----------------------------------------------------------------------------- scale
def test_all_range_on_4096_bins_is_never_materialised():
    w = parse_workload("all-range", (4096,))
    m, n = w.shape
    assert (m, n) == (4096 * 4097 // 2, 4096)
    with pytest.raises(ValueError, match="dense\\(\\) refuses"):
        dense(w)
    x = np.arange(n, dtype=float)
    tracemalloc.start()
    try:
        answers = w.matvec(x)
        back = w.rmatvec(np.ones(m))
        norms = w.column_norms(1), w.column_norms(2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the output alone is m floats (67 MB); the matrix would be m × n × 8 bytes (275 GB)
    assert peak < 5 * m * 8 < m * n * 8 / 500
    c = np.concatenate(([0.0], np.cumsum(x)))
    assert answers[0] == 0.0 and answers[n - 1] == c[n] and answers[-1] == x[-1]
    np.testing.assert_allclose(back, norms[0])  # Wᵀ1 counts the ranges containing each column
    assert l1_sensitivity(w) == 2048 * 2049
