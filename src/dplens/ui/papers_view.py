"""The Papers page's logic (callbacks, sections, figures); the page script calls it through ``ui``."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dplens.core.data.domain import Histogram
from dplens.core.mechanisms.lrm import LRM
from dplens.core.papers.literal import DEMOS, NOT_DP, labelled, run_demo
from dplens.core.papers.report import figures
from dplens.core.papers.reproduce import paper_readings, run_reproduction
from dplens.core.papers.reproduction import data_choices, reading_table, verdict_table
from dplens.core.papers.verdicts import MIN_TRIALS
from dplens.core.release.export import frame_to_csv
from dplens.ui.datasets import histogram

# sorted; GGS at λ = 10 groups it as [1,1,2,3] [8,9,10] [100] [120] [1000]
GGS_EXAMPLE = np.array([1.0, 1, 2, 3, 8, 9, 10, 100, 120, 1000])


CURRENT = "current workload (Workloads page)"


SHOW_MATRICES = 400  # entries of W up to which W, W̃ and B are shown in full


PAPER_DATA = "the paper's data (default)"


SESSION_DATA = "the current dataset (Data page)"


AUDIT_RUNS = 2000  # per side: enough for every literal variant to exceed ε (tests/test_literal.py), ~1–5 s


MARKDOWN_LEAD = re.compile(r"^(\s*)([>#+*-]|\d+[.)])")  # a cell starting so renders as a quote, heading or list


def markdown_safe(table: pd.DataFrame) -> pd.DataFrame:
    """The table with every text cell escaped for st.table, which renders cells as Markdown: a leading ">"
    (WDA's "> 40 %") would otherwise become a blockquote and vanish, "#" a heading, "-"/"1." a list.

    >>> markdown_safe(pd.DataFrame({"paper": ["> 40 %", "≈ 40 %"]})).paper.tolist()
    ['\\\\> 40 %', '≈ 40 %']
    """
    def escape(value):
        return MARKDOWN_LEAD.sub(lambda m: m.group(1) + "\\" + m.group(2), value) if isinstance(value, str) else value

    return table.apply(lambda column: column.map(escape)) if len(table) else table


@st.cache_data(max_entries=8, show_spinner="Running the reproduction (a few seconds to a minute)…",
               hash_funcs={Histogram: lambda h: (h.name, h.counts.tobytes(), h.counts.shape)})
def reproduction(name: str, seed: int, data, epsilons: str, trials: int | None):
    return run_reproduction(name, data=data, epsilons=epsilons or None, trials=trials, seed=seed)


@st.cache_data(max_entries=8, show_spinner=False)
def readings(name: str):
    return reading_table(paper_readings(name))


@st.cache_data(max_entries=16, show_spinner="Auditing both variants on the neighbouring pair…")
def audit_demo(key: str, runs: int, seed: int):
    return pd.DataFrame(run_demo(key, runs=runs, seed=seed))


def show_readings(name: str) -> None:
    st.markdown("**Claim, literal reading, corrected** — each quantity as the paper prints it, as its text reads "
                "literally, and as dplens computes it with the papers' errors corrected (literal readings marked "
                f"{NOT_DP} "
                "break differential privacy).")
    st.table(markdown_safe(readings(name)).set_index("quantity"))  # a static table: long cells wrap


def show_literal_variants(name: str) -> None:
    demos = {key: demo for key, demo in DEMOS.items() if demo.paper == name}
    if not demos:
        return
    st.subheader(f"Literal variants — {NOT_DP}")
    st.caption("Shown here only: never registered as mechanisms, never offered for release, never exportable. "
               "The audit runs each variant many times on two neighbouring histograms and bounds the privacy loss "
               "from below (99.9 % confidence); a bound above the claimed ε means the variant is not ε-DP.")
    for key, demo in demos.items():
        st.markdown(f"**{labelled(demo.literal.name.split(' — ')[0])}** — {demo.erratum.split(': ', 1)[-1]} "
                    f"Neighbouring pair: {demo.pair}; workload {demo.workload.describe()}; corrected twin: "
                    f"{demo.corrected.name}."
                    + (f" The audit also watches what an attacker computes from each release: {demo.watched}."
                       if demo.watched else ""))
        if st.button("Audit the literal and the corrected variant", key=f"papers_audit_{key}"):
            st.session_state[f"papers_audited_{key}"] = True
        if st.session_state.get(f"papers_audited_{key}"):
            table = audit_demo(key, AUDIT_RUNS, int(st.session_state.seed))
            st.table(markdown_safe(table).set_index("variant"))
            literal, corrected = (table[(table.kind == kind) & (table.how == "audit")].iloc[0]
                                  for kind in ("literal", "corrected"))
            st.error(f"{NOT_DP}: the audit measured a privacy loss ≥ {literal['measured loss ≥']:g} against the "
                     f"claimed ε = {literal['claimed ε']:g}; the corrected variant: ≥ "
                     f"{corrected['measured loss ≥']:g}, "
                     + ("within ε." if corrected["measured loss ≥"] <= corrected["claimed ε"] else "ABOVE ε too."))
            st.caption("A measured lower bound below 0 only means the audit found nothing: a privacy loss is never "
                       "negative, so such bounds are shown as 0 (the raw value is in the evidence column).")


REPRODUCTION_TITLES = {"om": "Reproduction — accuracy (Figs. 1–3)",
                       "om-times": "Reproduction — optimisation time (Figs. 4–5)"}


def show_reproduction(name: str) -> None:
    st.subheader(REPRODUCTION_TITLES.get(name, "Reproduction"))
    left, middle, right = st.columns(3)
    choice = left.selectbox("Data", [PAPER_DATA, SESSION_DATA, *data_choices()], key=f"papers_data_{name}",
                            help="The dataset chosen or uploaded on the Data page, a bundled sample or a DPBench "
                                 "histogram (python -m dplens reproduce --data FILE|NAME).")
    epsilons = middle.text_input("ε values (comma-separated; empty = the paper's)", "", key=f"papers_eps_{name}",
                                 help="α for Xiao et al.; Table 3's ε for Zhao.")
    trials = right.number_input("Trials (0 = the default)", 0, 500, 0, key=f"papers_trials_{name}",
                                help=f"A claim holds or fails only when its 95 % interval clears the bound with at "
                                     f"least {MIN_TRIALS} trials; with fewer it is inconclusive.")
    if st.button("Run the paper's experiment", key=f"papers_run_{name}"):
        st.session_state[f"papers_ran_{name}"] = True
    if not st.session_state.get(f"papers_ran_{name}"):
        st.caption(f"Same as `python -m dplens reproduce {name} --output DIR [--data D] [--epsilons E] [--trials T]` "
                   "(CSV + HTML).")
        return
    data = None if choice == PAPER_DATA else histogram() if choice == SESSION_DATA else choice
    result = reproduction(name, int(st.session_state.seed), data, epsilons.strip(), int(trials) or None)
    st.markdown(f"**The paper claims:** {result.claim}\n\n**We measure:** {result.measure}\n\n**Data:** {result.data}")
    st.markdown("**Claims and verdicts** — one row per claim: the paper's number, the literal reading of its text, "
                "the corrected reading (dplens's number, named: ours first), the 95 % interval the rule was applied "
                f"to, and the verdict. The rule: holds or fails only when the interval clears the claim's bound with "
                f"≥ {MIN_TRIALS} trials, else inconclusive; exact numbers are compared directly.")
    verdicts = verdict_table(result)
    st.table(markdown_safe(verdicts).set_index("claim"))
    if result.not_reproduced:
        st.info(f"Not reproduced: {result.not_reproduced}")
    st.markdown("\n".join(f"- {finding}" for finding in result.findings))
    for i, fig in enumerate(figures(result)):
        st.plotly_chart(go.Figure(fig), key=f"papers_fig_{name}_{i}")
    for key, table in (result.tables | {"verdicts": verdicts, "readings": reading_table(result)}).items():
        st.download_button(f"Download {key} (CSV)", frame_to_csv(table), f"{name}-{key}.csv",
                           "text/csv", key=f"papers_csv_{name}_{key}")


def show_lrm(workload, om_total: float) -> None:
    """The OM paper's main comparator on the same workload: LRM's factorisation W = BL and its exact error."""
    with st.expander("LRM on this workload (Yuan et al. 2012, the paper's main comparator)"):
        try:
            f = LRM().factorisation(workload)
        except ValueError as err:
            st.info(f"LRM cannot factorise this workload: {err}")
            return
        st.write(f"rank(W) = {f.rank} · L has r = {f.strategy.shape[0]} rows · Δ₁(L) = {f.sensitivity:.4g} · "
                 f"tr(BᵀB) = {f.trace:.5g} · total squared error at ε = 1: {f.expected_total_mse(1.0):.5g} "
                 f"(OM {om_total:.5g}) · optimiser: {f.note}")

