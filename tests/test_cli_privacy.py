"""The command line's privacy definitions: --definition, --delta, --rho; exports state them and round-trip."""

from __future__ import annotations

import json

import pytest

from dplens.cli import main
from dplens.core.privacy.definitions import ZCDP, ApproxDP, PureDP, zcdp_rho
from dplens.core.release.export import privacy_from_metadata


def _release(tmp_path, *args: str) -> dict:
    out = tmp_path / "out.json"
    code = main(["release", "--input", "tips-bill", "--ledger", str(tmp_path / "ledger.sqlite3"),
                 "--budget", "5", "--budget-delta", "1e-5", "--output", str(out), *args])
    assert code == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize(("args", "definition", "expected"), [
    (("--mechanism", "gaussian-hb", "--definition", "zcdp", "--rho", "0.1"), "zcdp", ZCDP(0.1)),
    (("--mechanism", "gaussian-identity", "--definition", "approx", "--epsilon", "1", "--delta", "1e-9"),
     "approx", ApproxDP(1.0, 1e-9)),
    (("--mechanism", "hb", "--definition", "zcdp", "--epsilon", "1"), "zcdp", ZCDP(zcdp_rho(1.0, 1e-6))),
    (("--mechanism", "identity", "--epsilon", "0.5"), "pure", PureDP(0.5)),
])
def test_release_metadata_states_the_definition_and_round_trips(tmp_path, args, definition, expected):
    doc = _release(tmp_path, *args)
    assert doc["definition"] == definition
    stated = privacy_from_metadata(doc)
    assert type(stated) is type(expected)
    for field in ("epsilon", "delta", "rho"):
        if hasattr(expected, field):
            assert getattr(stated, field) == pytest.approx(getattr(expected, field), rel=1e-9)
    assert doc["privacy_loss"] <= doc["epsilon"] + 1e-9
    if doc["noise"] == "gaussian":
        assert doc["sigma"] > 0 and doc["noise_scale"] is None
        assert doc["noise_sampler"] in ("opendp-integer-gaussian", "opendp-lattice-gaussian")
    else:
        assert doc["noise_scale"] > 0 and doc["sigma"] is None


def test_secure_gaussian_release_says_opendp_gaussian(tmp_path):
    out = tmp_path / "out.json"
    assert main(["release", "--input", "tips-bill", "--mechanism", "gaussian-identity", "--definition", "zcdp",
                 "--rho", "0.5", "--ledger", str(tmp_path / "l.sqlite3"), "--budget", "10", "--budget-delta", "1e-5",
                 "--output", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["noise_sampler"] in ("opendp-integer-gaussian", "opendp-lattice-gaussian")


@pytest.mark.parametrize(("args", "message"), [
    (("--mechanism", "gaussian-hb", "--epsilon", "1"), "never pure epsilon-DP"),
    (("--mechanism", "hb", "--rho", "0.1"), "--rho needs --definition zcdp"),
    (("--mechanism", "hb", "--definition", "zcdp", "--rho", "0.1", "--epsilon", "1"), "not both"),
    (("--mechanism", "hb"), "--epsilon is required"),
    (("--mechanism", "gaussian-hb", "--definition", "approx", "--epsilon", "1"), "--budget-delta"),
    (("--mechanism", "hb", "--definition", "zcdp", "--rho", "-1"), "rho must be"),
])
def test_bad_privacy_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    code = main(["release", "--input", "tips-bill", "--ledger", str(tmp_path / "l.sqlite3"),
                 "--output", str(tmp_path / "o.json"), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_bad_delta_is_refused_by_the_parser(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["release", "--input", "tips-bill", "--mechanism", "hb", "--epsilon", "1", "--delta", "2",
              "--ledger", str(tmp_path / "l.sqlite3"), "--output", "x.json"])
    assert exit_info.value.code == 2 and "delta must be in (0, 1)" in capsys.readouterr().err


def test_compare_at_matched_privacy_puts_both_noise_kinds_on_one_axis(tmp_path, capsys):
    import pandas as pd

    from dplens.core.data.datasets import load_histogram
    from dplens.core.mechanisms import MECHANISMS
    from dplens.core.privacy.definitions import ZCDP, zcdp_rho
    from dplens.core.queries.workloads import Prefix

    out = tmp_path / "sweep.csv"
    assert main(["compare", "--input", "tips-bill", "--workload", "prefix", "--mechanisms",
                 "laplace-on-answers,gaussian-answers", "--epsilons", "0.5,2", "--trials", "2",
                 "--definition", "zcdp", "--delta", "1e-6", "--output", str(out)]) == 0
    assert "epsilon column is epsilon at delta = 1e-06 under rho-zCDP" in capsys.readouterr().out
    df = pd.read_csv(out)
    assert set(df["mechanism"]) == {"laplace-on-answers", "gaussian-answers"}
    rmse = df[df["metric"] == "rmse"].groupby("mechanism")["expected"].mean()
    assert rmse["gaussian-answers"] < rmse["laplace-on-answers"]  # Δ₂(prefix) = √n ≪ Δ₁ = n
    # both were handed ρ = zcdp_rho(ε, δ) itself: Laplace at √(2ρ), not at the axis's ε
    laplace = df[(df.metric == "rmse") & (df.mechanism == "laplace-on-answers") & (df.epsilon == 0.5)]["expected"]
    workload = Prefix(load_histogram("tips-bill").domain.size)
    at_rho = MECHANISMS["laplace-on-answers"].expected_mse(workload, ZCDP(zcdp_rho(0.5, 1e-6))) ** 0.5
    assert laplace.iloc[0] == pytest.approx(at_rho, rel=1e-9)
    assert laplace.iloc[0] > MECHANISMS["laplace-on-answers"].expected_mse(workload, 0.5) ** 0.5


def test_compare_under_pure_epsilon_skips_gaussian_noise_by_name(tmp_path, capsys):
    out = tmp_path / "sweep.csv"
    assert main(["compare", "--input", "tips-bill", "--workload", "prefix", "--mechanisms", "hb,gaussian-hb",
                 "--epsilons", "1", "--trials", "2", "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "skipped gaussian-hb: gaussian-hb adds Gaussian noise, which is never pure epsilon-DP" in err


def test_the_ledger_records_delta_and_rho_of_each_release(tmp_path):
    from dplens.core.data.datasets import load_histogram
    from dplens.core.data.fingerprint import dataset_fingerprint
    from dplens.core.privacy.ledger_store import LedgerStore

    ledger = tmp_path / "ledger.sqlite3"
    _release(tmp_path, "--mechanism", "gaussian-hb", "--definition", "zcdp", "--rho", "0.1")
    _release(tmp_path, "--mechanism", "identity", "--epsilon", "0.5")
    history = LedgerStore(ledger).history(dataset_fingerprint(load_histogram("tips-bill")))
    spends = [e for e in history if e["kind"] == "spend"]
    assert spends[0]["rho"] == pytest.approx(0.1) and spends[0]["delta"] == 1e-6
    assert spends[0]["epsilon"] == pytest.approx(2.141939, abs=1e-6)  # ε at δ by CKS, charged by basic composition
    assert spends[1]["rho"] == pytest.approx(0.125) and spends[1]["delta"] == 0.0


def test_delta_above_one_over_n_is_warned_on_stderr(tmp_path, capsys):
    out = tmp_path / "o.json"
    assert main(["release", "--input", "tips-bill", "--mechanism", "gaussian-identity", "--definition", "approx",
                 "--epsilon", "1", "--delta", "0.01", "--ledger", str(tmp_path / "l.sqlite3"), "--budget", "5",
                 "--budget-delta", "0.5", "--output", str(out)]) == 0
    assert "above 1/n" in capsys.readouterr().err


def test_a_rho_budget_composes_rho_and_refuses_approx_releases(tmp_path, capsys):
    ledger, out = str(tmp_path / "ledger.sqlite3"), str(tmp_path / "o.json")
    common = ["--input", "tips-bill", "--ledger", ledger, "--output", out]
    assert main(["release", *common, "--budget-rho", "0.25", "--mechanism", "gaussian-hb", "--definition", "zcdp",
                 "--rho", "0.1"]) == 0
    assert "remaining rho=0.15 of 0.25 (epsilon=" in capsys.readouterr().out
    assert main(["release", *common, "--mechanism", "identity", "--epsilon", "0.5"]) == 0  # pure: ε²/2 = 0.125
    assert "remaining rho=0.025 of 0.25" in capsys.readouterr().out
    assert main(["release", *common, "--mechanism", "gaussian-identity", "--definition", "approx",
                 "--epsilon", "0.01", "--delta", "1e-9"]) == 2
    assert "implies no rho" in capsys.readouterr().err
    assert main(["release", *common, "--mechanism", "hb", "--definition", "zcdp", "--rho", "0.03"]) == 2
    assert "needs rho=0.03; remaining is rho=0.025 of 0.25" in capsys.readouterr().err
    assert main(["ledger", "--input", "tips-bill", "--ledger", ledger]) == 0
    shown = capsys.readouterr().out
    assert "total rho=0.25 (epsilon=" in shown and "spent rho=0.225 (sum of rho) in 2 release(s)" in shown


def test_budget_and_budget_rho_are_exclusive(tmp_path, capsys):
    assert main(["ledger", "--input", "tips-bill", "--ledger", str(tmp_path / "l.sqlite3"), "--budget", "1",
                 "--budget-rho", "0.1"]) == 2
    assert "not both" in capsys.readouterr().err


def test_a_reset_may_record_a_rho_total(tmp_path, capsys):
    ledger = str(tmp_path / "l.sqlite3")
    assert main(["ledger", "--input", "tips-bill", "--ledger", ledger, "--budget", "1"]) == 0
    assert main(["ledger", "--input", "tips-bill", "--ledger", ledger, "--reset", "--budget-rho", "0.5",
                 "--budget-delta", "1e-6", "--reason", "switch to zCDP"]) == 0
    assert "total rho=0.5 (epsilon=5.222 at delta=1e-06)" in capsys.readouterr().out
