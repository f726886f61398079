"""JAX's compiled programs while a synthesiser runs (dplens.core.tables.compiled_memory): projections in NumPy equal
mbi's and compile nothing; fits and seeded records are the same to the bit after their programs are dropped."""

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


@pytest.fixture
def compiles():
    """Every program XLA compiles while the test runs (JAX's monitoring events)."""
    import jax

    events: list[str] = []

    def heard(event: str, duration: float, **_: object) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            events.append(event)

    jax.monitoring.register_event_duration_secs_listener(heard)
    yield events
    jax.monitoring.unregister_event_duration_listener(heard)


def test_projections_equal_mbis_and_compile_nothing(model, compiles):
    bounded = compiled_memory.bounded(model)
    assert isinstance(bounded, mbi.MarkovRandomField)
    cliques = [*PAIRS, ("b", "a"), ("c",), ("a", "c", "d"), ("d", "b", "a")]
    expected = {clique: np.asarray(model.project(clique).values) for clique in cliques}
    assert compiles, "mbi's own projections compile programs (the monitor hears them)"
    del compiles[:]
    for clique in cliques:
        got = np.asarray(bounded.project(clique).values)
        np.testing.assert_allclose(got, expected[clique], rtol=1e-12, atol=1e-12 * model.total)
    assert compiles == []


def test_out_of_model_marginals_equal_mbis_on_random_models():
    """Random domains, random clique sets and log-potentials (seeded): every 1-, 2- and 3-way marginal."""
    import itertools

    from dplens.core.tables.projection import out_of_model_marginal

    rng = np.random.default_rng(11)
    for _ in range(6):
        names = tuple("pqrst"[: rng.integers(3, 6)])
        domain = mbi.Domain(names, tuple(int(s) for s in rng.integers(1, 5, len(names))))
        cliques = [tuple(sorted(rng.choice(names, size=rng.integers(1, 3), replace=False), key=names.index))
                   for _ in range(rng.integers(1, 4))]
        potentials = mbi.CliqueVector.random(domain, cliques)
        for k in (1, 2, 3):
            for clique in itertools.combinations(names, k):
                expected = np.asarray(mbi.marginal_oracles.variable_elimination(potentials, clique, 50.0).values)
                np.testing.assert_allclose(out_of_model_marginal(potentials, clique, 50.0), expected,
                                           rtol=1e-10, atol=1e-12)


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
