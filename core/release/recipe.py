"""A reproducible recipe: a Python script (or Jupyter notebook) that re-runs one release configuration.

The recipe names the mechanism, its settings, the workload spec and ε, and reads the data from a file
the user names when running it: it never embeds the data. It draws noise on the secure path, so the
values differ from run to run; the metadata (mechanism, params, ε, workload, noise policy) match.

>>> script = recipe_script(mechanism="hb", settings={"branching": "4"}, workload="prefix", epsilon=0.5)
>>> "MECHANISM = 'hb'" in script and "counts" not in script.split("def main")[0]
True
"""

from __future__ import annotations

import json
from collections.abc import Mapping

_HEADER = '''"""dplens recipe: re-run one release on a histogram file you name (the data is not in this file).

Usage:  python {file} HISTOGRAM_FILE [OUTPUT.json]
Runs from a dplens checkout (or with dplens's core package importable). The noise is drawn on the
secure path (OpenDP samplers, no seed), so the released values differ from run to run; the metadata
(mechanism, settings, epsilon, workload, noise policy) match the release this recipe was made from.
"""
'''

_BODY = '''
MECHANISM = {mechanism!r}
SETTINGS = {settings}
WORKLOAD = {workload!r}
EPSILON = {epsilon!r}
'''

_MAIN = '''

def main(path: str, output: str | None = None) -> dict:
    """Load the histogram, release it once on the secure path, write (or return) the JSON export."""
    import json

    from core.data.datasets import load_histogram
    from core.release.export import release_to_json
    from core.mechanisms import MECHANISMS, configure
    from core.privacy.noise import noise_sampler, noise_source
    from core.queries.workloads import parse_workload

    hist = load_histogram(path)
    mechanism = configure(MECHANISMS[MECHANISM], SETTINGS)
    workload = parse_workload(WORKLOAD, hist.domain.shape)
    rng = noise_source("secure", mechanism=mechanism, counts=hist.counts)
    release = mechanism.run(hist.counts, workload, EPSILON, rng)
    labels = hist.bin_labels() if release.estimate is not None else None
    text = release_to_json(release, workload=WORKLOAD, noise_path="secure", dataset=path.rsplit("/", 1)[-1],
                           labels=labels, noise_sampler=noise_sampler(rng))
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    return json.loads(text)
'''

_CLI = '''

if __name__ == "__main__":
    import sys

    if len(sys.argv) not in (2, 3):
        sys.exit(f"usage: python {sys.argv[0]} HISTOGRAM_FILE [OUTPUT.json]")
    doc = main(*sys.argv[1:])
    print(f"released {doc['mechanism']} at epsilon={doc['epsilon']:g} on workload {doc['workload']}")
'''


def _config(mechanism: str, settings: Mapping[str, object], workload: str, epsilon: float) -> str:
    if not isinstance(workload, str) or workload.startswith(("custom:", "file:")):
        raise ValueError(f"workload must be a registry spec such as 'prefix' to go into a recipe, got {workload!r}; "
                         "a custom or file workload has no spec a script can rebuild")
    if not (isinstance(epsilon, int | float) and epsilon > 0):
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    settings_text = json.dumps({str(k): str(v) for k, v in settings.items()}, sort_keys=True)
    return _BODY.format(mechanism=mechanism, settings=settings_text, workload=workload, epsilon=float(epsilon))


def recipe_script(*, mechanism: str, settings: Mapping[str, object], workload: str, epsilon: float,
                  file: str = "dplens_recipe.py") -> str:
    """The recipe as a Python script (``python dplens_recipe.py HISTOGRAM_FILE [OUTPUT.json]``)."""
    return _HEADER.format(file=file) + _config(mechanism, settings, workload, epsilon) + _MAIN + _CLI


def recipe_notebook(*, mechanism: str, settings: Mapping[str, object], workload: str, epsilon: float) -> str:
    """The same recipe as a Jupyter notebook (nbformat v4 JSON): a markdown cell, the config, the run.

    >>> import json
    >>> cells = json.loads(recipe_notebook(mechanism="identity", settings={}, workload="identity", epsilon=1.0))["cells"]
    >>> [c["cell_type"] for c in cells]
    ['markdown', 'code', 'code', 'code']
    """
    import nbformat  # optional: only the notebook download needs it

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell(
            "# dplens recipe\n\nRe-runs one release on a histogram file you name (the data is not in this "
            "notebook). Noise comes from the secure path, so values differ from run to run; the metadata match."),
        nbformat.v4.new_code_cell(_config(mechanism, settings, workload, epsilon).strip()
                                  + "\nHISTOGRAM_FILE = 'my_histogram.csv'  # your file"),
        nbformat.v4.new_code_cell(_MAIN.strip()),
        nbformat.v4.new_code_cell("doc = main(HISTOGRAM_FILE, 'dplens-release.json')\n"
                                  "{k: doc[k] for k in ('mechanism', 'epsilon', 'workload', 'noise')}"),
    ]
    return nbformat.writes(notebook)
