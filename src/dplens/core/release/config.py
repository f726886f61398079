"""Session configuration as JSON: what to reload to get the same session back (never the ledger's spends).

A config references the data (it never embeds counts), the workload spec, the mechanisms and ε grid
of a comparison, the seed, the total budget and the Release page's settings. ``parse_config`` is strict:
every problem is one ``ValueError`` naming the field, the value and the rule.

A custom workload (a stack, an uploaded query matrix, a drawn range: spec ``custom:N:label``) travels
as a *recipe*, a JSON tree of nodes, each one key plus an optional ``label``:
``{"spec": "prefix"}`` (a registry spec), ``{"ranges": [[lo, hi], ...], "n": n}``,
``{"matrix": {"shape": [m, n], "entries": [[row, col, value], ...]}}`` (the nonzeros),
``{"stack": [node, ...]}`` and ``{"kron": [rows_node, cols_node]}``. A recipe carries at most
``MAX_RECIPE_NUMBERS`` numbers (3 per matrix nonzero, 2 per range), so a config stays small.

>>> cfg = SessionConfig(dataset="sample:smooth", workload="prefix", mechanisms=("identity",),
...                     epsilons=(0.1, 1.0), seed=3, total_epsilon=2.0)
>>> parse_config(config_to_json(cfg)) == cfg
True
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from dplens import __version__
from dplens.core.data.limits import (
    DENSE_LIMIT,
    MAX_QUERIES,
    MAX_RECIPE_NUMBERS,  # noqa: F401  (re-exported: the recipe bound, named in errors)
)
from dplens.core.mechanisms import MECHANISMS, RENAMED
from dplens.core.queries.workloads import (
    Explicit,
    Kron,
    Ranges,
    Stack,
    check_recipe_numbers,
    parse_workload,
)
from dplens.core.queries.workloads import recipe as workload_recipe
from dplens.core.validate import positive

FORMAT = "dplens-session"
DATASET_KINDS = ("sample", "dpbench", "upload")
MAX_SEED = 2**31 - 1
RECIPE_KINDS = ("spec", "ranges", "matrix", "stack", "kron")


@dataclass(frozen=True)
class ReleaseSettings:
    """The Release page's choices: mechanism, its parameters (as text), ε and the noise path."""

    mechanism: str = "identity"
    params: tuple[tuple[str, str], ...] = ()
    epsilon: float = 1.0
    noise_path: str = "secure"


@dataclass(frozen=True)
class SessionConfig:
    """Everything needed to rebuild a session's settings (see module docstring)."""

    dataset: str
    workload: str | None
    mechanisms: tuple[str, ...]
    epsilons: tuple[float, ...]
    seed: int
    total_epsilon: float
    release: ReleaseSettings = field(default_factory=ReleaseSettings)
    custom_workload: dict | None = None  # the recipe of a ``custom:`` workload (module docstring)


def recipe_of(workload) -> dict:
    """The recipe of a drawn range, a query matrix, a Kron or Stack of them (nonzeros only): the workload's own.

    >>> recipe_of(Ranges(8, [2], [5], label="drawn range"))
    {'ranges': [[2, 5]], 'n': 8, 'label': 'drawn range'}

    Raises:
        ValueError: for other workload types (add those from the registry) or beyond MAX_RECIPE_NUMBERS.
    """
    return workload_recipe(workload)


def _integer(where: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"config {where!r} must be an integer in [{low}, {high}], got {value!r}")
    return value


def _numbers_in(node: object, where: str) -> int:
    """Validate one recipe node (structure, types, ranges); return how many numbers it holds."""
    if not isinstance(node, dict) or len(set(node) & set(RECIPE_KINDS)) != 1 or set(node) - {
            *RECIPE_KINDS, "label", *(("n",) if "ranges" in node else ())}:
        raise ValueError(f"config {where!r} must be an object with one of {RECIPE_KINDS} (and a label), "
                         f"got {str(node)[:120]!r}")
    if not isinstance(node.get("label", ""), str):
        raise ValueError(f"config '{where}.label' must be text, got {node['label']!r}")
    kind = next(k for k in RECIPE_KINDS if k in node)
    value, at = node[kind], f"{where}.{kind}"
    if kind == "spec":
        if not (isinstance(value, str) and value.strip()) or value.startswith("custom:"):
            raise ValueError(f"config {at!r} must be a registry workload spec, got {value!r}")
        _refuse_file(at, value)
        return 0
    if kind in ("stack", "kron"):
        if not isinstance(value, list) or not value or (kind == "kron" and len(value) != 2):
            raise ValueError(f"config {at!r} must be a list of {'two' if kind == 'kron' else 'one or more'} "
                             f"recipes, got {str(value)[:120]!r}")
        return sum(_numbers_in(part, f"{at}[{i}]") for i, part in enumerate(value))
    if kind == "ranges":
        n = _integer(f"{where}.n", node.get("n"), 1, 2**31)
        if not isinstance(value, list) or not value or not all(isinstance(r, list) and len(r) == 2 for r in value):
            raise ValueError(f"config {at!r} must be a non-empty list of [lo, hi] pairs, got {str(value)[:120]!r}")
        for lo, hi in value:
            if _integer(at, lo, 0, n - 1) > _integer(at, hi, 0, n - 1):
                raise ValueError(f"config {at!r} needs lo <= hi, got [{lo}, {hi}]")
        return 2 * len(value)
    if not isinstance(value, dict) or set(value) != {"shape", "entries"} or not isinstance(value["shape"], list) \
            or len(value["shape"]) != 2 or not isinstance(value["entries"], list):
        raise ValueError(f"config {at!r} must be {{'shape': [m, n], 'entries': [[row, col, value], ...]}}")
    m = _integer(f"{at}.shape", value["shape"][0], 1, MAX_QUERIES)
    n = _integer(f"{at}.shape", value["shape"][1], 1, 2**31)
    for entry in value["entries"]:
        if not (isinstance(entry, list) and len(entry) == 3):
            raise ValueError(f"config '{at}.entries' must hold [row, col, value] triples, got {str(entry)[:60]!r}")
        _integer(f"{at}.entries row", entry[0], 0, m - 1)
        _integer(f"{at}.entries col", entry[1], 0, n - 1)
        if isinstance(entry[2], bool) or not isinstance(entry[2], int | float) or not math.isfinite(entry[2]):
            raise ValueError(f"config '{at}.entries' values must be finite numbers, got {entry[2]!r}")
    return 3 * len(value["entries"])


def _refuse_file(where: str, spec: str) -> None:
    """A config is user text: it never names a server file (query files come only from uploads)."""
    if spec.strip().partition(":")[0].strip().lower() == "file":
        raise ValueError(f"config {where!r} names a server file ({spec[:80]!r}); refused: query files come "
                         "only from uploads (Workloads page)")


def check_recipe(recipe: object, where: str = "custom_workload") -> dict:
    """Validate a recipe (structure and MAX_RECIPE_NUMBERS) and return it.

    >>> check_recipe({"stack": [{"spec": "prefix"}, {"ranges": [[0, 3]], "n": 4}]})["stack"][0]
    {'spec': 'prefix'}
    """
    check_recipe_numbers(_numbers_in(recipe, where))
    return recipe  # type: ignore[return-value]  # _numbers_in refused anything but a dict


def build_recipe(recipe: dict, shape: tuple[int, ...]):
    """The workload a (checked) recipe describes, for data of ``shape``.

    >>> build_recipe({"stack": [{"spec": "total"}, {"ranges": [[1, 2]], "n": 4}]}, (4,)).shape
    (2, 4)

    Raises:
        ValueError: when the recipe was made for another domain size than ``shape``.
    """
    cells, label = math.prod(shape), recipe.get("label")
    kind = next(k for k in RECIPE_KINDS if k in recipe)
    value = recipe[kind]
    if kind == "spec":
        return parse_workload(value, shape)
    if kind == "stack":
        return Stack(tuple(build_recipe(part, shape) for part in value))
    if kind == "kron":
        if len(shape) != 2:
            raise ValueError(f"a kron recipe needs 2-D data, got shape {tuple(shape)}")
        return Kron(tuple(build_recipe(part, (side,)) for part, side in zip(value, shape, strict=True)))
    made_for = recipe["n"] if kind == "ranges" else value["shape"][1]
    if made_for != cells:
        raise ValueError(f"the custom workload was made for {made_for:,} cells; this dataset has {cells:,}")
    if kind == "ranges":
        lo, hi = np.array(value).T
        return Ranges(cells, lo, hi, label=label or "ranges")
    import scipy.sparse as sp

    m = value["shape"][0]
    rows, cols, values = (np.array([e[k] for e in value["entries"]]) for k in range(3))
    matrix = sp.csr_matrix((values, (rows.astype(int), cols.astype(int))), shape=(m, cells))
    return Explicit(matrix.toarray() if m * cells <= DENSE_LIMIT else matrix, label=label or "explicit")


def config_to_json(config: SessionConfig) -> str:
    """Serialise a config (with format tag and app version)."""
    doc = {"format": FORMAT, "version": __version__, **asdict(config)}
    doc["release"]["params"] = dict(config.release.params)
    return json.dumps(doc, indent=1, allow_nan=False)


def _require(doc: dict, key: str, kind: type, what: str):
    if key not in doc:
        raise ValueError(f"config is missing {key!r} ({what})")
    value = doc[key]
    if isinstance(value, bool) or not isinstance(value, kind):  # JSON true is not an integer seed
        raise ValueError(f"config {key!r} must be {what}, got {value!r}")
    return value


def _mechanism(key: str, name: object) -> str:
    name = RENAMED.get(name, name) if isinstance(name, str) else name  # a config saved before a rename
    if not isinstance(name, str) or name not in MECHANISMS:
        raise ValueError(f"config {key!r} names unknown mechanism {name!r}; known: {', '.join(MECHANISMS)}")
    return name


def parse_config(text: str | bytes) -> SessionConfig:
    """Parse and validate a config written by ``config_to_json``.

    >>> parse_config('{"format": "other"}')
    Traceback (most recent call last):
    ...
    ValueError: not a dplens session config: 'format' must be 'dplens-session', got 'other'
    """
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"config is not valid JSON: {err}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(f"not a dplens session config: 'format' must be {FORMAT!r}, got {got!r}")
    dataset = _require(doc, "dataset", str, "a dataset reference such as 'sample:smooth'")
    name = dataset.partition(":")[2]
    if dataset.partition(":")[0] not in DATASET_KINDS or not name or any(c in name for c in "/\\") or ".." in name:
        raise ValueError(f"config 'dataset' must look like kind:name with kind in {DATASET_KINDS} and no path "
                         f"in the name, got {dataset[:120]!r}")
    workload = doc.get("workload")
    if workload is not None and not (isinstance(workload, str) and workload.strip()):
        raise ValueError(f"config 'workload' must be a workload spec or null, got {workload!r}")
    if workload is not None:
        _refuse_file("workload", workload)
    mechanisms = tuple(_mechanism("mechanisms", m) for m in _require(doc, "mechanisms", list, "a list of names"))
    epsilons = tuple(positive("config 'epsilons'", e) for e in _require(doc, "epsilons", list, "a list of numbers"))
    seed = _require(doc, "seed", int, f"an integer in [0, {MAX_SEED}]")
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"config 'seed' must be an integer in [0, {MAX_SEED}], got {seed!r}")
    total = positive("config 'total_epsilon'", doc.get("total_epsilon"))
    rel = doc.get("release", {})
    if not isinstance(rel, dict):
        raise ValueError(f"config 'release' must be an object, got {rel!r}")
    params = rel.get("params", {})
    if not isinstance(params, dict):
        raise ValueError(f"config 'release.params' must be an object, got {params!r}")
    noise_path = rel.get("noise_path", "secure")
    if noise_path not in ("secure", "exploration"):
        raise ValueError(f"config 'release.noise_path' must be 'secure' or 'exploration', got {noise_path!r}")
    recipe = doc.get("custom_workload")
    if recipe is not None:
        check_recipe(recipe)
    release = ReleaseSettings(mechanism=_mechanism("release.mechanism", rel.get("mechanism", "identity")),
                              params=tuple((str(k), str(v)) for k, v in params.items()),
                              epsilon=positive("config 'release.epsilon'", rel.get("epsilon", 1.0)),
                              noise_path=noise_path)
    return SessionConfig(dataset=dataset, workload=workload, mechanisms=mechanisms, epsilons=epsilons,
                         seed=seed, total_epsilon=total, release=release, custom_workload=recipe)
