"""Chart view controls shared by the pages: log axis and zoom for 1-D histograms, log colours for 2-D."""

from __future__ import annotations

from typing import TypedDict

import streamlit as st

from dplens.core.data.domain import Histogram


class HistogramView(TypedDict, total=False):
    """Keyword arguments of ``ui.histogram_figure`` chosen by the view toggles."""

    log_y: bool
    zoom: bool
    log_colour: bool


def histogram_view_controls(hist: Histogram, key: str) -> HistogramView:
    """Toggles for ``ui.histogram_figure``; returns its keyword arguments (display only, never charged).

    1-D: a log count axis and a zoom onto the bins that hold data (sparse data, e.g. 83 % zeros, sits in
    a corner of the domain). 2-D: a log colour scale, so one large cell does not make the map one colour.
    """
    if len(hist.domain.shape) == 2:
        return {"log_colour": st.toggle("Log colour scale", key=f"{key}_log_colour",
                                        help="Colour by log10(1 + count): small cells stay visible next to a "
                                             "very large one. Hover shows the count.")}
    left, right = st.columns(2)
    log_y = left.toggle("Log count axis", key=f"{key}_log_y", help="Counts on a log scale (zero bins vanish).")
    zoom = right.toggle("Zoom to the data", key=f"{key}_zoom",
                        help="Show only the span of bins that hold records. Drag on the chart to zoom further; "
                             "double-click to reset.")
    return {"log_y": log_y, "zoom": zoom}
