"""Resource limits live in dplens.core.data.limits, every module enforces that one value, and refusals name the
bound."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from dplens.core.analysis import experiment
from dplens.core.analysis.experiment import run_sweep
from dplens.core.data import datasets, domain, limits
from dplens.core.data.domain import Domain, Histogram
from dplens.core.data.limits import MAX_CELLS, MAX_QUERIES, MAX_SWEEP_RUNS, MAX_UPLOAD_BYTES
from dplens.core.queries import workloads
from dplens.core.queries.workloads import Identity, random_range

CONFIG = Path(__file__).resolve().parent.parent / ".streamlit" / "config.toml"


def test_modules_use_the_central_limits():
    assert domain.MAX_CELLS is limits.MAX_CELLS and datasets.MAX_CELLS is limits.MAX_CELLS
    assert workloads.MAX_QUERIES is limits.MAX_QUERIES and workloads.DENSE_LIMIT is limits.DENSE_LIMIT
    assert datasets.MAX_UPLOAD_BYTES is limits.MAX_UPLOAD_BYTES
    assert experiment.MAX_SWEEP_RUNS is limits.MAX_SWEEP_RUNS


def test_streamlit_server_settings_are_hardened_and_match_the_upload_limit():
    config = tomllib.loads(CONFIG.read_text())
    assert config["server"]["maxUploadSize"] * 2**20 == MAX_UPLOAD_BYTES
    assert config["server"]["enableXsrfProtection"] is True
    assert config["server"]["headless"] is True
    assert config["browser"]["gatherUsageStats"] is False


def test_bounds_are_refused_up_front_naming_the_bound():
    with pytest.raises(ValueError, match=str(MAX_CELLS)):
        Domain(("x",), (MAX_CELLS + 1,))
    with pytest.raises(ValueError, match=str(MAX_QUERIES)):
        random_range(8, MAX_QUERIES + 1)
    histogram = Histogram.from_counts(np.ones(4))
    trials = MAX_SWEEP_RUNS // 2 + 1  # 2 mechanisms × 1 epsilon × trials > the bound, refused before any run
    with pytest.raises(ValueError, match=f"the limit is {MAX_SWEEP_RUNS}"):
        run_sweep(histogram, Identity(4), ["identity", "uniform"], [1.0], trials)
