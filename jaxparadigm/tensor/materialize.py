"""Compile a static ``View`` into dense XLA ops over its flat storage (claim C2.1).

A view whose strides nest (each stride a multiple of the next smaller one, no overlap) is cut out of
its storage by ``lax.slice`` -> ``reshape`` -> strided ``lax.slice`` -> ``transpose`` ->
``broadcast_in_dim``: the same HLO as ``storage.reshape(...)`` followed by the native jnp op. Other
views (overlapping windows, non-divisible strides) become one gather of static indices. Plans are
computed in Python from the static metadata and cached.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Hashable
from typing import Protocol

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


class StridedLayout(Hashable, Protocol):
    """What this module reads of a ``jaxparadigm.tensor.View`` (declared here, so that the view
    module imports this one and not the other way round): static, hashable metadata."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def strides(self) -> tuple[int, ...]: ...

    @property
    def offset(self) -> int: ...

    @property
    def ndim(self) -> int: ...

    def numel(self) -> int: ...

    def storage_indices(self) -> np.ndarray: ...


def materialize_view(view: StridedLayout, storage: jax.Array) -> jax.Array:
    """``storage[view.storage_indices()]`` through dense ops when the strides nest (C2.1)."""
    if view.numel() == 0:
        return jnp.zeros(view.shape, storage.dtype)
    plan = _plan(view, storage.shape[0])
    if plan is None:
        return storage[view.storage_indices()]
    return _run_plan(plan, storage, view.shape)


materialize_view_jit = jax.jit(materialize_view, static_argnums=0)


@dataclasses.dataclass(frozen=True)
class _Plan:
    """How to cut a view out of its storage with dense ops (all fields static)."""

    base: int  # first storage index of the window
    length: int  # window length taken from the storage
    pad: int  # zeros appended when the window runs past the storage end
    grid: tuple[int, ...]  # window reshaped row-major to this grid
    starts: tuple[int, ...]  # strided slice of the grid
    limits: tuple[int, ...]
    steps: tuple[int, ...]
    perm: tuple[int, ...]  # grid axes -> active dims in ascending order
    active: tuple[int, ...]  # output dims that vary (size > 1, stride > 0)


def _compute_plan(view: StridedLayout, storage_size: int) -> _Plan | None:
    """Express ``view`` as slice -> reshape -> strided slice -> transpose -> broadcast, or None."""
    active = tuple(d for d in range(view.ndim) if view.shape[d] > 1 and view.strides[d] > 0)
    if not active:
        return _Plan(view.offset, 1, 0, (1,), (0,), (1,), (1,), (0,), ())
    order = sorted(active, key=lambda d: -view.strides[d])
    sizes = [view.shape[d] for d in order]
    strides = [view.strides[d] for d in order]
    k = len(order)
    # Grid row strides: S[k-1] = 1, S[j] = strides[j] for j < k-1; grid sizes M[j] = S[j-1]/S[j].
    row = [1] * k
    for j in range(k - 1):
        row[j] = strides[j]
    grid = [0] * k
    steps = [1] * k
    steps[k - 1] = strides[k - 1]
    extent = [(n - 1) * st + 1 for n, st in zip(sizes, steps, strict=True)]
    for j in range(1, k):
        if row[j - 1] % row[j]:
            return None
        grid[j] = row[j - 1] // row[j]
        if extent[j] > grid[j]:
            return None  # overlapping: rows would share storage elements
    grid[0] = sizes[0] if k > 1 else extent[0]
    # Prefer a window aligned so the offset becomes slice starts (native slicing), else start at
    # the offset itself.
    starts = [0] * k
    base = view.offset
    if k > 1:
        rem = view.offset % row[0]
        aligned = [0] * k
        for j in range(1, k):
            aligned[j], rem = divmod(rem, row[j])
        if all(a + e <= g for a, e, g in zip(aligned[1:], extent[1:], grid[1:], strict=True)):
            starts = aligned
            base = view.offset - sum(a * r for a, r in zip(aligned, row, strict=True))
    length = grid[0] * row[0]
    avail = storage_size - base
    take = min(length, avail)
    limits = tuple(s + e for s, e in zip(starts, extent, strict=True))
    perm = tuple(sorted(range(k), key=lambda j: order[j]))
    return _Plan(
        base, take, length - take, tuple(grid), tuple(starts), limits, tuple(steps), perm, active
    )


# Cached by (view, storage size); wrapped here rather than decorated so that the plan arithmetic
# stays an ordinary function, which mutation testing (tools/mutation_score.py) can mutate.
_plan = functools.lru_cache(maxsize=4096)(_compute_plan)


def _run_plan(plan: _Plan, storage: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    x = storage
    if plan.base != 0 or plan.length != storage.shape[0]:
        x = lax.slice(x, (plan.base,), (plan.base + plan.length,))
    if plan.pad:
        x = lax.pad(x, jnp.zeros((), x.dtype), [(0, plan.pad, 0)])
    if x.shape != plan.grid:
        x = x.reshape(plan.grid)
    if (
        plan.starts != (0,) * len(plan.grid)
        or plan.limits != plan.grid
        or any(s != 1 for s in plan.steps)
    ):
        x = lax.slice(x, plan.starts, plan.limits, plan.steps)
    if plan.perm != tuple(range(len(plan.perm))):
        x = lax.transpose(x, plan.perm)
    if not plan.active:
        x = x.reshape(())
    if x.shape != shape:
        x = lax.broadcast_in_dim(x, shape, plan.active)
    return x
