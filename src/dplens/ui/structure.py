"""A release's structure (``Release.details``: WDA division, DAWA buckets, SReB_GCA groups, AHP clusters,
OM groups …) shown to the curator; display-only, never exported."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import streamlit as st

_SHOWN_ROWS = 200  # rows of a structure table shown on the page


def _table(name: str, value: object) -> dict[str, np.ndarray] | list | None:
    """Display rows for one entry of ``details``, or None when it is not tabular (a matrix, an object)."""
    if isinstance(value, list) and all(isinstance(row, Mapping) for row in value):
        return value
    array = np.asarray(value) if isinstance(value, np.ndarray | list | tuple) else None
    if array is None or array.ndim != 1 or not np.issubdtype(array.dtype, np.number):
        return None
    if name == "bounds":  # DAWA: bucket starts followed by n (dplens.core.mechanisms.dawa)
        starts, ends = array[:-1].astype(int), array[1:].astype(int)
        return {"bucket": np.arange(starts.size), "first cell": starts, "last cell": ends - 1,
                "cells": ends - starts}
    return {"index": np.arange(array.size), name.replace("_", " "): array}


def release_structure(details: Mapping[str, object], key: str) -> None:
    """An expander with one table (or a one-line description) per entry of ``Release.details``."""
    if not details:
        return
    with st.expander("Structure of this release"):
        st.caption("How the mechanism organised this release (division, groups, buckets, clusters). "
                   "Shown to you as curator only; no export contains it.")
        for name, value in details.items():
            title = name.replace("_", " ")
            table = _table(name, value)
            if table is None:
                shape = getattr(value, "shape", None)
                what = f"{shape[0]:,} × {shape[1]:,} matrix" if shape is not None and len(shape) == 2 else \
                    type(value).__name__
                st.markdown(f"**{title}**: {what}")
                continue
            rows = len(table) if isinstance(table, list) else len(next(iter(table.values())))
            st.markdown(f"**{title}** ({rows:,} rows{f', first {_SHOWN_ROWS} shown' if rows > _SHOWN_ROWS else ''})")
            shown = table[:_SHOWN_ROWS] if isinstance(table, list) else {k: v[:_SHOWN_ROWS] for k, v in table.items()}
            st.dataframe(shown, hide_index=True, key=f"{key}_{name}")
