"""JAX's compiled programs dropped while a synthesiser runs (dplens.core.tables.compiled_memory): the projections,
the fits and the seeded records are the same to the bit; only programs are compiled again."""

from __future__ import annotations

import numpy as np
import pytest

mbi = pytest.importorskip("mbi")
compiled_memory = pytest.importorskip("dplens.core.tables.compiled_memory")

NAMES, SIZES = ("a", "b", "c", "d"), (3, 4, 2, 5)
PAIRS = [(x, y) for i, x in enumerate(NAMES) for y in NAMES[i + 1:]]


def _measurements() -> list:
    """Noisy 1-way marginals and one 2-way marginal of a fixed random table (seeded)."""
    rng = np.random.default_rng(7)
    records = rng.integers(0, SIZES, size=(500, len(NAMES)))
    records[:, 1] = (records[:, 0] + rng.integers(0, 2, 500)) % SIZES[1]
    out = []
    for clique in [(0,), (1,), (2,), (3,), (0, 1)]:
        shape = [SIZES[i] for i in clique]
        counts = np.zeros(shape)
        np.add.at(counts, tuple(records[:, i] for i in clique), 1)
        out.append(mbi.LinearMeasurement((counts + rng.normal(0, 2.0, shape)).ravel(),
                                         tuple(NAMES[i] for i in clique), stddev=2.0))
    return out


def _fit():
    return mbi.estimation.mirror_descent(mbi.Domain(NAMES, SIZES), _measurements(), iters=20)


@pytest.fixture(scope="module")
def model():
    """One fit for the tests that only project (a fit compiles for seconds)."""
    return _fit()


@pytest.fixture
def clears(monkeypatch):
    """Every clear of JAX's caches (each one really clears them)."""
    calls: list[int] = []
    real = compiled_memory.clear_compiled

    def counted() -> None:
        calls.append(1)
        real()

    monkeypatch.setattr(compiled_memory, "clear_compiled", counted)
    return calls


def test_projections_are_the_same_when_caches_are_cleared_between_them(model, monkeypatch, clears):
    expected = {pair: np.asarray(model.project(pair).values) for pair in PAIRS}
    monkeypatch.setattr(compiled_memory, "PROJECTIONS_PER_CLEAR", 1)
    bounded = compiled_memory.bounded(model)
    assert isinstance(bounded, mbi.MarkovRandomField)
    for pair in PAIRS:
        np.testing.assert_array_equal(np.asarray(bounded.project(pair).values), expected[pair])
    outside = [pair for pair in PAIRS if not model.marginals.supports(pair)]
    assert len(clears) == len(outside) == len(PAIRS) - 1  # ("a", "b") is in the model: no program compiled
    np.testing.assert_array_equal(np.asarray(bounded.project("c").values), np.asarray(model.project("c").values))
    assert len(clears) == len(outside)


def test_never_cleared_within_a_selection_when_the_count_is_zero(model, monkeypatch, clears):
    monkeypatch.setattr(compiled_memory, "PROJECTIONS_PER_CLEAR", 0)
    bounded = compiled_memory.bounded(model)
    for pair in PAIRS:
        bounded.project(pair)
    assert clears == []


def test_a_fit_and_its_seeded_records_are_the_same_after_clearing():
    from dplens.core.tables.sampler import sample_records

    first = _fit()
    records = sample_records(first, 300, np.random.default_rng(3))
    compiled_memory.clear_compiled()
    again = compiled_memory.bounded(_fit())
    for clique in first.potentials.cliques:
        np.testing.assert_array_equal(np.asarray(again.potentials[clique].values),
                                      np.asarray(first.potentials[clique].values))
    np.testing.assert_array_equal(sample_records(again, 300, np.random.default_rng(3)), records)


def test_a_synthesiser_run_clears_after_every_fit(clears):
    from dplens.core.data.domain import Domain
    from dplens.core.queries.marginals import MarginalWorkload
    from dplens.core.tables.synthesis import AIM

    domain = Domain(("a", "b"), (2, 3))
    records = np.random.default_rng(0).integers(0, domain.sizes, size=(300, 2))
    release = AIM(rounds=4, round_iters=3, iters=7, max_size=1.0).run(
        records, MarginalWorkload.all_kway(domain, 2), 2.0, np.random.default_rng(1))
    assert len(clears) >= release.params["model_fits"] >= 3


def test_freed_pages_go_back_to_the_os_where_glibc_can():
    import sys

    assert compiled_memory.release_freed() is (sys.platform == "linux" or compiled_memory._malloc_trim() is not None)
