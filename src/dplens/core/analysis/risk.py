"""What a release risks and where it will fall: quantile dots, posterior bounds, intervals with sampling error.

For one count (or any query of sensitivity Δ) released with Laplace noise (scale Δ/ε, pure ε-DP) or
Gaussian noise (σ from the analytic Gaussian at (ε, δ), Balle & Wang 2018, or σ = Δ/√(2ρ) under ρ-zCDP
with ρ read as "ε at δ" by the CKS conversion):

* ``quantile_dots``: the exact quantiles of the release around the true value, for a quantile dotplot
  (Kay et al., CHI 2016; used for DP by Nanayakkara et al., "Visualizing Privacy-Utility Trade-Offs in
  Differentially Private Data Releases", PETS 2022), and ``release_interval``, the ± that holds a share.
* ``posterior_bound``: the largest belief e^ε p / (1 − p + e^ε p) an attacker with prior p can reach
  about one person's presence after an ε-DP release; ``disclosure_risk`` adds the (ε, δ) reading: the
  privacy profile δ(ε) and the exact chance that one release pushes the posterior past the bound.
* ``sample_and_noise_interval`` (``proportion_interval``, ``mean_interval``): the 95 % interval for a
  statistic of a sample, sampling error and DP noise combined by adding variances (a normal
  approximation), beside the non-private one.

>>> kind, scale = noise_for("pure", 1.0, delta=1e-6)
>>> kind, scale, round(release_interval(kind, scale, coverage=0.9), 4)
('laplace', 1.0, 2.3026)
>>> round(float(posterior_bound(1.0, 0.5)), 4)
0.7311
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from dplens.core.privacy.definitions import DEFINITIONS, analytic_gaussian_sigma, check_delta, zcdp_rho
from dplens.core.validate import fraction, integer, non_negative, positive

NOISE_KINDS: dict[str, str] = {
    "laplace": "Laplace (scale b = Δ/ε): pure ε-DP",
    "gaussian": "Gaussian (σ): (ε, δ)-DP or ρ-zCDP",
}


def _check_kind(kind: str) -> str:
    if kind not in NOISE_KINDS:
        raise ValueError(f"kind must be one of {list(NOISE_KINDS)}, got {kind!r}")
    return kind


# ----------------------------------------------------------------------------- the noise of one release
def noise_for(definition: str, epsilon: float, *, delta: float, sensitivity: float = 1.0) -> tuple[str, float]:
    """The noise (kind, scale) of one query of sensitivity Δ at "ε at δ" under a privacy definition.

    "pure": Laplace with b = Δ/ε (Δ the L1 sensitivity). "approx": the analytic Gaussian's least σ at
    (ε, δ). "zcdp": σ = Δ/√(2ρ) with ρ the largest zCDP level whose CKS conversion gives (ε, δ).
    For one count Δ₁ = Δ₂ = 1.

    >>> noise_for("pure", 0.5, delta=1e-6)
    ('laplace', 2.0)
    >>> [round(noise_for(d, 1.0, delta=1e-5)[1], 4) for d in ("approx", "zcdp")]
    [3.7306, 4.0451]

    Raises:
        ValueError: an unknown definition, ε ≤ 0, δ outside (0, 1) or Δ ≤ 0.
    """
    epsilon, sensitivity = positive("epsilon", epsilon), positive("sensitivity", sensitivity)
    if definition == "pure":
        return "laplace", sensitivity / epsilon
    delta = check_delta(delta)
    if definition == "approx":
        return "gaussian", analytic_gaussian_sigma(epsilon, delta, sensitivity)
    if definition == "zcdp":
        return "gaussian", sensitivity / math.sqrt(2.0 * zcdp_rho(epsilon, delta))
    raise ValueError(f"definition must be one of {sorted(DEFINITIONS)}, got {definition!r}")


def noise_distribution(kind: str, scale: float, *, center: float = 0.0):
    """The release's distribution around ``center`` (the true value) as a frozen scipy.stats distribution.

    >>> round(float(noise_distribution("laplace", 2.0).std()), 4), float(noise_distribution("gaussian", 3.0).std())
    (2.8284, 3.0)
    """
    scale = positive("scale", scale)
    return (stats.laplace if _check_kind(kind) == "laplace" else stats.norm)(loc=float(center), scale=scale)


def noise_sd(kind: str, scale: float) -> float:
    """The noise's standard deviation: √2·b for Laplace, σ for Gaussian.

    >>> round(noise_sd("laplace", 1.0), 6), noise_sd("gaussian", 2.0)
    (1.414214, 2.0)
    """
    scale = positive("scale", scale)
    return math.sqrt(2.0) * scale if _check_kind(kind) == "laplace" else scale


def quantile_dots(kind: str, scale: float, count: int, *, center: float = 0.0) -> np.ndarray:
    """``count`` exact quantiles of the release, at levels (i − ½)/count: one dot per 1/count of the releases.

    Each dot stands for an equally likely share of the releases (a quantile dotplot), so "k of the
    count dots lie within ±x" reads "about k in count releases fall within ±x".

    >>> np.round(quantile_dots("laplace", 1.0, 4), 4)
    array([-1.3863, -0.2877,  0.2877,  1.3863])
    >>> np.round(quantile_dots("gaussian", 1.0, 2, center=10.0), 4)
    array([ 9.3255, 10.6745])

    Raises:
        ValueError: ``count`` is not an integer ≥ 1, or the kind or scale is invalid.
    """
    integer("count", count)
    levels = (np.arange(1, int(count) + 1) - 0.5) / int(count)
    return noise_distribution(kind, scale, center=center).ppf(levels)


def quantile_levels(count: int) -> np.ndarray:
    """The levels (i − ½)/count of ``quantile_dots``.

    >>> quantile_levels(4)
    array([0.125, 0.375, 0.625, 0.875])
    """
    integer("count", count)
    return (np.arange(1, int(count) + 1) - 0.5) / int(count)


def stack_dots(values: np.ndarray, *, bin_width: float, center: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Dot positions for a dotplot: each value snapped to a bin of ``bin_width`` around ``center``, stacked.

    Returns (x, height): x the bin centre, height 1, 2, … within the bin (Wilkinson's dot plot).

    >>> stack_dots(np.array([-0.9, -0.2, 0.1, 0.2, 1.1]), bin_width=1.0)
    (array([-1.,  0.,  0.,  0.,  1.]), array([1, 1, 2, 3, 1]))
    """
    bin_width = positive("bin_width", bin_width)
    values = np.asarray(values, dtype=float)
    x = center + np.round((values - center) / bin_width) * bin_width
    height = np.zeros(len(x), dtype=int)
    seen: dict[float, int] = {}
    for i, value in enumerate(x):
        seen[value] = seen.get(value, 0) + 1
        height[i] = seen[value]
    return x, height


def release_interval(kind: str, scale: float, *, coverage: float = 0.9) -> float:
    """The half-width x with P(|release − true| ≤ x) = ``coverage``: exact, b·ln(1/(1 − c)) or σ·Φ⁻¹((1 + c)/2).

    >>> round(release_interval("laplace", 1.0, coverage=0.9), 4), round(release_interval("gaussian", 1.0), 4)
    (2.3026, 1.6449)
    """
    coverage = fraction("coverage", coverage)
    return float(noise_distribution(kind, scale).ppf(0.5 + coverage / 2.0))


# ----------------------------------------------------------------------------- disclosure risk
def posterior_bound(epsilon, prior):
    """The largest posterior e^ε p / (1 − p + e^ε p) about one person's presence after an ε-DP release.

    An attacker with prior belief p that a person is in the data sees the release; whatever it is, ε-DP
    bounds the likelihood ratio by e^ε, so the posterior odds are at most e^ε times the prior odds.
    Vectorised over ε and p (NumPy broadcasting); equals p at ε = 0.

    >>> round(float(posterior_bound(0.0, 0.1)), 6), round(float(posterior_bound(math.log(9), 0.1)), 6)
    (0.1, 0.5)
    >>> np.round(posterior_bound(1.0, np.array([0.01, 0.5])), 4)
    array([0.0267, 0.7311])

    Raises:
        ValueError: ε < 0 or NaN, or p outside [0, 1].
    """
    epsilon, prior = np.asarray(epsilon, dtype=float), np.asarray(prior, dtype=float)
    if not np.all(epsilon >= 0):
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    if not np.all((prior >= 0) & (prior <= 1)):
        raise ValueError(f"prior must be a probability in [0, 1], got {prior!r}")
    # odds form in log space: stays finite for large ε (e^ε overflows past ~709)
    with np.errstate(divide="ignore"):
        log_odds = np.log(prior) - np.log1p(-prior) + epsilon
    result = special.expit(log_odds)
    return np.where(prior >= 1, 1.0, result)[()]


def privacy_loss_tail(kind: str, epsilon, *, scale: float, sensitivity: float = 1.0):
    """P[L > ε]: the chance that one release pushes the posterior above ``posterior_bound(ε, p)``, exactly.

    L = ln(p₁(y)/p₀(y)) is the privacy loss of the output y drawn with the person in. The posterior
    exceeds the bound at ε exactly when L > ε, for every prior. Gaussian: L ~ N(ρ, 2ρ) with
    ρ = Δ²/(2σ²). Laplace with ε₀ = Δ/b: 1 − ½e^((ε − ε₀)/2) below ε₀, 0 from ε₀ on.

    >>> float(privacy_loss_tail("laplace", 1.0, scale=1.0))
    0.0
    >>> round(float(privacy_loss_tail("gaussian", 1.0, scale=3.730632)), 6)
    0.000161
    """
    scale, sensitivity = positive("scale", scale), positive("sensitivity", sensitivity)
    epsilon = np.asarray(epsilon, dtype=float)
    if _check_kind(kind) == "laplace":
        top = sensitivity / scale
        return np.where(epsilon >= top, 0.0, 1.0 - 0.5 * np.exp(np.minimum(epsilon - top, 0.0) / 2.0))[()]
    rho = sensitivity**2 / (2.0 * scale**2)
    return special.ndtr(-(epsilon - rho) / math.sqrt(2.0 * rho))[()]


def _cks_delta(rho: float, epsilon: float) -> float:
    # CKS 2020 Prop. 12 solved for δ (Steinke's cdp2adp.cdp_delta): min over α > 1 of
    # exp((α−1)(αρ − ε) + (α−1) ln(1 − 1/α) − ln α)
    def log_delta(t: float) -> float:
        alpha = 1.0 + math.exp(t)
        return (alpha - 1.0) * (alpha * rho - epsilon) + (alpha - 1.0) * math.log1p(-1.0 / alpha) - math.log(alpha)

    centre = math.log(max(epsilon - rho, 1e-12) / (2.0 * rho) + 1e-12)  # α − 1 ≈ (ε − ρ)/(2ρ)
    result = optimize.minimize_scalar(log_delta, bounds=(centre - 20.0, centre + 20.0), method="bounded",
                                      options={"xatol": 1e-12})
    return float(min(1.0, math.exp(min(result.fun, log_delta(centre), 0.0))))


def privacy_profile(definition: str, epsilon, *, scale: float, sensitivity: float = 1.0):
    """δ(ε): the least δ at which the noise is (ε, δ)-DP, for each ε (the privacy profile).

    "pure" (Laplace, ε₀ = Δ/b): 1 − e^((ε − ε₀)/2) below ε₀, else 0 (Balle et al., "Privacy profiles").
    "approx" (Gaussian): Balle & Wang's exact curve. "zcdp": the CKS conversion of ρ = Δ²/(2σ²), valid
    for any ρ-zCDP mechanism (never below the Gaussian's exact curve).

    >>> round(float(privacy_profile("approx", 1.0, scale=3.730632)), 10)
    1e-05
    >>> from dplens.core.privacy.definitions import zcdp_epsilon
    >>> round(float(privacy_profile("zcdp", zcdp_epsilon(0.5, 1e-6), scale=1.0)), 9)
    1e-06
    """
    scale, sensitivity = positive("scale", scale), positive("sensitivity", sensitivity)
    epsilon = np.asarray(epsilon, dtype=float)
    if definition == "pure":
        top = sensitivity / scale
        return np.where(epsilon >= top, 0.0, 1.0 - np.exp(np.minimum(epsilon - top, 0.0) / 2.0))[()]
    if definition == "approx":
        a, b = sensitivity / (2.0 * scale), epsilon * scale / sensitivity
        return np.maximum(0.0, special.ndtr(a - b) - np.exp(epsilon + special.log_ndtr(-a - b)))[()]
    if definition == "zcdp":
        rho = sensitivity**2 / (2.0 * scale**2)
        return np.vectorize(lambda e: _cks_delta(rho, float(e)), otypes=[float])(epsilon)[()]
    raise ValueError(f"definition must be one of {sorted(DEFINITIONS)}, got {definition!r}")


@dataclass(frozen=True)
class DisclosureRisk:
    """The (ε, δ) reading of one release for an attacker with a prior.

    ``posterior``: e^ε p/(1 − p + e^ε p). ``delta``: the privacy profile's δ at ε (0 for Laplace at its
    own ε). ``failure_probability``: the exact chance P[L > ε] that the release pushes the posterior above
    ``posterior`` (0 for Laplace at its own ε; for the Gaussian it exceeds δ, since δ(ε) = P[L > ε] −
    e^ε P₀[L > ε] is not a tail probability).
    """

    epsilon: float
    prior: float
    delta: float
    posterior: float
    failure_probability: float

    def sentence(self) -> str:
        """The bound in words.

        >>> disclosure_risk("pure", 1.0, 0.1, scale=1.0).sentence()
        'posterior ≤ 23.2 % (prior 10 %), always'
        """
        head = f"posterior ≤ {self.posterior * 100:.3g} % (prior {self.prior * 100:.3g} %)"
        if self.failure_probability == 0 and self.delta == 0:
            return f"{head}, always"
        return (f"{head} except with probability δ = {self.delta:.3g} (the usual (ε, δ) reading); exactly, "
                f"one release exceeds it with probability {self.failure_probability:.3g}")


def disclosure_risk(definition: str, epsilon: float, prior: float, *, scale: float,
                    sensitivity: float = 1.0) -> DisclosureRisk:
    """The posterior bound at ε with its δ (privacy profile) and its exact failure probability.

    ``scale`` is the noise actually added (``noise_for``): Laplace b under "pure", σ otherwise.

    >>> r = disclosure_risk("approx", 1.0, 0.01, scale=3.730632)
    >>> round(r.posterior, 4), round(r.delta, 8), round(r.failure_probability, 6)
    (0.0267, 1e-05, 0.000161)
    """
    epsilon = positive("epsilon", epsilon)
    if isinstance(prior, bool) or not isinstance(prior, int | float) or not 0 <= prior <= 1:
        raise ValueError(f"prior must be a probability in [0, 1], got {prior!r}")
    kind = "laplace" if definition == "pure" else "gaussian"
    return DisclosureRisk(epsilon=epsilon, prior=float(prior),
                          delta=float(privacy_profile(definition, epsilon, scale=scale, sensitivity=sensitivity)),
                          posterior=float(posterior_bound(epsilon, prior)),
                          failure_probability=float(privacy_loss_tail(kind, epsilon, scale=scale,
                                                                      sensitivity=sensitivity)))


# ----------------------------------------------------------------------------- sampling error + DP noise
@dataclass(frozen=True, eq=False)
class SampleInterval:
    """A statistic's interval: estimate ± z·√(sampling variance + noise variance), and the non-private one.

    Fields may be arrays (one interval per estimate). ``low``/``high`` combine both errors;
    ``nonprivate_low``/``nonprivate_high`` use the sampling error only.
    """

    estimate: np.ndarray | float
    sampling_sd: np.ndarray | float
    noise_sd: float
    confidence: float

    @property
    def z(self) -> float:
        return float(special.ndtri(0.5 + self.confidence / 2.0))

    @property
    def half_width(self):
        return self.z * np.hypot(self.sampling_sd, self.noise_sd)

    @property
    def nonprivate_half_width(self):
        return self.z * np.asarray(self.sampling_sd)[()]

    @property
    def low(self):
        return self.estimate - self.half_width

    @property
    def high(self):
        return self.estimate + self.half_width

    @property
    def nonprivate_low(self):
        return self.estimate - self.nonprivate_half_width

    @property
    def nonprivate_high(self):
        return self.estimate + self.nonprivate_half_width

    @property
    def noise_share(self):
        """The DP noise's share of the combined variance (0 … 1)."""
        total = np.asarray(self.sampling_sd) ** 2 + self.noise_sd**2
        return np.where(total > 0, self.noise_sd**2 / np.where(total > 0, total, 1.0), 0.0)[()]

    def dominant(self) -> str:
        """Which error dominates, in words (for a single interval).

        >>> sample_and_noise_interval(0.5, sampling_sd=0.01, noise_sd=0.03).dominant()
        'the DP noise dominates (90 % of the variance): more records or a larger ε would narrow the interval'
        """
        share = float(self.noise_share)
        if share > 0.5:
            return (f"the DP noise dominates ({share:.0%} of the variance): more records or a larger ε "
                    "would narrow the interval").replace("%", " %")
        return (f"the sampling error dominates ({1 - share:.0%} of the variance): a larger ε would hardly "
                "help; more records would").replace("%", " %")


def sample_and_noise_interval(estimate, *, sampling_sd, noise_sd: float,
                              confidence: float = 0.95) -> SampleInterval:
    """Combine sampling error and DP noise by adding variances (normal approximation).

    Both errors are treated as independent and normal: the interval is estimate ± z·√(s² + σ_noise²).
    For Laplace noise this is an approximation in its tails as well (exact would convolve the two).

    >>> iv = sample_and_noise_interval(0.5, sampling_sd=0.03, noise_sd=0.04)
    >>> round(float(iv.half_width), 4), round(float(iv.nonprivate_half_width), 4)
    (0.098, 0.0588)
    """
    confidence = fraction("confidence", confidence)
    sampling = np.asarray(sampling_sd, dtype=float)
    if not np.all(sampling >= 0):
        raise ValueError(f"sampling_sd must be >= 0, got {sampling_sd!r}")
    non_negative("noise_sd", noise_sd)
    return SampleInterval(estimate=np.asarray(estimate, dtype=float)[()], sampling_sd=sampling[()],
                          noise_sd=float(noise_sd), confidence=confidence)


def proportion_interval(count, records: int, *, kind: str, scale: float,
                        confidence: float = 0.95) -> SampleInterval:
    """The interval for a proportion from a (noisy) count of ``count`` among ``records`` (n public).

    The count has sensitivity 1, so the noise on p̂ = count/n is the count's noise / n. Sampling
    variance p̂(1 − p̂)/n with p̂ clipped to [0, 1] (Wald; the normal approximation needs n·p̂ not small).

    >>> iv = proportion_interval(300, 1000, kind="laplace", scale=10.0)
    >>> round(float(iv.low), 4), round(float(iv.high), 4), round(float(iv.nonprivate_low), 4)
    (0.2603, 0.3397, 0.2716)
    """
    integer("records", records)
    estimate = np.asarray(count, dtype=float) / records
    clipped = np.clip(estimate, 0.0, 1.0)
    return sample_and_noise_interval(estimate, sampling_sd=np.sqrt(clipped * (1 - clipped) / records),
                                     noise_sd=noise_sd(kind, scale) / records, confidence=confidence)


def mean_sensitivity(lower: float, upper: float) -> float:
    """The add/remove sensitivity (U − L)/2 of the sum of values clamped to [L, U] minus the midpoint.

    >>> mean_sensitivity(0.0, 10.0)
    5.0
    """
    if not (math.isfinite(lower) and math.isfinite(upper) and upper > lower):
        raise ValueError(f"bounds must be finite with upper > lower, got lower={lower!r}, upper={upper!r}")
    return (upper - lower) / 2.0


def mean_interval(mean, sd: float, records: int, *, lower: float, upper: float, kind: str,
                  unit_scale: float, confidence: float = 0.95) -> SampleInterval:
    """The interval for a mean of ``records`` values in [L, U] (n public), from a noisy centred sum.

    The released sum Σ(clamp(x) − (L + U)/2) has sensitivity (U − L)/2; its noise is ``unit_scale`` (the
    scale at sensitivity 1) times that, and the mean's noise is the sum's noise / n. Sampling variance sd²/n.

    >>> iv = mean_interval(5.0, 2.0, 100, lower=0.0, upper=10.0, kind="gaussian", unit_scale=4.0)
    >>> round(float(iv.noise_sd), 4), round(float(iv.half_width), 4)
    (0.2, 0.5544)
    """
    integer("records", records)
    non_negative("sd (the values' standard deviation)", sd)
    half_range = mean_sensitivity(lower, upper)
    if sd > half_range:
        raise ValueError(f"sd must be at most (upper − lower)/2 = {half_range:g} for values in "
                         f"[{lower:g}, {upper:g}], got {sd!r}")
    unit_scale = positive("unit_scale", unit_scale)
    return sample_and_noise_interval(mean, sampling_sd=sd / math.sqrt(records),
                                     noise_sd=noise_sd(kind, unit_scale * half_range) / records,
                                     confidence=confidence)
