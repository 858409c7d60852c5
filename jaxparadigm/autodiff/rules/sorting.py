"""Rules for ``sort`` (multi-operand: ``jnp.sort``, ``argsort``, ``sort_key_val``), ``top_k``. C3.2.

Both outputs are gathers of their inputs along one axis: ``out[..., j, ...] = x[..., p_j, ...]``.

* VJP: the transpose scatter-adds ``ct`` back to positions ``p`` (batched over the other axes).
  For ``sort`` the permutation comes from sorting again with an ``iota`` operand appended (same
  keys, same stability, so ties resolve as in the forward); ``top_k`` returns its indices.
* JVP (jax's ``_sort_jvp``, ``_top_k_jvp``): ``d out_k = take_along_axis(d x_k, perm)`` with the
  same permutation -- ties follow the primal's order; ``top_k``'s indices get no tangent.
"""

from __future__ import annotations

import jax.extend.core.primitives as P
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxparadigm.autodiff.registry import register_jvp, register_vjp

__all__: list[str] = []


def _scatter_along(ct, positions, axis: int, shape):
    """zeros(shape) with ``ct[..., j, ...]`` added at ``[..., positions[..., j, ...], ...]``."""
    rank = len(shape)
    batch = tuple(d for d in range(rank) if d != axis)
    dn = lax.ScatterDimensionNumbers(
        update_window_dims=(),
        inserted_window_dims=(axis,),
        scatter_dims_to_operand_dims=(axis,),
        operand_batching_dims=batch,
        scatter_indices_batching_dims=batch,
    )
    return lax.scatter_add(
        jnp.zeros(shape, ct.dtype),
        jnp.expand_dims(positions, rank),
        ct,
        dn,
        mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS,
    )


@register_vjp(P.sort_p)
def _sort_vjp(cts, *operands, dimension, is_stable, num_keys, **params):
    """Each float operand receives its output's cotangent at the positions it was sorted from."""
    shape = jnp.shape(operands[0])
    iota = lax.broadcasted_iota(jnp.int32, shape, dimension)
    perm = lax.sort((*operands, iota), dimension=dimension, is_stable=is_stable, num_keys=num_keys)[
        -1
    ]
    out = []
    for x, ct in zip(operands, cts, strict=True):
        float_x = jnp.issubdtype(jnp.result_type(x), jnp.inexact)
        out.append(
            _scatter_along(ct, perm, dimension, shape) if ct is not None and float_x else None
        )
    return tuple(out)


@register_jvp(P.sort_p)
def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    shape = jnp.shape(primals[0])
    iota = lax.broadcasted_iota(np.int32, shape, dimension)
    outs = P.sort_p.bind(
        *primals, iota, dimension=dimension, is_stable=is_stable, num_keys=num_keys
    )
    perm = outs[-1]
    t_out = [None if t is None else jnp.take_along_axis(t, perm, axis=dimension) for t in tangents]
    return list(outs[:-1]), t_out


@register_vjp(P.top_k_p)
def _top_k_vjp(cts, x, *, k, axis=-1, **params):
    """The k largest values: their cotangent goes back to the indices top_k returned."""
    ct_values = cts[0]
    if ct_values is None:
        return (None,)
    shape = jnp.shape(x)
    axis = axis % len(shape)
    _, idx = lax.top_k(x, k, axis=axis)
    return (_scatter_along(ct_values, idx, axis, shape),)


@register_jvp(P.top_k_p)
def _top_k_jvp(primals, tangents, *, k, axis, **params):
    (x,), (t,) = primals, tangents
    values, indices = P.top_k_p.bind(x, k=k, axis=axis, **params)
    return [values, indices], [jnp.take_along_axis(t, indices, axis=axis), None]
