"""hb's and privelet's closed-form error energies against the estimator pushed through noise and a dense trace."""

import numpy as np
import pytest

from dplens.core.mechanisms import hierarchical, privelet
from dplens.core.mechanisms.hierarchical import Hierarchical, build_tree
from dplens.core.mechanisms.privelet import Privelet
from dplens.core.queries.workloads import AllRange, Identity, Kron, Prefix, Stack, Total, dense


def _families(n: int) -> list:
    return [Identity(n), Prefix(n), AllRange(n), Total(n), Stack((Prefix(n), Identity(n), Total(n)))]


def _dense_tree_trace(tree, workload) -> float:
    """tr(W (AᵀA)⁻¹ Wᵀ) with A built row by row from the tree's measured nodes."""
    rows, cols = tree.shape
    strategy = []
    for level, measured in zip(tree.levels, tree.measured, strict=True):
        for r0, r1, c0, c1 in zip(level.r0, level.r1, level.c0, level.c1, strict=True) if measured else ():
            block = np.zeros((rows, cols))
            block[r0:r1, c0:c1] = 1.0
            strategy.append(block.ravel())
    a = np.array(strategy)
    w = dense(workload)
    return float(np.trace(w @ np.linalg.inv(a.T @ a) @ w.T))


def _dense_haar_trace(grid, workload) -> float:
    """tr(W R Rᵀ Wᵀ) with R the inverse Haar transform (cropped to the real cells) built from unit vectors."""
    coordinates = privelet.padded_length(grid[0]) * privelet.padded_length(grid[1])
    inverse = privelet._reconstruct(np.eye(coordinates), grid)
    w = dense(workload)
    return float(np.sum((w @ inverse) ** 2))


@pytest.mark.parametrize("n", [16, 64, 256, 37, 100])
@pytest.mark.parametrize("branching, root", [(2, True), (2, False), (3, False), (4, True), (16, False)])
def test_hb_closed_forms_equal_the_estimator_pushed_through_noise(n, branching, root):
    tree = build_tree((1, n), branching, root)
    for workload in _families(n):
        closed = hierarchical.closed_energy(tree, workload)
        np.testing.assert_allclose(closed, hierarchical._energy(tree, workload), rtol=1e-9, err_msg=repr(workload))
        if n <= 64:
            np.testing.assert_allclose(closed, _dense_tree_trace(tree, workload), rtol=1e-9)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (8, 16)])
def test_hb_closed_form_of_the_identity_on_a_quadtree(shape):
    tree = build_tree(shape, 2, False)
    workload = Kron((Identity(shape[0]), Identity(shape[1])))
    closed = hierarchical.closed_energy(tree, workload)
    np.testing.assert_allclose(closed, hierarchical._energy(tree, workload), rtol=1e-9)
    np.testing.assert_allclose(closed, _dense_tree_trace(tree, workload), rtol=1e-9)
    # a 2-D prefix has no closed form here: the old path answers it
    assert hierarchical.closed_energy(tree, Kron((Prefix(shape[0]), Prefix(shape[1])))) is None


@pytest.mark.parametrize("n", [16, 64, 256, 37, 100])
def test_privelet_closed_forms_equal_the_inverse_pushed_through_noise(n):
    for workload in _families(n):
        closed = privelet.closed_energy((1, n), workload)
        np.testing.assert_allclose(closed, privelet._energy((1, n), workload), rtol=1e-9, err_msg=repr(workload))
        if n <= 64:
            np.testing.assert_allclose(closed, _dense_haar_trace((1, n), workload), rtol=1e-9)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (8, 16)])
def test_privelet_closed_form_of_krons_is_the_product_of_the_axes(shape):
    blocks = [Kron((f(shape[0]), g(shape[1]))) for f in (Identity, Prefix, AllRange, Total)
              for g in (Identity, Prefix, AllRange, Total)]
    for workload in [*blocks, Stack(tuple(blocks[:3]))]:
        closed = privelet.closed_energy(shape, workload)
        np.testing.assert_allclose(closed, privelet._energy(shape, workload), rtol=1e-9, err_msg=repr(workload))
        np.testing.assert_allclose(closed, _dense_haar_trace(shape, workload), rtol=1e-9)


@pytest.mark.parametrize("mechanism", [Hierarchical(), Hierarchical(branching=2), Privelet(),
                                       Hierarchical(noise="gaussian"), Privelet(noise="gaussian")],
                         ids=["hb", "h2", "privelet", "gaussian-hb", "gaussian-privelet"])
def test_expected_mse_is_the_old_paths_at_every_family(mechanism, monkeypatch):
    """expected_mse through the closed forms equals it through the old path (closed forms switched off), with
    Gaussian noise too, which scales the same energy by its sigma."""
    def computed() -> list[float]:
        for cache in type(mechanism).STRATEGY_CACHES:
            cache.clear()  # the energies are cached per (strategy, workload): compute them again
        return [mechanism.expected_mse(w, 0.7) for w in _families(64) + [Kron((Prefix(8), Identity(8)))]]

    new = computed()
    for module in (hierarchical, privelet):
        monkeypatch.setattr(module, "closed_energy", lambda *args: None)
    np.testing.assert_allclose(new, computed(), rtol=1e-9)
    for cache in type(mechanism).STRATEGY_CACHES:
        cache.clear()
