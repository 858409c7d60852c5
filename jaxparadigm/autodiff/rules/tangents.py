"""Rule constructors for the JVP table: symbolic zeros, linear, zero and derivative rules (C3.2).

A JVP rule is ``rule(primals, tangents, **params) -> (primal_out, tangent_out)`` with ``None`` for
a zero tangent (see ``registry``). Most primitives fall in one of four shapes, as in Autodidax:

* linear in some operands (reshape, slice, reduce_sum, ...): ``out_dot = prim(*tangents)`` with
  the other operands (indices, shapes) kept as primals and missing tangents instantiated as zeros;
* piecewise constant (sign, floor, comparisons): ``out_dot = 0``;
* unary with a derivative: ``out_dot = t * f'(x)`` (``deriv(t, x, y)`` may use the output ``y``);
* bilinear (mul, dot_general, conv): ``prim(dx, y) + prim(x, dy)``;
* n-ary with one partial per operand: ``out_dot = sum_i d_i(t_i, *xs, y)``.

``scatter_nonzero`` and ``kept_tangents`` move tangents between the full operand list and the
fixed list of non-zero ones a staged inner program (cond, scan, while, remat) carries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.extend import core as jcore

from jaxparadigm.autodiff.registry import NoDerivative, NotDifferentiable

__all__ = [
    "add_tangents",
    "bilinear_rule",
    "instantiate",
    "kept_tangents",
    "linear_rule",
    "partials_rule",
    "scatter_nonzero",
    "unary_rule",
    "zero_rule",
]


def instantiate(t: jax.Array | None, primal: Any) -> jax.Array:
    """A concrete tangent: ``t``, or zeros shaped like ``primal`` when ``t`` is a symbolic zero."""
    if t is not None:
        return t
    return jnp.zeros(jnp.shape(primal), jnp.result_type(primal))


def add_tangents(*ts: jax.Array | None) -> jax.Array | None:
    """Sum of the non-zero tangents (broadcasting rank-0 ones); ``None`` if all are zero."""
    present = [t for t in ts if t is not None]
    if not present:
        return None
    out = present[0]
    for t in present[1:]:
        out = out + t
    return out


def scatter_nonzero(values: Sequence[Any], flags: Sequence[bool]) -> list[Any]:
    """Full list from the values of the flagged (nonzero) positions; ``None`` elsewhere."""
    it = iter(values)
    return [next(it) if f else None for f in flags]


def kept_tangents(
    tangents: Sequence[jax.Array | None], primals: Sequence[Any], flags: Sequence[bool]
) -> list[jax.Array]:
    """The tangents at flagged positions, zeros instantiated (a fixed structure for staging)."""
    return [instantiate(t, p) for t, p, f in zip(tangents, primals, flags, strict=True) if f]


def _bind(prim, args, params):
    return prim.bind(*args, **params)


def zero_rule(prim: jcore.Primitive) -> Callable:
    """Piecewise-constant or integer-valued primitive: the output tangent is zero."""

    def rule(primals, tangents, **params):
        out = _bind(prim, primals, params)
        zero = [None] * len(out) if prim.multiple_results else None
        return out, zero

    rule.__name__ = f"_{prim.name}_zero_jvp"
    return rule


def linear_rule(prim: jcore.Primitive, linear: Sequence[int] | None = None) -> Callable:
    """Primitive linear in the operands at positions ``linear`` (all when ``None``).

    ``out_dot = prim(*args)`` where ``args[i]`` is operand i's tangent (zeros if symbolic) for
    i in ``linear`` and the primal otherwise; zero when every linear operand's tangent is zero.
    """

    def rule(primals, tangents, **params):
        out = _bind(prim, primals, params)
        lin = range(len(primals)) if linear is None else linear
        if all(tangents[i] is None for i in lin if i < len(tangents)):
            zero = [None] * len(out) if prim.multiple_results else None
            return out, zero
        args = [
            instantiate(t, p) if i in lin else p
            for i, (p, t) in enumerate(zip(primals, tangents, strict=True))
        ]
        return out, _bind(prim, args, params)

    rule.__name__ = f"_{prim.name}_linear_jvp"
    return rule


def bilinear_rule(prim: jcore.Primitive) -> Callable:
    """``d prim(x, y) = prim(dx, y) + prim(x, dy)`` with the same parameters (mul, dot, conv).

    Binding ``prim`` itself keeps its parameters (``out_dtype``, ``precision``,
    ``preferred_element_type``) in the tangent computation.
    """

    def rule(primals, tangents, **params):
        x, y = primals
        tx, ty = tangents
        out = _bind(prim, (x, y), params)
        left = None if tx is None else _bind(prim, (tx, y), params)
        right = None if ty is None else _bind(prim, (x, ty), params)
        return out, add_tangents(left, right)

    rule.__name__ = f"_{prim.name}_bilinear_jvp"
    return rule


def unary_rule(prim: jcore.Primitive, deriv: Callable) -> Callable:
    """``y = prim(x)``; ``out_dot = deriv(t, x, y, **params)`` (the chain rule ``t * f'(x)``)."""

    def rule(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        y = _bind(prim, primals, params)
        return y, deriv(t, x, y, **params)

    rule.__name__ = f"_{prim.name}_jvp"
    return rule


def partials_rule(prim: jcore.Primitive, *partials: Callable | NoDerivative) -> Callable:
    """``y = prim(*xs)``; ``out_dot = sum_i partials[i](t_i, *xs, y)`` over non-zero ``t_i``.

    A ``NoDerivative(name)`` partial marks an operand the primitive has no derivative in (the
    order ``m`` of polygamma): a non-zero tangent there raises ``NotDifferentiable``.
    """

    def rule(primals, tangents, **params):
        y = _bind(prim, primals, params)
        terms = []
        for i, (d, t) in enumerate(zip(partials, tangents, strict=True)):
            if t is None:
                continue
            if isinstance(d, NoDerivative):
                raise NotDifferentiable("forward mode", prim.name, d.operand, i)
            terms.append(d(t, *primals, y))
        return y, add_tangents(*terms)

    rule.__name__ = f"_{prim.name}_jvp"
    return rule
