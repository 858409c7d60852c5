"""``tf.tensor_scatter_nd_update`` in JAX: an update that returns a new array (claim C2.5).

``indices`` has shape ``[..., k]``; each row addresses a slice ``x[i_0, ..., i_{k-1}]`` of shape
``x.shape[k:]``, and ``updates`` has shape ``indices.shape[:-1] + x.shape[k:]``. When two rows
address the same slice the later one wins (what TF does on CPU); XLA's scatter leaves duplicate
order unspecified, so earlier duplicates are dropped explicitly before the scatter.
"""

from __future__ import annotations

import math
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np


def _check(x: Any, indices: Any, updates: Any) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Static shape/dtype checks, plus index range checks when ``indices`` are concrete."""
    for name, value in (("x", x), ("indices", indices), ("updates", updates)):
        if not hasattr(value, "shape") and not isinstance(value, (list, tuple, int, float)):
            raise TypeError(f"{name} must be array-like, got {type(value).__name__}")
    x = jnp.asarray(x)
    concrete = not isinstance(indices, jax.core.Tracer)
    host_indices = np.asarray(indices) if concrete else None
    indices = jnp.asarray(indices)
    updates = jnp.asarray(updates)
    if not jnp.issubdtype(indices.dtype, jnp.integer):
        raise TypeError(f"indices must have an integer dtype, got {indices.dtype}")
    if indices.ndim < 1:
        raise ValueError(f"indices must have rank >= 1 (shape [..., k]), got shape {indices.shape}")
    k = indices.shape[-1]
    if k > x.ndim:
        raise ValueError(
            f"indices.shape[-1] = {k} exceeds the rank {x.ndim} of x (shape {x.shape})"
        )
    expected = indices.shape[:-1] + x.shape[k:]
    if updates.shape != expected:
        raise ValueError(
            f"updates shape {updates.shape} must be indices.shape[:-1] + x.shape[k:] = "
            f"{expected} (indices {indices.shape}, x {x.shape}, k = {k})"
        )
    if updates.dtype != x.dtype:
        raise TypeError(f"updates dtype {updates.dtype} must equal x dtype {x.dtype}")
    if host_indices is not None and host_indices.size:
        bounds = np.asarray(x.shape[:k])
        bad = np.argwhere((host_indices < 0) | (host_indices >= bounds))
        if bad.size:
            row = tuple(int(i) for i in bad[0][:-1])
            raise ValueError(
                f"indices{list(row)} = {host_indices[row].tolist()} is out of range for x of "
                f"shape {x.shape}: component {int(bad[0][-1])} must lie in "
                f"[0, {x.shape[int(bad[0][-1])] - 1}]"
            )
    return x, indices, updates


def _scatter(x: jax.Array, indices: jax.Array, updates: jax.Array) -> jax.Array:
    k = indices.shape[-1]
    lead = x.shape[:k]
    rows = math.prod(lead)
    idx = indices.reshape(-1, k).astype(jnp.int32)
    upd = updates.reshape((-1,) + x.shape[k:])
    flat = jnp.zeros(idx.shape[0], jnp.int32)
    valid = jnp.ones(idx.shape[0], bool)
    for d in range(k):  # row-major flat position of each addressed slice
        flat = flat * lead[d] + idx[:, d]
        valid &= (idx[:, d] >= 0) & (idx[:, d] < lead[d])
    n = flat.shape[0]
    if n > 1:
        # Keep only the last occurrence of each position: stable sort, compare with the next.
        order = jnp.argsort(flat, stable=True)
        ranked = flat[order]
        last_sorted = jnp.concatenate([ranked[1:] != ranked[:-1], jnp.ones((1,), bool)])
        valid &= jnp.zeros(n, bool).at[order].set(last_sorted)
    target = jnp.where(valid, flat, rows)  # rows is out of bounds: dropped
    out = x.reshape((rows,) + x.shape[k:]).at[target].set(upd, mode="drop")
    return out.reshape(x.shape)


_scatter_jit = jax.jit(_scatter)
_scatter_donated = jax.jit(_scatter, donate_argnums=0)


def scatter_nd_update(x: Any, indices: Any, updates: Any) -> jax.Array:
    """``out = x`` with ``out[indices[j]] = updates[j]`` for each row j; later duplicates win (C2.5).

    ``tf.tensor_scatter_nd_update`` semantics: returns a new array and leaves ``x`` untouched.
    Out-of-range concrete indices raise ``ValueError``; under tracing they cannot be checked and
    their updates are dropped.
    """
    x, indices, updates = _check(x, indices, updates)
    out = _scatter_jit(x, indices, updates)
    chex.assert_equal_shape([out, x])
    return out


def scatter_nd_update_inplace(x: jax.Array, indices: Any, updates: Any) -> jax.Array:
    """``scatter_nd_update`` under ``jax.jit(donate_argnums=0)``: ``x``'s buffer is reused (C2.5).

    On backends that implement donation (CPU, GPU and TPU in current jaxlib) the output aliases
    ``x``'s device buffer and ``x`` is deleted afterwards (using it raises); where donation is not
    implemented JAX warns and copies. This is the functional form of an in-place update: the caller
    gives up ``x`` explicitly.
    """
    x, indices, updates = _check(x, indices, updates)
    return _scatter_donated(x, indices, updates)
