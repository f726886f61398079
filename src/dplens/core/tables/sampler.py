"""Records drawn from a fitted graphical model (private-pgm's ``MarkovRandomField``) with the caller's RNG.

Why not ``ContingencyTable.synthesize()``: OpenDP 0.16 calls mbi 1.1's ``synthetic_data(method="round")``, which
places each record on its column's conditional CDF at ``(rank + U) / group size``, the rank being the record's
position inside its parent group *in row order*. Every column reuses that one order, so two children of a parent
come out comonotone: the model says they are conditionally independent, the records say they are perfectly
dependent (see docs/tables.md). Here each column draws its own uniformly
random order of the strata inside every parent group: each stratum's count stays within one record of the model's
(stratified resampling in Douc, Cappé & Moulines 2005), and the columns are conditionally independent again.

Sampling from a fitted model is post-processing: the privacy guarantee is unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dplens.core.extras import require

if TYPE_CHECKING:
    import polars as pl
    from mbi import MarkovRandomField
    from opendp.extras.mbi import ContingencyTable

SAMPLING_METHODS = ("stratified", "independent")
COMPARISON_BLOCK_ROWS = 1 << 16  # rows per block of the inverse-CDF comparison (bounds memory to block × levels)


def sample_records(model: MarkovRandomField, rows: int | None, rng: np.random.Generator, *,
                   method: str = "stratified") -> np.ndarray:
    """Draw ``rows`` records from ``model``, one column at a time down its junction tree.

    Columns are drawn in reverse elimination order; each one conditions on its neighbours in the triangulated
    graph that were already drawn, which is exact forward sampling of a decomposable model (Koller & Friedman
    2009, §12.1.1; the clique-tree marginals give every conditional, ch. 10). mbi instead conditions
    on the fitted cliques only, which drops fill-in edges when the model graph is not chordal.

    Args:
        model: a fitted ``mbi.MarkovRandomField`` (``ContingencyTable.model`` in OpenDP).
        rows: number of records; ``None`` takes the model's estimated total.
        rng: the only source of randomness.
        method: ``"stratified"`` (default: randomized rounding per parent group, strata in a fresh random order
            per column) or ``"independent"`` (i.i.d. draws from each conditional).

    Returns:
        An int64 array of shape ``(rows, attributes)``: level indices, columns in ``model.domain.attributes``
        order.

    Raises:
        ValueError: ``rows`` is not a positive integer or ``method`` is unknown.

    >>> import numpy as np
    >>> from mbi import CliqueVector, Domain, Factor, MarkovRandomField
    >>> domain = Domain(("a", "b"), (2, 3))
    >>> joint = np.array([[0.3, 0.1, 0.1], [0.1, 0.2, 0.2]])   # the model's distribution of (a, b)
    >>> potentials = CliqueVector(domain, [("a", "b")], {("a", "b"): Factor(domain, np.log(joint))})
    >>> model = MarkovRandomField(potentials=potentials, marginals=potentials.exp() * 1000, total=1000)
    >>> records = sample_records(model, 1000, np.random.default_rng(0))
    >>> records.shape
    (1000, 2)
    >>> np.histogram2d(records[:, 0], records[:, 1], bins=(2, 3), range=((0, 2), (0, 3)))[0].astype(int).tolist()
    [[300, 100, 100], [100, 200, 200]]
    """
    if method not in SAMPLING_METHODS:
        raise ValueError(f"method must be one of {SAMPLING_METHODS}, got {method!r}")
    total = _record_count(model, rows)
    # mbi loads jax: import it on first use, as dplens.core.tables.synthesis does with OpenDP.
    require("mbi", "tables", "Sampling synthetic records")
    from mbi import junction_tree, marginal_oracles

    domain = model.domain
    tree, elimination_order = junction_tree.make_junction_tree(domain, [tuple(c) for c in model.cliques])
    maximal_cliques = [tuple(c) for c in tree.nodes]
    marginals = marginal_oracles.message_passing_stable(model.potentials.expand(maximal_cliques))

    codes: dict[str, np.ndarray] = {}
    for column in reversed(elimination_order):
        neighbours = set().union(*(set(c) for c in maximal_cliques if column in c))
        parents = tuple(a for a in domain.attributes if a in codes and a in neighbours)
        joint = np.asarray(marginals.project(parents + (column,)).datavector(flatten=False), dtype=float)
        groups = (np.ravel_multi_index(tuple(codes[p] for p in parents), joint.shape[:-1]) if parents
                  else np.zeros(total, dtype=np.int64))
        codes[column] = _draw_column(joint.reshape(-1, joint.shape[-1]), groups, rng, method)
    return np.column_stack([codes[a] for a in domain.attributes]).astype(np.int64)


def synthesize_table(table: ContingencyTable, rows: int | None, rng: np.random.Generator) -> pl.DataFrame:
    """OpenDP ``ContingencyTable.synthesize(rows)`` with :func:`sample_records`: a polars frame of key values.

    Returns one column per key of ``table`` (its null key included, as OpenDP's), values mapped back from level
    indices to the table's keys.

    Raises:
        ValueError: the table has numeric cut points (OpenDP draws values inside a bin with the global NumPy RNG;
            dplens declares every key, so it never has cuts).
    """
    pl = require("polars", "tables", "Synthetic records")

    if table.cuts:
        raise ValueError(f"synthesize_table needs a table without cut points, got cuts for {sorted(table.cuts)}; "
                         "declare every key instead")
    indices = sample_records(table.model, rows, rng)
    position = {name: i for i, name in enumerate(table.model.domain.attributes)}
    return pl.DataFrame([table.keys[name].gather(indices[:, position[name]]) for name in table.keys])


def _record_count(model: MarkovRandomField, rows: int | None) -> int:
    if rows is None:
        return max(1, round(float(model.total)))
    if isinstance(rows, bool) or not isinstance(rows, int | np.integer) or rows < 1:
        raise ValueError(f"rows must be a positive integer or None (the model's total), got {rows!r}")
    return int(rows)


def _draw_column(joint: np.ndarray, groups: np.ndarray, rng: np.random.Generator, method: str) -> np.ndarray:
    """One level per record from P(column | parent configuration ``groups``); ``joint`` is (configurations, levels)."""
    total = groups.size
    levels = joint.shape[1]
    parent_mass = joint.sum(axis=1, keepdims=True)
    # A parent configuration the model gives no mass to (reachable only through float round-off) falls back to
    # the column's own marginal rather than to an arbitrary level.
    column_marginal = joint.sum(axis=0) / joint.sum()
    conditional = np.where(parent_mass > 0, joint / np.where(parent_mass > 0, parent_mass, 1.0), column_marginal)
    cdf = np.cumsum(conditional, axis=1)
    cdf /= cdf[:, -1:]
    last_possible = levels - 1 - np.argmax(conditional[:, ::-1] > 0, axis=1)

    if method == "stratified":
        # Stratified positions (rank + U) / n inside each parent group of n records, ranks a uniformly random
        # permutation drawn afresh for this column: each level's count is within one of n·p (as randomized
        # rounding), and ranks are independent across columns, so siblings are conditionally independent.
        sizes = np.bincount(groups, minlength=joint.shape[0])
        starts = np.cumsum(sizes) - sizes
        order = rng.permutation(total)
        order = order[np.argsort(groups[order], kind="stable")]
        rank = np.empty(total, dtype=np.int64)
        rank[order] = np.arange(total) - starts[groups[order]]
        position = (rank + rng.random(total)) / sizes[groups]
    else:
        position = rng.random(total)

    # Inverse CDF: the level is the number of CDF steps at or below the position (searchsorted, side="right").
    drawn = np.empty(total, dtype=np.int64)
    for start in range(0, total, COMPARISON_BLOCK_ROWS):
        block = slice(start, start + COMPARISON_BLOCK_ROWS)
        drawn[block] = (cdf[groups[block]] <= position[block, None]).sum(axis=1)
    return np.minimum(drawn, last_possible[groups])
