"""Noise sources: the seeded exploration path and the secure (OpenDP) path for releases that leave.

Mechanisms never call ``np.random`` directly; they draw from the ``rng`` argument of ``run`` through
the few methods in ``NoiseSource``. Two implementations satisfy it:

* **exploration**: a seeded ``np.random.Generator``. Fast and reproducible (sweeps, teaching,
  figures), but textbook floating-point Laplace sampling is *not* exactly DP: Mironov (CCS 2012,
  "On significance of the least significant bits for differential privacy") shows that the low bits
  of ``x + Lap(b)`` computed in doubles can reveal ``x``, and a seeded PRNG is predictable.
* **secure**: ``SecureNoise``, backed by OpenDP 0.16. Noise is never drawn on its own and added in
  floating point: mechanisms call ``add_laplace(rng, values, scale)`` / ``add_gaussian(...)`` and the
  secure source passes the *values themselves* through OpenDP's measurement, which rounds them onto the
  noise lattice 2^k before adding discrete noise, exactly as its privacy proof assumes. (Adding lattice
  noise to unrounded values lets anyone test which neighbour puts ``output - A x`` on the lattice:
  infinite loss.) Rounding moves each value by at most 2^(k-1), which OpenDP's map counts as extra
  sensitivity (size·2^k in L1, √size·2^k in L2); ``k`` is chosen so that extra is at most
  ``LATTICE_SLACK`` of any sensitivity whose loss is at least ``LOSS_FLOOR``, and the scale is widened by
  the factor (1 + ``LATTICE_SLACK``), so the loss of every measurement is at most the mechanism's own
  Δ/scale (``lattice_exponent``). Integer counts with integer sensitivity use the integers
  (``integer=True``: the discrete Laplace / geometric mechanism), where no rounding happens. ``noise_source("secure",
  mechanism=..., counts=...)`` picks the
  integers only when that is sound (``adds_noise_to_counts``): every draw of the mechanism is added
  to an integer count of integer data with integer sensitivity, so x + Z and x' + Z live on the same
  lattice and the loss per unit shift is exactly 1/scale (OpenDP's own privacy map says the same).
  Added to anything else (a wavelet coefficient, a least-squares strategy answer), integer noise
  would put neighbours on disjoint lattices: infinite loss. Selections use
  OpenDP's Gumbel noisy-max (exactly the exponential mechanism), uniform choices use the OS CSPRNG
  (``secrets``). Seeds are ignored. Remaining caveat: the mechanism's own post-processing and its
  addition of non-integer strategy coefficients still run in floating point.

>>> from dplens.core.mechanisms import MECHANISMS
>>> from dplens.core.queries.workloads import Identity
>>> release = MECHANISMS["identity"].run(np.array([3.0, 1, 4]), Identity(3), 1.0, noise_source("secure"))
>>> release.answers.shape
(3,)
"""

from __future__ import annotations

import functools
import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

NOISE_SAMPLERS: dict[str, str] = {  # what produced the Laplace noise; exports state it (``noise_sampler``)
    "numpy-float-laplace": "NumPy's floating-point Laplace from a seeded generator (exploration)",
    "opendp-lattice-laplace": "OpenDP's Laplace measurement: values rounded onto a lattice of spacing 2^k, discrete "
                              "Laplace added",
    "opendp-integer-laplace": "OpenDP's discrete Laplace on the integers, added to integer counts",
    "numpy-float-gaussian": "NumPy's floating-point Gaussian from a seeded generator (exploration)",
    "opendp-lattice-gaussian": "OpenDP's Gaussian measurement: values rounded onto a lattice of spacing 2^k, discrete "
                               "Gaussian added",
    "opendp-integer-gaussian": "OpenDP's discrete Gaussian on the integers (Canonne et al. 2020), added to integer "
                               "counts",
}
NOISE_PATHS: dict[str, str] = {
    "exploration": "seeded NumPy generator: fast and reproducible, floating-point Laplace (not exactly DP)",
    "secure": "OpenDP samplers (exact discrete Laplace on a lattice, CSPRNG); ignores the seed",
}
# Secure float measurements: the rounding onto the lattice adds at most LATTICE_SLACK of the sensitivity of any
# measurement whose loss Δ/scale is at least LOSS_FLOOR, and the scale is widened by (1 + LATTICE_SLACK) to pay
# for it. Below the floor the excess is at most LATTICE_SLACK·LOSS_FLOOR ≈ 8e-28 in absolute ε (or √ρ).
LATTICE_SLACK = 2.0**-30
LOSS_FLOOR = 2.0**-60
# So the lattice exponent is k = floor(log2(scale / spread)) + LATTICE_OFFSET (lattice_exponent reads it): -90.
LATTICE_OFFSET = round(math.log2(LATTICE_SLACK * LOSS_FLOOR))
# The lattice in words, for exports (tables' SECURE_NOISE); built from LATTICE_OFFSET so it cannot drift from the code.
LATTICE_RULE = (f"a lattice of spacing 2^k, k = floor(log2(scale / s)) - {-LATTICE_OFFSET}, s = the number of values "
                "measured together (Laplace) or its square root (Gaussian)")


FREE_NOISE_REFUSAL = ("the secure noise source draws no free-standing noise: pass the values to "
                      "dplens.core.privacy.noise.add_laplace / add_gaussian, which measure them inside OpenDP")


def _size_of(values: object) -> tuple[int, ...] | None:
    """The ``size`` a NumPy draw matching ``values`` takes: its shape for arrays (0-d included), None for scalars."""
    return values.shape if isinstance(values, np.ndarray) else None


def add_laplace(rng: NoiseSource, values: Any, scale: Any) -> Any:
    """``values`` plus i.i.d. Laplace(``scale``) noise: the one way mechanisms add Laplace noise.

    A secure source (``SecureNoise``) measures the values inside OpenDP; a NumPy generator adds its float draws
    (the exploration path: exactly ``values + rng.laplace(scale=scale, size=values.shape)``).

    >>> add_laplace(np.random.default_rng(0), np.zeros(2), 1.0).round(3).tolist()
    [0.32, -0.617]
    """
    measure = getattr(rng, "add_laplace", None)
    if measure is not None:
        return measure(values, scale)
    return values + rng.laplace(scale=scale, size=_size_of(values))


def add_gaussian(rng: NoiseSource, values: Any, sigma: Any) -> Any:
    """``values`` plus i.i.d. N(0, ``sigma``²) noise: the one way mechanisms add Gaussian noise (as ``add_laplace``).

    >>> add_gaussian(np.random.default_rng(0), np.zeros(2), 1.0).round(3).tolist()
    [0.126, -0.132]
    """
    measure = getattr(rng, "add_gaussian", None)
    if measure is not None:
        return measure(values, sigma)
    # the exploration path: a np.random.Generator (NoiseSource lists only what every mechanism may call)
    return values + rng.normal(loc=0.0, scale=sigma, size=_size_of(values))  # type: ignore[attr-defined]


@runtime_checkable
class NoiseSource(Protocol):
    """The randomness a mechanism may use (a subset of ``np.random.Generator``'s methods)."""

    def laplace(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> Any: ...

    def random(self, size: Any = None) -> Any: ...

    def integers(self, low: Any, high: Any = None, size: Any = None) -> Any: ...

    def permutation(self, x: Any) -> Any: ...

    def gumbel(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> Any: ...


def _shape(size: Any) -> tuple[int, ...]:
    if size is None:
        return ()
    return (int(size),) if np.ndim(size) == 0 else tuple(int(s) for s in size)


def _uniform_open(count: int) -> np.ndarray:
    """``count`` uniforms in the open interval (0, 1) from 53 CSPRNG bits each."""
    bits = np.array([secrets.randbits(53) for _ in range(count)], dtype=float)
    return (bits + 0.5) / 2.0**53


def lattice_exponent(scale: float, size: int, norm: int) -> int:
    """The k of OpenDP's noise lattice 2^k for ``size`` values measured at ``scale`` in the L1 or L2 ``norm``.

    Rounding onto the lattice moves neighbours apart by at most size·2^k (L1) or √size·2^k (L2), which
    OpenDP's privacy map adds to the sensitivity; k keeps that at most LATTICE_SLACK·LOSS_FLOOR·scale
    = 2^LATTICE_OFFSET·scale (exports state the rule as ``LATTICE_RULE``).

    >>> lattice_exponent(1.0, 1, 1), lattice_exponent(1.0, 4, 2)
    (-90, -91)
    """
    spread = size if norm == 1 else math.sqrt(size)
    return math.floor(math.log2(2.0**LATTICE_OFFSET * scale / spread))  # 2^-90 = LATTICE_SLACK·LOSS_FLOOR exactly


def widened(scale: float) -> float:
    """The scale OpenDP is given: ``scale``·(1 + LATTICE_SLACK), rounded up, which pays for the lattice rounding.

    >>> widened(1.0) > 1.0
    True
    """
    return float(np.nextafter(scale * (1.0 + LATTICE_SLACK), np.inf))


def _opendp() -> Any:
    import opendp.prelude as dp  # imported lazily: only the secure path needs the native library

    dp.enable_features("contrib")
    return dp


# Secure measurements stream their values to OpenDP in chunks of this many: NumPy arrays in, one list of at most this
# many Python numbers out per call, so the memory a release holds beyond its own arrays does not grow with its size.
STREAM_CHUNK = 2**16


@functools.lru_cache(maxsize=64)
def _laplace_measurement(size: int, scale: float, integer: bool, together: int | None = None) -> Any:
    """OpenDP's Laplace measurement of ``size`` values at ``scale`` (integers: exact; floats: on the lattice).

    ``together``: how many values are measured together (default ``size``); a chunk of a longer vector is put on the
    lattice of the whole vector (``lattice_exponent(scale, together, 1)``), so the chunks' outputs are exactly the
    whole vector's measurement (the same rounding and the same i.i.d. discrete noise per value).
    """
    dp = _opendp()
    if integer:  # 64-bit: at scale 1e9 (epsilon 1e-9) the noise still fits
        space = dp.vector_domain(dp.atom_domain(T="i64"), size=size), dp.l1_distance(T="i64")
        return dp.m.make_laplace(*space, scale=scale)
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size), dp.l1_distance(T=float)
    return dp.m.make_laplace(*space, scale=widened(scale), k=lattice_exponent(scale, together or size, 1))


@functools.lru_cache(maxsize=64)
def _gaussian_measurement(size: int, scale: float, integer: bool, together: int | None = None) -> Any:
    """OpenDP's Gaussian measurement: the discrete Gaussian of Canonne, Kamath & Steinke (2020), exact, on the
    integers or on the lattice 2^k as the Laplace above (``together`` as there); its privacy map is in zCDP."""
    dp = _opendp()
    if integer:
        space = dp.vector_domain(dp.atom_domain(T="i64"), size=size), dp.l2_distance(T="i64")
        return dp.m.make_gaussian(*space, scale=scale)
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size), dp.l2_distance(T=float)
    return dp.m.make_gaussian(*space, scale=widened(scale), k=lattice_exponent(scale, together or size, 2))


def _stream(measurement_of: Callable[[int], Any], values: np.ndarray) -> np.ndarray:
    """``values`` (1-D float64 or int64) passed through OpenDP chunk by chunk: ``measurement_of(length)`` is the
    (cached) measurement of ``length`` values, built once per chunk length and reused. OpenDP draws each value's noise
    independently, so the output has exactly the distribution of one call on the whole vector."""
    out = np.empty(values.size, dtype=float)
    for start in range(0, values.size, STREAM_CHUNK):
        # OpenDP refuses read-only arrays (a histogram's counts are): each chunk is handed over writable, one chunk
        # copied at a time
        part = np.require(values[start:start + STREAM_CHUNK], requirements="W")
        out[start:start + part.size] = measurement_of(part.size)(part)
    return out


@functools.lru_cache(maxsize=64)
def _noisy_max_measurement(scale: float) -> Any:
    dp = _opendp()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float)
    # Gumbel noise (OpenDP uses it for the zCDP measure): argmax(s/scale + Gumbel) samples
    # P(i) ∝ exp(s_i/scale), which is the exponential mechanism, pure ε-DP for scale = 2Δ/ε.
    return dp.m.make_noisy_max(*space, output_measure=dp.zero_concentrated_divergence(), scale=scale)


@dataclass(frozen=True)
class SecureNoise:
    """OpenDP-backed noise source with the ``np.random.Generator`` methods mechanisms use.

    Args:
        integer: draw Laplace noise from the discrete Laplace on the integers (exact for integer
            counts with integer sensitivity); otherwise from OpenDP's lattice float Laplace.

    >>> released = SecureNoise(integer=True).add_laplace(np.array([3.0, 0, 7, 1, 2]), 2.0)
    >>> released.shape, bool(np.all(released == np.round(released)))
    ((5,), True)
    """

    integer: bool = False

    @property
    def sampler(self) -> str:
        """The ``NOISE_SAMPLERS`` key of this source's Laplace noise."""
        return "opendp-integer-laplace" if self.integer else "opendp-lattice-laplace"

    def add_laplace(self, values: Any, scale: Any) -> Any:
        """``values`` + Laplace(scale) noise, measured by OpenDP on the values themselves (scale may be an array).

        >>> out = SecureNoise().add_laplace(np.array([0.25, 1.0]), 1.0)
        >>> out.shape
        (2,)
        """
        return self._measure(_laplace_measurement, values, scale, "Laplace")

    def add_gaussian(self, values: Any, sigma: Any) -> Any:
        """``values`` + N(0, sigma²) noise, measured by OpenDP's discrete Gaussian on the values themselves."""
        return self._measure(_gaussian_measurement, values, sigma, "Gaussian")

    def _measure(self, measurement_for: Callable[..., Any], values: Any, scale: Any,
                 kind: str) -> Any:
        values = np.asarray(values, dtype=float)
        shape = values.shape
        flat = values.reshape(-1)
        scales = np.broadcast_to(np.asarray(scale, dtype=float), shape).reshape(-1)
        if not np.all(np.isfinite(scales) & (scales >= 0)):
            raise ValueError(f"{kind} scale must be finite and >= 0, got {scale!r}")
        if not np.all(np.isfinite(flat)):
            raise ValueError(f"{kind} noise needs finite values to measure")
        if self.integer and not _integer_counts(flat):
            raise ValueError(f"integer {kind} noise needs integer values below 2^52 (integer counts)")
        source = flat.astype(np.int64) if self.integer else flat
        if np.ndim(scale) == 0:  # one scale: no masks, no copies of the values
            out = _stream(self._chunks(measurement_for, float(scale), flat.size), source) if scale > 0 else flat.copy()
            return out.reshape(shape)[()]
        out = flat.copy()
        for value in np.unique(scales[scales > 0]):  # one OpenDP measurement per distinct scale
            where = scales == value
            out[where] = _stream(self._chunks(measurement_for, float(value), int(where.sum())), source[where])
        return out.reshape(shape)[()]  # a NumPy scalar for scalar values, as NumPy's own arithmetic gives

    def _chunks(self, measurement_for: Callable[..., Any], scale: float, size: int) -> Callable[[int], Any]:
        """The measurement of a chunk of ``length`` of the ``size`` values measured together at ``scale``, on the
        lattice the whole ``size`` needs (a vector that fits in one chunk gets ``measurement_for(size, ...)``)."""
        if self.integer or size <= STREAM_CHUNK:  # no lattice (integers), or the chunk is the whole vector
            return lambda length: measurement_for(length, scale, self.integer)
        return lambda length: measurement_for(length, scale, self.integer, size)

    def laplace(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> Any:
        """Refused: free-standing noise added in floating point breaks the sampler's proof (use ``add_laplace``)."""
        raise TypeError(FREE_NOISE_REFUSAL)

    def normal(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> Any:
        """Refused, as ``laplace`` (use ``add_gaussian``)."""
        raise TypeError(FREE_NOISE_REFUSAL)

    def random(self, size: Any = None) -> float | np.ndarray:
        """Uniform floats in [0, 1) (53 random bits each)."""
        count = math.prod(_shape(size))
        out = np.array([secrets.randbits(53) for _ in range(count)], dtype=float) / 2.0**53
        return float(out[0]) if size is None else out.reshape(_shape(size))

    def integers(self, low: Any, high: Any = None, size: Any = None) -> int | np.ndarray:
        """Uniform integers in [low, high) (or [0, low) when high is None), like ``Generator.integers``."""
        low, high = (0, low) if high is None else (low, high)
        low, high = int(low), int(high)
        if high <= low:
            raise ValueError(f"integers needs high > low, got low={low}, high={high}")
        count = math.prod(_shape(size))
        out = np.array([low + secrets.randbelow(high - low) for _ in range(count)], dtype=np.int64)
        return int(out[0]) if size is None else out.reshape(_shape(size))

    def permutation(self, x: Any) -> np.ndarray:
        """A uniformly random permutation of range(x) (int) or of the first axis of x (Fisher–Yates)."""
        items = np.arange(x) if np.ndim(x) == 0 else np.array(x, copy=True)
        order = list(range(len(items)))
        for i in range(len(order) - 1, 0, -1):
            j = secrets.randbelow(i + 1)
            order[i], order[j] = order[j], order[i]
        return items[np.array(order, dtype=np.int64)] if order else items

    def gumbel(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> float | np.ndarray:
        """Gumbel(loc, scale) draws from CSPRNG uniforms (``exponential_mechanism`` uses OpenDP instead)."""
        shape = _shape(size)
        out = loc - scale * np.log(-np.log(_uniform_open(math.prod(shape))))
        return float(out[0]) if size is None else out.reshape(shape)

    def exponential_mechanism(self, scores: np.ndarray, epsilon: float, sensitivity: float) -> int:
        """Index i with probability ∝ exp(ε·score_i/(2·sensitivity)), sampled inside OpenDP."""
        scores = np.asarray(scores, dtype=float)
        if sensitivity == 0:
            return int(np.argmax(scores))
        scale = 2.0 * float(sensitivity) / float(epsilon)
        return int(_noisy_max_measurement(scale)(scores.tolist()))


def adds_noise_to_counts(mechanism: object) -> bool:
    """Whether every Laplace draw of ``mechanism`` is added to an integer-valued count with integer sensitivity.

    True for the cell-noise baselines only: Identity (and dp-base), Xiao's cell release (sensitivity 1
    or 2), Uniform (the total) and Gaussian identity, which declare ``noise_on_counts = True`` in their own
    class body. Read on the exact type, never inherited: a variant that noises anything else must not get
    the integer sampler by subclassing. ``tests/test_noise.py`` pins that each draw lands on a count.

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> adds_noise_to_counts(MECHANISMS["dp-base"]), adds_noise_to_counts(MECHANISMS["privelet"])
    (True, False)
    """
    return bool(vars(type(mechanism)).get("noise_on_counts", False))


def _integer_counts(counts: Any) -> bool:
    values = np.asarray(counts, dtype=float)
    return bool(np.all(np.isfinite(values)) and np.all(values == np.round(values)) and np.all(np.abs(values) < 2**52))


def noise_source(path: str, seed: int | None = None, *, mechanism: object = None,
                 counts: Any = None) -> np.random.Generator | SecureNoise:
    """The noise source for a path name: "exploration" (seeded NumPy) or "secure" (OpenDP, no seed).

    On the secure path, passing the ``mechanism`` and the ``counts`` it will run on selects the
    discrete Laplace on the integers when ``adds_noise_to_counts(mechanism)`` and the counts are
    integers (the release is then integer-valued, and no float arithmetic touches the noise);
    otherwise OpenDP's lattice Laplace. ``noise_sampler`` names the choice for exports.

    >>> noise_source("exploration", 7).laplace(scale=1.0) == noise_source("exploration", 7).laplace(scale=1.0)
    True
    >>> noise_source("secure", 7)
    SecureNoise(integer=False)
    >>> from dplens.core.mechanisms import MECHANISMS
    >>> noise_source("secure", mechanism=MECHANISMS["identity"], counts=np.array([3.0, 0, 5]))
    SecureNoise(integer=True)
    """
    if path == "exploration":
        return np.random.default_rng(seed)
    if path == "secure":
        integer = mechanism is not None and counts is not None and adds_noise_to_counts(mechanism)
        return SecureNoise(integer=integer and _integer_counts(counts))
    raise ValueError(f"noise path must be one of {sorted(NOISE_PATHS)}, got {path!r}")


def noise_sampler(source: object, mechanism: object = None) -> str:
    """The ``NOISE_SAMPLERS`` key of a noise source (what an export should state) for ``mechanism``'s noise.

    >>> noise_sampler(noise_source("exploration", 1)), noise_sampler(SecureNoise(integer=True))
    ('numpy-float-laplace', 'opendp-integer-laplace')
    >>> from dplens.core.mechanisms import MECHANISMS
    >>> noise_sampler(SecureNoise(integer=True), MECHANISMS["gaussian-identity"])
    'opendp-integer-gaussian'
    """
    key = source.sampler if isinstance(source, SecureNoise) else "numpy-float-laplace"
    return key.replace("laplace", noise_kind(mechanism)) if mechanism is not None else key


def noise_kind(mechanism: object) -> str:
    """"gaussian" for the Gaussian variants (``dplens.core.mechanisms.gaussian``), else "laplace".

    >>> from dplens.core.mechanisms import MECHANISMS
    >>> noise_kind(MECHANISMS["hb"]), noise_kind(MECHANISMS["gaussian-hb"])
    ('laplace', 'gaussian')
    """
    return getattr(mechanism, "noise", "laplace")


# ----------------------------------------------------------------------------- the noise-reduction walk
def walk_keep_probability(scale_smaller: float, scale_larger: float) -> float:
    """Probability that a coordinate keeps its discrete Laplace noise from the step at ``scale_smaller`` (less
    private) to the step at ``scale_larger`` (more private); otherwise fresh discrete Laplace at ``scale_larger``
    is added. With a = e^(−1/b): p = a₁(1 − a₂)² / (a₂(1 − a₁)²), so that the characteristic functions multiply out
    exactly, φ₂ = φ₁ (p + (1 − p) φ₂) with φ(θ) = (1 − a)² / (1 − 2a cos θ + a²); p → (b₁/b₂)² in the continuous
    limit (Koufogiannis, Han & Pappas 2017, Laplace noise reduction).

    >>> round(walk_keep_probability(1.0, 2.0), 4), (1.0 / 2.0) ** 2
    (0.235, 0.25)
    """
    if not 0 < scale_smaller < scale_larger:
        raise ValueError(f"a walk step needs 0 < scale_smaller < scale_larger, got {scale_smaller!r} and "
                         f"{scale_larger!r}")
    a1, a2 = math.exp(-1.0 / scale_smaller), math.exp(-1.0 / scale_larger)
    return a1 * math.expm1(-1.0 / scale_larger) ** 2 / (a2 * math.expm1(-1.0 / scale_smaller) ** 2)


def _walk_scales(scales: Any) -> np.ndarray:
    """A walk's noise scales as an array: finite, > 0 and strictly decreasing (most private first)."""
    array: np.ndarray = np.asarray(scales, dtype=float)
    if array.ndim != 1 or array.size == 0 or not np.all(np.isfinite(array) & (array > 0)):
        raise ValueError(f"walk scales must be a non-empty list of finite numbers > 0, got {array.tolist()!r}")
    if np.any(np.diff(array) >= 0):
        raise ValueError(f"walk scales must strictly decrease (most private first), got {array.tolist()}")
    return array


def secure_noise_reduction(counts: Any, scales: Any) -> np.ndarray:
    """The whole noise-reduction walk on integer ``counts``, built backwards on the secure path: row t is
    counts + discrete Laplace(scales[t]) exactly, for strictly decreasing ``scales`` (most private first).

    The last (least private) row is drawn by OpenDP's integer Laplace measurement; each earlier row keeps the
    next row's value per coordinate with ``walk_keep_probability`` (a CSPRNG coin) and otherwise passes it through
    the integer Laplace measurement at its own scale. Rows before t are post-processing of row t, so releasing
    rows 1..t costs only row t's ε (Koufogiannis et al.; Ligett et al., NIPS 2017, Alg. 1).

    >>> walk = secure_noise_reduction(np.array([3.0, 0, 5]), [10.0, 1.0])
    >>> walk.shape, bool(np.all(walk == np.round(walk)))
    ((2, 3), True)
    """
    counts = np.asarray(counts, dtype=float).ravel()
    scales = np.asarray(scales, dtype=float)
    if counts.size == 0 or not _integer_counts(counts):
        raise ValueError("a secure walk needs a non-empty vector of integer counts below 2^52")
    if scales.ndim != 1 or scales.size == 0 or not np.all(np.isfinite(scales) & (scales > 0)):
        raise ValueError(f"walk scales must be a non-empty list of finite numbers > 0, got {scales.tolist()!r}")
    if np.any(np.diff(scales) >= 0):
        raise ValueError(f"walk scales must strictly decrease (most private first), got {scales.tolist()}")
    source = SecureNoise(integer=True)
    walk = np.empty((scales.size, counts.size))
    walk[-1] = source.add_laplace(counts, float(scales[-1]))
    for t in range(scales.size - 2, -1, -1):
        keep = np.asarray(source.random(counts.size)) < walk_keep_probability(float(scales[t + 1]), float(scales[t]))
        walk[t] = walk[t + 1]
        if not keep.all():
            walk[t][~keep] = source.add_laplace(walk[t + 1][~keep], float(scales[t]))
    return walk


def secure_above_threshold(values: Any, threshold: float, epsilon: float, sensitivity: float) -> int | None:
    """AboveThreshold (Dwork & Roth, below-threshold form) on the secure path: the index of the first value whose
    noisy copy is ≤ the noisy threshold, or None. The threshold passes through OpenDP's Laplace measurement at
    2Δ/ε and each value at 4Δ/ε (fresh per value); ε-DP for the index.

    >>> secure_above_threshold([50.0, 0.0], 10.0, 1000.0, 1.0)
    1
    """
    if not (math.isfinite(epsilon) and epsilon > 0 and math.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"AboveThreshold needs epsilon > 0 and sensitivity > 0, got {epsilon!r} and {sensitivity!r}")
    source = SecureNoise()
    noisy_threshold = float(source.add_laplace(np.array([float(threshold)]), 2 * sensitivity / epsilon)[0])
    noisy = source.add_laplace(np.asarray(values, dtype=float), 4 * sensitivity / epsilon)
    below = np.flatnonzero(noisy <= noisy_threshold)
    return int(below[0]) if below.size else None


def gaussian_walk_variances(rhos: Any) -> np.ndarray:
    """σ² of each discrete Gaussian a Gaussian walk adds, most private step first: the last step draws
    1/(2ρ_T), and step t adds 1/(2ρ_t) − 1/(2ρ_{t+1}) to step t+1 (Brownian noise reduction, Koufogiannis et al.;
    Whitehouse et al., NeurIPS 2022), so step t's noise has variance about 1/(2ρ_t).

    >>> gaussian_walk_variances([0.125, 0.5]).tolist()
    [3.0, 1.0]
    """
    rhos = np.asarray(rhos, dtype=float)
    if rhos.ndim != 1 or rhos.size == 0 or not np.all(np.isfinite(rhos) & (rhos > 0)) or np.any(np.diff(rhos) <= 0):
        raise ValueError(f"a Gaussian walk needs strictly increasing finite rho > 0, got {np.ravel(rhos).tolist()}")
    total = 1.0 / (2.0 * rhos)
    return np.append(total[:-1] - total[1:], total[-1])


def gaussian_walk_loss(rhos: Any) -> tuple[float, ...]:
    """The ρ each prefix y_1..y_t of a discrete Gaussian walk is charged: 1/(2 max_{j≥t} σ_j²).

    A sum of discrete Gaussians is not a discrete Gaussian, so the ρ_t of the schedule is not claimed. What is
    proved: y_t = x + Σ_{j≥t} Z_j is post-processing of x + Z_j for each j ≥ t (the other terms do not depend on
    the data), and x + Z_j is 1/(2σ_j²)-zCDP (Canonne, Kamath & Steinke 2020); the steps before t are
    post-processing of y_t. It equals ρ_t for the last step and exceeds it elsewhere, least when the schedule's
    steps are far apart (each step then holds most of its own variance).

    >>> [round(r, 4) for r in gaussian_walk_loss([0.125, 0.5])]
    [0.1667, 0.5]
    """
    variances = gaussian_walk_variances(rhos)
    largest = np.maximum.accumulate(variances[::-1])[::-1]  # max over j ≥ t
    return tuple(float(1.0 / (2.0 * v)) for v in largest)


def secure_gaussian_noise_reduction(counts: Any, rhos: Any) -> np.ndarray:
    """A Gaussian walk on integer ``counts`` built backwards on the secure path: the last row is counts + DG(σ_T²)
    from OpenDP's discrete Gaussian on the integers, and each earlier row passes the next one through the discrete
    Gaussian measurement again at its own increment (``gaussian_walk_variances``). Charge ``gaussian_walk_loss``.

    >>> secure_gaussian_noise_reduction(np.array([3.0, 0, 5]), [0.125, 0.5]).shape
    (2, 3)
    """
    counts = np.asarray(counts, dtype=float).ravel()
    if counts.size == 0 or not _integer_counts(counts):
        raise ValueError("a secure walk needs a non-empty vector of integer counts below 2^52")
    variances = gaussian_walk_variances(rhos)
    source = SecureNoise(integer=True)
    walk = np.empty((variances.size, counts.size))
    walk[-1] = source.add_gaussian(counts, math.sqrt(variances[-1]))
    for t in range(variances.size - 2, -1, -1):
        walk[t] = source.add_gaussian(walk[t + 1], math.sqrt(variances[t]))
    return walk


@functools.lru_cache(maxsize=64)
def _laplace_on_lattice(size: int, scale: float, k: int) -> Any:
    """OpenDP's float Laplace measurement of ``size`` values at ``scale`` on the lattice 2^``k`` given (a walk keeps
    every step on its last step's lattice, the finest it needs)."""
    dp = _opendp()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size), dp.l1_distance(T=float)
    return dp.m.make_laplace(*space, scale=scale, k=k)


def secure_lattice_noise_reduction(values: Any, scales: Any) -> np.ndarray:
    """The noise-reduction walk on float ``values`` (a strategy's answers), built backwards on the secure path: the
    last row passes the values through OpenDP's lattice Laplace at ``widened(scales[-1])`` on the lattice 2^k that
    scale needs (``lattice_exponent``); each earlier row keeps the next one's value per coordinate with
    ``walk_keep_probability`` in lattice units (a = e^(−2^k/b)) and otherwise passes it through the lattice Laplace
    at its own widened scale on the same lattice. Every row is then exactly the rounded values plus discrete
    Laplace on 2^k·ℤ at its scale, as OpenDP's measurement at that scale and lattice would release them (the keep
    coin has 53 random bits: exact up to 2^-53 in total variation).

    >>> walk = secure_lattice_noise_reduction(np.array([0.5, 1.25, 3.0]), [10.0, 1.0])
    >>> walk.shape
    (2, 3)
    """
    values = np.asarray(values, dtype=float).ravel()
    scales = np.asarray(scales, dtype=float)
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError("a secure walk needs a non-empty vector of finite values")
    if scales.ndim != 1 or scales.size == 0 or not np.all(np.isfinite(scales) & (scales > 0)):
        raise ValueError(f"walk scales must be a non-empty list of finite numbers > 0, got {scales.tolist()!r}")
    if np.any(np.diff(scales) >= 0):
        raise ValueError(f"walk scales must strictly decrease (most private first), got {scales.tolist()}")
    k = lattice_exponent(float(scales[-1]), values.size, 1)
    actual = [widened(float(s)) for s in scales]  # the scales OpenDP's measurements draw at
    source = SecureNoise()
    walk = np.empty((scales.size, values.size))
    walk[-1] = _stream(functools.partial(_laplace_on_lattice, scale=actual[-1], k=k), values)
    for t in range(scales.size - 2, -1, -1):
        p = walk_keep_probability(actual[t + 1] / 2.0**k, actual[t] / 2.0**k)
        keep = np.asarray(source.random(values.size)) < p
        walk[t] = walk[t + 1]
        moved = ~keep
        if moved.any():
            walk[t][moved] = _stream(functools.partial(_laplace_on_lattice, scale=actual[t], k=k), walk[t + 1][moved])
    return walk


class CapturedPlan:
    """A noise source that records the Laplace block a data-independent plan measures and adds nothing: how a walk
    learns a mechanism's strategy answers A x and its scale without running it for real. A plan may measure its
    block in several calls (hb, one per level), all at one scale; another scale, or any other draw, is refused, so
    a plan with several blocks or data-dependent steps cannot walk.

    >>> capture = CapturedPlan()
    >>> capture.add_laplace(np.array([1.0, 2.0]), 0.5).tolist(), capture.add_laplace(np.array([3.0]), 0.5).tolist()
    ([1.0, 2.0], [3.0])
    >>> capture.values.tolist(), capture.scale
    ([1.0, 2.0, 3.0], 0.5)
    """

    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []
        self.scale = 0.0

    @property
    def values(self) -> np.ndarray | None:
        """The block's values in the order the plan measured them (None before any)."""
        return np.concatenate(self.parts) if self.parts else None

    def add_laplace(self, values: Any, scale: Any) -> Any:
        if np.ndim(scale) != 0 or (self.parts and float(scale) != self.scale):
            raise ValueError("a walk needs a plan that measures one block at one Laplace scale")
        self.parts.append(np.asarray(values, dtype=float).ravel().copy())
        self.scale = float(scale)
        return np.asarray(values, dtype=float)

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError("a walk needs a data-independent plan with one Laplace block and no other randomness")

    add_gaussian = laplace = normal = random = integers = permutation = gumbel = _refuse


class ReplayedStep:
    """A noise source that hands a plan the noisy values of one walk step in place of drawing them, slice by slice in
    the order ``CapturedPlan`` recorded (the step was drawn on the secure path when the walk started); the plan's
    reconstruction is then post-processing of that step."""

    def __init__(self, noisy: np.ndarray, scale: float) -> None:
        self.noisy, self.scale, self.used = np.asarray(noisy, dtype=float).ravel(), float(scale), 0

    def add_laplace(self, values: Any, scale: Any) -> Any:
        shape = np.shape(values)
        size = int(np.prod(shape))
        if np.ndim(scale) != 0 or not math.isclose(float(scale), self.scale, rel_tol=1e-12):
            raise ValueError(f"the plan asked for another measurement than the walk's (scale {scale!r})")
        if self.used + size > self.noisy.size:
            raise ValueError(f"the plan measures more values than the walk holds ({self.noisy.size})")
        part = self.noisy[self.used:self.used + size].reshape(shape).copy()
        self.used += size
        return part

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError("a walk step replays its one Laplace block; the plan asked for other randomness")

    add_gaussian = laplace = normal = random = integers = permutation = gumbel = _refuse
