"""Rules for windowed reductions (pooling): reduce_window_sum/max/min and friends (claim C3.2).

Reverse mode:

reduce_window_sum   pad ct (interior padding undoes the strides), then a window sum with the
                    base dilation as stride: jax's transpose rule
reduce_window_max/min  each window's ct goes to its first extremal element (row-major window
                    order, XLA's select-and-scatter), written with strided slices and pads
select_and_gather_add / select_and_scatter_add  each other's transpose (the forward mode of
                    max pooling binds them; their VJPs make forward-over-reverse work)

Forward mode: ``reduce_window_sum``, ``select_and_gather_add`` and ``select_and_scatter_add`` are
linear in their first operand; ``reduce_window_max``/``min``: the tangent at each window's
selected element (``select_and_gather_add``, as jax); generic ``reduce_window`` (a user
reducer): a windowed reduction of (value, tangent) pairs with the reducer's own JVP (it has no
VJP rule: jax has none either).
"""

from __future__ import annotations

import functools
import itertools

import jax.extend.core.primitives as P
import jax.numpy as jnp
from jax import lax

from jaxparadigm.autodiff.jvp_interpreter import eval_jvp
from jaxparadigm.autodiff.registry import register_jvp, register_vjp
from jaxparadigm.autodiff.rules.structural import unpad
from jaxparadigm.autodiff.rules.tangents import instantiate, linear_rule

__all__: list[str] = []


def _dilate(shape, dilation):
    return tuple(0 if d == 0 else 1 + r * (d - 1) for d, r in zip(shape, dilation, strict=True))


@register_vjp(P.reduce_window_sum_p)
def _reduce_window_sum_vjp(
    ct, x, *, window_dimensions, window_strides, padding, base_dilation, window_dilation, **params
):
    """jax's transpose: pad ct (lo/hi from the conv-VJP padding, interior = stride - 1), then sum
    windows of the same (dilated) size with the base dilation as stride."""
    in_shape = jnp.shape(x)
    lhs = _dilate(in_shape, base_dilation)
    rhs = _dilate(window_dimensions, window_dilation)
    out = _dilate(ct.shape, window_strides)
    before = [r - lo - 1 for r, (lo, _) in zip(rhs, padding, strict=True)]
    after = [a + r - 1 - o - b for a, r, o, b in zip(lhs, rhs, out, before, strict=True)]
    config = [(b, a, s - 1) for b, a, s in zip(before, after, window_strides, strict=True)]
    padded = lax.pad(ct, jnp.zeros((), ct.dtype), config)
    # bound directly: lax.reduce_window with a traced init (under jit) would emit the generic
    # ``reduce_window`` primitive, and the next derivative would need a rule for that
    dx = P.reduce_window_sum_p.bind(
        padded,
        window_dimensions=tuple(window_dimensions),
        window_strides=tuple(base_dilation),
        padding=((0, 0),) * len(in_shape),
        base_dilation=(1,) * len(in_shape),
        window_dilation=tuple(window_dilation),
    )
    return (dx,)


def _reduce_window_chooser_vjp(ct, x, params, better, init):
    """Route each window's ct to the window's first extremal element (``better`` = ge / le)."""
    dims, strides = params["window_dimensions"], params["window_strides"]
    wdil, bdil, padding = params["window_dilation"], params["base_dilation"], params["padding"]
    config = [(lo, hi, b - 1) for (lo, hi), b in zip(padding, bdil, strict=True)]
    xp = lax.pad(x, jnp.asarray(init, x.dtype), config)
    out_shape = ct.shape
    windows = []
    for offset in itertools.product(*[range(d) for d in dims]):
        start = [k * w for k, w in zip(offset, wdil, strict=True)]
        limit = [
            s + (n - 1) * st + 1 if n else s
            for s, n, st in zip(start, out_shape, strides, strict=True)
        ]
        windows.append((start, limit, lax.slice(xp, start, limit, strides)))
    best = functools.reduce(
        lambda a, b: jnp.where(better(b[2], a), b[2], a), windows[1:], windows[0][2]
    )
    taken = jnp.zeros(out_shape, bool)
    dxp = jnp.zeros(xp.shape, ct.dtype)
    zero = jnp.zeros((), ct.dtype)
    for start, limit, w in windows:
        hit = (w == best) & ~taken
        taken = taken | hit
        back = [
            (s, d - lim, st - 1)
            for s, d, lim, st in zip(start, xp.shape, limit, strides, strict=True)
        ]
        dxp = dxp + lax.pad(jnp.where(hit, ct, zero), zero, back)
    return (unpad(dxp, config),)


@register_vjp(P.reduce_window_max_p)
def _reduce_window_max_vjp(ct, x, **params):
    return _reduce_window_chooser_vjp(ct, x, params, lambda a, b: a > b, -jnp.inf)


@register_vjp(P.reduce_window_min_p)
def _reduce_window_min_vjp(ct, x, **params):
    return _reduce_window_chooser_vjp(ct, x, params, lambda a, b: a < b, jnp.inf)


def _window_chooser_rule(prim, select_prim):
    """Windowed max/min: the tangent of the element each window selects."""

    def rule(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, **params)
        t_out = P.select_and_gather_add_p.bind(t, x, select_prim=select_prim, **params)
        return out, t_out

    return rule


register_jvp(P.reduce_window_max_p)(_window_chooser_rule(P.reduce_window_max_p, P.ge_p))
register_jvp(P.reduce_window_min_p)(_window_chooser_rule(P.reduce_window_min_p, P.le_p))


@register_vjp(P.select_and_gather_add_p)
def _select_and_gather_add_vjp(
    ct,
    tangents,
    operand,
    *,
    select_prim,
    window_dimensions,
    window_strides,
    padding,
    base_dilation,
    window_dilation,
    **params,
):
    """Our forward mode's windowed max/min tangent (``reduce_window_max`` JVP) is linear in the
    tangents; its transpose scatters ct back to each window's selected element
    (``select_and_scatter_add``), as jax's ``_select_and_gather_add_transpose``. The operand only
    selects: no cotangent. Window dilation is refused as in jax."""
    if any(d != 1 for d in window_dilation):
        raise NotImplementedError(
            f"select_and_gather_add VJP: window_dilation={window_dilation}; expected all 1 "
            "(jax has no VJP for dilated max-pool windows either)"
        )
    if any(d != 1 for d in base_dilation):
        ident = -jnp.inf if select_prim is P.ge_p else jnp.inf
        config = tuple((0, 0, d - 1) for d in base_dilation)
        operand = lax.pad(operand, jnp.asarray(ident, operand.dtype), config)
    dt = P.select_and_scatter_add_p.bind(
        ct,
        operand,
        select_prim=select_prim,
        window_dimensions=tuple(window_dimensions),
        window_strides=tuple(window_strides),
        padding=tuple(padding),
    )
    if any(d != 1 for d in base_dilation):
        dt = lax.slice(dt, (0,) * dt.ndim, dt.shape, tuple(base_dilation))
    return dt, None


@register_vjp(P.select_and_scatter_add_p)
def _select_and_scatter_add_vjp(
    ct, source, operand, *, select_prim, window_dimensions, window_strides, padding, **params
):
    """The transpose of ``select_and_gather_add``: each window reads ct at its selected element."""
    ones = (1,) * len(window_dimensions)
    d_source = P.select_and_gather_add_p.bind(
        ct,
        operand,
        select_prim=select_prim,
        window_dimensions=tuple(window_dimensions),
        window_strides=tuple(window_strides),
        padding=tuple(padding),
        base_dilation=ones,
        window_dilation=ones,
    )
    return d_source, None


for _p in (P.reduce_window_sum_p, P.select_and_gather_add_p, P.select_and_scatter_add_p):
    register_jvp(_p)(linear_rule(_p, (0,)))


@register_jvp(P.reduce_window_p)
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
