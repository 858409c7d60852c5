"""JVP rules for shape and contraction primitives (claim C3.2, forward mode).

* Movement and linear reductions (reshape, transpose, slice, pad, concatenate, reduce_sum, cumsum,
  reduce_window_sum, ...): ``d out = prim(d x)`` with the same parameters.
* Bilinear contractions: ``d (x . y) = dx . y + x . dy`` (dot_general, conv_general_dilated).
* The non-linear reductions (max/min/prod, cumulative, windowed) are in ``reduction_jvp.py``.
"""

from __future__ import annotations

import jax.extend.core.primitives as P
from jax._src.lax.lax import optimization_barrier_p, split_p, stack_p, tile_p, unstack_p
from jax._src.lax.slicing import scatter_sub_p

from jaxparadigm.autodiff.registry import register_jvp
from jaxparadigm.autodiff.rules.tangents import bilinear_rule, linear_rule, zero_rule

__all__: list[str] = []

_LINEAR_FIRST = (
    P.broadcast_in_dim_p,
    P.reshape_p,
    P.squeeze_p,
    P.transpose_p,
    P.rev_p,
    P.slice_p,
    P.reduce_sum_p,
    P.cumsum_p,
    P.reduce_window_sum_p,
    P.dynamic_slice_p,
    P.select_and_gather_add_p,
    P.select_and_scatter_add_p,
    P.sharding_constraint_p,
    split_p,
    tile_p,
    unstack_p,
)
for _p in _LINEAR_FIRST:
    register_jvp(_p.name)(linear_rule(_p, (0,)))


@register_jvp(P.gather_p.name)
def _gather_jvp(primals, tangents, *, fill_value, **params):
    """Linear in the operand; out-of-bounds slots (mode "fill") get a zero tangent, whatever
    ``fill_value`` the primal used (as jax)."""
    (x, idx), (t, _) = primals, tangents
    out = P.gather_p.bind(x, idx, fill_value=fill_value, **params)
    return out, P.gather_p.bind(t, idx, fill_value=0, **params)


for _p in (P.concatenate_p, P.pad_p, stack_p, P.device_put_p):
    register_jvp(_p.name)(linear_rule(_p))
register_jvp(P.dynamic_update_slice_p.name)(linear_rule(P.dynamic_update_slice_p, (0, 1)))
register_jvp(P.scatter_add_p.name)(linear_rule(P.scatter_add_p, (0, 2)))
register_jvp(scatter_sub_p.name)(linear_rule(scatter_sub_p, (0, 2)))
for _p in (P.argmax_p, P.argmin_p, P.reduce_and_p, P.reduce_or_p, P.reduce_xor_p):
    register_jvp(_p.name)(zero_rule(_p))


for _p in (P.dot_general_p, P.conv_general_dilated_p):
    register_jvp(_p.name)(bilinear_rule(_p))


@register_jvp(optimization_barrier_p.name)
def _optimization_barrier_jvp(primals, tangents, **params):
    """The barrier only orders computation: tangents pass through unchanged."""
    return list(optimization_barrier_p.bind(*primals, **params)), list(tangents)
