"""The generated recipe runs: the script re-releases a sample through core; its metadata match the config."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dplens.core.data.datasets import DATA_DIR
from dplens.core.release.recipe import recipe_notebook, recipe_script

ROOT = Path(__file__).resolve().parent.parent
# this checkout's code (the venv's editable install may point at another one) and this test's installation,
# whose key names the ledgers
SOURCES = os.pathsep.join((str(ROOT / "src"), str(ROOT)))
CONFIG = {"mechanism": "hb", "settings": {"branching": "4"}, "workload": "prefix", "epsilon": 0.5}


def test_generated_script_reproduces_the_configuration_on_a_sample(tmp_path):
    script = tmp_path / "dplens_recipe.py"
    script.write_text(recipe_script(**CONFIG))
    sample = DATA_DIR / "tips_bill.csv"
    assert sample.read_text()[:40] not in script.read_text()  # the data is never embedded
    out = tmp_path / "out.json"
    run = subprocess.run([sys.executable, str(script), str(sample), str(out), "--ledger", str(tmp_path / "l.sqlite3")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": SOURCES, "PATH": "/usr/bin:/bin",
                              "DPLENS_HOME": os.environ["DPLENS_HOME"]})
    assert run.returncode == 0, run.stderr
    doc = json.loads(out.read_text())
    assert (doc["mechanism"], doc["epsilon"], doc["workload"], doc["noise_path"]) == ("hb", 0.5, "prefix", "secure")
    assert doc["params"]["branching"] == 4
    assert doc["dataset"] == "tips_bill.csv" and doc["privacy_loss"] <= doc["epsilon"] + 1e-12
    assert len(doc["counts"]) == 51 and "seed" not in doc


def test_a_recipe_run_is_charged_and_refused_over_budget(tmp_path):
    """Every run of a recipe is a release through the kernel: charged to the ledger, refused with one line over it."""
    from dplens.core.data.datasets import load_histogram
    from dplens.core.data.fingerprint import dataset_fingerprint
    from dplens.core.privacy.budget import Budget
    from dplens.core.privacy.ledger_store import LedgerStore

    script = tmp_path / "dplens_recipe.py"
    script.write_text(recipe_script(**CONFIG))
    assert "SPENDS PRIVACY BUDGET" in script.read_text()
    sample, ledger = DATA_DIR / "tips_bill.csv", tmp_path / "l.sqlite3"
    fingerprint = dataset_fingerprint(load_histogram(sample))
    LedgerStore(ledger).set_total(fingerprint, Budget(0.75))

    def run():
        return subprocess.run([sys.executable, str(script), str(sample), "--ledger", str(ledger)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120,
                              env={"PYTHONPATH": SOURCES, "PATH": "/usr/bin:/bin",
                                   "DPLENS_HOME": os.environ["DPLENS_HOME"]})

    first, second = run(), run()
    assert first.returncode == 0, first.stderr
    assert second.returncode != 0 and second.stderr.strip().startswith("not released:")
    assert len(second.stderr.strip().splitlines()) == 1 and "remaining is epsilon=0.25" in second.stderr
    spends = [e for e in LedgerStore(ledger).history(fingerprint) if e["kind"] == "spend"]
    assert len(spends) == 1 and spends[0]["epsilon"] == 0.5 and spends[0]["export_id"]


def test_notebook_is_valid_and_holds_the_same_configuration():
    """nbformat-4.5 JSON written without nbformat: validated by nbformat when it is installed, else by its shape."""
    text = recipe_notebook(**CONFIG)
    notebook = json.loads(text)
    assert (notebook["nbformat"], notebook["nbformat_minor"]) == (4, 5) and isinstance(notebook["metadata"], dict)
    cells = notebook["cells"]
    assert [c["cell_type"] for c in cells] == ["markdown", "code", "code", "code"]
    ids = [c["id"] for c in cells]
    assert len(set(ids)) == len(ids) and all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", i) for i in ids)
    for cell in cells:
        assert cell["metadata"] == {} and all(isinstance(line, str) for line in cell["source"])
        if cell["cell_type"] == "code":
            assert cell["execution_count"] is None and cell["outputs"] == []
        else:
            assert set(cell) == {"cell_type", "id", "metadata", "source"}
    config = "".join(cells[1]["source"])
    assert "MECHANISM = 'hb'" in config and "EPSILON = 0.5" in config
    compile("".join(cells[1]["source"] + ["\n"] + cells[2]["source"]), "notebook", "exec")
    try:
        import nbformat
    except ImportError:
        return
    nbformat.validate(nbformat.reads(text, as_version=4))


def test_a_custom_workload_cannot_go_into_a_recipe():
    with pytest.raises(ValueError, match="registry spec"):
        recipe_script(mechanism="identity", settings={}, workload="custom:1:drawn", epsilon=1.0)
