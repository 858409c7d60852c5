"""JVP rules for the non-linear reductions (claim C3.2, forward mode); their VJPs: ``reduction.py``.

* ``reduce_max``/``reduce_min``: the tangent averaged over the positions attaining the extremum
  (jax's ``_reduce_chooser_jvp_rule``); ``reduce_prod``: ``sum_i dx_i prod_{j != i} x_j`` with
  exclusive prefix/suffix products, so zeros in ``x`` are exact.
* ``cumprod``/``cummax``/``cummin``/``cumlogsumexp``: an associative scan over (value, tangent)
  pairs with each combine's own derivative -- the same tree jax differentiates, so ties in
  ``cummax`` split the tangent exactly as jax does.
* ``reduce_window_max``/``min``: the tangent at each window's selected element
  (``select_and_gather_add``, as jax); generic ``reduce_window`` (a user reducer): a windowed
  reduction of (value, tangent) pairs with the reducer's own JVP.

The linear reductions (reduce_sum, cumsum, reduce_window_sum) take ``linear_rule`` in
``structural_jvp.py``.
"""

from __future__ import annotations

import jax.extend.core.primitives as P
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxparadigm.autodiff.jvp_interpreter import eval_jvp
from jaxparadigm.autodiff.registry import register_jvp
from jaxparadigm.autodiff.rules.elementwise_jvp import balanced_eq
from jaxparadigm.autodiff.rules.tangents import instantiate

__all__: list[str] = []


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
