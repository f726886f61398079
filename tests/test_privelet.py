"""privelet: the Haar transform, HDMM's published errors, exact expected_mse, simulation, privacy, 2-D."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms.privelet import haar_forward, haar_inverse
from dplens.core.queries.workloads import AllRange, Identity, Kron, Prefix, dense, random_range
from tests.conftest import assert_expected_mse_with_power

PRIVELET = MECHANISMS["privelet"]


def haar_matrix(length: int) -> np.ndarray:
    return haar_forward(np.eye(length))


def test_haar_strategy_is_the_weighted_wavelet_and_inverts():
    h = haar_matrix(8)
    # Xiao et al.: W(c)·c is the total (base) or left-half − right-half count of a dyadic block
    assert h[0].tolist() == [1] * 8 and h[1].tolist() == [1] * 4 + [-1] * 4
    assert h[-1].tolist() == [0] * 6 + [1, -1]
    np.testing.assert_allclose(np.abs(h).sum(axis=0), 1 + math.log2(8))  # generalised sensitivity ρ
    v = np.random.default_rng(0).normal(size=(8, 4, 3))
    np.testing.assert_allclose(haar_inverse(haar_forward(v, axis=1), axis=1), v)


@pytest.mark.parametrize("workload, published", [(AllRange(2048), 4.726435434267867),
                                                 (Prefix(2048), 3.958484138159224)],
                         ids=["all-range", "prefix"])
def test_hdmm_published_rmse_at_unit_noise(workload, published):
    """HDMM scales by Δ₂² = ρ = 12 where Laplace needs Δ₁² = ρ² = 144 (docs/mechanisms.md, "privelet")."""
    rmse = math.sqrt(PRIVELET.expected_mse(workload, math.sqrt(2)))
    assert rmse / math.sqrt(12) == pytest.approx(published, rel=0.02)
    assert rmse / math.sqrt(12) == pytest.approx(published, rel=1e-9)


@pytest.mark.parametrize("rows, cols, workload", [
    (1, 13, Prefix(13)), (1, 13, random_range(13, 7, seed=1)),
    (3, 5, Kron((AllRange(3), Prefix(5)))), (4, 4, Kron((Identity(4), AllRange(4)))),
], ids=["prefix-padded", "ranges", "2d-padded", "2d"])
def test_expected_mse_equals_the_dense_formula(rows, cols, workload):
    pr, pc = (1 << math.ceil(math.log2(s)) if s > 1 else 1 for s in (rows, cols))
    strategy = np.kron(haar_matrix(pr), haar_matrix(pc))
    real = [i * pc + j for i in range(rows) for j in range(cols)]
    reconstruction = np.linalg.inv(strategy)[real]  # padded cells are dropped after inversion
    rho = np.abs(strategy[:, real]).sum(axis=0).max()
    w = dense(workload)
    expected = 2 * (rho / 0.6) ** 2 * np.sum((w @ reconstruction) ** 2) / w.shape[0]
    assert PRIVELET.expected_mse(workload, 0.6) == pytest.approx(expected, rel=1e-9)


@pytest.mark.statistical
@pytest.mark.parametrize("x, workload", [
    (np.arange(13.0), random_range(13, 20, seed=4)),
    (np.arange(20.0).reshape(4, 5), Kron((AllRange(4), AllRange(5)))),
], ids=["1d-padded", "2d"])
def test_empirical_mse_matches_expected_mse_with_power(x, workload, rng):
    assert_expected_mse_with_power(PRIVELET, x, workload, 0.9, 2000, rng)


@pytest.mark.parametrize("shape", [(16,), (10,), (6, 9)])
def test_privacy_loss_equals_epsilon_and_noise_scale_is_rho_over_epsilon(shape, rng):
    x = np.ones(shape)
    workload = Identity(x.size) if len(shape) == 1 else Kron((Identity(shape[0]), Identity(shape[1])))
    release = PRIVELET.run(x, workload, 0.25, rng)
    rho = np.prod([1 + math.ceil(math.log2(s)) for s in shape])
    assert release.params["noise_scale"] == pytest.approx(rho / 0.25)
    assert release.privacy_loss == pytest.approx(0.25)
    assert release.privacy_loss <= 0.25 + 1e-9


def test_2d_noise_free_limit_reconstructs_the_grid(rng):
    counts = np.random.default_rng(3).poisson(5, size=(5, 7)).astype(float)
    release = PRIVELET.run(counts, Kron((Identity(5), Identity(7))), 1000.0, rng)  # noise scale 0.016
    np.testing.assert_allclose(release.estimate, counts.ravel(), atol=0.5)
    assert release.params["padded_shape"] == (8, 8)
    # a flat workload on the same counts uses the 1-D transform, as its expected_mse does
    assert PRIVELET.run(counts, Identity(35), 1.0, rng).params["padded_shape"] == (1, 64)
