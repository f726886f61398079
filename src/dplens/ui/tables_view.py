"""The Tables page's logic: load a table of records, choose attributes and marginals, compare, release.

A table's budget is ρ-zCDP in its own ledger, keyed by the records' fingerprint (the same store as the
histograms'; the Ledger page lists it). Its total is recorded at the first release, and can be changed
until then. Releases run, then charge (a refused or failed run charges nothing), then offer downloads.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from scipy import special

from dplens.core.analysis.experiment import SweepCache
from dplens.core.data import limits
from dplens.core.data.datasets import DATA_DIR
from dplens.core.data.domain import Domain
from dplens.core.mechanisms import parameter_ranges
from dplens.core.privacy.budget import Budget
from dplens.core.queries.marginals import MAX_MARGINAL_CELLS, MarginalWorkload
from dplens.core.registry import mechanism as registered
from dplens.core.registry import table_mechanisms
from dplens.core.release.kernel import (
    DEFAULT_TABLE_TOTAL,
    TABLE_DISPLAY_DELTA,
    TableRequest,
    table_metadata,
)
from dplens.core.release.kernel import release as kernel_release
from dplens.core.release.table_export import table_export_files
from dplens.core.release.table_export import table_marginals_frame as core_marginals_frame
from dplens.core.tables.compare import (
    BASELINE,
    SYNTH_TRIALS,
    baseline_scores,
    compare_note,
    compare_tables,
    evaluation_tvd,
    summarise_tables,
)
from dplens.core.tables.contract import INTERVAL_LEVEL
from dplens.core.tables.mechanisms import table_mechanism
from dplens.core.tables.progress import progress_text
from dplens.core.tables.records import (
    Table,
    load_table,
    parse_marginal_workload,
)
from dplens.core.tables.synthesis import rho_advice
from dplens.ui.charts import error_figure, mechanism_label
from dplens.ui.guard import plain
from dplens.ui.ledger import ledger_store

# a table's total until the curator records one (dplens.core.release.kernel)
TABLE_DEFAULT_RHO = DEFAULT_TABLE_TOTAL.rho
# ρ is also shown as ε at TABLE_DISPLAY_DELTA (Canonne–Kamath–Steinke conversion)
TABLE_RHO_CHOICES = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
_LEVEL = 0.95
SAMPLE_TABLE_NAME = "survey (built-in sample)"
_DATA_DIR = DATA_DIR  # the bundled samples: the repository's data/ or the copy a wheel carries
# What the page offers for missing values (empty, NA, null), and load_table's name for each choice.
MISSING_CHOICES = {"refuse the file": "refuse", "drop those rows": "drop", "make them a level": "level"}
_SLOW_SECONDS = 20.0       # synthesisers are estimated at this per run (OpenDP's MST on a few attributes)


def _levels_of(table: Table, name: str) -> list[str]:
    size = table.domain.sizes[table.domain.names.index(name)]
    return table.levels.get(name) or [str(c) for c in range(size)]


def load_table_upload() -> None:
    """File-uploader and missing-values callback: read the records (and the domain file, if given) into the session.

    The uploaded bytes are kept (``tables_upload_data``) so that changing the missing-values choice reloads them.
    """
    ss = st.session_state
    records, domain = ss.get("tables_upload"), ss.get("tables_domain_upload")
    if records is not None:
        ss.tables_upload_data = (records.name, records.getvalue(), domain.getvalue() if domain is not None else None)
    if ss.get("tables_upload_data") is None:
        return
    name, data, domain_data = ss.tables_upload_data
    try:
        table = load_table(data, domain_data,
                           missing=MISSING_CHOICES[ss.get("tables_missing", next(iter(MISSING_CHOICES)))])
    except ValueError as err:
        ss.flash_error = f"{plain(name)}: {str(err).splitlines()[0]}"
        return
    ss.table, ss.table_name = table, name
    ss.tables_attributes = list(table.domain.names)
    ss.pop("tables_results", None)
    ss.pop("tables_release", None)


def current_table() -> Table:
    """The uploaded table, or the built-in sample (data/survey.csv) until one is uploaded."""
    ss = st.session_state
    if ss.get("table") is None:
        ss.table, ss.table_name = _sample_table(), SAMPLE_TABLE_NAME
    names = list(ss.table.domain.names)
    chosen = ss.get("tables_attributes")
    # first visit, Streamlit dropped (or emptied) the widget's state on another page, or a stale selection: all
    if not chosen or any(name not in names for name in chosen):
        ss.tables_attributes = names
    return ss.table


@st.cache_resource(show_spinner=False)
def _sample_table() -> Table:
    return load_table(_DATA_DIR / "survey.csv", _DATA_DIR / "survey-domain.json")


def project_table(table: Table, attributes: list[str]) -> Table:
    """The table on the chosen attributes (same records and fingerprint: the ledger is the whole table's)."""
    if not attributes:
        raise ValueError("choose at least one attribute")
    domain = table.domain.project(tuple(attributes))  # refuses unknown or repeated attributes, naming them
    index = [table.domain.names.index(a) for a in attributes]
    return Table(domain, table.records[:, index], {a: table.levels[a] for a in attributes if a in table.levels},
                 table.notes, table.fingerprint, table.domain_declared)


def table_domain_frame(table: Table) -> pd.DataFrame:
    return pd.DataFrame({"attribute": list(table.domain.names), "levels": list(table.domain.sizes),
                         "first levels": [", ".join(_levels_of(table, n)[:6]) + (" …" if s > 6 else "")
                                          for n, s in zip(table.domain.names, table.domain.sizes, strict=True)]})


def table_feasibility(domain: Domain) -> pd.DataFrame:
    """Per k = 1, 2, 3: how many k-way marginals, their cells in all, the largest, and whether they can be built."""
    rows = []
    for k in range(1, min(3, len(domain.names)) + 1):
        sizes = [math.prod(domain.sizes_of(m)) for m in itertools.combinations(domain.names, k)]
        feasible = max(sizes) <= MAX_MARGINAL_CELLS
        rows.append({"k": k, "marginals": len(sizes), "cells in all": sum(sizes), "largest marginal": max(sizes),
                     "feasible": "yes" if feasible else f"no: a marginal over {MAX_MARGINAL_CELLS:,} cells"})
    return pd.DataFrame(rows)


def table_domain_size(domain: Domain) -> str:
    size = domain.size
    return f"{size:,}" if size < 10**9 else f"about 10^{math.log10(size):.1f}"


def table_workload(table: Table) -> MarginalWorkload:
    """The workload chosen on the page: all k-way marginals, or a typed list (``age+sex*2, race``)."""
    ss = st.session_state
    if ss.get("tables_workload_kind", "all k-way") == "all k-way":
        return MarginalWorkload.all_kway(table.domain, int(ss.get("tables_k", 2)))
    spec = "".join(str(ss.get("tables_custom", "")).split())
    if not spec:
        raise ValueError("list the marginals, e.g. age+sex, race (+ joins attributes, a comma separates marginals)")
    return parse_marginal_workload(f"marginals:{spec}", table.domain)


def table_evaluation(table: Table) -> MarginalWorkload:
    """The marginals synthetic data is scored on (they may lie outside the workload): the ones typed, e.g.
    ``age+income, race+sex+income``, else all k-way for the chosen k."""
    typed = st.session_state.get("tables_eval_custom", "").strip()
    if typed:
        chosen = parse_marginal_workload(f"marginals:{typed}", table.domain)
        return MarginalWorkload(table.domain, chosen.marginals)  # scored as marginals: weights and ranges dropped
    k = min(int(st.session_state.get("tables_eval_k", 2)), len(table.domain.names))
    return MarginalWorkload.all_kway(table.domain, k)


# ------------------------------------------------------------------------------------------------ the ledger

def _default_total() -> Budget:
    return DEFAULT_TABLE_TOTAL


def table_ledger(table: Table):
    return ledger_store().ledger(table.fingerprint, default_total=_default_total())


def set_table_total() -> None:
    """Number-input callback: record the table's total ρ (refused once it has a spend)."""
    ss, table = st.session_state, current_table()
    try:
        ledger_store().set_total(table.fingerprint, Budget.zcdp(float(ss.tables_total_rho), TABLE_DISPLAY_DELTA),
                                name=ss.get("table_name", "table"), workspace=ss.get("workspace_id"))
    except ValueError as err:
        ss.flash_error = f"Total budget not changed: {err}"


def table_budget_caption(table: Table) -> str:
    """The page's one budget line: this table's own ledger, in that ledger's unit (the sidebar shows no other on
    this page)."""
    led = table_ledger(table)
    if led.unit != "rho":
        return (f"Budget of this table (its own ledger, in ε): **remaining ε = {led.remaining.epsilon:.4g}** of "
                f"ε = {led.total.epsilon:g} (δ = {led.total.delta:g}); each release's ρ is charged as its ε at "
                f"δ = {TABLE_DISPLAY_DELTA:g}; {len(led.spends)} release(s).")
    return (f"Budget of this table (its own ledger, ρ-zCDP): **remaining ρ = {led.remaining.rho:.4g}** of "
            f"ρ = {led.total.rho:g} (ε = {led.remaining.epsilon:.3g} at δ = {led.total.delta:g}); "
            f"{len(led.spends)} release(s).")


# ------------------------------------------------------------------------------------------------ compare

TABLE_SYNTH_TRIALS = SYNTH_TRIALS  # the page's default runs per ρ for a synthesiser in Compare


TABLE_PROXY_RHO = 0.05  # the default spend on a table's DP proxy (MST's synthetic records)
TABLE_PROXY_MECHANISM = "mst"


def table_proxy() -> dict | None:
    """The current table's DP proxy, if one was made: {"records", "rho"} (synthetic records, all attributes)."""
    return st.session_state.get("table_proxies", {}).get(current_table().fingerprint)


def table_proxy_controls() -> None:
    """The "Make a DP proxy" popover: its ρ, and the button that makes it with a progress bar of MST's steps
    (then reruns, so that "Tune on" turns to it: ``tune_on_new_proxy``)."""
    st.number_input("ρ to spend on synthetic records", 0.001, 1.0, TABLE_PROXY_RHO, key="tables_proxy_rho",
                    help="Charged once to this table's ledger; every later comparison on them is free.")
    if st.button("Spend and make the proxy", key="tables_make_proxy"):
        bar = st.progress(0.0, text="making the proxy… (MST takes a minute or more)")
        make_table_proxy(progress=lambda fraction, text: bar.progress(min(fraction, 1.0), text=text))
        st.rerun()


def tune_on_new_proxy() -> None:
    """Before the "Tune on" choice is drawn: turn it to the DP proxy made on the last run."""
    if st.session_state.pop("tables_proxy_made", False):
        st.session_state.tables_tune_on = "proxy"


def make_table_proxy(progress=None) -> None:
    """MST's synthetic records of the whole table, released once through the kernel (charged to the table's
    ledger), kept as what Compare tunes on; later comparisons on them are post-processing. ``progress(fraction,
    text)`` as for a release (``release_table``)."""
    ss, table = st.session_state, current_table()
    rho = float(ss.get("tables_proxy_rho", TABLE_PROXY_RHO))
    try:
        mechanism = table_mechanism(TABLE_PROXY_MECHANISM, **table_settings(TABLE_PROXY_MECHANISM))
        work = MarginalWorkload.all_kway(table.domain, min(2, len(table.domain.names)))
        request = TableRequest(mechanism, rho, work, TABLE_DISPLAY_DELTA, domain_declared=table.domain_declared)
        published = kernel_release(request, table.records, store=ledger_store(), fingerprint=table.fingerprint,
                                         name=f"{ss.get('table_name', 'table')} (tuning proxy)",
                                         workspace=ss.get("workspace_id"), estimated_seconds=_SLOW_SECONDS,
                                         progress=_release_progress(mechanism, work, progress))
    except Exception as err:  # noqa: BLE001 - nothing published, nothing charged; one line for the curator
        ss.flash_error = f"No DP proxy made: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
        return
    ss.setdefault("table_proxies", {})[table.fingerprint] = {"records": published.release.records, "rho": rho}
    ss.tables_proxy_made = True  # "Tune on" is drawn already: it turns to the proxy on the next run


def tuning_table(table: Table) -> Table:
    """What Compare runs on: ``table`` (the chosen attributes of the private table), or the same attributes of its
    DP proxy when the curator chose to tune on it."""
    proxy = table_proxy()
    if st.session_state.get("tables_tune_on") != "proxy" or proxy is None:
        return table
    names = list(current_table().domain.names)
    return dataclasses.replace(table, records=proxy["records"][:, [names.index(a) for a in table.domain.names]])


def run_table_compare(table: Table, work: MarginalWorkload, names: list[str], rhos: list[float], trials: int,
                progress, synth_trials: int | None = None) -> pd.DataFrame:
    """Compare on the page: synthesisers run ``synth_trials`` times per ρ (default the page's), in parallel workers,
    with Compare's estimator settings (dplens.core.tables.compare.COMPARE_SETTINGS); the results say so (``note``).
    The table is the private one or its DP proxy (``tuning_table``)."""
    ss = st.session_state
    tuned = tuning_table(table)
    ss.tables_tuned_on = "proxy" if tuned is not table else "private"
    table = tuned
    cache = ss.setdefault("tables_cache", SweepCache(limit=512))
    synth_trials = TABLE_SYNTH_TRIALS if synth_trials is None else synth_trials
    df = compare_tables(table.records, work, names, rhos, trials=trials, synth_trials=synth_trials,
                        seed=int(ss.get("seed", 0)), evaluation=table_evaluation(table), cache=cache,
                        data_key=table.fingerprint + (":proxy" if ss.tables_tuned_on == "proxy" else ""),
                        progress=progress, seconds=limits.MAX_SYNTHESIS_SECONDS)
    # Stop reruns the page; finished pairs stay in the cache. Synthesiser runs are in workers under the deadline.
    synthesisers = [n for n in names if registered(n, kind="table").synthesizes]
    ss.tables_results = {"df": df, "baseline": baseline_scores(work, table_evaluation(table), table.records),
                         "workload": work.describe(), "evaluation": table_evaluation(table).describe(),
                         "note": compare_note(names, trials, synth_trials),
                         "advice": rho_advice(rhos) if synthesisers else None}
    return df


def table_compare_caption(results: dict) -> str:
    """The caption over the results: workload, evaluation, and what Compare ran differently from a release."""
    text = f"Workload {results['workload']}; synthetic data scored on {results['evaluation']}."
    if results.get("note"):
        text += f" {results['note']}"
    return text


def _summary_for_chart(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The Compare page's figure wants (mechanism, epsilon, metric, mean, low, high, expected): ρ on the x axis."""
    rows = []
    for (name, rho), part in df.groupby(["mechanism", "rho"], sort=False):
        values = part[metric].dropna()
        if values.empty:
            continue
        low, high = np.quantile(values, [0.025, 0.975])
        expected = part["expected_rmse"].iloc[0] if metric == "rmse" else math.nan
        rows.append({"mechanism": name, "epsilon": rho, "metric": metric, "mean": values.mean(), "low": low,
                     "high": high, "expected": expected})
    return pd.DataFrame(rows, columns=["mechanism", "epsilon", "metric", "mean", "low", "high", "expected"])


def table_compare_figures(results: dict):
    """RMSE on the workload and TVD on the evaluation marginals against ρ, with the independence baseline."""
    df, baseline = results["df"], results["baseline"]
    figures = {}
    for metric, title in (("rmse", "RMSE per query: a marginal cell or a range (records)"),
                          ("tvd", "mean total-variation distance (0–1)")):
        summary = _summary_for_chart(df, metric)
        if summary.empty:
            continue
        fig = error_figure(summary, metric, log_y=metric == "rmse", x_title="ρ (zCDP)")
        rhos = sorted(df["rho"].unique())  # a trace, not add_hline: shapes take log10 units on a log axis
        fig.add_trace(go.Scatter(x=[rhos[0], rhos[-1]], y=[baseline[metric]] * 2, mode="lines",
                                 name=f"{BASELINE}: {baseline[metric]:.3g}",
                                 line={"color": "grey", "dash": "dash"}))
        fig.update_layout(yaxis_title=title)
        figures[metric] = fig
    return figures


def table_summary(df: pd.DataFrame) -> pd.DataFrame:
    return summarise_tables(df).rename(columns={"rho": "ρ", "rmse": "RMSE", "rmse_std": "RMSE sd",
                                                "tvd": "TVD", "tvd_std": "TVD sd",
                                                "expected_rmse": "RMSE (closed form)", "seconds": "seconds per run"})


# ------------------------------------------------------------------------------------------------ release

def table_settings(name: str, *, render: bool = False) -> dict[str, str]:
    """The mechanism's settings (those with a range) as typed on the page; widgets drawn when ``render``."""
    mechanism = registered(name, kind="table")
    defaults = {f.name: f.default for f in dataclasses.fields(mechanism)}
    values = {}
    for key, valid in parameter_ranges(mechanism).items():
        widget_key = f"tables_setting_{name}_{key}"
        if render:
            st.text_input(f"{name}: {key}", value=str(defaults[key]), key=widget_key,
                          help=f"Valid: {valid}. The documentation's mechanism reference says what this setting does.")
        values[key] = st.session_state.get(widget_key, str(defaults[key]))
    return values


def table_method_label(name: str) -> str:
    """How the page lists a method: its name and description (as every picker does) and whether its error depends
    on the data."""
    kind = "data-dependent" if registered(name, kind="table").data_dependent else "data-independent"
    return f"{mechanism_label(name)} ({kind})"


def release_table(progress=None) -> None:
    """Check the budget, run (bounded), then charge; a refused or failed run charges nothing.

    A synthesiser reports ``progress(fraction, text)``: the step it is on (measuring marginals, fitting the model
    with its iteration, sampling records), the time so far and about how much is left (:func:`_release_progress`).
    """
    ss, table = st.session_state, current_table()
    name, rho = ss.tables_release_mechanism, float(ss.tables_release_rho)
    try:
        chosen = project_table(table, list(ss.tables_attributes))
        work = table_workload(chosen)
        mechanism = table_mechanism(name, **table_settings(name))
    except ValueError as err:
        ss.flash_error = f"{name} not released: {err}"
        return
    try:  # the one release door (dplens.core.release.kernel): refusals before work, bounded run, one charge
        request = TableRequest(mechanism, rho, work, TABLE_DISPLAY_DELTA, domain_declared=chosen.domain_declared)
        published = kernel_release(request, chosen.records, store=ledger_store(),
            fingerprint=table.fingerprint, name=ss.get("table_name", "table"), workspace=ss.get("workspace_id"),
            estimated_seconds=_SLOW_SECONDS if mechanism.synthesizes else None,
            progress=_release_progress(mechanism, work, progress))
    except Exception as err:  # noqa: BLE001 - nothing published, nothing charged; never a raw traceback
        ss.flash_error = f"{name} not released: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
        return
    metadata = table_metadata(published, request, dataset=ss.get("table_name", "table"))
    release = published.release
    ss.tables_release = {"release": release, "table": chosen, "metadata": metadata}


def _release_progress(mechanism, work: MarginalWorkload, report):
    """``report(fraction, text)`` as the run's ``progress(fraction)``: the fraction read back as words with the
    mechanism's own plan of its steps (dplens.core.tables.progress), the time so far and an estimate of what is
    left. None for a mechanism without a plan (it runs in seconds) or without ``report``."""
    plan = getattr(mechanism, "progress_plan", None)
    if report is None or plan is None:
        return None
    steps, started = plan(work), time.monotonic()
    return lambda fraction: report(fraction, progress_text(steps, fraction, time.monotonic() - started))


def table_marginals_frame(release, table: Table, level: float = _LEVEL) -> pd.DataFrame:
    """The released marginals as a long table with per-cell intervals (dplens.core.release.table_export)."""
    return core_marginals_frame(release, table, level)


def table_marginal_figure(release, table: Table, marginal: tuple[str, ...], level: float = _LEVEL):
    """A released 1-D marginal as bars with intervals, a 2-D one as a heatmap."""
    index = release.workload.marginals.index(marginal)
    estimate = release.marginal_estimates[index]
    labels = [_levels_of(table, a) for a in marginal]
    if estimate.ndim == 1:
        error = None
        if release.marginal_halfwidths is not None and level == INTERVAL_LEVEL:
            error = {"type": "data", "array": np.ravel(release.marginal_halfwidths[index])}
        elif release.marginal_stds is not None:
            error = {"type": "data", "array": np.full(estimate.size, float(special.ndtri(0.5 + level / 2))
                                                      * release.marginal_stds[index])}
        fig = go.Figure(go.Bar(x=labels[0], y=estimate, error_y=error, name="released"))
        fig.update_layout(xaxis_title=marginal[0], yaxis_title="released count (records)")
    else:
        flat = estimate.reshape(estimate.shape[0], -1)
        columns = [" | ".join(c) for c in itertools.product(*labels[1:])]
        fig = go.Figure(go.Heatmap(z=flat, x=columns, y=labels[0], colorbar={"title": "count"}))
        fig.update_layout(xaxis_title=" × ".join(marginal[1:]), yaxis_title=marginal[0])
    fig.update_layout(height=420, margin={"t": 30})
    return fig


def table_downloads(output: dict) -> dict[str, tuple[str, str, str]]:
    """File name → (label, text, mime) for the release's downloads: the command line writes the same files."""
    return table_export_files(output["release"], output["table"], output["metadata"])


def synthetic_check(output: dict) -> pd.DataFrame:
    """For the curator only (uses the true data): TVD of the synthetic records on the evaluation marginals,
    next to the non-private independence baseline."""
    release, table = output["release"], output["table"]
    evaluation_work = table_evaluation(table)
    truth = evaluation_work.answer(table.records)
    score = evaluation_tvd(release, evaluation_work, truth)
    base = baseline_scores(evaluation_work, evaluation_work, table.records)["tvd"]
    return pd.DataFrame({"": [f"{release.mechanism} (released)", BASELINE], "mean TVD": [score, base]})


def table_methods() -> dict[str, str]:
    """The Tables page's methods: every registered table mechanism (dplens.core.registry) with its one-line
    ``summary``, in registration order."""
    return {name: getattr(type(m), "summary", "") for name, m in table_mechanisms().items()}
