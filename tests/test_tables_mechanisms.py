"""Table mechanisms beyond identity and ResidualPlanner: HDMM's OPT_M (dense oracle, simulation with power),
histogram mechanisms on marginals, and the OpenDP-run AIM and PGM-estimated identity."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dplens.core.data.domain import Domain
from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.tables.mechanisms import TABLE_MECHANISMS, table_mechanism
from dplens.core.tables.opt_marginals import laplace_identity_rmse, measure_marginals, plan_opt_marginals

DOMAIN = Domain(("a", "b", "c"), (2, 3, 4))


def _records(domain: Domain, count: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, domain.sizes, size=(count, len(domain.sizes)))


def _marginal_matrix(domain: Domain, columns: tuple[int, ...]) -> np.ndarray:
    """Dense M_a over the full domain (row-major cells of a; columns: full-domain cells, row-major)."""
    cells = list(itertools.product(*(range(s) for s in domain.sizes)))
    shape = tuple(domain.sizes[i] for i in columns)
    matrix = np.zeros((math.prod(shape), len(cells)))
    for j, cell in enumerate(cells):
        matrix[np.ravel_multi_index(tuple(cell[i] for i in columns), shape), j] = 1.0
    return matrix


class _Recording:
    """A noise source that records its Laplace draws (to replay them through the dense oracle)."""

    def __init__(self, seed: int) -> None:
        self.rng, self.draws = np.random.default_rng(seed), []

    def laplace(self, loc=0.0, scale=1.0, size=None):
        draw = self.rng.laplace(loc, scale, size)
        self.draws.append(np.asarray(draw).ravel())
        return draw


@pytest.mark.parametrize("k", [1, 2])
def test_opt_marginals_error_and_least_squares_match_dense_oracle(k):
    workload = MarginalWorkload.all_kway(DOMAIN, k)
    plan = plan_opt_marginals(workload, rho=0.5)
    strategy = np.vstack([theta * _marginal_matrix(DOMAIN, columns) for columns, theta in plan.measured()])
    pinv = np.linalg.pinv(strategy)
    noise_variance = 2 * plan.noise_scale ** 2
    expected = 0.0
    for marginal in workload.marginals:
        m = _marginal_matrix(DOMAIN, DOMAIN.index(marginal))
        expected += noise_variance * np.sum((m @ pinv) ** 2)
    assert plan.expected_mse == pytest.approx(expected / workload.cells, rel=1e-9)
    records = _records(DOMAIN, 300)
    recording = _Recording(1)
    estimates = measure_marginals(plan, records, recording)
    x = np.bincount(np.ravel_multi_index(records.T, DOMAIN.sizes), minlength=DOMAIN.size).astype(float)
    z = strategy @ x + np.concatenate(recording.draws)
    solution = pinv @ z
    for marginal, estimate in zip(workload.marginals, estimates, strict=True):
        np.testing.assert_allclose(estimate.ravel(), _marginal_matrix(DOMAIN, DOMAIN.index(marginal)) @ solution,
                                   atol=1e-8)


def test_opt_marginals_closed_form_by_simulation_with_power():
    workload = MarginalWorkload.all_kway(DOMAIN, 2)
    plan = plan_opt_marginals(workload, rho=0.5)
    records = _records(DOMAIN, 400)
    truth = workload.answer(records)
    rng = np.random.default_rng(7)
    mse = np.array([sum(float(np.sum((e - t) ** 2)) for e, t in zip(measure_marginals(plan, records, rng), truth,
                                                                       strict=True)) / workload.cells
                    for _ in range(400)])
    standard_error = mse.std(ddof=1) / math.sqrt(len(mse))
    assert abs(mse.mean() - plan.expected_mse) < 3 * standard_error
    assert abs(mse.mean() - 1.2 * plan.expected_mse) > 3 * standard_error  # a 20 % wrong variance is rejected


def test_opt_marginals_never_worse_than_laplace_identity_and_spends_rho():
    for k in (1, 2, 3):
        workload = MarginalWorkload.all_kway(DOMAIN, k)
        for rho in (0.1, 1.0):
            plan = plan_opt_marginals(workload, rho)
            assert plan.expected_rmse <= laplace_identity_rmse(workload, rho) * (1 + 1e-12)
            assert plan.privacy_loss == pytest.approx(rho)
    release = TABLE_MECHANISMS["hdmm-marginals"].run(_records(DOMAIN, 50), MarginalWorkload.all_kway(DOMAIN, 2),
                                                     0.5, np.random.default_rng(0))
    assert release.privacy_loss <= 0.5 * (1 + 1e-12) and release.params["measured"]


class _Scales:
    """A noise source that records the Laplace scale of every draw (and draws seeded noise)."""

    def __init__(self, seed: int) -> None:
        self.rng, self.scales = np.random.default_rng(seed), []

    def laplace(self, loc=0.0, scale=1.0, size=None):
        self.scales.append(scale)
        return self.rng.laplace(loc, scale, size)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_opt_marginals_loss_from_the_noise_actually_drawn(k):
    """ε from the draws: one record adds θ_a to one cell of each measured z_a, so Δ₁ = Σ_measured θ_a; every draw
    must be Lap(b) with Δ₁/b ≤ √(2ρ), and the reported loss must not understate (Δ₁/b)²/2."""
    workload = MarginalWorkload.all_kway(DOMAIN, k)
    mechanism, rho = TABLE_MECHANISMS["hdmm-marginals"], 0.3
    source = _Scales(4)
    release = mechanism.run(_records(DOMAIN, 100), workload, rho, source)
    measured = plan_opt_marginals(workload, rho).measured()
    assert len(source.scales) == len(measured) > 0
    drawn_rho = max((sum(theta for _, theta in measured) / b) ** 2 / 2 for b in source.scales)
    assert drawn_rho <= rho * (1 + 1e-12) and release.privacy_loss >= drawn_rho * (1 - 1e-12)


def test_opt_marginals_refuses_too_many_attributes():
    wide = Domain(tuple(f"x{i}" for i in range(21)), (2,) * 21)
    with pytest.raises(ValueError, match="k ≤ 20, got k = 21"):
        plan_opt_marginals(MarginalWorkload.all_kway(wide, 1), 1.0)


def test_histograms_on_marginals_budget_error_and_refusal():
    domain = Domain(("age", "sex", "r"), (16, 2, 3))
    workload = MarginalWorkload.all_kway(domain, 2)
    records = _records(domain, 500)
    truth = workload.answer(records)
    identity = table_mechanism("histograms", method="identity")
    # Laplace on every cell at ε_i = √(2ρ/K): variance 2/ε_i² = K/ρ per cell.
    assert identity.expected_mse(workload, 0.5) == pytest.approx(3 / 0.5)
    rng = np.random.default_rng(3)
    mse = []
    for _ in range(200):
        release = identity.run(records, workload, 0.5, rng)
        assert release.privacy_loss <= 0.5 * (1 + 1e-12)
        mse.append(sum(float(np.sum((e - t) ** 2)) for e, t in zip(release.marginal_estimates, truth, strict=True))
                   / workload.cells)
    mse = np.array(mse)
    standard_error = mse.std(ddof=1) / math.sqrt(len(mse))
    assert abs(mse.mean() - 6.0) < 3 * standard_error and abs(mse.mean() - 7.0) > 3 * standard_error
    hb = table_mechanism("histograms")
    assert hb.method == "hb" and hb.run(records, workload, 0.5, rng).privacy_loss <= 0.5 * (1 + 1e-12)
    with pytest.raises(ValueError, match="1- or 2-way marginals; age\\+r\\+sex is 3-way|1- or 2-way"):
        hb.run(records, MarginalWorkload.all_kway(domain, 3), 0.5, rng)
    with pytest.raises(ValueError, match="not a histogram mechanism"):
        table_mechanism("histograms", method="nope")


@pytest.mark.parametrize("name, settings", [("identity-pgm", {"iters": 30}),
                                            ("identity-pgm", {"iters": 30, "noise": "laplace"}),
                                            ("aim", {"rounds": 4, "round_iters": 10, "iters": 30, "max_size": 1.0})])
def test_opendp_synthesisers_on_a_small_table(name, settings):
    """OpenDP draws the noise (not seeded): check the contract, metadata, progress and the synthetic records.

    Two attributes, one 2-way marginal: OpenDP's own scale search (opendp.extras.mbi.Fixed, unbounded float
    bisection: ~600 Gaussian / ~1100 Laplace privacy-map evaluations whatever the table) dominates the run, and
    each evaluation costs per measured marginal, so 4 attributes (6 marginals) took 13–15 s a run, this 3–5 s.
    Every assertion below is about the contract, not the table's size."""
    pytest.importorskip("mbi")
    domain = Domain(tuple("ab"), (2, 3))
    records = _records(domain, 300)
    records[:, 1] = records[:, 0]  # one strong correlation
    workload = MarginalWorkload.all_kway(domain, 2)
    seen = []
    release = table_mechanism(name, **settings).run(records, workload, 2.0, None, progress=seen.append)
    assert release.mechanism == name and 0 < release.privacy_loss <= 2.0 * (1 + 1e-9)
    assert release.privacy_loss == pytest.approx(2.0, rel=1e-9)  # from the σ OpenDP drew
    assert release.params["rho_handed"] <= 2.0 and release.params["model_fits"] >= 1
    assert seen and all(0 <= f < 1 for f in seen)
    assert release.records.shape[1] == 2 and 200 <= len(release.records) <= 400
    assert ((release.records >= 0) & (release.records < np.array(domain.sizes))).all()
    assert [e.shape for e in release.marginal_estimates] == [t.shape for t in workload.answer(records)]
    assert all((e >= 0).all() for e in release.marginal_estimates)  # answered from records: consistent, non-negative
    if settings.get("noise") == "laplace":
        assert release.params["epsilon"] == 2.0 and "pure epsilon-DP" in release.params["privacy"]


def test_attributes_outside_the_workload_are_named():
    from dplens.core.tables.synthesis import uncovered

    assert uncovered(MarginalWorkload(DOMAIN, (("a", "c"),))) == ["b"]
    assert uncovered(MarginalWorkload.all_kway(DOMAIN, 1)) == []


def test_aim_settings_are_checked():
    with pytest.raises(ValueError, match="rounds must be an integer from 1 to 10000, got 0"):
        table_mechanism("aim", rounds="0")
    with pytest.raises(ValueError, match="max_size must be a number of MB"):
        table_mechanism("aim", max_size="-1")


# ------------------------------------------------------------------------------- range queries inside marginals
RANGES_DOMAIN = Domain(("sex", "age", "r"), (2, 5, 3))
RANGES = "marginals:ranges:age|sex,age+r,ranges:age|r*2,ranges:age"


def _ranges_workload():
    from dplens.core.tables.records import parse_marginal_workload

    return parse_marginal_workload(RANGES, RANGES_DOMAIN)


def _query_matrix(workload, index):
    """Dense Q over the marginal's cells in their natural (domain-order, row-major) layout."""
    shape = RANGES_DOMAIN.sizes_of(workload.marginals[index])
    columns = []
    for j in range(math.prod(shape)):
        unit = np.zeros(math.prod(shape))
        unit[j] = 1.0
        columns.append(workload.answer_queries(index, unit.reshape(shape)))
    return np.array(columns).T


def test_range_marginals_operator_against_dense():
    from dplens.core.queries.workloads import dense

    workload = _ranges_workload()
    assert workload.ranges == ("age", None, "age", "age") and workload.weights == (1.0, 1.0, 2.0, 1.0)
    for index in range(len(workload.marginals)):
        q = _query_matrix(workload, index)
        op = workload.queries_on(index)
        np.testing.assert_allclose(dense(op), q[:, _natural_positions(workload, index)], atol=0)
        gram_traces = [(c, t, s) for c, t, s in workload.axis_stats(index)]
        assert math.prod(t for _, t, _ in gram_traces) == pytest.approx(np.trace(q.T @ q))
        assert math.prod(s for _, _, s in gram_traces) == pytest.approx((q.T @ q).sum())
        # sensitivities in closed form: one record changes one cell by 1
        assert op.column_norms(1).max() == np.abs(q).sum(axis=0).max()
        assert np.sqrt((op.column_norms(2) ** 2).max()) == pytest.approx(np.sqrt((q ** 2).sum(axis=0).max()))
    assert workload.queries == sum(_query_matrix(workload, i).shape[0] for i in range(4))
    with pytest.raises(ValueError, match="ranges over 'r' must be inside their marginal sex\\+age"):
        type(workload)(RANGES_DOMAIN, (("sex", "age"),), ranges=("r",))


def _natural_positions(workload, index):
    """For each query-order position, the natural (row-major) cell index it holds."""
    shape = RANGES_DOMAIN.sizes_of(workload.marginals[index])
    return workload.query_order(index, np.arange(math.prod(shape), dtype=float).reshape(shape)).astype(int)


class _Unit:
    """A noise source returning a chosen unit vector for one draw and zeros for the others."""

    def __init__(self, target: int, position: int) -> None:
        self.calls, self.target, self.position = 0, target, position

    def normal(self, loc=0.0, scale=1.0, size=None):
        out = np.zeros(size)
        if self.calls == self.target:
            out.flat[self.position] = 1.0
        self.calls += 1
        return out


def test_residual_planner_range_variance_against_dense_covariance():
    from dplens.core.tables.residual_planner import measure, plan_residuals

    workload = _ranges_workload()
    plan = plan_residuals(workload, 0.5)
    empty = np.zeros((0, 3), dtype=int)
    subsets = [s for s, v in plan.sigma2.items() if math.isfinite(v)]  # measure() draws in this order
    maps = [[] for _ in workload.marginals]
    for target, subset in enumerate(subsets):
        for position in range(math.prod(RANGES_DOMAIN.sizes[i] for i in subset)):
            estimates = measure(plan, empty, _Unit(target, position))
            for index, estimate in enumerate(estimates):
                maps[index].append(math.sqrt(plan.sigma2[subset]) * workload.answer_queries(index, estimate))
    for index in range(len(workload.marginals)):
        noise_map = np.array(maps[index]).T  # queries × all unit noises (scaled by σ_S)
        assert plan.query_variance(index) == pytest.approx(np.sum(noise_map ** 2), rel=1e-9)
    # the plan is optimal for the range objective: Identity's weighting is worse
    assert plan.expected_rmse < math.sqrt(TABLE_MECHANISMS["gaussian-marginals"].expected_mse(workload, 0.5))


def test_opt_marginals_range_variance_against_dense_oracle():
    workload = _ranges_workload()
    plan = plan_opt_marginals(workload, 0.5)
    strategy = np.vstack([theta * _marginal_matrix(RANGES_DOMAIN, c) for c, theta in plan.measured()])
    pinv = np.linalg.pinv(strategy)
    for index, marginal in enumerate(workload.marginals):
        m = _query_matrix(workload, index) @ _marginal_matrix(RANGES_DOMAIN, RANGES_DOMAIN.index(marginal))
        assert plan.query_variance(index) == pytest.approx(2 * plan.noise_scale ** 2 * np.sum((m @ pinv) ** 2))


def test_range_marginals_identity_by_simulation_and_histograms():
    from dplens.core.tables.contract import workload_rmse

    workload = _ranges_workload()
    records = _records(RANGES_DOMAIN, 300)
    truth = workload.answer(records)
    rng = np.random.default_rng(11)
    identity = TABLE_MECHANISMS["gaussian-marginals"]
    mse = np.array([workload_rmse(workload, truth, identity.run(records, workload, 0.5, rng).marginal_estimates) ** 2
                    for _ in range(300)])
    expected = identity.expected_mse(workload, 0.5)
    standard_error = mse.std(ddof=1) / math.sqrt(len(mse))
    assert abs(mse.mean() - expected) < 3 * standard_error and abs(mse.mean() - 1.2 * expected) > 3 * standard_error
    hb = table_mechanism("histograms", method="hb")
    release = hb.run(records, workload, 0.5, rng)
    assert ([e.shape for e in release.marginal_estimates] == [t.shape for t in truth]
            and release.privacy_loss <= 0.5 + 1e-12)
    with pytest.raises(ValueError, match="answers ranges without estimating the cells"):
        table_mechanism("histograms", method="laplace-on-answers").run(records, workload, 0.5, rng)


def test_cli_release_writes_range_answers(tmp_path, capsys):
    from dplens.cli import main

    rows = _records(RANGES_DOMAIN, 200)
    data = tmp_path / "t.csv"
    data.write_text("sex,age,r\n" + "\n".join(f"{'FM'[r[0]]},{r[1]},{r[2]}" for r in rows) + "\n")
    domain = tmp_path / "d.json"
    domain.write_text('{"sex": ["F", "M"], "age": 5, "r": 3}')
    out = tmp_path / "m.csv"
    code = main(["release", "--input", str(data), "--domain", str(domain), "--mechanism", "residual-planner",
                 "--workload", "ranges:age|sex", "--rho", "1", "--output", str(out), "--ledger",
                 str(tmp_path / "l.db"), "--budget", "10", "--budget-delta", "1e-5"])
    assert code == 0, capsys.readouterr().err
    lines = (tmp_path / "m.ranges.csv").read_text().splitlines()
    assert lines[0] == "marginal,low,high,cell,answer" and len(lines) == 1 + 15 * 2
    assert lines[1].startswith("ranges:age|sex,0,0,F,")


def test_histograms_cell_intervals_cover_with_power():
    """hb on marginals: the exact per-cell 95 % half-widths cover 95 % of cells; 20 % narrower ones do not."""
    domain = Domain(("age", "sex"), (16, 2))
    workload = MarginalWorkload(domain, (("age",), ("age", "sex")))
    records = _records(domain, 400)
    truth = workload.answer(records)
    hb, rng = table_mechanism("histograms", method="hb"), np.random.default_rng(5)
    inside, narrow, cells = 0, 0, 0
    for _ in range(300):
        release = hb.run(records, workload, 0.5, rng)
        for estimate, half, true in zip(release.marginal_estimates, release.marginal_halfwidths, truth, strict=True):
            inside += int(np.sum(np.abs(estimate - true) <= half))
            narrow += int(np.sum(np.abs(estimate - true) <= 0.8 * half))
            cells += true.size
    standard_error = math.sqrt(0.95 * 0.05 / cells)
    assert abs(inside / cells - 0.95) < 3 * standard_error and narrow / cells < 0.95 - 3 * standard_error


def test_squared_frobenius_against_dense_full_domain():
    workload = _ranges_workload()
    total = 0.0
    for index, marginal in enumerate(workload.marginals):
        full = _query_matrix(workload, index) @ _marginal_matrix(RANGES_DOMAIN, RANGES_DOMAIN.index(marginal))
        total += workload.weights[index] ** 2 * np.sum(full ** 2)
    assert workload.squared_frobenius == pytest.approx(total)


@pytest.mark.parametrize("k, hdmm", [(1, 4.47098), (2, 5.03779), (3, 2.49675)])
def test_opt_marginals_at_least_as_good_as_hdmms_own_code(k, hdmm):
    """Anchors from HDMM's Marginals template (dpcomp-org/hdmm 5aa9df9, best of 5 seeds, per-query RMSE at ε = 1;
    bench/bench_opt_marginals.py): on 2×3×4×5 the multi-start optimum is never worse (2-way: the full table,
    4.5035, which HDMM's seeds missed)."""
    workload = MarginalWorkload.all_kway(Domain(tuple("abcd"), (2, 3, 4, 5)), k)
    assert plan_opt_marginals(workload, 0.5).expected_rmse <= hdmm * (1 + 1e-5)


def test_gaussian_marginals_noise_is_calibrated_to_the_unweighted_cells_whatever_the_weights():
    """Weights below 1 must not shrink the noise: the cells released are unweighted (Δ₂ = √K for K marginals).

    The sample std of many cells accepts σ = √2/√(2ρ) and rejects the √(Σw²)/√(2ρ) a weighted Δ₂ would give.
    """
    domain = Domain(("sex", "region", "income"), (2, 4, 2))
    records = _records(domain, 300)
    truth = np.concatenate([m.ravel()
                            for m in MarginalWorkload(domain, (("sex", "region"), ("income",))).answer(records)])
    mechanism, rng = TABLE_MECHANISMS["gaussian-marginals"], np.random.default_rng(11)
    for weights in ((0.1, 0.1), (0.01, 0.01), (5.0, 0.2)):
        workload = MarginalWorkload(domain, (("sex", "region"), ("income",)), weights=weights)
        noise = np.concatenate([np.concatenate([m.ravel() for m in mechanism.run(records, workload, 0.5, rng)
                                                .marginal_estimates]) - truth for _ in range(200)])
        assert np.std(noise) == pytest.approx(math.sqrt(2), rel=0.05)  # 2,000 draws: the std's rel. error ~1.6 %
        release = mechanism.run(records, workload, 0.5, rng)
        assert release.marginal_stds == [pytest.approx(math.sqrt(2))] * 2 and release.privacy_loss == pytest.approx(0.5)


def test_cli_weighted_gaussian_marginals_secure_release_draws_the_sigma_it_charges(tmp_path, capsys):
    """The secure path end to end: weights 0.1 once wrote std 0.1414 and charged ρ 0.5 for noise worth ρ 50."""
    from dplens.cli import main

    domain = Domain(("sex", "region", "income"), (2, 4, 2))
    rows = _records(domain, 300)
    data = tmp_path / "t.csv"
    data.write_text("sex,region,income\n" + "\n".join(f"{r[0]},{r[1]},{r[2]}" for r in rows) + "\n")
    (tmp_path / "d.json").write_text('{"sex": 2, "region": 4, "income": 2}')
    out = tmp_path / "m.csv"
    code = main(["release", "--input", str(data), "--domain", str(tmp_path / "d.json"), "--mechanism",
                 "gaussian-marginals", "--workload", "marginals:region+sex*0.1,income*0.1", "--rho", "0.5",
                 "--noise", "secure", "--output", str(out), "--ledger", str(tmp_path / "l.db"), "--budget-rho", "1"])
    assert code == 0, capsys.readouterr().err
    header, *lines = out.read_text().splitlines()
    stds = [float(line.split(",")[header.split(",").index("std")]) for line in lines]
    assert len(stds) == 10 and stds == [pytest.approx(math.sqrt(2), abs=1e-5)] * 10  # written to 6 digits
