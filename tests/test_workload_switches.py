"""No module outside the workload operators switches on a workload's type: closed forms and facts are methods and
class attributes of ``WorkloadOperator`` (``dplens.core.queries.workloads``)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from dplens.core.queries import marginals, workloads

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / "src" / "dplens"
OWN = {ROOT / "core" / "queries" / "workloads.py"}
WORKLOAD_CLASSES = {name for module in (workloads, marginals) for name, value in vars(module).items()
                    if inspect.isclass(value) and issubclass(value, workloads.WorkloadOperator)}


def _switched_names(node: ast.expr) -> set[str]:
    """The class names an isinstance's second argument lists (a name, an attribute, a tuple or an X | Y union)."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    if isinstance(node, ast.Tuple):
        return set().union(*(_switched_names(e) for e in node.elts))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _switched_names(node.left) | _switched_names(node.right)
    return set()


def switches(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2:
            named = _switched_names(node.args[1]) & WORKLOAD_CLASSES
            if named:
                where = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
                found.append(f"{where}:{node.lineno} isinstance(..., {', '.join(sorted(named))})")
    return found


def test_the_rule_sees_a_switch(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f(w, v):\n    return isinstance(w, Prefix | Explicit) or isinstance(v, (float, int))\n")
    assert switches(probe) == ["probe.py:2 isinstance(..., Explicit, Prefix)"]


def test_no_module_outside_the_operators_switches_on_a_workloads_type():
    assert {"Prefix", "AllRange", "Identity", "Explicit", "Stack", "Kron", "WorkloadOperator"} <= WORKLOAD_CLASSES
    found = [s for path in sorted(ROOT.rglob("*.py")) if path not in OWN for s in switches(path)]
    found += [s for path in sorted((REPO / "pages").glob("*.py")) for s in switches(path)]
    assert not found, "workload type switches (make them methods of WorkloadOperator):\n" + "\n".join(found)
