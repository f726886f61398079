"""A reproducible recipe: a Python script (or Jupyter notebook) that re-runs one release configuration.

The recipe names the mechanism, its settings, the workload spec and ε, and reads the data from a file
the user names when running it: it never embeds the data. Every run is a release: it goes through the
release kernel (``dplens.core.release.kernel``), which charges the installation's ledger for that file (or the
ledger named with ``--ledger``) and refuses over budget, exactly as the app and the command line do.

>>> script = recipe_script(mechanism="hb", settings={"branching": "4"}, workload="prefix", epsilon=0.5)
>>> "MECHANISM = 'hb'" in script and "counts" not in script.split("def main")[0]
True
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from dplens.core.validate import positive

_HEADER = '''"""dplens recipe: re-run one release on a histogram file you name (the data is not in this file).

Usage:  python {file} HISTOGRAM_FILE [OUTPUT.json] [--ledger PATH]
Runs from a dplens checkout (or with dplens's core package importable).
EVERY RUN SPENDS PRIVACY BUDGET: it is a new release, charged to this installation's ledger for the file
(or to the ledger at --ledger), and refused with one line when the budget cannot pay for it.
The noise is drawn on the secure path (OpenDP samplers, no seed), so the released values differ from run
to run; the metadata (mechanism, settings, epsilon, workload, noise policy) match the release it was made from.
"""
'''

_BODY = '''
MECHANISM = {mechanism!r}
SETTINGS = {settings}
WORKLOAD = {workload!r}
EPSILON = {epsilon!r}
'''

_MAIN = '''

def main(path: str, output: str | None = None, ledger: str | None = None) -> dict:
    """Load the histogram, release it once through the release kernel (charging the ledger), write the JSON."""
    import json

    import numpy as np

    from dplens.core.data.datasets import load_histogram
    from dplens.core.data.fingerprint import dataset_fingerprint
    from dplens.core.privacy.definitions import PureDP
    from dplens.core.privacy.ledger_store import LedgerStore
    from dplens.core.queries.workloads import parse_workload
    from dplens.core.release.export import ExportKeys
    from dplens.core.release.kernel import HistogramRequest, export_release, release

    hist = load_histogram(path)
    request = HistogramRequest(MECHANISM, SETTINGS, PureDP(EPSILON), parse_workload(WORKLOAD, hist.domain.shape),
                               WORKLOAD)
    store = LedgerStore(ledger) if ledger else LedgerStore()
    published = release(request, hist.counts, store=store, fingerprint=dataset_fingerprint(hist),
                                  name=hist.name, where="recipe")
    text = export_release(published, request, fmt="json", dataset=path.rsplit("/", 1)[-1],
                          keys=ExportKeys.for_release(hist, published.release, request.workload),
                          rng=np.random.default_rng()).decode()
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    return json.loads(text)
'''

_CLI = '''

if __name__ == "__main__":
    import argparse
    import sys

    parser = argparse.ArgumentParser(description="Re-run one dplens release (spends privacy budget).")
    parser.add_argument("histogram")
    parser.add_argument("output", nargs="?")
    parser.add_argument("--ledger", help="the dplens store to charge (default: this installation's)")
    args = parser.parse_args()
    try:
        doc = main(args.histogram, args.output, args.ledger)
    except ValueError as err:  # over budget, a bad input: one line, nothing released or charged
        sys.exit(f"not released: {str(err).splitlines()[0]}")
    print(f"released {doc['mechanism']} at epsilon={doc['epsilon']:g} on workload {doc['workload']} "
          f"(export id {doc['export_id']}; charged to the ledger)")
'''


def _config(mechanism: str, settings: Mapping[str, object], workload: str, epsilon: float) -> str:
    if not isinstance(workload, str) or workload.startswith(("custom:", "file:")):
        raise ValueError(f"workload must be a registry spec such as 'prefix' to go into a recipe, got {workload!r}; "
                         "a custom or file workload has no spec a script can rebuild")
    positive("epsilon", epsilon)
    settings_text = json.dumps({str(k): str(v) for k, v in settings.items()}, sort_keys=True)
    return _BODY.format(mechanism=mechanism, settings=settings_text, workload=workload, epsilon=float(epsilon))


def recipe_script(*, mechanism: str, settings: Mapping[str, object], workload: str, epsilon: float,
                  file: str = "dplens_recipe.py") -> str:
    """The recipe as a Python script (``python dplens_recipe.py HISTOGRAM_FILE [OUTPUT.json]``)."""
    return _HEADER.format(file=file) + _config(mechanism, settings, workload, epsilon) + _MAIN + _CLI


def recipe_notebook(*, mechanism: str, settings: Mapping[str, object], workload: str, epsilon: float) -> str:
    """The same recipe as a Jupyter notebook (nbformat v4 JSON): a markdown cell, the config, the run.

    >>> import json
    >>> notebook = recipe_notebook(mechanism="identity", settings={}, workload="identity", epsilon=1.0)
    >>> cells = json.loads(notebook)["cells"]
    >>> [c["cell_type"] for c in cells]
    ['markdown', 'code', 'code', 'code']
    """
    cells = [
        _cell("markdown", "intro",
              "# dplens recipe\n\nRe-runs one release on a histogram file you name (the data is not in this "
              "notebook). **Every run spends privacy budget**: it is charged to this installation's ledger and "
              "refused over budget. Noise comes from the secure path, so values differ from run to run."),
        _cell("code", "config", _config(mechanism, settings, workload, epsilon).strip()
              + "\nHISTOGRAM_FILE = 'my_histogram.csv'  # your file"),
        _cell("code", "main", _MAIN.strip()),
        _cell("code", "run", "doc = main(HISTOGRAM_FILE, 'dplens-release.json')\n"
                             "{k: doc[k] for k in ('mechanism', 'epsilon', 'workload', 'noise')}"),
    ]
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": _NOTEBOOK_METADATA, "cells": cells}
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


_NOTEBOOK_METADATA = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                      "language_info": {"name": "python"}}


def _cell(cell_type: str, cell_id: str, source: str) -> dict:
    """One nbformat 4.5 cell (written as JSON here: the notebook format needs no library)."""
    cell: dict[str, object] = {"cell_type": cell_type, "id": cell_id, "metadata": {},
                               "source": source.splitlines(keepends=True)}
    if cell_type == "code":
        cell.update(execution_count=None, outputs=[])
    return cell
