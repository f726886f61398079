"""The Learn page's logic (callbacks, sections, figures); the page script calls it through ``ui``."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from dplens.core.mechanisms import MECHANISMS, gaussian_twins
from dplens.core.papers.teaching import (
    composition_by_definition,
    gaussian_crossover,
    neighbouring_outputs,
    output_ratio,
    privacy_loss_distributions,
    range_error_by_length,
    range_lengths,
    ratio_band,
)
from dplens.ui.charts import PALETTE, TRUE_COLOUR
from dplens.ui.datasets import histogram
from dplens.ui.state import simulation_rng
from dplens.ui.workloads import workload, workload_name

RATIO_BINS = 16        # §2: coarse bins, so every shown ratio rests on many outputs
RATIO_MIN_COUNT = 200  # §2: bins with fewer outputs (of either sample) are not shown


LAYOUT = {"height": 340, "margin": {"l": 50, "r": 10, "t": 30, "b": 40}, "legend": {"orientation": "h", "y": -0.25}}


@st.cache_data(max_entries=8, show_spinner="Computing expected range errors…")
def range_errors(n: int, epsilon: float) -> tuple[np.ndarray, dict]:
    lengths = range_lengths(n, 9)
    return lengths, range_error_by_length(n, epsilon, lengths)


def ratio_ticks(epsilon: float) -> dict[float, str]:
    """Readable log-axis ticks for the ratio chart: e^±ε, 1 and a few round values in between."""
    bound = math.exp(epsilon)
    ticks = {1 / bound: f"e^−ε = {1 / bound:.2f}", 1.0: "1", bound: f"e^ε = {bound:.2f}"}
    for value in (0.25, 0.5, 2.0, 4.0, 10.0, 20.0):
        if 1 / (1.3 * bound) < value < 1.3 * bound and all(abs(math.log(value / t)) > 0.15 for t in ticks):
            ticks[value] = f"{value:g}"
    return dict(sorted(ticks.items()))


def gaussian_section() -> None:
    """§5: Laplace or Gaussian — privacy-loss distributions, composition under each definition, the crossover."""
    st.header("5. Laplace or Gaussian: pure ε-DP, (ε, δ) and zCDP")
    st.markdown("Laplace noise gives **pure ε-DP**: the privacy loss never exceeds ε. Gaussian noise gives "
                "**(ε, δ)-DP** (the loss may exceed ε with probability about δ, and (ε, δ) as a definition even "
                "permits a rare catastrophic failure) or **ρ-zCDP**, whose loss is concentrated and composes "
                "tightly: k releases cost kρ. Gaussian noise is calibrated to the L2 sensitivity Δ₂, Laplace to Δ₁, "
                "so workloads with Δ₂ ≪ Δ₁ (prefix sums, wavelets) favour it.")
    left, right = st.columns([1, 2])
    epsilon5 = left.select_slider("ε per release", [0.1, 0.25, 0.5, 1.0, 2.0], 1.0, key="learn_gauss_epsilon")
    delta5 = left.select_slider("δ", [1e-9, 1e-7, 1e-6, 1e-5], 1e-6, format_func="{:g}".format, key="learn_gauss_delta")
    grid = np.linspace(-3 * epsilon5, 3 * epsilon5, 601)
    pld = privacy_loss_distributions(epsilon5, delta5, grid)
    fig = go.Figure([go.Scatter(x=grid, y=pld["gaussian_density"], name=f"Gaussian (σ = {pld['sigma']:.3g})",
                                line={"color": PALETTE[1]}),
                     go.Scatter(x=grid, y=pld["laplace_density"], name="Laplace (continuous part)",
                                line={"color": PALETTE[2]}),
                     go.Bar(x=list(pld["laplace_atoms"]), y=list(pld["laplace_atoms"].values()), width=0.03 * epsilon5,
                            name="Laplace atoms at ±ε", marker_color=PALETTE[2])])
    fig.add_vline(x=epsilon5, line_dash="dot")
    fig.update_layout(xaxis_title="privacy loss L = ln p(y)/p'(y)", yaxis_title="density", **LAYOUT)
    right.plotly_chart(fig, key="learn_pld")
    left.caption(f"Privacy-loss distributions of one count (Δ = 1). Laplace's loss stops at ε; the Gaussian's "
                 f"exceeds ε with probability {pld['gaussian_tail']:.2g} (paid for by δ = {delta5:g}).")
    ks = np.unique(np.geomspace(1, 1000, 60).astype(int))
    comp5 = composition_by_definition(epsilon5, delta5, ks)
    fig = go.Figure([go.Scatter(x=ks, y=comp5["pure"], name="pure ε-DP (Laplace): kε", line={"color": PALETTE[2]}),
                     go.Scatter(x=ks, y=comp5["approx"], name="(ε, δ) basic: kε at kδ", line={"dash": "dot"}),
                     go.Scatter(x=ks, y=comp5["zcdp"], name="zCDP (Gaussian): kρ → ε at δ",
                                line={"color": PALETTE[1]}),
                     go.Scatter(x=ks, y=comp5["pure_via_zcdp"], name="Laplace accounted in zCDP",
                                line={"dash": "dash", "color": PALETTE[2]})])
    fig.update_layout(xaxis_type="log", yaxis_type="log", xaxis_title="releases k",
                      yaxis_title=f"total ε at δ = {delta5:g}", **LAYOUT)
    st.plotly_chart(fig, key="learn_composition_definitions")
    st.caption("Composition of k = 1…1000 releases, each at the ε above (at δ). zCDP composes exactly in ρ and "
               "converts once (Canonne, Kamath & Steinke 2020); (ε, δ) by basic composition also adds up δ.")
    hist5, workload5 = histogram(), workload()
    pairs = gaussian_twins()  # Laplace mechanism → its Gaussian twin, from the registered classes
    pick = st.selectbox("Laplace mechanism (vs its Gaussian variant) on your workload", list(pairs),
                        key="learn_gauss_pair")
    try:
        cross = gaussian_crossover(MECHANISMS[pick], MECHANISMS[pairs[pick]], workload5, delta5,
                                   np.geomspace(0.01, 100, 40))
    except ValueError as err:
        st.info(f"No analytic error for this workload: {err}")
    else:
        fig = go.Figure([go.Scatter(x=cross["epsilons"], y=cross["laplace"], name=pick, line={"color": PALETTE[2]}),
                         go.Scatter(x=cross["epsilons"], y=cross["gaussian"], name=pairs[pick],
                                    line={"color": PALETTE[1]})])
        if cross["crossover"]:
            fig.add_vline(x=cross["crossover"], line_dash="dot")
        fig.update_layout(xaxis_type="log", yaxis_type="log", xaxis_title=f"ε (at δ = {delta5:g})",
                          yaxis_title="expected RMSE per query", **LAYOUT)
        st.plotly_chart(fig, key="learn_crossover")
        if cross["crossover"] is None:
            winner = pairs[pick] if cross["gaussian"][0] < cross["laplace"][0] else pick
            st.caption(f"On `{workload_name()}` ({hist5.domain.size:,} cells) {winner} wins over the whole range.")
        else:
            side = "above" if cross["gaussian_wins_above"] else "below"
            st.caption(f"Crossover at ε ≈ {cross['crossover']:.3g}: the Gaussian variant wins {side} it on "
                       f"`{workload_name()}`.")


def ratio_section() -> None:
    """§2: one count released many times — the observed likelihood ratio against e^ε, with its sampling band."""
    st.header("2. One count, released many times")
    st.markdown("Release the same count again and again: the outputs form a Laplace cloud around the truth. "
                "Add one person (x → x+1) and the cloud barely moves. Differential privacy promises that no "
                "output is more than **e^ε** times likelier under one than under the other, so an observer "
                "cannot tell whether that person is in the data.")
    left, right = st.columns([1, 2])
    count = left.number_input("True count x", 0, 10_000, 10, key="learn_count")
    epsilon2 = left.slider("Epsilon ε ", 0.1, 3.0, 0.5, 0.1, key="learn_epsilon_count")
    releases = left.select_slider("Releases", [10_000, 100_000, 1_000_000], 1_000_000, key="learn_releases",
                                  help="More releases shrink the sampling band around each observed ratio.")
    outputs_x, outputs_y = neighbouring_outputs(count, epsilon2, releases, simulation_rng(2))
    scale2 = 1 / epsilon2
    # 16 bins over ±4 noise scales: coarse enough that every bin shown holds hundreds of outputs
    edges = np.linspace(count - 4 * scale2, count + 1 + 4 * scale2, RATIO_BINS + 1)
    p, q, ratio = output_ratio(outputs_x, outputs_y, edges, min_count=RATIO_MIN_COUNT)
    low, high = ratio_band(outputs_x, outputs_y, edges, min_count=RATIO_MIN_COUNT)
    centres = (edges[:-1] + edges[1:]) / 2
    bound = math.exp(epsilon2)
    worst = int(np.nanargmax(np.maximum(ratio, 1 / ratio)))
    flipped = ratio[worst] < 1  # the largest departure may be below 1: compare 1/ratio with e^ε then
    largest, band = (1 / ratio[worst], (1 / high[worst], 1 / low[worst])) if flipped else (
        ratio[worst], (low[worst], high[worst]))
    left.metric("e^ε (the bound)", f"{bound:.3g}")
    left.metric("Largest observed ratio", f"{largest:.3g}", help="Over the bins shown (each holds at least "
                f"{RATIO_MIN_COUNT} outputs of both). Its 95 % sampling band: {band[0]:.3g} to {band[1]:.3g}.")
    verdict = ("at or below the bound" if largest <= bound else
               "above the bound only by sampling noise: its band reaches down to the bound"
               if band[0] <= bound else "above the bound beyond its sampling band (check the sampler)")
    left.caption(f"The observed ratio is {verdict}. Each ratio is estimated from a finite sample, so it "
                 "wobbles: the error bars are a 95 % band for all bins at once. Where the true ratio equals "
                 "e^ε (the tails), about half the points land a little above the line, and their bands "
                 "cross it.")
    fig = go.Figure([go.Bar(x=centres, y=p, name=f"outputs for x = {count}", marker_color=PALETTE[0],
                            opacity=0.55),
                     go.Bar(x=centres, y=q, name=f"outputs for x + 1 = {count + 1}", marker_color=PALETTE[1],
                            opacity=0.55)])
    fig.update_layout(barmode="overlay", bargap=0, xaxis_title="released value", yaxis_title="share of releases",
                      **LAYOUT)
    right.plotly_chart(fig, key="learn_outputs")
    fig = go.Figure([go.Scatter(x=centres, y=ratio, mode="markers", name="P[output | x] / P[output | x+1]",
                                marker={"color": PALETTE[2]},
                                error_y={"type": "data", "symmetric": False, "array": high - ratio,
                                         "arrayminus": ratio - low, "color": PALETTE[2]})])
    for level in (bound, 1 / bound):
        fig.add_hline(y=level, line_dash="dash", line_color=TRUE_COLOUR)
    ticks = ratio_ticks(epsilon2)
    fig.update_layout(xaxis_title="released value (records)", yaxis_title="ratio of output probabilities",
                      yaxis={"type": "log", "tickvals": list(ticks), "ticktext": list(ticks.values())}, **LAYOUT)
    right.plotly_chart(fig, key="learn_ratio")

