"""Chart downloads: interactive HTML always, PNG/SVG when kaleido and a Chromium browser are present."""

from __future__ import annotations

import functools
import os
import shutil

import plotly.graph_objects as go
import streamlit as st

from dplens.core.extras import available, missing_extra_message, require


def _image_export_ready() -> bool:
    chromium = os.environ.get("BROWSER_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
    return available("kaleido") and chromium is not None


def _render_image(fig: go.Figure, fmt: str) -> bytes:
    require("kaleido", "images", "PNG/SVG chart export")
    # kaleido 1.x drives a headless Chrome; point it at Debian's Chromium (we never download browsers).
    os.environ.setdefault("BROWSER_PATH", shutil.which("chromium") or "/usr/bin/chromium")
    return fig.to_image(format=fmt, width=1200, height=int(fig.layout.height or 450))


def figure_downloads(fig: go.Figure, name: str, key: str) -> None:
    """HTML / PNG / SVG download buttons for a chart; files are built only when a button is clicked."""
    cols = st.columns(3)
    cols[0].download_button("Chart (HTML)", functools.partial(fig.to_html, include_plotlyjs=True),
                            f"{name}.html", "text/html", key=f"{key}_html", on_click="ignore",
                            help="Interactive chart, works offline (plotly.js embedded).")
    if not _image_export_ready():
        cols[1].caption(f"{missing_extra_message('PNG/SVG chart export', 'images')}, and a Chromium browser "
                        "on the server." if not available("kaleido") else
                        "PNG/SVG chart export needs a Chromium browser on the server.")
        return
    for col, fmt, mime in ((cols[1], "png", "image/png"), (cols[2], "svg", "image/svg+xml")):
        col.download_button(f"Chart ({fmt.upper()})", functools.partial(_render_image, fig, fmt), f"{name}.{fmt}",
                            mime, key=f"{key}_{fmt}", on_click="ignore",
                            help="Rendered by kaleido + Chromium (a few seconds).")
