"""One registry: a mechanism written in a test and registered with ``register()`` is found by the Compare page's
picker, by the command line and by the registry-wide contract checks, with no other edit."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest

from dplens.cli import MECHANISM_NAMES, main
from dplens.core import catalogue
from dplens.core.mechanisms import (
    MECHANISMS,
    Release,
    check_epsilon,
    check_inputs,
    laplace_privacy_loss,
)
from dplens.core.mechanisms.contract import FLAG_RANGE, setting
from dplens.core.mechanisms.cost_model import Cost, default_cost
from dplens.core.privacy.definitions import PureDP
from dplens.core.privacy.noise import add_laplace
from dplens.core.queries.workloads import Prefix, Workload, squared_frobenius
from dplens.core.registry import (
    REGISTRY,
    histogram_mechanisms,
    mechanism,
    register,
    table_mechanisms,
    unregister,
)
from dplens.core.tables.mechanisms import TABLE_MECHANISMS
from tests import contract_checks as checks
from tests.test_app import open_page


@dataclass(frozen=True)
class ToyLaplace:
    """Laplace(1/ε) on every cell (the identity strategy), workload answered from the noisy cells; ``clip`` sets
    negative estimates to zero (post-processing)."""

    summary: ClassVar[str] = "A toy: Laplace noise on every count, registered by a test."

    clip: bool = setting(False, FLAG_RANGE)
    name: str = "toy"
    data_dependent: bool = False

    def cost(self, workload: Workload) -> Cost:
        return default_cost(workload, passes=2.0)

    def expected_mse(self, workload: Workload, epsilon: float) -> float | None:
        """Per-query MSE 2‖W‖_F²/(m ε²) unclipped; clipping has no closed form here."""
        epsilon = check_epsilon(epsilon)
        return None if self.clip else 2.0 * squared_frobenius(workload) / (workload.shape[0] * epsilon**2)

    def run(self, x: np.ndarray, workload: Workload, epsilon: float, rng: np.random.Generator) -> Release:
        x, epsilon = check_inputs(x, workload, epsilon)
        scale = 1.0 / epsilon  # every cell has sensitivity 1 under add/remove one record
        estimate = add_laplace(rng, x, scale)
        if self.clip:
            estimate = np.maximum(estimate, 0.0)
        loss = laplace_privacy_loss([(np.ones(x.size), scale)])
        return Release(self.name, PureDP(epsilon), loss, workload.matvec(estimate), estimate, {"noise_scale": scale},
                       workload=workload)


@pytest.fixture
def toy():
    """The toy, registered for one test and unregistered after it (whatever the test did)."""
    registered = register(ToyLaplace())
    try:
        yield registered
    finally:
        unregister(registered.name)


def test_the_registry_holds_every_histogram_and_table_mechanism_under_unique_names():
    assert list(REGISTRY) == list(MECHANISMS) + list(TABLE_MECHANISMS)
    assert not set(MECHANISMS) & set(TABLE_MECHANISMS)
    assert {REGISTRY[n].input_kind for n in MECHANISMS} == {"histogram"}
    assert {REGISTRY[n].input_kind for n in TABLE_MECHANISMS} == {"table"}
    assert REGISTRY["identity"].input_kind == "histogram" and REGISTRY["gaussian-marginals"].input_kind == "table"
    assert histogram_mechanisms() == MECHANISMS and table_mechanisms() == TABLE_MECHANISMS
    assert list(MECHANISM_NAMES) == list(histogram_mechanisms())
    for name, entry in REGISTRY.items():
        assert entry.name == name and entry.summary.endswith("."), name


def test_the_catalogues_are_read_only_views_of_one_storage(toy):
    """MECHANISMS and TABLE_MECHANISMS are views of dplens.core.catalogue: a registration shows in its kind's view
    at once, and a write to a view is refused, so register/unregister are the only ways in and out."""
    assert catalogue.get("toy") == (toy, "histogram") and MECHANISMS["toy"] is toy
    assert "toy" not in TABLE_MECHANISMS and list(MECHANISMS)[-1] == "toy"
    assert catalogue.view("histogram") is MECHANISMS and catalogue.view("table") is TABLE_MECHANISMS
    for view in (MECHANISMS, TABLE_MECHANISMS):
        with pytest.raises(TypeError):
            view["toy"] = toy
        with pytest.raises(TypeError):
            del view["toy"]
    with pytest.raises(ValueError, match="'toy' is already registered \\(a histogram mechanism\\)"):
        catalogue.add(toy, "table")  # one name, one mechanism, whatever the kind
    with pytest.raises(ValueError, match="kind must be one of histogram, table, got 'tables'"):
        catalogue.view("tables")


def test_register_returns_the_mechanism_and_unregister_removes_it(toy):
    assert isinstance(toy, ToyLaplace) and mechanism("toy") is toy
    assert REGISTRY["toy"].input_kind == "histogram" and "toy" in histogram_mechanisms()
    unregister("toy")
    assert "toy" not in REGISTRY and "toy" not in MECHANISMS
    register(toy)  # the fixture unregisters it


def test_a_duplicate_or_malformed_name_is_refused(toy):
    with pytest.raises(ValueError, match="'toy' is already registered \\(a histogram mechanism\\)"):
        register(ToyLaplace(clip=True))
    with pytest.raises(ValueError, match="'gaussian-marginals' is already registered \\(a table mechanism\\)"):
        register(ToyLaplace(name="gaussian-marginals"))
    with pytest.raises(ValueError, match="kebab-case"):
        register(ToyLaplace(name="Toy_Mechanism"))
    with pytest.raises(ValueError, match="neither contract"):
        register(object())
    assert REGISTRY["toy"].mechanism is toy


def test_an_unknown_name_is_one_line_naming_it_and_the_choices():
    with pytest.raises(ValueError, match="unknown mechanism 'nope'; choose from identity, .*gaussian-marginals"):
        mechanism("nope")
    with pytest.raises(ValueError, match="'hb' is not a table mechanism \\(it takes a histogram\\); choose from "
                                         "gaussian-marginals, residual-planner"):
        mechanism("hb", kind="table")
    with pytest.raises(ValueError, match="unknown mechanism 'nope'; nothing to unregister"):
        unregister("nope")


def test_the_toy_passes_every_contract_check(toy, rng):
    """The same checks tests/test_mechanisms.py runs over every registered mechanism, privacy loss ≤ ε included."""
    checks.check_contract(toy, rng)


@pytest.mark.statistical
@pytest.mark.audit
def test_the_toy_passes_the_empirical_privacy_audit(toy):
    """The audit every registered mechanism passes (tests/test_audit.py), at its fixed run count, on the toy."""
    from tests.test_audit import SLACK, audit, runs_for

    runs = runs_for(toy)
    bound, where, epsilon = max(audit(toy, runs), key=lambda r: r[0] - r[2])
    assert bound <= epsilon + SLACK, f"toy: lower bound {bound:.3f} > epsilon {epsilon} at {where}"


def test_the_toys_error_matches_its_expected_mse_with_power(toy, rng):
    workload, x, epsilon = Prefix(16), np.arange(16.0), 0.5
    truth = workload.matvec(x)
    mses = np.array([np.mean((toy.run(x, workload, epsilon, rng).answers - truth) ** 2) for _ in range(3000)])
    expected, standard_error = toy.expected_mse(workload, epsilon), mses.std(ddof=1) / math.sqrt(mses.size)
    assert abs(mses.mean() - expected) < 4 * standard_error
    assert abs(mses.mean() - 1.2 * expected) > 4 * standard_error  # a formula 20 % off would be caught


def test_the_compare_pages_picker_offers_the_toy_and_runs_it(toy):
    at = open_page("pages/compare.py")
    assert not at.exception
    assert "toy" in at.multiselect(key="compare_mechanisms").options
    at.multiselect(key="compare_mechanisms").set_value(["toy"])
    at.slider(key="compare_trials").set_value(2)
    at.slider(key="compare_points").set_value(2)
    at.selectbox(key="compare_scheduler").set_value("serial")
    at.button(key="compare_run").click().run()
    assert not at.exception, at.exception
    results = next(v for k, v in at.session_state.sweeps.items() if k[0] != "per-bin")
    assert "toy" in set(results["mechanism"])


def test_the_command_line_compares_the_toy(toy, tmp_path, capsys):
    out = tmp_path / "rows.csv"
    assert main(["compare", "--input", "smooth", "--mechanisms", "toy,identity", "--epsilons", "0.5,1",
                 "--trials", "2", "--metrics", "rmse", "--scheduler", "serial", "--output", str(out)]) == 0
    rows = pd.read_csv(out)
    assert set(rows["mechanism"]) == {"toy", "identity"} and len(rows[rows.mechanism == "toy"]) == 4
    assert f"wrote {len(rows)} rows" in capsys.readouterr().out
    assert main(["release", "--input", "smooth", "--mechanism", "toy", "--epsilon", "1", "--param", "clip=maybe",
                 "--output", str(tmp_path / "r.csv")]) == 2
    assert "parameter 'clip' must be true or false, got 'maybe'" in capsys.readouterr().err


def test_the_command_line_refuses_the_toy_after_unregister(tmp_path, capsys):
    out = tmp_path / "rows.csv"
    assert main(["compare", "--input", "smooth", "--mechanisms", "toy", "--output", str(out)]) == 2
    assert "unknown mechanism 'toy'" in capsys.readouterr().err


def test_a_renamed_mechanism_is_found_by_its_former_name():
    from dplens.core.mechanisms import RENAMED
    from dplens.core.release.config import ReleaseSettings, SessionConfig, config_to_json, parse_config

    assert RENAMED == {"gaussian-mm-opt": "gaussian-eigen"}
    assert mechanism("gaussian-mm-opt", kind="histogram").name == "gaussian-eigen"
    assert "gaussian-mm-opt" not in REGISTRY
    with pytest.raises(ValueError, match="unknown mechanism 'gaussian-mm-opt'"):
        mechanism("gaussian-mm-opt", kind="table")
    saved = json.loads(config_to_json(SessionConfig("sample:smooth", "prefix", ("gaussian-eigen",), (1.0,), 0, 5.0,
                                                    ReleaseSettings("gaussian-eigen", (), 1.0, "secure"))))
    saved["mechanisms"], saved["release"]["mechanism"] = ["gaussian-mm-opt"], "gaussian-mm-opt"  # saved before
    config = parse_config(json.dumps(saved))
    assert config.mechanisms == ("gaussian-eigen",) and config.release.mechanism == "gaussian-eigen"


def test_the_command_line_reads_a_former_name_everywhere(tmp_path):
    """release, compare and grid all take gaussian-mm-opt for gaussian-eigen (a script written before the rename)."""
    ledger, data = str(tmp_path / "l.sqlite3"), tmp_path / "small.csv"
    data.write_text("count\n" + "".join(f"{(7 * i) % 11}\n" for i in range(32)))  # every cell: its own declaration
    assert main(["release", "--input", str(data), "--mechanism", "gaussian-mm-opt", "--definition", "approx",
                 "--epsilon", "0.5", "--delta", "1e-6", "--budget", "5", "--budget-delta", "1e-5",
                 "--output", str(tmp_path / "r.json"), "--ledger", ledger]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["mechanism"] == "gaussian-eigen"
    assert main(["compare", "--input", str(data), "--workload", "prefix", "--mechanisms", "gaussian-mm-opt",
                 "--definition", "approx", "--delta", "1e-6", "--epsilons", "1", "--trials", "2",
                 "--output", str(tmp_path / "c.csv")]) == 0
    assert set(pd.read_csv(tmp_path / "c.csv").mechanism) == {"gaussian-eigen"}
