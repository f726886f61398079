"""One registry of every mechanism dplens offers: histogram mechanisms and table mechanisms, by unique name.

Adding a mechanism is one step: write its class (a frozen dataclass with ``name``, ``data_dependent``,
``summary``, its settings with their ranges (``setting(default, range)``) and ``run``) and call :func:`register`
on an instance. The pickers, the command line and the generated reference read this registry, so nothing else
changes.

>>> REGISTRY["hb"].input_kind, REGISTRY["gaussian-marginals"].input_kind
('histogram', 'table')
>>> mechanism("hb").name
'hb'

Every mechanism is stored once, in ``dplens.core.catalogue`` (the lowest layer), by unique name with its input
kind. The layers below this one (analysis, tables) look mechanisms up in its read-only views of one kind each,
``dplens.core.mechanisms.MECHANISMS`` and ``dplens.core.tables.mechanisms.TABLE_MECHANISMS``; ``REGISTRY`` is the
read-only view of both, and :func:`register` and :func:`unregister` are the only writers outside the built-ins, so a
registered mechanism is found everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dplens.core.catalogue import KINDS, Kind, add, get, remove, view
from dplens.core.mechanisms import MECHANISMS, RENAMED, Mechanism, Release
from dplens.core.queries.marginals import MarginalWorkload
from dplens.core.tables.mechanisms import TABLE_MECHANISMS

InputKind = Kind


@runtime_checkable
class TableMechanism(Protocol):
    """What every table mechanism provides (dplens.core.tables.contract: ρ-zCDP on a table of records)."""

    @property
    def name(self) -> str: ...

    @property
    def data_dependent(self) -> bool: ...

    @property
    def synthesizes(self) -> bool: ...

    def run(self, records: np.ndarray, workload: MarginalWorkload, rho: float,
            rng: np.random.Generator) -> Release: ...

    def expected_mse(self, workload: MarginalWorkload, rho: float) -> float | None: ...


@dataclass(frozen=True)
class Entry:
    """One registered mechanism and the input it takes: a histogram (``run(x, workload, epsilon, rng)``) or a
    table of records (``run(records, workload, rho, rng)``)."""

    mechanism: Any
    input_kind: InputKind

    @property
    def name(self) -> str:
        return self.mechanism.name

    @property
    def summary(self) -> str:
        """The class's one-line ``summary`` (what the pickers show); a plan configured with Gaussian noise shows its
        class's ``gaussian_summary``."""
        gaussian = getattr(self.mechanism, "noise", "laplace") == "gaussian"
        kind = type(self.mechanism)
        return str(getattr(kind, "gaussian_summary" if gaussian and hasattr(kind, "gaussian_summary") else "summary",
                           ""))


class _Registry(Mapping[str, Entry]):
    """Every stored mechanism, histogram mechanisms first, each kind in its registration order; read-only."""

    def __getitem__(self, name: str) -> Entry:
        mechanism, kind = get(name)
        return Entry(mechanism, kind)

    def __iter__(self) -> Iterator[str]:
        for kind in KINDS:
            yield from view(kind)

    def __len__(self) -> int:
        return sum(len(view(kind)) for kind in KINDS)

    def __repr__(self) -> str:
        return f"REGISTRY({', '.join(self)})"


REGISTRY: Mapping[str, Entry] = _Registry()


def input_kind(mechanism: object) -> InputKind:
    """Which input ``mechanism`` takes: "table" when it has the table contract (``synthesizes``,
    ``expected_mse`` of a workload at ρ), "histogram" when it has the histogram one (``Mechanism``); else a ValueError.

    >>> input_kind(MECHANISMS["hb"]), input_kind(TABLE_MECHANISMS["mst"])
    ('histogram', 'table')
    """
    if isinstance(mechanism, TableMechanism):
        return "table"
    if isinstance(mechanism, Mechanism):
        return "histogram"
    raise ValueError(f"mechanism {mechanism!r} has neither contract: a histogram mechanism has name, data_dependent, "
                     "run(x, workload, epsilon, rng) and expected_mse; a table mechanism has name, data_dependent, "
                     "synthesizes, run(records, workload, rho, rng) and expected_mse(workload, rho)")


def register(mechanism: Any) -> Any:
    """Add ``mechanism`` under its ``name`` and return it; a name already registered is refused.

    >>> register(MECHANISMS["hb"])
    Traceback (most recent call last):
    ValueError: mechanism name 'hb' is already registered (a histogram mechanism); choose another name
    """
    kind = input_kind(mechanism)
    name = mechanism.name
    if not isinstance(name, str) or not name or name != name.lower() or any(c in name for c in " _"):
        raise ValueError(f"mechanism name must be lower-case kebab-case (like 'greedy-h'), got {name!r}")
    return add(mechanism, kind)  # refuses a name already taken in either kind


def unregister(name: str) -> None:
    """Remove the mechanism ``name`` (for tests that register one of their own).

    >>> unregister("no-such-mechanism")
    Traceback (most recent call last):
    ValueError: unknown mechanism 'no-such-mechanism'; nothing to unregister
    """
    remove(name)


def histogram_mechanisms() -> dict[str, Mechanism]:
    """Every registered histogram mechanism by name, in registration order.

    >>> list(histogram_mechanisms())[:3]
    ['identity', 'laplace-on-answers', 'uniform']
    """
    return dict(MECHANISMS)


def table_mechanisms() -> dict[str, TableMechanism]:
    """Every registered table mechanism by name, in registration order.

    >>> list(table_mechanisms())[:2]
    ['gaussian-marginals', 'residual-planner']
    """
    return dict(TABLE_MECHANISMS)


def mechanism(name: str, kind: InputKind | None = None) -> Any:
    """The registered mechanism ``name`` (of input ``kind`` when given); a ValueError names it and the choices.

    >>> mechanism("mst", kind="histogram")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: mechanism 'mst' is not a histogram mechanism (it takes a table); choose from identity, ...
    """
    choices = ", ".join(n for n, entry in REGISTRY.items() if kind is None or entry.input_kind == kind)
    name = RENAMED.get(name, name) if kind != "table" else name  # a former histogram mechanism name
    if name not in REGISTRY:
        raise ValueError(f"unknown mechanism {name!r}; choose from {choices}")
    entry = REGISTRY[name]
    if kind is not None and entry.input_kind != kind:
        raise ValueError(f"mechanism {name!r} is not a {kind} mechanism (it takes a {entry.input_kind}); "
                         f"choose from {choices}")
    return entry.mechanism
