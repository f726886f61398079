"""Synthetic records from a fitted graphical model (dplens.core.tables.sampler), with power against mbi's default
sampler.

mbi 1.1's ``synthetic_data(method="round")`` (OpenDP 0.16's ``ContingencyTable.synthesize``) ranks records inside
each parent group in row order for every column, so siblings come out comonotone; the checks below fail on it.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import chi2

mbi = pytest.importorskip("mbi")

from dplens.core.tables.sampler import sample_records, synthesize_table  # noqa: E402

RECORDS = 20_000
PAIR_P_VALUE_FLOOR = 1e-4   # per 2-way marginal; chi-square against multinomial counts (stratified draws vary less)
MISMATCH_P_VALUE = 1e-12    # what the default sampler's false correlation scores (it must fail by far)


def _model(sizes: dict[str, int], log_potentials: dict[tuple[str, ...], np.ndarray], total: float):
    """A MarkovRandomField with the given log-potentials, its marginals computed by mbi's own message passing."""
    domain = mbi.Domain(tuple(sizes), tuple(sizes.values()))
    cliques = list(log_potentials)
    potentials = mbi.CliqueVector(domain, cliques, {c: mbi.Factor(domain.project(c), np.log(v))
                                                    for c, v in log_potentials.items()})
    marginals = mbi.marginal_oracles.message_passing_stable(potentials, total)
    return mbi.MarkovRandomField(potentials=potentials, marginals=marginals, total=total)


def _independent_columns():
    """a, b, c independent, fitted as MST fits them: a tree a–b, a–c whose pair marginals factorise."""
    p_a, p_b, p_c = np.array([.5, .3, .2]), np.array([.4, .3, .2, .1]), np.array([.6, .25, .15])
    return _model({"a": 3, "b": 4, "c": 3}, {("a", "b"): np.outer(p_a, p_b), ("a", "c"): np.outer(np.ones(3), p_c)},
                  RECORDS)


def _chain():
    """a → b and a → c with strong dependence: b and c are dependent, but only through a."""
    p_a = np.array([.5, .3, .2])
    b_given_a = np.array([[.7, .1, .1, .1], [.1, .7, .1, .1], [.1, .1, .4, .4]])
    c_given_a = np.array([[.8, .1, .1], [.2, .6, .2], [.1, .1, .8]])
    return _model({"a": 3, "b": 4, "c": 3}, {("a", "b"): p_a[:, None] * b_given_a, ("a", "c"): c_given_a}, RECORDS)


def _cycle():
    """A 4-cycle a–b–c–d–a: not chordal, so the sampler must condition on the fill-in edge too."""
    agree = np.array([[3.0, 1.0], [1.0, 3.0]])
    return _model({"a": 2, "b": 2, "c": 2, "d": 2},
                  {("a", "b"): agree, ("b", "c"): agree, ("c", "d"): agree, ("a", "d"): agree.T[::-1]}, RECORDS)


MODELS = {"independent": _independent_columns, "chain": _chain, "cycle": _cycle}


def _pair_p_values(model, columns: tuple[str, ...], records: np.ndarray) -> dict[tuple[str, str], float]:
    """Chi-square p-value of every 2-way marginal of ``records`` against the model's own (scaled to the rows)."""
    out = {}
    for (i, x), (j, y) in itertools.combinations(enumerate(columns), 2):
        expected = np.array(model.project((x, y)).datavector(flatten=False), dtype=float)
        expected *= len(records) / expected.sum()
        observed = np.zeros_like(expected)
        np.add.at(observed, (records[:, i], records[:, j]), 1)
        statistic = float(((observed - expected) ** 2 / expected).sum())
        out[(x, y)] = float(chi2.sf(statistic, expected.size - 1))
    return out


@pytest.mark.statistical
@pytest.mark.parametrize("case", MODELS.values(), ids=MODELS.keys())
def test_two_way_marginals_match_the_model_and_the_default_sampler_fails(case, rng):
    model = case()
    columns = tuple(model.domain.attributes)
    ours = _pair_p_values(model, columns, sample_records(model, RECORDS, rng))
    assert min(ours.values()) > PAIR_P_VALUE_FLOOR, ours
    # Power: the same check on the library's default sampler (mbi draws from NumPy's global RNG, unseeded here;
    # its comonotone siblings fail at any seed by hundreds of standard deviations).
    library = model.synthetic_data(RECORDS).df
    theirs = _pair_p_values(model, columns, np.column_stack([library[c].to_numpy() for c in columns]))
    assert min(theirs.values()) < MISMATCH_P_VALUE, theirs


def test_stratified_draws_keep_randomized_roundings_small_error_on_the_fitted_cliques(rng):
    """Root counts within 1 of N·p; each fitted pair within 2 (one rounding for the parent, one for the child)."""
    model = _chain()
    records = sample_records(model, RECORDS, rng)
    for clique in (("a",), ("a", "b"), ("a", "c")):
        expected = np.array(model.project(clique).datavector(flatten=False), dtype=float)
        expected *= RECORDS / expected.sum()
        index = tuple(records[:, model.domain.attributes.index(c)] for c in clique)
        observed = np.zeros_like(expected)
        np.add.at(observed, index, 1)
        assert np.abs(observed - expected).max() <= len(clique), (clique, observed - expected)
    independent = sample_records(model, RECORDS, rng, method="independent")
    assert abs(np.bincount(independent[:, 0], minlength=3) - RECORDS * np.array([.5, .3, .2])).max() > 1


def test_same_seed_same_records_and_arguments_checked():
    model = _chain()
    first = sample_records(model, 500, np.random.default_rng(3))
    assert np.array_equal(first, sample_records(model, 500, np.random.default_rng(3)))
    assert not np.array_equal(first, sample_records(model, 500, np.random.default_rng(4)))
    assert len(sample_records(model, None, np.random.default_rng(3))) == RECORDS  # the model's total
    for rows in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="rows must be a positive integer"):
            sample_records(model, rows, np.random.default_rng(3))
    with pytest.raises(ValueError, match="method must be one of"):
        sample_records(model, 10, np.random.default_rng(3), method="round")


def test_synthesize_table_maps_levels_to_opendp_keys():
    from opendp.extras.mbi import ContingencyTable

    model = _chain()
    keys = {"a": ["x", "y", None], "b": [10, 20, 30, None], "c": [0, 1, None]}
    table = ContingencyTable(keys=keys, cuts={}, marginals={}, model=model)
    frame = synthesize_table(table, 1000, np.random.default_rng(0))
    assert frame.columns == ["a", "b", "c"] and frame.height == 1000
    assert set(frame["a"].drop_nulls()) <= {"x", "y"} and set(frame["b"].drop_nulls()) <= {10, 20, 30}
    records = sample_records(model, 1000, np.random.default_rng(0))
    assert frame["a"].null_count() == int((records[:, 0] == 2).sum())  # the third level is the null key


def _marginal(records: np.ndarray, columns: tuple[int, ...], sizes: tuple[int, ...]) -> np.ndarray:
    counts = np.zeros([sizes[c] for c in columns])
    np.add.at(counts, tuple(records[:, c] for c in columns), 1)
    return counts


def _falls(errors: list[float]) -> bool:
    """Strictly decreasing and at least halved from the smallest to the largest rho."""
    return all(x > y for x, y in itertools.pairwise(errors)) and errors[-1] <= errors[0] / 2


@pytest.mark.statistical
def test_mst_workload_error_falls_as_rho_grows_and_the_default_sampler_does_not(rng):
    """MST's measure → estimate → generate, seeded: the 1-way marginals and the tree's 2-way marginals (age–sex,
    age–region) with Gaussian noise from ``rng`` (ρ = k / 2σ² for k sensitivity-1 measurements; McKenna, Miklau &
    Sheldon 2021), fitted by Private-PGM's mirror descent. OpenDP's own MST draws its noise from an unseedable
    CSPRNG and takes 8–17 s per fit on this machine (over a unit test's budget): the end-to-end figures are
    bench/bench_synthesis.py's, and tests/test_tables_mechanisms.py runs the same call site through AIM.

    sex and region are independent (the defect's example): mbi's default sampler pairs them comonotonically
    inside each age group at every ρ, so its error stays put while ours falls towards the sampling floor.
    """
    data = np.random.default_rng(2026)
    rows, names, sizes = 2000, ("age", "sex", "region"), (5, 2, 4)
    records = np.column_stack([data.integers(0, 5, rows), data.integers(0, 2, rows),
                               data.choice(4, rows, p=[.3, .3, .2, .2])])
    measured, pairs = ((0,), (1,), (2,), (0, 1), (0, 2)), ((0, 1), (0, 2), (1, 2))
    truth = {pair: _marginal(records, pair, sizes) for pair in pairs}
    cells = sum(t.size for t in truth.values())

    def workload_rmse(synthetic: np.ndarray) -> float:
        return float(np.sqrt(sum(((_marginal(synthetic, p, sizes) - truth[p]) ** 2).sum() for p in pairs) / cells))

    ours, theirs = [], []
    for rho in (0.003, 0.03, 0.3):
        noise_scale = np.sqrt(len(measured) / (2 * rho))
        measurements = [mbi.LinearMeasurement(
            (_marginal(records, c, sizes) + rng.normal(0, noise_scale, [sizes[i] for i in c])).ravel(),
            tuple(names[i] for i in c), stddev=noise_scale) for c in measured]
        model = mbi.estimation.mirror_descent(mbi.Domain(names, sizes), measurements, iters=300)
        ours.append(workload_rmse(sample_records(model, rows, rng)))
        library = model.synthetic_data(rows).df  # mbi's default "round", NumPy's global RNG (unseeded)
        theirs.append(workload_rmse(np.column_stack([library[n].to_numpy() for n in names])))
    assert _falls(ours), ours
    assert not _falls(theirs) and theirs[-1] > 3 * ours[-1], (theirs, ours)

