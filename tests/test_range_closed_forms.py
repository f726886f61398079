"""hb's and privelet's closed-form error on lists of arbitrary 1-D ranges against the estimator pushed through noise.

The closed forms (``hierarchical.range_variances``, ``privelet.axis_range_variances``) give each range's variance
in O(log n); the oracle (``_energy``) pushes unit noise or the query rows through the estimator, and for small n a
dense W Σ Wᵀ checks the variances range by range.
"""

import numpy as np
import pytest

from dplens.core.mechanisms import hierarchical, privelet
from dplens.core.mechanisms.hierarchical import Hierarchical, build_tree
from dplens.core.mechanisms.privelet import Privelet
from dplens.core.queries.workloads import Identity, Kron, Prefix, Ranges, Stack, dense, random_range, random_range_2d

SIZES = [1, 2, 3, 5, 8, 9, 27, 37, 64, 100, 257]
TREES = [(2, True), (2, False), (3, False), (4, True), (16, False)]


def _ranges(n: int, rng: np.random.Generator, m: int = 40) -> Ranges:
    """m random ranges plus the edge cases: one cell at each end, the full range, and duplicates."""
    ends = np.sort(rng.integers(0, n, size=(m, 2)), axis=1)
    edges = np.array([[0, 0], [n - 1, n - 1], [0, n - 1], [0, n - 1], [n // 2, n // 2], [0, n // 2]])
    ends = np.vstack([ends, edges, ends[:5]])
    return Ranges(n, ends[:, 0], ends[:, 1])


def _dense_tree_covariance(tree) -> np.ndarray:
    """(AᵀA)⁻¹ with A built row by row from the tree's measured nodes (1-D)."""
    strategy = []
    for level, measured in zip(tree.levels, tree.measured, strict=True):
        for c0, c1 in zip(level.c0, level.c1, strict=True) if measured else ():
            row = np.zeros(tree.shape[1])
            row[c0:c1] = 1.0
            strategy.append(row)
    a = np.array(strategy)
    return np.linalg.inv(a.T @ a)


def _dense_haar_covariance(n: int) -> np.ndarray:
    """R Rᵀ with R the inverse Haar transform cropped to the real cells."""
    inverse = privelet._reconstruct(np.eye(privelet.padded_length(n)), (1, n))
    return inverse @ inverse.T


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize(("branching", "root"), TREES)
def test_hb_range_energy_equals_the_oracle(n, branching, root, rng):
    tree = build_tree((1, n), branching, root)
    workload = _ranges(n, rng)
    closed = hierarchical.closed_energy(tree, workload)
    np.testing.assert_allclose(closed, hierarchical._energy(tree, workload), rtol=1e-9)


@pytest.mark.parametrize("n", SIZES)
def test_privelet_range_energy_equals_the_oracle(n, rng):
    workload = _ranges(n, rng)
    closed = privelet.closed_energy((1, n), workload)
    np.testing.assert_allclose(closed, privelet._energy((1, n), workload), rtol=1e-9)


@pytest.mark.parametrize("n", [1, 2, 5, 16, 37])
@pytest.mark.parametrize(("branching", "root"), TREES)
def test_hb_variance_of_every_range_is_the_dense_one(n, branching, root):
    tree = build_tree((1, n), branching, root)
    lo, hi = np.triu_indices(n)  # every range [lo, hi]
    rows = dense(Ranges(n, lo, hi))
    expected = np.einsum("ij,jk,ik->i", rows, _dense_tree_covariance(tree), rows)
    np.testing.assert_allclose(hierarchical.range_variances(tree, lo, hi), expected, rtol=1e-9)


@pytest.mark.parametrize("n", [1, 2, 5, 16, 37])
def test_privelet_variance_of_every_range_is_the_dense_one(n):
    lo, hi = np.triu_indices(n)
    rows = dense(Ranges(n, lo, hi))
    expected = np.einsum("ij,jk,ik->i", rows, _dense_haar_covariance(n), rows)
    np.testing.assert_allclose(privelet.axis_range_variances(n, lo, hi), expected, rtol=1e-9)


def test_ranges_compose_in_stacks_and_privelet_krons(rng):
    n = 37
    stack = Stack((_ranges(n, rng), Prefix(n), _ranges(n, rng, m=7)))
    tree = build_tree((1, n), 3, False)
    np.testing.assert_allclose(hierarchical.closed_energy(tree, stack), hierarchical._energy(tree, stack), rtol=1e-9)
    np.testing.assert_allclose(privelet.closed_energy((1, n), stack), privelet._energy((1, n), stack), rtol=1e-9)
    kron = Kron((_ranges(6, rng, m=5), _ranges(9, rng, m=4)))  # the product of the axes' range energies
    np.testing.assert_allclose(privelet.closed_energy((6, 9), kron), privelet._energy((6, 9), kron), rtol=1e-9)


def test_what_stays_on_the_oracle():
    """Ranges of a 2-D grid's flat cells, rectangles off their grid and hb's quadtree on rectangles keep the oracle
    (documented)."""
    grid = (4, 8)
    flat = Stack((Kron((Identity(4), Prefix(8))), Ranges(32, [0, 3], [31, 20])))
    assert privelet.closed_energy(grid, flat) is None
    assert hierarchical.closed_energy(build_tree(grid, 2, False), flat) is None
    rectangles = random_range_2d(grid, 5, seed=1)
    assert privelet.closed_energy((1, 32), rectangles) is None
    assert hierarchical.closed_energy(build_tree(grid, 2, False), rectangles) is None


@pytest.mark.parametrize("grid", [(1, 9), (3, 1), (4, 4), (5, 7), (16, 8), (13, 17)])
def test_privelet_rectangle_energy_is_the_product_of_the_axes(grid, rng):
    """A rectangle is the Kron of two ranges: its variance under the 2-D transform is the product of the axes'."""
    rectangles = random_range_2d(grid, 30, seed=int(rng.integers(1 << 30)))
    stack = Stack((rectangles, Kron((Identity(grid[0]), Prefix(grid[1])))))
    for workload in (rectangles, stack):
        np.testing.assert_allclose(privelet.closed_energy(grid, workload), privelet._energy(grid, workload),
                                   rtol=1e-12)


def test_rectangles_get_the_2d_strategies_of_their_grid(monkeypatch):
    """On rectangles hb builds its quadtree and privelet its 2-D transform (the grid the workload names), not a 1-D
    tree over the flat row-major cells, where a rectangle is many scattered ranges: hb's error falls ~3×."""
    from dplens.core.queries import workloads

    rectangles = random_range_2d((64, 64), 500, seed=0)
    assert workloads.workload_grid(rectangles) == (64, 64) == workloads.workload_grid(Stack((Prefix(4096), rectangles)))
    hb = Hierarchical()
    quadtree = hb.expected_mse(rectangles, 1.0)
    monkeypatch.setattr(workloads.Ranges2D, "grid_shape", lambda self: (1, self.shape[1]))  # the old flat grid
    for cache in Hierarchical.STRATEGY_CACHES:
        cache.clear()
    assert quadtree < hb.expected_mse(rectangles, 1.0) / 2
    for cache in Hierarchical.STRATEGY_CACHES:
        cache.clear()


@pytest.mark.parametrize("mechanism", [Hierarchical(), Hierarchical(branching=2), Privelet()],
                         ids=["hb", "h2", "privelet"])
def test_expected_mse_on_random_ranges_is_the_old_paths(mechanism, monkeypatch):
    """expected_mse through the range closed forms equals it with them switched off (the oracle)."""
    workloads = [random_range(n, 300, seed=n) for n in (100, 1000, 4096)]

    def computed() -> list[float]:
        for cache in type(mechanism).STRATEGY_CACHES:
            cache.clear()  # the energies are cached per (strategy, workload): compute them again
        return [mechanism.expected_mse(w, 0.3) for w in workloads]

    new = computed()
    for module in (hierarchical, privelet):
        monkeypatch.setattr(module, "closed_energy", lambda *args: None)
    np.testing.assert_allclose(new, computed(), rtol=1e-9)
    for cache in type(mechanism).STRATEGY_CACHES:
        cache.clear()
