"""Forward mode through our own JVP interpreter: ``jvp`` and ``jacfwd`` (JAX conventions).

Claims C3.2/C3.3. ``f`` is traced to a ``Graph`` (the same cached trace reverse mode uses), then
``jvp_interpreter.eval_jvp`` pushes tangents through it with our JVP rule table -- ``jax.jvp`` is
never called. ``jacfwd`` is ``J[:, k] = jvp(f, x, e_k)`` for every basis vector ``e_k``, vmapped
(or in chunks, ``chunk_size``).

Complex values as in JAX: ``jvp`` takes complex primals and tangents (the JVP is the complex-linear
map ``J t``); ``jacfwd`` takes real inputs, or complex ones with ``holomorphic=True`` (complex
inputs and outputs, ``df/dz``). Integer inputs take ``float0`` tangents and integer outputs get
``float0`` tangents, as in JAX.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.autodiff.argnums import normalize_argnums, resolve_argnums
from jaxparadigm.autodiff.chunked_map import check_chunk_size, map_rows
from jaxparadigm.autodiff.graph import flat_trace
from jaxparadigm.autodiff.jvp_interpreter import eval_jvp_closed
from jaxparadigm.autodiff.tape.define_by_run import EagerGraph

__all__ = ["jacfwd", "jvp"]

_FLOAT0 = jax.dtypes.float0


def _is_float(x) -> bool:
    """Whether ``x`` carries a tangent: a floating or complex dtype."""
    return jnp.issubdtype(jnp.result_type(x), jnp.inexact)


def _check_tangents(primals, tangents) -> list:
    """Validate (JAX's rules and messages); return flat tangents with ``None`` for integers."""
    for v in (primals, tangents):
        if not isinstance(v, (tuple, list)):
            raise TypeError(
                "primal and tangent arguments to jvp must be tuples or lists; found "
                f"{type(primals).__name__} and {type(tangents).__name__}."
            )
    p_leaves, p_tree = jax.tree_util.tree_flatten(primals)
    t_leaves, t_tree = jax.tree_util.tree_flatten(tangents)
    if p_tree != t_tree:  # type: ignore[operator]  # jaxlib's PyTreeDef stub lacks __ne__
        raise TypeError(
            "primal and tangent arguments to jvp must have the same tree structure; got "
            f"primal structure {p_tree} and tangent structure {t_tree}."
        )
    out = []
    for i, (p, t) in enumerate(zip(p_leaves, t_leaves, strict=True)):
        p_dtype, t_dtype = jnp.result_type(p), np.result_type(t)
        expected = p_dtype if _is_float(p) else np.dtype(_FLOAT0)
        if t_dtype != _FLOAT0:
            t_dtype = jnp.result_type(t)
        if t_dtype != expected:
            raise TypeError(
                f"primal and tangent arguments to jvp do not match; dtypes must be equal, or in "
                f"case of int/bool primal dtype the tangent dtype must be float0. Got primal "
                f"dtype {p_dtype} and so expected tangent dtype {expected}, but got tangent "
                f"dtype {t_dtype} instead (leaf {i})."
            )
        if np.shape(p) != np.shape(t):
            raise ValueError(
                "jvp called with different primal and tangent shapes; got primal shape "
                f"{np.shape(p)} and tangent shape {np.shape(t)} (leaf {i})."
            )
        out.append(jnp.asarray(t) if _is_float(p) else None)
    return out


def _output_tangents(graph, outs, touts):
    """Concrete output tangents: zeros where symbolic, ``float0`` zeros for integer outputs."""
    result: list[Any] = []
    for v, o, t in zip(graph.outputs, outs, touts, strict=True):
        if not jnp.issubdtype(v.aval.dtype, jnp.inexact):
            result.append(np.zeros(np.shape(o), _FLOAT0))
        else:
            result.append(jnp.zeros(np.shape(o), v.aval.dtype) if t is None else t)
    return result


def _run(f, args, flat_tangents, has_aux, holomorphic=False):
    """Trace ``f`` (cached) and push tangents; ``(out, tangent_out, aux)`` as pytrees.

    With ``holomorphic`` (jacfwd's) every output must be complex (jax's ``TypeError``)."""
    graph, flat_args, n_out, aux_tree = flat_trace(f, tuple(args), None, has_aux)
    for v in graph.outputs[:n_out] if holomorphic else ():
        if not jnp.issubdtype(v.aval.dtype, jnp.complexfloating):
            raise TypeError(
                "jacfwd with holomorphic=True requires outputs with complex dtype, but got "
                f"{v.aval.dtype.name}."
            )
    if isinstance(graph, EagerGraph):  # f branches on values: define-by-run forward mode
        outs, touts = graph.eval_jvp(flat_args, flat_tangents)
    else:
        outs, touts = eval_jvp_closed(graph.closed_jaxpr, flat_args, flat_tangents)
    # an input returned unchanged (a Python float) still comes back as an array, as in jax
    outs = [o if isinstance(o, (jax.Array, jax.core.Tracer)) else jnp.asarray(o) for o in outs]
    touts = _output_tangents(graph, outs, touts)
    unflat = lambda leaves: jax.tree_util.tree_unflatten(graph.out_tree, leaves[:n_out])
    aux = jax.tree_util.tree_unflatten(aux_tree, outs[n_out:]) if has_aux else None
    return unflat(outs), unflat(touts), aux


def jvp(
    f: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False
) -> tuple[Any, ...]:
    """``(f(*primals), J(primals) @ tangents)`` by our forward mode. Claims C3.2, C3.3.

    JAX's conventions: ``primals``/``tangents`` are tuples or lists of matching pytrees, same
    shapes and dtypes (``float0`` for integer primals); with ``has_aux`` f returns
    ``(out, aux)`` and the result is ``(out, tangent_out, aux)``.
    """
    if not callable(f):
        raise TypeError(f"jvp: f={f!r} is not callable")
    flat_t = _check_tangents(primals, tangents)
    out, tout, aux = _run(f, primals, flat_t, has_aux)
    return (out, tout, aux) if has_aux else (out, tout)


def _basis_tangents(k, leaves, offsets):
    """The ``k``-th standard basis vector of the differentiated leaves, one slice per leaf.

    Leaf ``j`` holds coordinates ``offsets[j] .. offsets[j] + size - 1`` (``None``: not
    differentiated).
    """
    tangents: list[jax.Array | None] = []
    for leaf, offset in zip(leaves, offsets, strict=True):
        if offset is None:
            tangents.append(None)
            continue
        hot = (jnp.arange(int(np.size(leaf))) + offset == k).astype(jnp.result_type(leaf))
        tangents.append(jnp.reshape(hot, np.shape(leaf)))
    return tangents


def _coordinate_offsets(args, nums):
    """Per leaf of ``args``, where its coordinates start in the Jacobian's input axis, numbered
    in ``argnums`` order (``(2, 0)``: argument 2's coordinates first, as ``_unravel_columns``
    reads them); ``None`` for leaves not differentiated. Returns ``(offsets, total)``."""
    per_arg = [jax.tree_util.tree_leaves(a) for a in args]
    starts = np.cumsum([0] + [len(leaves) for leaves in per_arg])
    offsets: list[int | None] = [None] * int(starts[-1])
    total = 0
    for i in nums:
        for j, leaf in enumerate(per_arg[i]):
            offsets[int(starts[i]) + j] = total
            total += int(np.size(leaf))
    return offsets, total


def _unravel_columns(col, wrt_leaves, wrt_tree, out_shape):
    """``(N, *out)`` columns -> pytree over the inputs of blocks ``out.shape + in.shape``."""
    blocks, start = [], 0
    for leaf in wrt_leaves:
        size, shape = int(np.size(leaf)), np.shape(leaf)
        block = jnp.reshape(col[start : start + size], (*shape, *out_shape))
        nin = len(shape)
        perm = (*range(nin, nin + len(out_shape)), *range(nin))
        blocks.append(jnp.transpose(block, perm))
        start += size
    return jax.tree_util.tree_unflatten(wrt_tree, blocks)


def _check_jacfwd_input(dtype, holomorphic: bool, i: int) -> None:
    """jax's jacfwd input check: real floating, or complex with ``holomorphic``."""
    if holomorphic:
        if not jnp.issubdtype(dtype, jnp.complexfloating):
            raise TypeError(
                "jacfwd with holomorphic=True requires inputs with complex dtype, but got "
                f"{jnp.dtype(dtype).name} in argument {i}."
            )
    elif not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(
            "jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
            f"np.floating), but got {jnp.dtype(dtype).name} in argument {i}. For holomorphic "
            "differentiation, pass holomorphic=True. For differentiation of non-holomorphic "
            "functions involving complex inputs or integer inputs, use jvp directly."
        )


def jacfwd(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    *,
    chunk_size: int | None = None,
) -> Callable[..., Any]:
    """``J[o][i] = d out_o / d args[i]`` (shape ``out_o.shape + args[i].shape``) by forward mode.

    One JVP per input coordinate, vmapped; ``chunk_size`` computes them ``chunk_size`` at a time
    (``chunked_map``). Real floating inputs only, or with ``holomorphic=True`` complex inputs and
    outputs (``J = df/dz``, the JVP along ``1 + 0i``); ``TypeError`` otherwise, in jax's words.
    Claims C3.2, C3.3.
    """
    if not callable(f):
        raise TypeError(f"jacfwd: f={f!r} is not callable")
    argnums = normalize_argnums(argnums, "jacfwd")
    chunk_size = check_chunk_size(chunk_size, "jacfwd")

    @functools.wraps(f)
    def jacfwd_f(*args):
        nums = resolve_argnums(argnums, len(args), "jacfwd")
        wrt_args = tuple(args[i] for i in nums)
        wrt_leaves, wrt_tree = jax.tree_util.tree_flatten(
            wrt_args[0] if isinstance(argnums, int) else wrt_args
        )
        for i in nums:
            for leaf in jax.tree_util.tree_leaves(args[i]):
                _check_jacfwd_input(jnp.result_type(leaf), holomorphic, i)
        leaves = jax.tree_util.tree_leaves(args)
        offsets, n = _coordinate_offsets(args, nums)

        def column(k):
            return _run(f, args, _basis_tangents(k, leaves, offsets), has_aux, holomorphic)[1]

        cols = map_rows(column, n, chunk_size)
        jac = jax.tree_util.tree_map(
            lambda c: _unravel_columns(c, wrt_leaves, wrt_tree, c.shape[1:]), cols
        )
        if has_aux:
            return jac, _run(f, args, [None] * len(leaves), True)[2]
        return jac

    return jacfwd_f
