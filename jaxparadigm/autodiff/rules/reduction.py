"""Rules for full reductions: reduce_sum/max/min/prod and the variadic ``reduce`` (claim C3.2).

Reverse mode::

    reduce_sum          dx = broadcast(ct) over the reduced axes
    reduce_max/min      ct shared equally among the positions attaining the extremum (jax's rule)
    reduce_prod         dx_i = ct * prod_{j != i} x_j, as (exclusive prefix) * (exclusive suffix)
                        products, so zeros in x are exact (no division by x)
    reduce (variadic)   our reverse sweep (VJP) or our JVP interpreter (JVP) over jax's tree
                        reduction with the user's reducer

Forward mode: ``reduce_sum`` is linear; ``reduce_max``/``reduce_min``: the tangent averaged over
the positions attaining the extremum (jax's ``_reduce_chooser_jvp_rule``); ``reduce_prod``:
``sum_i dx_i prod_{j != i} x_j`` with exclusive prefix/suffix products, so zeros in ``x`` are
exact. Windowed reductions: ``reduce_window.py``; cumulative ones: ``cumulative.py``.
"""

from __future__ import annotations

import jax
import jax.extend.core.primitives as P
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxparadigm.autodiff.graph import Graph, trace
from jaxparadigm.autodiff.jvp_interpreter import eval_jvp_closed
from jaxparadigm.autodiff.registry import register_jvp, register_vjp
from jaxparadigm.autodiff.rules.tangents import linear_rule

__all__: list[str] = []


@register_vjp(P.reduce_sum_p)
def _reduce_sum_vjp(ct, x, *, axes, **params):
    """y = sum_axes x: dx = broadcast of dy back over ``axes``."""
    shape = jnp.shape(x)
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    return (lax.broadcast_in_dim(ct, shape, kept),)


register_jvp(P.reduce_sum_p)(linear_rule(P.reduce_sum_p, (0,)))


def _reduce_chooser_vjp(ct, x, axes, reducer):
    """max/min reduction: ct is shared equally among the positions that attain the extremum."""
    shape = jnp.shape(x)
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    ans = reducer(x, axis=tuple(axes))
    hit = (x == lax.broadcast_in_dim(ans, shape, kept)).astype(ct.dtype)
    counts = jnp.sum(hit, axis=tuple(axes))
    return (lax.broadcast_in_dim(ct / counts, shape, kept) * hit,)


@register_vjp(P.reduce_max_p)
def _reduce_max_vjp(ct, x, *, axes, **params):
    return _reduce_chooser_vjp(ct, x, axes, jnp.max)


@register_vjp(P.reduce_min_p)
def _reduce_min_vjp(ct, x, *, axes, **params):
    return _reduce_chooser_vjp(ct, x, axes, jnp.min)


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


register_jvp(P.reduce_max_p)(_chooser_rule(P.reduce_max_p))
register_jvp(P.reduce_min_p)(_chooser_rule(P.reduce_min_p))


@register_vjp(P.reduce_prod_p)
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


@register_jvp(P.reduce_prod_p)
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


@register_vjp(P.reduce_p)
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


@register_jvp(P.reduce_p)
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
