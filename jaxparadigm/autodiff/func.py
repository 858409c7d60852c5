"""torch.func-style transforms with torch.func's argument conventions (claims C3.2, C3.3).

Everything differentiates on our own engine: ``grad``, ``grad_and_value``, ``vjp``, ``jacrev``
through our graph + VJP registry, ``jvp`` and ``jacfwd`` through our JVP interpreter
(``forward_mode``); ``hessian`` is forward-over-reverse (our ``jacfwd`` of our ``jacrev``, as
torch.func does) and ``hvp(f, primals, tangents) = jvp(grad(f), primals, tangents)[1]``.
``jacrev``/``jacfwd``/``hessian`` take ``chunk_size`` (rows computed that many at a time). Only
``vmap`` is JAX's own (``jax.vmap``): batching is not differentiation.

Complex numbers: ``holomorphic=`` as jax's (``grad``, ``grad_and_value``, ``jacrev``, ``jacfwd``,
``hessian``); gradients of real losses of complex inputs are jax's ``dL/dx - i dL/dy`` unless
``convention="torch"`` (``grad``/``grad_and_value``) asks for torch's conjugate ``dL/dx + i dL/dy``;
``check_holomorphic=True`` verifies the Cauchy-Riemann equations first (``complex_conventions``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from jaxparadigm.autodiff import forward_mode, reverse_mode
from jaxparadigm.autodiff.argnums import normalize_argnums, resolve_argnums
from jaxparadigm.autodiff.chunked_map import check_chunk_size, map_rows
from jaxparadigm.autodiff.complex_conventions import (
    check_convention,
    check_holomorphic,
    to_torch_convention,
)

__all__ = ["grad", "grad_and_value", "hessian", "hvp", "jacfwd", "jacrev", "jvp", "vjp", "vmap"]


def _with_holomorphy_check(
    transform: Callable, func: Callable, argnums, holomorphic: bool, check: bool, name: str
) -> Callable:
    """``transform`` preceded, with ``check``, by ``check_holomorphic(func, *args)``."""
    if check and not holomorphic:
        raise ValueError(f"{name}: check_holomorphic=True needs holomorphic=True")
    if not check:
        return transform

    @functools.wraps(func)  # errors of an enclosing transform name the user's function
    def checked(*args, **kwargs):
        bound = functools.partial(func, **kwargs) if kwargs else func  # named as the user's
        check_holomorphic(bound, *args, argnums=argnums)
        return transform(*args, **kwargs)

    return checked


def grad(
    func: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    *,
    holomorphic: bool = False,
    convention: str = "jax",
    check_holomorphic: bool = False,
) -> Callable:
    """torch.func.grad: d func / d args[argnums] via our engine; ``(grad, aux)`` with has_aux. C3.2.

    Complex inputs: ``convention="jax"`` (default) returns jax.grad's ``dL/dx - i dL/dy``;
    ``convention="torch"`` returns torch.func.grad's ``dL/dx + i dL/dy`` (its conjugate).
    ``holomorphic=True``: ``df/dz`` of a complex ``func`` (jax's); ``check_holomorphic=True``
    raises ``ValueError`` first if the Cauchy-Riemann equations fail at the point.
    """
    check_convention(convention, holomorphic, "grad")
    plain = reverse_mode.grad(func, argnums, has_aux, holomorphic)

    def torch_grad(*args, **kwargs):
        res = plain(*args, **kwargs)
        return (to_torch_convention(res[0]), res[1]) if has_aux else to_torch_convention(res)

    g = torch_grad if convention == "torch" else plain
    return _with_holomorphy_check(g, func, argnums, holomorphic, check_holomorphic, "grad")


def grad_and_value(
    func: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    *,
    holomorphic: bool = False,
    convention: str = "jax",
) -> Callable:
    """torch.func.grad_and_value: ``(grad, value)``; with has_aux ``(grad, (value, aux))``. C3.2.

    ``holomorphic`` and ``convention`` as ``grad``'s.
    """
    check_convention(convention, holomorphic, "grad_and_value")
    vg = reverse_mode.value_and_grad(func, argnums, has_aux, holomorphic)

    def grad_and_value_f(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (to_torch_convention(g) if convention == "torch" else g), value

    return grad_and_value_f


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """torch.func.vjp: ``(out, vjp_fn[, aux])``, ``vjp_fn(ct)`` one cotangent per primal. C3.2."""
    return reverse_mode.vjp(func, *primals, has_aux=has_aux)


def jvp(
    func: Callable, primals: tuple[Any, ...], tangents: tuple[Any, ...], *, has_aux: bool = False
) -> tuple[Any, ...]:
    """torch.func.jvp: ``(out, J @ tangents[, aux])`` by ``forward_mode.jvp``. C3.3."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise TypeError(
            f"jvp: primals and tangents must be tuples; got {type(primals).__name__} and "
            f"{type(tangents).__name__}"
        )
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    return forward_mode.jvp(func, primals, tangents, has_aux=has_aux)


def _select(args: tuple, argnums) -> tuple[tuple[int, ...], Callable]:
    nums = resolve_argnums(argnums, len(args), "jacrev")

    def rebuild(wrt_vals):
        full = list(args)
        for i, v in zip(nums, wrt_vals, strict=True):
            full[i] = v
        return full

    return nums, rebuild


def jacrev(
    func: Callable,
    argnums: int | Sequence[int] = 0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
    holomorphic: bool = False,
    check_holomorphic: bool = False,
) -> Callable[..., Any]:
    """torch.func.jacrev: Jacobian by reverse mode -- our vjp, vmapped over output basis vectors.

    ``J[o][i] = d out_o / d args[i]`` with shape ``out_o.shape + args[i].shape``. With
    ``chunk_size`` the rows (one VJP per output coordinate) are computed ``chunk_size`` at a time
    (``chunked_map.map_rows``), as ``torch.func.jacrev(chunk_size=...)``; results are equal.
    ``holomorphic``/``check_holomorphic`` as ``grad``'s (jax's rules: a complex output needs
    ``holomorphic=True``; complex inputs of real outputs get jax's conjugate convention). C3.2.
    """
    argnums = normalize_argnums(argnums, "jacrev")
    chunk_size = check_chunk_size(chunk_size, "jacrev")

    @functools.wraps(func)  # errors of an enclosing transform (hessian) name the user's function
    def jac_fn(*args):
        nums, rebuild = _select(args, argnums)
        reverse_mode.wrt_mask(args, nums, "jacrev", holomorphic)  # inexact inputs only
        f_wrt = functools.wraps(func)(lambda *wrt: func(*rebuild(wrt)))  # errors name func
        res = reverse_mode.vjp(f_wrt, *(args[i] for i in nums), has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        out_leaves, out_tree = jax.tree_util.tree_flatten(out)
        for leaf in out_leaves:
            if holomorphic or jnp.iscomplexobj(leaf):
                reverse_mode.check_output_dtype(jnp.result_type(leaf), "jacrev", holomorphic)
        jac_per_out = []
        for k, leaf in enumerate(out_leaves):
            size, shape = int(jnp.size(leaf)), jnp.shape(leaf)

            def row(i, k=k, shape=shape):
                cts = [jnp.zeros(jnp.shape(o), jnp.result_type(o)) for o in out_leaves]
                hot = jnp.arange(cts[k].size) == i
                cts[k] = jnp.reshape(hot.astype(cts[k].dtype), shape)
                return vjp_fn(jax.tree_util.tree_unflatten(out_tree, cts))

            batched = map_rows(row, size, chunk_size)
            per_arg = tuple(
                jax.tree_util.tree_map(lambda g, shape=shape: g.reshape(shape + g.shape[1:]), b)
                for b in batched
            )
            jac_per_out.append(per_arg[0] if isinstance(argnums, int) else per_arg)
        jac = jax.tree_util.tree_unflatten(out_tree, jac_per_out)
        return (jac, res[2]) if has_aux else jac

    return _with_holomorphy_check(jac_fn, func, argnums, holomorphic, check_holomorphic, "jacrev")


def jacfwd(
    func: Callable,
    argnums: int | Sequence[int] = 0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
    holomorphic: bool = False,
    check_holomorphic: bool = False,
) -> Callable[..., Any]:
    """torch.func.jacfwd: ``J[:, k] = J @ e_k`` by our forward mode (``forward_mode.jacfwd``).

    ``chunk_size`` computes the columns that many at a time (an extension: torch.func.jacfwd
    has none); ``holomorphic``/``check_holomorphic`` as ``grad``'s. C3.3's outer level.
    """
    jac = forward_mode.jacfwd(func, argnums, has_aux, holomorphic, chunk_size=chunk_size)
    return _with_holomorphy_check(jac, func, argnums, holomorphic, check_holomorphic, "jacfwd")


def hessian(
    func: Callable,
    argnums: int | Sequence[int] = 0,
    *,
    chunk_size: int | None = None,
    holomorphic: bool = False,
) -> Callable:
    """torch.func.hessian: forward-over-reverse ``jacfwd(jacrev(func))``, both on our engine. C3.3.

    ``chunk_size`` bounds how many Hessian rows (outer JVPs, and inner VJPs) run at once;
    ``holomorphic=True`` as jax.hessian's (both levels holomorphic: ``d2f/dz2``).
    """
    argnums = normalize_argnums(argnums, "hessian")
    chunk_size = check_chunk_size(chunk_size, "hessian")
    inner = jacrev(func, argnums, chunk_size=chunk_size, holomorphic=holomorphic)
    outer = forward_mode.jacfwd(inner, argnums, chunk_size=chunk_size, holomorphic=holomorphic)

    @functools.wraps(func)
    def hessian_f(*args):
        resolve_argnums(argnums, len(args), "hessian")  # errors name hessian, not its parts
        return outer(*args)

    return hessian_f


def hvp(f: Callable, primals: tuple, tangents: tuple) -> Any:
    """Hessian-vector product ``H(primals) @ tangents = jvp(grad(f), primals, tangents)[1]``. C3.3.

    Forward-over-reverse (JAX docs' convention), our forward mode over our ``grad``. One primal
    gives an array, several give a tuple (one block row of H @ v per primal).
    """
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise TypeError(
            f"hvp: primals and tangents must be tuples; got {type(primals).__name__} and "
            f"{type(tangents).__name__}"
        )
    if not primals or len(primals) != len(tangents):
        raise ValueError(f"hvp: {len(primals)} primals but {len(tangents)} tangents")
    argnums = 0 if len(primals) == 1 else tuple(range(len(primals)))
    return forward_mode.jvp(reverse_mode.grad(f, argnums), primals, tangents)[1]


def vmap(func: Callable, in_dims: int | None | Sequence[Any] = 0, out_dims: Any = 0) -> Callable:
    """torch.func.vmap: ``out[i] = func(x[i])`` over ``in_dims``.

    This one is JAX's own ``jax.vmap`` (batching, not differentiation); it batches our VJP and
    JVP programs because every rule is ordinary ``jnp`` code. C3.2.
    """
    if not callable(func):
        raise TypeError(f"vmap: func={func!r} is not callable")
    return jax.vmap(func, in_axes=in_dims, out_axes=out_dims)
