"""``tf.tensor_scatter_nd_update`` in JAX: an update that returns a new array (claim C2.5).

``indices`` has shape ``[..., k]``; each row addresses a slice ``x[i_0, ..., i_{k-1}]`` of shape
``x.shape[k:]``, and ``updates`` has shape ``indices.shape[:-1] + x.shape[k:]``. When two rows
address the same slice the later one wins (what TF does on CPU); XLA's scatter leaves duplicate
order unspecified, so earlier duplicates are dropped explicitly before the scatter.

Index depth ``k = 0`` follows TF's documented shape rule (``indices.shape[-1] <= rank``): an empty
index row addresses ``x[()]``, the whole tensor, so the result is the last row's update (``x``
itself when there is no row). TF's CPU kernel does not run this case (``PARAMS_CASE(0)`` is
commented out in ``scatter_nd_op.cc``, which answers "Only indices.shape[-1] values between 1
and ..."); we implement the documented meaning rather than refuse it.
"""

from __future__ import annotations

import math
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np

_INT32_MAX = int(np.iinfo(np.int32).max)


def _host_indices(indices: Any) -> np.ndarray | None:
    """``indices`` on the host when known at trace time, else ``None`` (genuinely traced).

    Known: NumPy arrays, lists, concrete ``jax.Array``s, and constants created inside a jitted
    function (``jnp.array([[5]])`` under ``jax.jit`` is a tracer whose value the trace holds).
    """
    if not isinstance(indices, jax.core.Tracer):
        return np.asarray(indices)
    get_const = getattr(indices, "get_const", None)  # jaxpr tracers of trace-time constants
    if get_const is None:
        return None
    try:
        value = get_const()
    except Exception:  # noqa: BLE001 - an internal API: any failure means "not known"
        return None
    return None if value is None else np.asarray(value)


def _flat_dtype(shape: tuple[int, ...], k: int) -> Any:
    """Integer dtype for row-major slice positions in ``x.shape[:k]``; int64 only under x64.

    The position ``prod(x.shape[:k])`` itself marks dropped rows, so it must fit as well.
    """
    rows = math.prod(shape[:k])
    if jax.config.read("jax_enable_x64"):
        return jnp.int64
    if rows > _INT32_MAX:
        raise ValueError(
            f"x of shape {shape} has prod(x.shape[:{k}]) = {rows} addressable slices, more than "
            f"int32 positions can index ({_INT32_MAX}); enable jax_enable_x64 to scatter into it"
        )
    return jnp.int32


def _check(x: Any, indices: Any, updates: Any) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Static shape/dtype checks, plus index range checks when ``indices`` are known."""
    for name, value in (("x", x), ("indices", indices), ("updates", updates)):
        if not hasattr(value, "shape") and not isinstance(value, (list, tuple, int, float)):
            raise TypeError(f"{name} must be array-like, got {type(value).__name__}")
    x = jnp.asarray(x)
    host_indices = _host_indices(indices)  # before jnp.asarray, which may truncate int64
    indices = jnp.asarray(indices)
    updates = jnp.asarray(updates)
    index_dtype = indices.dtype if host_indices is None else host_indices.dtype
    if not jnp.issubdtype(index_dtype, jnp.integer):
        raise TypeError(f"indices must have an integer dtype, got {index_dtype}")
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
    _flat_dtype(x.shape, k)
    if host_indices is not None and host_indices.size:
        bounds = np.asarray(x.shape[:k])
        bad = np.argwhere((host_indices < 0) | (host_indices >= bounds))
        if bad.size:
            row = tuple(int(i) for i in bad[0][:-1])
            d = int(bad[0][-1])
            where = f"lie in [0, {x.shape[d] - 1}]" if x.shape[d] else "not exist (axis size 0)"
            raise ValueError(
                f"indices{list(row)} = {host_indices[row].tolist()} is out of range for x of "
                f"shape {x.shape}: component {d} must {where}"
            )
    return x, indices, updates


def _scatter(x: jax.Array, indices: jax.Array, updates: jax.Array) -> jax.Array:
    k = indices.shape[-1]
    lead = x.shape[:k]
    rows = math.prod(lead)
    n = math.prod(indices.shape[:-1])  # explicit: reshape(-1, ...) is ambiguous for zero sizes
    dtype = _flat_dtype(x.shape, k)
    # Range check in the indices' own dtype: a cast first could wrap 2**32 + 1 (int64) onto 1.
    idx = indices.reshape(n, k)
    top = int(jnp.iinfo(idx.dtype).max)
    valid = jnp.ones(idx.shape[0], bool)
    for d in range(k):
        valid &= idx[:, d] >= 0
        if lead[d] <= top:  # otherwise every value of the dtype is below lead[d]
            valid &= idx[:, d] < lead[d]
    idx = jnp.where(valid[:, None], idx, 0).astype(dtype)  # in range, so the cast is exact
    upd = updates.reshape((n,) + x.shape[k:])
    flat = jnp.zeros(n, dtype)
    for d in range(k):  # row-major flat position of each addressed slice, < rows
        flat = flat * lead[d] + idx[:, d]
    # Out-of-range rows get position rows, so they cannot collide with (and mask) a valid row.
    flat = jnp.where(valid, flat, rows)
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
    """``out = x`` with ``out[indices[j]] = updates[j]`` per row j; later duplicates win (C2.5).

    ``tf.tensor_scatter_nd_update`` semantics: returns a new array and leaves ``x`` untouched.

    Index range, component ``d`` in ``[0, x.shape[d])`` (no negative wrap-around):

    * Indices known at trace time -- NumPy arrays, lists, concrete ``jax.Array``s, and constants
      built inside a jitted function -- are checked in Python; an out-of-range row raises
      ``ValueError`` naming it, under ``jax.jit`` as well as outside.
    * Genuinely traced indices (jit arguments or values computed from them) cannot be checked:
      each out-of-range row is dropped (``x`` keeps that slice), as XLA's scatter does with
      ``mode="drop"``; it never masks an in-range row that addresses the same slice.

    Positions are computed in int32, or int64 when ``jax_enable_x64`` is on; without x64 an ``x``
    with ``prod(x.shape[:k]) > 2**31 - 1`` raises ``ValueError`` rather than wrapping.
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
    gives up ``x`` explicitly. Index checking is exactly ``scatter_nd_update``'s (known indices
    out of range raise ``ValueError`` before ``x`` is donated; traced ones are dropped), as is the
    int32/int64 position rule.
    """
    x, indices, updates = _check(x, indices, updates)
    return _scatter_donated(x, indices, updates)
