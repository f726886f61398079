"""Data page: choose a sample or upload a histogram (or raw records); preview and summary."""

import streamlit as st

import ui

ui.init_state()
st.title("Data")
ui.show_flash()
with ui.guard():
    st.caption("Choose a dataset in the sidebar, or upload your own below. Uploads stay on this server, in "
               "this workspace (the `?ws=` id in the URL brings them back after a reload; README: the ledger).")
    with st.expander("Upload a histogram", expanded=False):
        st.markdown(
            "- **CSV** with a `count` column (optional label column), or `row,col,count` for 2-D, "
            "or a plain numeric matrix (2-D)\n- **JSON** `{\"counts\": [...]}` (nested lists for 2-D)\n"
            "- **.npy** array (1-D or 2-D)\n- **Raw records**: a CSV of rows; pick the column to bin")
        upload = st.file_uploader("Histogram file", type=["csv", "json", "npy", "txt"], key="data_upload",
                                  help="Up to 50 MB and 2^22 cells.")
        as_records = st.checkbox("The file holds raw records (one row per person)", key="data_as_records",
                                 help="Bin one column into a histogram.")
        column = bins = edges = None
        if as_records:
            column = st.text_input("Column to bin", key="data_column", help="Column name in the CSV header.")
            mode = st.radio("Binning", ["categorical", "number of bins", "bin edges"], horizontal=True,
                            key="data_binning", help="Numeric columns: choose equal-width bins or your own edges.")
            if mode == "number of bins":
                bins = int(st.number_input("Bins", 1, 2**22, 20, key="data_bins"))
            elif mode == "bin edges":
                text = st.text_input("Edges (comma-separated, increasing)", "0,18,30,45,65,120", key="data_edges")
                edges = text  # parsed (and refused with one line) by core.datasets.bin_edges
        if upload is not None and st.button("Use this file", type="primary", key="data_use"):
            try:
                hist = ui.add_upload(upload.getvalue(), upload.name, column=column or None, bins=bins, edges=edges)
                st.success(f"Loaded {hist.name}: {hist.domain.size} cells, total {hist.total:,.0f}.")
            except ValueError as err:
                st.error(f"Could not read {upload.name}: {err}")

    hist = ui.histogram()
    summary = hist.summary()
    cols = st.columns(5)
    cols[0].metric("Bins", f"{summary['bins']:,}")
    cols[1].metric("Total", f"{summary['total']:,.0f}")
    cols[2].metric("Zero bins", f"{summary['zero_share']:.1%}")
    cols[3].metric("Max", f"{summary['max']:,.0f}")
    cols[4].metric("Small bins (1–9)", f"{summary['small_bins']:,}")
    st.plotly_chart(ui.histogram_figure(hist), key="data_chart")
    if hist.domain.size > ui.MAX_BARS and len(hist.domain.shape) == 1:
        st.caption(f"{hist.domain.size:,} bins are summed into at most {ui.MAX_BARS:,} bars for display only; "
                   "every computation uses all bins.")

    with st.expander("Derive a dataset: change the scale or the domain size"):
        st.caption("Scale (number of records) and domain size decide which mechanism wins (DPBench). The result is "
                   "a new session dataset; the original stays in the picker.")
        left, right = st.columns(2)
        left.number_input("Records (total)", min_value=1, max_value=10**9, value=max(1, int(hist.total)), step=1000,
                          key="data_scale_total", help="Draw this many records from the histogram's shape "
                          "(multinomial, seeded by the sidebar seed).")
        left.button("Rescale", key="data_rescale", on_click=lambda: ui.derive_dataset(
            "rescale", st.session_state.data_scale_total), help="Same shape, new number of records.")
        right.number_input("Merge adjacent bins (factor)", min_value=1, max_value=max(1, max(hist.domain.shape)),
                           value=min(2, max(hist.domain.shape)), key="data_coarsen_factor",
                           help="Sum runs of this many adjacent bins (per axis for 2-D); totals are kept.")
        right.button("Coarsen", key="data_coarsen", on_click=lambda: ui.derive_dataset(
            "coarsen", st.session_state.data_coarsen_factor), help="Fewer, wider bins.")

    st.subheader("A noisy release at a glance")
    epsilon = st.select_slider("Epsilon", [0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0], value=1.0,
                               key="data_epsilon", help="Identity mechanism: Laplace(1/ε) noise on every bin. "
                               "A preview only: nothing is charged or exported.")
    preview = ui.preview_release(epsilon)
    st.plotly_chart(ui.histogram_figure(hist, preview, f"identity, ε={epsilon:g}"), key="data_preview")
