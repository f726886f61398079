"""DAWA's seeded releases are unchanged by the speed work: fingerprints recorded before it.

The L1 partition's kernels were made faster (fewer wavelet levels for integer counts, one compiled pass for the
partition's scores and dynamic programme); small histograms skip the compiled kernels altogether, and larger ones
until a process has spent numba's start-up on NumPy and SciPy (so no first run pays it). None of this may change a
release, on either path: each case below is the
SHA-256 of (answers, estimate, bucket bounds) and the privacy loss of a seeded release, taken with the code
before those changes. No timing is asserted here (bench/bench_dawa_peer.py measures it).
"""

from __future__ import annotations

import functools
import hashlib
import subprocess
import sys

import numpy as np
import pytest

from dplens.core.mechanisms import MECHANISMS
from dplens.core.mechanisms import dawa as dawa_module
from dplens.core.mechanisms.dawa import _DEVIATIONS, _Deviations, cheapest_partition
from dplens.core.queries.workloads import AllRange, Identity, Prefix, Ranges


@functools.cache
def _inputs() -> dict[str, tuple[np.ndarray, object]]:
    gen = np.random.default_rng(7)
    spiky = np.zeros(4096)
    where = gen.choice(4096, 60, replace=False)
    spiky[where] = np.round(gen.pareto(1.0, 60) * 50)
    smooth = np.round(200 * np.exp(-0.5 * ((np.arange(4096) - 1500) / 400) ** 2) + gen.poisson(3, 4096))
    fractional = gen.gamma(0.5, 40.0, 4096) * (gen.random(4096) < 0.3)
    small = gen.poisson(5, 100).astype(float)
    mid = np.round(gen.exponential(30.0, 300) * (gen.random(300) < 0.2))
    ends = np.sort(np.random.default_rng(12345).integers(0, 4096, size=(2000, 2)), axis=1)
    ranges = Ranges(4096, ends[:, 0], ends[:, 1])
    return {"spiky/ranges": (spiky, ranges), "smooth/ranges": (smooth, ranges), "smooth/prefix": (smooth, Prefix(4096)),
            "fractional/ranges": (fractional, ranges), "small/identity": (small, Identity(100)),
            "small/all-range": (small, AllRange(100)), "mid/prefix": (mid, Prefix(300)),
            "tiny/prefix": (np.array([5.0, 5, 5, 5, 0, 0, 9, 9]), Prefix(8))}


def fingerprint(label: str, epsilon: float, seed: int) -> list[object]:
    x, workload = _inputs()[label]
    _DEVIATIONS.clear()
    release = MECHANISMS["dawa"].run(x, workload, epsilon, np.random.default_rng(seed))
    digest = hashlib.sha256(np.asarray(release.answers, float).tobytes() + np.asarray(release.estimate, float).tobytes()
                            + np.asarray(release.details["bounds"], float).tobytes()).hexdigest()[:16]
    return [digest, float(release.privacy_loss).hex(), int(release.params["buckets"])]


BEFORE = {
    'spiky/ranges/0.1/0': ['c8b689b0f7d183bb', '0x1.999999999999ap-4', 122],
    'spiky/ranges/0.1/1': ['443687b05cb8d39b', '0x1.999999999999ap-4', 117],
    'spiky/ranges/0.1/2': ['c13fa6b44666e08e', '0x1.999999999999ap-4', 120],
    'spiky/ranges/1/0': ['f7232ae713a84fd4', '0x1.0000000000000p+0', 222],
    'spiky/ranges/1/1': ['710975f2b5a130c0', '0x1.0000000000000p+0', 225],
    'spiky/ranges/1/2': ['ccf3ae4d7ecafc3e', '0x1.0000000000000p+0', 223],
    'smooth/ranges/0.1/0': ['7727ad9ff42be6b4', '0x1.999999999999ap-4', 104],
    'smooth/ranges/0.1/1': ['c2da7a08e9852709', '0x1.999999999999ap-4', 97],
    'smooth/ranges/0.1/2': ['70c0c815062d8a2f', '0x1.999999999999ap-4', 101],
    'smooth/ranges/1/0': ['fa57dffd85cb0c3a', '0x1.0000000000000p+0', 754],
    'smooth/ranges/1/1': ['7c32221a611550f6', '0x1.0000000000000p+0', 803],
    'smooth/ranges/1/2': ['321d8baabd4d2ff3', '0x1.0000000000000p+0', 760],
    'smooth/prefix/0.1/0': ['46da25abf8b0da62', '0x1.999999999999ap-4', 104],
    'smooth/prefix/0.1/1': ['0ed995b293df3cf4', '0x1.999999999999ap-4', 97],
    'smooth/prefix/0.1/2': ['f05f5d4c92b8f1f5', '0x1.999999999999ap-4', 101],
    'smooth/prefix/1/0': ['5c4cbe31db86de88', '0x1.0000000000000p+0', 754],
    'smooth/prefix/1/1': ['2765a1a01c37ed79', '0x1.0000000000000p+0', 803],
    'smooth/prefix/1/2': ['5d51b50088f3e0a1', '0x1.0000000000000p+0', 760],
    'fractional/ranges/0.1/0': ['c172433eee93f70e', '0x1.999999999999ap-4', 458],
    'fractional/ranges/0.1/1': ['28d72ec920860a9e', '0x1.999999999999ap-4', 479],
    'fractional/ranges/0.1/2': ['b019449b1c0d256a', '0x1.999999999999ap-4', 466],
    'fractional/ranges/1/0': ['336b34d6763a1edc', '0x1.0000000000000p+0', 1766],
    'fractional/ranges/1/1': ['f1d4146478a0aaaa', '0x1.0000000000000p+0', 1793],
    'fractional/ranges/1/2': ['48d4ef6ab8246bb8', '0x1.0000000000000p+0', 1761],
    'small/identity/0.1/0': ['b4a19a65b5a2d378', '0x1.999999999999ap-4', 7],
    'small/identity/0.1/1': ['fa4e414c9083bc2a', '0x1.999999999999ap-4', 4],
    'small/identity/0.1/2': ['1c1aefc5b6a2b866', '0x1.999999999999ap-4', 3],
    'small/identity/1/0': ['2346c4fa21a4e3a5', '0x1.0000000000000p+0', 24],
    'small/identity/1/1': ['75c9d6847300214f', '0x1.0000000000000p+0', 29],
    'small/identity/1/2': ['38effd869da0509e', '0x1.0000000000000p+0', 30],
    'small/all-range/0.1/0': ['24fdc246a86054ad', '0x1.999999999999ap-4', 7],
    'small/all-range/0.1/1': ['86321cab1910e045', '0x1.999999999999ap-4', 4],
    'small/all-range/0.1/2': ['2c45f6cf0a387c60', '0x1.999999999999ap-4', 3],
    'small/all-range/1/0': ['f8642decbf350906', '0x1.0000000000000p+0', 24],
    'small/all-range/1/1': ['c7a2072398fa30e6', '0x1.0000000000000p+0', 29],
    'small/all-range/1/2': ['d265995049b7daca', '0x1.0000000000000p+0', 30],
    'mid/prefix/0.1/0': ['a695ab654a118c8b', '0x1.999999999999ap-4', 44],
    'mid/prefix/0.1/1': ['712bf05f194eaf8e', '0x1.999999999999ap-4', 49],
    'mid/prefix/0.1/2': ['3391b5cf815384f6', '0x1.999999999999ap-4', 47],
    'mid/prefix/1/0': ['e9c78585c5433214', '0x1.0000000000000p+0', 157],
    'mid/prefix/1/1': ['0829d6e218be17de', '0x1.0000000000000p+0', 147],
    'mid/prefix/1/2': ['f9fc736acb33bbee', '0x1.0000000000000p+0', 149],
    'tiny/prefix/0.1/0': ['d9c8a2564d7bdcd6', '0x1.999999999999ap-4', 4],
    'tiny/prefix/0.1/1': ['2e3c87246f070b0e', '0x1.999999999999ap-4', 1],
    'tiny/prefix/0.1/2': ['fdbffa6c6e7bd5d4', '0x1.999999999999ap-4', 1],
    'tiny/prefix/1/0': ['d3d0d2c910815394', '0x1.0000000000000p+0', 4],
    'tiny/prefix/1/1': ['27bbc7a7200e5bae', '0x1.0000000000000p+0', 4],
    'tiny/prefix/1/2': ['0dd4e37207198592', '0x1.0000000000000p+0', 3],
}


@pytest.mark.parametrize("path", ["numpy", "compiled"])
@pytest.mark.parametrize("case", sorted(BEFORE), ids=str)
def test_release_is_the_one_recorded_before_the_speed_work(case, path, monkeypatch):
    """On both paths: NumPy and SciPy only (as a process's first runs), and the compiled kernels."""
    monkeypatch.setattr(dawa_module, "_KERNELS", dawa_module._KernelChoice(always=path == "compiled"))
    label, epsilon, seed = case.rsplit("/", 2)
    assert fingerprint(label, float(epsilon), int(seed)) == BEFORE[case]


def test_partitions_run_on_numpy_until_numba_would_have_paid_off(monkeypatch):
    """Up to NUMPY_UP_TO cells always NumPy; above, NumPy until its partitions have cost NUMPY_SECONDS of CPU, then
    compiled (at once for the largest histograms, or if another mechanism has loaded the kernels)."""
    monkeypatch.setattr(dawa_module, "NUMPY_SECONDS", 1.0)
    monkeypatch.delitem(sys.modules, "dplens.core.mechanisms.kernels", raising=False)
    choice = dawa_module._KernelChoice()
    runs = []
    for n, seconds in ((512, 5.0), (4096, 0.5), (513, 0.4), (4096, 0.2), (512, 0.0)):
        runs.append(choice.compiled(n))
        choice.spent(n, seconds)  # the small run's seconds do not count
    assert runs == [False, False, False, False, False]
    assert choice.compiled(4096) and not choice.compiled(512)
    assert dawa_module._KernelChoice().compiled(dawa_module.COMPILED_ABOVE + 1)
    monkeypatch.setitem(sys.modules, "dplens.core.mechanisms.kernels", object())
    assert dawa_module._KernelChoice().compiled(4096)


def test_first_release_on_dpbench_size_does_not_load_numba():
    """The first-run penalty was numba's start-up (bench/bench_dawa_peer.py times it): a fresh process's first DAWA
    release on 4096 cells runs without importing numba."""
    code = ("import sys, numpy as np; from dplens.core.mechanisms import MECHANISMS; "
            "from dplens.core.queries.workloads import Prefix; "
            "x = np.random.default_rng(0).poisson(5, 4096).astype(float); "
            "MECHANISMS['dawa'].run(x, Prefix(4096), 1.0, np.random.default_rng(1)); print('numba' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def _histograms(seed: int, n: int) -> list[np.ndarray]:
    gen = np.random.default_rng(seed)
    sparse = np.round(gen.exponential(40.0, n) * (gen.random(n) < 0.05))
    steps = np.repeat(gen.integers(0, 500, n // 16 + 1), 16)[:n] + gen.integers(0, 3, n)
    return [sparse, steps.astype(float), gen.random(n) * 1000.0, np.zeros(n), np.full(n, 7.0)]


@pytest.mark.parametrize("seed", range(3))
def test_compiled_and_numpy_deviations_are_equal_to_the_bit(seed):
    """Both paths of _Deviations (integer counts ranked among distinct values, other data by a stable sort)."""
    for n in (600, 1500):
        lengths = 2 ** np.arange(1, n.bit_length())
        for x in _histograms(seed, n):
            compiled = _Deviations(x, compiled=True).windows(lengths)
            plain = _Deviations(x).windows(lengths)
            for a, b in zip(compiled, plain, strict=True):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", range(4))
def test_compiled_and_numpy_partitions_are_equal(seed):
    gen = np.random.default_rng(seed)
    n = int(gen.integers(513, 1500))
    lengths = 2 ** np.arange(1, n.bit_length())
    singleton = float(gen.uniform(0.5, 3))
    # noisy costs, some below the floor, with ties to the floor and between buckets
    costs = [np.round(gen.normal(length * singleton * 0.6, length * singleton * 0.5, n - length + 1), 1)
             for length in lengths]
    compiled = cheapest_partition(costs, lengths, singleton, n, compiled=True)
    assert cheapest_partition(costs, lengths, singleton, n).tolist() == compiled.tolist()
