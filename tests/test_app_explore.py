"""AppTest behaviour tests for the exploration pages: Data (derive), Workloads, Compare (see docs/benchmarks.md, "Test
conventions")."""

import json
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dplens import ui
from dplens.core.data.domain import Histogram
from dplens.core.queries.workloads import explicit_from_csv
from tests.test_app import APP, open_page


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def page_with(path: str, hist: Histogram, **state) -> AppTest:
    """Open a page with ``hist`` as the selected (uploaded) dataset and extra session state."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["uploads"] = {"upload:t": hist}
    at.session_state["dataset_key"] = "upload:t"
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    return at.switch_page(path).run()


def test_choosing_a_workload_changes_the_sensitivity_shown():
    at = open_page("pages/workloads.py")
    assert not at.exception
    before = metrics(at)
    assert before["Queries × cells"] == "2,000 × 4,096"
    at.selectbox(key="workloads_name").set_value("prefix").run()
    at.button(key="workloads_use").click().run()
    assert not at.exception
    after = metrics(at)
    assert after["L1 sensitivity"] == "4,096" != before["L1 sensitivity"]
    assert after["Sum of squared weights"] == f"{4096 * 4097 // 2:,}"
    assert after["L2 sensitivity"] == "64"  # prefix: column 0 has 4096 ones, Δ₂ = √4096
    assert at.session_state.workload_spec == "prefix"


def test_registry_parameters_are_inputs_and_bad_values_are_friendly():
    at = open_page("pages/workloads.py")
    assert at.selectbox(key="workloads_name").value == "random-range"  # starts on the current workload
    at.text_input(key="workloads_param_random-range_m").set_value("25").run()
    at.button(key="workloads_use").click().run()
    assert metrics(at)["Queries × cells"] == "25 × 4,096"
    at.text_input(key="workloads_param_random-range_m").set_value("lots").run()
    at.button(key="workloads_use").click().run()
    assert not at.exception
    assert "must be an integer" in at.error[0].value
    assert at.session_state.workload_spec == "random-range:m=25"


def test_composing_a_stack_sums_sensitivities():
    at = open_page("pages/workloads.py")
    at.selectbox(key="workloads_name").set_value("prefix").run()
    at.button(key="workloads_add").click().run()
    at.selectbox(key="workloads_name").set_value("total").run()
    at.button(key="workloads_add").click().run()
    assert at.dataframe[0].value["part"].tolist() == ["prefix", "total"]
    at.button(key="workloads_use_stack").click().run()
    assert not at.exception
    assert metrics(at)["Queries × cells"] == "4,097 × 4,096"
    assert metrics(at)["L1 sensitivity"] == "4,097"
    assert at.session_state.workload_spec.startswith("custom:")


def test_an_uploaded_query_matrix_is_the_workload_with_its_true_answers():
    hist = Histogram.from_counts([3.0, 1, 4, 1], name="four")
    matrix = explicit_from_csv(b"q0,q1,q2,q3\n1,1,0,0\n0,0.5,0.5,2\n", n=4)
    at = page_with("pages/workloads.py", hist, custom_workloads={"custom:1:uploaded matrix": matrix},
                   workload_spec="custom:1:uploaded matrix")
    assert not at.exception
    assert metrics(at)["Queries × cells"] == "2 × 4"
    assert metrics(at)["L1 sensitivity"] == "2"
    answers = at.dataframe[-1].value
    assert answers["true answer"].tolist() == [4.0, 4.5]
    assert answers["last cell"].tolist() == [1, 3]


def test_a_drawn_range_becomes_a_one_query_workload():
    at = open_page("pages/workloads.py")
    at.slider(key="workloads_range").set_value((10, 19)).run()
    at.button(key="workloads_use_range").click().run()
    assert not at.exception
    assert metrics(at)["Queries × cells"] == "1 × 4,096"
    answer = at.dataframe[-1].value["true answer"].iloc[0]
    counts = at.session_state.uploads.get(at.session_state.dataset_key)
    from dplens.ui.datasets import load_reference_histogram  # the cached sample loader
    counts = load_reference_histogram(at.session_state.dataset_key).vector if counts is None else counts.vector
    assert answer == pytest.approx(counts[10:20].sum())


def test_typed_range_endpoints_set_the_range_and_follow_the_slider():
    at = open_page("pages/workloads.py")
    at.number_input(key="workloads_range_last").set_value(30).run()
    at.number_input(key="workloads_range_first").set_value(20).run()
    assert not at.exception and at.session_state.workloads_range == (20, 30)
    at.number_input(key="workloads_range_first").set_value(40).run()  # typed past the last: put in order
    assert at.session_state.workloads_range == (30, 40)
    at.slider(key="workloads_range").set_value((5, 9)).run()
    assert (at.number_input(key="workloads_range_first").value, at.number_input(key="workloads_range_last").value) \
        == (5, 9)
    at.button(key="workloads_use_range").click().run()
    assert metrics(at)["Queries × cells"] == "1 × 4,096"


@pytest.mark.parametrize("custom", [False, True])
def test_a_workload_for_other_data_is_dropped_with_a_note(custom):
    at = page_with("pages/workloads.py", Histogram.from_counts(np.arange(30.0), name="ages"))
    if custom:
        at.slider(key="workloads_range").set_value((3, 7)).run()
        at.button(key="workloads_use_range").click().run()
    else:
        at.session_state["workload_spec"] = "prefix"
        at.run()
    assert metrics(at)["Queries × cells"] == ("1 × 30" if custom else "30 × 30")
    at.session_state["uploads"] = {**at.session_state.uploads,
                                   "upload:g": Histogram.from_counts(np.ones((5, 6)), name="grid")}
    at.session_state["dataset_key"] = "upload:g"
    at.run()
    assert not at.exception
    assert any("Workload dropped" in w.value and "30-cell 1-D" in w.value and "5 × 6" in w.value
               for w in at.warning), [w.value for w in at.warning]
    assert metrics(at)["Queries × cells"] == "267 × 30"  # the 2-D default (5 + 6 sums, 256 boxes), not the 1-D one
    at.run()
    assert not any("Workload dropped" in w.value for w in at.warning)  # said once


def test_2d_dataset_gets_2d_workloads_and_rectangle_sliders():
    hist = Histogram.from_counts(np.arange(12.0).reshape(3, 4), name="grid")
    at = page_with("pages/workloads.py", hist)
    assert not at.exception
    assert metrics(at)["Queries × cells"] == "263 × 12"  # 3 row sums + 4 column sums + 256 rectangles
    at.slider(key="workloads_rows").set_value((1, 2))
    at.slider(key="workloads_cols").set_value((0, 1)).run()
    at.button(key="workloads_use_range").click().run()
    assert metrics(at)["Queries × cells"] == "1 × 12"
    assert at.dataframe[-1].value["true answer"].tolist() == [4 + 5 + 8 + 9]


@pytest.mark.parametrize(("box", "shape", "expected"), [
    ({"x": [0.6, 2.2], "y": [1.5, 3.4]}, (4, 5), ((2, 3), (1, 2))),
    ({"x": [2.2, 0.6], "y": [3.4, 1.5]}, (4, 5), ((2, 3), (1, 2))),  # reversed row axis: y0 below y1
    ({"x": [-3, 99], "y": [-1, 0.4]}, (4, 5), ((0, 0), (0, 4))),     # clipped to the grid
    ({"x": [1.2, 1.8], "y": [0, 3]}, (4, 5), None),                   # no cell centre inside
    # 1000 × 1023 cells shown as 500 × 512 display cells (2 × 2 summed): centres at even indices
    ({"x": [3, 7.9], "y": [997, 1e4]}, (1000, 1023), ((998, 999), (4, 7))),
    ({"x": [1021, 1030], "y": [0, 1]}, (1000, 1023), ((0, 1), (1022, 1022))),  # the last group has 1 cell
    ({"x": [1023, 1025], "y": [0, 0]}, (1000, 1023), None),           # past the last centre (1022)
])
def test_a_box_on_the_heatmap_is_the_rectangle_of_displayed_cells_inside_it(box, shape, expected):
    assert ui.heatmap_box_cells(box, shape) == expected


def test_a_selectable_heatmap_has_handles_on_the_displayed_cell_centres():
    hist = Histogram.from_counts(np.ones((1000, 1023)), name="big")
    heatmap, handles = ui.histogram_figure(hist, source=ui.SOURCES[ui.TRUE], selectable=True).data
    assert heatmap.x[:3].tolist() == [0, 2, 4] and heatmap.y[:3].tolist() == [0, 2, 4]
    assert set(handles.x) <= set(heatmap.x) and set(handles.y) <= set(heatmap.y)
    assert len(set(handles.x)) <= ui.MAX_HANDLES_SIDE and handles.marker.opacity == 0
    assert ui.histogram_figure(hist, source=ui.SOURCES[ui.TRUE], selectable=True).layout.dragmode == "select"
    plain = ui.histogram_figure(hist, source=ui.SOURCES[ui.TRUE])
    assert [trace.type for trace in plain.data] == ["heatmap"] and plain.layout.dragmode is None


def test_rescale_and_coarsen_make_new_session_datasets():
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.number_input(key="data_scale_total").set_value(1000)
    at.button(key="data_rescale").click().run()
    assert not at.exception
    assert at.session_state.dataset_key.startswith("scaled:")
    assert metrics(at)["Total"] == "1,000"
    assert metrics(at)["Bins"] == "4,096"
    at.number_input(key="data_coarsen_factor").set_value(4)
    at.button(key="data_coarsen").click().run()
    assert metrics(at)["Bins"] == "1,024"
    assert metrics(at)["Total"] == "1,000"
    assert at.session_state.dataset_key.startswith("scaled:")  # coarsened from rescaled data: still rescaled
    derived = at.session_state.uploads[at.session_state.dataset_key]
    assert derived.name.endswith("(scaled to 1,000) (coarsened 4)")


def test_no_budget_is_spent_on_rescaled_data_but_coarsened_data_charges_its_source():
    """Upscaling multiplies one person's influence, so ε on rescaled data is not ε on the original."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.button(key="data_coarsen").click().run()  # coarsened: one person still moves one count by 1
    at.switch_page("pages/release.py").run()
    at.radio(key="release_noise_path").set_value("exploration").run()
    at.number_input(key="release_epsilon").set_value(1.0)
    at.button(key="release_spend").click().run()
    assert at.session_state.ledger.spent.epsilon == pytest.approx(1.0)
    at.switch_page("pages/data.py").run()
    at.number_input(key="data_scale_total").set_value(100_000)
    at.button(key="data_rescale").click().run()
    at.switch_page("pages/release.py").run()
    at.number_input(key="release_epsilon").set_value(1.0)
    at.button(key="release_spend").click().run()
    assert not at.exception
    assert "rescaled" in at.error[0].value and "no budget spent" in at.error[0].value
    assert at.session_state.ledger.spent.epsilon == pytest.approx(1.0)
    assert len(at.session_state.releases) == 1


def _run_small_sweep(at, mechanisms):
    at.multiselect(key="compare_mechanisms").set_value(mechanisms)
    at.slider(key="compare_trials").set_value(2)
    at.slider(key="compare_points").set_value(3)
    at.button(key="compare_run").click().run()
    assert not at.exception
    return next(v for k, v in at.session_state.sweeps.items() if k[0] != "per-bin")


def test_regret_table_always_has_identity_and_uniform_references():
    at = open_page("pages/compare.py")
    _run_small_sweep(at, ["hb"])
    regret = next(d.value for d in at.dataframe if "regret" in d.value.columns)
    assert set(regret["mechanism"]) == {"hb", "identity", "uniform"}
    assert regret["regret"].min() == pytest.approx(1.0)


def test_inspecting_a_point_reproduces_the_sweeps_release_exactly():
    at = open_page("pages/compare.py")
    results = _run_small_sweep(at, ["identity"])
    epsilon = sorted(results["epsilon"].unique())[1]
    at.selectbox(key="compare_pick_mechanism").set_value("uniform")
    at.selectbox(key="compare_pick_epsilon").set_value(epsilon)
    at.number_input(key="compare_pick_trial").set_value(1).run()
    assert not at.exception
    row = results[(results.mechanism == "uniform") & (results.epsilon == epsilon) & (results.trial == 1)
                  & (results.metric == "mae")]
    caption = next(c.value for c in at.caption if "reproduced exactly" in c.value)
    assert f"= {row.value.iloc[0]:,.4g} " in caption
    assert len(at.get("plotly_chart")) >= 2  # frontier + noisy-over-true histogram


def test_per_bin_error_view_groups_bins_by_true_count():
    at = open_page("pages/compare.py")
    _run_small_sweep(at, ["identity"])
    charts = len(at.get("plotly_chart"))
    at.button(key="compare_per_bin").click().run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == charts + 1
    figure = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "true count of the bin" in c.proto.spec)
    assert {trace["name"] for trace in figure["data"]} == {"identity", "uniform"}
    assert re.fullmatch(r"1–9<br>\(\d[\d,]* bins\)", figure["data"][0]["x"][1])


def test_a_stopped_sweep_keeps_partial_results_and_reruns_complete():
    def script():
        import streamlit as st

        from dplens import ui

        class RerunException(BaseException):  # stands in for Streamlit's (matched by name)
            pass

        def progress(done, total, name):
            if done == 3 and st.session_state.get("interrupt", True):
                raise RerunException

        ui.init_state()
        try:
            ui.sweep(("identity",), (1.0,), 10, ("mae",), progress=progress)
        except RerunException:
            st.write("interrupted")
        st.session_state.interrupt = False
        df = next(iter(st.session_state.sweeps.values()))
        st.write(f"rows={len(df)} stopped={df.attrs['stopped']}")

    at = AppTest.from_function(script, default_timeout=60).run()
    assert [m.value for m in at.markdown] == ["interrupted", "rows=3 stopped=True"]
    at.run()
    assert [m.value for m in at.markdown] == ["rows=10 stopped=False"]


def test_compare_on_an_all_zero_histogram_runs_unless_a_metric_needs_a_total():
    """An all-zero histogram (teaching demos use it): the default metrics run, and only they are computed; asking
    for the scaled error gives one line naming it and why, not "Something went wrong"."""
    at = page_with("pages/compare.py", Histogram.from_counts(np.zeros(64), name="zeros"))
    results = _run_small_sweep(at, ["hb"])
    assert set(results.metric) == {"mae", "rmse"} and (results.value > 0).all()
    at.multiselect(key="compare_metrics").set_value(["rmse", "scaled"])
    at.button(key="compare_run").click().run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "metric 'scaled' (scaled error (MAE / total)) needs a histogram total > 0, got 0: it divides the mean "
        "|error| by the histogram's total; choose another metric (mae, mse, rmse, max, mre)"]
    assert not any(set(k[3]) == {"rmse", "scaled"} for k in at.session_state.sweeps if k[0] != "per-bin")
