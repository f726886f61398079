"""The report of a reproduction: plotly figure specs as plain dicts (core never imports plotly), CSV files of its
tables, verdicts and readings, and one self-contained HTML page."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from dplens.core.papers.reproduction import (
    Reproduction,
    reading_table,
    verdict_table,
)
from dplens.core.papers.verdicts import (
    MIN_TRIALS,
)

DASHES = ("solid", "dash", "dot", "dashdot", "longdash")


def _figure(traces: list[dict], title: str, x_title: str, y_title: str, *, log_x: bool = False,
            log_y: bool = True, bar: bool = False) -> dict:
    """A plotly figure as a plain dict (core never imports plotly; pages wrap it in go.Figure)."""
    axis = lambda text, log: {"title": {"text": text}, **({"type": "log"} if log else {})}  # noqa: E731
    layout = {"title": {"text": title}, "xaxis": axis(x_title, log_x), "yaxis": axis(y_title, log_y),
              "height": 420, "legend": {"orientation": "h", "y": -0.25}}
    return {"data": traces, "layout": layout | ({"barmode": "group"} if bar else {})}


def _traces(table: pd.DataFrame, x: str, *, dash_by: str | None = None) -> list[dict]:
    """One line per mechanism (and per ``dash_by`` value) of the trial means of ``value`` against ``x``."""
    keys = ["mechanism"] + ([dash_by] if dash_by else [])
    means = table.groupby([*keys, x], sort=False).value.mean().reset_index()
    dashes = {v: DASHES[i % len(DASHES)] for i, v in enumerate(means[dash_by].unique())} if dash_by else {}
    traces = []
    for key, part in means.groupby(keys, sort=False):
        mechanism, *rest = key
        name = mechanism + (f", {dash_by} = {rest[0]:g}" if dash_by else "")
        traces.append({"type": "scatter", "mode": "lines+markers", "name": name, "x": part[x].tolist(),
                       "y": part.value.tolist(), "line": {"dash": dashes.get(rest[0], "solid") if rest else "solid"}})
    return traces


def figures(reproduction: Reproduction) -> list[dict]:
    """The reproduction's figures as plotly figure dicts (plain data; render with plotly or st.plotly_chart)."""
    t = reproduction.tables
    if reproduction.name == "wda":
        errors = t["errors"]
        errors = errors[errors.dataset == errors.dataset.iloc[0]]  # the first dataset; the others are in the CSV
        middle = 1.0 if 1.0 in set(errors.epsilon) else errors.epsilon.iloc[0]
        low_p = errors.p.min()
        return [_figure(_traces(errors[errors.epsilon == middle], "p"),
                        f"WDA: average L1 error by hot-item probability p (ε = {middle:g})",
                        "p (probability a query includes the hot item)", "average L1 error per query"),
                _figure(_traces(errors[errors.p == low_p], "epsilon"), f"WDA: average L1 error by ε (p = {low_p:g})",
                        "ε", "average L1 error per query", log_x=True)]
    if reproduction.name == "om":
        errors = t["errors"]
        out = [_figure(_traces(errors[errors.tau == tau], "epsilon"),
                       f"OM paper Fig. 1: average squared error per query, τ = {tau:g} (OM and Identity overlap)",
                       "ε", "average squared error per query") for tau in errors.tau.unique()]
        sizes = t.get("sizes")
        for axis in ("m", "n") if sizes is not None else ():
            part = sizes[sizes.sweep.str.startswith(f"by {axis}")]  # type: ignore[index, union-attr]  # not None here
            if len(part):
                out.append(_figure(_traces(part, axis, dash_by="tau" if "tau" in part else None),
                                   f"OM paper Fig. {2 if axis == 'm' else 3}: exact per-query MSE × ε² by {axis}", axis,
                                   "expected squared error per query × ε²"))

        return out
    if reproduction.name == "om-times":
        times = t["times"]
        return [_figure(_traces(times[times.sweep.str.startswith(f"by {axis}")], axis, dash_by="tau"),
                        f"OM paper Fig. {number}: optimisation CPU seconds by {axis} (mean of the repetitions; "
                        "mm-opt stands in for MM)", axis, "CPU seconds") for axis, number in (("m", 4), ("n", 5))]
    if reproduction.name == "sreb-gca":
        errors, out = t["errors"], []
        for data in errors.dataset.unique():
            for metric, x_title in (("MRE of bins with count k", "true bin count k"),
                                    ("range MRE by width", "window width (bins)")):
                part = errors[(errors.dataset == data) & (errors.metric == metric)]
                out.append(_figure(_traces(part, "x", dash_by="epsilon"), f"{metric} — {data.split(' (')[0]}",
                                   x_title, metric))
        classes = errors[errors.metric == "MRE by count class"]
        for data in classes.dataset.unique():  # small → large bins: "no detriment to large bins" is the last group
            part = classes[classes.dataset == data].assign(
                label=lambda d: d.bins + ", ε = " + d.epsilon.map("{:g}".format))
            means = part.groupby(["mechanism", "label"], sort=False).value.mean().reset_index()
            out.append(_figure([{"type": "bar", "name": m, "x": g.label.tolist(), "y": g.value.tolist()}
                                for m, g in means.groupby("mechanism", sort=False)],
                               f"MRE by bin count class — {data.split(' (')[0]}", "true count class, ε", "MRE",
                               bar=True))
        kld = errors[errors.metric.str.startswith("KLD")].assign(
            label=lambda d: d.dataset.str.split(" (", regex=False).str[0] + ", ε = " + d.epsilon.map("{:g}".format))
        means = kld.groupby(["mechanism", "label"], sort=False).value.mean().reset_index()
        out.append(_figure([{"type": "bar", "name": m, "x": part.label.tolist(), "y": part.value.tolist()}
                            for m, part in means.groupby("mechanism", sort=False)],
                           "KLD (released counts floored at κ = 1)", "dataset, ε", "KLD", bar=True))
        return out
    if reproduction.name == "zhao":
        return _zhao_figures(t)
    interval = t["interval"][t["interval"].statistic == "average"]
    traces = [{"type": "scatter", "mode": "lines+markers", "name": name, "x": part.alpha.tolist(),
               "y": part.value.tolist()} for name, part in interval.groupby("normalisation", sort=False)]
    paper = interval[interval.normalisation == "public n"]
    traces.append({"type": "scatter", "mode": "lines+markers", "name": "paper (Table 2)", "x": paper.alpha.tolist(),
                   "y": paper.paper.tolist(), "line": {"dash": "dot"}})
    maxima = t["max_query"].assign(label=lambda d: "σ = " + d.sigma + ", n = " + d.n.map("{:,}".format))
    bars = [{"type": "bar", "name": m, "x": part.label.tolist(), "y": part.value.tolist()}
            for m, part in maxima.groupby("mechanism", sort=False)]
    paper_bars = maxima.dropna(subset=["paper"]).drop_duplicates("label")
    bars.append({"type": "bar", "name": "paper (literal)", "x": paper_bars.label.tolist(),
                 "y": paper_bars.paper.tolist()})
    return [_figure(traces, "Xiao et al. Table 2: average interval error by α", "α",
                    "average |error| (fraction of n)", log_x=True),
            _figure(bars, "Max query: P(output in [max−4, max]) — the literal mechanism is NOT differentially private",
                    "data", "probability", log_y=False, bar=True)]


def _zhao_figures(t: dict[str, pd.DataFrame]) -> list[dict]:
    posterior = t["table3"]
    bars = [{"type": "bar", "name": f"ε = {e:g}", "x": part.world.tolist(), "y": part.value.tolist()}
            for e, part in posterior.groupby("epsilon", sort=False)]
    summary_table = t["search_summary"]  # the same runs (those that stopped) as the verdict and the findings
    search_traces = [{"type": "scatter", "mode": "lines+markers", "name": method, "x": part.alpha.tolist(),
                      "y": part.value.tolist(),
                      "error_y": {"type": "data", "symmetric": False,
                                  "array": (part.high - part.value).fillna(0).tolist(),
                                  "arrayminus": (part.value - part.low).fillna(0).tolist()}}
                     for method, part in summary_table.groupby("method", sort=False)]
    keep = t["keep"]
    keep_traces = [{"type": "scatter", "mode": "markers", "name": name,
                    "x": [f"{a:g}→{b:g}" for a, b in zip(part.from_epsilon, part.to_epsilon, strict=True)],
                    "y": part.value.tolist()} for name, part in keep.groupby("construction", sort=False)]
    keep_traces.append({"type": "scatter", "mode": "lines", "name": "exact (ε_t/ε_{t+1})²", "line": {"dash": "dot"},
                        "x": [f"{a:g}→{b:g}"
                              for a, b in zip(keep.from_epsilon[::2], keep.to_epsilon[::2], strict=True)],
                        "y": keep.exact[::2].tolist()})
    return [_figure(bars, "Lee & Clifton Table 3: posterior over the worlds at γ = 2", "world", "β(ω)",
                    log_y=False, bar=True),
            _figure(keep_traces, "Koufogiannis: keep probability per step", "step", "P(keep)", log_y=False),
            _figure(search_traces, "Accuracy-first vs doubling vs theory: mean ex-post privacy loss of the runs that "
                    "stopped (95 % intervals; the table's numbers)", "RMSE target α", "ex-post privacy loss",
                    log_x=True)]


def _plotly_js() -> str:
    """A <script> with plotly.js: the copy bundled with the plotly package (found, not imported), else the CDN."""
    import importlib.util

    spec = importlib.util.find_spec("plotly")
    bundled = Path(spec.origin).parent / "package_data" / "plotly.min.js" if spec and spec.origin else None
    if bundled and bundled.is_file():
        return f"<script>{bundled.read_text(encoding='utf-8')}</script>"
    return '<script src="https://cdn.plot.ly/plotly-2.35.2.min.js"></script>'


def write(reproduction: Reproduction, output: str | Path) -> list[Path]:
    """Write ``<name>-<table>.csv`` per table and ``<name>.html`` (texts + figures); returns the paths.

    ``<name>-verdicts.csv`` holds the claim rows (claim, paper, literal reading, corrected, interval, verdict),
    the same rows as the page and the HTML; ``<name>-readings.csv`` the errata of the algorithms' steps.
    """
    import html

    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    paths = []
    extra = {"verdicts": verdict_table(reproduction), "readings": reading_table(reproduction)}
    for key, table in (reproduction.tables | extra).items():
        path = output / f"{reproduction.name}-{key}.csv"
        table.to_csv(path, index=False)
        paths.append(path)
    parts = [f"<h1>{html.escape(reproduction.title)}</h1>",
             f"<p><b>The paper claims:</b> {html.escape(reproduction.claim)}</p>",
             f"<p><b>We measure:</b> {html.escape(reproduction.measure)}</p>",
             f"<p><b>Data:</b> {html.escape(reproduction.data)}</p>",
             "<h2>Claims and verdicts</h2>",
             "<p>One row per claim: the paper's number, the literal reading of its text, the corrected reading "
             "(dplens), the 95 % interval the rule was applied to, and the verdict. A claim holds or fails only when "
             f"the interval clears its bound with at least {MIN_TRIALS} trials, else it is inconclusive; exact "
             "numbers are compared directly.</p>", extra["verdicts"].to_html(index=False, border=1),
             "<h2>Errata: claim, literal reading, corrected</h2>", extra["readings"].to_html(index=False, border=1),
             *([f"<p><b>Not reproduced:</b> {html.escape(reproduction.not_reproduced)}</p>"]
               if reproduction.not_reproduced else []),
             "<h2>Findings</h2>",
             "<ul>" + "".join(f"<li>{html.escape(f)}</li>" for f in reproduction.findings) + "</ul>"]
    for i, fig in enumerate(figures(reproduction)):
        parts.append(f"<div id='figure{i}'></div><script>Plotly.newPlot('figure{i}', "
                     f"{json.dumps(fig['data'])}, {json.dumps(fig['layout'])});</script>")
    path = output / f"{reproduction.name}.html"
    path.write_text("<!doctype html><html><head><meta charset='utf-8'><title>"
                    f"{html.escape(reproduction.title)}</title>{_plotly_js()}</head><body>{''.join(parts)}</body></html>",
                    encoding="utf-8")
    return [*paths, path]
