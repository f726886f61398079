"""No module outside the workload operators switches on a workload's type: closed forms and facts are methods and
class attributes of ``WorkloadOperator`` (``dplens.core.queries.workloads``), read through its functions.

A switch is ``isinstance(w, Prefix)``, and the same switch written duck-typed: ``getattr(w, "parts", None)`` or
``hasattr(w, "factors")`` for an attribute some workload classes have and others lack (or that a workload defined
outside the module may lack). The protocol's own members (``shape``, ``matvec``, ...) are not switches.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

from dplens.core.queries import marginals, workloads

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / "src" / "dplens"
OWN = {ROOT / "core" / "queries" / "workloads.py"}
WORKLOAD_CLASSES = {name: value for module in (workloads, marginals) for name, value in vars(module).items()
                    if inspect.isclass(value) and issubclass(value, workloads.WorkloadOperator)}
PROTOCOL = {name for name in vars(workloads.Workload) if not name.startswith("_")}  # every workload has these
# What some workload classes define (fields, class attributes, methods, properties): reading one of these with
# getattr/hasattr asks which class the workload is.
WORKLOAD_ATTRIBUTES = {name for klass in WORKLOAD_CLASSES.values()
                       for name in (*vars(klass),
                                    *(f.name for f in (dataclasses.fields(klass) if dataclasses.is_dataclass(klass)
                                                       else ())))
                       if not name.startswith("__")} - PROTOCOL


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


def _switch(node: ast.Call) -> str | None:
    """What a call switches on, when it is ``isinstance`` on workload classes or ``getattr``/``hasattr`` of a
    class-specific workload attribute; else None."""
    function = getattr(node.func, "id", None)
    if function == "isinstance" and len(node.args) == 2:
        named = _switched_names(node.args[1]) & set(WORKLOAD_CLASSES)
        return f"isinstance(..., {', '.join(sorted(named))})" if named else None
    if function in ("getattr", "hasattr") and len(node.args) >= 2:
        attribute = node.args[1]
        if isinstance(attribute, ast.Constant) and attribute.value in WORKLOAD_ATTRIBUTES:
            return f"{function}({ast.unparse(node.args[0])}, {attribute.value!r})"
    return None


def switches(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and (switch := _switch(node)) is not None:
            where = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
            found.append(f"{where}:{node.lineno} {switch}")
    return sorted(found, key=lambda s: int(s.split(":")[1].split()[0]))


def test_the_rule_sees_a_switch(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f(w, v):\n    return isinstance(w, Prefix | Explicit) or isinstance(v, (float, int))\n")
    assert switches(probe) == ["probe.py:2 isinstance(..., Explicit, Prefix)"]


def test_the_rule_sees_a_duck_typed_switch(tmp_path):
    """``getattr(workload, "parts", None)`` is the same switch as ``isinstance(workload, Stack)``; reading a fact
    with a default or probing with hasattr is one too. Other objects' attributes and the protocol's are not."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f(workload, rng, w):\n"
                     "    for part in (workload, *getattr(workload, 'parts', ())):\n"
                     "        if hasattr(part, 'factors') or getattr(w, 'sparse_native', False):\n"
                     "            return getattr(rng, 'add_laplace', None), getattr(w, 'shape', None)\n")
    assert switches(probe) == ["probe.py:2 getattr(workload, 'parts')", "probe.py:3 hasattr(part, 'factors')",
                               "probe.py:3 getattr(w, 'sparse_native')"]


def test_no_module_outside_the_operators_switches_on_a_workloads_type():
    assert {"Prefix", "AllRange", "Identity", "Explicit", "Stack", "Kron", "WorkloadOperator"} <= set(WORKLOAD_CLASSES)
    assert {"parts", "factors", "marginals", "sparse_native", "all_ranges", "queries_are_cells"} <= WORKLOAD_ATTRIBUTES
    assert {"shape", "matvec", "rmatvec", "column_norms", "describe"} <= PROTOCOL
    found = [s for path in sorted(ROOT.rglob("*.py")) if path not in OWN for s in switches(path)]
    found += [s for path in sorted((REPO / "pages").glob("*.py")) for s in switches(path)]
    assert not found, ("workload switches (make them methods or facts of WorkloadOperator, read through "
                       "dplens.core.queries.workloads' functions):\n" + "\n".join(found))
