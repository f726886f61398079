"""Contract tests over every table mechanism (``TABLE_MECHANISMS``), as tests/test_mechanisms.py does for histograms.

A small table (attributes of sizes 2, 3, 4; 300 records; all 2-way marginals): the release has the workload's
shape, its privacy loss (computed from the noise drawn) is in (0, ρ], seeded exploration noise is reproducible,
a bad ρ is refused naming ``rho``, and a data-independent mechanism's closed-form ``expected_mse`` matches a
seeded simulation with power (the right value passes, 1.2 × it is rejected). The OpenDP synthesisers draw their
noise inside OpenDP (never seeded) and run once each, at the smallest settings that still fit a model, on the
first two attributes (one 2-way marginal).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import pytest

from dplens.core.data.domain import Domain
from dplens.core.privacy.definitions import ZCDP
from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.tables.contract import workload_rmse
from dplens.core.tables.mechanisms import TABLE_MECHANISMS

DOMAIN = Domain(("a", "b", "c"), (2, 3, 4))
WORKLOAD = MarginalWorkload.all_kway(DOMAIN, 2)
# synthesisers run on the first two attributes only: OpenDP's scale search costs per measured marginal
SYNTH_WORKLOAD = MarginalWorkload.all_kway(Domain(DOMAIN.names[:2], DOMAIN.sizes[:2]), 2)
RHO = 0.5
CHEAP = {"iters": 5, "round_iters": 5, "rounds": 2}  # synthesisers: the fit is post-processing, its length untested
SIMULATION_RUNS = 300
NAMES = list(TABLE_MECHANISMS)


def records() -> np.ndarray:
    return np.random.default_rng(0).integers(0, DOMAIN.sizes, size=(300, len(DOMAIN.sizes)))


def mechanism(name: str):
    """The registered mechanism; synthesisers at the CHEAP settings they have."""
    registered = TABLE_MECHANISMS[name]
    if not registered.synthesizes:
        return registered
    fields = {f.name for f in dataclasses.fields(registered)}
    return dataclasses.replace(registered, **{k: v for k, v in CHEAP.items() if k in fields})


@functools.cache
def release(name: str):
    """One release per mechanism at RHO (a synthesiser run costs seconds: shared by the tests below)."""
    if TABLE_MECHANISMS[name].synthesizes:
        pytest.importorskip("mbi")
    return mechanism(name).run(records_for(name), workload_for(name), RHO, np.random.default_rng(1))


def workload_for(name: str) -> MarginalWorkload:
    return SYNTH_WORKLOAD if TABLE_MECHANISMS[name].synthesizes else WORKLOAD


def records_for(name: str) -> np.ndarray:
    return records()[:, :len(workload_for(name).domain.sizes)]


@pytest.mark.parametrize("name", NAMES)
def test_release_has_the_workloads_shape(name):
    out, workload = release(name), workload_for(name)
    assert out.mechanism == name and out.workload is workload and out.budget == ZCDP(RHO)
    assert [e.shape for e in out.marginal_estimates] == [t.shape for t in workload.answer(records_for(name))]
    assert all(np.isfinite(e).all() for e in out.marginal_estimates)
    if out.marginal_stds is not None:
        assert len(out.marginal_stds) == len(workload.marginals) and all(s > 0 for s in out.marginal_stds)
    if TABLE_MECHANISMS[name].synthesizes:
        assert out.records is not None and out.records.shape[1] == len(workload.domain.sizes)


@pytest.mark.parametrize("name", NAMES)
def test_privacy_loss_is_positive_and_within_rho(name):
    loss = release(name).privacy_loss
    assert 0 < loss <= RHO * (1 + 1e-9), f"{name}: privacy_loss {loss!r} outside (0, {RHO}]"


@pytest.mark.parametrize("name", [n for n in NAMES if not TABLE_MECHANISMS[n].synthesizes])
def test_same_seed_same_release(name):
    first, second = (mechanism(name).run(records(), WORKLOAD, RHO, np.random.default_rng(7)) for _ in range(2))
    for a, b in zip(first.marginal_estimates, second.marginal_estimates, strict=True):
        np.testing.assert_array_equal(a, b)
    other = mechanism(name).run(records(), WORKLOAD, RHO, np.random.default_rng(8))
    assert any(not np.array_equal(a, b)
               for a, b in zip(first.marginal_estimates, other.marginal_estimates, strict=True))


@pytest.mark.parametrize("rho", [0, -1, math.nan, math.inf])
@pytest.mark.parametrize("name", NAMES)
def test_bad_rho_is_refused_naming_it(name, rho):
    with pytest.raises(ValueError, match="rho"):
        mechanism(name).run(records(), WORKLOAD, rho, np.random.default_rng(0))


CLOSED_FORM = [n for n in NAMES if not TABLE_MECHANISMS[n].data_dependent
               and TABLE_MECHANISMS[n].expected_mse(WORKLOAD, RHO) is not None]


@pytest.mark.statistical
@pytest.mark.parametrize("name", CLOSED_FORM)
def test_expected_mse_matches_a_seeded_simulation_with_power(name):
    """Per-run squared workload RMSE over SIMULATION_RUNS releases: the closed form's square is within 4 standard
    errors of the mean, and 1.2 × the closed form (1.44 × the MSE) is more than 4 standard errors away."""
    chosen, data = mechanism(name), records()
    truth, rng = WORKLOAD.answer(data), np.random.default_rng(11)
    per_run = np.array([workload_rmse(WORKLOAD, truth, chosen.run(data, WORKLOAD, RHO, rng).marginal_estimates) ** 2
                        for _ in range(SIMULATION_RUNS)])
    expected = chosen.expected_mse(WORKLOAD, RHO)
    standard_error = per_run.std(ddof=1) / math.sqrt(SIMULATION_RUNS)
    assert abs(per_run.mean() - expected) < 4 * standard_error
    assert abs(per_run.mean() - 1.2 ** 2 * expected) > 4 * standard_error
