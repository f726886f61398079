"""`python -m dplens --help` starts without NumPy, SciPy, pandas, OpenDP or the registries (bench/bench_cli_start.py
times it), and the light name lists its help shows equal the registries they stand for."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

import dplens.cli as cli
from dplens.core.papers import cli as papers_cli

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "scipy", "pandas", "opendp", "dplens.core.mechanisms", "dplens.core.registry",
         "dplens.core.papers.reproduce")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    for action in cli.build_parser()._actions:  # argparse keeps subparsers here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


SUBCOMMANDS = tuple(_subcommands())


def _help(*args: str) -> tuple[str, set[str]]:
    """The help printed by ``python -X importtime -m dplens *args --help``, and the modules it imported."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "dplens", *args, "--help"], capture_output=True,
                         text=True, cwd=ROOT, timeout=120, check=True)
    modules = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    return out.stdout, modules


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.serial  # starts its own interpreters
def test_help_imports_nothing_heavy_and_lists_every_subcommand():
    text, modules = _help()
    assert "dplens.cli" in modules or "argparse" in modules  # the importtime report was read
    assert not _heavy(modules), _heavy(modules)
    assert {"release", "compare", "grid", "ledger", "reproduce"} <= set(SUBCOMMANDS)
    for name in SUBCOMMANDS:
        assert name in text, name


@pytest.mark.serial
@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_subcommand_help_imports_nothing_heavy(name):
    text, modules = _help(name)
    assert f"usage: dplens {name}" in text
    assert not _heavy(modules), _heavy(modules)


def test_the_heavy_check_has_teeth():
    assert _heavy({"numpy.linalg", "dplens.core.mechanisms", "pandas", "argparse", "dplens.core.mechanismsx"}) == [
        "dplens.core.mechanisms", "numpy.linalg", "pandas"]


def test_light_names_equal_the_registries():
    from dplens.core.analysis.metrics import METRICS
    from dplens.core.data.datasets import SAMPLE_DATASETS
    from dplens.core.papers.reproduce import REPRODUCTIONS
    from dplens.core.privacy.definitions import DEFINITIONS
    from dplens.core.privacy.ledger_store import DEFAULT_TOTAL_EPSILON
    from dplens.core.privacy.noise import NOISE_PATHS
    from dplens.core.queries.workloads import WORKLOADS
    from dplens.core.registry import histogram_mechanisms
    from dplens.core.tables.records import MISSING_CHOICES

    # in the registries' order, which the help follows
    assert list(cli.MECHANISM_NAMES) == list(histogram_mechanisms())
    assert list(cli.WORKLOAD_NAMES) == list(WORKLOADS)
    assert list(cli.METRIC_NAMES) == list(METRICS)
    assert list(cli.SAMPLE_NAMES) == list(SAMPLE_DATASETS)
    assert list(cli.DEFINITION_NAMES) == list(DEFINITIONS)
    assert list(cli.NOISE_NAMES) == list(NOISE_PATHS)
    assert list(cli.MISSING_CHOICES) == list(MISSING_CHOICES)
    assert cli.DEFAULT_TOTAL_EPSILON == DEFAULT_TOTAL_EPSILON
    assert list(papers_cli.PAPERS) == list(REPRODUCTIONS)

