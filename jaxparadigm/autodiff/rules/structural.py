"""Rules for contractions and shape primitives: dot_general, reshape, slice, pad, ... (C3.2).

Reverse mode: ``rule(ct, *primals, **params)`` returns one cotangent per primal (``None`` = zero),
written with differentiable ``lax``/``jnp`` ops (claim C3.3); each is the transpose of the
movement (``reshape`` back, ``pad`` undoes ``slice``, a sum undoes ``broadcast_in_dim``, ...).

Forward mode: a movement is linear, ``d out = prim(d x)`` with the same parameters (in the
operand only where the others are shapes or indices: ``linear_rule(prim, (0,))``);
``dot_general`` is bilinear, ``d (x . y) = dx . y + x . dy``.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.extend.core.primitives as P
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax._src.lax.lax import split_p, stack_p, tile_p, unstack_p

from jaxparadigm.autodiff.registry import register_jvp, register_vjp
from jaxparadigm.autodiff.rules.tangents import bilinear_rule, linear_rule

__all__ = ["unpad"]


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


def _dot_transpose_lhs(ct, x_ndim, y, dimension_numbers, swap_ans=False, **dot_params):
    """Cotangent of the lhs of ``dot_general``: contract ct with y over y's free dims.

    The output of dot_general is laid out (batch, lhs free, rhs free). Contracting ``ct`` with
    ``y`` over the rhs-free dims (batched over the batch dims) gives (batch, lhs free, y contract)
    which a transpose puts back in lhs order. ``dot_params`` (precision, preferred element type)
    are the forward's, as in jax's transpose rule.
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
    if jnp.result_type(y) != ct.dtype:
        y = jnp.asarray(y).astype(ct.dtype)
    res = lax.dot_general(ct, y, dims, **dot_params)
    return lax.transpose(res, tuple(int(a) for a in out_axes))


@register_vjp(P.dot_general_p)
def _dot_general_vjp(
    ct, x, y, *, dimension_numbers, precision=None, preferred_element_type=None, **params
):
    """C = dot(A, B): dA = dot(dC, B) over B's free dims, dB likewise (then transposed back)."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    swapped = ((y_contract, x_contract), (y_batch, x_batch))
    kw = {"precision": precision, "preferred_element_type": preferred_element_type}
    dx = _dot_transpose_lhs(ct, jnp.ndim(x), y, dimension_numbers, **kw)
    dy = _dot_transpose_lhs(ct, jnp.ndim(y), x, swapped, swap_ans=True, **kw)
    return _cast_like(dx, x), _cast_like(dy, y)


register_jvp(P.dot_general_p)(bilinear_rule(P.dot_general_p))


@register_vjp(P.broadcast_in_dim_p)
def _broadcast_in_dim_vjp(ct, x, *dyn_shape, shape, broadcast_dimensions, **params):
    """Sum ct over the new dims and over dims that were size 1 in x, then reshape to x."""
    x_shape = jnp.shape(x)
    bdims = tuple(broadcast_dimensions)
    unit = tuple(bdims[i] for i, d in enumerate(x_shape) if d == 1 and shape[bdims[i]] != 1)
    new = tuple(d for d in range(len(shape)) if d not in bdims)
    axes = tuple(sorted(new + unit))
    out = jnp.sum(ct, axis=axes) if axes else ct
    return (_cast_like(jnp.reshape(out, x_shape), x), *([None] * len(dyn_shape)))


@register_vjp(P.reshape_p)
def _reshape_vjp(ct, x, *dyn_shape, dimensions=None, **params):
    """y = reshape(transpose(x, dimensions), new_sizes): reshape ct to the transposed shape of x,
    then apply the inverse permutation (``dimensions=None`` is the identity)."""
    shape = jnp.shape(x)
    if dimensions is None:
        return (jnp.reshape(ct, shape), *([None] * len(dyn_shape)))
    perm = tuple(int(d) for d in dimensions)
    ct = jnp.reshape(ct, tuple(shape[d] for d in perm))
    return (lax.transpose(ct, tuple(int(a) for a in np.argsort(perm))), *([None] * len(dyn_shape)))


# "expand_dims": an alias name for lookups by it (no jax primitive has the name).
@register_vjp(P.squeeze_p, "expand_dims")
def _squeeze_vjp(ct, x, **params):
    """Squeezing moves no data: reshape ct back to x's shape."""
    return (jnp.reshape(ct, jnp.shape(x)),)


@register_vjp(P.transpose_p)
def _transpose_vjp(ct, x, *, permutation, **params):
    return (lax.transpose(ct, tuple(int(a) for a in np.argsort(permutation))),)


@register_vjp(P.concatenate_p)
def _concatenate_vjp(ct, *xs, dimension, **params):
    """Slice ct back into the pieces that were concatenated along ``dimension``."""
    out, start = [], 0
    for x in xs:
        size = jnp.shape(x)[dimension]
        out.append(lax.slice_in_dim(ct, start, start + size, axis=dimension))
        start += size
    return tuple(out)


@register_vjp(stack_p)
def _stack_vjp(ct, *xs, axis, **params):
    """``stack(xs, axis)``: x_i at index i of a new axis; its cotangent is ``ct[..., i, ...]``."""
    return tuple(
        _cast_like(lax.index_in_dim(ct, i, axis=axis, keepdims=False), x) for i, x in enumerate(xs)
    )


@register_vjp(unstack_p)
def _unstack_vjp(cts, x, *, axis, **params):
    """``unstack(x, axis)`` returns the slices along ``axis``: stack their cotangents back."""
    shape = list(jnp.shape(x))
    del shape[axis]
    dtype = jnp.result_type(x)
    pieces = [jnp.zeros(shape, dtype) if c is None else c for c in cts]
    return (_cast_like(jnp.stack(pieces, axis=axis), x),)


@register_vjp(tile_p)
def _tile_vjp(ct, x, *, reps, **params):
    """Each output axis holds ``reps[i]`` copies of x's axis i: sum the copies."""
    shape = jnp.shape(x)
    split = [n for r, d in zip(reps, shape, strict=True) for n in (r, d)]
    summed = jnp.sum(jnp.reshape(ct, split), axis=tuple(range(0, 2 * len(shape), 2)))
    return (_cast_like(summed, x),)


@register_vjp(split_p)
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


@register_vjp(P.slice_p)
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


def unpad(ct: jax.Array, padding_config: Sequence[tuple[int, int, int]]) -> jax.Array:
    """Transpose of ``lax.pad(x, v, padding_config)`` in x: cut the edges, then the interior (C3.2).

    Negative padding removed edges of x, which get zero cotangent; interior padding ``i`` is
    undone by a stride ``i + 1``.
    """
    edges = [(-int(lo), -int(hi), 0) for lo, hi, _ in padding_config]
    unpadded = lax.pad(ct, jnp.zeros((), ct.dtype), edges)
    strides = [int(i) + 1 for _, _, i in padding_config]
    return lax.slice(unpadded, [0] * ct.ndim, unpadded.shape, strides)


@register_vjp(P.pad_p)
def _pad_vjp(ct, x, padding_value, *, padding_config, **params):
    """Un-pad for x; the padding value receives the cotangent of every padded position."""
    dx = unpad(ct, padding_config)
    dpad = jnp.sum(ct) - jnp.sum(dx)
    return dx, dpad.astype(jnp.result_type(padding_value))


@register_vjp(P.rev_p)
def _rev_vjp(ct, x, *, dimensions, **params):
    """Reversal is its own transpose."""
    return (lax.rev(ct, dimensions),)


def _clamped_starts(starts, operand_shape, window_shape):
    """The start indices XLA really uses: each clamped to ``[0, dim - window]``.

    The jaxpr's starts are already wrapped once by ``lax.dynamic_slice`` (``-1`` -> ``dim - 1``);
    an index still out of range (``-8`` on a dim of 5 becomes ``-3``) is clamped by XLA, so the
    backward must clamp too -- passing it to ``lax.dynamic_update_slice`` would wrap it again.
    """
    return tuple(
        jnp.clip(s, 0, d - w) for s, d, w in zip(starts, operand_shape, window_shape, strict=True)
    )


@register_vjp(P.dynamic_slice_p)
def _dynamic_slice_vjp(ct, x, *starts, slice_sizes, **params):
    """Scatter ct into zeros at the same (clamped) start indices."""
    shape = jnp.shape(x)
    zeros = jnp.zeros(shape, ct.dtype)
    at = _clamped_starts(starts, shape, slice_sizes)
    return (lax.dynamic_update_slice(zeros, ct, at), *([None] * len(starts)))


@register_vjp(P.dynamic_update_slice_p)
def _dynamic_update_slice_vjp(ct, x, update, *starts, **params):
    """x receives ct with the updated window zeroed; update receives that window of ct."""
    usize = jnp.shape(update)
    at = _clamped_starts(starts, jnp.shape(x), usize)
    dx = lax.dynamic_update_slice(ct, jnp.zeros(usize, ct.dtype), at)
    dupdate = lax.dynamic_slice(ct, at, usize)
    return (dx, _cast_like(dupdate, update), *([None] * len(starts)))


# Forward mode: linear in the operand (the other operands are shapes or start indices) ...
for _p in (
    P.broadcast_in_dim_p,
    P.reshape_p,
    P.squeeze_p,
    P.transpose_p,
    P.rev_p,
    P.slice_p,
    P.dynamic_slice_p,
    split_p,
    tile_p,
    unstack_p,
):
    register_jvp(_p)(linear_rule(_p, (0,)))
# ... in every operand (pad: the operand and the padding value) ...
for _p in (P.concatenate_p, P.pad_p, stack_p):
    register_jvp(_p)(linear_rule(_p))
# ... in the operand and the update (the rest are start indices).
register_jvp(P.dynamic_update_slice_p)(linear_rule(P.dynamic_update_slice_p, (0, 1)))
