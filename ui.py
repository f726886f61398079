"""The only module importing both streamlit and core: session state, cached wrappers, shared widgets, charts."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import os
import shutil
import traceback
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from core.budget import Budget, BudgetExceededError, Ledger
from core.config import ReleaseSettings, SessionConfig
from core.datasets import DEFAULT_DATASET, SAMPLE_DATASETS, histogram_from_records, load_histogram
from core.domain import Histogram
from core.experiment import per_bin_errors, run_sweep
from core.mechanisms import MECHANISMS, NEIGHBOURING
from core.transform import coarsen, rescale
from core.views import downsample
from core.workloads import parse_workload

DPBENCH_DIR = Path(__file__).resolve().parent.parent / "shared" / "data" / "dpbench-1d"
DEFAULT_TOTAL_EPSILON = 5.0
SIMULATION_STREAM = 7_777
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd",
           "#e6550d", "#31a354", "#756bb1", "#636363")
TRUE_COLOUR = "#444444"
MAX_BARS = 4096       # 1-D charts sum adjacent bins beyond this many bars (display only)
MAX_SIDE_2D = 512     # 2-D heatmaps sum cells beyond this many per side (display only)
ENVELOPE = "lower envelope"
RESCALE_STREAM = 31_337  # seeds rescaling: default_rng([seed, RESCALE_STREAM])

# The navigation: (section, page script, title, material icon). app.py and the tests read this list.
PAGES: list[tuple[str, str, str, str]] = [
    ("Explore", "pages/data.py", "Data", ":material/bar_chart:"),
    ("Explore", "pages/workloads.py", "Workloads", ":material/functions:"),
    ("Explore", "pages/compare.py", "Compare", ":material/compare_arrows:"),
    ("Decide", "pages/choose_epsilon.py", "Choose epsilon", ":material/tune:"),
    ("Decide", "pages/gradual.py", "Gradual release", ":material/stairs:"),
    ("Publish", "pages/release.py", "Release", ":material/publish:"),
    ("Learn", "pages/learn.py", "Learn", ":material/school:"),
    ("Learn", "pages/papers.py", "Papers", ":material/menu_book:"),
]


# ----------------------------------------------------------------------------- state
def init_state() -> None:
    """Declare every session key with its default (idempotent; every page calls it)."""
    ss = st.session_state
    ss.setdefault("dataset_key", f"sample:{DEFAULT_DATASET}")
    ss.setdefault("uploads", {})                 # dataset_key -> Histogram (uploaded this session)
    ss.setdefault("seed", 0)
    ss.setdefault("ledger", Ledger(Budget(DEFAULT_TOTAL_EPSILON)))
    ss.setdefault("releases", [])                # history: dicts with mechanism, epsilon, loss, ...
    ss.setdefault("release_outputs", {})         # release number -> {"release", "settings", "seconds", "intervals"}
    ss.setdefault("release_counter", 0)
    ss.setdefault("workload_spec", None)         # None = default for the dataset's shape
    ss.setdefault("sweeps", {})                  # inputs key -> DataFrame (results survive page switches)
    ss.setdefault("flash_error", None)
    ss.setdefault("custom_workloads", {})        # workload_spec "custom:…" -> Workload (stacks, uploads, drawn)
    ss.setdefault("workload_parts", [])          # workloads page: the stack being composed
    ss.setdefault("gradual_walk", None)          # gradual page: {"dataset_key", "epsilons", "values"}
    ss.setdefault("gradual_search", None)        # gradual page: last accuracy-first + doubling result
    ss.setdefault("epsilon_choices", {})         # choose-epsilon page: simulated choices by inputs


def dataset_choices() -> dict[str, str]:
    """dataset_key -> label: samples, DPBench files when ../shared/data is present, uploads."""
    choices = {f"sample:{name}": f"{name} — {desc}" for name, (_, desc) in SAMPLE_DATASETS.items()}
    if DPBENCH_DIR.is_dir():
        for path in sorted(DPBENCH_DIR.glob("*.csv")):
            choices[f"dpbench:{path.stem}"] = f"{path.stem} — DPBench, 4096 bins"
    for key, hist in st.session_state.get("uploads", {}).items():
        kind = "derived" if key.startswith("derived:") else "uploaded"
        choices[key] = f"{hist.name} — {kind}, {hist.domain.size:,} cells"
    return choices


@st.cache_data(max_entries=32, show_spinner=False)
def _load_reference(key: str) -> Histogram:
    kind, _, name = key.partition(":")
    if kind == "sample":
        return load_histogram(name)
    if kind == "dpbench":
        return load_histogram(str(DPBENCH_DIR / f"{name}.csv"), name=name)
    raise ValueError(f"unknown dataset {key!r}")


def histogram() -> Histogram:
    """The session's current histogram."""
    init_state()
    key = st.session_state.dataset_key
    uploads = st.session_state.uploads
    if key in uploads:
        return uploads[key]
    try:
        return _load_reference(key)
    except ValueError:
        st.session_state.dataset_key = f"sample:{DEFAULT_DATASET}"
        return _load_reference(st.session_state.dataset_key)


def add_upload(data: bytes, filename: str, *, column: str | None = None, bins: int | None = None,
               edges=None) -> Histogram:
    """Parse an upload (raw records when ``column`` is given), keep it in the session and select it."""
    if column:
        hist = histogram_from_records(data, column, bins=bins, edges=edges, name=Path(filename).stem)
    else:
        hist = load_histogram(data, filename=filename)
    key = f"upload:{hashlib.sha1(data).hexdigest()[:12]}:{column or ''}:{bins or ''}:{edges or ''}"
    st.session_state.uploads[key] = hist
    st.session_state.dataset_key = key
    return hist


def add_derived(hist: Histogram) -> Histogram:
    """Keep a derived histogram (rescaled, coarsened) as a session dataset and select it."""
    digest = hashlib.sha1(np.ascontiguousarray(hist.counts).tobytes() + hist.name.encode()).hexdigest()[:12]
    key = f"derived:{digest}"
    st.session_state.uploads[key] = hist
    st.session_state.dataset_key = key
    return hist


def derive_dataset(kind: str, value: int) -> None:
    """Button callback: rescale (seeded multinomial) or coarsen the current histogram into a session dataset."""
    try:
        hist = histogram()
        if kind == "rescale":
            add_derived(rescale(hist, int(value), np.random.default_rng([int(st.session_state.seed), RESCALE_STREAM])))
        else:
            add_derived(coarsen(hist, int(value)))
    except ValueError as err:
        st.session_state.flash_error = str(err)


def set_workload(w, label: str) -> str:
    """Select a workload object that no spec string describes (stack, uploaded matrix, drawn range)."""
    init_state()
    key = f"custom:{len(st.session_state.custom_workloads) + 1}:{label}"
    st.session_state.custom_workloads[key] = w
    st.session_state.workload_spec = key
    return key


def default_workload_spec(hist: Histogram) -> str:
    return "random-range:m=2000,seed=0" if len(hist.domain.shape) == 1 else "marginals"


def workload_spec() -> str:
    init_state()
    return st.session_state.workload_spec or default_workload_spec(histogram())


@st.cache_resource(max_entries=16, show_spinner=False)
def _workload(spec: str, shape: tuple[int, ...]):
    return parse_workload(spec, shape)


def workload():
    """The session's workload for the current histogram (falls back to the default on mismatch)."""
    hist = histogram()
    custom = st.session_state.custom_workloads.get(workload_spec())
    if custom is not None and custom.shape[1] == hist.domain.size:
        return custom
    try:
        return _workload(workload_spec(), hist.domain.shape)
    except ValueError as err:
        st.session_state.flash_error = f"workload {workload_spec()!r} does not fit this dataset: {err}"
        st.session_state.workload_spec = None
        return _workload(default_workload_spec(hist), hist.domain.shape)


def ledger() -> Ledger:
    init_state()
    return st.session_state.ledger


def release_rng() -> np.random.Generator:
    """An independent, reproducible stream per release: default_rng([seed, release_counter])."""
    return np.random.default_rng([int(st.session_state.seed), int(st.session_state.release_counter)])


def charge(label: str, epsilon: float) -> bool:
    """Spend ``epsilon`` on the ledger (call only from a button callback). False + flash error on overspend."""
    try:
        st.session_state.ledger = ledger().spend(label, Budget(float(epsilon)))
    except BudgetExceededError as err:
        st.session_state.flash_error = str(err)
        return False
    st.session_state.release_counter += 1
    return True


def show_flash() -> None:
    err = st.session_state.get("flash_error")
    if err:
        st.error(err)
        st.session_state.flash_error = None


# ----------------------------------------------------------------------------- sweeps
def sweep(mechanisms: tuple[str, ...], epsilons: tuple[float, ...], trials: int, metrics: tuple[str, ...],
          progress=None):
    """Run (or fetch from the session) a sweep for the current dataset, workload and seed."""
    key = (st.session_state.dataset_key, workload_spec(), mechanisms, epsilons, trials, metrics,
           int(st.session_state.seed))
    cache = st.session_state.sweeps
    if key not in cache or cache[key].attrs.get("stopped"):
        interrupted: list[BaseException] = []

        def tick(done: int, total: int, name: str) -> None:
            # A click (e.g. Stop) during the run surfaces as a rerun exception inside the next
            # Streamlit call; hold it, let run_sweep return the partial results, then re-raise.
            if progress is not None and not interrupted:
                try:
                    progress(done, total, name)
                except BaseException as err:
                    if not _is_script_control(err):
                        raise
                    interrupted.append(err)

        cache[key] = run_sweep(histogram(), workload(), list(mechanisms), list(epsilons), trials,
                               seed=int(st.session_state.seed), metrics=list(metrics), progress=tick,
                               should_stop=lambda: bool(interrupted))
        while len(cache) > 8:
            cache.pop(next(iter(cache)))
        if interrupted:
            raise interrupted[0]
    return cache[key]


def cached_sweep(mechanisms, epsilons, trials, metrics):
    key = (st.session_state.dataset_key, workload_spec(), tuple(mechanisms), tuple(epsilons), trials,
           tuple(metrics), int(st.session_state.seed))
    return st.session_state.sweeps.get(key)


def per_bin(mechanisms: tuple[str, ...], epsilon: float, trials: int, *,
            compute: bool = True) -> dict[str, np.ndarray] | None:
    """Mean |error| per bin for each mechanism (replaying the sweep's trials), kept in the session.

    With ``compute=False`` only a stored result is returned (None when there is none).
    """
    key = ("per-bin", st.session_state.dataset_key, workload_spec(), mechanisms, epsilon, trials,
           int(st.session_state.seed))
    cache = st.session_state.sweeps
    if key not in cache:
        if not compute:
            return None
        hist, w, seed = histogram(), workload(), int(st.session_state.seed)
        errors = {name: per_bin_errors(hist, w, name, epsilon, trials, seed=seed) for name in mechanisms}
        cache[key] = {name: e for name, e in errors.items() if e is not None}
    return cache[key]


# ----------------------------------------------------------------------------- widgets and guard
def _set_total_budget() -> None:
    """Sidebar callback: the total is set once; after the first spend it never replaces the ledger
    (an edit and a release can arrive in the same round trip)."""
    if not ledger().spends:
        st.session_state.ledger = Ledger(Budget(float(st.session_state.sidebar_total_epsilon)))


def sidebar() -> None:
    """Shared sidebar: dataset, seed, total budget (fixed after the first spend), remaining budget."""
    init_state()
    with st.sidebar:
        choices = dataset_choices()
        keys = list(choices)
        current = st.session_state.dataset_key
        if current in keys:  # keep the widget in step when a page (upload, config) changes the dataset
            st.session_state.sidebar_dataset = current
        st.selectbox("Dataset", keys,
                     format_func=lambda k: choices[k], key="sidebar_dataset",
                     on_change=lambda: st.session_state.update(dataset_key=st.session_state.sidebar_dataset),
                     help="Built-in samples, DPBench histograms (when present) and your uploads.")
        st.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, key="seed",
                        help="Seeds the exploration noise; change it to see different noise.")
        led = ledger()
        locked = bool(led.spends)
        st.number_input("Total budget ε", min_value=0.01, max_value=100.0, value=float(led.total.epsilon),
                        step=0.5, key="sidebar_total_epsilon", disabled=locked,
                        on_change=_set_total_budget,
                        help="Set once per session; fixed after the first release.")
        remaining = led.remaining.epsilon
        st.metric("Budget remaining", f"ε = {remaining:.4g}",
                  help=f"Spent ε = {led.spent.epsilon:.4g} of {led.total.epsilon:.4g} in "
                       f"{len(led.spends)} release(s).")
        st.caption(f"Workload: `{workload_spec()}`  \nNeighbours: {NEIGHBOURING}")


def _is_script_control(err: BaseException) -> bool:
    """Streamlit's rerun/stop signals, which must propagate rather than be shown as errors."""
    return type(err).__name__ in ("RerunException", "StopException")


@contextlib.contextmanager
def guard():
    """Top-level guard: any exception becomes a friendly message with a details expander."""
    try:
        yield
    except Exception as err:  # noqa: BLE001 - the user must never see a raw traceback
        if _is_script_control(err):
            raise
        st.error(f"Something went wrong: {str(err).splitlines()[0] if str(err) else type(err).__name__}")
        with st.expander("Details"):
            st.code("".join(traceback.format_exception(err)), language="text")


def mechanism_colour(name: str) -> str:
    names = list(MECHANISMS)
    index = names.index(name) if name in names else abs(hash(name))
    return PALETTE[index % len(PALETTE)]


# ----------------------------------------------------------------------------- charts
def histogram_figure(hist: Histogram, estimate: np.ndarray | None = None, label: str = "released",
                     mechanism: str | None = None) -> go.Figure:
    """Bars of the true counts (1-D) or a heatmap (2-D); a released estimate is overlaid as a line.

    Large histograms are summed into at most MAX_BARS bars (MAX_CELLS_2D heatmap cells) for display;
    the title says so.
    """
    if len(hist.domain.shape) == 2:
        z = hist.counts if estimate is None else np.asarray(estimate).reshape(hist.domain.shape)
        z, k_cols = downsample(z, MAX_SIDE_2D)
        z, k_rows = downsample(z.T, MAX_SIDE_2D)
        note = "" if k_rows == k_cols == 1 else f", cells summed {k_rows}×{k_cols} for display"
        fig = go.Figure(go.Heatmap(z=z.T, x=np.arange(z.shape[0]) * k_cols, y=np.arange(z.shape[1]) * k_rows,
                                   colorscale="Viridis", colorbar={"title": "count"}))
        fig.update_layout(title=f"{hist.name} ({'true' if estimate is None else label}{note})",
                          yaxis={"autorange": "reversed"})
    else:
        y, k = downsample(hist.vector, MAX_BARS)
        x = np.arange(y.size) * k
        fig = go.Figure(go.Bar(x=x, y=y, name="true counts", marker_color=TRUE_COLOUR, opacity=0.6))
        if estimate is not None:
            fig.add_trace(go.Scatter(x=x, y=downsample(np.asarray(estimate, dtype=float).ravel(), MAX_BARS)[0],
                                     name=label, mode="lines", line={"width": 1, "color": mechanism_colour(
                                         mechanism) if mechanism else None}))
        title = hist.name if k == 1 else f"{hist.name} (bins summed in groups of {k:,} for display)"
        fig.update_layout(title=title, xaxis_title="bin", yaxis_title="count", bargap=0)
    fig.update_layout(height=340, margin={"l": 40, "r": 10, "t": 40, "b": 40})
    return fig


def error_figure(summary, metric: str, *, log_x: bool = True, log_y: bool = True,
                 envelope: bool = False) -> go.Figure:
    """Error vs epsilon per mechanism: mean line, 2.5–97.5 % band over trials, analytic curve dotted.

    ``envelope`` adds the DPComp lower envelope: the best mean error at each epsilon (legend group
    ``ENVELOPE``; its hover names the winning mechanism).
    """
    fig = go.Figure()
    rows = summary[summary["metric"] == metric]
    for name, part in rows.groupby("mechanism", sort=False):
        part = part.sort_values("epsilon")
        colour = mechanism_colour(name)
        fig.add_trace(go.Scatter(x=np.r_[part.epsilon, part.epsilon[::-1]], y=np.r_[part.high, part.low[::-1]],
                                 fill="toself", fillcolor=colour, opacity=0.15, line={"width": 0}, mode="lines",
                                 hoverinfo="skip", showlegend=False, legendgroup=name))
        fig.add_trace(go.Scatter(x=part.epsilon, y=part["mean"], name=name, mode="lines+markers",
                                 line={"color": colour}, legendgroup=name,
                                 customdata=np.c_[part.low, part.high],
                                 hovertemplate=f"{name}<br>ε=%{{x:g}}<br>mean=%{{y:.4g}}"
                                               "<br>95% band %{customdata[0]:.4g}–%{customdata[1]:.4g}"))
        if part["expected"].notna().any():
            fig.add_trace(go.Scatter(x=part.epsilon, y=part["expected"], name=f"{name} (analytic)",
                                     mode="lines", line={"color": colour, "dash": "dot"}, legendgroup=name))
    if envelope and not rows.empty:
        best = rows.loc[rows.groupby("epsilon")["mean"].idxmin()].sort_values("epsilon")
        fig.add_trace(go.Scatter(x=best.epsilon, y=best["mean"], name=ENVELOPE, mode="lines",
                                 line={"color": "black", "width": 5}, opacity=0.35, legendgroup=ENVELOPE,
                                 customdata=best.mechanism, hovertemplate="best at ε=%{x:g}: %{customdata}"
                                                                          "<br>%{y:.4g}<extra></extra>"))
    fig.update_layout(xaxis_title="epsilon", yaxis_title=metric, height=460,
                      xaxis_type="log" if log_x else "linear", yaxis_type="log" if log_y else "linear",
                      margin={"l": 50, "r": 10, "t": 30, "b": 40}, legend={"orientation": "h", "y": -0.2})
    return fig


def preview_release(epsilon: float) -> np.ndarray:
    """Identity release for display only (simulation stream; never charged, never exported)."""
    rng = np.random.default_rng([int(st.session_state.seed), SIMULATION_STREAM])
    hist = histogram()
    return MECHANISMS["identity"].run(hist.counts, _workload("total", hist.domain.shape), epsilon, rng).estimate


def simulation_rng(*stream: int) -> np.random.Generator:
    """Seeded stream for what-if simulations (never charged): default_rng([seed, SIMULATION_STREAM, ...])."""
    return np.random.default_rng([int(st.session_state.seed), SIMULATION_STREAM, *stream])


def line_figure(x, series: dict, *, x_title: str, y_title: str, log_x: bool = False, log_y: bool = False,
                shape: str = "linear", height: int = 360, levels: dict | None = None) -> go.Figure:
    """One line per entry of ``series`` (name -> y values) over a shared x; ``shape="hv"`` for steps.

    ``levels`` (name -> y) adds dotted horizontal reference lines as legend entries (works on log axes,
    where hline annotations are misplaced).
    """
    fig = go.Figure()
    for index, (name, y) in enumerate(series.items()):
        fig.add_trace(go.Scatter(x=x, y=y, name=name, mode="lines+markers" if len(x) <= 40 else "lines",
                                 line={"color": PALETTE[index % len(PALETTE)], "shape": shape}))
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


def per_bin_figure(labels: list[str], errors: dict[str, np.ndarray], bins_per_bucket: np.ndarray) -> go.Figure:
    """Grouped bars: mean |error| per bin for each true-count bucket (the small-bin view), per mechanism."""
    names = [f"{label}<br>({count:,} bins)" for label, count in zip(labels, bins_per_bucket, strict=True)]
    fig = go.Figure([go.Bar(x=names, y=values, name=name, marker_color=mechanism_colour(name))
                     for name, values in errors.items()])
    fig.update_layout(barmode="group", xaxis_title="true count of the bin", yaxis_title="mean |error| per bin",
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


# ----------------------------------------------------------------------------- release settings, chart export, config
def mechanism_settings(name: str, key: str, *, render: bool = True) -> dict[str, object]:
    """A widget per dataclass field of the mechanism; returns the settings changed from the default.

    Values are read back from the session, so a callback can call this with ``render=False`` and see
    what the user set in the same click. ``core.mechanisms.configure`` parses the text values.
    """
    mechanism = MECHANISMS[name]
    changed: dict[str, object] = {}
    for field in dataclasses.fields(mechanism):
        if field.name in ("name", "data_dependent"):
            continue
        default = getattr(mechanism, field.name)
        shown = default if isinstance(default, bool) else "" if default is None else str(default)
        widget_key = f"{key}_{name}_{field.name}"
        if render:  # default via the session, not value=, so a loaded config can set it (apply_config)
            st.session_state.setdefault(widget_key, shown)
            widget = st.checkbox if isinstance(default, bool) else st.text_input
            widget(field.name, key=widget_key,
                   help=f"`{field.name}`: {field.type}; default {default!r}. See the mechanism's docstring.")
        value = st.session_state.get(widget_key, shown)
        value = value.strip() if isinstance(value, str) else value
        if value != shown and value != "":
            changed[field.name] = value
    return changed


def _image_export_ready() -> bool:
    chromium = os.environ.get("BROWSER_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
    return importlib.util.find_spec("kaleido") is not None and chromium is not None


def _render_image(fig: go.Figure, fmt: str) -> bytes:
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
        cols[1].caption("PNG/SVG export needs `kaleido` and a Chromium browser on the server.")
        return
    for col, fmt, mime in ((cols[1], "png", "image/png"), (cols[2], "svg", "image/svg+xml")):
        col.download_button(f"Chart ({fmt.upper()})", functools.partial(_render_image, fig, fmt), f"{name}.{fmt}",
                            mime, key=f"{key}_{fmt}", on_click="ignore", help="Rendered by kaleido + Chromium (a few seconds).")


def interval_figure(x: np.ndarray, truth: np.ndarray, released: np.ndarray, low: np.ndarray | None,
                    high: np.ndarray | None, *, mechanism: str, x_title: str, y_title: str,
                    bars: bool = False) -> go.Figure:
    """Truth (bars or markers) with released values and their 95 % interval (error bars or a band)."""
    colour = mechanism_colour(mechanism)
    fig = go.Figure()
    if bars:
        fig.add_trace(go.Bar(x=x, y=truth, name="true (curator only)", marker_color=TRUE_COLOUR, opacity=0.5))
    else:
        fig.add_trace(go.Scatter(x=x, y=truth, name="true (curator only)", mode="markers",
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
    return fig


def error_band_figure(truth: np.ndarray, error: np.ndarray, low: np.ndarray | None, high: np.ndarray | None, *,
                      mechanism: str) -> go.Figure:
    """Per-bin error against the true count (the small-bin view), over the band of 95 % error ranges."""
    order = np.argsort(truth, kind="stable")
    colour = mechanism_colour(mechanism)
    fig = go.Figure()
    if low is not None:
        fig.add_trace(go.Scatter(x=np.r_[truth[order], truth[order][::-1]], y=np.r_[high[order], low[order][::-1]],
                                 fill="toself", fillcolor=colour, opacity=0.2, line={"width": 0},
                                 name="95 % range of the error", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=truth, y=error, mode="markers", name=f"released − true ({mechanism})",
                             marker={"color": colour, "size": 4}))
    fig.update_layout(xaxis_title="true count of the bin", yaxis_title="error", height=320,
                      margin={"l": 50, "r": 10, "t": 30, "b": 40}, legend={"orientation": "h", "y": -0.3})
    return fig


def session_config() -> SessionConfig:
    """The session's settings as a config: dataset, workload, last comparison's grid, seed, budget, release."""
    ss = st.session_state
    mechanisms: tuple[str, ...] = tuple(m for m in ("identity", "hb", "privelet", "uniform") if m in MECHANISMS)
    epsilons: tuple[float, ...] = tuple(float(f"{e:.4g}") for e in np.geomspace(0.01, 10, 10))
    for key in reversed(list(ss.get("sweeps", {}))):  # the latest comparison: sweep() keys are
        if key[0] != "per-bin":                        # (dataset, workload, mechanisms, epsilons, ...)
            mechanisms, epsilons = key[2], key[3]
            break
    name = ss.get("release_mechanism", "identity")
    settings = ss.get("release_settings", {}).get(name, {})
    release = ReleaseSettings(name, tuple((k, str(v)) for k, v in settings.items()),
                              float(ss.get("release_epsilon", 1.0)), ss.get("release_noise_path", "secure"))
    return SessionConfig(ss.dataset_key, ss.workload_spec, tuple(mechanisms), tuple(epsilons), int(ss.seed),
                         ledger().total.epsilon, release)


def apply_config(config: SessionConfig) -> list[str]:
    """Load a config into the session (call from a callback). Never resets or refunds the ledger.

    Returns notes on what could not be applied (e.g. an upload that is not in this session).
    """
    ss, notes = st.session_state, []
    if config.dataset in dataset_choices():
        ss.dataset_key = config.dataset
    else:
        notes.append(f"dataset {config.dataset!r} is not available here (uploads live only in their "
                     "session): upload it again, then reload the config")
    ss.workload_spec = config.workload
    ss.seed = config.seed
    led = ledger()
    if abs(led.total.epsilon - config.total_epsilon) <= 1e-12:
        pass
    elif led.spends:
        notes.append(f"the total budget stays ε = {led.total.epsilon:g}: it is fixed after the first release")
    elif not 0.01 <= config.total_epsilon <= 100:
        notes.append(f"total budget ε = {config.total_epsilon:g} is outside [0.01, 100]; kept ε = {led.total.epsilon:g}")
    else:
        ss.ledger = Ledger(Budget(config.total_epsilon))
        ss.sidebar_total_epsilon = config.total_epsilon
    ss.compare_mechanisms = list(config.mechanisms)
    lo, hi = config.epsilons[0], config.epsilons[-1]
    if len(config.epsilons) >= 2 and {lo, hi} <= {0.001, 0.01, 0.1, 1.0, 10.0, 100.0} and lo < hi:
        ss.compare_range, ss.compare_points = (lo, hi), len(config.epsilons)
    ss.session_config = config  # the full grid, for pages that can use an arbitrary one
    rel = config.release
    ss.release_mechanism, ss.release_noise_path = rel.mechanism, rel.noise_path
    ss.release_epsilon = min(max(rel.epsilon, 0.001), 100.0)  # the widget's range
    for key, value in rel.params:
        is_flag = isinstance(getattr(MECHANISMS[rel.mechanism], key, None), bool)
        ss[f"release_{rel.mechanism}_{key}"] = value.lower() == "true" if is_flag else value
    return notes
