"""AppTest for the curator-flow controls (one test per control)."""

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dplens.core.data.domain import Histogram

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def open_page(path: str) -> AppTest:
    """Run app.py (shell + state), then switch to the page; both .run() calls are required."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    return at.switch_page(path).run()


def _figure(at: AppTest, index: int = 0) -> str:
    return at.get("plotly_chart")[index].proto.spec.replace(" ", "")


def test_data_first_screen_has_start_line_and_one_chart_with_the_release():
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert any(m.value.startswith("**Start here:**") for m in at.markdown)
    spec = _figure(at)
    # the sample's 4,096 bins as one stepped area (thousands of bars are slow to draw), the release as a line
    assert '"fill":"tozeroy"' in spec and '"type":"bar"' not in spec and "noisyrelease(identity" in spec


def test_data_log_axis_and_zoom_toggles():
    at = AppTest.from_file(APP, default_timeout=60)
    counts = np.zeros(400)
    counts[10:40] = 5
    at.session_state["uploads"] = {"upload:z": Histogram.from_counts(counts, name="sparse")}
    at.session_state["dataset_key"] = "upload:z"
    at.run()
    at.toggle(key="data_view_log_y").set_value(True)
    at.toggle(key="data_view_zoom").set_value(True).run()
    assert not at.exception
    spec = _figure(at)
    assert '"type":"log"' in spec
    assert "zoomedtobins" in spec


def test_data_log_colour_toggle_on_a_2d_heatmap():
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["uploads"] = {"upload:t": Histogram.from_counts([[1, 2], [3, 28_336]], name="tiny2d")}
    at.session_state["dataset_key"] = "upload:t"
    at.run()
    at.toggle(key="data_view_log_colour").set_value(True).run()
    assert not at.exception
    assert "count(log)" in _figure(at)


def test_learn_ratio_sits_within_its_sampling_band_with_readable_ticks():
    at = open_page("pages/learn.py")
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert float(metrics["Largest observed ratio"]) <= float(metrics["e^ε (the bound)"]) * 1.1
    caption = next(c.value for c in at.caption if c.value.startswith("The observed ratio is"))
    assert "beyond its sampling band" not in caption
    spec = next(s for s in (f.proto.spec for f in at.get("plotly_chart")) if "ratio of output" in s)
    assert "e^\\u03b5 = 1.65" in spec and '"error_y"' in spec
    at.select_slider(key="learn_releases").set_value(10_000).run()
    assert not at.exception


def test_use_this_epsilon_carries_value_and_mechanism_to_release_and_gradual():
    at = open_page("pages/choose_epsilon.py")
    at.selectbox(key="choose_mechanism").set_value("hb").run()
    epsilon = float(at.metric[0].value.split("=")[1]) if at.metric[0].label.startswith("Smallest") else None
    choice = list(at.session_state.epsilon_choices.values())[-1]
    at.button(key="choose_use").click().run()
    assert not at.exception
    assert at.session_state.epsilon_handoff["epsilon"] == choice.epsilon
    at.switch_page("pages/release.py").run()
    assert not at.exception
    assert at.number_input(key="release_epsilon").value == choice.epsilon
    assert at.selectbox(key="release_mechanism").value == "hb"
    assert any("From Choose epsilon" in c.value for c in at.caption)
    at.switch_page("pages/gradual.py").run()
    assert not at.exception
    assert at.text_input(key="gradual_schedule").value.endswith(f"{choice.epsilon:.4g}")
    assert epsilon is None or abs(epsilon - choice.epsilon) < 1e-3 * choice.epsilon
    at.switch_page("pages/release.py").run()
    at.selectbox(key="release_mechanism").set_value("identity").run()  # another mechanism: the choice is stale
    assert not any("From Choose epsilon" in c.value for c in at.caption)
    assert not any("more than the remaining budget" in w.value for w in at.warning)
    assert at.session_state.epsilon_handoff is None


def test_the_choice_is_forgotten_after_a_release_and_when_the_workload_changes():
    at = open_page("pages/choose_epsilon.py")
    at.button(key="choose_use").click().run()
    at.switch_page("pages/release.py").run()
    assert any("From Choose epsilon" in c.value for c in at.caption)
    at.number_input(key="release_epsilon").set_value(0.5)
    at.button(key="release_spend").click().run()
    assert not at.exception and at.session_state.releases
    assert not any("From Choose epsilon" in c.value for c in at.caption)
    at.switch_page("pages/choose_epsilon.py").run()
    at.button(key="choose_use").click().run()
    at.session_state["workload_spec"] = "prefix"
    at.switch_page("pages/gradual.py").run()
    assert not any("From Choose epsilon" in c.value for c in at.caption)


def test_choose_epsilon_warns_when_the_target_needs_more_than_the_remaining_budget():
    at = open_page("pages/choose_epsilon.py")  # the default target needs ε ≈ 5.3 > the budget of 5
    assert not at.exception
    assert any("more than the remaining budget" in w.value for w in at.warning)


def test_several_targets_give_least_epsilon_per_mechanism_and_the_best_split():
    at = open_page("pages/choose_epsilon.py")
    at.multiselect(key="targets_mechanisms").set_value(["identity", "laplace-on-answers"])
    at.button(key="targets_run").click().run()
    assert not at.exception
    plans = next(d.value for d in at.dataframe if "least total ε" in d.value.columns)
    assert list(plans["mechanism"]) == ["identity", "laplace-on-answers"]
    metrics = {m.label: m.value for m in at.metric}
    best = float(metrics["Least total ε, best split"].split("=")[1])
    split = next(d.value for d in at.dataframe if "release" in d.value.columns)
    assert list(split["mechanism"]) == ["laplace-on-answers", "identity"]  # total ± 50; prefix RMSE 20
    assert list(split["release"]) == ["own release #1", "own release #2"]
    assert abs(best - split["ε"].sum()) < 1e-3
    at.button(key="targets_use").click().run()
    assert not at.exception and at.session_state.epsilon_handoff["target"] == "2 targets, best split"


def test_a_loaded_export_is_marked_already_private_and_releasing_from_it_spends_nothing():
    from dplens.core.data.released import ReleasedData

    released = ReleasedData(np.array([-1.5, 4.2, 0.3]), "counts", (), {"mechanism": "identity", "epsilon": 1.0},
                            "dplens-release-1.json")
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["released"] = {"released:r1": released}
    at.session_state["uploads"] = {"released:r1": released.as_histogram()}
    at.session_state["dataset_key"] = "released:r1"
    at.run()
    assert not at.exception
    assert any("post-processing" in i.value for i in at.info)
    assert any("identity" in str(d.value.to_dict()) for d in at.dataframe)
    at.switch_page("pages/release.py").run()
    before = at.session_state.ledger.remaining.epsilon
    at.selectbox(key="release_mechanism").set_value("identity").run()
    at.button(key="release_spend").click().run()
    assert not at.exception and at.session_state.releases
    assert at.session_state.ledger.remaining.epsilon == before


def test_release_offers_the_recipe_script_and_notebook():
    at = open_page("pages/release.py")
    at.selectbox(key="release_mechanism").set_value("identity").run()
    at.button(key="release_spend").click().run()
    assert not at.exception
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Recipe (Python script)" in labels and "Recipe (Jupyter notebook)" in labels


def test_release_exports_intervals_with_their_method():
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["dataset_key"] = "sample:tips-bill"  # 51 bins and prefixes: 100 secure re-runs are quick
    at.session_state["workload_spec"] = "prefix"
    at.run()
    at.switch_page("pages/release.py").run()
    at.selectbox(key="release_mechanism").set_value("hb").run()
    at.button(key="release_spend").click().run()
    assert not at.exception
    if any(b.key == "release_intervals" for b in at.button):  # slower than the automatic limit
        at.button(key="release_intervals").click().run()
    assert any("Method: exact strategy-noise quantiles" in c.value for c in at.caption)  # hb: a strategy mechanism
    at.toggle(key="release_simultaneous").set_value(True).run()
    if any(b.key == "release_intervals" for b in at.button):
        at.button(key="release_intervals").click().run()
    assert not at.exception
    assert any("Bonferroni over all values" in c.value for c in at.caption)


def test_release_page_exports_the_kernels_intervals():
    """A data-dependent mechanism's export intervals are simulated from the released output by the kernel's
    ``export_intervals`` (the command line's), on the page's seeded simulation stream: the same numbers."""
    from dplens.core.release.kernel import export_intervals
    from dplens.ui.state import SIMULATION_STREAM

    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["dataset_key"] = "sample:tips-bill"  # 51 bins: 100 re-runs of DAWA are quick
    at.session_state["workload_spec"] = "prefix"
    at.run()
    at.switch_page("pages/release.py").run()
    at.selectbox(key="release_mechanism").set_value("dawa").run()
    at.button(key="release_spend").click().run()
    if any(b.key == "release_intervals" for b in at.button):  # slower than the automatic limit
        at.button(key="release_intervals").click().run()
    assert not at.exception
    output = at.session_state.release_outputs[1]
    shown = output["export_intervals"][False]
    assert shown.method.startswith("simulation from the released output only")
    again = export_intervals(output["release"], output["request"],
                             rng=np.random.default_rng([0, SIMULATION_STREAM, 8, 1]))  # seed 0: the session's default
    np.testing.assert_array_equal(shown.lower, again.lower)
    np.testing.assert_array_equal(shown.upper, again.upper)


def test_compare_first_screen_shows_analytic_curves_before_run():
    at = open_page("pages/compare.py")
    assert not at.exception
    spec = _figure(at)
    assert "identity(analytic)" in spec and "hb(analytic)" in spec and "dawa" not in spec
    assert "rootmeansquarederrorperquery(records)" in spec


def test_compare_default_sweep_is_not_announced_as_slow_and_the_estimate_counts_the_workers(monkeypatch):
    """The default sweep takes seconds on 2 cores: no "estimated at about" warning. The estimate shares the
    serial run estimate among the workers "auto" resolves to; serially it is the whole of it."""
    from dplens import ui
    from dplens.core.analysis.cost import sweep_seconds
    from dplens.core.mechanisms import MECHANISMS
    from dplens.core.queries.workloads import random_range

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    at = open_page("pages/compare.py")
    assert not any("estimated at about" in w.value for w in at.warning)
    mechanisms, workload = [MECHANISMS["dawa"], MECHANISMS["hb"]], random_range(4096, 2000, seed=0)
    serial = sweep_seconds(mechanisms, workload, 10, 50)
    assert ui.sweep_estimate(mechanisms, workload, 10, 50, "serial") == serial
    assert ui.sweep_estimate(mechanisms, workload, 10, 50, "processes:2") == serial / 2


def test_compare_inspector_has_view_toggles_and_a_recipe():
    at = open_page("pages/compare.py")
    at.multiselect(key="compare_mechanisms").set_value(["identity"])
    at.slider(key="compare_trials").set_value(2)
    at.slider(key="compare_points").set_value(2)
    at.button(key="compare_run").click().run()
    at.toggle(key="compare_view_log_y").set_value(True).run()
    assert not at.exception
    assert "Recipe for this point (Python script)" in [b.proto.label for b in at.get("download_button")]
    assert not any(b.key == "compare_stop" for b in at.button)


def test_analytic_preview_of_a_gaussian_mechanism_follows_its_calibration_at_every_epsilon():
    """At a fixed δ the analytic Gaussian σ(ε) is not ∝ 1/ε: the preview must not rescale the ε = 1 value."""
    import json

    from dplens.core.mechanisms import MECHANISMS
    from dplens.core.privacy.definitions import EpsilonAxis

    at = open_page("pages/compare.py")
    at.session_state["privacy_definition"] = "approx"
    at.session_state["compare_mechanisms"] = ["gaussian-identity"]  # the chips sit in a form: preset them
    at.run()
    assert not at.exception
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    trace = next(t for t in figure["data"] if t["name"] == "gaussian-identity (analytic)")
    workload = ui_workload(at)
    mechanism, axis = MECHANISMS["gaussian-identity"], EpsilonAxis("approx", 1e-6)  # the default δ
    expected = [mechanism.expected_mse(workload, axis.privacy(e)) ** 0.5 for e in trace["x"]]
    assert trace["y"] == pytest.approx(expected, rel=1e-9)
    scaled = [expected[0] * trace["x"][0] / e for e in trace["x"]]
    assert trace["y"] != pytest.approx(scaled, rel=1e-3)  # the 1/ε rescaling would be wrong here


def ui_workload(at):
    from dplens.core.data.datasets import DEFAULT_DATASET, load_histogram
    from dplens.core.queries.workloads import parse_workload

    assert at.session_state.dataset_key == f"sample:{DEFAULT_DATASET}"
    shape = load_histogram(DEFAULT_DATASET).domain.shape
    return parse_workload(at.session_state.workload_spec or "random-range:m=2000,seed=0", shape)


def test_release_chart_has_log_axis_and_zoom_toggles():
    at = open_page("pages/release.py")
    counts = np.zeros(400)
    counts[10:40] = 5
    at.session_state["uploads"] = {"upload:z": Histogram.from_counts(counts, name="sparse")}
    at.session_state["dataset_key"] = "upload:z"
    at.run()
    at.radio(key="release_noise_path").set_value("exploration")
    at.button(key="release_spend").click().run()
    at.toggle(key="release_view_log_y").set_value(True)
    at.toggle(key="release_view_zoom").set_value(True).run()
    assert not at.exception
    chart = next(c for c in at.get("plotly_chart") if "95 % interval" in c.proto.spec)
    spec = chart.proto.spec.replace(" ", "")
    assert '"type":"log"' in spec and "Zoomedtobins9" in spec
