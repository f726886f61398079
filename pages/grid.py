"""Grids page: load a grid file written by ``python -m dplens grid`` → regret, rank and frontier (DPComp views)."""

import streamlit as st

from dplens import ui
from dplens.core.analysis.experiment import summarise
from dplens.core.analysis.grid import GRID_COLUMNS, grid_setting, rank_table, regret_table
from dplens.core.analysis.metrics import METRIC_LABELS
from dplens.core.data.datasets import load_parquet

ACROSS = {"dataset": "dataset", "scale": "data scale (records)", "epsilon": "epsilon", "domain_size": "domain size"}


def _load() -> None:
    upload = st.session_state.get("grid_upload")
    if upload is None:
        return
    try:  # rows, columns and decoded size are checked from the footer before the data is read
        st.session_state.grid_results = load_parquet(upload.getvalue(), GRID_COLUMNS)
        st.session_state.grid_name = upload.name
    except ValueError as err:
        st.session_state.flash_error = f"{ui.plain(upload.name)}: {ui.error_line(err)}"


def _table(table, key: str) -> None:
    table = table.rename(columns=lambda c: f"{c:g}" if isinstance(c, float) else str(c))
    st.dataframe(table, key=key, column_config={c: st.column_config.NumberColumn(format="%.2f") for c in table.columns})


ui.init_state()
st.title("Experiment grids")
ui.show_flash()
with ui.guard():
    st.file_uploader("Grid results (.parquet)", type=["parquet"], key="grid_upload", on_change=ui.guarded(_load),
                     help="A file written by `python -m dplens grid ... --output results.parquet`.")
    df = st.session_state.get("grid_results")
    if df is None:
        st.info("Run a grid from the command line, e.g. `python -m dplens grid --datasets smooth,spiky "
                "--mechanisms identity,hb,dawa --epsilons 0.1,1 --sizes 512,4096 --trials 10 --output "
                "results.parquet`, then upload the file here. The documentation's Grids page says more.")
        st.stop()
    st.caption(f"**{ui.plain(st.session_state.get('grid_name', 'grid'))}**: {df['dataset'].nunique()} datasets × "
               f"{df['domain_size'].nunique()} sizes × {df['scale'].nunique()} scales × "
               f"{df['mechanism'].nunique()} mechanisms × {df['epsilon'].nunique()} ε; {len(df):,} rows.")
    left, right = st.columns(2)
    metrics = list(df["metric"].unique())
    metric = left.radio("Metric", metrics, horizontal=True, format_func=lambda m: METRIC_LABELS.get(m, m),
                        key="grid_metric", help="Which error metric the views rank by.")
    across = right.selectbox("Columns", list(ACROSS), format_func=ACROSS.__getitem__, key="grid_across",
                             help="Average regret and rank over everything else, for each value of this.")
    regret_tab, rank_tab, frontier_tab = st.tabs(["Regret", "Rank", "Frontier"])
    with regret_tab:
        _table(regret_table(df, metric, across), "grid_regret")
        st.caption("DPBench regret: a mechanism's mean error ÷ the best mean error in the same setting (dataset, "
                   "size, scale, ε), averaged over the settings in each column. 1 = best everywhere.")
    with rank_tab:
        _table(rank_table(df, metric, across), "grid_rank")
        st.caption("Mean rank (1 = lowest mean error) among the mechanisms of each setting.")
    with frontier_tab:
        a, b, c = st.columns(3)
        dataset = a.selectbox("Dataset", sorted(df["dataset"].unique()), key="grid_dataset")
        sizes = sorted(df.loc[df["dataset"] == dataset, "domain_size"].unique())
        size = b.selectbox("Domain size", sizes, index=len(sizes) - 1, key="grid_size")
        scales = sorted(df.loc[(df["dataset"] == dataset) & (df["domain_size"] == size), "scale"].unique())
        scale = c.selectbox("Scale (records)", scales, index=len(scales) - 1, key="grid_scale",
                            format_func="{:,}".format)
        summary = summarise(grid_setting(df, dataset, size, scale))
        st.plotly_chart(ui.error_figure(summary, metric, envelope=True), key="grid_frontier")
        st.caption("Mean error over trials (band: 2.5–97.5 % of single trials) against ε; the thick grey line is "
                   "the lower envelope, the best mechanism at each ε (DPComp).")
