"""VJP rules for reductions: full, windowed (pooling) and cumulative (claim C3.2).

reduce_sum          dx = broadcast(ct) over the reduced axes
reduce_max/min      ct shared equally among the positions attaining the extremum (jax's rule)
reduce_prod         dx_i = ct * prod_{j != i} x_j, as (exclusive prefix) * (exclusive suffix)
                    products, so zeros in x are exact (no division by x)
reduce_window_sum   pad ct (interior padding undoes the strides), then a window sum with the
                    base dilation as stride: jax's transpose rule
reduce_window_max/min  each window's ct goes to its first extremal element (row-major window
                    order, XLA's select-and-scatter), written with strided slices and pads
cumsum              the cumsum of ct in the other direction
cumprod/cummax/cummin/cumlogsumexp  the reverse sweep of our engine over the parallel-prefix
                    implementation ``lax.associative_scan`` (jax differentiates the same
                    implementation for their JVPs)
reduce (variadic)   our reverse sweep (VJP) or our JVP interpreter (JVP) over jax's tree
                    reduction with the user's reducer
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.extend.core.primitives as P
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxparadigm.autodiff.graph import Graph, trace
from jaxparadigm.autodiff.jvp_interpreter import eval_jvp_closed
from jaxparadigm.autodiff.registry import register_jvp, register_vjp
from jaxparadigm.autodiff.rules.structural import unpad

__all__: list[str] = []


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


@register_vjp("reduce_prod")
def _reduce_prod_vjp(ct, x, *, axes, **params):
    """dx_i = ct * prod_{j != i} x_j over the reduced axes (flattened to one trailing axis)."""
    shape = jnp.shape(x)
    axes = tuple(sorted(int(a) for a in axes))
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    if n == 0:
        return (jnp.zeros(shape, ct.dtype),)
    perm = kept + axes
    flat = jnp.reshape(lax.transpose(x, perm), tuple(shape[d] for d in kept) + (n,))
    ones = jnp.ones(flat.shape[:-1] + (1,), flat.dtype)
    before = jnp.concatenate([ones, lax.cumprod(flat, axis=flat.ndim - 1)[..., :-1]], axis=-1)
    after = jnp.concatenate(
        [lax.cumprod(flat, axis=flat.ndim - 1, reverse=True)[..., 1:], ones], axis=-1
    )
    d = (jnp.expand_dims(ct, -1) * before * after).reshape(tuple(shape[d] for d in perm))
    return (lax.transpose(d, tuple(int(a) for a in np.argsort(perm))),)


def _dilate(shape, dilation):
    return tuple(0 if d == 0 else 1 + r * (d - 1) for d, r in zip(shape, dilation, strict=True))


@register_vjp("reduce_window_sum")
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


@register_vjp("reduce_window_max")
def _reduce_window_max_vjp(ct, x, **params):
    return _reduce_window_chooser_vjp(ct, x, params, lambda a, b: a > b, -jnp.inf)


@register_vjp("reduce_window_min")
def _reduce_window_min_vjp(ct, x, **params):
    return _reduce_window_chooser_vjp(ct, x, params, lambda a, b: a < b, jnp.inf)


@register_vjp(P.select_and_gather_add_p.name)
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


@register_vjp(P.select_and_scatter_add_p.name)
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


@register_vjp("cumsum")
def _cumsum_vjp(ct, x, *, axis, reverse, **params):
    """The transpose of a running sum is the running sum in the other direction."""
    return (lax.cumsum(ct, axis=axis, reverse=not reverse),)


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


register_vjp("cumprod")(_associative_scan_vjp(lax.mul))
register_vjp("cummax")(_associative_scan_vjp(lax.max))
register_vjp("cummin")(_associative_scan_vjp(lax.min))
register_vjp("cumlogsumexp")(_associative_scan_vjp(_logaddexp))


def _tree_reduce(graph, init_values, axes, shape):
    """jax's ``_reduce_jvp`` tree: fold the reduced axes (moved to the front, flattened) in
    halves with the reducer, padding odd halves with the init values."""
    non_axes = [d for d in range(len(shape)) if d not in axes]
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    perm = tuple(axes) + tuple(non_axes)
    new_shape = (n,) + tuple(shape[d] for d in non_axes)

    def reducer(*xs):
        return tuple(graph.outputs_of(graph.forward(list(xs))))

    for _ in range(len(non_axes) + 1):
        reducer = jax.vmap(reducer)

    def tree(*operands):
        xs = [lax.reshape(x, new_shape, perm) for x in operands]
        while xs[0].shape[0] > 1:
            m = xs[0].shape[0]
            n1 = (m + 1) // 2
            first = [lax.slice_in_dim(x, 0, n1) for x in xs]
            second = [lax.slice_in_dim(x, n1, None) for x in xs]
            if m - n1 != n1:
                pads = [(0, 1, 0)] + [(0, 0, 0)] * len(non_axes)
                second = [lax.pad(x, i, pads) for x, i in zip(second, init_values, strict=True)]
            xs = list(reducer(*first, *second))
        if xs[0].shape[0] == 0:
            return [jnp.full(new_shape[1:], i) for i in init_values]
        return [lax.squeeze(x, (0,)) for x in xs]

    return tree


@register_vjp("reduce")
def _reduce_vjp(cts, *args, jaxpr, dimensions, **params):
    """Variadic ``lax.reduce`` with any reducer: our reverse sweep over jax's tree reduction
    (the implementation jax differentiates for its JVP). The init values get no cotangent: XLA
    requires them to be the reducer's identity, and jax refuses tangents for them."""
    n = len(args) // 2
    xs, inits = args[:n], args[n:]
    tree = _tree_reduce(Graph(jaxpr), inits, tuple(dimensions), jnp.shape(xs[0]))
    graph = trace(tree, *xs)
    out_avals = [v.aval for v in graph.outputs]
    cts = [
        jnp.zeros(a.shape, a.dtype) if c is None else c for c, a in zip(cts, out_avals, strict=True)
    ]
    in_cts = graph.backward(graph.forward(list(xs)), cts)
    return (*in_cts, *([None] * n))


@register_jvp("reduce")
def _reduce_jvp(primals, tangents, *, jaxpr, dimensions, **params):
    """Variadic ``lax.reduce``, forward mode: our JVP interpreter over the same tree reduction
    (as jax's ``_reduce_jvp_rule``). Like jax, a nonzero tangent of an init value is refused."""
    n = len(primals) // 2
    xs, inits = primals[:n], primals[n:]
    if any(t is not None for t in tangents[n:]):
        raise NotImplementedError(
            "reduce: a nonzero tangent reaches an init value of a general lax.reduce; as in jax, "
            "only the operands can be differentiated"
        )
    tree = _tree_reduce(Graph(jaxpr), inits, tuple(dimensions), jnp.shape(xs[0]))
    return eval_jvp_closed(jax.make_jaxpr(tree)(*xs), list(xs), list(tangents[:n]))
