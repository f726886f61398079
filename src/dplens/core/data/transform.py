"""Derived histograms: rescale to a chosen total and coarsen the domain (DPBench's "scale" and "domain").

Scale (number of records) and domain size are the two data properties that decide which mechanism
wins in DPBench (Hay et al. 2016, §5): the same shape at a larger scale favours data-independent
strategies less. Both transforms return a new ``Histogram``; the input is never changed.

>>> from dplens.core.data.domain import Histogram
>>> h = Histogram.from_counts([1.0, 3, 0, 4, 2])
>>> coarsen(h, 2).vector.tolist()
[4.0, 4.0, 2.0]
>>> rescale(h, 1000, np.random.default_rng(0)).total
1000.0
"""

from __future__ import annotations

import numpy as np

from dplens.core.data.domain import Histogram
from dplens.core.validate import integer

MAX_RESCALE_TOTAL = 10**12  # records; multinomial sampling stays exact in int64 far beyond this


def rescale(histogram: Histogram, total: int, rng: np.random.Generator) -> Histogram:
    """Draw ``total`` records from the histogram's shape (DPBench "scale"): multinomial(total, x / ‖x‖₁).

    The shape (the normalised histogram) is kept in expectation; the counts are integers summing to
    ``total`` exactly. Seeded through ``rng`` so the derived dataset is reproducible.

    Raises:
        ValueError: if ``total`` is not an integer in [1, 10^12] or the histogram is empty (total 0).

    >>> h = Histogram.from_counts([[1.0, 0], [0, 1]])
    >>> out = rescale(h, 10, np.random.default_rng(1))
    >>> out.domain.shape, out.total, float(out.counts[0, 1])
    ((2, 2), 10.0, 0.0)
    """
    integer("total", total, 1, MAX_RESCALE_TOTAL)
    if not histogram.total > 0:
        raise ValueError("cannot rescale a histogram whose total is 0: it has no shape to sample from")
    shape = histogram.vector / histogram.total
    counts = rng.multinomial(int(total), shape).astype(float).reshape(histogram.domain.shape)
    return Histogram(histogram.domain, counts, histogram.labels, f"{histogram.name} (scaled to {int(total):,})")


def _group_labels(labels: tuple[str, ...], factor: int) -> tuple[str, ...]:
    groups = [labels[i:i + factor] for i in range(0, len(labels), factor)]
    return tuple(g[0] if len(g) == 1 else f"{g[0]}–{g[-1]}" for g in groups)


def coarsen(histogram: Histogram, factor: int | tuple[int, int]) -> Histogram:
    """Sum runs of ``factor`` adjacent bins per axis (the last group may be shorter); 1-D or 2-D.

    For 2-D, ``factor`` is one int for both axes or a (rows, cols) pair. Totals are preserved.

    Raises:
        ValueError: if a factor is not an integer >= 1, or the histogram's axis count does not match.

    >>> h = Histogram.from_counts([[1.0, 2, 3], [4, 5, 6]])
    >>> coarsen(h, (1, 2)).counts.tolist()
    [[3.0, 3.0], [9.0, 6.0]]
    """
    shape = histogram.domain.shape
    factors = tuple(factor) if isinstance(factor, tuple | list) else (factor,) * len(shape)
    if len(factors) != len(shape):
        raise ValueError(f"factor must give one value per axis ({len(shape)}), got {factor!r}")
    for f in factors:
        integer("factor", f)
    counts = histogram.counts
    for axis, f in enumerate(factors):
        starts = np.arange(0, counts.shape[axis], f)
        counts = np.add.reduceat(counts, starts, axis=axis)
    labels = tuple(_group_labels(axis_labels, f) for axis_labels, f in zip(histogram.labels, factors, strict=False))
    by = "×".join(str(int(f)) for f in factors)
    return Histogram.from_counts(counts, labels=labels, name=f"{histogram.name} (coarsened {by})",
                                 axis_names=histogram.domain.names)
