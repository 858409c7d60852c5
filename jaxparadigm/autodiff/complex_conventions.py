"""Complex differentiation: the torch convention adapter and the opt-in holomorphy check (C3.2).

Conventions. For a real loss ``L`` of ``z = x + iy`` jax (and our engine) returns

    grad_jax L = dL/dx - i dL/dy = 2 dL/dz

while ``torch.autograd``/``torch.func.grad`` return the conjugate Wirtinger gradient

    grad_torch L = dL/dx + i dL/dy = 2 dL/dz* = conj(grad_jax L)

(for real inputs the two agree). Both step downhill with ``z - lr * grad_torch``; with jax's
value one must conjugate first: the classic silent bug (pytorch#92140, jax#3293).
``to_torch_convention`` conjugates every complex gradient leaf.

Holomorphy. ``holomorphic=True`` promises ``f`` is complex-differentiable, i.e. its JVP is
complex-linear: ``J(i v) = i J(v)`` for every direction ``v`` (the Cauchy-Riemann equations
``u_x = v_y``, ``u_y = -v_x``). jax does not check the promise and, for ``conj``/``abs``/``real``,
silently returns a number that is no derivative. ``check_holomorphic(f, *args)`` verifies the
equations numerically at the evaluation point, one JVP pair per input coordinate (``e_k`` and
``i e_k``), and raises ``ValueError`` naming the function (``describe_function``: through
``functools.partial`` and ``functools.wraps``, with its file and line) when they fail.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.autodiff import forward_mode
from jaxparadigm.autodiff.argnums import normalize_argnums, resolve_argnums
from jaxparadigm.autodiff.tape.control_flow_error import describe_function

__all__ = ["CONVENTIONS", "check_convention", "check_holomorphic", "to_torch_convention"]

CONVENTIONS = ("jax", "torch")


def check_convention(convention: object, holomorphic: bool, fn_name: str) -> str:
    """``convention`` if it is ``"jax"`` or ``"torch"``; ``ValueError`` otherwise, and for
    ``"torch"`` with ``holomorphic=True`` (torch differentiates real losses only)."""
    if convention not in CONVENTIONS:
        raise ValueError(
            f"{fn_name}: convention={convention!r}; expected one of {list(CONVENTIONS)}"
        )
    if convention == "torch" and holomorphic:
        raise ValueError(
            f"{fn_name}: convention='torch' with holomorphic=True; torch.func.grad "
            "differentiates real-valued losses only (use convention='jax' for df/dz)"
        )
    return str(convention)


def to_torch_convention(grads: Any) -> Any:
    """``conj`` of every complex leaf (``dL/dx + i dL/dy``, torch's ``2 dL/dz*``); real leaves
    unchanged."""
    return jax.tree_util.tree_map(lambda g: jnp.conj(g) if jnp.iscomplexobj(g) else g, grads)


def _tolerance(dtype) -> float:
    """1000 ulp of the complex dtype's real part: rounding in a JVP stays far below it, a failed
    Cauchy-Riemann equation (a difference of order ``|J|``) far above."""
    return 1e3 * float(jnp.finfo(dtype).eps)


def check_holomorphic(
    f: Callable,
    *args: Any,
    argnums: int | Sequence[int] = 0,
    rtol: float | None = None,
) -> None:
    """``ValueError`` unless ``f`` satisfies the Cauchy-Riemann equations at ``args``.

    For every coordinate ``e_k`` of the (complex) differentiated arguments the JVPs must satisfy
    ``J(i e_k) = i J(e_k)`` within ``rtol * (1 + max |J|)`` (default ``rtol``: 1000 ulp of the
    input dtype). Needs concrete ``args`` (not under ``jit``). Returns ``None`` when they hold.
    """
    if not callable(f):
        raise TypeError(f"check_holomorphic: f={f!r} is not callable")
    argnums = normalize_argnums(argnums, "check_holomorphic")
    nums = resolve_argnums(argnums, len(args), "check_holomorphic")
    leaves = jax.tree_util.tree_leaves(args)
    per_arg = [jax.tree_util.tree_leaves(a) for a in args]
    for i in nums:
        for leaf in per_arg[i]:
            if not jnp.issubdtype(jnp.result_type(leaf), jnp.complexfloating):
                raise TypeError(
                    f"check_holomorphic: argument {i} has dtype {jnp.result_type(leaf)}; "
                    "expected a complex dtype (holomorphy is a property of complex inputs)"
                )
    if any(isinstance(x, jax.core.Tracer) for x in leaves):
        raise TypeError(
            "check_holomorphic: the arguments are traced (under jit/vmap?); the check compares "
            "concrete JVPs, call it outside the transformation"
        )
    offsets, n = forward_mode._coordinate_offsets(args, nums)
    dtype = jnp.result_type(*(leaf for i in nums for leaf in per_arg[i]))
    tol = _tolerance(dtype) if rtol is None else float(rtol)

    def pair(k):
        basis = forward_mode._basis_tangents(k, leaves, offsets)
        along_i = [None if t is None else t * jnp.asarray(1j, t.dtype) for t in basis]
        j1 = forward_mode._run(f, args, basis, False)[1]
        ji = forward_mode._run(f, args, along_i, False)[1]
        return jax.tree_util.tree_leaves(j1), jax.tree_util.tree_leaves(ji)

    j1s, jis = jax.vmap(pair)(jnp.arange(n))
    worst, scale = 0.0, 0.0
    for j1, ji in zip(j1s, jis, strict=True):
        if j1.dtype == jax.dtypes.float0:
            continue
        j1c, jic = np.asarray(j1, np.complex128), np.asarray(ji, np.complex128)
        worst = max(worst, float(np.max(np.abs(jic - 1j * j1c), initial=0.0)))
        scale = max(scale, float(np.max(np.abs(j1c), initial=0.0)))
        scale = max(scale, float(np.max(np.abs(jic), initial=0.0)))
    if not worst <= tol * (1.0 + scale):
        raise ValueError(
            f"check_holomorphic: the function {describe_function(f)} is not holomorphic at the "
            "evaluation point: the "
            f"Cauchy-Riemann equations fail (|J(i v) - i J(v)| = {worst:.3g} > "
            f"{tol:.3g} * (1 + {scale:.3g})), so df/dz does not exist there and "
            "holomorphic=True would return a number that is no derivative (jax#3293); for a "
            "real-valued loss of complex inputs use holomorphic=False"
        )
