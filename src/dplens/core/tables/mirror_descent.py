"""private-pgm's mirror descent in NumPy (float64): the fit of ``mbi.estimation.mirror_descent``, compiling nothing.

mbi ``jax.jit``-compiles its whole update (the marginal oracle twice for the line search, the loss and its gradient)
for each set of cliques, and every fit of MST and AIM has a new set: on Adult a 50-clique model takes about a minute of
CPU and more than 1 GB to compile, far more than its iterations (docs/tables.md, "Memory"). This module runs the same
algorithm step for step in NumPy, with mbi's own pure-Python pieces (junction tree, message order, clique mappings):

* the total from the measurements (minimum-variance combination of the identity measurements' sums);
* potentials initialised to zero on the loss's maximal cliques, or a warm start expanded onto them as mbi does;
* marginals by message passing in log space (mbi's ``message_passing_fast``, einsum over shifted exponentials);
* the L2 loss ½ Σ ‖(μ_c − y_c)/σ_c‖² and its gradient, step size 2/(L·total) with L the gradient's Lipschitz
  constant (mbi's power iteration), and the Armijo line search: a step is kept, and the step size grows by 1.01, on
  sufficient decrease, else the step size halves (McKenna, Sheldon, Miklau 2019, Alg. 1; Armijo 1966).

The oracle runs once per iteration, not twice: an accepted step's marginals are the next iteration's, a rejected
step keeps the current ones. The model returned is mbi's ``MarkovRandomField`` with NumPy-valued factors.

>>> import numpy as np, mbi
>>> domain = mbi.Domain(["a", "b"], [2, 3])
>>> y = np.array([[30.0, 10, 10], [10, 20, 20]])
>>> model = mirror_descent(domain, [mbi.LinearMeasurement(y.ravel(), ("a", "b"), stddev=1.0)], iters=200)
>>> float(model.total), np.round(model.marginals[("a", "b")].values, 3).tolist()
(100.0, [[30.0, 10.0, 10.0], [10.0, 20.0, 20.0]])
"""

from __future__ import annotations

import collections
import functools
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from mbi import CliqueVector, Domain, Factor, LinearMeasurement, MarkovRandomField, junction_tree
from mbi.clique_utils import clique_mapping, maximal_subset, reverse_clique_mapping

from dplens.core.tables.projection import held_marginal, log_sum_exp, on_axes

Clique = tuple[str, ...]
Arrays = dict[Clique, np.ndarray]  # one array per clique, axes in the clique's attribute order

LIPSCHITZ_POWER_ITERATIONS = 50  # as mbi.marginal_loss.calculate_l2_lipschitz
SMALLEST_STDDEV = 1e-12  # mbi's floor on a measurement's σ (a zero-noise invariant would divide by zero)
_LETTERS = string.ascii_lowercase + string.ascii_uppercase


@dataclass(frozen=True)
class _Measurement:
    """One identity measurement: its clique, noisy counts (flattened, clique order) and σ (floored)."""

    clique: Clique
    values: np.ndarray
    stddev: float


def mirror_descent(domain: Domain, measurements: Sequence[LinearMeasurement], *, known_total: float | None = None,
                   potentials: CliqueVector | None = None, iters: int = 1000,
                   callback_fn: Callable[[CliqueVector], None] = lambda _: None) -> MarkovRandomField:
    """Fit a graphical model to noisy marginals by mirror descent, as ``mbi.estimation.mirror_descent`` does.

    Args:
        domain: the model's attributes and sizes.
        measurements: mbi ``LinearMeasurement``s with the identity query (``Factor.datavector``), as OpenDP's MST and
            AIM measure them; any other query is refused.
        known_total: the number of records; ``None`` estimates it from the measurements (as mbi does).
        potentials: a warm start (log-space potentials), expanded onto the measured cliques when they do not cover them.
        iters: mirror-descent iterations.
        callback_fn: called after each iteration with the marginals the iteration started from (as mbi does).

    Returns:
        ``mbi.MarkovRandomField`` with NumPy-valued potentials and marginals and the total.

    Raises:
        ValueError: no measurements, a clique outside the domain, or ``iters`` < 0.
        TypeError: a measurement whose query is not the identity.

    >>> import mbi
    >>> m = mbi.LinearMeasurement(np.array([6.0, 2.0]), ("a",), stddev=1.0)
    >>> model = mirror_descent(mbi.Domain(["a", "b"], [2, 2]), [m], iters=100)
    >>> np.round(model.marginals[("a",)].values, 6).tolist()
    [6.0, 2.0]
    """
    fitted = _identity_measurements(domain, measurements)
    if not isinstance(iters, int | np.integer) or iters < 0:
        raise ValueError(f"iters must be a non-negative integer, got {iters!r}")
    total = _minimum_variance_total(fitted) if known_total is None else known_total
    loss_cliques = maximal_subset([m.clique for m in fitted])
    if potentials is None:
        model_domain, cliques = domain, loss_cliques
        theta = {cl: np.zeros(domain.project(cl).shape) for cl in cliques}
    else:
        model_domain, cliques = potentials.domain, list(potentials.cliques)
        theta = {cl: np.asarray(potentials[cl].values, dtype=np.float64) for cl in cliques}
        if not all(potentials.supports(cl) for cl in loss_cliques):
            theta, cliques = _expand(model_domain, theta, cliques, loss_cliques), loss_cliques
    oracle = _MessagePassing(model_domain, cliques)
    loss = _L2Loss(fitted, cliques)
    lipschitz = _lipschitz(domain, loss_cliques, fitted) or 1.0
    # Initial step 2/(L·total): gradients scale with the total (mbi.estimation.mirror_descent, after Eq. 75 of
    # Zhang's notes on Bregman proximal gradient).
    alpha = 2.0 / (lipschitz * total)
    mu = oracle(theta, total)
    for _ in range(iters):
        value, gradient = loss.value_and_gradient(mu)
        stepped = {cl: theta[cl] - alpha * gradient[cl] for cl in cliques}
        mu_stepped = oracle(stepped, total)
        decrease = value - loss.value(mu_stepped)
        predicted = 0.5 * alpha * _dot(gradient, {cl: mu[cl] - mu_stepped[cl] for cl in cliques})
        previous = mu
        if decrease >= predicted:  # Armijo: keep the step, try a longer one next
            theta, mu, alpha = stepped, mu_stepped, 1.01 * alpha
        else:
            alpha = 0.5 * alpha
        callback_fn(oracle.clique_vector(previous))
    return MarkovRandomField(potentials=_clique_vector(model_domain, cliques, theta),
                             marginals=oracle.clique_vector(mu), total=total)


def _minimum_variance_total(measurements: Sequence[_Measurement]) -> float:
    """The inverse-variance weighted mean of the measurements' sums, at least 1 (mbi's
    ``minimum_variance_unbiased_total``, in NumPy)."""
    sums = np.array([m.values.sum() for m in measurements])
    variances = np.array([m.stddev**2 * m.values.size for m in measurements])
    if len(sums) == 0:
        return 1
    variance = 1.0 / np.sum(1.0 / variances)
    return max(1, variance * np.sum(sums / variances))


def _identity_measurements(domain: Domain, measurements: Sequence[LinearMeasurement]) -> list[_Measurement]:
    if isinstance(measurements, LinearMeasurement) or not isinstance(measurements, Sequence):
        raise TypeError(f"measurements must be a list of mbi.LinearMeasurement, got {type(measurements).__name__}")
    if not measurements:
        raise ValueError("mirror descent needs at least one measurement, got none")
    fitted = []
    for m in measurements:
        if not isinstance(m, LinearMeasurement):
            raise TypeError(f"measurements must be mbi.LinearMeasurement, got {type(m).__name__}")
        if m.query != Factor.datavector:
            name = getattr(m.query, "__qualname__", type(m.query).__name__)
            raise TypeError(f"only the identity query (Factor.datavector) is supported; the measurement of "
                            f"{m.clique} has query {name}: use mbi.estimation.mirror_descent for it")
        if not set(m.clique) <= set(domain.attributes):
            raise ValueError(f"measured clique {m.clique} is not in the domain {domain.attributes}")
        values = np.asarray(m.noisy_measurement, dtype=np.float64).ravel()
        if values.size != domain.size(m.clique):
            raise ValueError(f"the measurement of {m.clique} has {values.size} values, its marginal has "
                             f"{domain.size(m.clique)} cells")
        fitted.append(_Measurement(tuple(m.clique), values, max(float(m.stddev), SMALLEST_STDDEV)))
    return fitted


def _expand(domain: Domain, theta: Arrays, cliques: list[Clique], targets: list[Clique]) -> Arrays:
    """Potentials re-expressed on ``targets`` (mbi's ``CliqueVector.expand``): each clique's potential is added to
    the smallest target that holds it; a clique no target holds is dropped."""
    mapping = reverse_clique_mapping(targets, cliques, domain=domain)
    expanded = {}
    for target in targets:
        shape = domain.project(target).shape
        summed = np.zeros(shape)
        for cl in mapping[target]:
            summed = summed + on_axes(cl, theta[cl], target)
        expanded[target] = np.broadcast_to(summed, shape).copy()
    return expanded


def _dot(left: Arrays, right: Arrays) -> float:
    """Σ over cliques (sorted, as JAX flattens a dict) of Σ left·right where both are non-zero (``Factor.dot``)."""
    total = 0.0
    for cl in sorted(left):
        a, b = left[cl], right[cl]
        total = total + np.sum(a * b, where=(a != 0) & (b != 0))
    return float(total)


def _clique_vector(domain: Domain, cliques: list[Clique], arrays: Arrays) -> CliqueVector:
    return CliqueVector(domain, list(cliques), {cl: Factor(domain.project(cl), arrays[cl]) for cl in cliques})


class _L2Loss:
    """½ Σ_c ‖(μ_c − y_c)/σ_c‖² over the measurements, each marginal taken from the model clique mbi's
    ``CliqueVector.project`` takes it from (the clique itself, else the first that holds it)."""

    def __init__(self, measurements: Sequence[_Measurement], cliques: list[Clique]):
        self.cliques = cliques
        self.terms = []
        for m in measurements:
            source = m.clique if m.clique in cliques else next((c for c in cliques if set(m.clique) <= set(c)), None)
            if source is None:
                raise ValueError(f"the model's cliques {cliques} do not hold the measured clique {m.clique}")
            self.terms.append((m, source))

    def _residuals(self, mu: Arrays):
        for m, source in self.terms:
            marginal = mu[source] if source == m.clique else held_marginal(source, mu[source], m.clique)
            yield m, source, (marginal.ravel() - m.values) / m.stddev

    def value(self, mu: Arrays) -> float:
        loss = 0.0
        for _, _, diff in self._residuals(mu):
            loss = loss + 0.5 * np.dot(diff, diff)
        return float(loss)

    def value_and_gradient(self, mu: Arrays) -> tuple[float, Arrays]:
        loss = 0.0
        gradient = {cl: np.zeros(mu[cl].shape) for cl in self.cliques}
        for m, source, diff in self._residuals(mu):
            loss = loss + 0.5 * np.dot(diff, diff)
            shape = [mu[source].shape[source.index(a)] for a in m.clique]
            gradient[source] += on_axes(m.clique, (diff / m.stddev).reshape(shape), source)
        return float(loss), gradient


def _lipschitz(domain: Domain, cliques: list[Clique], measurements: Sequence[_Measurement]) -> float:
    """Largest eigenvalue of the loss's Hessian Σ_c P_cᵀP_c/σ_c² by mbi's power iteration (50 steps from the
    normalised all-ones vector; ``calculate_l2_lipschitz``)."""
    terms = _L2Loss(measurements, cliques).terms
    v = {cl: np.ones(domain.project(cl).shape) for cl in cliques}
    norm = np.sqrt(sum(np.sum(x**2) for x in v.values()))
    v = {cl: x / norm for cl, x in v.items()}
    estimate = 0.0
    for _ in range(LIPSCHITZ_POWER_ITERATIONS):
        hv = {cl: np.zeros(x.shape) for cl, x in v.items()}
        for m, source in terms:
            projected = v[source] if source == m.clique else held_marginal(source, v[source], m.clique)
            hv[source] += on_axes(m.clique, projected / m.stddev / m.stddev, source)
        estimate = float(np.sqrt(sum(np.sum(x**2) for x in hv.values())))
        v = {cl: x / (estimate + 1e-12) for cl, x in hv.items()}
    return estimate


class _MessagePassing:
    """Marginals of log-space potentials on a fixed set of cliques: mbi's ``message_passing_fast`` in NumPy.

    The junction tree, the message order and the einsum contraction paths depend only on the cliques, so they are
    worked out once per fit; each call then passes messages in log space, shifting each factor by its maximum before
    exponentiating (mbi's ``logspace_sum_product_fast``).
    """

    def __init__(self, domain: Domain, cliques: list[Clique]):
        self.cliques = cliques
        active = functools.reduce(lambda a, b: a.merge(b), [domain.project(cl) for cl in cliques], Domain([], []))
        self.domain = active
        tree = junction_tree.make_junction_tree(active, cliques)[0]
        order = junction_tree.message_passing_order(tree)
        maximal = junction_tree.maximal_cliques(tree)
        mapping = clique_mapping(maximal, cliques, domain=active)
        self.held = collections.defaultdict(list)  # maximal clique -> the model cliques whose potentials it sums
        for cl in cliques:
            self.held[mapping[cl]].append(cl)
        incoming = collections.defaultdict(list)
        for i, message in enumerate(order):
            for earlier in order[:i]:
                if message[0] == earlier[1] and message[1] != earlier[0]:
                    incoming[message].append(earlier)
        self.messages = []  # (message, attributes shared by its two cliques, the messages it combines)
        for i, j in order:
            self.messages.append(((i, j), tuple(active.project(tuple(set(i) & set(j))).attributes), incoming[(i, j)]))
        self.beliefs = [(cl, [key for key in order if key[1] == cl]) for cl in maximal]
        self.steps: dict[tuple, list[tuple[tuple[int, ...], str]]] = {}  # einsum plans, by formula and shapes

    def __call__(self, theta: Arrays, total: float) -> Arrays:
        messages: dict[tuple[Clique, Clique], tuple[Clique, np.ndarray]] = {}
        for key, shared, incoming in self.messages:
            inputs = [(cl, theta[cl]) for cl in self.held[key[0]]] + [messages[k] for k in incoming]
            for a in shared:
                if not any(a in attrs for attrs, _ in inputs):
                    inputs.append(((a,), np.zeros(self.domain.project((a,)).shape)))
            messages[key] = (shared, self._log_sum_product(inputs, shared))
        log_total = np.log(total)
        mu = {}
        for maximal, keys in self.beliefs:
            inputs = [(cl, theta[cl]) for cl in self.held[maximal]] + [messages[k] for k in keys]
            for cl in self.held[maximal]:
                belief = self._log_sum_product(inputs, cl)
                mu[cl] = np.exp(belief + log_total - log_sum_exp(belief.ravel(), axis=0))
        return mu

    def _log_sum_product(self, log_factors: list[tuple[Clique, np.ndarray]], target: Clique) -> np.ndarray:
        """log Σ_{other attributes} Π exp(F_i), on ``target`` (its order), each F_i shifted by its maximum over the
        attributes summed out (mbi's ``logspace_sum_product_fast``)."""
        maxes, stable = [], []
        for attrs, values in log_factors:
            summed_out = tuple(i for i, a in enumerate(attrs) if a not in target)
            top = values.max(axis=summed_out, keepdims=True) if summed_out else values
            kept = tuple(a for a in attrs if a in target)
            stable.append((attrs, np.exp(values - top)))
            maxes.append((kept, top.reshape([values.shape[attrs.index(a)] for a in kept])))
        attributes = sorted({a for attrs, _ in log_factors for a in attrs} | set(target))
        letters = {a: _LETTERS[k] for k, a in enumerate(attributes)}
        inputs = ",".join("".join(letters[a] for a in attrs) for attrs, _ in stable)
        formula = inputs + "->" + "".join(letters[a] for a in target)
        operands = [values for _, values in stable]
        key = (formula, tuple(v.shape for v in operands))
        steps = self.steps.get(key)
        if steps is None:
            steps = self.steps[key] = _pairwise_steps(formula, operands)
        for picked, step in steps:
            taken = [operands.pop(k) for k in picked]
            operands.append(np.einsum(step, *taken))
        result = np.log(operands[0])
        shift: np.ndarray | float = 0.0  # Σ of the maxima, in the order mbi adds them
        for kept, top in maxes:
            shift = shift + on_axes(kept, top, target)
        return result + shift

    def clique_vector(self, mu: Arrays) -> CliqueVector:
        return _clique_vector(self.domain, self.cliques, mu)


def _pairwise_steps(formula: str, operands: Sequence[np.ndarray]) -> list[tuple[tuple[int, ...], str]]:
    """``formula`` as a sequence of small einsums in the order NumPy's greedy ``einsum_path`` picks: each step takes
    the operands at the given positions (popped, highest first) and appends its result. Worked out once per shape,
    so that each call runs plain einsums, without planning them again.

    >>> x, y, z = np.ones((2, 3)), np.ones((3, 4)), np.ones(4)
    >>> steps = _pairwise_steps("ab,bc,c->a", [x, y, z])
    >>> operands = [x, y, z]
    >>> for picked, step in steps:
    ...     operands.append(np.einsum(step, *[operands.pop(k) for k in picked]))
    >>> operands[0].tolist()
    [12.0, 12.0]
    """
    inputs, output = formula.split("->")
    terms = inputs.split(",")
    steps = []
    for pair in np.einsum_path(formula, *operands, optimize="greedy")[0][1:]:
        picked = tuple(sorted(pair, reverse=True))
        taken = [terms.pop(k) for k in picked]
        if terms:
            needed = "".join(terms) + output
            result = "".join(dict.fromkeys(c for c in "".join(taken) if c in needed))
        else:
            result = output
        steps.append((picked, ",".join(taken) + "->" + result))
        terms.append(result)
    if not steps or terms[0] != output:
        steps.append(((0,), terms[0] + "->" + output))
    return steps
