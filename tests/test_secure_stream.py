"""Secure measurements stream their values to OpenDP in chunks: the chunks are put on the lattice of
the whole vector, and a chunked draw has the distribution of one measurement of all the values.

The chunk is shrunk (``STREAM_CHUNK`` monkeypatched) so that a small draw crosses many chunk boundaries and ends in a
partial chunk. The secure path cannot be seeded: thresholds as in ``test_noise`` (a right sampler fails about 1e-6 of
the time per check; a scale ×0.8 or ×1.2 is rejected with overwhelming probability at 20,000 draws).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dplens.core.privacy import noise as noise_module
from dplens.core.privacy.noise import SecureNoise, lattice_exponent, secure_lattice_noise_reduction

N = 20_000
CHUNK = 3_000  # N / CHUNK is not whole: 6 full chunks and a partial one of 2,000


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(noise_module, "STREAM_CHUNK", CHUNK)
    noise_module._laplace_measurement.cache_clear()
    noise_module._gaussian_measurement.cache_clear()
    yield
    noise_module._laplace_measurement.cache_clear()
    noise_module._gaussian_measurement.cache_clear()


def _spy(monkeypatch, kind: str) -> list[tuple[int, int | None]]:
    """Record (size, k) of every OpenDP measurement of ``kind`` built from now on."""
    given: list[tuple[int, int | None]] = []
    dp = noise_module._opendp()
    make = getattr(dp.m, f"make_{kind}")

    def spy(domain, metric, **options):
        given.append((domain.size, options.get("k")))
        return make(domain, metric, **options)

    monkeypatch.setattr(dp.m, f"make_{kind}", spy)
    return given


@pytest.mark.parametrize("kind, norm", [("laplace", 1), ("gaussian", 2)])
def test_chunks_are_measured_on_the_lattice_of_the_whole_vector(small_chunks, monkeypatch, kind, norm):
    """One measurement per chunk length, built once and reused, each with the k of all N values (not of the chunk:
    a chunk's own, coarser lattice would round more than the release's privacy map pays for)."""
    given = _spy(monkeypatch, kind)
    out = getattr(SecureNoise(), f"add_{kind}")(np.full(N, 0.3), 2.0)
    assert out.shape == (N,) and np.all(np.isfinite(out))
    whole = lattice_exponent(2.0, N, norm)
    assert sorted(given) == [(N % CHUNK, whole), (CHUNK, whole)]
    assert whole < lattice_exponent(2.0, CHUNK, norm)  # the test can tell the two lattices apart


def test_a_vector_that_fits_in_one_chunk_is_one_measurement(small_chunks, monkeypatch):
    given = _spy(monkeypatch, "laplace")
    SecureNoise().add_laplace(np.zeros(CHUNK), 1.0)
    assert given == [(CHUNK, lattice_exponent(1.0, CHUNK, 1))]


def test_the_walk_streams_on_its_own_lattice(small_chunks, monkeypatch):
    given = _spy(monkeypatch, "laplace")
    walk = secure_lattice_noise_reduction(np.full(N, 0.3), [8.0, 2.0])
    assert walk.shape == (2, N)
    assert {k for _, k in given} == {lattice_exponent(2.0, N, 1)}
    assert max(size for size, _ in given) == CHUNK


@pytest.mark.statistical
@pytest.mark.parametrize("scale", [0.5, 3.0])
def test_a_chunked_lattice_laplace_draw_has_the_right_scale_and_the_test_has_power(small_chunks, scale):
    noise = SecureNoise().add_laplace(np.full(N, 0.3), scale) - 0.3
    assert stats.kstest(noise, "laplace", args=(0, scale)).pvalue > 1e-6
    for wrong in (0.8 * scale, 1.2 * scale):
        assert stats.kstest(noise, "laplace", args=(0, wrong)).pvalue < 1e-6

@pytest.mark.statistical
def test_a_chunked_lattice_gaussian_draw_has_the_right_scale_and_the_test_has_power(small_chunks):
    sigma = 2.0
    noise = SecureNoise().add_gaussian(np.full(N, 0.3), sigma) - 0.3
    assert stats.kstest(noise, "norm", args=(0, sigma)).pvalue > 1e-6
    for wrong in (0.8 * sigma, 1.2 * sigma):
        assert stats.kstest(noise, "norm", args=(0, wrong)).pvalue < 1e-6


@pytest.mark.statistical
def test_a_chunked_integer_laplace_draw_is_the_discrete_laplace(small_chunks):
    scale = 2.0
    noise = SecureNoise(integer=True).add_laplace(np.tile([0.0, 5.0, 17.0, 2.0], N // 4), scale)
    noise -= np.tile([0.0, 5.0, 17.0, 2.0], N // 4)
    assert np.all(noise == np.round(noise))

    def pvalue(s: float) -> float:  # chi-square on -c..c, the end cells holding the tails, every cell expecting >= 5
        cutoff = 1
        while N * stats.dlaplace.pmf(cutoff + 1, 1.0 / s) >= 5:
            cutoff += 1
        probs = stats.dlaplace.pmf(np.arange(-cutoff, cutoff + 1), 1.0 / s)
        probs[[0, -1]] += (1 - probs.sum()) / 2
        observed = np.bincount(np.clip(noise, -cutoff, cutoff).astype(int) + cutoff, minlength=probs.size)
        return float(stats.chisquare(observed, probs * N).pvalue)

    assert pvalue(scale) > 1e-6
    for wrong in (0.8 * scale, 1.2 * scale):
        assert pvalue(wrong) < 1e-6


@pytest.mark.parametrize("integer", [False, True])
def test_read_only_values_are_measured(small_chunks, integer):
    # a histogram's counts are read-only; OpenDP refuses read-only arrays, so each chunk is handed over writable
    values = np.arange(2 * CHUNK + 5, dtype=float)
    values.setflags(write=False)
    noisy = SecureNoise(integer=integer).add_laplace(values, 1e-3)
    assert noisy.shape == values.shape and np.all(np.abs(noisy - values) < 1.0)
