"""What a paper reproduction returns (``Reproduction``: claims, verdicts, readings, tables), the data it reads
(DPBench histograms from ``../shared/data/dpbench-1d`` or ``$DPLENS_DPBENCH_DIR``, else a bundled sample), and the
checks every reproduction shares."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dplens.core.data.datasets import SAMPLE_DATASETS, load_histogram
from dplens.core.data.domain import Histogram
from dplens.core.papers.literal import labelled
from dplens.core.papers.verdicts import (
    COLUMNS,
    Verdict,
)
from dplens.core.validate import integer

DPBENCH_DIR = Path(__file__).resolve().parents[5] / "shared" / "data" / "dpbench-1d"
DPBENCH_ENV = "DPLENS_DPBENCH_DIR"  # overrides DPBENCH_DIR (e.g. for a worktree one level deeper)


def dpbench_dir() -> Path:
    """Where the DPBench 1-D CSVs are read from: ``$DPLENS_DPBENCH_DIR`` if set, else ``DPBENCH_DIR``."""
    return Path(os.environ.get(DPBENCH_ENV) or DPBENCH_DIR)


@dataclass(frozen=True)
class Reading:
    """A quantity as the paper claims it, as its literal reading gives it, and as corrected (the correction in
    words)."""

    quantity: str
    claim: str
    literal: str
    corrected: str
    literal_is_dp: bool = True

    def row(self) -> dict[str, str]:
        """A table row; a literal reading that breaks DP carries the NOT DIFFERENTIALLY PRIVATE label."""
        return {"quantity": self.quantity, "paper claims": self.claim,
                "literal reading": self.literal if self.literal_is_dp else labelled(self.literal),
                "corrected (dplens)": self.corrected}


@dataclass(frozen=True, eq=False)
class Reproduction:
    """One paper's experiment: the claim, what we measure, verdicts, readings, findings and tidy tables."""

    name: str
    title: str
    claim: str
    measure: str
    data: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    findings: tuple[str, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    readings: tuple[Reading, ...] = ()
    not_reproduced: str = ""  # what the paper did that dplens cannot run, and why


def verdict_table(reproduction: Reproduction) -> pd.DataFrame:
    """The claim rows: claim, the paper's number, literal reading, corrected (dplens), interval, verdict."""
    return pd.DataFrame([v.row() for v in reproduction.verdicts], columns=list(COLUMNS))


def reading_table(source: Reproduction | Sequence[Reading]) -> pd.DataFrame:
    """Claim / literal reading / corrected, side by side (of a reproduction, or of readings)."""
    readings = source.readings if isinstance(source, Reproduction) else source
    return pd.DataFrame([r.row() for r in readings],
                        columns=["quantity", "paper claims", "literal reading", "corrected (dplens)"])


def load_data(data, data_dir: Path | None = None, *, dimensions: int = 1) -> tuple[np.ndarray, str]:
    """Counts and a description from a DPBench name (e.g. ``PATENT``), a file path, a bundled sample name or
    a ``Histogram`` (e.g. the app session's dataset).

    >>> counts, label = load_data("tips-bill")
    >>> counts.size, label
    (51, "sample 'tips-bill'")
    """
    if isinstance(data, Histogram):
        if data.counts.ndim != dimensions:
            raise ValueError(f"dataset {data.name!r} is {data.counts.ndim}-D; this experiment needs a "
                             f"{dimensions}-D histogram")
        return np.asarray(data.counts, dtype=float), f"dataset '{data.name}'"
    text = str(data)
    dpbench = Path(data_dir or dpbench_dir()) / f"{Path(text).stem.upper()}.csv"
    if text in SAMPLE_DATASETS:
        histogram, label = load_histogram(text), f"sample '{text}'"
    elif Path(text).is_file():
        histogram, label = load_histogram(text), f"file {text}"
    elif "/" not in text and dpbench.is_file():
        histogram, label = load_histogram(dpbench), f"DPBench {dpbench.stem}"
    else:
        raise ValueError(f"data {text!r} is neither a file, a sample ({', '.join(SAMPLE_DATASETS)}) nor a "
                         f"DPBench name with a CSV in {dpbench.parent}")
    counts = histogram.counts if dimensions == 2 else histogram.vector
    if np.ndim(histogram.counts) != dimensions:
        raise ValueError(f"data {text!r} is {np.ndim(histogram.counts)}-D; this experiment needs a "
                         f"{dimensions}-D histogram")
    return np.asarray(counts, dtype=float), label


def dataset_or_sample(name: str, fallback: str, data_dir: Path | None,
                      data: str | Path | None = None) -> tuple[np.ndarray, str]:
    """``data`` if given; else the DPBench histogram when its file exists, else a bundled sample (and the name used)."""
    if data is not None:
        return load_data(data, data_dir)
    path = Path(data_dir or dpbench_dir()) / f"{name}.csv"
    if path.is_file():
        return load_histogram(path).vector, f"DPBench {name}"
    return load_histogram(fallback).vector, f"sample '{fallback}' (DPBench {name} not found at {path.parent})"


def optional_datasets(names, data_dir: Path | None) -> tuple[list[tuple[np.ndarray, str]], list[str]]:
    """The DPBench histograms among ``names`` whose files exist, and a note for each one skipped."""
    found, skipped = [], []
    for name in names:
        path = Path(data_dir or dpbench_dir()) / f"{name}.csv"
        if path.is_file():
            found.append((load_histogram(path).vector, f"DPBench {name}"))
        else:
            skipped.append(f"DPBench {name} skipped (not found at {path.parent})")
    return found, skipped


def seeded_rng(seed: int, *keys: int) -> np.random.Generator:
    return np.random.default_rng([seed, *keys])


def check_runs(trials: int, name: str = "trials") -> int:
    return integer(name, trials)


def check_epsilons(epsilons, name: str = "epsilons") -> tuple[float, ...]:
    values = tuple(float(e) for e in epsilons)
    if not values or not all(math.isfinite(e) and e > 0 for e in values):
        raise ValueError(f"{name} must be a non-empty list of finite numbers > 0, got {epsilons!r}")
    return values


def data_choices(data_dir: Path | None = None) -> list[str]:
    """Names ``--data`` accepts without a path: the bundled 1-D samples and the DPBench files found."""
    directory = Path(data_dir or dpbench_dir())
    dpbench = sorted(p.stem for p in directory.glob("*.csv")) if directory.is_dir() else []
    return [*dpbench, *(k for k in SAMPLE_DATASETS if k != "grid-2d")]


def summary(table: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Mean (and expected, where present) of ``value`` over trials, grouped by ``by``."""
    columns = {"value": "mean"} | ({"expected": "first"} if "expected" in table else {})
    return table.groupby(by, dropna=False, sort=False).agg(columns).reset_index()
