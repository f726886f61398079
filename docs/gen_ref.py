"""Generate the mechanism, CLI and benchmark-results references from the code and the bench results.

Used two ways:

* as an MkDocs hook (``hooks: [docs/gen_ref.py]`` in mkdocs.yml): ``on_files`` adds the pages
  ``reference/mechanisms.md``, ``reference/cli.md`` and ``reference/benchmarks.md`` to the build, generated in
  memory (nothing is written into ``docs/``); ``on_page_markdown`` replaces each ``<!-- bench-results: NAME -->``
  placeholder in a page by the table of ``bench/results/NAME.json``;
* as a script: ``python docs/gen_ref.py OUTDIR`` writes the same pages into OUTDIR (tests use this).

The mechanism reference reads the registry ``dplens.core.registry`` (histogram and table mechanisms, each with
its class's ``summary`` and its settings' ranges, ``parameter_ranges``); the CLI reference prints every
subcommand's ``format_help()`` from ``dplens.cli.build_parser()``; the benchmark results are the files
``bench/results/*.json`` that the benches write (``bench/results.py``), one table each.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MECHANISMS_PAGE = "reference/mechanisms.md"
CLI_PAGE = "reference/cli.md"
BENCHMARKS_PAGE = "reference/benchmarks.md"
BENCH_RESULTS = ROOT / "bench" / "results"
PLACEHOLDER = re.compile(r"<!--\s*bench-results:\s*([\w.-]+)\s*-->")
HIDDEN_FIELDS = {"name", "data_dependent"}


def _clean(text: str) -> str:
    """A docstring line for the docs, Markdown-safe (code cites papers, never internal notes: see
    tests/test_no_external_refs.py)."""
    text = re.sub(r"\s+([.,;:])", r"\1", text)
    text = re.sub(r"\(\s*([^()]*?)\s*;\s*\)", r"(\1)", text)
    text = text.replace("``", "`").replace("|", "\\|")
    return re.sub(r"\s+", " ", text).strip()


def _summary(obj: object) -> str:
    """The class docstring's first sentence or line (its paper and what it does)."""
    doc = inspect.getdoc(type(obj)) or ""
    first = doc.split("\n\n")[0].replace("\n", " ")
    return _clean(first) or "—"


def _noise_kind(mechanism: object, table: bool = False) -> str:
    cls = type(mechanism)
    if table:
        doc = inspect.getdoc(cls) or ""
        found = sorted({k: doc.find(k) for k in ("Gaussian", "Laplace") if k in doc}.items(), key=lambda kv: kv[1])
        kinds = [k for k, _ in found]
        if not kinds:  # e.g. MST, whose docstring names OpenDP's measurement, not the noise
            try:
                source = inspect.getsource(cls).lower()
            except (OSError, TypeError):
                source = ""
            kinds = [k for k in ("Gaussian", "Laplace") if k.lower() in source]
        if not kinds and "opendp.extras.mbi" in doc:
            kinds = ["drawn inside OpenDP (`opendp.extras.mbi`)"]
        if getattr(mechanism, "method", None) is not None and not kinds:
            kinds = ["that of the histogram mechanism"]
        return " or ".join(kinds) or "—"
    names = {f.name for f in dataclasses.fields(mechanism)} if dataclasses.is_dataclass(mechanism) else set()
    kind = "Gaussian ((ε, δ) or zCDP)" if "calibration" in names else "Laplace"
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        source = ""
    if "exponential_mechanism" in source:
        kind += " + exponential mechanism"
    return kind


def _value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return repr(value)


def _setting_rows(mechanism: object) -> list[str]:
    """One row per setting: its default and the range its field declares (``parameter_ranges``)."""
    from dplens.core.mechanisms import parameter_ranges

    ranges = parameter_ranges(mechanism)  # histogram and table mechanisms alike
    rows = []
    for f in dataclasses.fields(mechanism) if dataclasses.is_dataclass(mechanism) else ():
        if f.name in HIDDEN_FIELDS or not f.init:
            continue
        default = _value(getattr(mechanism, f.name))
        documented = str(ranges[f.name]) if f.name in ranges else "not range-checked"
        rows.append(f"| `{f.name}` | `{default}` | {_clean(documented)} |")
    return rows


def mechanism_reference() -> str:
    """The Markdown page of every registered mechanism (histograms, then tables of records)."""
    from dplens.core.mechanisms import ALIASES
    from dplens.core.registry import histogram_mechanisms, table_mechanisms

    histograms, tables = histogram_mechanisms(), table_mechanisms()
    out = ["# Mechanism reference", "",
           "Generated at build time from the registry `dplens.core.registry`: its histogram mechanisms (histograms "
           "and linear queries, pure ε-DP with Laplace noise unless Gaussian) and its table mechanisms (tables of "
           "records, ρ-zCDP). Parameter ranges are the ones `configure` checks "
           "(each declared on its setting's field, `setting(default, range)`). The user-level "
           "descriptions are in [Mechanisms](../mechanisms.md) and [Reproductions of the papers](../papers.md).",
           "", "## Histogram mechanisms", "",
           "| name | what it is | data-dependent | noise |", "|---|---|---|---|"]
    for name, m in histograms.items():
        alias = f" (alias of `{ALIASES[name]}`)" if name in ALIASES else ""
        out.append(f"| [`{name}`](#{_anchor(name)}){alias} | {_summary(m)} | "
                   f"{'yes' if m.data_dependent else 'no'} | {_noise_kind(m)} |")
    out.append("")
    for name, m in histograms.items():
        out += _section(name, m, _setting_rows(m), _noise_kind(m), f"`{type(m).__module__}.{type(m).__name__}`")
    out += ["## Table mechanisms", "",
            "Budgets on tables are ρ-zCDP with add/remove-one-record neighbours; Laplace mechanisms spend "
            "ε = √(2ρ). Settings are the fields each class declares with a range (the only ones "
            "`table_mechanism` accepts). `gaussian-marginals` was called `identity` before names became unique "
            "across histograms and tables; the command line still accepts that name with `--domain`.", "",
            "| name | what it is | data-dependent | synthesises records | noise |", "|---|---|---|---|---|"]
    for name, m in tables.items():
        out.append(f"| [`{name}`](#table-{_anchor(name)}) | {_summary(m)} | {'yes' if m.data_dependent else 'no'} | "
                   f"{'yes' if getattr(m, 'synthesizes', False) else 'no'} | {_noise_kind(m, table=True)} |")
    out.append("")
    for name, m in tables.items():
        out += _section(name, m, _setting_rows(m), _noise_kind(m, table=True),
                        f"`{type(m).__module__}.{type(m).__name__}`", anchor=f"table-{_anchor(name)}")
    return "\n".join(out) + "\n"


def _anchor(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")


def _section(name: str, m: object, rows: list[str], noise: str, where: str, anchor: str | None = None) -> list[str]:
    out = [f"### `{name}` {{#{anchor or _anchor(name)}}}", "", _summary(m), ""]
    summary = getattr(type(m), "summary", None)  # the one-line summary a mechanism may state for the app
    if isinstance(summary, str) and summary.strip():
        out += [f"*In the app:* {_clean(summary)}", ""]
    out += [
           f"- class: {where}",
           f"- data-dependent: {'yes' if m.data_dependent else 'no'}",
           f"- noise: {noise}", ""]
    if rows:
        out += ["| parameter | default | documented range |", "|---|---|---|", *rows, ""]
    else:
        out += ["No parameters.", ""]
    return out


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps subparsers here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_reference() -> str:
    """The Markdown page of `python -m dplens`: the top-level help and every subcommand's help."""
    from dplens.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"  # argparse wraps help at the terminal width: 80 columns fit the page's code box
    try:
        parser = build_parser()
        out = ["# Command-line reference", "",
               "Generated at build time from `dplens.cli.build_parser()`. Examples are in "
               "[Command line](../cli.md).", "", "```text", parser.format_help().rstrip(), "```", ""]
        for name, sub in _subcommands(parser).items():
            out += [f"## `{name}`", "", "```text", sub.format_help().rstrip(), "```", ""]
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(out) + "\n"


def load_results(directory: str | os.PathLike = BENCH_RESULTS) -> dict[str, dict]:
    """Every ``<bench>.json`` in ``directory`` (sorted by name); unreadable files are left out."""
    results = {}
    for path in sorted(Path(directory).glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("rows"), list):
            results[path.stem] = data
    return results


def _cell(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 10_000 else f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {_cell(v)}" for k, v in value.items())
    return str(value).replace("|", "\\|").replace("\n", " ")


def _load(value: object) -> str:
    return "?" if not value else f"{_cell(value[0])}"


def _memory(result: dict) -> str:
    """", peak 812 MB RSS (640 MB PSS) over the process tree" when the file has it (results files before the tree
    meter have CPU of this process and its reaped children only)."""
    rss, pss = result.get("peak_rss_mb"), result.get("peak_pss_mb")
    if rss is None:
        return ""
    return f" (process tree), peak {_cell(rss)} MB RSS ({_cell(pss)} MB PSS)"


def results_table(name: str, result: dict) -> str:
    """One bench's run (date, commit, machine, load, CPU and wall, command) and its rows as a Markdown table."""
    machine = result.get("machine") or {}
    command = " ".join(["python", f"bench/{name}.py", *map(str, result.get("args") or [])])
    lines = [f"*Run {_cell(result.get('date'))} at commit `{_cell(result.get('commit'))}` on "
             f"{_cell(machine.get('platform'))} ({_cell(machine.get('cpu_count'))} CPUs), load average "
             f"{_load(result.get('load_start'))} → {_load(result.get('load_end'))} (1 min); "
             f"{_cell(result.get('wall_s'))} s wall, {_cell(result.get('cpu_s'))} s CPU"
             f"{_memory(result)}; `{command}`.*", ""]
    rows = result.get("rows") or []
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    if not columns:
        return "\n".join(lines + ["No rows.", ""])
    lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(row.get(c)) for c in columns) + " |" for row in rows]
    return "\n".join(lines + [""])


def benchmarks_reference(directory: str | os.PathLike = BENCH_RESULTS) -> str:
    """The Markdown page of every bench's latest results file."""
    results = load_results(directory)
    out = ["# Benchmark results", "",
           "Generated at build time from the files `bench/results/*.json` that each bench writes when it "
           "finishes (`bench/results.py`). What each bench measures and how to run it is in "
           "[Tests and benchmarks](../benchmarks.md). Timings come from a shared machine: the load average "
           "and CPU seconds say how much to trust the wall times.", ""]
    if not results:
        out += ["No results files yet.", ""]
    for name, result in results.items():
        out += [f"## `{name}`", "", results_table(name, result)]
    return "\n".join(out) + "\n"


def fill_placeholders(markdown: str, directory: str | os.PathLike = BENCH_RESULTS) -> str:
    """Replace each ``<!-- bench-results: NAME -->`` by NAME's results table (or a note that there is none)."""
    results = load_results(directory)

    def table(match: re.Match) -> str:
        name = match.group(1)
        if name not in results:
            return f"*No results file yet: running `bench/{name}.py` writes `bench/results/{name}.json`.*\n"
        return results_table(name, results[name])

    return PLACEHOLDER.sub(table, markdown)


PAGES = {MECHANISMS_PAGE: mechanism_reference, CLI_PAGE: cli_reference, BENCHMARKS_PAGE: benchmarks_reference}


def write(outdir: str | os.PathLike) -> list[Path]:
    """Write the generated pages under ``outdir`` (as ``reference/*.md``) and return their paths."""
    written = []
    for rel, make in PAGES.items():
        path = Path(outdir) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(make(), encoding="utf-8")
        written.append(path)
    return written


def on_files(files, config):  # MkDocs hook
    from mkdocs.structure.files import File

    for rel, make in PAGES.items():
        files.append(File.generated(config, rel, content=make()))
    return files


def on_page_markdown(markdown, page, config, files):  # MkDocs hook
    return fill_placeholders(markdown) if PLACEHOLDER.search(markdown) else markdown


if __name__ == "__main__":
    for p in write(sys.argv[1] if len(sys.argv) > 1 else "site-ref"):
        print(p)
