"""The NumPy mirror descent (dplens.core.tables.mirror_descent) against private-pgm's own (mbi.estimation).

Both run in float64 on the same seeded problems (3-5 attributes, random cliques up to triples, noisy counts), so the
fits must agree to round-off: after 1, 2 and 10 iterations (which pins the step size 2/(L·total) and each Armijo
decision) and at every iteration of 50 (the line search over many steps), cold and warm-started.
"""

from __future__ import annotations

import itertools
import logging

import jax
import mbi
import numpy as np
import pytest
from mbi.estimation import mirror_descent as mbi_mirror_descent

from dplens.core.tables.mirror_descent import mirror_descent

RTOL = 1e-8
SEEDS = tuple(range(5))


def random_problem(seed: int) -> tuple[mbi.Domain, list[mbi.LinearMeasurement]]:
    """A small domain, every 1-way marginal and 2-4 random pairs or triples (overlapping), with Gaussian noise."""
    rng = np.random.default_rng([seed, 2019])
    k = int(rng.integers(3, 6))
    names = [f"x{i}" for i in range(k)]
    domain = mbi.Domain(names, [int(s) for s in rng.integers(2, 5, size=k)])
    candidates = [c for r in (2, 3) for c in itertools.combinations(names, r)]
    picked = rng.choice(len(candidates), size=int(rng.integers(2, 5)), replace=False)
    cliques = [(n,) for n in names] + [candidates[i] for i in picked]
    records = 200
    measurements = []
    for clique in cliques:
        counts = rng.multinomial(records, rng.dirichlet(np.ones(domain.size(clique))))
        stddev = float(rng.uniform(1.0, 8.0))
        measurements.append(mbi.LinearMeasurement(counts + rng.normal(0, stddev, counts.size), clique, stddev=stddev))
    return domain, measurements


def assert_same_model(numpy_model: mbi.MarkovRandomField, mbi_model: mbi.MarkovRandomField) -> None:
    assert numpy_model.potentials.cliques == mbi_model.potentials.cliques
    assert numpy_model.marginals.cliques == mbi_model.marginals.cliques
    np.testing.assert_allclose(float(numpy_model.total), float(mbi_model.total), rtol=RTOL)
    for clique in mbi_model.marginals.cliques:
        np.testing.assert_allclose(numpy_model.marginals[clique].values, np.asarray(mbi_model.marginals[clique].values),
                                   rtol=RTOL, err_msg=f"marginal {clique}")
    for clique in mbi_model.potentials.cliques:
        # potentials start at 0, so some entries stay near it: an absolute floor far below any step taken
        np.testing.assert_allclose(numpy_model.potentials[clique].values,
                                   np.asarray(mbi_model.potentials[clique].values), rtol=RTOL, atol=1e-12,
                                   err_msg=f"potential {clique}")


def fit_both(domain, measurements, *, iters, **kwargs):
    """Both fits, with the marginals each iteration started from (the callback's), as NumPy arrays."""
    seen: dict[str, list] = {"numpy": [], "mbi": []}

    def record(key):
        return lambda mu: seen[key].append({cl: np.array(mu[cl].values) for cl in mu.cliques})

    ours = mirror_descent(domain, measurements, iters=iters, callback_fn=record("numpy"), **kwargs)
    theirs = mbi_mirror_descent(domain, measurements, iters=iters, callback_fn=record("mbi"), **kwargs)
    return ours, theirs, seen["numpy"], seen["mbi"]


def assert_same_path(ours_seen, theirs_seen):
    """The marginals at the start of every iteration agree: each step size and Armijo decision was mbi's."""
    assert len(ours_seen) == len(theirs_seen)
    for t, (ours, theirs) in enumerate(zip(ours_seen, theirs_seen, strict=True)):
        assert ours.keys() == theirs.keys()
        for clique in theirs:
            np.testing.assert_allclose(ours[clique], theirs[clique], rtol=RTOL, err_msg=f"iteration {t}, {clique}")


@pytest.mark.parametrize("seed", SEEDS)
def test_cold_start_equals_mbi_at_every_iteration(seed):
    domain, measurements = random_problem(seed)
    ours, theirs, ours_seen, theirs_seen = fit_both(domain, measurements, iters=50)
    assert_same_path(ours_seen, theirs_seen)
    assert_same_model(ours, theirs)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_one_and_two_iterations_equal_mbi(seed):
    """The first step (2/(L·total)) and the first line-search decision, potentials included."""
    domain, measurements = random_problem(seed)
    for iters in (1, 2):
        assert_same_model(mirror_descent(domain, measurements, iters=iters),
                          mbi_mirror_descent(domain, measurements, iters=iters))


@pytest.mark.parametrize("seed", SEEDS)
def test_warm_start_expanded_onto_new_cliques_equals_mbi(seed):
    """AIM's refit: the previous model's potentials, on fewer cliques than the new measurements need."""
    domain, measurements = random_problem(seed)
    previous = mirror_descent(domain, measurements[:-1], iters=20)
    assert not all(previous.potentials.supports(m.clique) for m in measurements)
    ours, theirs, ours_seen, theirs_seen = fit_both(domain, measurements, iters=30, potentials=previous.potentials)
    assert_same_path(ours_seen, theirs_seen)
    assert_same_model(ours, theirs)


def test_warm_start_from_an_mbi_model_equals_mbi():
    """JAX-valued potentials (a model mbi fitted) are read as NumPy."""
    domain, measurements = random_problem(3)
    previous = mbi_mirror_descent(domain, measurements[:-1], iters=20)
    ours, theirs, ours_seen, theirs_seen = fit_both(domain, measurements, iters=20, potentials=previous.potentials)
    assert_same_path(ours_seen, theirs_seen)
    assert_same_model(ours, theirs)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_warm_start_that_covers_the_cliques_equals_mbi(seed):
    """AIM's final fit: the last model's potentials already hold every measured clique (kept as they are)."""
    domain, measurements = random_problem(seed)
    previous = mirror_descent(domain, measurements, iters=20)  # NumPy potentials, as a fitted model hands them on
    ours, theirs, ours_seen, theirs_seen = fit_both(domain, measurements, iters=30, potentials=previous.potentials)
    assert_same_path(ours_seen, theirs_seen)
    assert_same_model(ours, theirs)


def test_zero_way_total_measurement_equals_mbi():
    """OpenDP measures the total as a clique of no attributes when no 1-way marginal is released in full."""
    domain, measurements = random_problem(4)
    measurements = [*measurements, mbi.LinearMeasurement(np.array([230.0]), (), stddev=3.0)]
    ours, theirs, ours_seen, theirs_seen = fit_both(domain, measurements, iters=20)
    assert_same_path(ours_seen, theirs_seen)
    assert_same_model(ours, theirs)


def test_known_total_is_used():
    domain, measurements = random_problem(0)
    assert_same_model(mirror_descent(domain, measurements, known_total=321.0, iters=10),
                      mbi_mirror_descent(domain, measurements, known_total=321.0, iters=10))


def test_comparison_detects_a_wrong_step_size():
    """Power of the equality tests: mbi without its line search (a fixed step, the same first step) differs."""
    domain, measurements = random_problem(1)
    ours = mirror_descent(domain, measurements, iters=10)
    first = mbi_mirror_descent(domain, measurements, iters=1)  # the line search's first decision, equal above
    fixed = mbi_mirror_descent(domain, measurements, iters=10, stepsize=_initial_step(domain, measurements))
    assert_same_model(mirror_descent(domain, measurements, iters=1), first)
    with pytest.raises(AssertionError):
        assert_same_model(ours, fixed)


def _initial_step(domain, measurements) -> float:
    loss = mbi.marginal_loss.from_linear_measurements(measurements, domain=domain)
    return 2.0 / (float(loss.lipschitz) * float(mbi.estimation.minimum_variance_unbiased_total(measurements)))


@pytest.mark.parametrize("seed", SEEDS)
def test_loss_never_increases(seed):
    domain, measurements = random_problem(seed)
    losses = []

    def l2_loss(mu):
        return sum(0.5 * np.sum(((mu.project(m.clique).values.ravel() - m.noisy_measurement) / m.stddev) ** 2)
                   for m in measurements)

    model = mirror_descent(domain, measurements, iters=40, callback_fn=lambda mu: losses.append(l2_loss(mu)))
    losses.append(l2_loss(model.marginals))
    assert len(losses) == 41
    assert all(b <= a * (1 + 1e-12) for a, b in itertools.pairwise(losses))
    assert losses[-1] < 0.5 * losses[0]


def test_values_are_numpy_and_nothing_is_compiled(caplog):
    domain, measurements = random_problem(2)
    measurements = [mbi.LinearMeasurement(np.asarray(m.noisy_measurement), m.clique, stddev=m.stddev)
                    for m in measurements]
    with jax.log_compiles(True), caplog.at_level(logging.DEBUG):
        model = mirror_descent(domain, measurements, iters=5)
    assert not [r for r in caplog.records if "ompil" in r.getMessage()]
    for vector in (model.potentials, model.marginals):
        assert all(type(vector[cl].values) is np.ndarray and vector[cl].values.dtype == np.float64
                   for cl in vector.cliques)


def test_refuses_a_query_other_than_identity():
    domain, measurements = random_problem(0)

    class FirstCells:
        def __call__(self, factor):
            return factor.datavector()[:1]

    partial = mbi.LinearMeasurement(np.array([3.0]), measurements[0].clique, query=FirstCells())
    with pytest.raises(TypeError, match=r"identity query .*FirstCells"):
        mirror_descent(domain, [*measurements, partial], iters=1)


def test_refuses_empty_or_malformed_measurements():
    domain, measurements = random_problem(0)
    with pytest.raises(ValueError, match="at least one measurement"):
        mirror_descent(domain, [], iters=1)
    with pytest.raises(ValueError, match="not in the domain"):
        mirror_descent(domain, [mbi.LinearMeasurement(np.ones(2), ("nope",))], iters=1)
    with pytest.raises(ValueError, match="values, its marginal has"):
        mirror_descent(domain, [mbi.LinearMeasurement(np.ones(99), measurements[0].clique)], iters=1)
    with pytest.raises(ValueError, match="iters must be"):
        mirror_descent(domain, measurements, iters=-1)
