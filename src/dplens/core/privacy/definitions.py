"""Privacy definitions as values: pure ε-DP, (ε, δ)-DP and ρ-zCDP, their composition and conversions.

Neighbours are add/remove one record throughout. Composition is exact within each definition
(ε adds; ρ adds, Bun & Steinke 2016 Lemma 2.3; (ε, δ) adds componentwise, basic composition).
Conversions: ε-DP ⇒ (ε²/2)-zCDP (Bun & Steinke 2016 Prop. 1.4); ρ-zCDP ⇒ (ε, δ)-DP by the tight
bound of Canonne, Kamath & Steinke (2020, "The discrete Gaussian for differential privacy",
Prop. 12 / Cor. 13), computed as in Steinke's reference ``cdp2adp.py``, never the loose
ρ + 2√(ρ ln 1/δ). The Gaussian mechanism's exact privacy curve is Balle & Wang (ICML 2018, Thm. 8).

>>> total = ZCDP(0.25) + PureDP(1.0).to_zcdp()
>>> total
ZCDP(rho=0.75)
>>> round(ZCDP(0.5).to_approx(1e-6).epsilon, 6)
5.221534
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from scipy import special

from dplens.core.search import bisect_monotone
from dplens.core.validate import fraction, non_negative, positive

DEFINITIONS: dict[str, str] = {
    "pure": "pure ε-DP (Laplace noise): no failure probability",
    "approx": "(ε, δ)-DP (Gaussian noise, analytic calibration): may fail outright with probability δ",
    "zcdp": "ρ-zCDP (Gaussian noise): tight composition, reported as ε at a chosen δ",
}


def check_delta(delta: object, name: str = "delta") -> float:
    """Validate δ: a number in the open interval (0, 1).

    >>> check_delta(1e-6)
    1e-06
    """
    return fraction(name, delta)


def delta_warning(delta: float, records: int) -> str | None:
    """A warning when δ ≥ 1/n: such a δ allows publishing one whole record outright.

    >>> delta_warning(1e-6, 1000) is None
    True
    >>> print(delta_warning(0.01, 1000))  # doctest: +NORMALIZE_WHITESPACE
    delta=0.01 is above 1/n = 0.001 for n=1000 records: a mechanism may then publish a whole record; use delta well
    below 1/n
    """
    if records > 0 and delta >= 1.0 / records:
        return (f"delta={delta:g} is above 1/n = {1.0 / records:g} for n={records} records: a mechanism may "
                "then publish a whole record; use delta well below 1/n")
    return None


@dataclass(frozen=True)
class PureDP:
    """Pure ε-DP. Composition adds ε. ε = ∞ states no pure guarantee (the loss of a Gaussian block).

    >>> (PureDP(0.5) + PureDP(0.25)).epsilon
    0.75
    """

    epsilon: float

    def __post_init__(self) -> None:
        if self.epsilon != math.inf:
            object.__setattr__(self, "epsilon", non_negative("epsilon", self.epsilon))

    def __add__(self, other: PureDP) -> PureDP:
        if not isinstance(other, PureDP):
            return NotImplemented
        return PureDP(self.epsilon + other.epsilon)

    def to_zcdp(self) -> ZCDP:
        """ε-DP ⇒ (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
        return ZCDP(self.epsilon**2 / 2.0)

    def to_approx(self, delta: float) -> ApproxDP:
        """The smaller ε at δ of the two valid routes: ε itself, or via ε²/2-zCDP (wins for many small ε)."""
        return ApproxDP(min(self.epsilon, zcdp_epsilon(self.epsilon**2 / 2.0, delta)), delta)


@dataclass(frozen=True)
class ApproxDP:
    """(ε, δ)-DP. Composition is basic: ε and δ add (prefer composing in zCDP and converting once).

    >>> ApproxDP(1.0, 1e-6) + ApproxDP(0.5, 1e-6)
    ApproxDP(epsilon=1.5, delta=2e-06)
    """

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", non_negative("epsilon", self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))

    def __add__(self, other: ApproxDP) -> ApproxDP:
        if not isinstance(other, ApproxDP):
            return NotImplemented
        return ApproxDP(self.epsilon + other.epsilon, self.delta + other.delta)

    def to_approx(self, delta: float) -> ApproxDP:
        """Itself, when ``delta`` is at least its δ (a larger δ is a weaker claim)."""
        if check_delta(delta) < self.delta:
            raise ValueError(f"(epsilon={self.epsilon:g}, delta={self.delta:g})-DP says nothing at the smaller "
                             f"delta={delta:g}; ask at delta >= {self.delta:g}")
        return self

    def to_zcdp(self) -> ZCDP:
        """Not possible: (ε, δ)-DP allows a total failure with probability δ, which no ρ bounds."""
        raise ValueError(f"(epsilon={self.epsilon:g}, delta={self.delta:g})-DP does not imply any rho-zCDP "
                         "(with probability delta it may publish the data); account the mechanism in zCDP instead")


@dataclass(frozen=True)
class ZCDP:
    """ρ-zero-concentrated DP (Bun & Steinke 2016). Composition adds ρ.

    >>> ZCDP(0.1) + ZCDP(0.2)
    ZCDP(rho=0.30000000000000004)
    """

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", non_negative("rho", self.rho))

    def __add__(self, other: ZCDP | PureDP) -> ZCDP:
        if isinstance(other, PureDP):
            other = other.to_zcdp()
        if not isinstance(other, ZCDP):
            return NotImplemented
        return ZCDP(self.rho + other.rho)

    __radd__ = __add__

    def to_zcdp(self) -> ZCDP:
        """Itself."""
        return self

    def to_approx(self, delta: float) -> ApproxDP:
        """ρ-zCDP ⇒ (ε, δ)-DP with the tight CKS 2020 conversion."""
        return ApproxDP(zcdp_epsilon(self.rho, delta), delta)


Privacy = PureDP | ApproxDP | ZCDP


def amount(privacy: Privacy) -> float:
    """The number a loss in this definition's unit is compared with: ε for pure and (ε, δ)-DP, ρ for zCDP.

    >>> amount(PureDP(0.5)), amount(ApproxDP(1.0, 1e-6)), amount(ZCDP(0.1))
    (0.5, 1.0, 0.1)
    """
    return privacy.rho if isinstance(privacy, ZCDP) else privacy.epsilon


def privacy_words(privacy: Privacy, delta: float | None = None) -> str:
    """A privacy value written for people, the one way every page and file shows it (never its repr).

    ρ is followed by its ε at ``delta`` (CKS 2020) when a δ is given; four significant digits.

    >>> privacy_words(PureDP(0.1)), privacy_words(ApproxDP(1.0, 1e-6))
    ('ε = 0.1', 'ε = 1 at δ = 1e-06')
    >>> privacy_words(ZCDP(0.005), 1e-6), privacy_words(ZCDP(0.005))
    ('ρ = 0.005 (ε 0.4299 at δ 1e-06)', 'ρ = 0.005')
    """
    if isinstance(privacy, ZCDP):
        if delta is None or privacy.rho == 0:
            return f"ρ = {privacy.rho:.4g}"
        return f"ρ = {privacy.rho:.4g} (ε {zcdp_epsilon(privacy.rho, check_delta(delta)):.4g} at δ {delta:g})"
    if isinstance(privacy, ApproxDP):
        return f"ε = {privacy.epsilon:.4g} at δ = {privacy.delta:g}"
    if isinstance(privacy, PureDP):
        return f"ε = {privacy.epsilon:.4g}"
    raise ValueError(f"privacy must be PureDP, ApproxDP or ZCDP, got {privacy!r}")


def privacy_record(privacy: Privacy) -> dict[str, str | float]:
    """A privacy value as JSON-able fields: its definition's name and parameters (``privacy_from_record`` reads it).

    >>> privacy_record(ApproxDP(1.0, 1e-6))
    {'definition': 'approx', 'epsilon': 1.0, 'delta': 1e-06}
    >>> privacy_from_record(privacy_record(ZCDP(0.5)))
    ZCDP(rho=0.5)
    """
    if isinstance(privacy, ZCDP):
        return {"definition": "zcdp", "rho": float(privacy.rho)}
    if isinstance(privacy, ApproxDP):
        return {"definition": "approx", "epsilon": float(privacy.epsilon), "delta": float(privacy.delta)}
    if isinstance(privacy, PureDP):
        return {"definition": "pure", "epsilon": float(privacy.epsilon)}
    raise ValueError(f"privacy must be PureDP, ApproxDP or ZCDP, got {privacy!r}")


def privacy_from_record(doc: Mapping[str, object]) -> Privacy:
    """The privacy value ``privacy_record`` wrote; ValueError naming the definition when it is not one."""
    definition = doc.get("definition")
    if definition == "zcdp":
        return ZCDP(float(doc["rho"]))  # type: ignore[arg-type]  # non_negative checks the value
    if definition == "approx":
        return ApproxDP(float(doc["epsilon"]), float(doc["delta"]))  # type: ignore[arg-type]  # checked likewise
    if definition == "pure":
        return PureDP(float(doc["epsilon"]))  # type: ignore[arg-type]  # checked likewise
    raise ValueError(f"privacy definition must be one of {sorted(DEFINITIONS)}, got {definition!r}")


def compose(costs: list[Privacy] | tuple[Privacy, ...]) -> Privacy:
    """Sequential composition: exact within a definition; pure and zCDP mix in zCDP; (ε, δ) only with (ε, δ).

    >>> compose([PureDP(1.0)] * 1000)
    PureDP(epsilon=1000.0)
    >>> compose([PureDP(0.1), ZCDP(0.01)])
    ZCDP(rho=0.015000000000000001)
    """
    if not costs:
        raise ValueError("compose needs at least one privacy cost, got none")
    kinds = {type(c) for c in costs}
    if kinds == {PureDP} or kinds == {ApproxDP}:
        total = costs[0]
        for cost in costs[1:]:
            total = total + cost  # type: ignore[operator]  # kinds is one type: PureDP + PureDP or ApproxDP + ApproxDP
        return total
    if ApproxDP in kinds:
        raise ValueError("cannot compose (epsilon, delta)-DP with zCDP exactly; convert the zCDP costs with "
                         ".to_approx(delta) first (basic composition)")
    return ZCDP(math.fsum(c.to_zcdp().rho for c in costs))


# ----------------------------------------------------------------------------- zCDP ⇒ (ε, δ)
def _cks_bound(rho: float, delta: float, alpha: float) -> float:
    # CKS 2020 Prop. 12: ε = ρα + (ln(1/δ) + (α−1) ln(1−1/α) − ln α) / (α−1), valid for every α > 1
    return rho * alpha + (math.log(1.0 / delta) + (alpha - 1.0) * math.log1p(-1.0 / alpha)
                          - math.log(alpha)) / (alpha - 1.0)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """ε such that ρ-zCDP implies (ε, δ)-DP: the CKS 2020 bound minimised over the Rényi order α.

    The bound is valid at every α, so any α gives a sound ε; the minimiser only tightens it.

    >>> round(zcdp_epsilon(0.5, 1e-6), 6), round(zcdp_epsilon(0.005, 1e-5), 6)
    (5.221534, 0.375261)
    """
    rho, delta = non_negative("rho", rho), check_delta(delta)
    if rho == 0:
        return 0.0

    def bound(t: float) -> float:  # α = 1 + e^t keeps α > 1 and spans orders 1 + 1e-9 … 1 + e^40
        return _cks_bound(rho, delta, 1.0 + math.exp(t))

    # the optimum is near α − 1 ≈ √(ln(1/δ)/ρ); search a wide bracket in log(α − 1) around it
    centre = 0.5 * math.log(math.log(1.0 / delta) / rho)
    from scipy import optimize  # scipy.optimize costs ~0.3 s to import: only when a ρ is converted

    result = optimize.minimize_scalar(bound, bounds=(centre - 20.0, centre + 20.0), method="bounded",
                                      options={"xatol": 1e-12})
    return max(0.0, float(min(result.fun, bound(centre))))


def zcdp_rho(epsilon: float, delta: float) -> float:
    """The largest ρ whose ρ-zCDP implies (ε, δ)-DP (bisection on ``zcdp_epsilon``, rounded down).

    >>> round(zcdp_rho(1.0, 1e-6), 6)
    0.024356
    """
    epsilon, delta = non_negative("epsilon", epsilon), check_delta(delta)
    if epsilon == 0:
        return 0.0
    high = max(1.0, epsilon)
    while zcdp_epsilon(high, delta) <= epsilon:
        high *= 2.0
    return bisect_monotone(lambda rho: zcdp_epsilon(rho, delta) <= epsilon, 0.0, high, true_side="low",
                           rtol=1e-15)[0]


# ----------------------------------------------------------------------------- the Gaussian mechanism
def gaussian_delta(epsilon: float, sigma: float, sensitivity: float = 1.0) -> float:
    """The exact privacy curve δ(ε) of N(0, σ²) noise on a query of L2 sensitivity Δ₂ (Balle & Wang 2018, Thm. 8).

    δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ), the least δ for which the mechanism is (ε, δ)-DP.

    >>> round(gaussian_delta(1.0, 3.730632), 10)
    1e-05
    """
    positive("sigma", sigma)
    if sensitivity == 0:
        return 0.0
    a, b = sensitivity / (2.0 * sigma), epsilon * sigma / sensitivity
    # log-space for e^ε Φ(·): the product under/overflows at large ε while the difference stays tiny
    value = special.ndtr(a - b) - math.exp(epsilon + special.log_ndtr(-a - b))
    return max(0.0, float(value))


def _least_true(predicate: Callable[[float], bool], low: float, high: float) -> float:
    """The least value where a monotone predicate (True above its switch) holds, from above (the safe side)."""
    while not predicate(high):
        low, high = high, high * 2.0
    return bisect_monotone(predicate, low, high, true_side="high", rtol=1e-13)[1]


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The least σ for which N(0, σ²) noise is (ε, δ)-DP: Balle & Wang's analytic Gaussian, by bisection.

    Rounded up, so the returned σ is always sufficient.

    >>> round(analytic_gaussian_sigma(1.0, 1e-5), 6)
    3.730632
    """
    epsilon, delta = positive("epsilon", epsilon), check_delta(delta)
    return sensitivity * _least_true(lambda s: gaussian_delta(epsilon, s) <= delta, 1e-12, 1.0)


def classical_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Dwork & Roth's σ = Δ₂√(2 ln(1.25/δ))/ε (Thm. A.1; valid for ε < 1 only), shown for comparison.

    >>> round(classical_gaussian_sigma(1.0, 1e-5), 6)
    4.844805
    """
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / check_delta(delta))) / non_negative("epsilon", epsilon)


def gaussian_epsilon(sigma: float, delta: float, sensitivity: float = 1.0) -> float:
    """The least ε at which N(0, σ²) noise with L2 sensitivity Δ₂ is (ε, δ)-DP (inverts the exact curve).

    Rounded up. ``privacy_loss`` of an analytic-Gaussian release.

    >>> round(gaussian_epsilon(3.730632, 1e-5), 5)
    1.0
    """
    delta = check_delta(delta)
    if sensitivity == 0:
        return 0.0
    if gaussian_delta(0.0, sigma, sensitivity) <= delta:
        return 0.0
    return _least_true(lambda e: gaussian_delta(e, sigma, sensitivity) <= delta, 0.0, 1.0)


def zcdp_sigma(rho: float, sensitivity: float = 1.0) -> float:
    """σ = Δ₂/√(2ρ): N(0, σ²) noise is then ρ-zCDP (Bun & Steinke 2016, Prop. 1.6).

    >>> zcdp_sigma(0.5)
    1.0
    """
    rho = positive("rho", rho)
    return sensitivity / math.sqrt(2.0 * rho)


def gaussian_rho(sigma: float, sensitivity: float = 1.0) -> float:
    """ρ = Δ₂²/(2σ²) of N(0, σ²) noise on a query of L2 sensitivity Δ₂.

    >>> gaussian_rho(1.0)
    0.5
    """
    positive("sigma", sigma)
    return sensitivity**2 / (2.0 * sigma**2)


def target(definition: str, epsilon: float, delta: float) -> Privacy:
    """The privacy value of a definition at "ε at δ" (the app's common x-axis).

    >>> target("zcdp", 1.0, 1e-6)
    ZCDP(rho=0.02435...)
    """
    if definition == "pure":
        return PureDP(epsilon)
    if definition == "approx":
        return ApproxDP(epsilon, delta)
    if definition == "zcdp":
        return ZCDP(zcdp_rho(epsilon, delta))
    raise ValueError(f"definition must be one of {sorted(DEFINITIONS)}, got {definition!r}")


@dataclass(frozen=True)
class EpsilonAxis:
    """The common x-axis of Compare and Choose ε: a point ε means "ε at ``delta``" under ``definition``, and
    ``privacy(ε)`` is the privacy value every mechanism on the axis is handed (so Laplace and Gaussian mechanisms
    compare at the same guarantee). Under "pure" a point is ε itself.

    >>> EpsilonAxis("zcdp", 1e-6).privacy(1.0)
    ZCDP(rho=0.02435...)
    >>> EpsilonAxis().privacy(0.5), EpsilonAxis("approx").describe()
    (PureDP(epsilon=0.5), 'epsilon at delta = 1e-06 under (epsilon, delta)-DP')
    """

    definition: str = "pure"
    delta: float = 1e-6

    def __post_init__(self) -> None:
        if self.definition not in DEFINITIONS:
            raise ValueError(f"definition must be one of {sorted(DEFINITIONS)}, got {self.definition!r}")
        check_delta(self.delta)

    def privacy(self, epsilon: float) -> Privacy:
        """The privacy value at the axis point ``epsilon``."""
        return target(self.definition, positive("epsilon", epsilon), self.delta)

    def describe(self) -> str:
        """The axis in words (a plain-text label for files and logs)."""
        if self.definition == "pure":
            return "epsilon (pure epsilon-DP)"
        words = "rho-zCDP" if self.definition == "zcdp" else "(epsilon, delta)-DP"
        return f"epsilon at delta = {self.delta:g} under {words}"


PURE_AXIS = EpsilonAxis()  # a point is ε itself


NEIGHBOURING_SENSITIVITY = {"add_remove": 1.0, "replace_one": 2.0}  # Δ₁ of a count vector


def cell_sensitivity(neighbouring: str) -> float:
    """Δ₁ of the count vector under a neighbouring relation: 1 under add/remove, 2 under replace-one.

    >>> cell_sensitivity("add_remove"), cell_sensitivity("replace_one")
    (1.0, 2.0)
    """
    if neighbouring not in NEIGHBOURING_SENSITIVITY:
        raise ValueError(f"neighbouring must be one of {tuple(NEIGHBOURING_SENSITIVITY)}, got {neighbouring!r}")
    return NEIGHBOURING_SENSITIVITY[neighbouring]
