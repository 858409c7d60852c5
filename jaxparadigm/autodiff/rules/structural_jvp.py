"""JVP rules for shape, contraction, reduction and cumulative primitives (claim C3.2, forward mode).

* Movement and linear reductions (reshape, transpose, slice, pad, concatenate, reduce_sum, cumsum,
  reduce_window_sum, ...): ``d out = prim(d x)`` with the same parameters.
* Bilinear contractions: ``d (x . y) = dx . y + x . dy`` (dot_general, conv_general_dilated).
* ``reduce_max``/``reduce_min``: the tangent averaged over the positions attaining the extremum
  (jax's ``_reduce_chooser_jvp_rule``); ``reduce_prod``: ``sum_i dx_i prod_{j != i} x_j`` with
  exclusive prefix/suffix products, so zeros in ``x`` are exact.
* ``cumprod``/``cummax``/``cummin``/``cumlogsumexp``: an associative scan over (value, tangent)
  pairs with each combine's own derivative -- the same tree jax differentiates, so ties in
  ``cummax`` split the tangent exactly as jax does.
* ``reduce_window_max``/``min``: the tangent at each window's selected element
  (``select_and_gather_add``, as jax); generic ``reduce_window`` (a user reducer): a windowed
  reduction of (value, tangent) pairs with the reducer's own JVP.
"""

from __future__ import annotations

import jax.extend.core.primitives as P
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax._src.lax.lax import optimization_barrier_p, split_p, stack_p, tile_p, unstack_p
from jax._src.lax.slicing import scatter_sub_p

from jaxparadigm.autodiff.jvp_interpreter import eval_jvp
from jaxparadigm.autodiff.registry import register_jvp
from jaxparadigm.autodiff.rules.elementwise_jvp import balanced_eq
from jaxparadigm.autodiff.rules.tangents import bilinear_rule, instantiate, linear_rule, zero_rule

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


def _chooser_rule(prim):
    """max/min over ``axes``: ``d out = sum(dx * hit) / sum(hit)``, ``hit = (x == out)``.

    Both sums are ``reduce_sum`` in the tangent's dtype, as jax's rule has them (``jnp.sum``
    would accumulate bfloat16 in float32 and round once: 1 ulp off jax's tangent).
    """

    def rule(primals, tangents, *, axes, **params):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axes=axes, **params)
        kept = tuple(d for d in range(jnp.ndim(x)) if d not in axes)
        dtype = jnp.result_type(t)
        hit = (x == lax.broadcast_in_dim(out, jnp.shape(x), kept)).astype(dtype)
        zero = np.zeros((), dtype)
        total = lambda a: lax.reduce(a, zero, lax.add, tuple(axes))  # reduce_sum in ``dtype``
        return out, total(t * hit) / total(hit)

    return rule


register_jvp(P.reduce_max_p.name)(_chooser_rule(P.reduce_max_p))
register_jvp(P.reduce_min_p.name)(_chooser_rule(P.reduce_min_p))


@register_jvp(P.reduce_prod_p.name)
def _reduce_prod_jvp(primals, tangents, *, axes, **params):
    """``d prod(x) = sum_i dx_i prod_{j != i} x_j`` (exclusive products: exact at zeros)."""
    (x,), (t,) = primals, tangents
    out = P.reduce_prod_p.bind(x, axes=axes, **params)
    kept = [d for d in range(jnp.ndim(x)) if d not in axes]
    perm = (*kept, *sorted(axes))
    shape = jnp.shape(x)
    n = 1
    for d in axes:
        n *= shape[d]
    flat = lambda a: jnp.reshape(lax.transpose(a, perm), (*(shape[d] for d in kept), n))
    xf, tf = flat(x), flat(t)
    ones = jnp.ones((*xf.shape[:-1], 1), xf.dtype)
    before = jnp.concatenate([ones, jnp.cumprod(xf, axis=-1)[..., :-1]], axis=-1)
    after = jnp.concatenate([jnp.cumprod(xf[..., ::-1], axis=-1)[..., -2::-1], ones], axis=-1)
    if n == 0:
        before = after = xf
    return out, jnp.sum(tf * before * after, axis=-1)


def _replace_inf(x):
    return jnp.where(jnp.isinf(x), jnp.zeros_like(x), x)


def _combine_prod(a, b):
    (xa, ta), (xb, tb) = a, b
    return xa * xb, ta * xb + xa * tb


def _combine_chooser(pick):
    def combine(a, b):
        (xa, ta), (xb, tb) = a, b
        o = pick(xa, xb)
        return o, ta * balanced_eq(xa, o, xb) + tb * balanced_eq(xb, o, xa)

    return combine


def _combine_logaddexp(a, b):
    (xa, ta), (xb, tb) = a, b
    o = jnp.logaddexp(xa, xb)
    wa = jnp.exp(_replace_inf(xa) - _replace_inf(o))
    wb = jnp.exp(_replace_inf(xb) - _replace_inf(o))
    return o, ta * wa + tb * wb


def _cumulative_rule(prim, combine):
    """Scan the pairs (x_i, dx_i) with ``combine`` (the op and its derivative) along ``axis``."""

    def rule(primals, tangents, *, axis, reverse):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axis=axis, reverse=reverse)
        _, t_out = lax.associative_scan(combine, (x, t), reverse=reverse, axis=axis)
        return out, t_out

    return rule


register_jvp(P.cumprod_p.name)(_cumulative_rule(P.cumprod_p, _combine_prod))
register_jvp(P.cummax_p.name)(_cumulative_rule(P.cummax_p, _combine_chooser(jnp.maximum)))
register_jvp(P.cummin_p.name)(_cumulative_rule(P.cummin_p, _combine_chooser(jnp.minimum)))
register_jvp(P.cumlogsumexp_p.name)(_cumulative_rule(P.cumlogsumexp_p, _combine_logaddexp))


def _window_chooser_rule(prim, select_prim):
    """Windowed max/min: the tangent of the element each window selects."""

    def rule(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, **params)
        t_out = P.select_and_gather_add_p.bind(t, x, select_prim=select_prim, **params)
        return out, t_out

    return rule


@register_jvp(P.reduce_window_p.name)
def _reduce_window_jvp(primals, tangents, *, jaxpr, consts, **window):
    """Generic ``reduce_window`` (a user reducer): reduce (value, tangent) pairs with the JVP of the
    reducer (our interpreter on its jaxpr), as jax does. Init values must have zero tangents."""
    n = len(primals) // 2
    operands, inits = list(primals[:n]), list(primals[n:])
    if any(t is not None for t in tangents[n:]):
        raise NotImplementedError("forward mode: reduce_window with a differentiated init_value")
    op_t = [instantiate(t, x) for t, x in zip(tangents[:n], operands, strict=True)]
    init_t = [instantiate(None, v) for v in inits]

    def reducer(left, right):
        (pl, tl), (pr, tr) = left, right
        outs, touts = eval_jvp(jaxpr, consts, [*pl, *pr], [*tl, *tr])
        return list(outs), [instantiate(t, o) for t, o in zip(touts, outs, strict=True)]

    outs, touts = lax.reduce_window((operands, op_t), (inits, init_t), reducer, **window)
    return list(outs), list(touts)


register_jvp(P.reduce_window_max_p.name)(_window_chooser_rule(P.reduce_window_max_p, P.ge_p))
register_jvp(P.reduce_window_min_p.name)(_window_chooser_rule(P.reduce_window_min_p, P.le_p))
