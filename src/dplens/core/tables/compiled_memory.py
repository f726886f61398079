"""Bounds the JAX programs a synthesiser run keeps compiled, so MST and AIM stay within their memory.

Where the memory went: OpenDP's MST and AIM score every candidate marginal with ``model.project``; on a clique the
model does not hold, private-pgm (mbi) runs variable elimination one JAX operation at a time, and each operation on
a new shape compiles its own program, which JAX keeps in its caches for the life of the process. On Adult's 14
attributes MST's selection compiled hundreds of such programs (every pair has its own shapes), and mbi's fit
compiled its mirror descent for each set of cliques, never reused by the next fit (docs/tables.md, "Memory").

What this does: fits run in NumPy (:mod:`dplens.core.tables.mirror_descent`), the model a fit returns
(:func:`bounded`) answers every projection in NumPy (:mod:`dplens.core.tables.projection`), and
:func:`clear_compiled` drops whatever JAX did compile (mbi's own steps around a fit; the sampler's message passing
compiles once, later) after each fit. Clearing drops compiled programs, never values.

Freed is not returned: after ``jax.clear_caches()`` glibc keeps the freed pages for reuse, so the process's RSS stays
at its high-water mark (91 pair projections on Adult: +1,364 MB, still +1,356 MB after the clear, −132 MB after
``malloc_trim(0)``; the Python heap, by ``tracemalloc``, never above 23 MB). Each clear therefore also hands the free
pages back (:func:`release_freed`; glibc only, nothing elsewhere).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable, Sequence

import chex  # type: ignore[import-untyped]  # no stubs installed
import jax
import numpy as np
from mbi import Factor, MarkovRandomField

from dplens.core.tables.projection import held_marginal, out_of_model_marginal


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None


def release_freed() -> bool:
    """Return the heap's free pages to the OS (glibc's ``malloc_trim(0)``); False where there is no such call."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def clear_compiled() -> None:
    """Drop every program JAX compiled in this process (not the persistent cache on disk) and return the memory
    they held to the OS."""
    jax.clear_caches()
    release_freed()


@chex.dataclass(frozen=True, kw_only=False)
class NumpyProjectedModel(MarkovRandomField):
    """private-pgm's ``MarkovRandomField`` whose projections are computed in NumPy (no JAX program compiled):
    a marginal the model holds is summed from its fitted marginal, any other one by variable elimination
    (:func:`dplens.core.tables.projection.out_of_model_marginal`). Fields, fits and sampling are the model's own."""

    def project(self, attrs: str | Sequence[str]) -> Factor:
        clique = (attrs,) if isinstance(attrs, str) else tuple(attrs)
        domain = self.domain.project(clique)
        parent = self.marginals.parent(clique)
        if parent is None:
            values = out_of_model_marginal(self.potentials, clique, float(self.total))
        else:
            held = self.marginals[parent]
            values = held_marginal(held.domain.attrs, np.asarray(held.values), clique)
        # NumPy values (OpenDP's scoring does NumPy arithmetic on them): even jnp.asarray compiles a program per shape.
        return Factor(domain, values)


def bounded(model: MarkovRandomField) -> NumpyProjectedModel:
    """The same model (the same arrays), as a :class:`NumpyProjectedModel`."""
    return NumpyProjectedModel(potentials=model.potentials, marginals=model.marginals, total=model.total)
