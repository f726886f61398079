"""Architecture rules (see docs/benchmarks.md, "Test conventions"): pages → ui → core, core is Streamlit-free,
randomness is never ambient."""

from __future__ import annotations

import ast
import graphlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import dplens.core

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "dplens"
CORE_FILES = sorted((PACKAGE / "core").rglob("*.py"))
UI_FILES = sorted((PACKAGE / "ui").glob("*.py"))
APP_FILES = sorted((ROOT / "pages").glob("*.py")) + UI_FILES + [ROOT / "app.py"]
ALLOWED_RANDOM = {"default_rng", "Generator", "SeedSequence", "BitGenerator", "PCG64"}
# np.random.<anything but a constructor>, e.g. np.random.seed / .laplace / .rand: the global RNG
GLOBAL_RNG = re.compile(r"\b(?:np|numpy)\.random\.(?!(?:" + "|".join(ALLOWED_RANDOM) + r")\b)\w+")


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            if node.module == "numpy.random":
                names.update(f"numpy.random.{alias.name}" for alias in node.names)
    return names


def test_core_is_streamlit_free():
    modules = sorted(m.name for m in pkgutil.walk_packages(dplens.core.__path__, "dplens.core."))
    code = (f"import sys, importlib; [importlib.import_module(m) for m in {modules!r}]; "
            "print('streamlit' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_core_imports_no_ui_layer(path):
    bad = {name for name in _imports(path)
           if name.split(".")[0] in ("streamlit", "pages", "app", "plotly") or name.startswith("dplens.ui")}
    assert not bad, f"{path.name} imports {sorted(bad)}; core must not depend on the UI"


# core's folders (and the one-module layers catalogue.py and registry.py), lowest first: a module imports (at any
# depth, function-local imports included) only from its own layer or from layers before it.
CORE_LAYERS = ("catalogue", "data", "queries", "privacy", "mechanisms", "analysis", "tables", "registry", "release",
               "papers")
PENDING_LAYER_IMPORTS: set[tuple[str, str]] = set()  # (file, module) against the order, to be fixed
PENDING_PRIVATE_IMPORTS: set[tuple[str, str]] = set()  # (file, name) imported from another module, to be fixed


def _core_imports(path: Path) -> list[ast.ImportFrom]:
    return [node for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
            and node.module.split(".")[:2] in (["dplens", "core"], ["dplens", "ui"])]


def test_core_imports_follow_the_layer_order():
    rank = {layer: i for i, layer in enumerate(CORE_LAYERS)}
    against = set()
    for path in CORE_FILES:
        parts = path.relative_to(PACKAGE / "core").parts
        layer = parts[0] if len(parts) > 1 else path.stem  # a folder, or a module that is a layer of its own
        if layer not in rank:
            continue  # the package's __init__, extras
        for node in _core_imports(path):
            target = node.module.split(".")[2] if node.module.count(".") > 1 else ""
            if target in rank and rank[target] > rank[layer]:
                against.add((str(path.relative_to(ROOT)), node.module))
    assert against == PENDING_LAYER_IMPORTS, (f"against the layer order {CORE_LAYERS}: "
                                              f"{sorted(against - PENDING_LAYER_IMPORTS)}; fixed (remove from "
                                              f"PENDING_LAYER_IMPORTS): {sorted(PENDING_LAYER_IMPORTS - against)}")


def _module_name(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT / "src").with_suffix("").parts)
    return name.removesuffix(".__init__")


def test_core_has_no_import_cycles():
    """No chain of imports (function-local ones included) leads from a core module back to itself."""
    modules = {_module_name(path): path for path in CORE_FILES}
    edges = {name: {node.module for node in _core_imports(path) if node.module in modules}
             for name, path in modules.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> list[str] | None:
        state[name] = 1
        for target in sorted(edges[name]):
            if state.get(target) == 1:
                return path + [name, target]
            if target not in state:
                found = visit(target, path + [name])
                if found:
                    return found
        state[name] = 2
        return None

    for name in sorted(modules):
        if name not in state:
            cycle = visit(name, [])
            assert cycle is None, "import cycle: " + " -> ".join(cycle[cycle.index(cycle[-1]):])


def test_no_module_imports_another_modules_private_names():
    private = set()
    for path in CORE_FILES + UI_FILES:
        for node in _core_imports(path):
            private |= {(str(path.relative_to(ROOT)), alias.name) for alias in node.names
                        if alias.name.startswith("_") and not alias.name.startswith("__")}
    assert private == PENDING_PRIVATE_IMPORTS, (f"private names imported: {sorted(private - PENDING_PRIVATE_IMPORTS)}; "
                                                f"fixed (remove from PENDING_PRIVATE_IMPORTS): "
                                                f"{sorted(PENDING_PRIVATE_IMPORTS - private)}")


@pytest.mark.parametrize("path", CORE_FILES + APP_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_global_random_state(path):
    text = path.read_text()
    assert not GLOBAL_RNG.findall(text), f"{path.name} uses the global NumPy RNG; pass rng: np.random.Generator"
    imports = _imports(path)
    assert "random" not in imports, f"{path.name} imports the stdlib random module"
    bad = {n for n in imports if n.startswith("numpy.random.") and n.rsplit(".", 1)[1] not in ALLOWED_RANDOM}
    assert not bad, f"{path.name} imports {sorted(bad)}"


def test_the_global_rng_pattern_has_teeth():
    assert GLOBAL_RNG.search("x = np.random.laplace(0, 1)")
    assert GLOBAL_RNG.search("np.random.seed(0)")
    assert not GLOBAL_RNG.search("rng = np.random.default_rng([seed, k])")
    assert not GLOBAL_RNG.search("def f(rng: np.random.Generator): ...")


@pytest.mark.parametrize("path", sorted((ROOT / "pages").glob("*.py")), ids=lambda p: p.name)
def test_pages_do_not_import_each_other(path):
    assert not {n for n in _imports(path) if n.split(".")[0] in ("pages", "app")}


@pytest.mark.parametrize("path", UI_FILES, ids=lambda p: p.name)
def test_ui_never_imports_pages_or_app(path):
    assert not {n for n in _imports(path) if n.split(".")[0] in ("pages", "app")}


@pytest.mark.parametrize("path", sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"], ids=lambda p: p.name)
def test_pages_use_the_ui_package_through_its_public_names(path):
    inner = {n for n in _imports(path) if n.startswith("dplens.ui.")}
    assert not inner, (f"{path.name} imports {sorted(inner)}; use `from dplens import ui` and ui.<name> "
                       "(src/dplens/ui/__init__.py)")


def test_ui_package_re_exports_every_public_name():
    """Each src/dplens/ui/ module's public functions and constants are reachable as ui.<name> (the pages' interface)."""
    init = ast.parse((PACKAGE / "ui" / "__init__.py").read_text())
    exported = next(ast.literal_eval(node.value) for node in init.body
                    if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__")
    public = set()
    for path in UI_FILES:
        for node in ast.parse(path.read_text()).body:
            names = [node.name] if isinstance(node, ast.FunctionDef) else [
                t.id for t in getattr(node, "targets", [getattr(node, "target", None)]) if isinstance(t, ast.Name)]
            public.update(n for n in names if not n.startswith("_"))
    assert public <= set(exported), f"not re-exported by src/dplens/ui/__init__.py: {sorted(public - set(exported))}"


@pytest.mark.parametrize("path", sorted((ROOT / "pages").glob("*.py")), ids=lambda p: p.name)
def test_pages_are_thin(path):
    """A page is a thin script (≈40–150 lines); its callbacks and sections live in src/dplens/ui/<page>_view.py."""
    lines = len(path.read_text().splitlines())
    assert lines <= 150, f"{path.name} has {lines} lines; move its logic into src/dplens/ui/{path.stem}_view.py"


def _ui_imports(path: Path, modules: set[str]) -> set[str]:
    """Which of ``modules`` (dplens.ui and its modules) ``path`` imports, function-local imports included;
    ``from dplens import ui`` imports the package, ``from dplens.ui import identity`` the package and the module."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names & modules


def test_ui_modules_import_their_siblings_not_the_package_and_have_no_cycles():
    """Inside src/dplens/ui a module imports the sibling modules it uses, never ``dplens.ui`` (the package that
    imports it), and no chain of imports (function-local ones included) leads from a ui module back to itself."""
    modules = {_module_name(path): path for path in UI_FILES}
    edges = {name: _ui_imports(path, set(modules)) for name, path in modules.items()}
    through_package = sorted(name for name, targets in edges.items() if name != "dplens.ui" and "dplens.ui" in targets)
    assert not through_package, (f"{through_package} import the dplens.ui package; import the sibling module "
                                 "instead (from dplens.ui.<module> import <name>)")
    try:
        tuple(graphlib.TopologicalSorter(edges).static_order())
    except graphlib.CycleError as err:
        pytest.fail("import cycle in dplens.ui: " + " -> ".join(reversed(err.args[1])))
