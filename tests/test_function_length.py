"""No function in dplens (core, ui, the command line) is longer than 80 lines: a longer one does several things."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "dplens"
LIMIT = 80


def long_functions(package: Path = PACKAGE) -> set[tuple[str, str]]:
    found = set()
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None \
                    and node.end_lineno - node.lineno + 1 > LIMIT:
                found.add((path.relative_to(package).as_posix(), node.name))
    return found


def test_no_function_is_longer_than_the_limit():
    found = long_functions()
    assert not found, f"over {LIMIT} lines: {sorted(found)}; split them"


def test_the_limit_has_teeth(tmp_path):
    (tmp_path / "long.py").write_text("def f():\n" + "    x = 1\n" * LIMIT)          # 81 lines
    (tmp_path / "short.py").write_text("def g():\n" + "    x = 1\n" * (LIMIT - 1))   # 80 lines
    assert long_functions(tmp_path) == {("long.py", "f")}
