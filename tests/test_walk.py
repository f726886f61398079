"""A real gradual release: the secure noise-reduction walk, its steps through the kernel, the ledger and the CLI.

Statistics (seeded only where NumPy is used; the walk itself draws from OpenDP and the CSPRNG, so its tests use
many cells and bounds with wide margins, and each has a power check against a wrong construction):
- each step's noise has the exact discrete Laplace marginal of a one-shot release at its ε (chi-square over |k|);
- consecutive steps' noise is correlated as the construction says, corr = sd(ν_{t+1}) / sd(ν_t) (→ ε_t/ε_{t+1});
- an empirical audit of the prefix (y_1, y_2) on neighbouring cells stays within ε_2, not ε_1 + ε_2.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from dplens.cli import main
from dplens.core.data.signing import key_id, public_key, verify_export
from dplens.core.papers.audit import audit_pair
from dplens.core.privacy.budget import Budget, BudgetExceededError
from dplens.core.privacy.definitions import ZCDP, PureDP
from dplens.core.privacy.ledger_store import LedgerStore
from dplens.core.privacy.noise import secure_noise_reduction, walk_keep_probability
from dplens.core.release.kernel import export_walk_step, release_walk_step, start_walk
from dplens.core.release.walk_store import WalkStore

CELLS = 20_000


def _dlap_var(scale: float) -> float:
    a = math.exp(-1.0 / scale)
    return 2 * a / (1 - a) ** 2


def _dlap_abs_pmf(scale: float, top: int) -> np.ndarray:
    """P(|K| = k) for k = 0..top−1 and the tail beyond, K discrete Laplace at ``scale``."""
    a = math.exp(-1.0 / scale)
    k = np.arange(top)
    pmf = np.where(k == 0, (1 - a) / (1 + a), 2 * (1 - a) / (1 + a) * a ** k)
    return np.append(pmf, 1 - pmf.sum())


def _chi2_pvalue(noise: np.ndarray, scale: float, least: float = 5.0) -> float:
    """Chi-square of |noise| against the discrete Laplace at ``scale``, the right-hand bins merged until each expects
    at least ``least`` counts: with bins expecting under one count (|k| ≥ 9 at scale 1 on 20,000 cells) the chi-square
    approximation fails and a true scale was rejected far more often than the level (p = 7e-8 in 400 walks)."""
    top = int(40 * scale) + 40  # P(|K| ≥ top) is negligible: it only seeds the tail bin
    expected = _dlap_abs_pmf(scale, top) * noise.size
    observed = np.bincount(np.minimum(np.abs(noise).astype(int), top), minlength=top + 1).astype(float)
    while expected.size > 2 and expected[-1] < least:
        expected[-2:] = expected[-2] + expected[-1], 0.0
        observed[-2:] = observed[-2] + observed[-1], 0.0
        expected, observed = expected[:-1], observed[:-1]
    return float(stats.chisquare(observed, expected).pvalue)


def test_the_keep_probability_makes_the_characteristic_functions_multiply_out():
    theta = np.linspace(0, np.pi, 50)
    for small, large in ((0.5, 0.7), (1.0, 10.0), (2.0, 3.0), (100.0, 1000.0)):
        p = walk_keep_probability(small, large)
        phi = {b: (1 - math.exp(-1 / b)) ** 2 / (1 - 2 * math.exp(-1 / b) * np.cos(theta) + math.exp(-2 / b))
               for b in (small, large)}
        np.testing.assert_allclose(phi[large], phi[small] * (p + (1 - p) * phi[large]), atol=1e-12)
    assert walk_keep_probability(1000.0, 2000.0) == pytest.approx(0.25, rel=1e-3)  # the continuous (b₁/b₂)²
    with pytest.raises(ValueError, match="scale_smaller < scale_larger"):
        walk_keep_probability(2.0, 1.0)


@pytest.fixture(scope="module")
def walk() -> np.ndarray:
    """One secure walk on 20,000 zero cells at ε = 0.25, 0.5, 1 (its rows are the noise)."""
    return secure_noise_reduction(np.zeros(CELLS), [4.0, 2.0, 1.0])


def test_each_step_has_the_one_shot_discrete_laplace_marginal_and_a_wrong_scale_is_rejected(walk):
    for row, scale in zip(walk, (4.0, 2.0, 1.0), strict=True):
        assert _chi2_pvalue(row, scale) > 1e-5  # unseeded (OpenDP's CSPRNG): 3 rows fail together 3e-5 of the time
        assert _chi2_pvalue(row, scale * 1.15) < 1e-6  # power: 15 % too wide is rejected
        assert _chi2_pvalue(row, scale / 1.15) < 1e-6


def test_consecutive_steps_are_correlated_as_the_construction_says(walk):
    for t, (wide, narrow) in enumerate(((4.0, 2.0), (2.0, 1.0))):
        expected = math.sqrt(_dlap_var(narrow) / _dlap_var(wide))  # cov = var(ν_{t+1}): ν_t = ν_{t+1} + independent
        corr = float(np.corrcoef(walk[t], walk[t + 1])[0, 1])
        tolerance = 5 * (1 - expected**2) / math.sqrt(CELLS)
        assert abs(corr - expected) < tolerance, (t, corr, expected)
        assert abs(0.0 - expected) > tolerance and abs(1.0 - expected) > tolerance  # independence or copies fail


def test_the_prefix_of_a_walk_costs_its_last_epsilon_not_the_sum():
    """Per-cell audit: cells holding 0 and 1 are neighbours; (y_1, y_2) of a walk at ε = 1, 1.0101 stays within
    ε_2, while two independent releases at the same ε (loss ε_1 + ε_2 ≈ 2) are flagged above ε_2 by the same audit
    on the same number of cells (two close steps make the difference between the two constructions largest)."""
    half, epsilons = 10_000, (1.0, 1.0 / 0.99)
    counts = np.r_[np.zeros(half), np.ones(half)]
    prefix = secure_noise_reduction(counts, [1 / e for e in epsilons]).T  # one (y_1, y_2) row per cell
    bound, event = audit_pair(prefix[half:], prefix[:half], 0.001, 2)
    assert bound <= epsilons[1], f"the walk's prefix leaked {bound:.3f} > epsilon_2 = {epsilons[1]:.4f} on {event}"
    rng = np.random.default_rng(11)  # the construction the walk replaces: independent releases
    independent = np.column_stack([counts + rng.laplace(scale=1 / e, size=2 * half) for e in epsilons])
    broken, event = audit_pair(independent[half:], independent[:half], 0.001, 2)
    assert broken > epsilons[1], f"no power: independent releases bounded at {broken:.3f} ({event})"


# ----------------------------------------------------------------------------- kernel, store, ledger
FP = "c" * 64


def _store(tmp_path, owner: str = "local") -> LedgerStore:
    return LedgerStore(tmp_path / "s.sqlite3", owner=owner)


def test_steps_charge_the_increments_and_survive_a_restart(tmp_path):
    store = _store(tmp_path)
    store.set_total(FP, Budget(2.0))
    counts = np.array([30.0, 0, 12, 7])
    walk = start_walk(counts, [PureDP(0.1), PureDP(0.5), PureDP(1.0)], store=store, fingerprint=FP, name="toy")
    assert store.ledger(FP).spent.epsilon == 0  # starting charges nothing
    first = release_walk_step(walk.id, store=store)
    second = release_walk_step(walk.id, store=store)
    assert store.ledger(FP).spent.epsilon == pytest.approx(0.5) and second.cumulative == PureDP(0.5)
    restarted = _store(tmp_path)  # a new process: only the store is shared
    third = release_walk_step(walk.id, store=restarted)
    assert restarted.ledger(FP).spent.epsilon == pytest.approx(1.0) and third.walk.released == 3
    for step in (first, second, third):
        assert np.all(step.published.release.estimate == np.round(step.published.release.estimate))
    with pytest.raises(ValueError, match="released all 3 steps"):
        release_walk_step(walk.id, store=restarted)
    assert restarted.ledger(FP).spent.epsilon == pytest.approx(1.0)  # the refusal charged nothing


def test_a_zcdp_walk_charges_rho_increments(tmp_path):
    store = _store(tmp_path)
    store.set_total(FP, Budget.zcdp(1.0, 1e-6))
    walk = start_walk(np.arange(5.0), [ZCDP(0.02), ZCDP(0.125)], store=store, fingerprint=FP, name="toy")
    assert walk.epsilons == pytest.approx((0.2, 0.5))
    release_walk_step(walk.id, store=store)
    step = release_walk_step(walk.id, store=store)
    assert store.ledger(FP).spent.rho == pytest.approx(0.125) and step.published.release.loss_unit == "rho"
    doc = json.loads(export_walk_step(step, fmt="json", dataset="toy"))
    assert (doc["cumulative_loss"], doc["cumulative_loss_unit"], doc["step"]) == (0.125, "rho", 2)


def test_a_walk_step_export_is_signed_over_its_values_and_the_walk(tmp_path):
    """A signed step verifies under this installation's key; a changed value or walk field, or another key, fails."""
    store = _store(tmp_path)
    store.set_total(FP, Budget(2.0))
    walk = start_walk(np.array([30.0, 0, 12, 7]), [PureDP(0.5), PureDP(1.0)], store=store, fingerprint=FP, name="toy")
    data = export_walk_step(release_walk_step(walk.id, store=store), fmt="json", dataset="toy")
    assert verify_export(data, [public_key()]) == key_id(public_key())
    assert verify_export(data, [public_key(tmp_path / "elsewhere")]) is None  # another installation's key
    doc = json.loads(data)
    for field, value in (("counts", [doc["counts"][0] + 1, *doc["counts"][1:]]), ("cumulative_loss", 0.1),
                         ("step", 2)):
        assert verify_export(json.dumps(doc | {field: value}).encode(), [public_key()]) is None, field


def test_refusals_name_the_reason_and_charge_nothing(tmp_path):
    store = _store(tmp_path)
    store.set_total(FP, Budget(1.0))
    with pytest.raises(BudgetExceededError):  # the ex-ante cap: the last step must fit now
        start_walk(np.zeros(3), [PureDP(0.5), PureDP(2.0)], store=store, fingerprint=FP, name="toy")
    with pytest.raises(ValueError, match="not 'dawa': its noise is not one walkable block"):
        start_walk(np.zeros(3), [PureDP(0.5)], store=store, fingerprint=FP, name="toy", mechanism="dawa")
    with pytest.raises(ValueError, match="strictly increasing"):
        start_walk(np.zeros(3), [PureDP(0.5), PureDP(0.2)], store=store, fingerprint=FP, name="toy")
    with pytest.raises(ValueError, match="integer counts"):  # the Gaussian walk's proof needs integer counts
        start_walk(np.array([0.5, 1]), [ZCDP(0.001)], store=store, fingerprint=FP, name="toy",
                   mechanism="gaussian-identity")
    walk = start_walk(np.zeros(3), [PureDP(0.2), PureDP(0.4)], store=store, fingerprint=FP, name="toy")
    with pytest.raises(ValueError, match="no walk"):  # another curator's walk is not theirs to step
        release_walk_step(walk.id, store=_store(tmp_path, owner="bob@example.org"))
    store.reset(FP, Budget(1.0), reason="new study")
    with pytest.raises(ValueError, match="was reset after walk"):
        release_walk_step(walk.id, store=store)
    other = start_walk(np.zeros(3), [PureDP(0.2), PureDP(0.4)], store=store, fingerprint=FP, name="toy")
    WalkStore(store.path).abandon(other.id, "wrong schedule")
    with pytest.raises(ValueError, match="abandoned"):
        release_walk_step(other.id, store=store)
    assert not [e for e in store.history(FP) if e["kind"] == "spend"]


def test_unreleased_steps_never_leave_the_store(tmp_path):
    store = _store(tmp_path)
    store.set_total(FP, Budget(200.0))
    counts = np.array([1000.0, 2000, 3000, 4000, 5000, 6000])
    walk = start_walk(counts, [PureDP(0.01), PureDP(100.0)], store=store, fingerprint=FP, name="toy")
    secret = WalkStore(store.path).step_values(walk, 1)  # readable now: the next step
    step = release_walk_step(walk.id, store=store)
    assert np.array_equal(step.published.release.estimate, secret)
    with pytest.raises(ValueError, match="not the next one"):
        WalkStore(store.path).step_values(step.walk, 3)
    last = np.frombuffer(_raw_walk(store, walk.id), dtype=np.float64).reshape(2, -1)[1]  # ε = 100: ≈ the counts
    files = [export_walk_step(step, fmt=f, dataset="toy").decode() for f in ("json", "csv")]
    notes = json.dumps(store.history(FP))
    for text in (*files, notes):
        assert not all(f"{v:g}" in text for v in last), "the unreleased step leaked"
    WalkStore(store.path).abandon(walk.id, "done")
    assert _raw_walk(store, walk.id) == b""  # abandoning wipes the secret


def _raw_walk(store: LedgerStore, walk_id: str) -> bytes:
    from dplens.core.privacy.store import connect

    with connect(store.path) as conn:
        return bytes(conn.execute("SELECT walk FROM walks WHERE id = ?", (walk_id,)).fetchone()[0])


def test_the_command_line_walk(tmp_path, capsys):
    ledger, out = str(tmp_path / "l.sqlite3"), tmp_path / "steps"
    out.mkdir()
    assert main(["gradual", "start", "--input", "smooth", "--schedule", "0.1,0.5,1", "--output-dir", str(out),
                 "--ledger", ledger]) == 0
    walk_id = capsys.readouterr().out.split()[1]
    for _ in range(2):
        assert main(["gradual", "next", "--walk", walk_id, "--ledger", ledger]) == 0
    doc = json.loads((out / "step-2.json").read_text())
    assert (doc["walk"], doc["step"], doc["cumulative_loss"], doc["noise_path"]) == (walk_id, 2, 0.5, "secure")
    capsys.readouterr()
    assert main(["gradual", "status", "--walk", walk_id, "--ledger", ledger]) == 0
    assert "released 2 of 3 steps, ε = 0.5 spent in all; next step ε = 1" in capsys.readouterr().out
    assert main(["gradual", "next", "--walk", "nope", "--ledger", ledger]) == 2
    assert capsys.readouterr().err.count("\n") == 1  # one line
    assert main(["gradual", "start", "--input", "smooth", "--schedule", "1,0.5", "--output-dir", str(out),
                 "--ledger", ledger]) == 2


def test_the_gradual_page_runs_a_real_walk_charged_by_increments():
    from tests.test_app import open_page

    at = open_page("pages/gradual.py")
    assert not at.exception
    at.text_input(key="real_walk_schedule").set_value("0.1, 0.5")
    at.button(key="real_walk_start").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (walk,) = WalkStore(LedgerStore().path).walks()
    assert LedgerStore().ledger(walk.fingerprint).spent.epsilon == 0  # starting charged nothing
    for _ in range(2):
        at.button(key=f"real_walk_next_{walk.id}").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
    assert LedgerStore().ledger(walk.fingerprint).spent.epsilon == pytest.approx(0.5)
    (table,) = [d.value for d in at.dataframe if "Walk" in d.value.columns]
    (row,) = table.to_dict("records")
    assert row["State"] == "complete" and row["Spent in all"] == "ε = 0.5"
    labels = [b.proto.label for b in at.get("download_button")]
    assert [label for label in labels if label.startswith(f"Walk {walk.id}")] == [
        f"Walk {walk.id}, step 1 (JSON)", f"Walk {walk.id}, step 2 (JSON)"]


# ----------------------------------------------------------------------------- accuracy first, for real
def _discrete_walk(counts: np.ndarray, scales, rng: np.random.Generator) -> np.ndarray:
    """secure_noise_reduction's construction with NumPy: discrete Laplace as a difference of two geometrics."""
    def dlap(scale: float, size: int) -> np.ndarray:
        p = -math.expm1(-1.0 / scale)
        return (rng.geometric(p, size) - rng.geometric(p, size)).astype(float)

    walk = np.empty((len(scales), counts.size))
    walk[-1] = counts + dlap(scales[-1], counts.size)
    for t in range(len(scales) - 2, -1, -1):
        move = rng.random(counts.size) >= walk_keep_probability(scales[t + 1], scales[t])
        walk[t] = walk[t + 1]
        walk[t][move] += dlap(scales[t], int(move.sum()))
    return walk


def _discrete_accuracy_first(counts, workload, rng, *, target, epsilon_max, epsilon_min, steps) -> int | None:
    """gradual.accuracy_first's stopping step (0-based) with the secure walk's discrete noise."""
    from dplens.core.release import gradual

    grid = gradual.geometric_grid(epsilon_min, epsilon_max, steps)
    error, sensitivity = gradual.histogram_error(counts, workload)
    threshold, _, epsilon_a = gradual.above_threshold_params(target, 0.1, sensitivity, steps)
    errors = [error(theta) for theta in _discrete_walk(counts, [1.0 / e for e in grid], rng)]
    return gradual.above_threshold(iter(errors), threshold, epsilon_a, sensitivity, rng)


def test_accuracy_first_releases_the_first_step_that_passes_and_charges_its_ex_post_loss(tmp_path):
    from dplens.core.queries.workloads import Identity
    from dplens.core.release.kernel import accuracy_first_release

    counts, workload = np.full(256, 40.0), Identity(256)
    settings = {"target": 2.0, "epsilon_max": 4.0, "epsilon_min": 0.05, "steps": 6}
    store = _store(tmp_path)
    store.set_total(FP, Budget(1e6))
    runs = [accuracy_first_release(counts, workload, store=store, fingerprint=FP, name="t", **settings)
            for _ in range(60)]
    for run in runs:
        expected = run.epsilon_above_threshold + (run.grid[run.stopped_at - 1] if run.stopped_at else run.grid[-1])
        assert run.charged.epsilon == pytest.approx(expected)
        if run.stopped_at:
            assert np.sqrt(np.mean((run.published.release.estimate - counts) ** 2)) < 2.0 * 1.5
    spends = [e for e in store.history(FP) if e["kind"] == "spend"]
    assert len(spends) == 60 and all("ex-post loss" in e["note"] for e in spends)
    assert store.ledger(FP).spent.epsilon == pytest.approx(sum(r.charged.epsilon for r in runs))
    # the stopping step follows the paper's analysis, simulated (seeded) with the noise the secure walk draws: the
    # discrete Laplace on integer counts (at ε = 4 it is 0 w.p. ~0.96, so the continuous simulation stops elsewhere)
    rng = np.random.default_rng(5)
    simulated = [_discrete_accuracy_first(counts, workload, rng, **settings) for _ in range(2000)]
    labels = range(-1, settings["steps"])
    secure_counts = [sum((r.stopped_at - 1 if r.stopped_at else -1) == k for r in runs) for k in labels]
    simulated_counts = [sum((s if s is not None else -1) == k for s in simulated) for k in labels]
    table = np.array([secure_counts, simulated_counts])
    table = table[:, table.sum(axis=0) > 0]
    assert table.shape[1] >= 2 and stats.chi2_contingency(table).pvalue > 1e-4, table


def test_accuracy_first_failure_releases_nothing_and_charges_the_whole_walk(tmp_path):
    from dplens.core.queries.workloads import Identity
    from dplens.core.release.kernel import accuracy_first_release

    store = _store(tmp_path)
    store.set_total(FP, Budget(1e4))
    run = accuracy_first_release(np.full(64, 40.0), Identity(64), 1e-3, store=store, fingerprint=FP, name="t",
                                 epsilon_max=0.5, epsilon_min=0.05, steps=4)  # an unreachable target
    assert run.stopped_at is None and run.published is None
    assert run.charged.epsilon == pytest.approx(run.epsilon_above_threshold + 0.5) == pytest.approx(run.ex_ante_cap)
    (spend,) = [e for e in store.history(FP) if e["kind"] == "spend"]
    assert spend["export_id"] is None and "no step met the target" in spend["note"]
    small = _store(tmp_path / "other")
    with pytest.raises(BudgetExceededError):  # the ex-ante cap ε_A + ε_T must fit before any work
        accuracy_first_release(np.full(64, 40.0), Identity(64), 2.0, store=small, fingerprint=FP, name="t",
                               epsilon_max=4.9, steps=4)


# ----------------------------------------------------------------------------- Gaussian walks
def _dg_pmf(variance: float, top: int) -> np.ndarray:
    k = np.arange(-top, top + 1)
    mass = np.exp(-(k**2) / (2 * variance))
    return mass / mass.sum()


def _sum_pmf(variances, top: int) -> np.ndarray:
    """The exact pmf of a sum of independent discrete Gaussians on −top..top (tails beyond are negligible here)."""
    pmf = np.array([1.0])
    for v in variances:
        pmf = np.convolve(pmf, _dg_pmf(v, top))
    middle = pmf.size // 2
    return pmf[middle - top: middle + top + 1]


def _chi2_sum_pvalue(noise: np.ndarray, variances, top: int) -> float:
    pmf = _sum_pmf(variances, top)
    clipped = np.clip(noise, -top, top).astype(int) + top
    observed = np.bincount(clipped, minlength=2 * top + 1)
    keep = pmf * noise.size > 5  # chi-square needs expected counts ≥ 5: pool the tails
    expected = np.append(pmf[keep] * noise.size, noise.size * (1 - pmf[keep].sum()))
    return float(stats.chisquare(np.append(observed[keep], noise.size - observed[keep].sum()), expected).pvalue)


def test_a_gaussian_walk_has_the_marginals_and_correlation_of_its_construction_and_a_proved_charge():
    from dplens.core.privacy.noise import gaussian_walk_loss, gaussian_walk_variances, secure_gaussian_noise_reduction

    rhos = (0.01, 0.05, 0.5)
    variances = gaussian_walk_variances(rhos)  # 40, 9, 1
    walk = secure_gaussian_noise_reduction(np.zeros(CELLS), rhos)
    for t in range(3):
        parts = variances[t:]
        top = int(6 * math.sqrt(parts.sum())) + 2
        assert _chi2_sum_pvalue(walk[t], parts, top) > 1e-4
        assert _chi2_sum_pvalue(walk[t], parts * 1.3, top) < 1e-6  # power: 30 % more variance is rejected
    for t in range(2):
        expected = math.sqrt(variances[t + 1:].sum() / variances[t:].sum())
        corr = float(np.corrcoef(walk[t], walk[t + 1])[0, 1])
        assert abs(corr - expected) < 5 * (1 - expected**2) / math.sqrt(CELLS), (t, corr, expected)
    loss = gaussian_walk_loss(rhos)
    assert loss == pytest.approx((1 / 80, 1 / 18, 0.5)) and all(a >= r for a, r in zip(loss, rhos, strict=True))


def test_a_gaussian_walks_prefix_stays_within_its_charged_rho():
    """Per-cell audit at two points of the ρ̃_2-zCDP curve (as tests/test_audit_tables.py audits tables)."""
    from dplens.core.privacy.definitions import zcdp_epsilon
    from dplens.core.privacy.noise import gaussian_walk_loss, secure_gaussian_noise_reduction

    half, rhos = 10_000, (0.1, 0.5)
    counts = np.r_[np.zeros(half), np.ones(half)]
    prefix = secure_gaussian_noise_reduction(counts, rhos).T
    charged = gaussian_walk_loss(rhos)[1]
    for delta in (0.3, 0.1):
        bound, event = audit_pair(prefix[half:], prefix[:half], 0.001 / 2, 2, delta=delta)
        assert bound <= zcdp_epsilon(charged, delta), (delta, bound, event)


def test_gaussian_steps_charge_their_bound_in_rho_and_the_command_line_takes_them(tmp_path, capsys):
    from dplens.core.privacy.noise import gaussian_walk_loss

    store = _store(tmp_path)
    store.set_total(FP, Budget.zcdp(2.0, 1e-6))
    walk = start_walk(np.arange(6.0), [ZCDP(0.05), ZCDP(0.5)], store=store, fingerprint=FP, name="toy",
                      mechanism="gaussian-identity")
    first = release_walk_step(walk.id, store=store)
    assert store.ledger(FP).spent.rho == pytest.approx(gaussian_walk_loss((0.05, 0.5))[0])
    second = release_walk_step(walk.id, store=store)
    assert store.ledger(FP).spent.rho == pytest.approx(0.5) and second.published.noise_sampler.endswith("gaussian")
    doc = json.loads(export_walk_step(first, fmt="json", dataset="toy"))
    assert doc["noise_sampler"] == "opendp-integer-gaussian" and len(doc["lower"]) == 6
    with pytest.raises(ValueError, match="in ρ"):
        start_walk(np.arange(6.0), [PureDP(0.5)], store=store, fingerprint=FP, name="toy",
                   mechanism="gaussian-identity")
    ledger, out = str(tmp_path / "l.sqlite3"), tmp_path / "steps"
    out.mkdir()
    assert main(["gradual", "start", "--input", "smooth", "--mechanism", "gaussian-identity", "--definition",
                 "approx", "--schedule", "0.5,2", "--output-dir", str(out), "--ledger", ledger,
                 "--budget", "5", "--budget-delta", "1e-5"]) == 0, capsys.readouterr().err
    walk_id = capsys.readouterr().out.split()[1]
    assert main(["gradual", "next", "--walk", walk_id, "--ledger", ledger]) == 0, capsys.readouterr().err
    doc = json.loads((out / "step-1.json").read_text())
    assert doc["cumulative_loss_unit"] == "rho"
    capsys.readouterr()
    assert main(["gradual", "status", "--walk", walk_id, "--ledger", ledger]) == 0
    # status states what the step cost (the proved bound), not the schedule's own ρ
    from dplens.core.privacy.definitions import privacy_words, zcdp_rho

    said = capsys.readouterr().out
    assert f"{privacy_words(ZCDP(doc['cumulative_loss']))} spent in all" in said, said
    assert doc["cumulative_loss"] > zcdp_rho(0.5, 1e-6)


# ----------------------------------------------------------------------------- strategy mechanisms
def test_a_lattice_walk_has_laplace_marginals_and_the_walk_correlation():
    """Float strategy answers walk on OpenDP's lattice: each step is Laplace at its (widened) scale, to the lattice."""
    from dplens.core.privacy.noise import secure_lattice_noise_reduction, widened

    values = np.linspace(-3.3, 7.7, CELLS)
    walk = secure_lattice_noise_reduction(values, [4.0, 2.0, 1.0])
    for row, scale in zip(walk, (4.0, 2.0, 1.0), strict=True):
        noise = row - values
        assert stats.kstest(noise, "laplace", args=(0, widened(scale))).pvalue > 1e-4
        assert stats.kstest(noise, "laplace", args=(0, 1.15 * scale)).pvalue < 1e-6  # power
    for t in range(2):
        corr = float(np.corrcoef(walk[t] - values, walk[t + 1] - values)[0, 1])
        expected = 0.5  # sd ratio of Laplace(b_{t+1}) to Laplace(b_t)
        assert abs(corr - expected) < 5 * (1 - expected**2) / math.sqrt(CELLS), (t, corr)


def test_hb_walks_its_tree_and_each_step_is_its_reconstruction(tmp_path, capsys):
    from dplens.core.mechanisms import MECHANISMS
    from dplens.core.queries.workloads import Prefix
    from dplens.core.release.kernel import WALK_MECHANISMS

    assert {"identity", "hb", "privelet", "greedy-h", "mm-opt", "gaussian-identity"} <= set(WALK_MECHANISMS)
    assert "dawa" not in WALK_MECHANISMS and "gaussian-hb" not in WALK_MECHANISMS
    store = _store(tmp_path)
    store.set_total(FP, Budget(3.0))
    counts = np.arange(16.0)
    walk = start_walk(counts, [PureDP(0.5), PureDP(2.0)], store=store, fingerprint=FP, name="toy", mechanism="hb",
                      workload=Prefix(16), workload_spec="prefix")
    steps = [release_walk_step(walk.id, store=store) for _ in range(2)]
    assert store.ledger(FP).spent.epsilon == pytest.approx(2.0)
    for step, epsilon in zip(steps, (0.5, 2.0), strict=True):
        release = step.published.release
        assert release.mechanism == "hb" and release.privacy_loss == pytest.approx(epsilon)
        assert release.estimate.shape == (16,) and release.answers.shape == (16,)
        assert step.published.noise_sampler == "opendp-lattice-laplace"
        np.testing.assert_allclose(release.answers, Prefix(16).matvec(release.estimate))
        doc = json.loads(export_walk_step(step, fmt="json", dataset="toy"))
        assert doc["mechanism"] == "hb" and doc["workload"] == "prefix" and len(doc["lower"]) == 16
    # the step's noise on the tree is what hb's own measurement calibrates at that ε
    assert MECHANISMS["hb"].measurement(Prefix(16), 2.0).scale == pytest.approx(steps[1].published.release.params[
        "noise_scale"])
    ledger, out = str(tmp_path / "l.sqlite3"), tmp_path / "steps"
    out.mkdir()
    assert main(["gradual", "start", "--input", "smooth", "--mechanism", "hb", "--workload", "prefix",
                 "--schedule", "0.5,1", "--output-dir", str(out), "--ledger", ledger]) == 0, capsys.readouterr().err
    walk_id = capsys.readouterr().out.split()[1]
    assert main(["gradual", "next", "--walk", walk_id, "--ledger", ledger]) == 0, capsys.readouterr().err
    assert json.loads((out / "step-1.json").read_text())["workload"] == "prefix"


def test_the_command_line_runs_accuracy_first_and_exports_the_released_step(tmp_path, capsys):
    ledger, out = str(tmp_path / "l.sqlite3"), tmp_path / "out"
    out.mkdir()
    # a loose target: every step from ε ≈ 0.03 on passes it by a wide margin, so AboveThreshold fails with
    # probability ~1e-5 (its noise is the CSPRNG's, unseeded)
    assert main(["gradual", "accuracy", "--input", "smooth", "--target", "50", "--cap", "2", "--output-dir", str(out),
                 "--ledger", ledger]) == 0, capsys.readouterr().err
    said = capsys.readouterr().out
    doc = json.loads((out / "accuracy-first.json").read_text())
    assert "charged the ex-post loss" in said and doc["accuracy_first"]["target"] == 50.0
    assert doc["ex_post_loss"] <= doc["ex_ante_cap"] and doc["noise_path"] == "secure" and len(doc["lower"]) == 4096
    signed = (out / "accuracy-first.json").read_bytes()  # signed over the search's fields too
    assert verify_export(signed, [public_key()]) == key_id(public_key())
    assert verify_export(json.dumps(doc | {"ex_post_loss": doc["ex_post_loss"] / 2}).encode(), [public_key()]) is None
    spent = LedgerStore(tmp_path / "l.sqlite3").history()[-1]
    assert spent["epsilon"] == pytest.approx(doc["ex_post_loss"]) and "ex-post loss" in spent["note"]
    assert main(["gradual", "accuracy", "--input", "smooth", "--target", "0.001", "--cap", "0.5", "--output-dir",
                 str(out), "--ledger", ledger]) == 2  # ε_A alone is over the budget: refused before any work
    assert "accuracy-first cap" in capsys.readouterr().err
