"""Marginals a private-pgm model does not hold, computed in NumPy: variable elimination on its log-potentials.

MST and AIM choose what to measure by scoring candidate marginals against the current model (``model.project``).
For a clique the model's junction tree does not hold, private-pgm (mbi 1.1) eliminates the other attributes one
JAX operation at a time; every operation on a new shape compiles its own program, so scoring one pair of Adult took
about 0.9 s of CPU, almost all of it compiling, and the programs stayed in memory (docs/tables.md, "Memory").
The same elimination in NumPy takes about a millisecond and compiles nothing.

The steps are mbi's (``marginal_oracles.variable_elimination``, McKenna, Sheldon, Miklau 2019, Sec. 4): the same
greedy elimination order, each eliminated attribute summed out of its factors' sum in log space (log-sum-exp), then
the remaining factors' sum normalised to the model's total. Values agree with mbi's to rounding (float64: mbi turns
on JAX's 64-bit mode); scoring is post-processing of earlier measurements, so the privacy loss is unchanged.

>>> import numpy as np, mbi
>>> domain = mbi.Domain(("a", "b", "c"), (2, 3, 2))
>>> potentials = mbi.CliqueVector.zeros(domain, [("a", "b"), ("b", "c")])
>>> marginal = out_of_model_marginal(potentials, ("a", "c"), total=12.0)
>>> marginal.shape, round(float(marginal.sum()), 9)
((2, 2), 12.0)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mbi import junction_tree


def log_sum_exp(values: np.ndarray, axis: int) -> np.ndarray:
    """log Σ exp(values) along ``axis``, shifted by the maximum so that nothing overflows (−inf where all are −inf).

    >>> log_sum_exp(np.log(np.array([[1.0, 3.0], [2.0, 2.0]])), axis=1).round(9).tolist()  # log 4, twice
    [1.386294361, 1.386294361]
    """
    top = np.max(values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(np.log(np.sum(np.exp(values - top), axis=axis, keepdims=True)) + top, axis=axis)


def on_axes(attrs: Sequence[str], values: np.ndarray, order: Sequence[str]) -> np.ndarray:
    """``values`` (axes named ``attrs``) with its axes in ``order``, a length-1 axis for each attribute it lacks.

    >>> on_axes(("b", "a"), np.zeros((3, 2)), ("a", "c", "b")).shape
    (2, 1, 3)
    """
    attrs = tuple(attrs)
    moved = np.transpose(values, [attrs.index(a) for a in order if a in attrs])
    return moved.reshape([values.shape[attrs.index(a)] if a in attrs else 1 for a in order])


def held_marginal(attrs: Sequence[str], values: np.ndarray, clique: Sequence[str]) -> np.ndarray:
    """The marginal on ``clique`` (axes in its order) of a table whose axes are ``attrs``: a sum over the others.

    >>> held_marginal(("a", "b"), np.arange(6.0).reshape(2, 3), ("b",)).tolist()
    [3.0, 5.0, 7.0]
    """
    attrs = tuple(attrs)
    summed = values.sum(axis=tuple(i for i, a in enumerate(attrs) if a not in clique))
    kept = [a for a in attrs if a in clique]
    return np.transpose(summed, [kept.index(a) for a in clique])


def _sum(factors: list[tuple[tuple[str, ...], np.ndarray]]) -> tuple[tuple[str, ...], np.ndarray]:
    """The sum of log-space factors, over the union of their attributes (broadcast)."""
    order: list[str] = []
    for attrs, _ in factors:
        order += [a for a in attrs if a not in order]
    total = sum((on_axes(attrs, values, order) for attrs, values in factors), start=np.zeros((), float))
    return tuple(order), np.asarray(total)


def out_of_model_marginal(potentials, clique: Sequence[str], total: float) -> np.ndarray:
    """The model's marginal on ``clique`` (axes in its order), summing to ``total``, from its log-potentials
    (an mbi ``CliqueVector``), by variable elimination in the order mbi chooses."""
    clique = tuple(clique)
    sizes = dict(zip(potentials.domain.attrs, potentials.domain.shape, strict=True))
    factors = {i: (tuple(f.domain.attrs), np.asarray(f.values)) for i, f in enumerate(potentials.arrays.values())}
    domain = potentials.active_domain
    order, _ = junction_tree.greedy_order(domain, [attrs for attrs, _ in factors.values()] + [clique],
                                          elim=domain.invert(clique))
    fresh = len(factors)
    for attribute in order:
        attrs, summed = _sum([factors.pop(i) for i in list(factors) if attribute in factors[i][0]])
        axis = attrs.index(attribute)
        factors[fresh] = (attrs[:axis] + attrs[axis + 1:], log_sum_exp(summed, axis))
        fresh += 1
    attrs, rest = _sum(list(factors.values()))
    # An attribute of the clique no factor mentions is uniform: its axis is broadcast.
    logits = np.broadcast_to(on_axes(attrs, rest, clique), [sizes[a] for a in clique]).ravel()
    log_normaliser = log_sum_exp(logits, axis=0)
    return np.exp(logits - log_normaliser + np.log(total)).reshape([sizes[a] for a in clique])
