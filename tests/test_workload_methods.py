"""Workload facts read by other modules instead of switching on a workload's type: recipe, queries_are_cells,
sparse_row, sparse_native, all_ranges, the grid and the marginals' names (dplens.core.queries.workloads)."""

import numpy as np
import pytest
import scipy.sparse as sp

from dplens.core.analysis.selection import _analytic_error
from dplens.core.analysis.views import row_overview
from dplens.core.mechanisms.laplace import LaplaceIdentity
from dplens.core.queries.workloads import (
    AllRange,
    Explicit,
    Identity,
    Kron,
    Prefix,
    Ranges,
    Ranges2D,
    Stack,
    Total,
    all_ranges,
    cell_gram_matrix,
    dense,
    gram_matrix,
    gram_parts,
    marginal_names,
    queries_are_cells,
    random_range,
    recipe,
    sparse_native,
    sparse_row,
    workload_grid,
)
from dplens.core.release.config import MAX_RECIPE_NUMBERS, build_recipe, check_recipe, recipe_of


class Reversal:
    """A workload defined outside workloads.py (the protocol only): it gets the default facts."""

    shape = (2, 2)

    def matvec(self, x):
        return np.asarray(x, dtype=float)[::-1].copy()

    def rmatvec(self, y):
        return np.asarray(y, dtype=float)[::-1].copy()

    def column_norms(self, ord=1):
        return np.ones(2)

    def describe(self):
        return "reversal"


RECIPES = {
    "ranges": (Ranges(6, [1, 0], [4, 0], label="drawn"), {"ranges": [[1, 4], [0, 0]], "n": 6, "label": "drawn"}),
    "dense matrix": (Explicit(np.array([[0.0, 2.5], [-1.0, 0.0]]), label="file"),
                     {"matrix": {"shape": [2, 2], "entries": [[0, 1, 2.5], [1, 0, -1.0]]}, "label": "file"}),
    "sparse matrix": (Explicit(sp.csr_matrix(np.array([[0.0, 3.0]])), label="file"),
                      {"matrix": {"shape": [1, 2], "entries": [[0, 1, 3.0]]}, "label": "file"}),
    "kron": (Kron((Ranges(2, [0], [1]), Ranges(3, [2], [2]))),
             {"kron": [{"ranges": [[0, 1]], "n": 2, "label": "ranges"},
                       {"ranges": [[2, 2]], "n": 3, "label": "ranges"}]}),
    "nested stack": (Stack((Stack((Ranges(2, [1], [1]),)), Explicit(np.eye(2)[:1]))),
                     {"stack": [{"stack": [{"ranges": [[1, 1]], "n": 2, "label": "ranges"}]},
                                {"matrix": {"shape": [1, 2], "entries": [[0, 0, 1.0]]}, "label": "explicit"}]}),
}


@pytest.mark.parametrize("case", RECIPES, ids=RECIPES)
def test_the_recipe_is_the_workloads_own_and_recipe_of_returns_it(case):
    workload, expected = RECIPES[case]
    assert workload.recipe() == recipe(workload) == recipe_of(workload) == expected
    assert check_recipe(recipe_of(workload)) == expected


@pytest.mark.parametrize(("workload", "name"), [
    (Identity(3), "Identity"), (Total(3), "Total"), (Prefix(3), "Prefix"), (AllRange(3), "AllRange"),
    (Reversal(), "Reversal"), (Ranges2D((2, 2), [0], [1], [0], [1]), "Ranges2D"),
    (Stack((Ranges(3, [0], [1]), Prefix(3))), "Prefix"),
], ids=["identity", "total", "prefix", "all-range", "outside", "ranges-2d", "stack with prefix"])
def test_workloads_without_a_recipe_name_their_type_and_the_way_out(workload, name):
    with pytest.raises(ValueError, match=f"a {name} workload has no config recipe; add it from the registry"):
        recipe_of(workload)


def test_the_recipe_bound_is_checked_at_every_level():
    third = MAX_RECIPE_NUMBERS // 5  # 3 numbers per nonzero: one part fits, two do not
    part = Explicit(np.ones((1, third)))
    assert len(recipe_of(Stack((part,)))["stack"]) == 1
    with pytest.raises(ValueError, match=f"needs {6 * third:,} numbers.*MAX_RECIPE_NUMBERS={MAX_RECIPE_NUMBERS:,}"):
        recipe_of(Stack((Stack((part, part)), part)))  # the inner stack is already too large: its own total
    with pytest.raises(ValueError, match=f"needs {2 * (MAX_RECIPE_NUMBERS // 2 + 1):,} numbers"):
        recipe_of(Ranges(2, np.zeros(MAX_RECIPE_NUMBERS // 2 + 1, dtype=int), np.ones(MAX_RECIPE_NUMBERS // 2 + 1,
                                                                                           dtype=int)))


def test_a_kron_recipe_rebuilds_the_same_workload():
    workload = RECIPES["kron"][0]
    rebuilt = build_recipe(recipe_of(workload), (2, 3))
    np.testing.assert_array_equal(rebuilt.matvec(np.arange(6.0)), workload.matvec(np.arange(6.0)))


@pytest.mark.parametrize(("workload", "cells"), [
    (Identity(4), True), (Prefix(4), False), (Total(4), False), (Explicit(np.eye(4)), False),
    (Kron((Identity(2), Identity(2))), False), (Ranges(4, [0, 1, 2, 3], [0, 1, 2, 3]), False), (Reversal(), False),
], ids=["identity", "prefix", "total", "explicit eye", "kron of identities", "unit ranges", "outside"])
def test_queries_are_cells_is_declared_by_the_identity_alone(workload, cells):
    assert queries_are_cells(workload) is cells
    # only then does the Laplace histogram's per-bin noise give a plain-Laplace bound on the answers
    error = _analytic_error(LaplaceIdentity(), workload, "mae", 0.9, True)
    assert (error is not None and error[1] == "laplace bound") is cells


def test_identity_answers_carry_the_bins_laplace_bound():
    error_at, how = _analytic_error(LaplaceIdentity(), Identity(10), "max_abs", 0.95, True)
    assert how == "laplace bound"
    assert error_at(0.5) == pytest.approx(2.0 * np.log(10 / 0.05))  # b·ln(m/β), b = 1/ε


def test_sparse_row_reads_the_stored_nonzeros_in_column_order():
    # a CSR matrix whose row 0 stores its columns out of order
    matrix = sp.csr_matrix((np.array([5.0, 2.0, 7.0]), np.array([3, 1, 0]), np.array([0, 2, 3])), shape=(2, 4))
    columns, values = sparse_row(Explicit(matrix), 0)
    assert columns.tolist() == [1, 3]
    assert values.tolist() == [2.0, 5.0]
    columns, values = sparse_row(Explicit(matrix), 1)
    assert (columns.tolist(), values.tolist()) == ([0], [7.0])


@pytest.mark.parametrize("workload", [Explicit(np.eye(3)), Prefix(3), Ranges(3, [0], [2]), Reversal(),
                                      Stack((Explicit(sp.csr_matrix(np.eye(3))),))],
                         ids=["dense explicit", "prefix", "ranges", "outside", "stack of sparse"])
def test_sparse_row_is_none_unless_w_is_held_as_a_sparse_matrix(workload):
    assert sparse_row(workload, 0) is None


def test_row_overview_of_a_sparse_matrix_matches_the_same_matrix_held_dense(rng):
    values = rng.random((12, 40)) * (rng.random((12, 40)) < 0.3)
    x = rng.random(40) * 10
    sparse, dense = (row_overview(Explicit(m), x, max_rows=6, max_columns=8) for m in (sp.csr_matrix(values), values))
    for key in ("index", "cells", "first", "last", "group"):
        np.testing.assert_array_equal(sparse[key], dense[key])
    for key in ("rows", "answer"):
        np.testing.assert_allclose(sparse[key], dense[key], rtol=1e-12)


GRAM_CASES = {
    "explicit dense": Explicit(np.arange(12.0).reshape(3, 4) % 3),
    "explicit sparse": Explicit(sp.csr_matrix(np.arange(12.0).reshape(3, 4) % 3)),
    "kron": Kron((Prefix(2), Explicit(np.array([[1.0, 0, 2], [0, 1, 1]])))),
    "prefix": Prefix(5),
}


@pytest.mark.parametrize("name", GRAM_CASES)
def test_the_gram_matrix_is_w_transpose_w(name):
    workload = GRAM_CASES[name]
    matrix = dense(workload)
    np.testing.assert_allclose(gram_matrix(workload), matrix.T @ matrix)
    np.testing.assert_allclose(cell_gram_matrix(workload), matrix.T @ matrix)


def test_a_stacks_gram_is_the_sum_of_its_parts_grams():
    stack = Stack((Prefix(4), Identity(4), Total(4)))
    assert gram_parts(stack) == stack.parts and gram_parts(Prefix(4)) == (Prefix(4),)
    matrix = dense(stack)
    np.testing.assert_allclose(sum(gram_matrix(p) for p in gram_parts(stack)), matrix.T @ matrix)


def test_all_ranges_is_declared_by_all_range_alone():
    assert AllRange(4).all_ranges and all_ranges(AllRange(4))
    assert not any(all_ranges(w) for w in (Prefix(4), random_range(4, 3, seed=0), Identity(4), Total(4), Reversal()))


def test_sparse_native_is_declared_by_ranges_and_explicit_matrices_alone():
    native = (Ranges(4, [0], [2]), Explicit(np.eye(4)), Explicit(sp.csr_matrix(np.eye(4))), random_range(4, 3, seed=0))
    assert all(sparse_native(w) for w in native)
    assert not any(sparse_native(w) for w in (Prefix(4), Identity(4), AllRange(4), Stack((Ranges(4, [0], [2]),)),
                                               Kron((Identity(2), Identity(2))), Reversal()))


GRIDS = {
    "prefix": (Prefix(6), (1, 6)),
    "kron": (Kron((Prefix(3), Identity(4))), (3, 4)),
    "stack holding a kron": (Stack((Prefix(6), Kron((Total(2), Prefix(3))))), (2, 3)),
    "stack of two krons": (Stack((Kron((Identity(2), Total(3))), Kron((Total(3), Identity(2))))), (2, 3)),
    "nested stack": (Stack((Stack((Kron((Identity(2), Total(3))),)), Prefix(6))), (2, 3)),
    "ranges-2d": (Ranges2D((2, 3), [0], [1], [0], [2]), (2, 3)),  # rectangles live on their grid
    "stack holding rectangles": (Stack((Prefix(6), Ranges2D((2, 3), [0], [1], [0], [2]))), (2, 3)),
    "outside": (Reversal(), (1, 2)),
}


@pytest.mark.parametrize("name", GRIDS, ids=GRIDS)
def test_the_grid_is_the_first_2d_part_s(name):
    workload, grid = GRIDS[name]
    assert workload_grid(workload) == grid


def test_marginal_names_are_those_of_a_table_workload_alone():
    from dplens.core.data.domain import Domain
    from dplens.core.queries.marginals import MarginalWorkload

    table = MarginalWorkload(Domain(("a", "b"), (2, 3)), (("a",), ("a", "b")))
    assert marginal_names(table) == (("a",), ("a", "b"))
    assert all(marginal_names(w) is None for w in (Prefix(3), Kron((Identity(2), Total(2))), Reversal(), None))
