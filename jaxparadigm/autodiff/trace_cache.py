"""A bounded cache of traced programs, so eager ``grad(f)(x)`` calls do not re-trace ``f`` (C3.1).

Like ``jax.jit``'s cache, an entry is keyed on what determines the traced program:

    (f, input tree structure, (shape, dtype, weak_type) of every leaf, static kwargs, has_aux,
     jax's trace context -- x64, default precision, dtype promotion, ...)

so a second call with same-typed arguments reuses the ``Graph``. The same caveat as ``jax.jit``
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
from typing import NamedTuple

import jax
from jax._src import config as jax_config

__all__ = [
    "TraceCache",
    "TraceCacheInfo",
    "clear_trace_cache",
    "closes_over_tracers",
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
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 1:
            raise ValueError(f"TraceCache: maxsize={maxsize!r}; expected an int >= 1")
        self.maxsize = maxsize
        self._entries: OrderedDict = OrderedDict()
        self.hits = self.misses = 0

    def get(self, key):
        """The entry for ``key`` (marked most recently used), or ``None``; counts hits/misses."""
        if key is None or key not in self._entries:
            self.misses += 1
            return None
        self.hits += 1
        self._entries.move_to_end(key)
        return self._entries[key]

    def put(self, key, value) -> None:
        if key is None:
            return
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.maxsize:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()
        self.hits = self.misses = 0

    def drop_function(self, ref) -> None:
        """Remove the entries keyed on the (now dead) weak reference ``ref``."""
        for key in [k for k in list(self._entries) if k[0] is ref]:
            self._entries.pop(key, None)

    def info(self) -> TraceCacheInfo:
        return TraceCacheInfo(self.hits, self.misses, len(self._entries), self.maxsize)


TRACES = TraceCache()


def trace_key(f, flat_args, in_tree, kwargs: dict | None, has_aux: bool):
    """The cache key of a trace, or ``None`` when some part is unhashable (then never cached)."""
    try:
        f_key = weakref.ref(f, TRACES.drop_function)
    except TypeError:  # not weakly referenceable: keep it (bounded by maxsize)
        f_key = f
    try:
        avals = tuple(jax.typeof(x) for x in flat_args)
        static = tuple(sorted((kwargs or {}).items()))
        key = (f_key, in_tree, avals, static, bool(has_aux), jax_config.trace_context())
        hash(key)
    except TypeError:
        return None
    return key


def closes_over_tracers(closed_jaxpr) -> bool:
    """Whether a traced program's constants include tracers of an enclosing transformation."""
    return any(isinstance(c, jax.core.Tracer) for c in closed_jaxpr.consts)


def clear_trace_cache() -> None:
    """Drop every cached trace (e.g. after changing a global that a cached function reads)."""
    TRACES.clear()


def trace_cache_info() -> TraceCacheInfo:
    """Hits, misses, size and maxsize of the trace cache."""
    return TRACES.info()
