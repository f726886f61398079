"""The one storage of every mechanism dplens offers, by unique name, with the input it takes, in registration order.

It sits below every other layer (it imports nothing from dplens), so the histogram mechanisms
(``dplens.core.mechanisms.MECHANISMS``), the table mechanisms (``dplens.core.tables.mechanisms.TABLE_MECHANISMS``)
and the registry (``dplens.core.registry``) all read the same entries: ``MECHANISMS`` and ``TABLE_MECHANISMS`` are
read-only views of one kind each, and a name is taken once across both kinds.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Toy:
...     name: str = "toy-catalogue"
>>> toy = add(Toy(), "histogram")
>>> get("toy-catalogue")[1], "toy-catalogue" in view("histogram"), "toy-catalogue" in view("table")
('histogram', True, False)
>>> view("histogram")["toy-catalogue"] = Toy()
Traceback (most recent call last):
TypeError: '_KindView' object does not support item assignment
>>> remove("toy-catalogue")
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

Kind = Literal["histogram", "table"]
KINDS: tuple[Kind, ...] = ("histogram", "table")

# name -> (mechanism, kind); a dict keeps insertion order, which is the registration order the pickers show
_ENTRIES: dict[str, tuple[Any, Kind]] = {}


def _check_kind(kind: str) -> Kind:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    return kind  # narrowed to Kind by the membership test


def add(mechanism: Any, kind: Kind) -> Any:
    """Store ``mechanism`` under its ``name`` as an input ``kind`` and return it; a name already taken (in either
    kind) is refused.

    >>> add(object(), "histogram")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: mechanism must have a str name, got <object ...>
    """
    kind = _check_kind(kind)
    name = getattr(mechanism, "name", None)
    if not isinstance(name, str):
        raise ValueError(f"mechanism must have a str name, got {mechanism!r}")
    if name in _ENTRIES:
        raise ValueError(f"mechanism name {name!r} is already registered (a {_ENTRIES[name][1]} mechanism); "
                         "choose another name")
    _ENTRIES[name] = (mechanism, kind)
    return mechanism


def remove(name: str) -> None:
    """Remove the mechanism ``name``; an unknown name is a ValueError.

    >>> remove("no-such-mechanism")
    Traceback (most recent call last):
    ValueError: unknown mechanism 'no-such-mechanism'; nothing to unregister
    """
    if name not in _ENTRIES:
        raise ValueError(f"unknown mechanism {name!r}; nothing to unregister")
    del _ENTRIES[name]


def get(name: str) -> tuple[Any, Kind]:
    """The mechanism ``name`` and its input kind; a KeyError (as a mapping gives) when no mechanism has that name.

    >>> get("no-such-mechanism")
    Traceback (most recent call last):
    KeyError: 'no-such-mechanism'
    """
    return _ENTRIES[name]


class _KindView(Mapping[str, Any]):
    """The mechanisms of one input kind by name, in registration order; read-only and always current."""

    def __init__(self, kind: Kind) -> None:
        self._kind = kind

    def __getitem__(self, name: str) -> Any:
        mechanism, kind = _ENTRIES[name]
        if kind != self._kind:
            raise KeyError(name)
        return mechanism

    def __iter__(self) -> Iterator[str]:
        return (name for name, (_, kind) in _ENTRIES.items() if kind == self._kind)

    def __len__(self) -> int:
        return sum(kind == self._kind for _, kind in _ENTRIES.values())

    def __repr__(self) -> str:
        return f"{self._kind} mechanisms({', '.join(self)})"


_VIEWS: dict[Kind, _KindView] = {kind: _KindView(kind) for kind in KINDS}


def view(kind: Kind) -> Mapping[str, Any]:
    """The read-only, always-current mapping of the stored mechanisms of input ``kind``, by name.

    >>> view("tables")
    Traceback (most recent call last):
    ValueError: kind must be one of histogram, table, got 'tables'
    """
    return _VIEWS[_check_kind(kind)]
