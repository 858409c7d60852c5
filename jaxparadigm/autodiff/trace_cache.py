"""A bounded cache of traced programs, so eager ``grad(f)(x)`` calls do not re-trace ``f`` (C3.1).

Like ``jax.jit``'s cache, an entry is keyed on what determines the traced program:

    (f, input tree structure, (shape, dtype, weak_type) of every leaf, static kwargs, has_aux,
     jax's trace context -- x64, default precision, dtype promotion, ...)

so a second call with same-typed arguments reuses the ``Graph``. ``grad(f, argnums)`` traces a
per-call closure of ``f`` over its non-differentiated arguments (they stay concrete, as in
``jax.grad``); its entry is keyed on ``f`` itself plus ``static_key`` of the closed-over values --
the argnums split and each value's type and ``repr`` -- and a call that closes over an array (whose
value would be baked into the program) is not cached. The same caveat as ``jax.jit``
applies: ``f`` is assumed pure -- a change to a global it reads is not seen until the entry is
evicted (``clear_trace_cache()``). ``f`` is held by weak reference, as jax's own caches do: when a
function dies (a per-step ``lambda p: loss(p, batch)``), its entries -- and the arrays its program
closed over -- are dropped with it. Programs that close over tracers of an enclosing
transformation are never cached (their constants belong to that trace). Least-recently used
entries are evicted beyond ``maxsize``.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import numpy as np
from jax._src import config as jax_config

from jaxparadigm.common.numbers import check_int

if TYPE_CHECKING:
    from jax.extend.core import ClosedJaxpr

__all__ = [
    "TraceCache",
    "TraceCacheInfo",
    "clear_trace_cache",
    "closes_over_tracers",
    "static_key",
    "trace_cache_info",
    "trace_key",
]


class TraceCacheInfo(NamedTuple):
    """Hits, misses and occupancy of the trace cache."""

    hits: int
    misses: int
    size: int
    maxsize: int


class TraceCache:
    """An LRU map key -> traced program with at most ``maxsize`` entries."""

    def __init__(self, maxsize: int = 256):
        self.maxsize = check_int("TraceCache: maxsize", maxsize, 1, error=ValueError)
        self._entries: OrderedDict = OrderedDict()
        self.hits = self.misses = 0

    def get(self, key: Hashable | None) -> Any:
        """The entry for ``key`` (marked most recently used), or ``None``; counts hits/misses."""
        if key is None or key not in self._entries:
            self.misses += 1
            return None
        self.hits += 1
        self._entries.move_to_end(key)
        return self._entries[key]

    def put(self, key: Hashable | None, value: Any) -> None:
        if key is None:
            return
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.maxsize:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()
        self.hits = self.misses = 0

    def drop_function(self, ref: weakref.ref[Any]) -> None:
        """Remove the entries keyed on the (now dead) weak reference ``ref``."""
        for key in [k for k in list(self._entries) if k[0] is ref]:
            self._entries.pop(key, None)

    def info(self) -> TraceCacheInfo:
        return TraceCacheInfo(self.hits, self.misses, len(self._entries), self.maxsize)


TRACES = TraceCache()


def trace_key(
    f: Callable,
    flat_args: Sequence[Any],
    in_tree: jax.tree_util.PyTreeDef,
    kwargs: dict | None,
    has_aux: bool,
    static: Hashable | None = (),
) -> tuple[Any, ...] | None:
    """The cache key of a trace, or ``None`` when some part is unhashable (then never cached).

    ``static`` is a hashable description of values ``f`` closes over (``static_key``); ``None``
    means they cannot be described and the trace is never cached.
    """
    if static is None:
        return None
    try:
        f_key: object = weakref.ref(f, TRACES.drop_function)
    except TypeError:  # not weakly referenceable: keep it (bounded by maxsize)
        f_key = f
    try:
        avals = tuple(jax.typeof(x) for x in flat_args)
        kw = tuple(sorted((kwargs or {}).items()))
        key = (f_key, in_tree, avals, kw, static, bool(has_aux), jax_config.trace_context())
        hash(key)
    except TypeError:
        return None
    return key


_SCALARS = (bool, int, float, complex, str, bytes, np.generic)


def static_key(values: Any) -> tuple[jax.tree_util.PyTreeDef, tuple[tuple[type, str], ...]] | None:
    """A hashable key for values a traced closure holds *by value*, or ``None`` (do not cache).

    ``(tree structure, (type, repr) of every leaf)``: the repr tells ``-0.0`` from ``0.0`` and
    matches every NaN, so equal keys mean the same program. A leaf that is not an immutable scalar
    (an array, whose data would be baked into the program; a mutable object) gives ``None``.
    """
    leaves, treedef = jax.tree_util.tree_flatten(values)
    if not all(isinstance(x, _SCALARS) for x in leaves):
        return None
    return treedef, tuple((type(x), repr(x)) for x in leaves)


def closes_over_tracers(closed_jaxpr: ClosedJaxpr) -> bool:
    """Whether a traced program's constants include tracers of an enclosing transformation."""
    return any(isinstance(c, jax.core.Tracer) for c in closed_jaxpr.consts)


def clear_trace_cache() -> None:
    """Drop every cached trace (e.g. after changing a global that a cached function reads)."""
    TRACES.clear()


def trace_cache_info() -> TraceCacheInfo:
    """Hits, misses, size and maxsize of the trace cache."""
    return TRACES.info()
