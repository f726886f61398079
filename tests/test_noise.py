"""Noise sources: the secure (OpenDP) sampler has the right distribution, and every mechanism runs on it.

The secure path ignores seeds, so these tests are not reproducible draw-for-draw; thresholds are set
so that a correct sampler fails with probability about 1e-6 per check while a wrong scale (×0.8, ×1.2)
is rejected with overwhelming probability (n = 20,000 draws).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from core.mechanisms import MECHANISMS, exponential_mechanism
from core.noise import NOISE_PATHS, NoiseSource, SecureNoise, noise_source
from core.workloads import Identity, Prefix

N = 20_000


@pytest.mark.statistical
@pytest.mark.parametrize("scale", [0.5, 3.0])
def test_secure_float_laplace_has_the_right_scale_and_the_test_has_power(scale):
    noise = SecureNoise().laplace(scale=scale, size=N)
    assert noise.shape == (N,)
    assert stats.kstest(noise, "laplace", args=(0, scale)).pvalue > 1e-6
    for wrong in (0.8 * scale, 1.2 * scale):
        assert stats.kstest(noise, "laplace", args=(0, wrong)).pvalue < 1e-6


def _chi_square_pvalue(draws: np.ndarray, pmf, cutoff: int) -> float:
    """Chi-square goodness of fit on the cells -cutoff..cutoff plus the two tails."""
    ks = np.arange(-cutoff, cutoff + 1)
    probs = pmf(ks)
    expected = np.concatenate([[1 - probs.sum()], probs]) * draws.size
    clipped = np.clip(draws, -cutoff - 1, cutoff + 1)
    observed = np.array([np.sum(np.abs(clipped) == cutoff + 1)] + [np.sum(clipped == k) for k in ks])
    return float(stats.chisquare(observed, expected).pvalue)


@pytest.mark.statistical
def test_secure_integer_laplace_is_the_discrete_laplace_and_the_test_has_power():
    scale = 2.0
    noise = SecureNoise(integer=True).laplace(scale=scale, size=N)
    assert np.all(noise == np.round(noise))

    def pmf(s: float):
        return lambda k: stats.dlaplace.pmf(k, 1.0 / s)

    assert _chi_square_pvalue(noise, pmf(scale), 8) > 1e-6
    for wrong in (0.8 * scale, 1.2 * scale):
        assert _chi_square_pvalue(noise, pmf(wrong), 8) < 1e-6


@pytest.mark.statistical
def test_secure_exponential_mechanism_samples_the_softmax():
    scores = np.array([0.0, 1.0, 2.0, 4.0])
    source = SecureNoise()
    picks = np.array([exponential_mechanism(scores, 1.0, 1.0, source) for _ in range(4000)])
    target = np.exp(scores / 2) / np.exp(scores / 2).sum()
    counts = np.bincount(picks, minlength=4)
    assert stats.chisquare(counts, target * picks.size).pvalue > 1e-6
    wrong = np.exp(scores) / np.exp(scores).sum()  # the ε/Δ (not ε/2Δ) exponent: must be rejected
    assert stats.chisquare(counts, wrong * picks.size).pvalue < 1e-6


@pytest.mark.statistical
def test_secure_uniform_helpers():
    source = SecureNoise()
    u = source.random(size=5000)
    assert stats.kstest(u, "uniform").pvalue > 1e-6
    g = source.gumbel(size=5000)
    assert stats.kstest(g, "gumbel_r").pvalue > 1e-6
    ints = source.integers(3, 7, size=4000)
    assert set(np.unique(ints)) == {3, 4, 5, 6}
    assert stats.chisquare(np.bincount(ints - 3)).pvalue > 1e-6
    assert sorted(source.permutation(10).tolist()) == list(range(10))
    assert sorted(source.permutation(np.array([5, 1, 3])).tolist()) == [1, 3, 5]
    assert isinstance(source.laplace(scale=1.0), float) and isinstance(source.integers(4), int)


def test_secure_ignores_seeds_and_exploration_is_reproducible():
    a, b = noise_source("secure", 1), noise_source("secure", 1)
    assert not np.array_equal(a.laplace(scale=1.0, size=8), b.laplace(scale=1.0, size=8))
    c, d = noise_source("exploration", 1), noise_source("exploration", 1)
    assert np.array_equal(c.laplace(scale=1.0, size=8), d.laplace(scale=1.0, size=8))
    assert isinstance(a, NoiseSource) and isinstance(c, NoiseSource)
    assert set(NOISE_PATHS) == {"exploration", "secure"}


@pytest.mark.parametrize("bad", ["", "numpy", "SECURE", None])
def test_unknown_noise_path_is_refused(bad):
    with pytest.raises(ValueError, match="noise path must be one of"):
        noise_source(bad)


def test_secure_laplace_rejects_bad_scale():
    with pytest.raises(ValueError, match="Laplace scale must be finite"):
        SecureNoise().laplace(scale=float("nan"), size=3)
    assert np.array_equal(SecureNoise().laplace(scale=0.0, size=2), np.zeros(2))


@pytest.mark.parametrize("integer", [False, True], ids=["float", "integer"])
@pytest.mark.parametrize("mechanism", MECHANISMS.values(), ids=MECHANISMS.keys())
def test_every_mechanism_runs_with_secure_noise(mechanism, integer):
    x = np.array([0, 3, 1, 7, 0, 2, 9, 4, 0, 0, 5, 1, 2, 8, 3, 6], dtype=float)
    try:
        mechanism.run(x, Identity(16), 1.0, np.random.default_rng(0))
    except ValueError as err:  # a 2-D-only mechanism: give it the same counts as a 4 × 4 grid
        assert "2-D" in str(err)
        x = x.reshape(4, 4)
    for workload in (Identity(16), Prefix(16)):
        release = mechanism.run(x, workload, 1.0, SecureNoise(integer=integer))
        assert release.answers.shape == (16,)
        assert np.all(np.isfinite(release.answers))
        assert release.privacy_loss <= 1.0 + 1e-9


def test_secure_laplace_accepts_array_scales_like_numpy():
    noise = SecureNoise().laplace(scale=np.array([0.0, 1.0, 1.0, 5.0]))
    assert noise.shape == (4,) and noise[0] == 0.0 and np.all(noise[1:] != 0.0)
    assert SecureNoise().laplace(loc=np.ones(3), scale=0.0).tolist() == [1.0, 1.0, 1.0]


def test_cli_release_is_secure_by_default_and_says_so(tmp_path):
    import json

    from core.__main__ import main

    outs = [tmp_path / f"{i}.json" for i in range(2)]
    for out in outs:
        assert main(["release", "--input", "tips-bill", "--mechanism", "identity", "--epsilon", "1",
                     "--seed", "3", "--output", str(out)]) == 0
    docs = [json.loads(out.read_text()) for out in outs]
    assert docs[0]["noise_path"] == "secure" and docs[0]["counts"] != docs[1]["counts"]  # the seed is ignored
