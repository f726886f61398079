"""Tables page: records with several attributes → marginals → compare methods across ρ → release marginals or
synthetic records (logic in src/dplens/ui/tables_view.py)."""

import streamlit as st

from dplens import ui

ui.init_state()
st.title("Tables of records")
st.caption("Release cross-tabulations (marginals) of a table with several attributes, or synthetic records that "
           "preserve them. The full domain stays virtual: everything works on marginals. Budgets are ρ-zCDP.")
ui.show_flash()
with ui.guard():
    left, right = st.columns(2)
    left.file_uploader("Records (CSV, one row per person)", type=["csv"], key="tables_upload",
                       on_change=ui.guarded(ui.load_table_upload), help="A header row; integer codes 0..size−1 or "
                       "category labels. Missing values are refused.")
    right.file_uploader("Domain (JSON, optional)", type=["json"], key="tables_domain_upload",
                        on_change=ui.guarded(ui.load_table_upload),
                        help='private-pgm\'s form: {"age": 85, "sex": ["F", "M"]}. Declare it for a release: '
                             "sizes inferred from the data depend on the private records.")
    st.radio("Missing values (empty, NA, null)", list(ui.MISSING_CHOICES), key="tables_missing", horizontal=True,
             on_change=ui.guarded(ui.load_table_upload), help="Refused by default: dplens neither drops rows nor "
             "invents a level unless you say so. Dropping changes the records you protect; a level keeps every row.")
    table = ui.current_table()
    if st.session_state.get("table_name") == ui.SAMPLE_TABLE_NAME:
        st.info("Start here: this is a built-in sample (6,000 synthetic survey records). Upload your own table "
                "above; the Adult data with its domain file is the field's standard.")
    for note in table.notes:
        st.caption(f"Note: {note}")
    st.multiselect("Attributes", list(table.domain.names), key="tables_attributes",
                   help="Release marginals over these attributes only. The budget is the whole table's.")
    chosen = ui.project_table(table, list(st.session_state.tables_attributes))
    st.markdown(f"**{ui.plain(st.session_state.get('table_name', 'table'))}**: {len(table.records):,} records; "
                f"{len(chosen.domain.names)} attributes chosen; full domain "
                f"{ui.table_domain_size(chosen.domain)} cells (never built).")
    with st.expander("Domain of the chosen attributes"):
        st.dataframe(ui.table_domain_frame(chosen), hide_index=True, key="tables_domain_frame")
        st.dataframe(ui.table_feasibility(chosen.domain), hide_index=True, key="tables_feasibility")
        st.caption("Marginals are built one at a time from the records; the full domain never is.")
        st.download_button("Domain (JSON)", chosen.domain.to_json(), "domain.json", "application/json",
                           key="tables_domain_download", on_click="ignore")
    a, b, c = st.columns([2, 1, 3])
    a.radio("Workload", ["all k-way", "chosen marginals"], key="tables_workload_kind", horizontal=True)
    b.selectbox("k", [1, 2, 3], index=1, key="tables_k", help="All marginals on k attributes.")
    c.text_input("Marginals", key="tables_custom", placeholder="age+sex, race*2, ranges:age|sex",
                 help="+ joins the attributes of one marginal; a comma separates marginals; *w weights one; "
                      "ranges:age|sex asks every range of the ordinal attribute age within each sex.")
    work = ui.table_workload(chosen)
    st.caption(f"Workload: {work.describe()}; L2 sensitivity of its cells {work.cells_l2_sensitivity:.4g} (one "
               "record changes one cell of each marginal; weights steer a strategy, they do not lower this).")
    budget_line = st.empty()  # filled at the end of the run: a release below changes it
    methods = ui.table_methods()  # every registered table mechanism, with its one-line summary
    methods_help = " ".join(f"**{name}**: {summary}" for name, summary in methods.items())
    compare_tab, release_tab = st.tabs(["Compare methods", "Release"])
    with compare_tab:
        left, right = st.columns([3, 2])
        proxy = ui.table_proxy()
        ui.tune_on_new_proxy()  # a proxy made on the last run: tune on it
        left.radio("Tune on", ["private", "proxy"], key="tables_tune_on", horizontal=True,
                   format_func={"private": "the private table (your eyes only)",
                                "proxy": "its DP proxy" + (f" (ρ = {proxy['rho']:g} spent)" if proxy else
                                                           " (make one first)")}.get,
                   help="A method or ρ chosen from errors on the private table depends on it; a DP proxy (MST's "
                        "synthetic records, released once and charged) keeps the choice free of it.")
        with right.popover("Make a DP proxy"):
            ui.table_proxy_controls()
        if st.session_state.get("tables_tune_on") == "proxy" and proxy is None:
            st.warning("No DP proxy yet: Compare runs on the private table until you make one.")
        with st.form("tables_compare_form"):
            names = st.multiselect("Methods", list(methods), default=["gaussian-marginals", "residual-planner"],
                                   key="tables_mechanisms", help=methods_help, format_func=ui.table_method_label)
            x, y, v, z = st.columns(4)
            rhos = x.multiselect("ρ values", list(ui.TABLE_RHO_CHOICES), default=[0.01, 0.1, 1.0], key="tables_rhos")
            trials = y.slider("Trials per point", 1, 20, 3, key="tables_trials",
                              help="Independent noise draws of the closed-form and histogram methods.")
            synth_trials = v.slider("Runs per point of a synthesiser", 1, 20, ui.TABLE_SYNTH_TRIALS,
                                    key="tables_synth_trials",
                                    help="MST, AIM and identity-pgm take seconds to minutes per run, so Compare runs "
                                         "them once per ρ unless you ask for more (they run in parallel workers).")
            z.selectbox("Score synthetic data on all k-way marginals, k =", [1, 2, 3], index=1, key="tables_eval_k",
                        help="Mean total-variation distance on these marginals, which may lie outside the workload.")
            st.text_input("…or on these marginals", key="tables_eval_custom", placeholder="age+income, sex+hours+"
                          "income", help="Any marginals, in the workload or not: the honest test of synthetic data.")
            submitted = st.form_submit_button("Run comparison", type="primary")
        if submitted:
            stop_slot, bar = st.empty(), st.progress(0.0, text="running…")
            stop_slot.button("Stop", key="tables_stop", help="Stop; the (mechanism, ρ) pairs finished so far are kept.")
            ui.run_table_compare(chosen, work, list(names), sorted(rhos), int(trials),
                           progress=lambda f, text: bar.progress(min(f, 1.0), text=text),
                           synth_trials=int(synth_trials))
            bar.empty()
            stop_slot.empty()
        results = st.session_state.get("tables_results")
        if results is None:
            st.info("Choose methods and ρ values, then **Run comparison** (nothing is charged: comparisons are "
                    "simulations on your data, for your eyes only).")
        else:
            if st.session_state.get("tables_tuned_on") == "proxy":
                st.info("Tuned on the table's DP proxy: a method or ρ chosen here costs the private table nothing "
                        "more.")
            else:
                st.warning("Measured on the true table: a method or ρ chosen from these errors depends on the "
                           "private data (for your eyes only); tune on a DP proxy to keep the choice free of it.")
            st.caption(ui.table_compare_caption(results))
            if results.get("advice"):
                st.caption(results["advice"])
            for metric, fig in ui.table_compare_figures(results).items():
                st.plotly_chart(fig, key=f"tables_figure_{metric}")
            st.caption("Legend: " + " · ".join(f"**{n}**: {methods[n]}" for n in results["df"]["mechanism"].unique()
                                               if n in methods))
            st.dataframe(ui.table_summary(results["df"]), hide_index=True, key="tables_summary")
            st.caption("The dashed line is the non-private independence baseline (the product of the exact 1-way "
                       "marginals): a method above it has learnt no correlation that the 1-way marginals did not give.")
    with release_tab:
        led = ui.table_ledger(table)
        if not led.spends:
            st.number_input("Total budget ρ for this table", min_value=0.001, max_value=100.0,
                            value=ui.TABLE_DEFAULT_RHO, step=0.1, format="%g", key="tables_total_rho",
                            on_change=ui.set_table_total, help="Recorded with the first release; fixed after it.")
        p, q = st.columns(2)
        p.selectbox("Method", list(methods), key="tables_release_mechanism", format_func=ui.table_method_label,
                    help=methods_help)
        q.number_input("ρ to spend", min_value=0.0001, max_value=100.0, value=0.1, step=0.05, format="%g",
                       key="tables_release_rho")
        if ui.table_settings(st.session_state.tables_release_mechanism):
            with st.expander("Settings of this method"):
                ui.table_settings(st.session_state.tables_release_mechanism, render=True)
        if st.button("Spend ρ and release", type="primary", key="tables_release_button"):
            bar = st.progress(0.0, text="releasing… (synthesisers take minutes)")
            ui.release_table(progress=lambda f, text: bar.progress(min(f, 1.0), text=text))
            bar.empty()
            ui.show_flash()
        output = st.session_state.get("tables_release")
        if output is not None:
            release, released_table = output["release"], output["table"]
            st.success(f"Released {release.workload.describe()} with {release.mechanism} at ρ = {release.budget.rho:g}"
                       + (f" and {len(release.records):,} synthetic records." if release.records is not None else "."))
            shown = st.selectbox("Marginal", release.workload.marginals, format_func=" × ".join, key="tables_shown")
            st.plotly_chart(ui.table_marginal_figure(release, released_table, tuple(shown)),
                            key="tables_marginal_figure")
            if release.records is not None:
                st.dataframe(ui.synthetic_check(output), hide_index=True, key="tables_synthetic_check")
                st.caption("Computed from the true data, for you only (not exported): synthetic data promises only "
                           "what its measured marginals support.")
            for file_name, (label, text, mime) in ui.table_downloads(output).items():
                st.download_button(label, text, file_name, mime, key=f"tables_download_{file_name}",
                                   on_click="ignore")  # a download changes nothing: no rerun
    budget_line.caption(ui.table_budget_caption(table))
