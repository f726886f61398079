"""One release record for histograms and tables: its budget, its loss unit, a table release's answers, and the
kernel's check that a release states the charged definition."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dplens.core.data.domain import Domain
from dplens.core.mechanisms import MECHANISMS, Release
from dplens.core.mechanisms.gaussian import stating_definition
from dplens.core.privacy.budget import Budget
from dplens.core.privacy.definitions import ZCDP, ApproxDP, EpsilonAxis, PureDP, zcdp_rho
from dplens.core.privacy.ledger_store import LedgerStore
from dplens.core.queries.marginals import MarginalWorkload, marginal_counts
from dplens.core.queries.workloads import Prefix
from dplens.core.release import kernel
from dplens.core.release.kernel import HistogramRequest, release_histogram
from dplens.core.release.workspace_store import release_from_dict, release_to_dict
from dplens.core.tables.contract import marginal_release
from dplens.core.tables.mechanisms import TABLE_MECHANISMS

DOMAIN = Domain(("a", "b", "c"), (2, 3, 4))
RECORDS = np.random.default_rng(0).integers(0, DOMAIN.sizes, size=(300, 3))


@pytest.mark.parametrize("definition, budget, unit", [
    ("pure", PureDP(0.8), "epsilon"), ("approx", ApproxDP(0.8, 1e-6), "epsilon"),
    ("zcdp", ZCDP(zcdp_rho(0.8, 1e-6)), "rho")])
@pytest.mark.parametrize("name", ["hb", "gaussian-hb"])
def test_a_histogram_release_states_its_budget_and_its_loss_in_that_unit(name, definition, budget, unit):
    if definition == "pure" and name.startswith("gaussian"):
        pytest.skip("Gaussian noise is never pure epsilon-DP")
    privacy = EpsilonAxis(definition, 1e-6).privacy(0.8)  # "ε 0.8 at δ 1e-6" under the definition
    release = MECHANISMS[name].run(np.arange(16.0), Prefix(16), privacy, np.random.default_rng(1))
    assert release.budget == budget and release.loss_unit == unit
    assert stating_definition(release, definition, 1e-6, 0.8).epsilon == 0.8
    assert 0 < release.privacy_loss <= release.allowed_loss * (1 + 1e-9)
    if name == "hb" and unit == "rho":  # Laplace at ε = √(2ρ): its loss is (ε²/2)-zCDP, the whole ρ
        assert release.privacy_loss == pytest.approx(budget.rho, rel=1e-9)


@pytest.mark.parametrize("name", ["gaussian-marginals", "residual-planner", "histograms"])
def test_a_table_release_is_a_release_whose_answers_are_its_workloads_queries(name):
    workload = MarginalWorkload(DOMAIN, (("c", "a"), ("b",)), ranges=("c", None))
    release = TABLE_MECHANISMS[name].run(RECORDS, workload, 0.5, np.random.default_rng(2))
    assert isinstance(release, Release) and release.budget == ZCDP(0.5) and release.loss_unit == "rho"
    assert release.estimate is None and release.workload is workload
    assert [names for names, _ in release.by_marginal()] == list(workload.marginals)
    expected = np.concatenate([workload.answer_queries(i, e) for i, e in enumerate(release.marginal_estimates)])
    np.testing.assert_array_equal(release.answers, expected)


def test_a_table_releases_answers_are_the_operators_on_the_true_marginals():
    workload = MarginalWorkload.all_kway(DOMAIN, 2)
    truth = marginal_release("exact", 1.0, 0.0, workload, workload.answer(RECORDS))
    contingency = marginal_counts(DOMAIN, RECORDS, DOMAIN.names).ravel()
    np.testing.assert_allclose(truth.answers, workload.matvec(contingency))  # MarginalWorkload.matvec's order


def test_the_kernel_refuses_a_release_of_another_definition_or_over_its_charge(tmp_path, monkeypatch):
    store, fingerprint = LedgerStore(tmp_path / "s.sqlite3"), "d" * 64
    store.set_total(fingerprint, Budget.zcdp(1.0, 1e-6))
    request = HistogramRequest("hb", {}, ZCDP(0.5), Prefix(8), "prefix", 1e-6)
    real = kernel.run_bounded

    def states(budget, loss, repeat=1):
        def run(function, *args, **kwargs):
            release = real(function, *args, **kwargs)
            return dataclasses.replace(release, budget=budget, privacy_loss=loss,
                                       measurements=release.measurements * repeat)
        return run

    # another definition; a stated loss its records do not compose to; records that cost more than the charge
    for budget, loss, repeat, says in ((PureDP(1.0), 0.5, 1, "exceeds the charge"),
                                       (ZCDP(0.5), 0.5 * (1 + 1e-6), 1, "records compose to"),
                                       (ZCDP(0.5), 0.5, 0, "0 measurement records"),
                                       (ZCDP(0.5), 1.0, 2, "exceeds the charge")):
        monkeypatch.setattr(kernel, "run_bounded", states(budget, loss, repeat))
        for rng in (None, np.random.default_rng(0)):  # the secure path and the exploration mode alike
            with pytest.raises(ValueError, match=f"internal check: .*{says}"):
                release_histogram(request, np.ones(8), store=store, fingerprint=fingerprint, name="t", rng=rng)
    assert not [e for e in store.history(fingerprint) if e["kind"] == "spend"]  # nothing charged
    monkeypatch.setattr(kernel, "run_bounded", real)
    published = release_histogram(request, np.ones(8), store=store, fingerprint=fingerprint, name="t")
    assert published.release.loss_unit == "rho" and published.release.privacy_loss <= 0.5 * (1 + 1e-9)


def test_a_saved_release_keeps_its_budget_and_older_records_are_read_in_the_new_units():
    release = stating_definition(MECHANISMS["gaussian-hb"].run(np.arange(8.0), Prefix(8), ZCDP(zcdp_rho(1.0, 1e-6)),
                                                               np.random.default_rng(3)), "zcdp", 1e-6)
    back = release_from_dict(release_to_dict(release))
    assert back.budget == release.budget and back.privacy_loss == release.privacy_loss and back.epsilon == 1.0
    older = {"mechanism": "hb", "epsilon": 1.0, "privacy_loss": 1.0, "answers": [0.0], "estimate": None,
             "params": {"definition": "zcdp", "delta": 1e-6}}  # before releases held a budget: loss as ε at δ
    read = release_from_dict(older)
    assert read.budget == ZCDP(zcdp_rho(1.0, 1e-6)) and read.privacy_loss == pytest.approx(zcdp_rho(1.0, 1e-6))
