"""The mechanism contract (style.md §1.3), shared accounting helpers, and the MECHANISMS registry.

A mechanism is a frozen dataclass that holds only its own settings. Data, workload, epsilon and the
noise source are arguments to ``run``:

>>> import numpy as np
>>> from core.workloads import Prefix
>>> release = MECHANISMS["identity"].run(np.array([3.0, 1, 4]), Prefix(3), 1.0, np.random.default_rng(0))
>>> release.answers.shape, release.privacy_loss <= release.epsilon
((3,), True)

Randomness: mechanisms draw noise only through ``rng.laplace(scale=..., size=...)``, uniform draws
through ``rng.random``/``rng.integers``/``rng.permutation``, and selections through
``exponential_mechanism`` below, so that the noise source can be a seeded ``np.random.Generator``
(exploration) or a secure sampler with the same methods (exports).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from core.limits import MAX_EPSILON
from core.workloads import Workload

NEIGHBOURING = "add/remove one record (unbounded DP): x' = x ± e_j"


@dataclass(frozen=True, eq=False)
class Release:
    """What was published, and how noisy it is (cf. private-pgm's LinearMeasurement).

    ``privacy_loss`` is the worst-case loss of the noise actually added, computed by the mechanism
    from its noise blocks (never copied from ``epsilon``). ``details`` holds display-only structure
    (division tree, groups, factorisation); it is never exported.
    """

    mechanism: str
    epsilon: float
    privacy_loss: float
    answers: np.ndarray
    estimate: np.ndarray | None
    params: Mapping[str, object] = field(default_factory=dict)
    details: Mapping[str, object] = field(default_factory=dict)


@runtime_checkable
class Mechanism(Protocol):
    """What every registered mechanism provides."""

    name: str
    data_dependent: bool

    def run(self, x: np.ndarray, workload: Workload, epsilon: float, rng: np.random.Generator) -> Release: ...

    def expected_mse(self, workload: Workload, epsilon: float) -> float | None: ...


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """Validate a privacy parameter: finite and > 0.

    >>> check_epsilon(0.5)
    0.5
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a number > 0, got {epsilon!r}")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"{name} must be finite and > 0, got {epsilon!r}")
    return float(epsilon)


def check_ratio(ratio: float, name: str = "ratio") -> float:
    """Validate a budget split ratio in the open interval (0, 1)."""
    if not (isinstance(ratio, int | float | np.floating) and 0 < ratio < 1):
        raise ValueError(f"{name} must be in (0, 1), got {ratio!r}")
    return float(ratio)


def check_inputs(x: np.ndarray, workload: Workload, epsilon: float) -> tuple[np.ndarray, float]:
    """The boundary checks of ``Mechanism.run``: x matches the workload, counts valid, epsilon > 0.

    ``x`` may be the 1-D data vector or a 2-D histogram (row-major, as ``Histogram.counts``); the
    flattened vector is returned. 2-D-aware mechanisms read ``grid_shape(x)`` before calling this.
    """
    epsilon = check_epsilon(epsilon)
    if epsilon > MAX_EPSILON:  # protects nothing, and overflows some mechanisms' arithmetic (ε², e^ε)
        raise ValueError(f"epsilon must be <= {MAX_EPSILON:g} (core.limits.MAX_EPSILON), got {epsilon!r}")
    x = np.asarray(x, dtype=float)
    n = workload.shape[1]
    if x.ndim not in (1, 2) or x.size != n:
        raise ValueError(f"data x has shape {x.shape} but the workload has {n} columns; "
                         "pass histogram.counts (1-D or 2-D) or histogram.vector")
    x = x.ravel()
    if not np.all(np.isfinite(x)):
        raise ValueError("data vector x must be finite (no NaN or inf)")
    if np.any(x < 0):
        raise ValueError("data vector x must be non-negative counts")
    return x, epsilon


def grid_shape(x: np.ndarray) -> tuple[int, ...]:
    """The histogram shape passed to ``run``: (n,) for 1-D data, (rows, cols) for 2-D.

    >>> grid_shape(np.zeros((2, 3)))
    (2, 3)
    """
    return tuple(int(s) for s in np.shape(x))


def laplace_privacy_loss(blocks: Iterable[tuple[np.ndarray, float]]) -> float:
    """Worst-case loss of independent Laplace blocks y_ℓ = A_ℓ x + Lap(b_ℓ) (spec §0 idiom).

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
    secure_select = getattr(rng, "exponential_mechanism", None)  # core.noise.SecureNoise samples in OpenDP
    if secure_select is not None:
        return secure_select(scores, epsilon, sensitivity)
    logits = epsilon * scores / (2.0 * sensitivity)
    return int(np.argmax(logits + rng.gumbel(size=scores.size)))


def configure(mechanism: Mechanism, params: Mapping[str, object]) -> Mechanism:
    """A copy of ``mechanism`` with settings replaced; strings are coerced to the field's type.

    >>> configure(MECHANISMS["identity"], {}).name
    'identity'
    """
    fields = {f.name: f for f in dataclasses.fields(mechanism) if f.name not in ("name", "data_dependent")}
    changes = {}
    for key, value in params.items():
        if key not in fields:
            allowed = ", ".join(fields) or "none"
            raise ValueError(f"mechanism {mechanism.name!r} has no parameter {key!r}; parameters: {allowed}")
        current = getattr(mechanism, key)
        if isinstance(value, str) and not isinstance(current, str):
            value = _coerce(key, value, current)
        changes[key] = value
    try:
        return dataclasses.replace(mechanism, **changes)
    except TypeError as err:
        raise ValueError(f"bad parameters for {mechanism.name!r}: {err}") from None


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


from core.mechanisms.ahp import AHP  # noqa: E402
from core.mechanisms.dawa import DAWA  # noqa: E402
from core.mechanisms.gaussian import (  # noqa: E402
    GaussianAnswers,
    GaussianGreedyH,
    GaussianHierarchical,
    GaussianIdentity,
    GaussianMatrix,
    GaussianPrivelet,
)
from core.mechanisms.greedy_h import GreedyH  # noqa: E402
from core.mechanisms.grids import AdaptiveGrid, UniformGrid  # noqa: E402
from core.mechanisms.hierarchical import Hierarchical  # noqa: E402
from core.mechanisms.laplace import Identity, LaplaceOnAnswers, Uniform  # noqa: E402
from core.mechanisms.matrix import MatrixMechanism  # noqa: E402
from core.mechanisms.mwem import MWEM  # noqa: E402
from core.mechanisms.om import OM  # noqa: E402
from core.mechanisms.privelet import Privelet  # noqa: E402
from core.mechanisms.sreb_gca import SrebGca  # noqa: E402
from core.mechanisms.wda import WDA  # noqa: E402
from core.mechanisms.xiao import CellRelease  # noqa: E402

MECHANISMS: dict[str, Mechanism] = {
    m.name: m
    for m in (
        Identity(),
        LaplaceOnAnswers(),
        Uniform(),
        WDA(),
        OM(),
        SrebGca(),
        Identity(name="dp-base"),  # SReB_GCA's baseline: Identity under the paper's name (spec §1)
        CellRelease(),
        Hierarchical(),
        Privelet(),
        MatrixMechanism(),
        UniformGrid(),
        AdaptiveGrid(),
        GreedyH(),
        DAWA(),
        MWEM(),
        AHP(),
        # Gaussian noise, (ε, δ) at the knob delta (analytic Gaussian) or zCDP (calibration="zcdp")
        GaussianIdentity(),
        GaussianAnswers(),
        GaussianHierarchical(),
        GaussianPrivelet(),
        GaussianGreedyH(),
        GaussianMatrix(),
    )
}

# Registry aliases: other names under which a registered mechanism is known in a paper.
ALIASES: dict[str, str] = {"dp-base": "identity"}
