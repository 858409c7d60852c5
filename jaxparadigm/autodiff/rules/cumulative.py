"""Rules for cumulative reductions: cumsum, cumprod, cummax, cummin, cumlogsumexp (claim C3.2).

Reverse mode: ``cumsum``'s transpose is the cumsum of ct in the other direction;
cumprod/cummax/cummin/cumlogsumexp: the reverse sweep of our engine over the parallel-prefix
implementation ``lax.associative_scan`` (jax differentiates the same implementation for their
JVPs).

Forward mode: ``cumsum`` is linear; the others are an associative scan over (value, tangent)
pairs with each combine's own derivative -- the same tree jax differentiates, so ties in
``cummax`` split the tangent exactly as jax does.
"""

from __future__ import annotations

import functools

import jax.extend.core.primitives as P
import jax.numpy as jnp
from jax import lax

from jaxparadigm.autodiff.graph import trace
from jaxparadigm.autodiff.registry import register_jvp, register_vjp
from jaxparadigm.autodiff.rules.elementwise import balanced_eq
from jaxparadigm.autodiff.rules.tangents import linear_rule

__all__: list[str] = []


@register_vjp(P.cumsum_p)
def _cumsum_vjp(ct, x, *, axis, reverse, **params):
    """The transpose of a running sum is the running sum in the other direction."""
    return (lax.cumsum(ct, axis=axis, reverse=not reverse),)


register_jvp(P.cumsum_p)(linear_rule(P.cumsum_p, (0,)))


def _associative_scan_vjp(combine):
    """VJP of a cumulative reduction: our reverse sweep over ``lax.associative_scan(combine)``."""

    def rule(ct, x, *, axis, reverse, **params):
        graph = trace(
            functools.partial(lax.associative_scan, combine, axis=axis, reverse=reverse), x
        )
        env = graph.forward([x])
        return tuple(graph.backward(env, [ct]))

    return rule


def _logaddexp(a, b):
    """log(e^a + e^b) as jax's ``cumlogsumexp`` combines (its custom JVP is not needed here)."""
    from jax._src.lax.other import logaddexp

    return logaddexp(a, b)


register_vjp(P.cumprod_p)(_associative_scan_vjp(lax.mul))
register_vjp(P.cummax_p)(_associative_scan_vjp(lax.max))
register_vjp(P.cummin_p)(_associative_scan_vjp(lax.min))
register_vjp(P.cumlogsumexp_p)(_associative_scan_vjp(_logaddexp))


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


register_jvp(P.cumprod_p)(_cumulative_rule(P.cumprod_p, _combine_prod))
register_jvp(P.cummax_p)(_cumulative_rule(P.cummax_p, _combine_chooser(jnp.maximum)))
register_jvp(P.cummin_p)(_cumulative_rule(P.cummin_p, _combine_chooser(jnp.minimum)))
register_jvp(P.cumlogsumexp_p)(_cumulative_rule(P.cumlogsumexp_p, _combine_logaddexp))
