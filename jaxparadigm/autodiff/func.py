"""torch.func-style transforms with torch.func's argument conventions (claims C3.2, C3.3).

``grad``, ``grad_and_value``, ``vjp``, ``jacrev`` run the reverse part through our graph + VJP
registry; ``hessian`` is forward-over-reverse (``jacfwd(jacrev(f))``, as torch.func does) and
``hvp(f, primals, tangents) = jvp(grad(f), primals, tangents)[1]`` (the JAX docs' recipe). Forward
mode (``jvp``, ``jacfwd``) and ``vmap`` are JAX's own, which our backward composes with because
every VJP rule is ordinary ``jnp`` code.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxparadigm.autodiff import reverse_mode
from jaxparadigm.autodiff.reverse_mode import normalize_argnums

__all__ = ["grad", "grad_and_value", "hessian", "hvp", "jacfwd", "jacrev", "jvp", "vjp", "vmap"]


def grad(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """torch.func.grad: d func / d args[argnums] via our engine; ``(grad, aux)`` with has_aux. C3.2."""
    return reverse_mode.grad(func, argnums, has_aux)


def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """torch.func.grad_and_value: ``(grad, value)``; with has_aux ``(grad, (value, aux))``. C3.2."""
    vg = reverse_mode.value_and_grad(func, argnums, has_aux)

    def grad_and_value_f(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return g, value

    return grad_and_value_f


def vjp(func: Callable, *primals, has_aux: bool = False):
    """torch.func.vjp: ``(out, vjp_fn[, aux])``; ``vjp_fn(ct)`` returns one cotangent per primal. C3.2."""
    return reverse_mode.vjp(func, *primals, has_aux=has_aux)


def jvp(func: Callable, primals, tangents, *, has_aux: bool = False):
    """torch.func.jvp: ``(out, J @ tangents[, aux])`` by forward mode (``jax.jvp``); C3.3's outer level."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise TypeError(
            f"jvp: primals and tangents must be tuples; got {type(primals).__name__} and "
            f"{type(tangents).__name__}"
        )
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    return jax.jvp(func, primals, tangents, has_aux=has_aux)


def _select(args: tuple, argnums) -> tuple[tuple[int, ...], Callable]:
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    for a in nums:
        if not -len(args) <= a < len(args):
            raise ValueError(
                f"argnums={argnums!r} is out of range for a function called with {len(args)} "
                "positional argument(s)"
            )
    nums = tuple(a % len(args) for a in nums)

    def rebuild(wrt_vals):
        full = list(args)
        for i, v in zip(nums, wrt_vals, strict=True):
            full[i] = v
        return full

    return nums, rebuild


def jacrev(func: Callable, argnums=0, *, has_aux: bool = False) -> Callable:
    """torch.func.jacrev: Jacobian by reverse mode -- our vjp, vmapped over output basis vectors.

    ``J[o][i] = d out_o / d args[i]`` with shape ``out_o.shape + args[i].shape``. C3.2.
    """
    argnums = normalize_argnums(argnums, "jacrev")

    def jac_fn(*args):
        nums, rebuild = _select(args, argnums)
        reverse_mode.wrt_mask(args, nums, "jacrev")  # real floating inputs only
        f_wrt = lambda *wrt: func(*rebuild(wrt))
        res = reverse_mode.vjp(f_wrt, *(args[i] for i in nums), has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        out_leaves, out_tree = jax.tree_util.tree_flatten(out)
        jac_per_out = []
        for k, leaf in enumerate(out_leaves):
            size = int(jnp.size(leaf))  # leaves may be Python floats passed through unchanged
            basis = jnp.eye(size, dtype=jnp.result_type(leaf)).reshape((size, *jnp.shape(leaf)))
            cts = [
                basis if j == k else jnp.zeros((size, *jnp.shape(o)), jnp.result_type(o))
                for j, o in enumerate(out_leaves)
            ]
            batched = jax.vmap(lambda *c: vjp_fn(jax.tree_util.tree_unflatten(out_tree, c)))(*cts)
            per_arg = tuple(
                jax.tree_util.tree_map(
                    lambda g, leaf=leaf: g.reshape(jnp.shape(leaf) + g.shape[1:]), b
                )
                for b in batched
            )
            jac_per_out.append(per_arg[0] if isinstance(argnums, int) else per_arg)
        jac = jax.tree_util.tree_unflatten(out_tree, jac_per_out)
        return (jac, res[2]) if has_aux else jac

    return jac_fn


def jacfwd(func: Callable, argnums=0, *, has_aux: bool = False) -> Callable:
    """torch.func.jacfwd: ``J[i] = J @ e_i`` by forward mode (``jax.jacfwd``); C3.3's outer level."""
    argnums = normalize_argnums(argnums, "jacfwd")
    return jax.jacfwd(func, argnums=argnums, has_aux=has_aux)


def hessian(func: Callable, argnums=0) -> Callable:
    """torch.func.hessian: forward-over-reverse ``jacfwd(jacrev(func))``; reverse part is ours. C3.3."""
    argnums = normalize_argnums(argnums, "hessian")
    return jax.jacfwd(jacrev(func, argnums), argnums=argnums)


def hvp(f: Callable, primals: tuple, tangents: tuple):
    """Hessian-vector product ``H(primals) @ tangents`` = ``jvp(grad(f), primals, tangents)[1]``. C3.3.

    Forward-over-reverse (JAX docs' convention); ``grad`` is our engine. One primal gives an
    array, several give a tuple (one block row of H @ v per primal).
    """
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise TypeError(
            f"hvp: primals and tangents must be tuples; got {type(primals).__name__} and "
            f"{type(tangents).__name__}"
        )
    if not primals or len(primals) != len(tangents):
        raise ValueError(f"hvp: {len(primals)} primals but {len(tangents)} tangents")
    argnums = 0 if len(primals) == 1 else tuple(range(len(primals)))
    return jax.jvp(reverse_mode.grad(f, argnums), primals, tangents)[1]


def vmap(func: Callable, in_dims=0, out_dims=0) -> Callable:
    """torch.func.vmap: ``out[i] = func(x[i])`` over ``in_dims`` (``jax.vmap``); batches our VJPs (C3.2)."""
    if not callable(func):
        raise TypeError(f"vmap: func={func!r} is not callable")
    return jax.vmap(func, in_axes=in_dims, out_axes=out_dims)
