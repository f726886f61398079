"""Release page: one mechanism, one ε, one click; truth vs release with 95 % intervals; history; exports."""


import numpy as np
import streamlit as st

import ui
from core.mechanisms import NEIGHBOURING
from core.privacy.definitions import target
from core.privacy.noise import NOISE_PATHS
from core.release.config import config_to_json
from core.release.export import (
    SIMULATION_LABEL,
    history_to_csv,
    release_to_csv,
    release_to_json,
)
from core.release.publish import answer_halfwidths, bin_halfwidths
from core.release.recipe import recipe_notebook, recipe_script

ui.init_state()
st.title("Release")
ui.show_flash()
if notice := st.session_state.pop("release_notice", None):
    st.success(notice)
with ui.guard():
    hist, workload, led = ui.histogram(), ui.workload(), ui.ledger()
    st.caption(f"Dataset **{hist.name}** · workload `{ui.workload_spec()}` ({workload.shape[0]:,} queries) · "
               f"neighbours: {NEIGHBOURING}. Each click spends budget; "
               f"remaining {ui.remaining_text(led)}.")
    ui.show_handoff(ui.apply_handoff("release"))
    if ui.released_data() is not None:
        st.info("This dataset is an earlier release (already private): releasing from it again is "
                "post-processing, so it spends no budget.")
    for key, default in (("release_epsilon", 1.0), ("release_noise_path", "secure")):
        st.session_state.setdefault(key, default)  # defaults via the session so a loaded config can set them
    left, right = st.columns(2)
    with left:
        choices = ui.available()
        if st.session_state.get("release_mechanism") not in choices:  # a Gaussian one under pure ε-DP
            st.session_state.release_mechanism = choices[0]
        name = st.selectbox("Mechanism", choices, key="release_mechanism",
                            help="Any registered mechanism usable under the privacy definition (sidebar); "
                                 "Gaussian mechanisms need (ε, δ) or zCDP. Its settings appear below.")
        settings = ui.mechanism_settings(name, key="release")
        st.session_state.release_settings = {name: settings}  # for the session config
        cost_warning, cost_refusal = ui.run_check(name, settings, workload)
        if cost_refusal:
            st.error(f"{name} cannot run here: {cost_refusal}")
        elif cost_warning:
            st.warning(f"Slow: {cost_warning}. The page waits for it.")
    with right:
        pure = ui.definition() == "pure"
        st.number_input("Epsilon for this release" if pure else f"Epsilon (at δ = {ui.delta():g}) for this release",
                        min_value=0.001, max_value=100.0, step=0.1, key="release_epsilon",
                        help="Charged to the dataset's ledger on click. A ρ total is charged ρ (pure ε: ε²/2; (ε, δ) "
                             "refused); an ε total (ε, δ), a zCDP release as its ε at δ (basic composition).")
        if not pure:
            privacy = target(ui.definition(), float(st.session_state.release_epsilon), ui.delta())
            st.caption(f"Target: {privacy}" + (f" = (ε = {privacy.to_approx(ui.delta()).epsilon:.4g}, "
                                               f"δ = {ui.delta():g})" if ui.definition() == "zcdp" else "")
                       + (". Warning: (ε, δ)-DP permits a rare catastrophic failure (probability δ)."
                          if ui.definition() == "approx" else "."))
        st.radio("Noise", list(NOISE_PATHS), key="release_noise_path", horizontal=True,
                 help=" · ".join(f"**{k}**: {v}" for k, v in NOISE_PATHS.items())
                      + f". Exploration results are a {SIMULATION_LABEL}: shown here, never exported.")
        st.button("Spend and release", type="primary", key="release_spend", on_click=ui.spend_and_release,
                  help="Runs the mechanism once and charges ε to the ledger. Reruns never charge.")
    history = st.session_state.releases
    if not history:
        st.info("No release yet. Choose a mechanism and ε, then **Spend and release**.")
    else:
        number = st.selectbox("Show release", [e["number"] for e in reversed(history)], key="release_show",
                              format_func=lambda n: f"#{n}: {history[n - 1]['mechanism']}, "
                                                    f"ε={history[n - 1]['epsilon']:g}")
        entry, output = history[number - 1], st.session_state.release_outputs[number]
        release = output["release"]
        cols = st.columns(4)
        cols[0].metric("ε charged", f"{entry['epsilon']:.4g}",
                       help=f"{ui.DEFINITION_LABELS.get(entry.get('definition', 'pure'))}; δ = "
                            f"{entry.get('delta', 0.0):g}"
                            + "".join(f"; {symbol} = {entry[key]:.4g}" for key, symbol in (("rho", "ρ"), ("sigma", "σ"))
                                      if entry.get(key) is not None))  # no "None" for people to read
        cols[1].metric("Privacy loss", f"{entry['privacy_loss']:.4g}", help="Computed from the noise added.")
        cols[2].metric("Noise path", entry["noise_path"])
        values = release.answers if release.estimate is None else release.estimate
        cols[3].metric("Released values", f"{np.size(values):,}")
        simulation = entry["noise_path"] != "secure"
        if simulation:
            st.warning(f"**{SIMULATION_LABEL.capitalize()}.** Release #{number} used seeded exploration noise, "
                       "computed on the true data: it is for your eyes only (the seed regenerates the noise, "
                       "so the values give the true counts back). It cannot be downloaded; release with the "
                       "**secure** noise path to publish.")
        ui.release_structure(release.details, key=f"release_structure_{number}")
        same_inputs = entry["dataset"] == st.session_state.dataset_key and entry["workload"] == ui.workload_spec()
        figures = {}
        if not same_inputs:
            st.warning(f"Release #{number} was made on `{entry['dataset']}` with workload `{entry['workload']}`; "
                       "select them in the sidebar to compare it with the truth. Its exports are below.")
        else:
            exact_bins, exact_answers = bin_halfwidths(release), answer_halfwidths(release)
            needs_simulation = exact_answers is None or (release.estimate is not None and exact_bins is None)
            if needs_simulation and "intervals" not in output:
                estimate_seconds = output["seconds"] * ui.SIMULATION_TRIALS
                if estimate_seconds <= ui.AUTO_SIMULATION_SECONDS:
                    with st.spinner("Simulating re-runs for the intervals…"):
                        ui.simulate(number)
                else:
                    st.button(f"Simulate 95 % intervals ({ui.SIMULATION_TRIALS} re-runs, about "
                              f"{estimate_seconds:.0f} s)", key="release_simulate", on_click=ui.simulate,
                              args=(number,), help="Re-runs the mechanism on a simulation stream; never charged.")
            simulated = output.get("intervals")
            st.subheader("Released histogram over the true one")
            st.caption("The curator sees both; exports contain only the release. Band/bars: 95 % intervals — "
                       "exact for plain Laplace or Gaussian noise on each value (discrete on integer releases), "
                       "else the 2.5–97.5 % range of "
                       f"{ui.SIMULATION_TRIALS} simulated re-runs (never charged).")
            if release.estimate is not None:
                estimate, truth = np.ravel(release.estimate), hist.vector
                low = high = None
                if exact_bins is not None:
                    low, high = -exact_bins, exact_bins
                elif simulated is not None:  # error = output − truth, so truth ∈ [output − high, output − low]
                    low, high = -simulated["bins_high"], -simulated["bins_low"]
                label = f"released ({entry['mechanism']})"
                view = ui.histogram_view_controls(hist, key="release_view")
                if len(hist.domain.shape) == 1 and hist.domain.size <= ui.MAX_BARS:
                    figures["histogram"] = ui.interval_figure(np.arange(estimate.size), truth, estimate, low, high,
                                                              mechanism=entry["mechanism"], x_title="bin (index)",
                                                              y_title="count (records)", bars=True, **view)
                else:
                    figures["histogram"] = ui.histogram_figure(hist, estimate, label, mechanism=entry["mechanism"],
                                                               **view)
                st.plotly_chart(figures["histogram"], key="release_chart")
                error = estimate - truth
                cols = st.columns(3)
                cols[0].metric("Mean |error| per bin", f"{np.mean(np.abs(error)):.4g}")
                cols[1].metric("Max |error|", f"{np.max(np.abs(error)):.4g}")
                if low is not None:
                    covered = np.mean((truth >= estimate + low) & (truth <= estimate + high))
                    cols[2].metric("True counts inside their 95 % interval", f"{covered:.1%}",
                                   help="Should be close to 95 % (per bin, not simultaneous).")
                figures["per-bin-error"] = ui.error_band_figure(truth, error, None if low is None else -high,
                                                                None if low is None else -low,
                                                                mechanism=entry["mechanism"])
                st.plotly_chart(figures["per-bin-error"], key="release_error_chart")
            a_low = a_high = None
            if exact_answers is not None:
                a_low, a_high = -exact_answers, exact_answers
            elif simulated is not None:
                a_low, a_high = -simulated["answers_high"], -simulated["answers_low"]
            shown = slice(0, min(ui.SHOWN_QUERIES, release.answers.size))
            st.subheader(f"Workload answers (first {shown.stop} of {release.answers.size:,} queries)")
            figures["answers"] = ui.interval_figure(np.arange(shown.stop), workload.matvec(hist.vector)[shown],
                                                    release.answers[shown], None if a_low is None else a_low[shown],
                                                    None if a_high is None else a_high[shown],
                                                    mechanism=entry["mechanism"], x_title="query (index)",
                                                    y_title="answer (records)")
            st.plotly_chart(figures["answers"], key="release_answers_chart")
        st.subheader("Export")
        labels = hist.bin_labels() if same_inputs and release.estimate is not None else None
        intervals = None
        if not simulation:
            left, right = st.columns(2)
            together = left.toggle("Simultaneous intervals (all values at once)", key="release_simultaneous",
                                   help="Off: each value's interval holds with 95 % probability. On: all of them "
                                        "hold together with 95 % probability (wider).")
            cache = output.setdefault("export_intervals", {})
            if "rerun_seconds" not in output:  # one re-run on the simulation path (the secure run's time
                output["rerun_seconds"] = ui.rerun_seconds(number)  # includes loading OpenDP once)
            if together not in cache and output["rerun_seconds"] * ui.EXPORT_INTERVAL_TRIALS <= ui.AUTO_SIMULATION_SECONDS:
                with st.spinner("Computing intervals from the released values…"):
                    ui.export_intervals(number, together)
            elif together not in cache:
                right.button(f"Compute intervals for the export (about "
                             f"{output['rerun_seconds'] * ui.EXPORT_INTERVAL_TRIALS:.0f} s)", key="release_intervals",
                             on_click=ui.export_intervals, args=(number, together))
            intervals = cache.get(together)
            if intervals is not None:
                st.caption(f"Exports carry `lower`, `upper` and `level` = {intervals.level:g} for every value. "
                           f"Method: {intervals.method}.")
        cols = st.columns(3)
        if simulation:
            cols[0].info(f"Release #{number} is a {SIMULATION_LABEL}: nothing to download.")
        else:
            meta = {"workload": entry["workload"], "noise_path": entry["noise_path"],
                    "noise_sampler": entry.get("noise_sampler"), "dataset": ui.dataset_file(entry["dataset"]),
                    "export_id": entry.get("export_id")}
            cols[0].download_button("Released histogram (CSV)", release_to_csv(release, labels, intervals),
                                    f"dplens-release-{number}.csv", "text/csv", key="release_csv", on_click="ignore",
                                    help="Only the released values: bin,count (or query,answer).")
            cols[1].download_button("Release with metadata (JSON)", release_to_json(release, labels=labels, intervals=intervals, **meta),
                                    f"dplens-release-{number}.json", "application/json", key="release_json",
                                    on_click="ignore",
                                    help="Mechanism, params, ε, privacy loss, neighbours, workload, noise path "
                                         "and sampler, export id (its ledger spend), app version, timestamp.")
        cols[2].download_button("Release history (CSV)", history_to_csv(history), "dplens-history.csv",
                                "text/csv", key="release_history_csv", on_click="ignore",
                                help="One row per charge (never a seed).")
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
        if not simulation:
            for fig_name, fig in figures.items():
                st.caption(f"Chart: {fig_name} (shows the true data too: for the curator's own use)")
                ui.figure_downloads(fig, f"dplens-{fig_name}-{number}", key=f"release_fig_{fig_name}")
        st.subheader("History")
        st.dataframe(history, hide_index=True, key="release_history")
    with st.expander("Session config (save or reload)"):
        config_notes: list[str] = []
        config_json = config_to_json(ui.session_config(config_notes))
        for note in config_notes:
            st.warning(f"Note: {note}.")
        st.download_button("Session config (JSON)", config_json, "dplens-session.json",
                           "application/json", key="release_config_download", on_click="ignore",
                           help="Dataset reference, workload (a custom one as its recipe: specs, range ends, "
                                "matrix nonzeros), compared mechanisms and ε grid, seed, total budget, "
                                "release settings. Never contains data, spends or releases.")
        st.code(config_json, language="json")
        st.file_uploader("Reload a session config", type=["json"], key="release_config_upload",
                         help="Restores the settings; the budget already spent stays spent.")
        st.text_area("…or paste it here", key="release_config_text", height=100)
        st.button("Load config", key="release_config_load", on_click=ui.load_config)
