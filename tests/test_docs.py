"""The generated documentation references name every registered mechanism and every CLI subcommand.

Runs docs/gen_ref.py's generators into a temporary directory (not the full `mkdocs build`, which `make docs` runs).
"""

import argparse
import importlib.util
import time
from pathlib import Path

from dplens.cli import build_parser
from dplens.core.mechanisms import MECHANISMS
from dplens.core.tables.mechanisms import TABLE_MECHANISMS

GEN_REF = Path(__file__).resolve().parent.parent / "docs" / "gen_ref.py"


def _gen_ref():
    spec = importlib.util.spec_from_file_location("gen_ref", GEN_REF)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _subcommands():
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_generated_references_cover_the_registries_and_the_cli(tmp_path):
    start = time.perf_counter()
    paths = {p.name: p for p in _gen_ref().write(tmp_path)}
    assert time.perf_counter() - start < 5
    mechanisms = paths["mechanisms.md"].read_text(encoding="utf-8")
    cli = paths["cli.md"].read_text(encoding="utf-8")

    for name in MECHANISMS:
        assert f"### `{name}` {{#" in mechanisms, name
    for name in TABLE_MECHANISMS:
        assert f"### `{name}` {{#table-" in mechanisms, name
    # every documented parameter range appears next to its parameter
    assert "| `rounds` | `10` | 'auto' or an integer in [1, 1000] |" in mechanisms

    subcommands = _subcommands()
    assert {"release", "compare", "ledger", "reproduce"} <= set(subcommands)
    for name, parser in subcommands.items():
        assert f"## `{name}`" in cli, name
        assert f"usage: dplens {name}" in cli, name
        for action in parser._actions:
            for flag in action.option_strings:
                assert flag in cli, (name, flag)


def test_generated_pages_cite_no_internal_references(tmp_path):
    for path in _gen_ref().write(tmp_path):
        text = path.read_text(encoding="utf-8")
        assert "spec \N{SECTION SIGN}" not in text and "issue #" not in text, path


def test_the_generated_cli_help_fits_80_columns(tmp_path):
    paths = {p.name: p for p in _gen_ref().write(tmp_path)}
    blocks = paths["cli.md"].read_text(encoding="utf-8").split("```")[1::2]  # the help texts, not the prose
    long = [line for block in blocks for line in block.splitlines() if len(line) > 80]
    assert len(blocks) > 5 and not long, long[:3]
