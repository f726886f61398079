"""AppTest: the Grids page on a grid file the CLI wrote; incremental Compare reuses earlier cells."""

from __future__ import annotations

import json

from dplens.core.analysis.grid import GridSpec, load_grid, run_grid
from tests.test_app import open_page


def test_grids_page_shows_regret_rank_and_frontier(tmp_path):
    spec = GridSpec(datasets=("tips-bill", "dense"), mechanisms=("identity", "hb", "uniform"),
                    epsilons=(0.1, 1.0), trials=2, scales=(None, 300), workload="prefix")
    run_grid(spec, tmp_path / "g.parquet")
    at = open_page("pages/grid.py")
    assert not at.exception and at.info  # nothing loaded yet: how to make a grid file
    at.session_state["grid_results"] = load_grid(tmp_path / "g.parquet")
    at.run()
    assert not at.exception
    regret = at.dataframe[0].value
    assert set(regret.index) == {"identity", "hb", "uniform"} and list(regret.columns) == ["dense", "tips-bill"]
    assert (regret.min(axis=0) >= 1.0).all()
    at.selectbox(key="grid_across").set_value("epsilon").run()
    assert list(at.dataframe[0].value.columns) == ["0.1", "1"]
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert {"identity", "hb", "uniform"} <= {t.get("name") for t in figure["data"]}


def test_compare_adding_a_mechanism_runs_only_the_new_cells():
    at = open_page("pages/compare.py")
    at.multiselect(key="compare_mechanisms").set_value(["identity"])
    at.slider(key="compare_trials").set_value(2)
    at.slider(key="compare_points").set_value(3)
    at.button(key="compare_run").click().run()
    assert not at.exception
    at.multiselect(key="compare_mechanisms").set_value(["identity", "hb"])
    at.button(key="compare_run").click().run()
    assert not at.exception
    latest = list(at.session_state.sweeps.values())[-1]
    assert latest.attrs["computed"] == 3 * 2  # hb only: identity and uniform came from the cache
    assert any("reused 12" in c.value for c in at.caption)


def test_compare_on_worker_processes_gives_the_serial_numbers():
    at = open_page("pages/compare.py")
    at.multiselect(key="compare_mechanisms").set_value(["hb"])
    at.slider(key="compare_trials").set_value(2)
    at.slider(key="compare_points").set_value(2)
    at.selectbox(key="compare_scheduler").set_value("processes")
    at.button(key="compare_run").click().run()
    assert not at.exception
    on_workers = list(at.session_state.sweeps.values())[-1]
    at.session_state["sweep_cache"] = None  # forget the cells: the serial run recomputes them all
    at.session_state["sweeps"] = {}
    at.selectbox(key="compare_scheduler").set_value("serial")
    at.button(key="compare_run").click().run()
    serial = list(at.session_state.sweeps.values())[-1]
    assert serial.attrs["computed"] == on_workers.attrs["computed"] == 3 * 2 * 2
    assert serial.drop(columns="seconds").equals(on_workers.drop(columns="seconds"))
