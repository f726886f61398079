"""A marginal workload is a workload like any other: an implicit operator on the table's contingency vector,
checked against its dense matrix, and a histogram mechanism runs on it."""

from __future__ import annotations

import numpy as np
import pytest

from dplens.core.data.domain import Domain
from dplens.core.mechanisms import MECHANISMS
from dplens.core.queries.marginals import MarginalWorkload, marginal_counts
from dplens.core.queries.workloads import Workload, dense, l1_sensitivity, l2_sensitivity

DOMAIN = Domain(("a", "b", "c"), (2, 3, 4))
WORKLOADS = {
    "all 2-way": MarginalWorkload.all_kway(DOMAIN, 2),
    "ranges in a marginal, attributes given out of order": MarginalWorkload(DOMAIN, (("c", "a"), ("b",)),
                                                                            ranges=("c", None)),
    "the full table and a 1-way": MarginalWorkload(DOMAIN, (("a", "b", "c"), ("c",))),
}


def _oracle(workload: MarginalWorkload) -> np.ndarray:
    """W built column by column from the marginals of one-record tables (independent of matvec)."""
    columns = []
    for cell in np.ndindex(*DOMAIN.sizes):
        records = np.array([cell])
        columns.append(np.concatenate([workload.answer_queries(i, marginal_counts(DOMAIN, records, m))
                                       for i, m in enumerate(workload.marginals)]))
    return np.array(columns).T


@pytest.mark.parametrize("name", WORKLOADS)
def test_the_operator_is_the_dense_matrix(name):
    workload, rng = WORKLOADS[name], np.random.default_rng(0)
    matrix = _oracle(workload)
    assert isinstance(workload, Workload) and workload.shape == matrix.shape
    x, y = rng.poisson(3, DOMAIN.size).astype(float), rng.normal(size=matrix.shape[0])
    np.testing.assert_allclose(workload.matvec(x), matrix @ x)
    np.testing.assert_allclose(workload.rmatvec(y), matrix.T @ y)
    np.testing.assert_allclose(dense(workload), matrix)
    np.testing.assert_allclose(workload.column_norms(1), np.abs(matrix).sum(axis=0))
    np.testing.assert_allclose(workload.column_norms(2), np.sqrt((matrix**2).sum(axis=0)))


def test_sensitivities_agree_with_the_closed_forms_and_answers_with_the_records():
    workload = WORKLOADS["all 2-way"]  # plain cells: the operator's sensitivities are the cells' closed forms
    assert l1_sensitivity(workload) == workload.cells_l1_sensitivity
    assert l2_sensitivity(workload) == pytest.approx(workload.cells_l2_sensitivity)
    weighted = MarginalWorkload(DOMAIN, workload.marginals, weights=(0.1, 3.0, 0.5))  # weights change neither
    assert l1_sensitivity(weighted) == weighted.cells_l1_sensitivity == workload.cells_l1_sensitivity
    records = np.random.default_rng(1).integers(0, DOMAIN.sizes, size=(200, 3))
    x = marginal_counts(DOMAIN, records, DOMAIN.names).ravel()  # the contingency vector
    np.testing.assert_allclose(workload.matvec(x), np.concatenate([m.ravel() for m in workload.answer(records)]))


@pytest.mark.parametrize("mechanism", ["identity", "hb", "mwem"])
def test_a_histogram_mechanism_runs_on_a_tables_contingency_vector(mechanism):
    workload = WORKLOADS["ranges in a marginal, attributes given out of order"]
    x = np.random.default_rng(2).poisson(5, DOMAIN.size).astype(float)
    release = MECHANISMS[mechanism].run(x, workload, 1.0, np.random.default_rng(3))
    assert release.answers.shape == (workload.shape[0],) and release.privacy_loss <= 1.0 * (1 + 1e-12)
