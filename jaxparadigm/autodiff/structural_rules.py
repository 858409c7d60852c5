"""VJP rules for contractions, reductions and shape/indexing primitives (claim C3.2).

Same convention as ``elementwise_rules``: ``rule(ct, *primals, **params)`` returns one cotangent
per primal (``None`` = zero), written with differentiable ``lax``/``jnp`` ops (claim C3.3).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxparadigm.autodiff.registry import register_vjp

__all__: list[str] = []


def _cast_like(ct, like):
    dtype = jnp.result_type(like)
    return ct if ct.dtype == dtype else ct.astype(dtype)


def _consecutive_ranges(*lengths):
    """[0..a), [a..a+b), ... for the given lengths."""
    out, start = [], 0
    for n in lengths:
        out.append(list(range(start, start + n)))
        start += n
    return out


def _dot_transpose_lhs(ct, x_ndim, y, dimension_numbers, swap_ans=False):
    """Cotangent of the lhs of ``dot_general``: contract ct with y over y's free dims.

    The output of dot_general is laid out (batch, lhs free, rhs free). Contracting ``ct`` with
    ``y`` over the rhs-free dims (batched over the batch dims) gives (batch, lhs free, y contract)
    which a transpose puts back in lhs order.
    """
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    y_ndim = jnp.ndim(y)
    x_kept = [d for d in range(x_ndim) if d not in x_contract and d not in x_batch]
    y_kept = [d for d in range(y_ndim) if d not in y_contract and d not in y_batch]
    if swap_ans:
        ans_batch, ans_y, _ = _consecutive_ranges(len(x_batch), len(y_kept), len(x_kept))
    else:
        ans_batch, _, ans_y = _consecutive_ranges(len(x_batch), len(x_kept), len(y_kept))
    dims = ((tuple(ans_y), tuple(y_kept)), (tuple(ans_batch), tuple(y_batch)))
    x_contract_sorted_by_y = [int(d) for d in np.take(x_contract, np.argsort(y_contract))]
    out_axes = np.argsort(list(x_batch) + x_kept + x_contract_sorted_by_y)
    res = lax.dot_general(ct, y, dims)
    return lax.transpose(res, tuple(int(a) for a in out_axes))


@register_vjp("dot_general")
def _dot_general_vjp(ct, x, y, *, dimension_numbers, **params):
    """C = dot(A, B): dA = dot(dC, B) over B's free dims, dB likewise (then transposed back)."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    swapped = ((y_contract, x_contract), (y_batch, x_batch))
    dx = _dot_transpose_lhs(ct, jnp.ndim(x), y, dimension_numbers)
    dy = _dot_transpose_lhs(ct, jnp.ndim(y), x, swapped, swap_ans=True)
    return _cast_like(dx, x), _cast_like(dy, y)


@register_vjp("reduce_sum")
def _reduce_sum_vjp(ct, x, *, axes, **params):
    """y = sum_axes x: dx = broadcast of dy back over ``axes``."""
    shape = jnp.shape(x)
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    return (lax.broadcast_in_dim(ct, shape, kept),)


def _reduce_chooser_vjp(ct, x, axes, reducer):
    """max/min reduction: ct is shared equally among the positions that attain the extremum."""
    shape = jnp.shape(x)
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    ans = reducer(x, axis=tuple(axes))
    hit = (x == lax.broadcast_in_dim(ans, shape, kept)).astype(ct.dtype)
    counts = jnp.sum(hit, axis=tuple(axes))
    return (lax.broadcast_in_dim(ct / counts, shape, kept) * hit,)


@register_vjp("reduce_max")
def _reduce_max_vjp(ct, x, *, axes, **params):
    return _reduce_chooser_vjp(ct, x, axes, jnp.max)


@register_vjp("reduce_min")
def _reduce_min_vjp(ct, x, *, axes, **params):
    return _reduce_chooser_vjp(ct, x, axes, jnp.min)


@register_vjp("broadcast_in_dim")
def _broadcast_in_dim_vjp(ct, x, *dyn_shape, shape, broadcast_dimensions, **params):
    """Sum ct over the new dims and over dims that were size 1 in x, then reshape to x."""
    x_shape = jnp.shape(x)
    bdims = tuple(broadcast_dimensions)
    unit = tuple(bdims[i] for i, d in enumerate(x_shape) if d == 1 and shape[bdims[i]] != 1)
    new = tuple(d for d in range(len(shape)) if d not in bdims)
    axes = tuple(sorted(new + unit))
    out = jnp.sum(ct, axis=axes) if axes else ct
    return (_cast_like(jnp.reshape(out, x_shape), x), *([None] * len(dyn_shape)))


@register_vjp("reshape")
def _reshape_vjp(ct, x, *dyn_shape, dimensions=None, **params):
    """y = reshape(transpose(x, dimensions), new_sizes): reshape ct to the transposed shape of x,
    then apply the inverse permutation (``dimensions=None`` is the identity)."""
    shape = jnp.shape(x)
    if dimensions is None:
        return (jnp.reshape(ct, shape), *([None] * len(dyn_shape)))
    perm = tuple(int(d) for d in dimensions)
    ct = jnp.reshape(ct, tuple(shape[d] for d in perm))
    return (lax.transpose(ct, tuple(int(a) for a in np.argsort(perm))), *([None] * len(dyn_shape)))


@register_vjp("squeeze", "expand_dims")
def _squeeze_vjp(ct, x, **params):
    """Squeezing moves no data: reshape ct back to x's shape."""
    return (jnp.reshape(ct, jnp.shape(x)),)


@register_vjp("transpose")
def _transpose_vjp(ct, x, *, permutation, **params):
    return (lax.transpose(ct, tuple(int(a) for a in np.argsort(permutation))),)


@register_vjp("concatenate")
def _concatenate_vjp(ct, *xs, dimension, **params):
    """Slice ct back into the pieces that were concatenated along ``dimension``."""
    out, start = [], 0
    for x in xs:
        size = jnp.shape(x)[dimension]
        out.append(lax.slice_in_dim(ct, start, start + size, axis=dimension))
        start += size
    return tuple(out)


@register_vjp("split")
def _split_vjp(cts, x, *, sizes, axis, **params):
    """Concatenate the pieces' cotangents (zeros for unused pieces) along ``axis``."""
    pieces = []
    shape = list(jnp.shape(x))
    for ct, size in zip(cts, sizes, strict=True):
        if ct is None:
            shape[axis] = int(size)
            ct = jnp.zeros(tuple(shape), jnp.result_type(x))
        pieces.append(ct)
    return (lax.concatenate(pieces, axis),)


@register_vjp("slice")
def _slice_vjp(ct, x, *, start_indices, limit_indices, strides, **params):
    """Pad ct with zeros back to x's shape (interior padding undoes the stride)."""
    shape = jnp.shape(x)
    if strides is None or all(s == 1 for s in strides):
        pads = [
            (s, d - lim, 0) for s, d, lim in zip(start_indices, shape, limit_indices, strict=True)
        ]
    else:
        real_limits = [
            s + (n - 1) * st + 1 if n > 0 else s
            for s, n, st in zip(start_indices, ct.shape, strides, strict=True)
        ]
        pads = [
            (s, d - lim, st - 1)
            for s, d, lim, st in zip(start_indices, shape, real_limits, strides, strict=True)
        ]
    return (lax.pad(ct, jnp.zeros((), ct.dtype), pads),)


@register_vjp("pad")
def _pad_vjp(ct, x, padding_value, *, padding_config, **params):
    """Un-pad: negative padding removes the edges, a strided slice removes interior padding."""
    lo = [-int(a) for a, _, _ in padding_config]
    hi = [-int(b) for _, b, _ in padding_config]
    unpadded = lax.pad(
        ct, jnp.zeros((), ct.dtype), [(a, b, 0) for a, b in zip(lo, hi, strict=True)]
    )
    strides = [int(i) + 1 for _, _, i in padding_config]
    dx = lax.slice(unpadded, [0] * ct.ndim, unpadded.shape, strides)
    dpad = jnp.sum(ct) - jnp.sum(dx)
    return dx, dpad.astype(jnp.result_type(padding_value))


def _clamped_starts(starts, operand_shape, window_shape):
    """The start indices XLA really uses: each clamped to ``[0, dim - window]``.

    The jaxpr's starts are already wrapped once by ``lax.dynamic_slice`` (``-1`` -> ``dim - 1``);
    an index still out of range (``-8`` on a dim of 5 becomes ``-3``) is clamped by XLA, so the
    backward must clamp too -- passing it to ``lax.dynamic_update_slice`` would wrap it again.
    """
    return tuple(
        jnp.clip(s, 0, d - w) for s, d, w in zip(starts, operand_shape, window_shape, strict=True)
    )


@register_vjp("dynamic_slice")
def _dynamic_slice_vjp(ct, x, *starts, slice_sizes, **params):
    """Scatter ct into zeros at the same (clamped) start indices."""
    shape = jnp.shape(x)
    zeros = jnp.zeros(shape, ct.dtype)
    at = _clamped_starts(starts, shape, slice_sizes)
    return (lax.dynamic_update_slice(zeros, ct, at), *([None] * len(starts)))


@register_vjp("dynamic_update_slice")
def _dynamic_update_slice_vjp(ct, x, update, *starts, **params):
    """x receives ct with the updated window zeroed; update receives that window of ct."""
    usize = jnp.shape(update)
    at = _clamped_starts(starts, jnp.shape(x), usize)
    dx = lax.dynamic_update_slice(ct, jnp.zeros(usize, ct.dtype), at)
    dupdate = lax.dynamic_slice(ct, at, usize)
    return (dx, _cast_like(dupdate, update), *([None] * len(starts)))


@register_vjp("gather")
def _gather_vjp(
    ct, x, indices, *, dimension_numbers, unique_indices, indices_are_sorted, mode, **params
):
    """The transpose of a gather is a scatter-add of ct into zeros at the same indices."""
    dn = dimension_numbers
    scatter_dn = lax.ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims,
        inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims,
    )
    zeros = jnp.zeros(jnp.shape(x), ct.dtype)
    dx = lax.scatter_add(
        zeros,
        indices,
        ct,
        scatter_dn,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )
    return dx, None


@register_vjp("scatter-add", "scatter_add")
def _scatter_add_vjp(
    ct,
    x,
    indices,
    updates,
    *,
    dimension_numbers,
    indices_are_sorted,
    unique_indices,
    mode,
    **params,
):
    """out = x + scatter(updates): dx = ct, dupdates = gather(ct) at the same indices."""
    dn = dimension_numbers
    gather_dn = lax.GatherDimensionNumbers(
        offset_dims=dn.update_window_dims,
        collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims,
    )
    ushape = jnp.shape(updates)
    slice_sizes, pos = [], 0
    for i in range(ct.ndim):
        if i in dn.inserted_window_dims or i in dn.operand_batching_dims:
            slice_sizes.append(1)
        else:
            slice_sizes.append(ushape[dn.update_window_dims[pos]])
            pos += 1
    dupdates = lax.gather(
        ct,
        indices,
        dimension_numbers=gather_dn,
        slice_sizes=tuple(slice_sizes),
        mode=mode,
        fill_value=0,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
    )
    return ct, None, dupdates


@register_vjp("cumsum")
def _cumsum_vjp(ct, x, *, axis, reverse, **params):
    """The transpose of a running sum is the running sum in the other direction."""
    return (lax.cumsum(ct, axis=axis, reverse=not reverse),)
