"""What Compare and Choose epsilon tune on: the private data (the curator's eyes only), a public dataset, or a DP
proxy of the private data (a small recorded release that later tuning uses at no further cost).

Choosing a mechanism or ε by looking at errors measured on the true counts is itself a use of the private data
that no ledger charges: a choice tuned on public data or on a DP proxy is post-processing of public or already
private information. The page says which, and a release records what its choice was tuned on.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from dplens.core.data.domain import Histogram
from dplens.core.privacy.definitions import ZCDP, Privacy, privacy_words, target
from dplens.core.queries.workloads import Identity
from dplens.core.release.kernel import HistogramRequest, release
from dplens.ui.datasets import (
    ALREADY_PRIVATE,
    dataset_choices,
    histogram,
    ledger_key,
    load_reference_histogram,
    released_data,
)
from dplens.ui.definition import definition
from dplens.ui.ledger import default_total, delta, ledger, ledger_store
from dplens.ui.state import init_state

PRIVATE = "private"
PUBLIC_PREFIXES = ("sample:", "dpbench:")  # built-in samples and DPBench histograms are public
PROXY_EPSILON = 0.1  # the default spend on a DP proxy: a small share of the default total of 5
PROXY_RHO = PROXY_EPSILON ** 2 / 2  # the same under zCDP: the ρ that ε = 0.1 of Laplace noise implies
PRIVATE_NOTE = ("Tuned on the private data: for the curator's eyes only. Choosing a mechanism or ε from these "
                "errors is itself a use of the private data that no ledger charges; tune on a public dataset or a "
                "DP proxy to keep the choice free.")


def proxy_noise_warning(counts: np.ndarray, noise_scale: float) -> str | None:
    """A warning when a DP proxy's typical bin is noise: its noise scale (b, or σ) is at least its median count.

    The rule reads the proxy only (post-processing): when more than half of the bins are within one noise scale of
    zero, as in a mostly-zero histogram, most of what Compare and Choose epsilon measure is the proxy's own noise.

    >>> proxy_noise_warning(np.r_[np.zeros(90), np.full(10, 500.0)], 10.0)[:40]
    'Rankings on this DP proxy may mislead: i'
    >>> proxy_noise_warning(np.full(100, 500.0), 10.0) is None
    True
    """
    median = float(np.median(counts))
    if noise_scale < median:
        return None
    return (f"Rankings on this DP proxy may mislead: its noise scale ({noise_scale:.3g}) is at least its median bin "
            f"({median:.3g}), so most of its bins are noise, and clipping at 0 lifts every empty bin. Mechanisms "
            "that exploit sparsity can rank differently on the true counts; a proxy made with more budget is "
            "more faithful.")


def _same_kind(hist: Histogram) -> bool:
    return hist.domain.shape == histogram().domain.shape


def _reference(key: str) -> Histogram:
    ss = st.session_state
    if key in ss.get("tuning_proxies", {}):
        return ss.tuning_proxies[key]["hist"]
    uploads = ss.get("uploads", {})
    return uploads[key] if key in uploads else load_reference_histogram(key)


def sources() -> dict[str, str]:
    """What the current dataset can be tuned on: key -> label (only data of the same shape as the current)."""
    init_state()
    ss = st.session_state
    choices = {PRIVATE: "the private data (your eyes only)"}
    public = set(ss.get("public_uploads", set()))
    current = ss.dataset_key
    for key, proxy in ss.get("tuning_proxies", {}).items():
        if proxy["for"] == ledger_key():
            choices[key] = f"DP proxy of this data ({proxy['privacy']} spent)"
    for key, label in dataset_choices().items():
        if key == current:
            continue
        if key.startswith(PUBLIC_PREFIXES) or key in public:
            try:
                if _same_kind(_reference(key)):
                    choices[key] = f"{label.split(' — ')[0]} (public)"
            except ValueError:
                continue
    return choices


def tuning_source() -> str:
    """The chosen source's key (``PRIVATE`` when the choice no longer applies: another dataset, shape or proxy).

    Kept in a plain session key (``tuning_choice``): a widget's state is dropped while its page is not shown.
    """
    choice = st.session_state.get("tuning_choice", PRIVATE)
    return choice if choice in sources() else PRIVATE


def tuning_histogram() -> Histogram:
    """The histogram Compare and Choose epsilon run on."""
    key = tuning_source()
    return histogram() if key == PRIVATE else _reference(key)


def tuning_key() -> str:
    """The dataset key the tuning results are cached under."""
    key = tuning_source()
    return st.session_state.dataset_key if key == PRIVATE else f"{key} → {st.session_state.dataset_key}"


def tuned_on() -> str:
    """What a release's choice was tuned on, in words (for its metadata)."""
    key = tuning_source()
    return "the private data (not private: the curator looked at it)" if key == PRIVATE else sources()[key]


def make_proxy() -> None:
    """Button callback: release a noisy copy of the data (identity mechanism) through the release kernel, charged
    to the dataset's ledger, and keep it as a tuning source for this dataset."""
    ss = st.session_state
    hist = histogram()
    try:
        if definition() == "zcdp":  # asked in ρ, the unit of a zCDP ledger
            privacy: Privacy = ZCDP(float(ss.get("tuning_proxy_rho", PROXY_RHO)))
        else:
            privacy = target(definition(), float(ss.get("tuning_proxy_epsilon", PROXY_EPSILON)), delta())
        request = HistogramRequest("identity", {}, privacy, Identity(hist.domain.size), "identity", delta())
        published = release(request, hist.counts, store=ledger_store(), fingerprint=ledger_key(),
                                      name=f"{hist.name} (tuning proxy)", where="tuning proxy",
                                      workspace=ss.get("workspace_id"), default_total=default_total())
    except ValueError as err:  # over budget, bad ε: nothing charged
        ss.flash_error = f"No DP proxy made: {err}"
        return
    key = f"proxy:{str(published.export_id)[:12]}"  # a secure release of private data: an export id
    estimate = published.release.estimate
    if estimate is None:  # identity always estimates the bins; a release may in general hold none
        ss.flash_error = "No DP proxy made: the identity release holds no bin estimates"
        return
    counts = estimate.clip(0).reshape(hist.domain.shape)  # clipping: post-processing
    proxy = Histogram.from_counts(counts, labels=hist.labels, name=f"{hist.name} (DP proxy)"[:80],
                                  axis_names=hist.domain.names)
    params = published.release.params
    ss.setdefault("tuning_proxies", {})[key] = {"for": ledger_key(), "privacy": privacy_words(privacy, delta()),
                                                "hist": proxy, "noise_scale": params.get("noise_scale",
                                                                                         params.get("sigma"))}
    ss.tuning_choice = key
    ledger()


def tuning_controls(page: str) -> None:
    """The "Tune on" choice for ``page`` (shared by the pages), the DP proxy button, and what it means."""
    if released_data() is not None:  # no private data to keep out of the choice, and no budget for a proxy
        st.info(f"Tuned on the released values of this export. {ALREADY_PRIVATE}")
        return
    choices = sources()
    ss = st.session_state
    ss[f"{page}_tuning"] = tuning_source()  # the widget follows the session's choice on every page
    left, right = st.columns([3, 2])
    left.selectbox("Tune on", list(choices), format_func=choices.__getitem__, key=f"{page}_tuning",
                   on_change=lambda: ss.update(tuning_choice=ss[f"{page}_tuning"]),
                   help="Public data (built-in samples, DPBench, uploads you declared public) or a DP proxy keep "
                        "the choice of mechanism and ε free of the private data.")
    with right.popover("Make a DP proxy"):
        charged = "Charged once to this dataset's ledger; every later comparison on the copy is free."
        if definition() == "zcdp":
            st.number_input("ρ to spend on a noisy copy", 1e-5, 5.0, PROXY_RHO, format="%.4g", key="tuning_proxy_rho",
                            help=f"{charged} The identity mechanism: Laplace noise at ε = √(2ρ), which is ρ-zCDP.")
        else:
            st.number_input("ε to spend on a noisy copy" if definition() == "pure" else
                            f"ε (at δ = {delta():g}) to spend on a noisy copy", 0.001, 5.0, PROXY_EPSILON,
                            key="tuning_proxy_epsilon", help=charged)
        st.button("Spend and make the proxy", key=f"{page}_make_proxy", on_click=make_proxy)
    if tuning_source() == PRIVATE:
        st.warning(PRIVATE_NOTE)
    else:
        st.info(f"Tuned on {choices[tuning_source()]}: the choices made here cost the private data nothing more.")
        proxy = ss.get("tuning_proxies", {}).get(tuning_source())
        if proxy and proxy.get("noise_scale") and (warning := proxy_noise_warning(proxy["hist"].counts,
                                                                                  float(proxy["noise_scale"]))):
            st.warning(warning)
