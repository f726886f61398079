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

Freed is not returned: after ``jax.clear_caches()`` glibc keeps the freed pages for reuse, so the process's RSS stays
at its high-water mark (91 pair projections on Adult: +1,364 MB, still +1,356 MB after the clear, −132 MB after
``malloc_trim(0)``; the Python heap, by ``tracemalloc``, never above 23 MB). Each clear therefore also hands the free
pages back (:func:`release_freed`; glibc only, nothing elsewhere).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import itertools
from collections.abc import Callable, Sequence

import chex  # type: ignore[import-untyped]  # no stubs installed
import jax
from mbi import Factor, MarkovRandomField

PROJECTIONS_PER_CLEAR = 10  # out-of-model projections between two clears (0: never clear within a selection)
_PROJECTIONS = itertools.count(1)  # process-wide, like the caches it bounds


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
