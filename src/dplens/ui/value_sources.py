"""Where the values on screen come from, in words: the one place charts, legends, tooltips, captions and downloads
take the name of the counts they show from.

Compare and Choose epsilon may run on a DP proxy or a public dataset, and a re-uploaded export is released values:
calling any of those "true counts" tells the curator they are looking at the private data when they are not (or
that the proxy is exact when it is noise). Every screen that shows a dataset's values asks here what to call them.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from dplens.ui.datasets import released_data
from dplens.ui.tuning import PRIVATE, tuning_source

TRUE, PROXY, PUBLIC, RELEASED = "true", "proxy", "public", "released"


@dataclass(frozen=True)
class Source:
    """The words for one source of values.

    >>> SOURCES[PROXY].values, SOURCES[PROXY].value, SOURCES[PROXY].column
    ('DP proxy counts', 'DP proxy count', 'dp_proxy_value')
    """

    kind: str
    value: str  # one value: "true count", in captions, axis titles and tooltips
    values: str  # legends and chart titles
    column: str  # a download's column holding the value
    note: str = ""  # what the values are, said once beside them

    @property
    def private(self) -> bool:
        """Whether these are the private data's own values (for the curator's eyes only)."""
        return self.kind == TRUE


SOURCES = {
    TRUE: Source(TRUE, "true count", "true counts", "true_value", "the private data itself: for your eyes only"),
    PROXY: Source(PROXY, "DP proxy count", "DP proxy counts", "dp_proxy_value",
                  "a noisy copy of the private data (a DP release, clipped at 0), not the true counts"),
    PUBLIC: Source(PUBLIC, "public count", "public counts", "public_value",
                   "another, public dataset of the same shape, not the private data"),
    RELEASED: Source(RELEASED, "released value", "released values", "released_count",
                     "a differentially private release (negatives shown as 0), not the true counts"),
}


def dataset_source() -> Source:
    """What the current dataset's values are: released values for a loaded export, else the true counts."""
    return SOURCES[RELEASED] if released_data() is not None else SOURCES[TRUE]


def tuning_values() -> Source:
    """What the values Compare and Choose epsilon run on are (``tuning_histogram``'s source)."""
    key = tuning_source()
    ss = st.session_state
    if key == PRIVATE:
        return dataset_source()
    if key in ss.get("tuning_proxies", {}):
        return SOURCES[PROXY]
    return SOURCES[RELEASED] if key in ss.get("released", {}) else SOURCES[PUBLIC]
