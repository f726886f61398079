"""The Getting started tutorial works as written: every command of its ``bash`` blocks runs, in order, with the
installed ``dplens`` console script in a scratch folder and a temporary DPLENS_HOME, and the figures the text
quotes (the budget left, the choice of ε, the ledger's totals) are what the commands print.

The ``sh`` blocks (installing, starting the app) are not run here: tests/test_wheel.py and tests/test_cli_app.py
cover them.
"""

from __future__ import annotations

import csv
import os
import re
import shlex
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "getting-started.md"
CONSOLE_SCRIPT = Path(sys.executable).parent / "dplens"


def tutorial_commands(markdown: str) -> list[list[str]]:
    """The commands of the ``bash`` blocks of ``markdown``, continuation lines joined, comments left out.

    >>> tutorial_commands("x\\n```bash\\ndplens a \\\\\\n  --b 1  # note\\n```\\n```sh\\nmake run\\n```\\n")
    [['dplens', 'a', '--b', '1']]
    """
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL):
        for command in block.replace("\\\n", " ").splitlines():
            words = shlex.split(command, comments=True)
            if words:
                commands.append(words)
    return commands


def _rmse(path: Path) -> dict[tuple[str, float], float]:
    values = defaultdict(list)
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            values[row["mechanism"], float(row["epsilon"])].append(float(row["value"]))
    return {key: sum(v) / len(v) for key, v in values.items()}


@pytest.mark.serial  # starts the console script once per command
def test_the_tutorials_commands_run_and_print_what_it_says(tmp_path):
    commands = tutorial_commands(TUTORIAL.read_text(encoding="utf-8"))
    assert [words[:2] for words in commands] == [["dplens", "release"], ["dplens", "compare"],
                                                 ["dplens", "release"], ["dplens", "ledger"]]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"DPLENS_HOME": str(tmp_path / "home")}
    printed = []
    for words in commands:
        done = subprocess.run([str(CONSOLE_SCRIPT), *words[1:]], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert done.returncode == 0, (words, done.stderr[-2000:])
        printed.append(done.stdout)

    assert "remaining epsilon=1.9 of 2" in printed[0]  # step 2: "ε = 1.9 of 2"
    for output in ("first.json", "compare.csv", "prefix.json"):
        assert (tmp_path / output).stat().st_size > 0, output
    rmse = _rmse(tmp_path / "compare.csv")  # step 4: hb meets "about 50" at 0.3, identity about 3× worse
    assert rmse["hb", 0.3] < 55 and 2.5 < rmse["identity", 0.3] / rmse["hb", 0.3] < 4, rmse
    assert "total epsilon=2, spent 0.4 in 2 release(s), remaining 1.6" in printed[3]  # step 6
