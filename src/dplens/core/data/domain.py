"""Domain and Histogram: the data model (x ∈ Z≥0^n over a public domain).

One :class:`Domain` serves histograms and tables (private-pgm's form): a histogram is a table with one or two
attributes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from dplens.core.data.limits import MAX_CELLS, MAX_LEVELS


def check_levels(names: tuple[str, ...], sizes: tuple[int, ...], most: int = MAX_LEVELS) -> None:
    """Refuse an attribute whose size is not an integer from 1 to ``most``.

    A table's attributes are declared and read with ``most = MAX_LEVELS``; a histogram's axis may be longer
    (a 1-D histogram of 2^22 bins), so :class:`Domain` itself allows up to MAX_CELLS.

    >>> check_levels(("age",), (70_000,))
    Traceback (most recent call last):
    ValueError: attribute 'age' has 70000 levels; the rule is an integer from 1 to 65536
    """
    for name, size in zip(names, sizes, strict=False):
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or not 1 <= size <= most:
            raise ValueError(f"attribute {name!r} has {size!r} levels; the rule is an integer from 1 to {most}")


@dataclass(frozen=True)
class Domain:
    """Names and sizes of the attributes of a histogram or a table, in column (axis) order.

    >>> d = Domain(("age", "sex"), (85, 2))
    >>> d.size, d.shape, d.sizes_of(("sex",)), d.project(("sex", "age"))
    (170, (85, 2), (2,), Domain(names=('sex', 'age'), sizes=(2, 85)))
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.names) != len(self.sizes):
            raise ValueError(f"a domain needs one size per attribute, got {len(self.names)} names "
                             f"and {len(self.sizes)} sizes")
        if not self.names:
            raise ValueError("a domain needs at least one attribute")
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"attribute names must be unique, got {list(self.names)}")
        check_levels(tuple(self.names), tuple(self.sizes), MAX_CELLS)
        object.__setattr__(self, "names", tuple(self.names))
        object.__setattr__(self, "sizes", tuple(int(s) for s in self.sizes))

    @classmethod
    def from_json(cls, text: str) -> Domain:
        """Read a table's domain ``{"attr": size, ...}`` (the form private-pgm and OpenDP's mbi use).

        >>> Domain.from_json('{"age": 85, "sex": 2}').to_json()
        '{"age": 85, "sex": 2}'
        """
        try:
            mapping = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"the domain file is not JSON ({error.msg} at line {error.lineno})") from None
        if not isinstance(mapping, dict):
            raise ValueError('the domain file must be a JSON object like {"age": 85, "sex": 2}')
        names, sizes = tuple(str(k) for k in mapping), tuple(mapping.values())
        check_levels(names, sizes)  # a table's attribute has at most MAX_LEVELS levels
        return cls(names, sizes)

    def to_json(self) -> str:
        return json.dumps(dict(zip(self.names, self.sizes, strict=True)))

    @property
    def size(self) -> int:
        """Number of cells n of the full (for a table: virtual) domain, as an exact Python int."""
        return math.prod(self.sizes)

    @property
    def shape(self) -> tuple[int, ...]:
        """The histogram's array shape."""
        return self.sizes

    def index(self, attributes: tuple[str, ...]) -> tuple[int, ...]:
        """Column positions of named attributes, in the domain's order; unknown names are refused."""
        unknown = [a for a in attributes if a not in self.names]
        if unknown:
            raise ValueError(f"marginal {tuple(attributes)} names {unknown}, not attributes of this table "
                             f"({', '.join(self.names)})")
        if len(set(attributes)) != len(attributes):
            raise ValueError(f"marginal {tuple(attributes)} repeats an attribute")
        return tuple(sorted(self.names.index(a) for a in attributes))

    def sizes_of(self, attributes: tuple[str, ...]) -> tuple[int, ...]:
        """Sizes of named attributes, in the domain's order."""
        return tuple(self.sizes[i] for i in self.index(attributes))

    def project(self, names: tuple[str, ...]) -> Domain:
        """The domain of a marginal: the named attributes, kept in the given order."""
        self.index(tuple(names))  # refuses unknown and repeated names
        return Domain(tuple(names), tuple(self.sizes[self.names.index(a)] for a in names))


@dataclass(frozen=True, eq=False)
class Histogram:
    """Non-negative finite counts over a Domain of one or two attributes and at most MAX_CELLS cells, with optional
    bin labels and a name.

    >>> h = Histogram.from_counts([3, 0, 5], name="tiny")
    >>> h.total, h.domain.size, h.vector.tolist()
    (8.0, 3, [3.0, 0.0, 5.0])
    """

    domain: Domain
    counts: np.ndarray
    labels: tuple[tuple[str, ...], ...] = field(default=())
    name: str = "histogram"

    def __post_init__(self) -> None:
        if not 1 <= len(self.domain.sizes) <= 2:
            raise ValueError(f"Domain must be 1-D or 2-D, got {len(self.domain.sizes)} axes")
        if self.domain.size > MAX_CELLS:
            raise ValueError(f"Domain has {self.domain.size} cells; the limit is {MAX_CELLS} (2^22)")
        counts = np.asarray(self.counts, dtype=float)
        if counts.shape != self.domain.shape:
            raise ValueError(f"counts shape {counts.shape} does not match domain shape {self.domain.shape}")
        if not np.all(np.isfinite(counts)):
            raise ValueError("counts must be finite (no NaN or inf)")
        if np.any(counts < 0):
            first = int(np.flatnonzero(counts.ravel() < 0)[0])
            raise ValueError(f"counts must be non-negative; cell {first} is {counts.ravel()[first]:g}")
        if len(self.labels) > len(self.domain.sizes):
            raise ValueError(f"labels are given for {len(self.labels)} axes but the histogram has "
                             f"{len(self.domain.sizes)}; give one list of labels per axis")
        for axis, axis_labels in enumerate(self.labels):
            if len(axis_labels) != self.domain.sizes[axis]:
                raise ValueError(
                    f"axis {axis} has {len(axis_labels)} labels for {self.domain.sizes[axis]} bins"
                )
        counts.setflags(write=False)
        object.__setattr__(self, "counts", counts)

    @classmethod
    def from_counts(cls, counts, *, labels=(), name: str = "histogram", axis_names=None) -> Histogram:
        """Build a histogram from a 1-D or 2-D array of counts."""
        array = np.asarray(counts, dtype=float)
        if array.ndim not in (1, 2):
            raise ValueError(f"counts must be 1-D or 2-D, got {array.ndim}-D")
        if array.size == 0:
            raise ValueError("counts must not be empty")
        names = tuple(axis_names) if axis_names else (("bin",) if array.ndim == 1 else ("row", "col"))
        labels = tuple(tuple(map(str, axis)) for axis in labels)
        return cls(Domain(names, array.shape), array, labels, name)

    @property
    def vector(self) -> np.ndarray:
        """The data vector x (counts flattened in row-major order)."""
        return self.counts.ravel()

    @property
    def total(self) -> float:
        """Number of records (sum of counts)."""
        return float(self.counts.sum())

    def bin_labels(self) -> list[str]:
        """One label per cell of the flattened vector (given labels, or indices)."""
        if self.domain.shape and len(self.domain.shape) == 1:
            return list(self.labels[0]) if self.labels else [str(i) for i in range(self.domain.size)]
        rows, cols = self.domain.shape
        row_labels = self.labels[0] if self.labels else [str(i) for i in range(rows)]
        col_labels = self.labels[1] if len(self.labels) > 1 else [str(j) for j in range(cols)]
        return [f"{r}|{c}" for r in row_labels for c in col_labels]

    def summary(self) -> dict[str, float]:
        """Bins, total, share of zero bins, max, and bins with count < 10 (the 'small bins').

        >>> Histogram.from_counts([0, 2, 20, 0]).summary()["zero_share"]
        0.5
        """
        x = self.vector
        return {
            "bins": int(x.size),
            "total": float(x.sum()),
            "zero_share": float(np.mean(x == 0)),
            "max": float(x.max()),
            "small_bins": int(np.sum((x > 0) & (x < 10))),
        }
