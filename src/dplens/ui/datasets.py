"""The session's histogram: samples, DPBench files, uploads and derived (rescaled, coarsened) datasets."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import streamlit as st

from dplens.core.data.datasets import (
    DEFAULT_DATASET,
    SAMPLE_DATASETS,
    histogram_from_records,
    load_histogram,
    shape_from_data,
)
from dplens.core.data.domain import Histogram
from dplens.core.data.fingerprint import dataset_fingerprint, records_fingerprint, session_digest
from dplens.core.data.released import ReleasedData, load_release
from dplens.core.data.transform import coarsen, rescale
from dplens.core.privacy.ledger_store import LedgerStore
from dplens.core.release.provenance import recognise
from dplens.ui.identity import current_curator
from dplens.ui.state import init_state

DPBENCH_DIR = Path(__file__).resolve().parents[4] / "shared" / "data" / "dpbench-1d"
RESCALE_STREAM = 31_337  # seeds rescaling: default_rng([seed, RESCALE_STREAM])


def dataset_choices() -> dict[str, str]:
    """dataset_key -> label: samples, DPBench files when ../shared/data is present, uploads."""
    choices = {f"sample:{name}": f"{name} — {desc}" for name, (_, desc) in SAMPLE_DATASETS.items()}
    if DPBENCH_DIR.is_dir():
        for path in sorted(DPBENCH_DIR.glob("*.csv")):
            choices[f"dpbench:{path.stem}"] = f"{path.stem} — DPBench, 4096 bins"
    for key, hist in st.session_state.get("uploads", {}).items():
        kind = ("rescaled: experiments only" if is_rescaled(key) else
                "derived" if key.startswith("derived:") else "released, already private"
                if key.startswith("released:") else "uploaded")
        choices[key] = f"{hist.name} — {kind}, {hist.domain.size:,} cells"
    return choices


@st.cache_data(max_entries=32, show_spinner=False)
def load_reference_histogram(key: str) -> Histogram:
    kind, _, name = key.partition(":")
    if kind == "sample":
        return load_histogram(name)
    if kind == "dpbench":
        return load_histogram(str(DPBENCH_DIR / f"{name}.csv"), name=name)
    raise ValueError(f"unknown dataset {key!r}")


def histogram() -> Histogram:
    """The session's current histogram."""
    init_state()
    key = st.session_state.dataset_key
    uploads = st.session_state.uploads
    if key in uploads:
        return uploads[key]
    try:
        return load_reference_histogram(key)
    except ValueError:
        st.session_state.dataset_key = f"sample:{DEFAULT_DATASET}"
        return load_reference_histogram(st.session_state.dataset_key)


def ledger_key() -> str:
    """The fingerprint whose ledger the current dataset charges (a derived dataset: its source's)."""
    hist = histogram()  # may fall back to the default dataset: read the key after it
    ss = st.session_state
    key = ss.dataset_key
    if key in ss.ledger_parents:
        return ss.ledger_parents[key]
    if key not in ss.fingerprints:
        ss.fingerprints[key] = dataset_fingerprint(hist)
    return ss.fingerprints[key]


def add_upload(data: bytes, filename: str, *, column: str | None = None, bins: int | None = None,
               edges=None, grid_shape: tuple[int, int] | None = None, notes: list[str] | None = None,
               levels: list[list[str]] | None = None) -> Histogram:
    """Parse an upload (raw records when ``column`` is given), keep it in the session and select it.

    ``grid_shape`` declares the size of a long-form ``row,col,count`` grid and ``levels`` those of a labelled file;
    ``notes`` collects what was inferred (dplens.core.data.datasets.load_histogram). An upload whose shape comes from
    its rows (``shape_from_data``: no declaration) is kept under a key ending ``:inferred``, which the Release page
    refuses (``bins_from_data``). Every histogram binned from one records file charges
    that file's ledger (``records_fingerprint``), so rebinning the same people never opens a fresh budget.
    """
    if column:
        hist = histogram_from_records(data, column, bins=bins, edges=edges, name=Path(filename).stem)
    else:
        hist = load_histogram(data, filename=filename, grid_shape=grid_shape, notes=notes, levels=levels)
    shape = "x".join(map(str, grid_shape)) if grid_shape else ""
    if levels:  # the declaration is part of the dataset's identity in the session
        shape += "L" + session_digest(json.dumps(levels).encode())[:8]
    inferred = not column and shape_from_data(data, filename, grid_shape=grid_shape, levels=levels) is not None
    key = f"upload:{session_digest(data)}:{column or ''}:{bins or ''}:{edges or ''}:{shape}" + (
        ":inferred" if inferred else "")
    if column:
        st.session_state.ledger_parents[key] = records_fingerprint(data)
    st.session_state.uploads[key] = hist
    st.session_state.setdefault("upload_files", {})[key] = Path(filename).name  # exports name the file
    st.session_state.dataset_key = key
    return hist


BINS_FROM_DATA_REFUSAL = ("its bins or grid were read from the private data (the categories present, equal-width bins "
                          "between the data's own minimum and maximum, the largest row and col index of a "
                          "row,col,count file, or the labels present in a label,count or A,B,count file), so the "
                          "released shape would disclose them; give bin edges, Grid rows and Grid columns, or Levels "
                          "on the Data page to release. Exploring, comparing and choosing ε need none")


def bins_from_data(key: str | None = None) -> bool:
    """Whether dataset ``key`` (default: the current one) has a shape read from the data: raw records binned on bins
    read from the data, or an undeclared grid or levels (``dplens.core.data.datasets.shape_from_data``).

    Upload keys are ``upload:<hash>:<column>:<bins>:<edges>:<shape>[:inferred]``: records (a column) without edges,
    or a key marked ``inferred``.

    >>> bins_from_data("upload:ab12:age:20::"), bins_from_data("upload:ab12:age::0,18,65:"), bins_from_data("sample:x")
    (True, False, False)
    >>> bins_from_data("upload:ab12:::::inferred"), bins_from_data("upload:ab12:::::8x8")
    (True, False)
    """
    key = st.session_state.dataset_key if key is None else key
    parts = key.split(":")
    return len(parts) >= 5 and parts[0] == "upload" and (bool(parts[2]) and not parts[4] or parts[-1] == "inferred")


def known_release(data: bytes, filename: str) -> ReleasedData | None:
    """The released data in ``data`` when it is signed by this installation or a key the curator trusts (or is a
    values-only CSV this installation released); None otherwise: it is then raw data, charged like any other."""
    released, record = recognise(LedgerStore(owner=current_curator()), data, filename)
    return released if released is not None and record is not None else None


def add_released(data: bytes, filename: str) -> ReleasedData:
    """Keep a dplens export as an already-private dataset (``released:…``); select it when it is a histogram."""
    released = load_release(data, filename)
    key = f"released:{session_digest(data)}"
    st.session_state.setdefault("released", {})[key] = released
    st.session_state.setdefault("upload_files", {})[key] = Path(filename).name
    if released.kind == "counts":
        st.session_state.uploads[key] = released.as_histogram()
        st.session_state.dataset_key = key
    return released


ALREADY_PRIVATE = "Already private: releases from it are post-processing and cost nothing."


def released_data() -> ReleasedData | None:
    """The current dataset's released values and metadata when it is a loaded export, else None."""
    init_state()
    return st.session_state.get("released", {}).get(st.session_state.dataset_key)


def dataset_file(key: str) -> str:
    """The file name behind a dataset key (uploads), or the sample's name: what exports call the dataset."""
    return st.session_state.get("upload_files", {}).get(key) or key.partition(":")[2] or key


def dataset_name(key: str) -> str:
    """A dataset key for people: the session dataset's name, else its file's or sample's name; a key of an upload
    that is not loaded in this session (``upload:<hash>:…``) is never shown.

    >>> dataset_name("sample:smooth")
    'smooth'
    """
    hist = st.session_state.get("uploads", {}).get(key)
    if hist is not None:
        return hist.name
    name = st.session_state.get("upload_files", {}).get(key)
    if name:
        return name
    kind, _, rest = key.partition(":")
    return rest if kind in ("sample", "dpbench") else "an upload not loaded in this session"


RESCALED_PREFIX = "scaled:"  # dataset keys of rescaled data and of anything derived from it
RESCALED_REFUSAL = ("This dataset was rescaled by sampling new records from the original's shape, so one person "
                    "can move it by many records and ε spent on it is not ε spent on the original. It is for "
                    "experiments (Compare, Choose epsilon): release from the original or a coarsened copy of it.")


def is_rescaled(key: str | None = None) -> bool:
    """Whether a dataset (default: the current one) is rescaled data, on which no budget may be spent."""
    key = st.session_state.dataset_key if key is None else key
    return key.startswith(RESCALED_PREFIX)


def add_derived(hist: Histogram, *, rescaled: bool = False) -> Histogram:
    """Keep a derived histogram (rescaled, coarsened) as a session dataset and select it.

    A coarsened dataset's releases are charged to the ledger of the dataset it was derived from (one
    person still moves one count by 1). Rescaled data, and anything derived from it, gets a ``scaled:``
    key: upscaling multiplies one person's influence, so ``ui.charge`` refuses every spend on it.
    """
    parent = ledger_key()
    digest = session_digest(np.ascontiguousarray(hist.counts).tobytes() + hist.name.encode())
    key = f"{RESCALED_PREFIX if rescaled or is_rescaled() else 'derived:'}{digest}"
    st.session_state.ledger_parents[key] = parent
    st.session_state.uploads[key] = hist
    st.session_state.dataset_key = key
    return hist


def derive_dataset(kind: str, value: int) -> None:
    """Button callback: rescale (seeded multinomial) or coarsen the current histogram into a session dataset."""
    try:
        hist = histogram()
        if kind == "rescale":
            add_derived(rescale(hist, int(value), np.random.default_rng([int(st.session_state.seed), RESCALE_STREAM])),
                        rescaled=True)
        else:
            add_derived(coarsen(hist, int(value)))
    except ValueError as err:
        st.session_state.flash_error = str(err)
