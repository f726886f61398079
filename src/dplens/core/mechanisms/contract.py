"""The mechanism contract: what a release holds (``Release``), what every mechanism provides (``Mechanism``),
the shared checks and accounting helpers, and the documented ranges of the mechanisms' settings.

Every mechanism module imports from here; ``dplens.core.mechanisms`` re-exports these names beside the registry.

>>> Range(1, 1000, integer=True).check("rounds", 10)
10
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

import numpy as np

from dplens.core.data.limits import MAX_EPSILON, MAX_QUERIES, MIN_EPSILON
from dplens.core.privacy.definitions import ZCDP, ApproxDP, Privacy, PureDP, amount, zcdp_epsilon
from dplens.core.queries.workloads import Workload, marginal_names
from dplens.core.validate import fraction, positive

NEIGHBOURING = "add/remove one record (unbounded DP): x' = x ± e_j"

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class Release:
    """What was published, and how noisy it is: one record for histograms and tables alike (cf. private-pgm's
    LinearMeasurement).

    ``budget`` is what the release was asked to spend, in its definition's unit: ``PureDP(ε)``, ``ApproxDP(ε, δ)``
    or ``ZCDP(ρ)``. ``privacy_loss`` is the worst-case loss of the noise actually added, in that same unit (ε, ε at
    the budget's δ, or ρ), computed by the mechanism from its noise blocks (never copied from the budget).
    ``answers`` are the noisy answers to ``workload`` (the query block), W x̂; ``estimate`` is x̂ when the mechanism
    has one.
    ``measurements`` are what it measured, as records (``dplens.core.mechanisms.measurement``: the query, the noise
    and the noisy values of each linear measurement, the ε of each private choice); each answers its own loss in
    any unit, and their composition is the loss the release kernel checks.
    ``details`` holds display-only structure (division tree, groups, factorisation); it is never exported.

    A release on a table of records (its workload a ``MarginalWorkload``) also holds one estimate per marginal
    (``marginals``), each marginal's per-cell standard deviation when it is known analytically
    (``marginal_stds``) or its exact per-cell half-widths at ``INTERVAL_LEVEL`` when the noise is not Gaussian
    (``marginal_halfwidths``), and a synthesiser's ``records``.

    >>> from dplens.core.privacy.definitions import PureDP
    >>> r = Release("identity", PureDP(0.5), 0.5, np.zeros(2), np.zeros(2))
    >>> r.epsilon, r.allowed_loss
    (0.5, 0.5)
    """

    mechanism: str
    budget: Privacy
    privacy_loss: float
    answers: np.ndarray
    estimate: np.ndarray | None
    params: Mapping[str, Any] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)
    workload: Workload | None = None
    marginal_estimates: list[np.ndarray] | None = None
    marginal_stds: list[float] | None = None
    marginal_halfwidths: list[np.ndarray] | None = None
    records: np.ndarray | None = None
    measurements: tuple[Any, ...] = ()  # MeasurementRecord (dplens.core.mechanisms.measurement imports this module)

    def by_marginal(self) -> list[tuple[tuple[str, ...], np.ndarray]]:
        """Each released marginal's attributes with its cell estimates (a release on a table), else ValueError.

        >>> from dplens.core.privacy.definitions import PureDP
        >>> Release("identity", PureDP(1.0), 1.0, np.zeros(1), None).by_marginal()
        Traceback (most recent call last):
        ValueError: the identity release holds no marginal estimates: it is not a release on a table of records
        """
        names = marginal_names(self.workload)
        if names is None or self.marginal_estimates is None:
            raise ValueError(f"the {self.mechanism} release holds no marginal estimates: it is not a release on a "
                             "table of records")
        return list(zip(names, self.marginal_estimates, strict=True))

    @property
    def allowed_loss(self) -> float:
        """The budget in ``privacy_loss``'s unit: ε for pure and (ε, δ) budgets, ρ for zCDP."""
        return amount(self.budget)

    @property
    def loss_unit(self) -> str:
        """``"rho"`` under a zCDP budget, else ``"epsilon"``."""
        return "rho" if isinstance(self.budget, ZCDP) else "epsilon"

    @property
    def epsilon(self) -> float:
        """The ε of the budget; under zCDP the "ε at δ" it was run at (``params["epsilon_at_delta"]``), else the CKS ε
        of its ρ at the release's δ (``params["delta"]``).

        >>> from dplens.core.queries.workloads import Identity
        >>> from dplens.core.mechanisms.laplace import LaplaceIdentity
        >>> LaplaceIdentity().run(np.ones(2), Identity(2), 0.5, np.random.default_rng(0)).epsilon
        0.5
        """
        if isinstance(self.budget, ZCDP):
            if "epsilon_at_delta" in self.params:
                return float(self.params["epsilon_at_delta"])
            delta = self.params.get("delta")
            if not delta:
                raise ValueError(f"a rho-zCDP release (rho={self.budget.rho:g}) without a delta has no epsilon; "
                                 "read release.budget")
            return zcdp_epsilon(self.budget.rho, float(delta))
        return self.budget.epsilon


@runtime_checkable
class Mechanism(Protocol):
    """What every registered mechanism provides."""

    @property
    def name(self) -> str: ...  # read-only: the mechanisms are frozen dataclasses

    @property
    def data_dependent(self) -> bool: ...  # its strategy reads the data (so no shipped strategy, no exact intervals);
    #                                         "no closed-form error" is expected_mse returning None, "slow" is cost()

    # ``privacy``: a PureDP, ApproxDP or ZCDP value, or a bare number (pure ε; ε at δ = 1e-6 for Gaussian noise);
    # a definition the noise cannot meet is refused by name (measurement.supported_privacy)
    def run(self, x: np.ndarray, workload: Workload, privacy: Privacy | float, rng: np.random.Generator) -> Release: ...

    def expected_mse(self, workload: Workload, privacy: Privacy | float) -> float | None: ...


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """Validate a privacy parameter: a finite number > 0.

    >>> check_epsilon(0.5)
    0.5
    """
    return positive(name, epsilon)


def check_budget_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """A privacy budget to spend: finite and in [MIN_EPSILON, MAX_EPSILON] (dplens.core.data.limits).

    Larger values protect nothing and overflow some mechanisms' arithmetic (ε², e^ε); smaller ones
    underflow ε² in the error formulas.

    >>> check_budget_epsilon(0.5)
    0.5
    >>> check_budget_epsilon(1e-300)
    Traceback (most recent call last):
    ValueError: epsilon must be in [1e-06, 1000] (dplens.core.data.limits MIN_EPSILON, MAX_EPSILON), got 1e-300
    """
    epsilon = check_epsilon(epsilon, name)
    if not MIN_EPSILON <= epsilon <= MAX_EPSILON:
        raise ValueError(f"{name} must be in [{MIN_EPSILON:g}, {MAX_EPSILON:g}] (dplens.core.data.limits MIN_EPSILON, "
                         f"MAX_EPSILON), got {epsilon!r}")
    return epsilon


def check_ratio(ratio: float, name: str = "ratio") -> float:
    """Validate a budget split ratio in the open interval (0, 1)."""
    return fraction(name, ratio)


def as_privacy(value: Privacy | float) -> Privacy:
    """The privacy value a mechanism runs at: ``PureDP``, ``ApproxDP`` or ``ZCDP`` as given; a bare number is pure ε.

    >>> as_privacy(0.5), as_privacy(ZCDP(0.1))
    (PureDP(epsilon=0.5), ZCDP(rho=0.1))
    """
    if isinstance(value, PureDP | ApproxDP | ZCDP):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise ValueError(f"epsilon must be a number > 0 (pure epsilon) or a privacy value: PureDP(epsilon), "
                         f"ApproxDP(epsilon, delta) or ZCDP(rho); got {value!r}")
    return PureDP(check_epsilon(float(value)))


def laplace_epsilon(privacy: Privacy | float) -> float:
    """The ε at which Laplace noise meets ``privacy``: ε under pure and (ε, δ)-DP (δ = 0 suffices), √(2ρ) under
    ρ-zCDP (ε-DP ⇒ ε²/2-zCDP, Bun & Steinke 2016 Prop. 1.4); in the documented budget range.

    >>> laplace_epsilon(0.5), laplace_epsilon(ApproxDP(1.0, 1e-6)), laplace_epsilon(ZCDP(0.5))
    (0.5, 1.0, 1.0)
    """
    privacy = as_privacy(privacy)
    epsilon = math.sqrt(2.0 * privacy.rho) if isinstance(privacy, ZCDP) else privacy.epsilon
    return check_budget_epsilon(epsilon)


def check_inputs(x: np.ndarray, workload: Workload, epsilon: Privacy | float) -> tuple[np.ndarray, float]:
    """The boundary checks of ``Mechanism.run``: x matches the workload, counts valid, a privacy value in range; returns
    the flattened x and the Laplace ε of the privacy value (``laplace_epsilon``).

    ``x`` may be the 1-D data vector or a 2-D histogram (row-major, as ``Histogram.counts``); the
    flattened vector is returned. 2-D-aware mechanisms read ``grid_shape(x)`` before calling this.
    """
    epsilon = laplace_epsilon(epsilon)
    m, n = workload.shape
    if m > MAX_QUERIES:
        raise ValueError(too_many_answers("a run", m, MAX_QUERIES))
    x = np.asarray(x, dtype=float)
    if x.ndim not in (1, 2) or x.size != n:
        raise ValueError(f"data x has shape {x.shape} but the workload has {n} columns; "
                         "pass histogram.counts (1-D or 2-D) or histogram.vector")
    x = x.ravel()
    if not np.all(np.isfinite(x)):
        raise ValueError("data vector x must be finite (no NaN or inf)")
    if np.any(x < 0):
        raise ValueError("data vector x must be non-negative counts")
    return x, epsilon


def too_many_answers(what: str, queries: float, limit: float) -> str:
    """Why ``what`` is refused: its release would list one answer per query, ``queries`` of them, over ``limit``.

    Workloads are implicit operators and may have more queries (all-range on 16,384 cells has 134,225,920): their
    analytic errors (``expected_mse``) and mm-opt's strategy need no answers; a release does.

    >>> too_many_answers("a run", 134_225_920, 2**24)[:86]
    'a run would release 134,225,920 answers (one per query of the workload), more than MAX'
    """
    return (f"{what} would release {queries:,.0f} answers (one per query of the workload), more than "
            f"MAX_QUERIES={limit:,.0f} (dplens.core.data.limits): choose a workload with fewer queries "
            "(random-range:m=2000) or fewer cells; the expected error (expected_mse) needs no answers and is computed "
            "at this size")


def grid_shape(x: np.ndarray) -> tuple[int, ...]:
    """The histogram shape passed to ``run``: (n,) for 1-D data, (rows, cols) for 2-D.

    >>> grid_shape(np.zeros((2, 3)))
    (2, 3)
    """
    return tuple(int(s) for s in np.shape(x))


def laplace_privacy_loss(blocks: Iterable[tuple[np.ndarray, float]]) -> float:
    """Worst-case loss of independent Laplace blocks y_ℓ = A_ℓ x + Lap(b_ℓ): max_j Σ_ℓ ‖A_ℓ e_j‖₁/b_ℓ.

    Each block is (column L1 norms of A_ℓ, Laplace scale b_ℓ); the loss is
    L = max_j Σ_ℓ ‖A_ℓ e_j‖₁ / b_ℓ under add/remove neighbours.

    >>> laplace_privacy_loss([(np.ones(4), 2.0), (np.array([0, 1, 0, 0.5]), 1.0)])
    1.5
    """
    total: np.ndarray | float = 0.0
    for column_l1, scale in blocks:
        column_l1 = np.asarray(column_l1, dtype=float)
        if not np.any(column_l1):
            continue  # a block that does not read the data costs nothing
        if not scale > 0:
            raise ValueError(f"a block that reads the data needs a Laplace scale > 0, got {scale!r}")
        total = total + column_l1 / scale
    return float(np.max(total)) if np.ndim(total) else float(total)


def exponential_mechanism(scores: np.ndarray, epsilon: float, sensitivity: float,
                          rng: np.random.Generator) -> int:
    """Sample index i with probability ∝ exp(ε·score_i / (2·sensitivity)) (McSherry–Talwar); ε-DP.

    Uses the Gumbel-max trick, which samples exactly that distribution.

    >>> exponential_mechanism(np.array([0.0, 100.0]), 1.0, 1.0, np.random.default_rng(0))
    1
    """
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1 or scores.size == 0 or not np.all(np.isfinite(scores)):
        raise ValueError("scores must be a non-empty 1-D array of finite numbers")
    check_epsilon(epsilon)
    # dplens.core.privacy.noise.SecureNoise samples in OpenDP
    secure_select = getattr(rng, "exponential_mechanism", None)
    if secure_select is not None:
        return secure_select(scores, epsilon, sensitivity)
    logits = epsilon * scores / (2.0 * sensitivity)
    return int(np.argmax(logits + rng.gumbel(size=scores.size)))


@dataclass(frozen=True)
class Range:
    """The documented valid values of one mechanism parameter: a number interval and/or named choices.

    >>> str(Range(1, 1000, integer=True)), str(Range(0, 1, open=True)), str(Range(choices=("auto",), low=2, high=8,
    ...     integer=True))
    ('an integer in [1, 1000]', 'a number in (0, 1)', "'auto' or an integer in [2, 8]")
    >>> Range(1, 1000, integer=True).check("rounds", 10**8)
    Traceback (most recent call last):
    ValueError: rounds must be an integer in [1, 1000], got 100000000
    """

    low: float | None = None
    high: float | None = None
    integer: bool = False
    open: bool = False                 # the open interval (low, high), e.g. a budget share
    choices: tuple = ()                # other allowed values: 'auto', None, True/False, rule names

    def __str__(self) -> str:
        parts = [repr(c) for c in self.choices]
        if self.low is not None and self.high is not None:  # low and high are set together
            kind = "an integer" if self.integer else "a number"
            left, right = ("(", ")") if self.open else ("[", "]")
            low, high = (f"{int(v)}" if self.integer else f"{v:g}" for v in (self.low, self.high))
            parts.append(f"{kind} in {left}{low}, {high}{right}")
        return " or ".join(parts)

    def check(self, name: str, value: object) -> object:
        """``value`` (an integral float becomes an int for integer ranges), or ValueError naming the range."""
        if any(value is c or (type(value) is type(c) and value == c) for c in self.choices):
            return value
        if self.low is not None and self.high is not None and not isinstance(value, bool) \
                and isinstance(value, int | float | np.number):
            number = float(value)
            if self.integer and isinstance(value, float | np.floating) and number.is_integer():
                value = int(number)
            inside = self.low < number < self.high if self.open else self.low <= number <= self.high
            if inside and (not self.integer or isinstance(value, int | np.integer)):
                return value
        raise ValueError(f"{name} must be {self}, got {value!r}")


# Ranges several mechanisms share. Each mechanism declares the valid values of a setting on its field, as
# ``ratio: float = setting(0.5, RATIO_RANGE)`` (docs/architecture.md: "Add a mechanism"); the bounds keep one run
# within seconds and a few hundred MB (its ``cost`` estimates the rest).
RATIO_RANGE = Range(0, 1, open=True)                          # a budget share
SEED_RANGE = Range(0, 2**32 - 1, integer=True, choices=(None,))
BRANCHING_RANGE = Range(2, 1024, integer=True)
FLAG_RANGE = Range(choices=(True, False))


def setting(default: T, valid: Range) -> T:
    """A mechanism setting: a dataclass field with ``default`` whose metadata holds its documented range ``valid``.

    A mutable default (list, dict, set) becomes a ``default_factory`` that copies it.

    >>> @dataclass(frozen=True)
    ... class Toy:
    ...     rounds: int = setting(10, Range(1, 1000, integer=True))
    ...     name: str = "toy"
    >>> Toy(), {key: str(valid) for key, valid in parameter_ranges(Toy()).items()}
    (Toy(rounds=10, name='toy'), {'rounds': 'an integer in [1, 1000]'})
    """
    if isinstance(default, list | dict | set):
        return field(default_factory=functools.partial(copy.copy, default), metadata={"range": valid})
    return field(default=default, metadata={"range": valid})


def parameter_ranges(mechanism: Mechanism) -> dict[str, Range]:
    """The documented ranges of ``mechanism``'s settings: each field's ``setting`` range, in field order (histogram
    and table mechanisms alike; a class-level dict of ranges is no longer read).

    A subclass that redeclares a field only to change its default keeps the range the nearest base declared.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> str(parameter_ranges(MECHANISMS["mwem"])["rounds"])
    "'auto' or an integer in [1, 1000]"
    """
    ranges: dict[str, Range] = {}
    if dataclasses.is_dataclass(mechanism):
        for f in dataclasses.fields(mechanism):
            valid = _declared_range(type(mechanism), f.name)
            if valid is not None:
                ranges[f.name] = valid
    return ranges


def setting_fields(mechanism: object) -> tuple[dataclasses.Field[Any], ...]:
    """The settings of a registered mechanism: its dataclass fields but ``name`` and ``data_dependent``.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> [f.name for f in setting_fields(MECHANISMS["mwem"])][:1]
    ['rounds']
    """
    if not dataclasses.is_dataclass(mechanism):
        raise TypeError(f"{mechanism!r} is not a dataclass: registered mechanisms are frozen dataclasses")
    return tuple(f for f in dataclasses.fields(mechanism) if f.name not in ("name", "data_dependent"))


def _replace(mechanism: Mechanism, changes: Mapping[str, object]) -> Mechanism:
    """``dataclasses.replace`` for a registered mechanism (a frozen dataclass instance)."""
    if not dataclasses.is_dataclass(mechanism) or isinstance(mechanism, type):
        raise TypeError(f"{mechanism!r} is not a dataclass instance: registered mechanisms are frozen dataclasses")
    return cast(Mechanism, dataclasses.replace(mechanism, **changes))  # replace keeps the class


def _declared_range(cls: type, name: str) -> Range | None:
    for klass in cls.__mro__:
        declared = getattr(klass, "__dataclass_fields__", {}).get(name)
        if declared is not None and "range" in declared.metadata:
            return declared.metadata["range"]
    return None


def check_parameters(mechanism: Mechanism) -> Mechanism:
    """``mechanism`` with every setting inside its documented range, or ValueError naming parameter, value and range.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> check_parameters(MECHANISMS["mwem"]).rounds
    10
    >>> check_parameters(dataclasses.replace(MECHANISMS["dawa"], granularity=10**8))
    Traceback (most recent call last):
    ValueError: dawa: granularity must be an integer in [2, 1000], got 100000000
    """
    ranges = parameter_ranges(mechanism)
    changes = {}
    for f in setting_fields(mechanism):
        if f.name not in ranges:
            continue
        value = getattr(mechanism, f.name)
        try:
            checked = ranges[f.name].check(f.name, value)
        except ValueError as err:
            raise ValueError(f"{mechanism.name}: {err}") from None
        if checked is not value:
            changes[f.name] = checked
    return _replace(mechanism, changes) if changes else mechanism


# Settings the Gaussian mechanisms had before they took a privacy value ((ε, δ) or ρ-zCDP carries δ and the
# definition): read from older saved workspaces, configs and commands, and ignored.
LEGACY_GAUSSIAN_SETTINGS = ("delta", "calibration")


def configure(mechanism: Mechanism, params: Mapping[str, object]) -> Mechanism:
    """A copy of ``mechanism`` with settings replaced; strings are coerced to the field's type.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> configure(MECHANISMS["identity"], {}).name
    'identity'
    """
    fields = {f.name: f for f in setting_fields(mechanism)}
    changes = {}
    for key, value in params.items():
        if key in LEGACY_GAUSSIAN_SETTINGS and key not in fields and getattr(mechanism, "noise", "") == "gaussian":
            continue  # saved before the privacy value carried δ and the definition: the value it runs at decides
        if key not in fields:
            allowed = ", ".join(fields) or "none"
            raise ValueError(f"mechanism {mechanism.name!r} has no parameter {key!r}; parameters: {allowed}")
        current = getattr(mechanism, key)
        if isinstance(value, str) and not isinstance(current, str):
            value = _coerce(key, value, current)
        changes[key] = value
    try:
        configured = _replace(mechanism, changes)
    except TypeError as err:
        raise ValueError(f"bad parameters for {mechanism.name!r}: {err}") from None
    return check_parameters(configured)


def _coerce(key: str, text: str, current: object) -> object:
    text = text.strip()
    if isinstance(current, bool):
        if text.lower() in ("true", "1", "yes"):
            return True
        if text.lower() in ("false", "0", "no"):
            return False
        raise ValueError(f"parameter {key!r} must be true or false, got {text!r}")
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def answers_from_estimate(workload: Workload, estimate: np.ndarray) -> np.ndarray:
    """Answer the workload from a histogram estimate (post-processing)."""
    return workload.matvec(estimate)
