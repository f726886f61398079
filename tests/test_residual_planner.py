"""Marginal workloads and ResidualPlanner against the authors' test vectors, dense oracles and simulation."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from dplens.core.data.domain import Domain
from dplens.core.queries.marginals import MarginalWorkload, marginal_counts
from dplens.core.tables.residual_planner import measure, plan_residuals


def _domain(sizes):
    return Domain(tuple(f"a{i}" for i in range(len(sizes))), tuple(sizes))


# Test vectors from the authors' code (dkifer/ResidualPlanner selection_only/class_sumvar.py, rho = 0.5)
@pytest.mark.parametrize(("sizes", "marginals", "cells", "total", "rmse"), [
    ((2, 3, 4), 1, 9, 19.383242, 1.467547),
    ((2, 3, 4), 2, 26, 50.850421, 1.398494),
    ((2, 3, 4), 3, 24, 24.000000, 1.000000),
    ((2, 3, 4), (("a0", "a1"), ("a2",)), 10, 17.528781, 1.323963),
    ((10,) * 5, 2, 1000, 8157.020998, 2.856050),
    ((10,) * 5, 3, 10000, 77551.808604, 2.784813),
])
def test_plan_matches_the_authors_code(sizes, marginals, cells, total, rmse):
    domain = _domain(sizes)
    workload = (MarginalWorkload.all_kway(domain, marginals) if isinstance(marginals, int)
                else MarginalWorkload(domain, marginals))
    plan = plan_residuals(workload, rho=0.5)
    assert workload.cells == cells
    assert plan.total_variance == pytest.approx(total, abs=1e-5)
    assert plan.expected_rmse == pytest.approx(rmse, abs=1e-6)
    assert plan.privacy_loss == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3, 8])
def test_all_kway_plans_on_an_adult_like_domain(adult_like_domain, k):
    """The mechanics of the Adult anchors on a hand-written Adult-shaped domain file (8 attributes): the domain is
    read in file order, the cells are the sum over the k-subsets of the product of their sizes, the plan spends ρ,
    does no worse than the Gaussian mechanism on each marginal separately (σ² = C(d, k) / (2ρ), RMSE √C(d, k); equal
    when k = d, the one full table) and does not depend on the order of the attributes."""
    mapping = json.loads(adult_like_domain.read_text())
    domain = Domain.from_json(adult_like_domain.read_text())
    assert domain.names == tuple(mapping) and domain.sizes == tuple(mapping.values()) and len(mapping) == 8
    workload = MarginalWorkload.all_kway(domain, k)
    plan = plan_residuals(workload, rho=0.5)
    assert workload.cells == sum(math.prod(c) for c in itertools.combinations(domain.sizes, k))
    assert plan.privacy_loss == pytest.approx(0.5, rel=1e-12)
    assert plan.total_variance == pytest.approx(plan.expected_rmse ** 2 * workload.cells, rel=1e-9)
    separately = math.sqrt(math.comb(len(mapping), k))
    if k == len(mapping):
        assert plan.expected_rmse == pytest.approx(separately, rel=1e-9)
    else:
        assert plan.expected_rmse < separately
    reversed_domain = Domain.from_json(json.dumps(dict(reversed(mapping.items()))))
    reversed_plan = plan_residuals(MarginalWorkload.all_kway(reversed_domain, k), rho=0.5)
    assert reversed_plan.expected_rmse == pytest.approx(plan.expected_rmse, rel=1e-9)


@pytest.mark.parametrize(("k", "cells", "rmse"), [(1, 588, 3.046823), (2, 148_137, 6.358720),
                                                  (3, 20_894_536, 10.515270)])
def test_adult_anchors(shared_file, k, cells, rmse):
    """The authors' numbers on the real Adult domain (optional shared data; skips naming DPLENS_SHARED_DATA)."""
    domain = Domain.from_json(shared_file("adult", "adult-domain.json").read_text())
    workload = MarginalWorkload.all_kway(domain, k)
    plan = plan_residuals(workload, rho=0.5)
    assert workload.cells == cells
    assert plan.expected_rmse == pytest.approx(rmse, abs=1e-6)
    if k == 2:  # Identity on all 2-way marginals: σ² = 91 / (2ρ) per cell, RMSE √91
        assert plan.expected_rmse < math.sqrt(91)


def _dense_marginal(domain, attributes):
    """Marg_M = ⊗_{i∈M} I ⊗ ⊗_{i∉M} 1ᵀ on the full (small) domain: the test oracle."""
    factors = [np.eye(n) if name in attributes else np.ones((1, n))
               for name, n in zip(domain.names, domain.sizes, strict=True)]
    out = factors[0]
    for factor in factors[1:]:
        out = np.kron(out, factor)
    return out


def test_marginals_match_the_dense_operator_and_sensitivities(rng):
    domain = _domain((2, 3, 4))
    records = np.column_stack([rng.integers(0, n, size=50) for n in domain.sizes])
    x = np.bincount(np.ravel_multi_index(records.T, domain.sizes), minlength=domain.size).astype(float)
    workload = MarginalWorkload.all_kway(domain, 2)
    stacked = np.vstack([_dense_marginal(domain, m) for m in workload.marginals])
    answers = workload.answer(records)
    assert np.concatenate([a.ravel() for a in answers]) == pytest.approx(stacked @ x)
    assert workload.cells_l1_sensitivity == np.abs(stacked).sum(axis=0).max()
    assert workload.cells_l2_sensitivity == pytest.approx(np.sqrt((stacked ** 2).sum(axis=0)).max())
    assert float(marginal_counts(domain, records, ())) == 50


def test_reconstruction_is_exact_without_noise(rng):
    domain = _domain((2, 3, 4))
    records = np.column_stack([rng.integers(0, n, size=40) for n in domain.sizes])
    workload = MarginalWorkload(domain, (("a0", "a1"), ("a2",), ("a0", "a1", "a2")))
    estimates = measure(plan_residuals(workload, rho=1e12), records, rng)
    for estimate, truth in zip(estimates, workload.answer(records), strict=True):
        assert estimate == pytest.approx(truth, abs=1e-4)


@pytest.mark.statistical
def test_simulated_error_matches_the_closed_form_with_power():
    """Per-cell errors over 400 seeded runs: the mean squared error sits within 3 standard errors of the
    closed form, and the same test rejects a plan whose σ is 10 % larger (power)."""
    domain = _domain((2, 3, 4))
    rng = np.random.default_rng(20261123)
    records = np.column_stack([rng.integers(0, n, size=30) for n in domain.sizes])
    workload = MarginalWorkload.all_kway(domain, 2)
    plan = plan_residuals(workload, rho=0.5)
    truth = np.concatenate([a.ravel() for a in workload.answer(records)])
    squared = np.array([(np.concatenate([e.ravel() for e in measure(plan, records, rng)]) - truth) ** 2
                        for _ in range(400)]).mean(axis=1)
    mean, se = squared.mean(), squared.std(ddof=1) / math.sqrt(len(squared))
    assert abs(mean - plan.expected_mse) < 3 * se
    assert abs(mean - 1.21 * plan.expected_mse) > 3 * se  # a σ 10 % too large would be rejected


def test_noise_actually_added_spends_at_most_rho():
    domain = _domain((3, 1, 5))  # a one-level attribute: its residuals cost nothing and are skipped
    plan = plan_residuals(MarginalWorkload.all_kway(domain, 2), rho=0.25)
    assert plan.privacy_loss == pytest.approx(0.25, rel=1e-12)
    assert plan.privacy_loss <= 0.25 * (1 + 1e-12)


@pytest.mark.parametrize(("build", "message"), [
    (lambda: Domain.from_json('{"a": 2, "b": 70000}'), "attribute 'b' has 70000 levels"),
    (lambda: Domain(("a", "a"), (2, 2)), "unique"),
    (lambda: Domain.from_json("[1, 2]"), "JSON object"),
    (lambda: MarginalWorkload(_domain((2, 3)), (("a0", "zz"),)), "names ['zz']"),
    (lambda: MarginalWorkload(_domain((300, 300, 300, 300)), (("a0", "a1", "a2", "a3"),)), "limit is"),
    (lambda: MarginalWorkload.all_kway(_domain((2, 3)), 3), "k must be"),
    (lambda: plan_residuals(MarginalWorkload.all_kway(_domain((2, 3)), 1), rho=-1), "rho must be"),
    (lambda: MarginalWorkload.all_kway(_domain((2, 3)), 1).answer(np.array([[0, 3]])),
     "column 'a1' holds code 3"),
])
def test_bad_input_names_the_rule(build, message):
    with pytest.raises(ValueError, match=None) as error:
        build()
    assert message in str(error.value)


def test_domain_json_round_trip():
    text = json.dumps({"age": 85, "sex": 2, "income": 2})
    assert Domain.from_json(text).to_json() == text
    assert list(itertools.chain(Domain.from_json(text).sizes)) == [85, 2, 2]
