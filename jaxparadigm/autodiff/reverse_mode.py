"""Reverse mode through our own graph + VJP registry: ``grad``, ``value_and_grad``, ``vjp``.

Claims C3.2/C3.3. ``f`` is traced to a ``Graph`` (define-then-run), run forward, then swept in
reverse through the registry -- ``jax.grad`` is never called. Rules are ``jnp`` code, so the
backward pass is an ordinary traceable program: it works under ``jax.jit``/``jax.vmap``, and
``grad(grad(f))`` re-enters the engine on the first backward's own graph (one graph per level).

Complex numbers as jax: the cotangent of ``z = x + iy`` for a real loss is ``dL/dx - i dL/dy``
(``2 dL/dz``; torch's ``dL/dz*`` convention is its conjugate, ``func.grad(convention="torch")``).
``grad`` of a real output takes complex inputs; ``holomorphic=True`` requires complex inputs and a
complex output and returns ``df/dz`` (the VJP of the cotangent ``1 + 0i``); a complex output
without it is jax's ``TypeError``. ``vjp`` takes complex primals and cotangents.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import dtypes

from jaxparadigm.autodiff.argnums import normalize_argnums, resolve_argnums
from jaxparadigm.autodiff.graph import flat_trace
from jaxparadigm.autodiff.saved import Saved
from jaxparadigm.autodiff.trace_cache import static_key

__all__ = ["grad", "value_and_grad", "vjp"]


def wrt_mask(
    args: tuple, argnums: Sequence[int], fn_name: str, holomorphic: bool = False
) -> list[bool]:
    """One flag per flat leaf: True for leaves of the differentiated arguments.

    Those must be floating or complex (complex with ``holomorphic``), with jax's messages.
    """
    mask: list[bool] = []
    for i, arg in enumerate(args):
        leaves = jax.tree_util.tree_leaves(arg)
        if i in argnums:
            for leaf in leaves:
                check_input_dtype(jnp.result_type(leaf), fn_name, holomorphic, i)
        mask.extend([i in argnums] * len(leaves))
    return mask


def check_input_dtype(dtype, fn_name: str, holomorphic: bool, i: int) -> None:
    """jax's input check of ``grad``/``jacrev``: inexact (complex with ``holomorphic``)."""
    if holomorphic and not jnp.issubdtype(dtype, jnp.complexfloating):
        raise TypeError(
            f"{fn_name} with holomorphic=True requires inputs with complex dtype, but got "
            f"{jnp.dtype(dtype).name} (argument {i})."
        )
    if not jnp.issubdtype(dtype, jnp.inexact):
        raise TypeError(
            f"{fn_name}: argument {i} (argnums) has a leaf of dtype {dtype}; "
            "differentiation requires floating-point or complex inputs"
        )


def check_output_dtype(dtype, fn_name: str, holomorphic: bool) -> None:
    """jax's output check of ``grad``/``jacrev``: real, or complex with ``holomorphic``."""
    name = jnp.dtype(dtype).name
    if holomorphic:
        if not jnp.issubdtype(dtype, jnp.complexfloating):
            raise TypeError(
                f"{fn_name} with holomorphic=True requires outputs with complex dtype, "
                f"but got {name}."
            )
    elif jnp.issubdtype(dtype, jnp.complexfloating):
        raise TypeError(
            f"{fn_name} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {name}. For holomorphic differentiation, pass "
            "holomorphic=True. For differentiation of non-holomorphic functions involving "
            "complex outputs, use vjp directly."
        )
    elif not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"{fn_name} requires a real floating-point output; got dtype {name}")


def _check_cotangent(k: int, ct, aval) -> None:
    """``ValueError`` unless cotangent ``k`` has the output's shape and dtype (as jax's vjp does).

    Weak types are ignored (a Python float is a float32 cotangent); a non-float output's cotangent
    is ignored, so any dtype (or float0) of the right shape is accepted for it.
    """
    shape, dtype = tuple(jnp.shape(ct)), jnp.result_type(ct)
    float_out = jnp.issubdtype(aval.dtype, jnp.inexact)
    if shape != tuple(aval.shape) or (float_out and dtype != aval.dtype):
        raise ValueError(
            f"vjp_fn: cotangent {k} has type {dtype}{list(shape)}; expected "
            f"{aval.dtype}{list(aval.shape)}, the type of output {k} of the differentiated function"
        )


def _grads_for(args, argnums, flat_args, wrt, in_cts, float0_for_rest=False):
    """Rebuild per-argument gradient pytrees (zeros where the sweep found no path).

    Leaves not differentiated are ``None``, or with ``float0_for_rest`` (``vjp``'s integer and
    boolean primals) ``float0`` zeros of their shape, as jax's vjp returns.
    """
    in_tree = jax.tree_util.tree_structure(args)
    rest = (lambda x: np.zeros(np.shape(x), dtypes.float0)) if float0_for_rest else (lambda x: None)
    leaves = [
        (jnp.zeros_like(x) if c is None else c) if w else rest(x)
        for x, w, c in zip(flat_args, wrt, in_cts, strict=True)
    ]
    per_arg = jax.tree_util.tree_unflatten(in_tree, leaves)
    return per_arg


def _check_scalar_output(out_avals: list, holomorphic: bool) -> None:
    """grad's output contract: one scalar, real floating (complex with ``holomorphic``). C3.2."""
    if len(out_avals) != 1 or out_avals[0].shape != ():
        shapes = [tuple(a.shape) for a in out_avals]
        raise TypeError(
            "grad requires a function with a scalar output; got output shape(s) "
            f"{shapes if len(out_avals) != 1 else shapes[0]}"
        )
    check_output_dtype(out_avals[0].dtype, "grad", holomorphic)


def value_and_grad(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable:
    """``(f(x), df/dx)`` via our graph + registry, for scalar float ``f``. Claims C3.2, C3.3.

    Same conventions as ``jax.value_and_grad``: ``argnums`` int or tuple; with ``has_aux`` f
    returns ``(out, aux)`` and the result is ``((out, aux), grads)``. Complex inputs of a real
    ``f`` get ``dL/dx - i dL/dy``; ``holomorphic=True`` (complex inputs and output) gives
    ``df/dz``.
    """
    if not callable(f):
        raise TypeError(f"value_and_grad: f={f!r} is not callable")
    argnums = normalize_argnums(argnums, "value_and_grad")

    @functools.wraps(f)
    def value_and_grad_f(*args, **kwargs):
        nums = resolve_argnums(argnums, len(args), "grad")
        wrt_mask(args, nums, "grad", holomorphic)
        # Only the differentiated arguments are traced; the others (and kwargs) are closed over
        # as they are, as jax.grad does: a custom_vjp's nondiff argument or a closure_convert
        # constant stays concrete. The trace is cached under f itself, the argnums split and the
        # closed-over values (static_key: scalars by value; never cached when one is an array).
        # When every argument is differentiated nothing is closed over: f's own entry serves.
        wrt_args = tuple(args[i] for i in nums)

        def f_wrt(*wrt_vals):
            full = list(args)
            for i, v in zip(nums, wrt_vals, strict=True):
                full[i] = v
            return f(*full, **kwargs)

        if nums == tuple(range(len(args))) and not kwargs:
            # f_wrt is f itself: share the entry of f's own trace (jvp, vjp)
            static: Hashable | None = ()
        else:
            static = static_key((nums, [a for i, a in enumerate(args) if i not in nums], kwargs))
        graph, flat_args, n_out, aux_tree = flat_trace(
            f_wrt, wrt_args, None, has_aux, cache_as=(f, static)
        )
        wrt = [True] * len(flat_args)
        _check_scalar_output([v.aval for v in graph.outputs[:n_out]], holomorphic)
        env = graph.forward(flat_args, wrt)
        outs = graph.outputs_of(env)
        value = outs[0]
        out_cts = [jnp.ones_like(value)] + [None] * (len(outs) - 1)  # keeps a weak type
        in_cts = graph.backward(env, out_cts, wrt)
        per_arg = _grads_for(wrt_args, nums, flat_args, wrt, in_cts)
        grads = per_arg[0] if isinstance(argnums, int) else tuple(per_arg)
        if has_aux:
            aux = jax.tree_util.tree_unflatten(aux_tree, outs[n_out:])
            return (value, aux), grads
        return value, grads

    return value_and_grad_f


def grad(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable:
    """``df/dx`` through our graph + VJP registry (not ``jax.grad``). Claims C3.2, C3.3.

    ``grad(grad(lambda x: (x**3).sum()))(2.0) == 12.0``: the inner backward is itself traced.
    With ``has_aux`` returns ``(grads, aux)``; ``holomorphic`` as ``jax.grad``'s.
    """
    vg = value_and_grad(f, argnums, has_aux, holomorphic)

    @functools.wraps(f)
    def grad_f(*args, **kwargs):
        (value_or_pair, grads) = vg(*args, **kwargs)
        if has_aux:
            return grads, value_or_pair[1]
        return grads

    return grad_f


def vjp(f: Callable, *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(f(*primals), vjp_fn)``; ``vjp_fn(ct)`` is the tuple of input cotangents. C3.2.

    Uses our engine: ``vjp_fn(ct) = (ct^T df/dx_1, ..., ct^T df/dx_n)``. With ``has_aux``
    returns ``(out, vjp_fn, aux)``.
    """
    if not callable(f):
        raise TypeError(f"vjp: f={f!r} is not callable")
    wrt = []
    for p in primals:
        leaves = jax.tree_util.tree_leaves(p)
        wrt += [jnp.issubdtype(jnp.result_type(x), jnp.inexact) for x in leaves]
    graph, flat_args, n_out, aux_tree = flat_trace(f, primals, None, has_aux)
    env = graph.forward(flat_args, wrt)
    outs = graph.outputs_of(env)
    out = jax.tree_util.tree_unflatten(graph.out_tree, outs[:n_out])
    likes = [jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x)) for x in flat_args]
    primals_like = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(primals), likes)
    pullback = functools.partial(_pullback, graph, n_out, tuple(wrt), primals_like, likes)
    # A pytree (jax's Partial over the saved forward values), so like jax's vjp_fn it can be
    # returned from and passed into jitted functions.
    vjp_fn = jax.tree_util.Partial(pullback, Saved(graph, env))
    if has_aux:
        return out, vjp_fn, jax.tree_util.tree_unflatten(aux_tree, outs[n_out:])
    return out, vjp_fn


def _pullback(graph, n_out, wrt, primals, likes, saved, cotangent):
    """``vjp``'s pullback: the reverse sweep over the saved forward environment."""
    ct_leaves, ct_tree = jax.tree_util.tree_flatten(cotangent)
    if ct_tree != graph.out_tree:
        raise ValueError(
            f"vjp_fn: cotangent structure {ct_tree} does not match the output {graph.out_tree}"
        )
    out_vars = graph.outputs[:n_out]
    for k, (c, v) in enumerate(zip(ct_leaves, out_vars, strict=True)):
        _check_cotangent(k, c, v.aval)
    ct_leaves = [
        jnp.asarray(c, v.aval.dtype) if jnp.issubdtype(v.aval.dtype, jnp.inexact) else None
        for c, v in zip(ct_leaves, out_vars, strict=True)
    ]
    n_aux = len(graph.outputs) - n_out
    in_cts = graph.backward(saved.env, ct_leaves + [None] * n_aux, list(wrt))
    return tuple(_grads_for(primals, None, likes, wrt, in_cts, float0_for_rest=True))
