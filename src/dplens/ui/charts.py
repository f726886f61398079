"""Chart builders (plotly figures, no Streamlit calls), one colour per mechanism across every chart."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import plotly.graph_objects as go

from dplens.core.analysis.views import downsample
from dplens.core.data.domain import Histogram
from dplens.core.mechanisms import MECHANISMS
from dplens.core.registry import REGISTRY
from dplens.ui.value_sources import Source

# Qualitative palette of 25 colours chosen greedily for the largest smallest CIELAB distance (ΔE76 ≥ 32)
# at lightness 30–72 (readable on white): up to 25 mechanisms stay distinct. Registry order assigns them,
# so a mechanism has the same colour on every page (tests/test_curator_ui.py checks the distances).
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#0000ff", "#ff00ee", "#bbaa88", "#bbaa00",
           "#ff4499", "#005544", "#773333", "#0055ee", "#555500", "#00bb99", "#ff8888", "#8800aa", "#bb7733",
           "#ff77ee", "#66bbcc", "#cc99bb", "#881166", "#0088ff", "#99bb66", "#554466")
# Axis titles with units for the error metrics (dplens.core.analysis.metrics.METRICS keys); errors are in records.
METRIC_AXIS_TITLES = {
    "mae": "mean absolute error per query (records)",
    "mse": "mean squared error per query (records²)",
    "rmse": "root mean squared error per query (records)",
    "scaled": "mean absolute error ÷ total records",
    "max": "largest absolute error over the queries (records)",
    "mre": "mean relative error per query (fraction)",
    "kld": "KL divergence of the histogram (nats)",
}
EPSILON_TITLE = "privacy budget ε"
TRUE_COLOUR = "#444444"
MAX_BARS = 4096       # 1-D charts sum adjacent bins beyond this many bars (display only)
AREA_ABOVE_BARS = 512  # above this many bins the counts are drawn as a stepped area, not as bars
MAX_SIDE_2D = 512     # 2-D heatmaps sum cells beyond this many per side (display only)
MAX_HANDLES_SIDE = 100  # selectable heatmaps: at most this many invisible handle points per side
ENVELOPE = "lower envelope"


def mechanism_colour(name: str) -> str:
    """The mechanism's colour on every page: its registry position in PALETTE (a stable digest otherwise).

    >>> mechanism_colour("identity")
    '#1f77b4'
    """
    names = list(MECHANISMS)
    index = names.index(name) if name in names else int(hashlib.sha1(name.encode()).hexdigest(), 16)
    return PALETTE[index % len(PALETTE)]


def _display_factor(size: int) -> int:
    """Cells summed per displayed heatmap cell along an axis of ``size`` cells (as ``downsample`` does)."""
    return max(1, -(-size // MAX_SIDE_2D))


def heatmap_box_cells(box: dict, shape: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """A box selected on a 2-D ``histogram_figure`` → ((first row, last row), (first col, last col)).

    The box is in axis units (plotly's ``{"x": [x0, x1], "y": [y0, y1]}``, either order: the row axis
    is reversed). Displayed cell j stands for the cells j·k … j·k + k − 1 and is centred at j·k, so the
    rectangle is every displayed cell whose centre lies in the box, clipped to the grid; None if none.

    >>> heatmap_box_cells({"x": [0.6, 2.2], "y": [3.4, 1.5]}, (4, 5))
    ((2, 3), (1, 2))
    >>> heatmap_box_cells({"x": [-9, 1500], "y": [510, 900]}, (1000, 1000))  # 2 cells per display cell
    ((510, 901), (0, 999))
    """
    spans = []
    for (a, b), size in zip((box["y"][:2], box["x"][:2]), shape, strict=True):
        k = _display_factor(size)
        lo, hi = sorted((a, b))
        first, last = max(0, math.ceil(lo / k)), min(-(-size // k) - 1, math.floor(hi / k))
        if first > last:
            return None
        spans.append((first * k, min(size - 1, last * k + k - 1)))
    return spans[0], spans[1]


def data_extent(vector: np.ndarray, margin: float = 0.05) -> tuple[float, float] | None:
    """The x-range (bin index) holding every non-zero bin, padded by ``margin`` of its width; None if all zero.

    >>> data_extent(np.r_[np.zeros(10), [1, 2], np.zeros(88)])
    (9.5, 12.5)
    """
    nonzero = np.flatnonzero(np.asarray(vector) != 0)
    if nonzero.size == 0:
        return None
    first, last = int(nonzero[0]), int(nonzero[-1])
    pad = max(1.0, margin * (last - first + 1))
    return first - pad + 0.5, last + pad + 0.5


def _apply_view(fig: go.Figure, truth: np.ndarray, *, log_y: bool, zoom: bool) -> str:
    """Set a 1-D chart's log count axis and zoom onto the bins holding data; the title suffix naming the zoom."""
    fig.update_layout(yaxis_type="log" if log_y else "linear")
    extent = data_extent(truth) if zoom else None
    if extent is None or (extent[1] - extent[0]) >= np.size(truth):
        return ""
    fig.update_layout(xaxis_range=list(extent))
    return f", zoomed to bins {max(0, int(extent[0] + 0.5)):,}–{int(extent[1] - 0.5):,}"


def _log_colour(z: np.ndarray) -> tuple[np.ndarray, dict]:
    """log10(1 + count) for the colours (negatives of a noisy release shown as 0) and count-valued ticks."""
    shown = np.log10(1 + np.clip(z, 0, None))
    top = int(np.ceil(max(float(shown.max()), 1.0)))
    ticks = [0, *range(1, top + 1)]
    return shown, {"title": "count (log)", "tickvals": [np.log10(1 + (0 if t == 0 else 10**t)) for t in ticks],
                   "ticktext": ["0"] + [f"{10**t:,}" for t in ticks[1:]]}


def histogram_figure(hist: Histogram, estimate: np.ndarray | None = None, label: str = "released",
                     mechanism: str | None = None, *, source: Source, selectable: bool = False,
                     log_y: bool = False, zoom: bool = False, log_colour: bool = False) -> go.Figure:
    """Bars (a stepped area above AREA_ABOVE_BARS bins) of the histogram's values (1-D) or a heatmap (2-D); a
    released estimate is overlaid as a line (2-D: shown instead).

    ``source`` names the values (true counts, a DP proxy's, public or released ones: ``ui.value_sources``) in the
    legend, title and tooltip.

    Large histograms are summed into at most MAX_BARS bars (MAX_SIDE_2D heatmap cells per side) for
    display; the title says so. ``selectable`` (2-D) makes a drag select a box: heatmaps emit no selection
    events, so invisible handle points on a lattice of cell centres carry it (see heatmap_box_cells).
    ``log_y`` (1-D) puts the counts on a log axis, ``zoom`` (1-D) shows only the span holding non-zero
    bins, and ``log_colour`` (2-D) colours by log10(1 + count) so one huge cell does not flatten the map.
    """
    if len(hist.domain.shape) == 2:
        z = hist.counts if estimate is None else np.asarray(estimate).reshape(hist.domain.shape)
        z, k_cols = downsample(z, MAX_SIDE_2D)
        z, k_rows = downsample(z.T, MAX_SIDE_2D)
        note = "" if k_rows == k_cols == 1 else f", cells summed {k_rows}×{k_cols} for display"
        colour, colourbar = (z.T, {"title": "count (records)"}) if not log_colour else _log_colour(z.T)
        shown = source.value if estimate is None else f"{label}: count"
        fig = go.Figure(go.Heatmap(z=colour, x=np.arange(z.shape[0]) * k_cols, y=np.arange(z.shape[1]) * k_rows,
                                   customdata=z.T, colorscale="Viridis", colorbar=colourbar,
                                   hovertemplate=f"row %{{y}}, col %{{x}}<br>{shown} %{{customdata:,.4g}}"
                                                 "<extra></extra>"))
        fig.update_layout(title=f"{hist.name} ({source.values if estimate is None else label}{note})",
                          xaxis_title="column (cell index)", yaxis_title="row (cell index)",
                          yaxis={"autorange": "reversed"})
        if selectable:
            xs, ys = (np.arange(side)[::-(-side // MAX_HANDLES_SIDE)] * k for side, k in
                      ((z.shape[0], k_cols), (z.shape[1], k_rows)))
            gx, gy = np.meshgrid(xs, ys)
            invisible = {"marker": {"opacity": 0}}
            fig.add_trace(go.Scatter(x=gx.ravel(), y=gy.ravel(), mode="markers", marker={"opacity": 0},
                                     selected=invisible, unselected=invisible, hoverinfo="none",
                                     showlegend=False, name="select"))
            # pin the axes to the heatmap's extent (autorange pads around markers); a box visible on Viridis
            fig.update_layout(xaxis_range=[-k_cols / 2, (z.shape[0] - 0.5) * k_cols],
                              yaxis_range=[(z.shape[1] - 0.5) * k_rows, -k_rows / 2], yaxis_autorange=False,
                              newselection_line={"color": "white", "width": 2}, dragmode="select")
    else:
        y, k = downsample(hist.vector, MAX_BARS)
        x = np.arange(y.size) * k
        if y.size <= AREA_ABOVE_BARS:
            truth = go.Bar(x=x, y=y, name=source.values, marker_color=TRUE_COLOUR, opacity=0.6)
        else:  # one path instead of thousands of bar shapes: a browser draws it in a fraction of the time
            truth = go.Scatter(x=x, y=y, name=source.values, mode="lines", line={"width": 0, "shape": "hvh"},
                               fill="tozeroy", fillcolor=TRUE_COLOUR, opacity=0.6)
        fig = go.Figure(truth)
        if estimate is not None:
            fig.add_trace(go.Scatter(x=x, y=downsample(np.asarray(estimate, dtype=float).ravel(), MAX_BARS)[0],
                                     name=label, mode="lines", line={"width": 1, "color": mechanism_colour(
                                         mechanism) if mechanism else None}))
        title = hist.name if k == 1 else f"{hist.name} (bins summed in groups of {k:,} for display)"
        fig.update_layout(title=title + _apply_view(fig, hist.vector, log_y=log_y, zoom=zoom),
                          xaxis_title="bin (index)", yaxis_title="count (records)", bargap=0,
                          legend={"orientation": "h", "y": 1.02, "x": 1, "xanchor": "right", "yanchor": "bottom"})
    fig.update_layout(height=340, margin={"l": 40, "r": 10, "t": 40, "b": 40})
    return fig


def _words(name: str) -> str:
    return REGISTRY[name].summary if name in MECHANISMS else ""


def mechanism_label(name: str) -> str:
    """How a picker lists a mechanism: its name and its one-line description from the registry.

    >>> mechanism_label("identity")
    'identity — Noise on every count: the baseline the others are measured against.'
    """
    return f"{name} — {REGISTRY[name].summary}" if name in REGISTRY else name


def mechanism_words(names) -> str:
    """The chart's legend in words: each mechanism's one-line description from the registry.

    >>> mechanism_words(["identity"]).startswith("**identity**: ")
    True
    """
    return " · ".join(f"**{n}**: {REGISTRY[n].summary}" for n in names if n in MECHANISMS)


def error_figure(summary, metric: str, *, log_x: bool = True, log_y: bool = True,
                 envelope: bool = False, x_title: str = "epsilon",
                 point_labels: dict[float, str] | None = None,
                 tick_labels: dict[float, str] | None = None) -> go.Figure:
    """Error vs epsilon per mechanism: mean line, 2.5–97.5 % band over trials, analytic curve dotted.

    ``envelope`` adds the DPComp lower envelope: the best mean error at each epsilon (legend group
    ``ENVELOPE``; its hover names the winning mechanism). ``point_labels`` names each ε point in the unit people
    read (a zCDP page's ρ) in the hovers, ``tick_labels`` on the axis ticks; the points stay at their ε.
    """
    fig = go.Figure()
    labels = point_labels or {}

    def named(values) -> np.ndarray:
        return np.array([labels.get(float(v), f"ε={float(v):g}") for v in values], dtype=object)

    rows = summary[summary["metric"] == metric]
    for name, part in rows.groupby("mechanism", sort=False):
        part = part.sort_values("epsilon")
        colour = mechanism_colour(name)
        fig.add_trace(go.Scatter(x=np.r_[part.epsilon, part.epsilon[::-1]], y=np.r_[part.high, part.low[::-1]],
                                 fill="toself", fillcolor=colour, opacity=0.15, line={"width": 0}, mode="lines",
                                 hoverinfo="skip", showlegend=False, legendgroup=name))
        fig.add_trace(go.Scatter(x=part.epsilon, y=part["mean"], name=name, mode="lines+markers",
                                 line={"color": colour}, legendgroup=name,
                                 customdata=np.c_[part.low, part.high, named(part.epsilon)],
                                 hovertemplate=f"{name}: {_words(name)}<br>%{{customdata[2]}}<br>mean=%{{y:.4g}}"
                                               "<br>95% band %{customdata[0]:.4g}–%{customdata[1]:.4g}"))
        if part["expected"].notna().any():
            fig.add_trace(go.Scatter(x=part.epsilon, y=part["expected"], name=f"{name} (analytic)",
                                     mode="lines", line={"color": colour, "dash": "dot"}, legendgroup=name))
    if envelope and not rows.empty:
        best = rows.loc[rows.groupby("epsilon")["mean"].idxmin()].sort_values("epsilon")
        fig.add_trace(go.Scatter(x=best.epsilon, y=best["mean"], name=ENVELOPE, mode="lines",
                                 line={"color": "black", "width": 5}, opacity=0.35, legendgroup=ENVELOPE,
                                 customdata=np.c_[best.mechanism, named(best.epsilon)],
                                 hovertemplate="best at %{customdata[1]}: %{customdata[0]}<br>%{y:.4g}<extra></extra>"))
    fig.update_layout(xaxis_title=EPSILON_TITLE if x_title == "epsilon" else x_title,
                      yaxis_title=METRIC_AXIS_TITLES.get(metric, metric), height=460,
                      xaxis_type="log" if log_x else "linear", yaxis_type="log" if log_y else "linear",
                      margin={"l": 50, "r": 10, "t": 30, "b": 40}, legend={"orientation": "h", "y": -0.2})
    if tick_labels:  # ticks at the sweep's points, written in the page's unit
        ticks = sorted(tick_labels)
        fig.update_xaxes(tickvals=ticks, ticktext=[tick_labels[t] for t in ticks])
    return fig


def line_figure(x, series: dict, *, x_title: str, y_title: str, log_x: bool = False, log_y: bool = False,
                shape: str = "linear", height: int = 360, levels: dict | None = None,
                colours: dict | None = None) -> go.Figure:
    """One line per entry of ``series`` (name -> y values) over a shared x; ``shape="hv"`` for steps.

    ``levels`` (name -> y) adds dotted horizontal reference lines as legend entries (works on log axes,
    where hline annotations are misplaced). ``colours`` (name -> colour) pins a series to a colour,
    e.g. ``mechanism_colour`` so a mechanism looks the same on every page.
    """
    fig = go.Figure()
    for index, (name, y) in enumerate(series.items()):
        fig.add_trace(go.Scatter(x=x, y=y, name=name, mode="lines+markers" if len(x) <= 40 else "lines",
                                 line={"color": (colours or {}).get(name, PALETTE[index % len(PALETTE)]),
                                       "shape": shape}))
    for index, (name, level) in enumerate((levels or {}).items()):
        fig.add_trace(go.Scatter(x=[min(x), max(x)], y=[level, level], name=name, mode="lines",
                                 line={"color": TRUE_COLOUR, "dash": ("dot", "dash")[index % 2], "width": 1}))
    fig.update_layout(xaxis_title=x_title, yaxis_title=y_title, height=height,
                      xaxis_type="log" if log_x else "linear", yaxis_type="log" if log_y else "linear",
                      margin={"l": 50, "r": 10, "t": 30, "b": 40}, legend={"orientation": "h", "y": -0.25})
    return fig


def runtime_figure(summary) -> go.Figure:
    """Mean seconds per run per mechanism (log scale), in the mechanism colours."""
    per = summary.groupby("mechanism", sort=False)["seconds"].mean().sort_values()
    fig = go.Figure(go.Bar(x=per.index, y=per.values, marker_color=[mechanism_colour(m) for m in per.index],
                           hovertemplate="%{x}: %{y:.3g} s per run<extra></extra>"))
    fig.update_layout(yaxis_type="log", yaxis_title="seconds per run", height=300,
                      margin={"l": 50, "r": 10, "t": 30, "b": 40})
    return fig


def per_bin_figure(labels: list[str], errors: dict[str, np.ndarray], bins_per_bucket: np.ndarray, *,
                   source: Source) -> go.Figure:
    """Grouped bars: mean |error| per bin for each bucket of the bins' values (the small-bin view), per mechanism;
    ``source`` names those values (true counts, or a DP proxy's or public ones)."""
    names = [f"{label}<br>({count:,} bins)" for label, count in zip(labels, bins_per_bucket, strict=True)]
    fig = go.Figure([go.Bar(x=names, y=values, name=name, marker_color=mechanism_colour(name))
                     for name, values in errors.items()])
    fig.update_layout(barmode="group", xaxis_title=f"{source.value} of the bin (records)",
                      yaxis_title="mean absolute error per bin (records)",
                      yaxis_type="log", height=360, margin={"l": 50, "r": 10, "t": 30, "b": 40},
                      legend={"orientation": "h", "y": -0.3})
    return fig


def workload_figure(index: np.ndarray, rows: np.ndarray, column_group: int) -> go.Figure:
    """Heatmap of sampled rows of W (columns averaged in groups of ``column_group`` for display)."""
    fig = go.Figure(go.Heatmap(z=rows, x=np.arange(rows.shape[1]) * column_group, y=[str(i) for i in index],
                               colorscale="Blues", colorbar={"title": "weight"},
                               hovertemplate="query %{y}<br>cell %{x}<br>weight %{z:.3g}<extra></extra>"))
    fig.update_layout(xaxis_title="cell", yaxis_title="query (row of W)", yaxis={"autorange": "reversed",
                      "type": "category"}, height=360, margin={"l": 60, "r": 10, "t": 30, "b": 40})
    return fig


def compared_name(source: Source, *, answers: bool = False) -> str:
    """What a chart calls the values a release is drawn against, from their source (``ui.value_sources``).

    >>> from dplens.ui.value_sources import SOURCES
    >>> compared_name(SOURCES["true"]), compared_name(SOURCES["released"], answers=True)
    ('true counts (curator only)', 'answers on the released values')
    """
    name = f"answers on the {source.values}" if answers else source.values
    return f"{name} (curator only)" if source.private else name


def interval_figure(x: np.ndarray, truth: np.ndarray, released: np.ndarray, low: np.ndarray | None,
                    high: np.ndarray | None, *, mechanism: str, x_title: str, y_title: str, source: Source,
                    answers: bool = False, bars: bool = False, log_y: bool = False,
                    zoom: bool = False) -> go.Figure:
    """The values released from (bars or markers; ``source`` names them, ``answers``: the workload's answers on
    them) with released values and their 95 % interval (error bars or a band).

    ``log_y`` and ``zoom`` (bars) as in ``histogram_figure``: a log count axis, the span of non-zero bins.
    """
    colour = mechanism_colour(mechanism)
    fig = go.Figure()
    name = compared_name(source, answers=answers)
    if bars:
        fig.add_trace(go.Bar(x=x, y=truth, name=name, marker_color=TRUE_COLOUR, opacity=0.5))
    else:
        fig.add_trace(go.Scatter(x=x, y=truth, name=name, mode="markers",
                                 marker={"color": TRUE_COLOUR, "symbol": "x"}))
    if low is not None and bars:
        fig.add_trace(go.Scatter(x=np.r_[x, x[::-1]], y=np.r_[released + high, (released + low)[::-1]],
                                 fill="toself", fillcolor=colour, opacity=0.2, line={"width": 0},
                                 name="95 % interval", hoverinfo="skip"))
    error_y = None if low is None or bars else {"type": "data", "symmetric": False, "array": high,
                                                 "arrayminus": -low, "color": colour}
    fig.add_trace(go.Scatter(x=x, y=released, name=f"released ({mechanism})", error_y=error_y,
                             mode="lines" if bars else "markers", line={"color": colour, "width": 1}))
    fig.update_layout(xaxis_title=x_title, yaxis_title=y_title, height=360, bargap=0,
                      margin={"l": 50, "r": 10, "t": 30, "b": 40}, legend={"orientation": "h", "y": -0.25})
    zoomed = _apply_view(fig, truth, log_y=log_y, zoom=zoom and bars)
    if zoomed:
        fig.update_layout(title=zoomed.lstrip(", ").capitalize(), margin={"t": 40})
    return fig


def error_band_figure(truth: np.ndarray, error: np.ndarray, low: np.ndarray | None, high: np.ndarray | None, *,
                      mechanism: str, source: Source) -> go.Figure:
    """Per-bin error against the value released from (the small-bin view; ``source`` names it: a true count, or a
    loaded export's released value), over the band of 95 % error ranges."""
    order = np.argsort(truth, kind="stable")
    colour = mechanism_colour(mechanism)
    fig = go.Figure()
    if low is not None and high is not None:
        fig.add_trace(go.Scatter(x=np.r_[truth[order], truth[order][::-1]], y=np.r_[high[order], low[order][::-1]],
                                 fill="toself", fillcolor=colour, opacity=0.2, line={"width": 0},
                                 name="95 % range of the error", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=truth, y=error, mode="markers", name=f"released − {source.value} ({mechanism})",
                             marker={"color": colour, "size": 4}))
    fig.update_layout(xaxis_title=f"{source.value} of the bin (records)",
                      yaxis_title=f"released − {source.value} (records)",
                      height=320,
                      margin={"l": 50, "r": 10, "t": 30, "b": 40}, legend={"orientation": "h", "y": -0.3})
    return fig
