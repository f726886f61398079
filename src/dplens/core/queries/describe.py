"""Each query of a workload in words and as a compact spec, with the data's own bin labels (for exports).

A released answer means nothing without its query: "answer 4 = 103.2" needs "ages 20-29 to 40-49" beside it.
The description is read off the query's row of W (its nonzero weights), so it is the same for every workload
class: a run of equal weights over consecutive bins is a range, a rectangle of cells of a 2-D histogram is a
box, anything else is its weighted sum.

>>> from dplens.core.queries.workloads import Prefix
>>> texts, specs = describe_queries(Prefix(3), [["a", "b", "c"]])
>>> texts
['bin a', 'bins a to b', 'bins a to c']
>>> specs
['range:0:0', 'range:0:1', 'range:0:2']
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dplens.core.data.limits import DENSE_LIMIT
from dplens.core.data.streamed_json import NumberedNames
from dplens.core.queries.workloads import Workload, sparse_matrix, sparse_native

MAX_DESCRIBED = 20_000   # queries described one by one; a larger workload's answers are "row i of <spec>"
MAX_TERMS = 8            # weighted terms spelled out in words before "…"


def _weight(value: float) -> str:
    return f"{value:g}"


def _words_1d(columns: np.ndarray, weights: np.ndarray, labels: Sequence[str]) -> tuple[str, str]:
    if columns.size == 0:
        return "no bin (always 0)", "empty"
    equal = bool(np.all(weights == weights[0]))
    if equal and columns[-1] - columns[0] == columns.size - 1:
        lo, hi = int(columns[0]), int(columns[-1])
        scale = "" if weights[0] == 1 else f"{_weight(weights[0])} × "
        where = f"bin {labels[lo]}" if lo == hi else f"bins {labels[lo]} to {labels[hi]}"
        return scale + where, f"range:{lo}:{hi}" + ("" if weights[0] == 1 else f"*{_weight(weights[0])}")
    return (_weighted_sum([labels[c] for c in columns[:MAX_TERMS]], weights, columns.size),
            _weights_spec(columns, weights))


def _weighted_sum(shown: Sequence[str], weights: np.ndarray, count: int) -> str:
    """``1·[a] − 2·[b] + …`` for the first ``MAX_TERMS`` nonzero cells (labels ``shown``)."""
    terms = " + ".join(f"{_weight(w)}·[{label}]" for label, w in zip(shown, weights, strict=False))
    more = f" + … ({count - MAX_TERMS} more cells)" if count > MAX_TERMS else ""
    return terms.replace("+ -", "− ") + more


def _weights_spec(columns: np.ndarray, weights: np.ndarray) -> str:
    return "weights:" + ";".join(f"{c}={_weight(w)}" for c, w in zip(columns, weights, strict=True))


def _words_2d(columns: np.ndarray, weights: np.ndarray, labels: Sequence[Sequence[str]], cols: int,
              names: Sequence[str]) -> tuple[str, str]:
    rows_, cols_ = np.divmod(columns, cols)
    if columns.size == 0:
        return "no cell (always 0)", "empty"
    r0, r1, c0, c1 = int(rows_.min()), int(rows_.max()), int(cols_.min()), int(cols_.max())
    box = (r1 - r0 + 1) * (c1 - c0 + 1) == columns.size and np.all(weights == weights[0])
    if box:
        def span(axis: int, lo: int, hi: int) -> str:
            return labels[axis][lo] if lo == hi else f"{labels[axis][lo]} to {labels[axis][hi]}"
        scale = "" if weights[0] == 1 else f"{_weight(weights[0])} × "
        return (f"{scale}{names[0]} {span(0, r0, r1)}, {names[1]} {span(1, c0, c1)}",
                f"box:{r0}:{r1}:{c0}:{c1}" + ("" if weights[0] == 1 else f"*{_weight(weights[0])}"))
    shown = [f"{labels[0][r]}|{labels[1][c]}" for r, c in zip(rows_[:MAX_TERMS], cols_[:MAX_TERMS], strict=True)]
    return _weighted_sum(shown, weights, columns.size), _weights_spec(columns, weights)


def describe_queries(workload: Workload, axis_labels: Sequence[Sequence[str]],
                     axis_names: Sequence[str] = ("bin",)) -> tuple[Sequence[str], Sequence[str]]:
    """(words, specs): one description per query of ``workload`` over bins labelled ``axis_labels`` (per axis).

    Specs: ``range:lo:hi`` (consecutive bins, indices inclusive), ``box:r0:r1:c0:c1`` (a rectangle of a 2-D
    histogram), ``weights:i=w;…`` (any other row, flat cell indices), each with ``*w`` for a common weight ≠ 1;
    ``row:i`` when the workload has more than ``MAX_DESCRIBED`` queries, or is implicit and too large to read
    row by row (then the words say so; both are then ``NumberedNames``, made when read: 10^6 rows are not
    2·10^6 strings held).

    >>> from dplens.core.queries.workloads import Explicit
    >>> describe_queries(Explicit(np.array([[1.0, 0, -1]])), [["x", "y", "z"]])
    (['1·[x] − 1·[z]'], ['weights:0=1;2=-1'])
    """
    m, n = workload.shape
    if m > MAX_DESCRIBED or (not sparse_native(workload) and m * n > DENSE_LIMIT):
        return NumberedNames(m, "row ", f" of the workload {workload.describe()}"), NumberedNames(m, "row:")
    matrix = sparse_matrix(workload)  # type: ignore[arg-type]  # workloads are frozen dataclasses: hashable
    two_d = len(axis_labels) == 2
    words, specs = [], []
    for i in range(m):
        start, stop = matrix.indptr[i], matrix.indptr[i + 1]
        columns, weights = matrix.indices[start:stop], matrix.data[start:stop]
        order = np.argsort(columns, kind="stable")
        columns, weights = columns[order], weights[order]
        text, spec = (_words_2d(columns, weights, axis_labels, len(axis_labels[1]), axis_names) if two_d
                      else _words_1d(columns, weights, axis_labels[0]))
        words.append(text)
        specs.append(spec)
    return words, specs
