"""Domain and Histogram: the data model (x ∈ Z≥0^n over a public domain)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dplens.core.data.limits import MAX_CELLS  # largest histogram the app accepts (4,194,304 cells)


@dataclass(frozen=True)
class Domain:
    """Public, data-independent shape of a histogram.

    >>> Domain(("age", "income"), (4, 8)).size
    32
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.names) != len(self.sizes):
            raise ValueError(f"Domain needs one name per axis, got names={self.names} sizes={self.sizes}")
        if not 1 <= len(self.sizes) <= 2:
            raise ValueError(f"Domain must be 1-D or 2-D, got {len(self.sizes)} axes")
        if any(int(s) < 1 for s in self.sizes):
            raise ValueError(f"Domain sizes must be >= 1, got {self.sizes}")
        if self.size > MAX_CELLS:
            raise ValueError(f"Domain has {self.size} cells; the limit is {MAX_CELLS} (2^22)")

    @property
    def size(self) -> int:
        """Number of cells n (the length of the data vector)."""
        return int(np.prod(self.sizes))

    @property
    def shape(self) -> tuple[int, ...]:
        """The histogram's array shape."""
        return tuple(int(s) for s in self.sizes)


@dataclass(frozen=True, eq=False)
class Histogram:
    """Non-negative finite counts over a Domain, with optional bin labels and a name.

    >>> h = Histogram.from_counts([3, 0, 5], name="tiny")
    >>> h.total, h.domain.size, h.vector.tolist()
    (8.0, 3, [3.0, 0.0, 5.0])
    """

    domain: Domain
    counts: np.ndarray
    labels: tuple[tuple[str, ...], ...] = field(default=())
    name: str = "histogram"

    def __post_init__(self) -> None:
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
