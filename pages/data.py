"""Data page: choose a sample or upload a histogram (or raw records); preview and summary."""

import streamlit as st

from dplens import ui
from dplens.core.data.datasets import NoCountColumnError
from dplens.core.data.released import POST_PROCESSING, is_release_export

UNKNOWN_EXPORT_NOTE = ("this file looks like a dplens export, but this installation has no record of releasing it and "
                       "it is not signed by a key you trust, so it is raw data and every release from it is charged; "
                       "if it is another installation's DP release, trust that installation's public key on the "
                       "Ledger page (Trusted installations) and use the file again")


def use_upload() -> None:
    """Button callback: parse the upload before the page renders, so the first screen shows it at once."""
    ss = st.session_state
    upload = ss.get("data_upload")
    if upload is None:
        return
    as_records, mode = ss.get("data_as_records", False), ss.get("data_binning", "categorical")
    column = ss.get("data_column") if as_records else None
    bins = int(ss.get("data_bins", 20)) if as_records and mode == "number of bins" else None
    grid = (int(ss.get("data_grid_rows", 0)), int(ss.get("data_grid_cols", 0)))
    levels = [[v.strip() for v in line.split(",")] for line in ss.get("data_levels", "").splitlines() if line.strip()]
    notes: list[str] = []
    data = upload.getvalue()
    unknown_export = False
    if not as_records and is_release_export(data):
        # Already private only when signed by this installation or a key the curator trusts (Ledger page)
        if ui.known_release(data, upload.name) is not None:
            try:
                released = ui.add_released(data, upload.name)
            except ValueError as err:
                ss.flash_error = f"Could not read {ui.plain(upload.name)}: {err}"
                return
            ss.data_notices = [f"Loaded {ui.plain(upload.name)} as a released dataset "
                               f"({released.values.size:,} {released.kind})."]
            return
        unknown_export = True
    if unknown_export:  # read as raw data: a release from it is charged
        notes.append(UNKNOWN_EXPORT_NOTE)
    try:
        edges = ss.get("data_edges") if as_records and mode == "bin edges" else None  # parsed in core (bin_edges)
        hist = ui.add_upload(data, upload.name, column=column or None, bins=bins, edges=edges,
                             grid_shape=grid if not as_records and min(grid) > 0 else None, notes=notes,
                             levels=levels if not as_records and levels else None)
    except NoCountColumnError as err:  # a header without counts: most likely one row per person
        ss.flash_error = (f"Could not read {ui.plain(upload.name)}: {err}. If the file holds one row per person, "
                          "tick “The file holds raw records” and pick the column to bin.")
        return
    except ValueError as err:
        ss.flash_error = f"Could not read {ui.plain(upload.name)}: {err}"
        return
    if ss.get("data_public"):  # the curator's declaration: it may tune other datasets' choices for free
        ss.setdefault("public_uploads", set()).add(ss.dataset_key)
        notes.append("declared public: Compare and Choose epsilon can tune on it for other datasets of its shape")
    if ui.bins_from_data():  # an undeclared grid or levels: explore, compare, choose ε; no release
        notes.append("its shape was read from the file (no declared grid or levels): explore it freely, but declare "
                     "Grid rows and Grid columns (row,col,count) or Levels (label,count or A,B,count) to release it")
    ss.data_notices = [f"Loaded {ui.plain(hist.name)}: {hist.domain.size:,} cells, total {hist.total:,.0f}."] + [
        ui.plain(note[0].upper() + note[1:] + ".") for note in notes]


ui.init_state()
st.title("Data")
ui.show_flash()
for notice in st.session_state.pop("data_notices", []):
    st.info(notice)
with ui.guard():
    hist = ui.histogram()
    st.markdown(ui.start_line(hist))
    # open while an upload is under way: a widget inside changing must not fold it away
    working = st.session_state.get("data_upload") is not None or bool(st.session_state.get("data_as_records"))
    with st.expander("Upload a histogram", expanded=working):  # on the first screen, before the charts
        st.markdown(
            "- **CSV** with a `count` column (optional label column), or `row,col,count` for 2-D, "
            "or a plain numeric matrix (2-D)\n- **JSON** `{\"counts\": [...]}` (nested lists for 2-D)\n"
            "- **.npy** array (1-D or 2-D)\n- **Raw records**: a CSV of rows; pick the column to bin")
        upload = st.file_uploader("Histogram file", type=["csv", "json", "npy", "txt"], key="data_upload",
                                  help="Up to 50 MB and 2^22 cells.")
        as_records = st.checkbox("The file holds raw records (one row per person)", key="data_as_records",
                                 help="Bin one column into a histogram.")
        if as_records:
            ui.record_column_picker(upload)
            mode = st.radio("Binning", ["categorical", "number of bins", "bin edges"], horizontal=True,
                            key="data_binning", help="Numeric columns: choose equal-width bins or your own edges.")
            if mode == "number of bins":
                st.number_input("Bins", 1, 2**22, 20, key="data_bins")
            elif mode == "bin edges":
                st.text_input("Edges (comma-separated, increasing)", "0,18,30,45,65,120", key="data_edges")
        else:
            st.caption("Long-form 2-D files (`row,col,count`) may list only the non-zero cells. To release one, "
                       "declare its grid (0 = infer from the largest index: explore only, since one record at a new "
                       "index would change the shape). A labelled `label,count` or `A,B,count` file needs its Levels.")
            grid_cols = st.columns(2)
            grid_cols[0].number_input("Grid rows", 0, 2**22, 0, key="data_grid_rows")
            grid_cols[1].number_input("Grid columns", 0, 2**22, 0, key="data_grid_cols")
            st.text_area("Levels (one line per label column, levels comma-separated, in release order)",
                         key="data_levels", height=68, help="Labels the file does not list are 0; a label not "
                         "declared is refused. Without them the levels are the labels present (explore only).")
        st.checkbox("This data is public (not private)", key="data_public",
                    help="Public data can be used to choose the mechanism and ε for a private dataset of the same "
                         "shape without looking at the private data (Compare, Choose epsilon: Tune on).")
        if upload is not None:
            st.button("Use this file", type="primary", key="data_use", on_click=ui.guarded(use_upload))
    released = ui.released_data()
    if released is not None:
        st.info(POST_PROCESSING + " Negative values are shown clipped at 0 in the charts (also post-processing).")
        with st.expander("Metadata of this release", expanded=True):
            st.dataframe([{"field": k, "value": str(v)} for k, v in released.metadata.items()], hide_index=True,
                         key="data_released_metadata")
    summary = hist.summary()
    cols = st.columns(5)
    cols[0].metric("Bins", f"{summary['bins']:,}")
    cols[1].metric("Total", f"{summary['total']:,.0f}")
    cols[2].metric("Zero bins", f"{summary['zero_share']:.1%}")
    cols[3].metric("Max", f"{summary['max']:,.0f}")
    cols[4].metric("Small bins (1–9)", f"{summary['small_bins']:,}")
    ui.dataset_chart(hist)
    st.caption("Choose a dataset in the sidebar, or upload your own below. Uploads stay on this server, in "
               "this workspace (the workspace id in the URL brings them back after a reload; each dataset's budget "
               "is kept in the ledger, shown on the Ledger page).")
    with st.expander("Derive a dataset: change the scale or the domain size"):
        st.caption("Scale (number of records) and domain size decide which mechanism wins (DPBench). The result is "
                   "a new session dataset; the original stays in the picker.")
        left, right = st.columns(2)
        left.number_input("Records (total)", min_value=1, max_value=10**9, value=max(1, int(hist.total)), step=1000,
                          key="data_scale_total", help="Draw this many records from the histogram's shape "
                          "(multinomial, seeded by the sidebar seed).")
        left.button("Rescale", key="data_rescale", on_click=ui.guarded(lambda: ui.derive_dataset(
            "rescale", st.session_state.data_scale_total)), help="Same shape, new number of records.")
        right.number_input("Merge adjacent bins (factor)", min_value=1, max_value=max(1, max(hist.domain.shape)),
                           value=min(2, max(hist.domain.shape)), key="data_coarsen_factor",
                           help="Sum runs of this many adjacent bins (per axis for 2-D); totals are kept.")
        right.button("Coarsen", key="data_coarsen", on_click=ui.guarded(lambda: ui.derive_dataset(
            "coarsen", st.session_state.data_coarsen_factor)), help="Fewer, wider bins.")
