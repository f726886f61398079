"""The Release page's logic (callbacks, sections, figures); the page script calls it through ``ui``."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numpy as np
import streamlit as st

from dplens.core.analysis.intervals import (
    answer_halfwidths,
    bin_halfwidths,
    simulated_intervals,
)
from dplens.core.analysis.strategy_noise import strategy_halfwidths
from dplens.core.data import limits
from dplens.core.mechanisms import MECHANISMS, Release, configure
from dplens.core.privacy.definitions import ZCDP, privacy_words, target, zcdp_epsilon, zcdp_rho
from dplens.core.release.config import parse_config
from dplens.core.release.export import (
    SIMULATION_LABEL,
    ExportKeys,
    history_to_csv,
    privacy_metadata,
)
from dplens.core.release.kernel import (
    EXPORT_INTERVAL_TRIALS,
    HistogramRequest,
    Preflight,
    Published,
    export_intervals,
    export_release,
    export_restored,
    preflight,
    release,
)
from dplens.core.release.publish import history_entry
from dplens.core.release.recipe import recipe_notebook, recipe_script
from dplens.ui.chart_controls import histogram_view_controls
from dplens.ui.chart_export import figure_downloads
from dplens.ui.charts import MAX_BARS, error_band_figure, histogram_figure, interval_figure
from dplens.ui.config import apply_config
from dplens.ui.datasets import (
    BINS_FROM_DATA_REFUSAL,
    RESCALED_REFUSAL,
    bins_from_data,
    dataset_file,
    dataset_name,
    histogram,
    is_rescaled,
    ledger_key,
    released_data,
)
from dplens.ui.definition import definition as privacy_definition
from dplens.ui.guard import plain
from dplens.ui.handoff import release_tuned_on
from dplens.ui.ledger import default_total, ledger, ledger_store
from dplens.ui.ledger import delta as privacy_delta
from dplens.ui.privacy import DEFINITION_LABELS
from dplens.ui.settings import mechanism_settings
from dplens.ui.state import SIMULATION_STREAM, release_rng
from dplens.ui.structure import release_structure
from dplens.ui.value_sources import dataset_source
from dplens.ui.workloads import workload as session_workload
from dplens.ui.workloads import workload_spec
from dplens.ui.workspace import save_workspace

SHOWN_QUERIES = 40      # workload answers drawn with error bars


SIMULATION_TRIALS = 20  # re-runs behind the simulated intervals (simulation stream, never charged)


AUTO_SIMULATION_SECONDS = 3.0  # simulate automatically when the re-runs should take at most this long


def sync_release_rho() -> None:
    """Under zCDP the Release form asks for ρ: set it from the session's ε at δ when that changed elsewhere (a
    hand-off from Choose epsilon, a loaded config, another δ); a typed ρ is kept exactly."""
    ss = st.session_state
    marker = (float(ss.release_epsilon), privacy_delta())
    if ss.get("release_rho_for") != marker:
        ss.release_rho = zcdp_rho(*marker)
        ss.release_rho_for = marker


def release_rho_typed() -> None:
    """Callback of the ρ input: the session's ε becomes that ρ's ε at δ (what the other pages plot)."""
    ss = st.session_state
    epsilon = zcdp_epsilon(float(ss.release_rho), privacy_delta())
    ss.release_epsilon = min(max(epsilon, 0.001), 100.0)
    ss.release_rho_for = (float(ss.release_epsilon), privacy_delta())


@dataclass(frozen=True)
class _Click:
    """The Release button's inputs, read when it is clicked."""

    name: str
    noise_path: str
    tuned: str
    settings: dict[str, object]
    number: int
    definition: str

    @property
    def label(self) -> str:
        return f"release #{self.number}: {self.name}"

    @property
    def exploring(self) -> bool:
        return self.noise_path == "exploration"


@dataclass(frozen=True, eq=False)
class _Ran:
    """A finished run: the release, its seconds, its noise sampler and the kernel's record (None outside it)."""

    release: Release
    seconds: float
    sampler: str
    published: Published | None


def spend_and_release() -> None:
    """Button callback: one call of the release kernel, which plans, checks the ledger and the limits before any
    work, runs, checks the loss and charges (a rerun never reaches this; style rule 7).

    Reads the widgets at click time (not render-time args), so an edit and a click in the same round trip charge
    what the user sees. The exploration path is the kernel's exploration mode (seeded noise, the same checks and
    charge, never exported); re-releasing already-private data is post-processing (no ledger).
    """
    ss = st.session_state
    name = ss.release_mechanism
    click = _Click(name, ss.release_noise_path,
                   tuned=release_tuned_on(),  # read before the release: a release makes the hand-off stale
                   settings=mechanism_settings(name, key="release", render=False),
                   number=len(ss.releases) + 1, definition=privacy_definition())
    private = released_data() is None
    if private and is_rescaled():
        ss.flash_error = f"Nothing released, no budget spent. {RESCALED_REFUSAL}"
        return
    if private and not click.exploring and bins_from_data():  # no output shape may depend on the private data
        ss.flash_error = f"{name} not released: {BINS_FROM_DATA_REFUSAL}"
        return
    try:
        request = _request(name, click.settings, click.definition)
    except ValueError as err:
        ss.flash_error = f"{name} not released: {err}"
        return
    stream = int(ss.release_counter)
    published = _run_release(click, request, private=private)
    if published is None:
        return
    ss.release_counter += 1
    if published.ledger is not None:
        ss.ledger = published.ledger
    _log_release(click, published, request, stream)


def _request(name: str, settings: dict[str, object], definition: str) -> HistogramRequest:
    """The kernel's request for the Release form as it stands: the mechanism and its settings, the privacy value in
    the definition's unit (ρ typed under zCDP), the session's workload and δ."""
    ss, delta = st.session_state, privacy_delta()
    privacy = ZCDP(float(ss.release_rho)) if definition == "zcdp" and "release_rho" in ss else target(
        definition, float(ss.release_epsilon), delta)
    return HistogramRequest(name, settings, privacy, session_workload(), workload_spec(), delta)


def release_preflight(name: str, settings: dict[str, object]) -> Preflight:
    """What the kernel would say of the Release form before the click (``preflight``): a refusal naming what to
    change, or a slow run's warning; nothing runs or is charged."""
    try:
        request = _request(name, settings, privacy_definition())
    except ValueError as err:
        return Preflight(str(err).splitlines()[0], "", None)
    private = released_data() is None
    return preflight(request, store=ledger_store() if private else None, fingerprint=ledger_key(),
                     default_total=default_total(), private=private)


def _run_release(click: _Click, request: HistogramRequest, *, private: bool) -> Published | None:
    """The kernel's release, bounded; None + flash error when it is refused or fails (nothing published, nothing
    charged)."""
    ss, hist = st.session_state, histogram()
    try:
        # the limit is read per click: an operator (or a test) may change it while the server runs
        with st.spinner(f"Releasing with {click.name} at {privacy_words(request.privacy, request.delta)} (stopped "
                        f"after {limits.MAX_ACTION_SECONDS:g} s)…"):
            return release(request, hist.counts, store=ledger_store(), fingerprint=ledger_key(),
                                     name=hist.name, time_limit=limits.MAX_ACTION_SECONDS,
                                     workspace=ss.get("workspace_id"), where="Release page",
                                     default_total=default_total(), label=click.label,
                                     rng=release_rng() if click.exploring else None, private=private)
    except Exception as err:  # noqa: BLE001 - nothing published, nothing charged; never a raw traceback
        message = str(err).splitlines()[0] if str(err) else type(err).__name__
        ledger()  # show what the store holds (another tab may have spent)
        ss.flash_error = f"{click.name} not released: {message}"
        return None


def _log_release(click: _Click, published: Published, request: HistogramRequest, stream: int) -> None:
    """Add the charged release to the session's history and outputs, show it, and save the workspace."""
    ss = st.session_state
    entry = history_entry(
        published.release, number=click.number, dataset=ss.dataset_key, workload=workload_spec(),
        seed=int(ss.seed) if click.exploring else None, stream=stream if click.exploring else None,
        noise_path=click.noise_path, noise_sampler=published.noise_sampler)
    meta = privacy_metadata(published.release)
    entry.update(definition=click.definition, delta=meta["delta"], rho=meta["rho"], sigma=meta["sigma"],
                 tuned_on=click.tuned)
    ss.releases.append({**entry, "export_id": published.export_id})
    ss.release_outputs[click.number] = {"release": published.release, "settings": click.settings,
                                        "seconds": published.seconds, "request": request, "published": published}
    ss.release_show = click.number
    save_workspace()  # the history survives a reload even if this run is cut short


def _export_files(output: dict, entry: dict, hist, intervals) -> tuple[bytes, bytes]:
    """(CSV, JSON) of a release: through the kernel's ``export_release`` (as the command line writes them) for a
    release of the private data; re-releases of already-private data are written the same way, without a spend."""
    published, release, request = output.get("published"), output["release"], output.get("request")
    dataset = dataset_file(entry["dataset"])
    workload = request.workload if request is not None else release.workload  # a restored release keeps its own
    if hist is not None and "export_keys" not in output and workload is not None:  # queries in words, once
        output["export_keys"] = ExportKeys.for_release(hist, release, workload)
    keys = output.get("export_keys") if hist is not None else None
    if published is not None:
        csv_file, json_file = (export_release(published, output["request"], fmt=fmt, dataset=dataset, keys=keys,
                                              tuned_on=entry.get("tuned_on"), intervals=intervals,
                                              compute_intervals=False) for fmt in ("csv", "json"))
        return csv_file, json_file
    meta = {"workload": entry["workload"], "noise_path": entry["noise_path"],
            "noise_sampler": entry.get("noise_sampler"), "dataset": dataset, "export_id": entry.get("export_id"),
            "tuned_on": entry.get("tuned_on")}
    csv_file, json_file = (export_restored(release, fmt=fmt, metadata=meta, keys=keys, intervals=intervals)
                           for fmt in ("csv", "json"))
    return csv_file, json_file


def keep_export_intervals(number: int, simultaneous: bool) -> None:
    """The kernel's ``export_intervals`` for release ``number`` (as the command line's exports carry them), from its
    released values only, on a seeded simulation stream; kept for the export."""
    output = st.session_state.release_outputs[number]
    rng = np.random.default_rng([int(st.session_state.seed), SIMULATION_STREAM, 8, number])
    if "request" not in output:  # a release restored from a saved workspace keeps its values, not its request
        st.session_state.flash_error = (f"No intervals for release #{number}: it was restored from a saved workspace, "
                                        "which keeps the released values but not the request they were made for")
        return
    try:
        intervals = export_intervals(output["release"], output["request"], simultaneous=simultaneous, rng=rng)
    except Exception as err:  # noqa: BLE001 - the export goes without intervals; never a raw traceback
        st.session_state.flash_error = f"No intervals for release #{number}: {str(err).splitlines()[0]}"
        return
    output.setdefault("export_intervals", {})[simultaneous] = intervals


def rerun_seconds(number: int) -> float:
    """Seconds for one re-run of release ``number`` on its own released output (sizes the interval work)."""
    entry, output = st.session_state.releases[number - 1], st.session_state.release_outputs[number]
    release = output["release"]
    stand_in = np.clip(release.estimate, 0, None) if release.estimate is not None else None
    if stand_in is None:
        return output["seconds"]
    started = time.perf_counter()
    try:
        configure(MECHANISMS[entry["mechanism"]], output["settings"]).run(
            stand_in, session_workload(), entry["epsilon"], np.random.default_rng([int(st.session_state.seed), 9]))
    except Exception:  # noqa: BLE001 - only a timing probe; the interval step reports real errors
        return output["seconds"]
    return time.perf_counter() - started


def load_config() -> None:
    """Button callback: parse the uploaded or pasted config and apply it (the ledger is never refunded)."""
    upload = st.session_state.get("release_config_upload")
    text = upload.getvalue() if upload is not None else st.session_state.get("release_config_text", "")
    try:
        notes = apply_config(parse_config(text))
    except ValueError as err:
        st.session_state.flash_error = f"Config not loaded: {err}"
        return
    st.session_state.release_notice = "Config loaded." + "".join(f" Note: {n}." for n in notes)


def simulate(number: int) -> None:
    """Intervals for release ``number`` from re-runs on a simulation stream (curator only; never charged)."""
    entry, output = st.session_state.releases[number - 1], st.session_state.release_outputs[number]
    rng = np.random.default_rng([int(st.session_state.seed), SIMULATION_STREAM, 6, number])
    privacy = target(entry.get("definition", "pure"), entry["epsilon"], entry.get("delta") or 1e-6)
    output["intervals"] = simulated_intervals(configure(MECHANISMS[entry["mechanism"]], output["settings"]),
                                              histogram().counts, session_workload(), privacy, SIMULATION_TRIALS, rng)


def exact_halfwidths(number: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Exact 95 % half-widths (bins, answers) of release ``number``, computed once: plain Laplace/Gaussian noise
    per value, or the exact quantiles of a data-independent strategy's noise (dplens.core.analysis.strategy_noise)."""
    entry, output = st.session_state.releases[number - 1], st.session_state.release_outputs[number]
    if "exact" not in output:
        release, workload = output["release"], session_workload()
        bins, answers = bin_halfwidths(release), answer_halfwidths(release)
        if bins is None or answers is None:
            mechanism = configure(MECHANISMS[entry["mechanism"]], output["settings"])
            with st.spinner("Exact interval widths of the strategy's noise…"):
                if bins is None and release.estimate is not None:
                    bins = strategy_halfwidths(mechanism, release, workload, values="bins")
                if answers is None:
                    answers = strategy_halfwidths(mechanism, release, workload, values="answers")
        output["exact"] = (bins, answers)
    return output["exact"]


def _charged(entry: dict) -> str:
    """A release's charge in its definition's unit: ``ρ=0.024`` under zCDP, else ``ε=1``."""
    if entry.get("definition") == "zcdp" and entry.get("rho") is not None:
        return f"ρ={entry['rho']:.4g}"
    return f"ε={entry['epsilon']:g}"


def show_release(history: list[dict], hist, workload) -> None:
    """The chosen release of this session: metrics, the released-over-true chart, intervals, exports."""
    number = st.selectbox("Show release", [e["number"] for e in reversed(history)], key="release_show",
                          format_func=lambda n: f"#{n}: {history[n - 1]['mechanism']}, {_charged(history[n - 1])}")
    entry, output = history[number - 1], st.session_state.release_outputs[number]
    release = output["release"]
    _release_metrics(entry, release)
    simulation = entry["noise_path"] != "secure"
    source = dataset_source()
    if simulation:
        made_on = (f"computed on the {source.values}: it is for your eyes only (the seed regenerates the noise, "
                   f"so the values give the {source.values} back)" if source.private else
                   f"computed on the {source.values}")
        st.warning(f"**{SIMULATION_LABEL.capitalize()}.** Release #{number} used seeded exploration noise, "
                   f"{made_on}. It cannot be downloaded; release with the **secure** noise path to publish.")
    release_structure(release.details, key=f"release_structure_{number}")
    same_inputs = entry["dataset"] == st.session_state.dataset_key and entry["workload"] == workload_spec()
    figures: dict = {}
    if not same_inputs:
        st.warning(f"Release #{number} was made on **{plain(dataset_name(entry['dataset']))}** with workload "
                   f"`{entry['workload']}`; "
                   "select them in the sidebar to compare it with the values it was made from. Its exports are "
                   "below.")
    else:
        figures = _against_the_truth(number, entry, output, hist, workload)
    st.subheader("Export")
    intervals = None if simulation else _export_intervals(number, output)
    _downloads(number, entry, output, history, hist if same_inputs else None, intervals, simulation)
    _recipe_downloads(entry, output)
    if not simulation:
        for fig_name, fig in figures.items():
            st.caption(f"Chart: {fig_name} (shows the {source.values} too"
                       + (": for the curator's own use)" if source.private else ")"))
            figure_downloads(fig, f"dplens-{fig_name}-{number}", key=f"release_fig_{fig_name}")
    st.subheader("History")
    st.dataframe(history_table(history), hide_index=True, key="release_history")


def _settings_words(params: str) -> str:
    """A release's settings (its params JSON) for people: ``noise_scale = 2, branching = 16``.

    >>> _settings_words('{"branching": 16, "noise_scale": 2.0}')
    'branching = 16, noise_scale = 2'
    """
    values = json.loads(params or "{}")
    return ", ".join(f"{key} = {value:.4g}" if isinstance(value, float) else f"{key} = {value}"
                     for key, value in values.items())


def history_table(history: list[dict]) -> list[dict]:
    """The session's releases with worded columns (the CSV download keeps the raw fields)."""
    return [{"#": e["number"], "Time": e["time"], "Mechanism": e["mechanism"], "Charged": _charged(e),
             "Privacy loss": f"{'ρ' if e.get('privacy_loss_unit') == 'rho' else 'ε'} = {e['privacy_loss']:.4g}",
             "Settings": _settings_words(e.get("params", "")), "Dataset": dataset_name(e["dataset"]),
             "Workload": e["workload"], "Noise": e["noise_path"], "Tuned on": e.get("tuned_on") or ""}
            for e in history]


def _release_metrics(entry: dict, release) -> None:
    """What was charged, the loss of the noise drawn, the noise path and how many values were released."""
    cols = st.columns(4)
    zcdp = entry.get("definition") == "zcdp" and entry.get("rho") is not None
    cols[0].metric("ρ charged" if zcdp else "ε charged", f"{entry['rho' if zcdp else 'epsilon']:.4g}",
                   help=f"{DEFINITION_LABELS.get(entry.get('definition', 'pure'))}; δ = "
                        f"{entry.get('delta', 0.0):g}"
                        + "".join(f"; {symbol} = {entry[key]:.4g}" for key, symbol in (("rho", "ρ"), ("sigma", "σ"))
                                  if entry.get(key) is not None))  # no "None" for people to read
    unit = "ρ" if entry.get("privacy_loss_unit") == "rho" else "ε"
    cols[1].metric(f"Privacy loss ({unit})", f"{entry['privacy_loss']:.4g}",
                   help="Computed from the noise added, in the unit of the budget.")
    cols[2].metric("Noise path", entry["noise_path"])
    values = release.answers if release.estimate is None else release.estimate
    cols[3].metric("Released values", f"{np.size(values):,}")


def _against_the_truth(number: int, entry: dict, output: dict, hist, workload) -> dict:
    """The release over the values it was made from (the true counts, or a loaded export's released values:
    ``ui.value_sources``) with 95 % intervals (histogram, per-bin error, workload answers); returns the figures
    drawn."""
    release = output["release"]
    figures = {}
    exact_bins, exact_answers = exact_halfwidths(number)
    needs_simulation = exact_answers is None or (release.estimate is not None and exact_bins is None)
    if needs_simulation and "intervals" not in output:
        estimate_seconds = output["seconds"] * SIMULATION_TRIALS
        if estimate_seconds <= AUTO_SIMULATION_SECONDS:
            with st.spinner("Simulating re-runs for the intervals…"):
                simulate(number)
        else:
            st.button(f"Simulate 95 % intervals ({SIMULATION_TRIALS} re-runs, about "
                      f"{estimate_seconds:.0f} s)", key="release_simulate", on_click=simulate,
                      args=(number,), help="Re-runs the mechanism on a simulation stream; never charged.")
    simulated = output.get("intervals")
    source = dataset_source()
    st.subheader(f"Released histogram over the {source.values}")
    st.caption(("The curator sees both; " if source.private else
                f"Grey: the {source.values} of the loaded export, already private. ")
               + "Exports contain only the release. Band/bars: 95 % intervals — "
               "exact for plain Laplace or Gaussian noise on each value (discrete on integer releases) and for "
               "the data-independent strategies (hb, privelet, greedy-h, mm-opt and their Gaussian twins), "
               "else the 2.5–97.5 % range of "
               f"{SIMULATION_TRIALS} simulated re-runs (never charged).")
    if release.estimate is not None:
        estimate, truth = np.ravel(release.estimate), hist.vector
        low = high = None
        if exact_bins is not None:
            low, high = -exact_bins, exact_bins
        elif simulated is not None:  # error = output − truth, so truth ∈ [output − high, output − low]
            low, high = -simulated["bins_high"], -simulated["bins_low"]
        label = f"released ({entry['mechanism']})"
        view = histogram_view_controls(hist, key="release_view")
        if len(hist.domain.shape) == 1 and hist.domain.size <= MAX_BARS:
            figures["histogram"] = interval_figure(np.arange(estimate.size), truth, estimate, low, high,
                                                   mechanism=entry["mechanism"], x_title="bin (index)",
                                                   y_title="count (records)", source=source, bars=True,
                                                   log_y=view.get("log_y", False), zoom=view.get("zoom", False))
        else:
            figures["histogram"] = histogram_figure(hist, estimate, label, mechanism=entry["mechanism"],
                                                    source=source, **view)
        st.plotly_chart(figures["histogram"], key="release_chart")
        error = estimate - truth
        cols = st.columns(3)
        cols[0].metric("Mean |error| per bin", f"{np.mean(np.abs(error)):.4g}")
        cols[1].metric("Max |error|", f"{np.max(np.abs(error)):.4g}")
        if low is not None:
            covered = np.mean((truth >= estimate + low) & (truth <= estimate + high))
            cols[2].metric(f"{source.values.capitalize()} inside their 95 % interval", f"{covered:.1%}",
                           help="Should be close to 95 % (per bin, not simultaneous).")
        figures["per-bin-error"] = error_band_figure(truth, error, None if high is None else -high,
                                                     None if low is None else -low,
                                                     mechanism=entry["mechanism"], source=source)
        st.plotly_chart(figures["per-bin-error"], key="release_error_chart")
    a_low = a_high = None
    if exact_answers is not None:
        a_low, a_high = -exact_answers, exact_answers
    elif simulated is not None:
        a_low, a_high = -simulated["answers_high"], -simulated["answers_low"]
    shown = slice(0, min(SHOWN_QUERIES, release.answers.size))
    st.subheader(f"Workload answers (first {shown.stop} of {release.answers.size:,} queries)")
    figures["answers"] = interval_figure(np.arange(shown.stop), workload.matvec(hist.vector)[shown],
                                         release.answers[shown], None if a_low is None else a_low[shown],
                                         None if a_high is None else a_high[shown],
                                         mechanism=entry["mechanism"], x_title="query (index)",
                                         y_title="answer (records)", source=source, answers=True)
    st.plotly_chart(figures["answers"], key="release_answers_chart")
    return figures


def _export_intervals(number: int, output: dict):
    """The intervals exports carry (per value or simultaneous), computed now or on request; None until then."""
    left, right = st.columns(2)
    together = left.toggle("Simultaneous intervals (all values at once)", key="release_simultaneous",
                           help="Off: each value's interval holds with 95 % probability. On: all of them "
                                "hold together with 95 % probability (wider).")
    cache = output.setdefault("export_intervals", {})
    # Exact intervals (plain noise per value, or a data-independent strategy's noise) need no re-runs.
    exact = output.get("exact", (None, None))[1] is not None
    if "rerun_seconds" not in output and not exact:  # one re-run on the simulation path (the secure run's
        output["rerun_seconds"] = rerun_seconds(number)  # time includes loading OpenDP once)
    if together not in cache and (exact or output["rerun_seconds"] * EXPORT_INTERVAL_TRIALS
                                  <= AUTO_SIMULATION_SECONDS):
        with st.spinner("Computing intervals from the released values…"):
            keep_export_intervals(number, together)
    elif together not in cache:
        right.button(f"Compute intervals for the export (about "
                     f"{output['rerun_seconds'] * EXPORT_INTERVAL_TRIALS:.0f} s)", key="release_intervals",
                     on_click=keep_export_intervals, args=(number, together))
    intervals = cache.get(together)
    if intervals is not None:
        st.caption(f"Exports carry `lower`, `upper` and `level` = {intervals.level:g} for every value. "
                   f"Method: {intervals.method}.")
    return intervals


def _downloads(number: int, entry: dict, output: dict, history: list[dict], truth_hist, intervals,
               simulation: bool) -> None:
    """The released values (CSV, JSON with metadata) and the release history."""
    cols = st.columns(3)
    if simulation:
        cols[0].info(f"Release #{number} is a {SIMULATION_LABEL}: nothing to download.")
    else:
        csv_bytes, json_bytes = _export_files(output, entry, truth_hist, intervals)
        cols[0].download_button("Released histogram (CSV)", csv_bytes,
                                f"dplens-release-{number}.csv", "text/csv", key="release_csv", on_click="ignore",
                                help="Only the released values, one column per axis named as your upload named "
                                     "it, then count (or query, answer and each query in words).")
        cols[1].download_button("Release with metadata (JSON)", json_bytes,
                                f"dplens-release-{number}.json", "application/json", key="release_json",
                                on_click="ignore",
                                help="Mechanism, params, ε, privacy loss, neighbours, workload, noise path "
                                     "and sampler, export id (its ledger spend), app version, timestamp.")
    cols[2].download_button("Release history (CSV)", history_to_csv(history), "dplens-history.csv",
                            "text/csv", key="release_history_csv", on_click="ignore",
                            help="One row per charge (never a seed).")


def _recipe_downloads(entry: dict, output: dict) -> None:
    """The release's configuration as a Python script and a notebook (the data is not in them)."""
    recipe = {"mechanism": entry["mechanism"], "settings": output["settings"], "workload": entry["workload"],
              "epsilon": float(entry["epsilon"])}
    try:
        cols = st.columns(3)
        cols[0].download_button("Recipe (Python script)", recipe_script(**recipe), "dplens_recipe.py",
                                "text/x-python", key="release_recipe_py", on_click="ignore",
                                help="Re-runs this configuration through dplens on a file you name; the data "
                                     "is not in it. Secure noise: new values, same metadata.")
        cols[1].download_button("Recipe (Jupyter notebook)", recipe_notebook(**recipe), "dplens_recipe.ipynb",
                                "application/x-ipynb+json", key="release_recipe_ipynb", on_click="ignore",
                                help="The same recipe as a notebook.")
    except ValueError as err:
        st.caption(f"No recipe for this release: {err}.")
