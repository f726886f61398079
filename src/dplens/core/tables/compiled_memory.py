"""Bounds the JAX programs a synthesiser run keeps compiled, so MST and AIM stay within their memory.

Where the memory goes: OpenDP's MST and AIM score every candidate marginal with ``model.project``; on a clique the
model does not hold, private-pgm (mbi) runs variable elimination one JAX operation at a time, and each operation on
a new shape compiles its own program, which JAX keeps in its caches for the life of the process. On Adult's 14
attributes MST's selection compiles hundreds of such programs (every pair has its own shapes), and each fit
compiles its mirror descent for its own set of cliques, never reused by the next fit (docs/tables.md, "Memory").

What this does: the model a fit returns (:func:`bounded`) clears JAX's in-memory caches (``jax.clear_caches``)
every :data:`PROJECTIONS_PER_CLEAR` out-of-model projections, and :func:`clear_compiled` clears them after each
fit. Clearing drops compiled programs, never values: a program compiled again computes the same thing, so the
scores, the fits and the records are unchanged; the cost is compiling again what a later projection shares with an
earlier one. JAX's caches are per process, so the count is too.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import chex
import jax
from mbi import Factor, MarkovRandomField

PROJECTIONS_PER_CLEAR = 10  # out-of-model projections between two clears (0: never clear within a selection)
_PROJECTIONS = itertools.count(1)  # process-wide, like the caches it bounds


def clear_compiled() -> None:
    """Drop every program JAX compiled in this process (not the persistent cache on disk)."""
    jax.clear_caches()


@chex.dataclass(frozen=True, kw_only=False)
class CacheBoundedModel(MarkovRandomField):
    """private-pgm's ``MarkovRandomField`` whose out-of-model projections clear JAX's caches every
    :data:`PROJECTIONS_PER_CLEAR` calls; everything else (fields, marginals, sampling) is the model's own."""

    def project(self, attrs: str | Sequence[str]) -> Factor:
        # chex rebuilds the class, so the zero-argument super() does not find it: name the base.
        marginal = MarkovRandomField.project(self, attrs)
        clique = (attrs,) if isinstance(attrs, str) else tuple(attrs)
        if PROJECTIONS_PER_CLEAR > 0 and not self.marginals.supports(clique) \
                and next(_PROJECTIONS) % PROJECTIONS_PER_CLEAR == 0:
            marginal.values.block_until_ready()
            clear_compiled()
        return marginal


def bounded(model: MarkovRandomField) -> CacheBoundedModel:
    """The same model (the same arrays), as a :class:`CacheBoundedModel`."""
    return CacheBoundedModel(potentials=model.potentials, marginals=model.marginals, total=model.total)
