"""Noise sources: the secure (OpenDP) sampler has the right distribution, and every mechanism runs on it.

The secure path ignores seeds, so these tests are not reproducible draw-for-draw; thresholds are set
so that a correct sampler fails with probability about 1e-6 per check while a wrong scale (×0.8, ×1.2)
is rejected with overwhelming probability (n = 20,000 draws).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dplens.core.mechanisms import MECHANISMS, exponential_mechanism
from dplens.core.mechanisms.laplace import Uniform
from dplens.core.mechanisms.xiao import CellRelease
from dplens.core.privacy.noise import (
    NOISE_PATHS,
    NOISE_SAMPLERS,
    NoiseSource,
    SecureNoise,
    _laplace_measurement,
    adds_noise_to_counts,
    noise_sampler,
    noise_source,
)
from dplens.core.queries.workloads import Identity, Prefix

N = 20_000


@pytest.mark.statistical
@pytest.mark.parametrize("scale", [0.5, 3.0])
def test_secure_float_laplace_has_the_right_scale_and_the_test_has_power(scale):
    noise = SecureNoise().add_laplace(np.full(N, 0.3), scale) - 0.3  # measured values, rounded onto the lattice
    assert noise.shape == (N,)
    assert stats.kstest(noise, "laplace", args=(0, scale)).pvalue > 1e-6
    for wrong in (0.8 * scale, 1.2 * scale):
        assert stats.kstest(noise, "laplace", args=(0, wrong)).pvalue < 1e-6


def _chi_square_pvalue(draws: np.ndarray, pmf) -> float:
    """Chi-square goodness of fit of integer draws to a symmetric pmf on valid cells.

    Cells -c..c, the two end cells holding the tails, with c the largest so that every cell expects
    >= 5 draws. Cells expecting ~0.1 draws (a fixed cutoff at a small scale) make the statistic's
    chi-square law wrong: one draw there gave p = 5e-7 for the right pmf.
    """
    cutoff = 1
    while draws.size * pmf(cutoff + 1) >= 5:
        cutoff += 1
    ks = np.arange(-cutoff, cutoff + 1)
    probs = pmf(ks)
    tail = (1 - probs.sum()) / 2
    probs[0] += tail
    probs[-1] += tail
    observed = np.bincount(np.clip(draws, -cutoff, cutoff).astype(int) + cutoff, minlength=ks.size)
    return float(stats.chisquare(observed, probs * draws.size).pvalue)


@pytest.mark.statistical
def test_secure_integer_laplace_is_the_discrete_laplace_and_the_test_has_power():
    scale = 2.0
    noise = SecureNoise(integer=True).add_laplace(np.zeros(N), scale)
    assert np.all(noise == np.round(noise))

    def pmf(s: float):
        return lambda k: stats.dlaplace.pmf(k, 1.0 / s)

    assert _chi_square_pvalue(noise, pmf(scale)) > 1e-6
    for wrong in (0.8 * scale, 1.2 * scale):
        assert _chi_square_pvalue(noise, pmf(wrong)) < 1e-6


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
    assert isinstance(source.add_laplace(2.5, 1.0), float) and isinstance(source.integers(4), int)


def test_secure_ignores_seeds_and_exploration_is_reproducible():
    a, b = noise_source("secure", 1), noise_source("secure", 1)
    assert not np.array_equal(a.add_laplace(np.zeros(8), 1.0), b.add_laplace(np.zeros(8), 1.0))
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
        SecureNoise().add_laplace(np.zeros(3), float("nan"))
    assert np.array_equal(SecureNoise().add_laplace(np.array([0.5, 2.0]), 0.0), np.array([0.5, 2.0]))
    with pytest.raises(TypeError, match="no free-standing noise"):  # noise is only ever added by OpenDP
        SecureNoise().laplace(scale=1.0, size=3)
    with pytest.raises(TypeError, match="no free-standing noise"):
        SecureNoise().normal(scale=1.0, size=3)


@pytest.mark.parametrize("mechanism", MECHANISMS.values(), ids=MECHANISMS.keys())
def test_every_mechanism_runs_with_secure_noise(mechanism):
    x = np.array([0, 3, 1, 7, 0, 2, 9, 4, 0, 0, 5, 1, 2, 8, 3, 6], dtype=float)
    try:
        mechanism.run(x, Identity(16), 1.0, np.random.default_rng(0))
    except ValueError as err:  # a 2-D-only mechanism: give it the same counts as a 4 × 4 grid
        assert "2-D" in str(err)
        x = x.reshape(4, 4)
    source = noise_source("secure", mechanism=mechanism, counts=x)  # integer noise only where sound
    assert source.integer == (mechanism.name in INTEGER_NOISE)
    for workload in (Identity(16), Prefix(16)):
        release = mechanism.run(x, workload, 1.0, source)
        assert release.answers.shape == (16,)
        assert np.all(np.isfinite(release.answers))
        assert release.privacy_loss <= 1.0 + 1e-9


def test_secure_laplace_accepts_array_scales_like_numpy():
    noise = SecureNoise().add_laplace(np.zeros(4), np.array([0.0, 1.0, 1.0, 5.0]))
    assert noise.shape == (4,) and noise[0] == 0.0 and np.all(noise[1:] != 0.0)
    assert SecureNoise().add_laplace(np.ones(3), 0.0).tolist() == [1.0, 1.0, 1.0]


def test_cli_release_is_secure_by_default_and_says_so(tmp_path):
    import json

    from dplens.cli import main

    outs = [tmp_path / f"{i}.json" for i in range(2)]
    for out in outs:
        assert main(["release", "--input", "tips-bill", "--mechanism", "identity", "--epsilon", "1",
                     "--seed", "3", "--output", str(out)]) == 0
    docs = [json.loads(out.read_text()) for out in outs]
    assert docs[0]["noise_path"] == "secure" and docs[0]["counts"] != docs[1]["counts"]  # the seed is ignored


# ----------------------------------------------------------------------------- integer noise on counts
# the registry's count-noising mechanisms
INTEGER_NOISE = {"identity", "dp-base", "cell-release", "uniform", "gaussian-identity"}


class _Recording:
    """A noise source returning fixed integer draws and remembering them (to see where they land)."""

    def __init__(self) -> None:
        self.draws: list[np.ndarray] = []

    def laplace(self, loc=0.0, scale=1.0, size=None):
        draw = np.arange(1, 1 + (1 if size is None else int(np.prod(size))), dtype=float) * 7.0
        self.draws.append(draw)
        return float(draw[0]) if size is None else draw.reshape(size)


@pytest.mark.parametrize("mechanism", [MECHANISMS["identity"], MECHANISMS["dp-base"],
                                       CellRelease(clip=False), CellRelease(clip=False, neighbouring="replace_one"),
                                       Uniform()], ids=lambda m: f"{m.name}")
def test_integer_noise_mechanisms_add_each_draw_to_a_count(mechanism):
    """The premise of the integer sampler: each draw is added to a count (or the total), nothing else."""
    x = np.array([4.0, 0, 2, 9])
    source = _Recording()
    release = mechanism.run(x, Identity(4), 1.0, source)
    (draw,) = source.draws
    expected = np.full(4, (x.sum() + draw[0]) / 4) if draw.size == 1 else x + draw
    np.testing.assert_array_equal(release.estimate, expected)


def test_integer_noise_is_selected_only_for_count_mechanisms_on_integer_counts():
    counts = np.array([3.0, 0, 5, 1])
    assert noise_source("secure", mechanism=MECHANISMS["identity"], counts=counts).integer
    assert not noise_source("secure", mechanism=MECHANISMS["identity"], counts=counts + 0.5).integer
    assert not noise_source("secure", mechanism=MECHANISMS["identity"], counts=counts * 2.0**60).integer
    assert not noise_source("secure", mechanism=MECHANISMS["hb"], counts=counts).integer
    assert not noise_source("secure").integer and not noise_source("secure", counts=counts).integer
    assert {name for name, m in MECHANISMS.items() if adds_noise_to_counts(m)} == INTEGER_NOISE
    assert noise_sampler(noise_source("exploration", 0)) in NOISE_SAMPLERS
    assert {SecureNoise().sampler, SecureNoise(integer=True).sampler} <= set(NOISE_SAMPLERS)


@pytest.mark.statistical
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_identity_on_the_integer_path_is_the_geometric_mechanism_with_the_claimed_loss(epsilon):
    """Used: the release is integer counts; accounting: the noise is DLap(1/ε) (χ² with power), whose
    exact loss for a unit shift is ε = privacy_loss, and OpenDP's own privacy map agrees."""
    x = np.tile([0.0, 3, 17, 1], N // 4)
    mechanism = MECHANISMS["identity"]
    source = noise_source("secure", mechanism=mechanism, counts=x)
    release = mechanism.run(x, Identity(N), epsilon, source)
    noise = release.estimate - x
    assert np.all(noise == np.round(noise)) and np.all(release.answers == np.round(release.answers))
    scale = 1.0 / epsilon

    def pmf(s: float):
        return lambda k: stats.dlaplace.pmf(k, 1.0 / s)

    assert _chi_square_pvalue(noise, pmf(scale)) > 1e-6
    for wrong in (0.8 * scale, 1.2 * scale):
        assert _chi_square_pvalue(noise, pmf(wrong)) < 1e-6
    ks = np.arange(-50, 51)
    exact_loss = np.max(np.abs(np.diff(stats.dlaplace.logpmf(ks, 1.0 / scale))))
    assert exact_loss == pytest.approx(release.privacy_loss, rel=1e-12)
    assert release.privacy_loss <= epsilon + 1e-9
    assert _laplace_measurement(N, scale, True).map(1) == pytest.approx(release.privacy_loss, rel=1e-12)


def test_cli_release_states_the_sampler_it_used(tmp_path):
    import json

    from dplens.cli import main

    samplers = {}
    for name in ("identity", "hb"):
        out = tmp_path / f"{name}.json"
        assert main(["release", "--input", "tips-bill", "--mechanism", name, "--epsilon", "1",
                     "--output", str(out)]) == 0
        doc = json.loads(out.read_text())
        samplers[name] = doc["noise_sampler"]
        if name == "identity":
            assert all(v == round(v) for v in doc["counts"])
    assert samplers == {"identity": "opendp-integer-laplace", "hb": "opendp-lattice-laplace"}


def test_release_page_records_the_sampler_it_used():
    from tests.test_app import open_page

    at = open_page("pages/release.py")  # secure by default
    for mechanism in ("identity", "hb"):
        at.selectbox(key="release_mechanism").set_value(mechanism)
        at = at.button(key="release_spend").click().run()
        assert not at.exception
    assert [e["noise_sampler"] for e in at.session_state.releases] == ["opendp-integer-laplace",
                                                                      "opendp-lattice-laplace"]
