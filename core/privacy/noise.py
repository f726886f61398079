"""Noise sources: the seeded exploration path and the secure (OpenDP) path for releases that leave.

Mechanisms never call ``np.random`` directly; they draw from the ``rng`` argument of ``run`` through
the few methods in ``NoiseSource``. Two implementations satisfy it:

* **exploration**: a seeded ``np.random.Generator``. Fast and reproducible (sweeps, teaching,
  figures), but textbook floating-point Laplace sampling is *not* exactly DP: Mironov (CCS 2012,
  "On significance of the least significant bits for differential privacy") shows that the low bits
  of ``x + Lap(b)`` computed in doubles can reveal ``x``, and a seeded PRNG is predictable.
* **secure**: ``SecureNoise``, backed by OpenDP 0.16. Laplace noise comes from OpenDP's exact
  discrete-Laplace sampler on a lattice of spacing 2^k (its float Laplace; ``k`` chosen so the lattice
  is 2^-24 of the scale, which keeps ``count + noise`` exactly representable for counts below about
  2^29·scale, so there are no low bits to attack), or on the integers (``integer=True``: the discrete
  Laplace / geometric mechanism). ``noise_source("secure", mechanism=..., counts=...)`` picks the
  integers only when that is sound (``adds_noise_to_counts``): every draw of the mechanism is added
  to an integer count of integer data with integer sensitivity, so x + Z and x' + Z live on the same
  lattice and the loss per unit shift is exactly 1/scale (OpenDP's own privacy map says the same).
  Added to anything else (a wavelet coefficient, a least-squares strategy answer), integer noise
  would put neighbours on disjoint lattices: infinite loss. Selections use
  OpenDP's Gumbel noisy-max (exactly the exponential mechanism), uniform choices use the OS CSPRNG
  (``secrets``). Seeds are ignored. Remaining caveat: the mechanism's own post-processing and its
  addition of non-integer strategy coefficients still run in floating point.

>>> from core.mechanisms import MECHANISMS
>>> from core.queries.workloads import Identity
>>> release = MECHANISMS["identity"].run(np.array([3.0, 1, 4]), Identity(3), 1.0, noise_source("secure"))
>>> release.answers.shape
(3,)
"""

from __future__ import annotations

import functools
import math
import secrets
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

NOISE_SAMPLERS: dict[str, str] = {  # what produced the Laplace noise; exports state it (``noise_sampler``)
    "numpy-float-laplace": "NumPy's floating-point Laplace from a seeded generator (exploration)",
    "opendp-lattice-laplace": "OpenDP's discrete Laplace on a lattice of spacing 2^(floor(log2 scale)-24)",
    "opendp-integer-laplace": "OpenDP's discrete Laplace on the integers, added to integer counts",
    "numpy-float-gaussian": "NumPy's floating-point Gaussian from a seeded generator (exploration)",
    "opendp-lattice-gaussian": "OpenDP's discrete Gaussian on a lattice of spacing 2^(floor(log2 sigma)-24)",
    "opendp-integer-gaussian": "OpenDP's discrete Gaussian on the integers (Canonne et al. 2020), added to integer counts",
}
NOISE_PATHS: dict[str, str] = {
    "exploration": "seeded NumPy generator: fast and reproducible, floating-point Laplace (not exactly DP)",
    "secure": "OpenDP samplers (exact discrete Laplace on a lattice, CSPRNG); ignores the seed",
}
LATTICE_BITS = 24  # secure float Laplace: lattice spacing 2^(floor(log2 scale) - 24)


@runtime_checkable
class NoiseSource(Protocol):
    """The randomness a mechanism may use (a subset of ``np.random.Generator``'s methods)."""

    def laplace(self, loc: float = 0.0, scale: float = 1.0, size=None): ...

    def random(self, size=None): ...

    def integers(self, low, high=None, size=None): ...

    def permutation(self, x): ...

    def gumbel(self, loc: float = 0.0, scale: float = 1.0, size=None): ...


def _shape(size) -> tuple[int, ...]:
    if size is None:
        return ()
    return (int(size),) if np.ndim(size) == 0 else tuple(int(s) for s in size)


def _uniform_open(count: int) -> np.ndarray:
    """``count`` uniforms in the open interval (0, 1) from 53 CSPRNG bits each."""
    bits = np.array([secrets.randbits(53) for _ in range(count)], dtype=float)
    return (bits + 0.5) / 2.0**53


@functools.lru_cache(maxsize=64)
def _laplace_measurement(size: int, scale: float, integer: bool):
    import opendp.prelude as dp  # imported lazily: only the secure path needs the native library

    dp.enable_features("contrib")
    if integer:  # 64-bit: at scale 1e9 (epsilon 1e-9) the noise still fits
        space = dp.vector_domain(dp.atom_domain(T="i64"), size=size), dp.l1_distance(T="i64")
        return dp.m.make_laplace(*space, scale=scale)
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size), dp.l1_distance(T=float)
    return dp.m.make_laplace(*space, scale=scale, k=math.floor(math.log2(scale)) - LATTICE_BITS)


@functools.lru_cache(maxsize=64)
def _gaussian_measurement(size: int, scale: float, integer: bool):
    import opendp.prelude as dp

    dp.enable_features("contrib")
    # OpenDP's Gaussian is the discrete Gaussian of Canonne, Kamath & Steinke (2020), exact, on the
    # integers or on a lattice 2^k (as the Laplace above); its privacy map is in zCDP
    if integer:
        space = dp.vector_domain(dp.atom_domain(T="i64"), size=size), dp.l2_distance(T="i64")
        return dp.m.make_gaussian(*space, scale=scale)
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size), dp.l2_distance(T=float)
    return dp.m.make_gaussian(*space, scale=scale, k=math.floor(math.log2(scale)) - LATTICE_BITS)


@functools.lru_cache(maxsize=64)
def _noisy_max_measurement(scale: float):
    import opendp.prelude as dp

    dp.enable_features("contrib")
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

    >>> noise = SecureNoise(integer=True).laplace(scale=2.0, size=5)
    >>> noise.shape, bool(np.all(noise == np.round(noise)))
    ((5,), True)
    """

    integer: bool = False

    @property
    def sampler(self) -> str:
        """The ``NOISE_SAMPLERS`` key of this source's Laplace noise."""
        return "opendp-integer-laplace" if self.integer else "opendp-lattice-laplace"

    def laplace(self, loc: float = 0.0, scale: float = 1.0, size=None):
        """Laplace(loc, scale) noise of the given size (scalar when size is None); scale may be an array."""
        return self._draw(_laplace_measurement, loc, scale, size, "Laplace")

    def _draw(self, measurement_for, loc, scale, size, kind: str):
        scales = np.asarray(scale, dtype=float)
        if not np.all(np.isfinite(scales) & (scales >= 0)):
            raise ValueError(f"{kind} scale must be finite and >= 0, got {scale!r}")
        shape = _shape(size) if size is not None else np.broadcast_shapes(scales.shape, np.shape(loc))
        scales = np.broadcast_to(scales, shape)
        out = np.zeros(shape)
        for value in np.unique(scales[scales > 0]):  # one OpenDP measurement per distinct scale
            where = scales == value
            count = int(where.sum())
            measurement = measurement_for(count, float(value), self.integer)
            out[where] = measurement([0] * count if self.integer else [0.0] * count)
        out = out + loc
        return float(out) if out.ndim == 0 else out

    def normal(self, loc: float = 0.0, scale: float = 1.0, size=None):
        """Gaussian N(loc, scale²) noise sampled inside OpenDP (discrete Gaussian on the integers or a lattice)."""
        return self._draw(_gaussian_measurement, loc, scale, size, "Gaussian")

    def random(self, size=None):
        """Uniform floats in [0, 1) (53 random bits each)."""
        count = math.prod(_shape(size))
        out = np.array([secrets.randbits(53) for _ in range(count)], dtype=float) / 2.0**53
        return float(out[0]) if size is None else out.reshape(_shape(size))

    def integers(self, low, high=None, size=None):
        """Uniform integers in [low, high) (or [0, low) when high is None), like ``Generator.integers``."""
        low, high = (0, low) if high is None else (low, high)
        low, high = int(low), int(high)
        if high <= low:
            raise ValueError(f"integers needs high > low, got low={low}, high={high}")
        count = math.prod(_shape(size))
        out = np.array([low + secrets.randbelow(high - low) for _ in range(count)], dtype=np.int64)
        return int(out[0]) if size is None else out.reshape(_shape(size))

    def permutation(self, x):
        """A uniformly random permutation of range(x) (int) or of the first axis of x (Fisher–Yates)."""
        items = np.arange(x) if np.ndim(x) == 0 else np.array(x, copy=True)
        order = list(range(len(items)))
        for i in range(len(order) - 1, 0, -1):
            j = secrets.randbelow(i + 1)
            order[i], order[j] = order[j], order[i]
        return items[np.array(order, dtype=np.int64)] if order else items

    def gumbel(self, loc: float = 0.0, scale: float = 1.0, size=None):
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


def adds_noise_to_counts(mechanism) -> bool:
    """Whether every Laplace draw of ``mechanism`` is added to an integer-valued count with integer sensitivity.

    True for the cell-noise baselines only: Identity (and dp-base), Xiao's cell release (sensitivity 1
    or 2) and Uniform (the total). Exact types, not subclasses or names: a variant that noises anything
    else must not inherit the integer sampler. ``tests/test_noise.py`` pins that each draw lands on a count.

    >>> from core.mechanisms import MECHANISMS
    >>> adds_noise_to_counts(MECHANISMS["dp-base"]), adds_noise_to_counts(MECHANISMS["privelet"])
    (True, False)
    """
    from core.mechanisms.gaussian import GaussianIdentity
    from core.mechanisms.laplace import Identity, Uniform
    from core.mechanisms.xiao import CellRelease

    return type(mechanism) in (Identity, Uniform, CellRelease, GaussianIdentity)


def _integer_counts(counts) -> bool:
    values = np.asarray(counts, dtype=float)
    return bool(np.all(np.isfinite(values)) and np.all(values == np.round(values)) and np.all(np.abs(values) < 2**52))


def noise_source(path: str, seed: int | None = None, *, mechanism=None,
                 counts=None) -> np.random.Generator | SecureNoise:
    """The noise source for a path name: "exploration" (seeded NumPy) or "secure" (OpenDP, no seed).

    On the secure path, passing the ``mechanism`` and the ``counts`` it will run on selects the
    discrete Laplace on the integers when ``adds_noise_to_counts(mechanism)`` and the counts are
    integers (the release is then integer-valued, and no float arithmetic touches the noise);
    otherwise OpenDP's lattice Laplace. ``noise_sampler`` names the choice for exports.

    >>> noise_source("exploration", 7).laplace(scale=1.0) == noise_source("exploration", 7).laplace(scale=1.0)
    True
    >>> noise_source("secure", 7)
    SecureNoise(integer=False)
    >>> from core.mechanisms import MECHANISMS
    >>> noise_source("secure", mechanism=MECHANISMS["identity"], counts=np.array([3.0, 0, 5]))
    SecureNoise(integer=True)
    """
    if path == "exploration":
        return np.random.default_rng(seed)
    if path == "secure":
        integer = mechanism is not None and counts is not None and adds_noise_to_counts(mechanism)
        return SecureNoise(integer=integer and _integer_counts(counts))
    raise ValueError(f"noise path must be one of {sorted(NOISE_PATHS)}, got {path!r}")


def noise_sampler(source, mechanism=None) -> str:
    """The ``NOISE_SAMPLERS`` key of a noise source (what an export should state) for ``mechanism``'s noise.

    >>> noise_sampler(noise_source("exploration", 1)), noise_sampler(SecureNoise(integer=True))
    ('numpy-float-laplace', 'opendp-integer-laplace')
    >>> from core.mechanisms import MECHANISMS
    >>> noise_sampler(SecureNoise(integer=True), MECHANISMS["gaussian-identity"])
    'opendp-integer-gaussian'
    """
    key = source.sampler if isinstance(source, SecureNoise) else "numpy-float-laplace"
    return key.replace("laplace", noise_kind(mechanism)) if mechanism is not None else key


def noise_kind(mechanism) -> str:
    """"gaussian" for the Gaussian variants (``core.mechanisms.gaussian``), else "laplace".

    >>> from core.mechanisms import MECHANISMS
    >>> noise_kind(MECHANISMS["hb"]), noise_kind(MECHANISMS["gaussian-hb"])
    ('laplace', 'gaussian')
    """
    return getattr(mechanism, "noise", "laplace")
