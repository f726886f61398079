"""The UI layer: the only package importing both streamlit and core (see docs/architecture.md).

One concept per module; pages and app.py call ``ui.<name>`` through the re-exports below.

- ``navigation``: PAGES, the sidebar sections and page scripts
- ``state``: session keys (``init_state``), flash messages, seeded streams
- ``definition``: the session's privacy definition and the sidebar's δ (plain session reads)
- ``ledger``: the current dataset's persistent ledger (dplens.core.privacy.ledger_store), totals and charges,
  and the δ of one release
- ``privacy``: the sidebar's privacy controls and the ε axis they set
- ``datasets``: the session's histogram (samples, DPBench, uploads, derived datasets)
- ``workloads``: the session's workload (registry spec or custom object)
- ``sweeps``: simulations kept in the session (sweeps, per-bin errors, previews); never charged
- ``handoff``: the chosen ε carried from Choose epsilon to Release and Gradual release
- ``sidebar``, ``guard``: the shared sidebar and the top-level error guard
- ``charts``, ``chart_export``, ``chart_controls``: plotly figure builders, chart downloads, view toggles
- ``settings``: mechanism-settings widgets
- ``structure``: a release's display-only structure (``Release.details``)
- ``config``: the session config into and out of the session state
- ``workspace``: the working set saved in the store under the URL's workspace id
"""

from dplens.ui.analytic import analytic_figure, sweep_axis
from dplens.ui.chart_controls import histogram_view_controls
from dplens.ui.chart_export import figure_downloads
from dplens.ui.charts import (
    AREA_ABOVE_BARS,
    ENVELOPE,
    EPSILON_TITLE,
    MAX_BARS,
    MAX_HANDLES_SIDE,
    MAX_SIDE_2D,
    METRIC_AXIS_TITLES,
    PALETTE,
    TRUE_COLOUR,
    compared_name,
    data_extent,
    error_band_figure,
    error_figure,
    heatmap_box_cells,
    histogram_figure,
    interval_figure,
    line_figure,
    mechanism_colour,
    mechanism_label,
    mechanism_words,
    per_bin_figure,
    runtime_figure,
    workload_figure,
)
from dplens.ui.choose_epsilon_view import (
    GROUPS_1D,
    GROUPS_2D,
    LC_EXAMPLES,
    RISK_NOISE,
    RISK_PRIORS,
    RISK_STATISTICS,
    TABLE_3_EPSILONS,
    TARGET_KINDS,
    TARGET_MECHANISMS,
    TARGETS,
    from_accuracy,
    from_risk,
    risk_and_noise,
    several_targets,
    target_label,
    usefulness,
)
from dplens.ui.compare_view import PER_BIN_TRIALS, chosen_metrics, pick_from_click, show_compare_results
from dplens.ui.config import apply_config, session_config
from dplens.ui.data_view import PREVIEW_EPSILONS, dataset_chart, record_column_picker, start_line
from dplens.ui.datasets import (
    ALREADY_PRIVATE,
    BINS_FROM_DATA_REFUSAL,
    DPBENCH_DIR,
    RESCALE_STREAM,
    RESCALED_PREFIX,
    RESCALED_REFUSAL,
    add_derived,
    add_released,
    add_upload,
    bins_from_data,
    dataset_choices,
    dataset_file,
    dataset_name,
    derive_dataset,
    histogram,
    is_rescaled,
    known_release,
    ledger_key,
    load_reference_histogram,
    released_data,
)
from dplens.ui.definition import definition, session_delta
from dplens.ui.gradual_view import (
    DEFAULT_SCHEDULE,
    GRADUAL_SIMULATION,
    current_walk,
    gradual_simulation_note,
    laplace_epsilons,
    release_next,
    schedule,
    search_tab,
    walk_tab,
)
from dplens.ui.guard import error_line, guard, guarded, is_script_control, plain
from dplens.ui.handoff import (
    apply_handoff,
    budget_warning,
    handed_on,
    release_tuned_on,
    show_handoff,
    use_button,
    use_epsilon,
)
from dplens.ui.identity import (
    ADMINS_ENV,
    LOCAL_ADDRESSES,
    LOCAL_CURATOR,
    REQUIRED_CLAIMS,
    admins,
    current_curator,
    is_admin,
    local_mode,
    local_request_refusal,
    normalise_email,
    signed_in,
)
from dplens.ui.learn_view import (
    LAYOUT,
    RATIO_BINS,
    RATIO_MIN_COUNT,
    gaussian_section,
    range_errors,
    ratio_section,
    ratio_ticks,
)
from dplens.ui.ledger import (
    DATASET_COLUMNS,
    HISTORY_COLUMNS,
    datasets_table,
    default_total,
    delta,
    ledger,
    ledger_store,
    native_caption,
    native_history,
    point_privacy,
    point_unit,
    point_words,
    remaining_text,
    reset_budget,
    set_total,
    trust_key,
    trusted_keys_table,
    untrust_key,
)
from dplens.ui.navigation import PAGES
from dplens.ui.papers_view import (
    AUDIT_RUNS,
    CURRENT,
    GGS_EXAMPLE,
    MARKDOWN_LEAD,
    PAPER_DATA,
    REPRODUCTION_TITLES,
    SESSION_DATA,
    SHOW_MATRICES,
    audit_demo,
    markdown_safe,
    readings,
    reproduction,
    show_literal_variants,
    show_lrm,
    show_readings,
    show_reproduction,
)
from dplens.ui.privacy import (
    DEFINITION_LABELS,
    available,
    follow_the_ledger,
    ledger_definition,
    privacy_controls,
    session_axis,
)
from dplens.ui.release_view import (
    AUTO_SIMULATION_SECONDS,
    SHOWN_QUERIES,
    SIMULATION_TRIALS,
    exact_halfwidths,
    history_table,
    keep_export_intervals,
    load_config,
    release_preflight,
    release_rho_typed,
    rerun_seconds,
    show_release,
    simulate,
    spend_and_release,
    sync_release_rho,
)
from dplens.ui.settings import mechanism_settings, run_check
from dplens.ui.sidebar import sidebar
from dplens.ui.state import (
    DEFAULT_TOTAL_EPSILON,
    SIMULATION_STREAM,
    init_state,
    release_rng,
    show_flash,
    simulation_rng,
)
from dplens.ui.structure import release_structure
from dplens.ui.sweeps import (
    DEFAULT_SWEEP_SECONDS,
    GAUSSIAN_DEFAULTS,
    SCHEDULER_ENV,
    cached_sweep,
    is_default_sweep,
    live_chart,
    per_bin,
    preview_release,
    scheduler_choices,
    sweep,
    sweep_cache,
    sweep_estimate,
    warm_workers,
)
from dplens.ui.tables_view import (
    MISSING_CHOICES,
    SAMPLE_TABLE_NAME,
    TABLE_DEFAULT_RHO,
    TABLE_DISPLAY_DELTA,
    TABLE_PROXY_MECHANISM,
    TABLE_PROXY_RHO,
    TABLE_RHO_CHOICES,
    TABLE_SYNTH_TRIALS,
    current_table,
    load_table_upload,
    make_table_proxy,
    project_table,
    release_table,
    run_table_compare,
    set_table_total,
    synthetic_check,
    table_budget_caption,
    table_compare_caption,
    table_compare_figures,
    table_domain_frame,
    table_domain_size,
    table_downloads,
    table_evaluation,
    table_feasibility,
    table_ledger,
    table_marginal_figure,
    table_marginals_frame,
    table_method_label,
    table_methods,
    table_proxy,
    table_proxy_controls,
    table_settings,
    table_summary,
    table_workload,
    tune_on_new_proxy,
    tuning_table,
)
from dplens.ui.targets import plan_releases, target_plans
from dplens.ui.tuning import (
    PRIVATE,
    PRIVATE_NOTE,
    PROXY_EPSILON,
    PROXY_RHO,
    PUBLIC_PREFIXES,
    make_proxy,
    proxy_noise_warning,
    sources,
    tuned_on,
    tuning_controls,
    tuning_histogram,
    tuning_key,
    tuning_source,
)
from dplens.ui.value_sources import SOURCES, TRUE, Source, dataset_source, tuning_values
from dplens.ui.walk_view import REAL_WALK_NOTE, abandon_real_walk, real_walk_tab, release_real_step, start_real_walk
from dplens.ui.workloads import (
    default_workload_spec,
    parsed_workload,
    set_workload,
    stack_recipe,
    workload,
    workload_name,
    workload_recipe,
    workload_spec,
)
from dplens.ui.workloads_view import (
    SHOWN_COLUMNS,
    SHOWN_ROWS,
    add_part,
    box_to_range,
    drawn_range,
    flash,
    number,
    range_slider,
    uploaded_matrix,
    use_spec,
    use_stack,
)
from dplens.ui.workspace import open_workspace, save_workspace

__all__ = ['REAL_WALK_NOTE', 'abandon_real_walk', 'real_walk_tab', 'release_real_step', 'start_real_walk',
    'HISTORY_COLUMNS', 'dataset_name', 'history_table', 'mechanism_label', 'handed_on',
    'record_column_picker', 'ALREADY_PRIVATE', 'PREVIEW_EPSILONS', 'dataset_chart', 'start_line',
    'SOURCES', 'TRUE', 'Source', 'proxy_noise_warning', 'dataset_source', 'tuning_values',
    'DATASET_COLUMNS', 'PROXY_RHO', 'follow_the_ledger', 'keep_export_intervals', 'ledger_definition',
    'point_privacy', 'point_unit', 'point_words', 'load_reference_histogram', 'parsed_workload', 'MARKDOWN_LEAD',
    'REPRODUCTION_TITLES', 'markdown_safe',
    'GRADUAL_SIMULATION', 'ADMINS_ENV', 'LOCAL_ADDRESSES', 'LOCAL_CURATOR', 'admins', 'current_curator', 'is_admin',
    'local_mode', 'local_request_refusal', 'signed_in', 'REQUIRED_CLAIMS', 'normalise_email',
    'ledger_store', 'datasets_table', 'MISSING_CHOICES', 'SAMPLE_TABLE_NAME',
    'table_method_label', 'ratio_section', 'gaussian_section', 'LAYOUT', 'RATIO_BINS', 'RATIO_MIN_COUNT',
    'range_errors', 'ratio_ticks', 'PER_BIN_TRIALS', 'chosen_metrics', 'pick_from_click', 'show_compare_results',
    'show_release', 'AUTO_SIMULATION_SECONDS', 'SHOWN_QUERIES', 'SIMULATION_TRIALS', 'exact_halfwidths', 'load_config',
    'rerun_seconds', 'simulate', 'release_preflight', 'release_rho_typed',
    'spend_and_release', 'sync_release_rho', 'GROUPS_1D', 'GROUPS_2D', 'gradual_simulation_note',
    'laplace_epsilons', 'DEFAULT_SWEEP_SECONDS', 'GAUSSIAN_DEFAULTS', 'is_default_sweep', 'live_chart',
    'LC_EXAMPLES', 'TABLE_3_EPSILONS', 'TARGETS', 'TARGET_KINDS', 'TARGET_MECHANISMS', 'from_accuracy', 'from_risk',
    'RISK_NOISE', 'RISK_PRIORS', 'RISK_STATISTICS', 'risk_and_noise', 'several_targets', 'target_label', 'usefulness',
    'DEFAULT_SCHEDULE', 'current_walk', 'release_next', 'schedule', 'search_tab', 'walk_tab', 'SHOWN_COLUMNS',
    'SHOWN_ROWS', 'add_part', 'box_to_range', 'drawn_range', 'flash', 'number', 'range_slider', 'uploaded_matrix',
    'use_spec', 'use_stack', 'AUDIT_RUNS', 'CURRENT', 'GGS_EXAMPLE', 'PAPER_DATA', 'SESSION_DATA', 'SHOW_MATRICES',
    'audit_demo', 'readings', 'reproduction', 'show_literal_variants', 'show_lrm', 'show_readings', 'show_reproduction',
    "DEFAULT_TOTAL_EPSILON", "DEFINITION_LABELS", "DPBENCH_DIR", "ENVELOPE", "EPSILON_TITLE", "MAX_BARS",
    "AREA_ABOVE_BARS",
    "MAX_HANDLES_SIDE", "MAX_SIDE_2D", "METRIC_AXIS_TITLES", "PAGES", "PALETTE", "RESCALED_PREFIX",
    "RESCALED_REFUSAL", "RESCALE_STREAM", "SCHEDULER_ENV", "SIMULATION_STREAM", "TRUE_COLOUR", "add_derived",
    "add_released", "known_release", "bins_from_data", "BINS_FROM_DATA_REFUSAL",
    "add_upload", "analytic_figure", "apply_config", "apply_handoff", "release_tuned_on", "PRIVATE", "PRIVATE_NOTE",
    "PROXY_EPSILON", "PUBLIC_PREFIXES", "make_proxy", "sources", "tuned_on", "tuning_controls", "tuning_histogram",
    "tuning_key", "tuning_source", "available", "budget_warning", "cached_sweep",
    "default_total", "data_extent", "dataset_choices", "dataset_file",
    "default_workload_spec", "definition", "delta",
    "derive_dataset", "error_band_figure", "error_figure", "error_line", "figure_downloads", "guard", "guarded",
    "plain",
    "heatmap_box_cells",
    "histogram", "histogram_figure", "histogram_view_controls", "init_state", "interval_figure", "is_rescaled",
    "is_script_control", "ledger", "ledger_key", "line_figure", "mechanism_colour", "mechanism_words",
    "mechanism_settings",
    "trust_key", "trusted_keys_table", "untrust_key",
    "native_caption", "native_history", "open_workspace", "per_bin", "per_bin_figure", "preview_release",
    "privacy_controls", "session_axis", "session_delta",
    "release_rng", "release_structure", "released_data", "remaining_text", "reset_budget", "run_check",
    "runtime_figure",
    "save_workspace", "scheduler_choices", "session_config", "set_total", "set_workload", "show_flash", "show_handoff",
    "sidebar",
    "simulation_rng", "warm_workers", "stack_recipe", "sweep", "sweep_cache", "sweep_estimate", "plan_releases",
    "target_plans", "use_button", "use_epsilon", "workload",
    "workload_figure", "workload_recipe", "workload_name", "workload_spec",
    "TABLE_DEFAULT_RHO", "TABLE_DISPLAY_DELTA", "table_methods", "TABLE_RHO_CHOICES", "current_table",
    "load_table_upload", "project_table", "release_table", "run_table_compare", "set_table_total", "synthetic_check",
    "table_budget_caption", "table_compare_caption", "make_table_proxy", "table_proxy", "tuning_table",
    "table_proxy_controls", "tune_on_new_proxy", "sweep_axis", "compared_name",
    "TABLE_PROXY_RHO", "TABLE_PROXY_MECHANISM", "TABLE_SYNTH_TRIALS", "table_compare_figures", "table_domain_frame",
    "table_domain_size", "table_downloads", "table_evaluation", "table_feasibility", "table_ledger",
    "table_marginal_figure", "table_marginals_frame", "table_settings", "table_summary", "table_workload",
]
