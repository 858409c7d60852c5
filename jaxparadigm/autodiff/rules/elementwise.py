"""Rules for the arithmetic and identity primitives: add, sub, mul, div, pow, max/min, clamp,
select_n, convert_element_type, copies and barriers (claim C3.2).

Reverse mode: ``rule(ct, *primals, **params) -> tuple of cotangents`` (``None`` = zero), written
with differentiable ``jnp``/``lax`` ops so that a backward pass can itself be differentiated
(claim C3.3). A jaxpr may combine a rank-0 literal with an array (``mul 0.5:f32[] x``), so binary
rules reduce the cotangent back to each operand's shape (``unbroadcast``).

Forward mode, in the same algebraic form as ``jax._src.lax`` (our oracle): e.g.
``d(x/y)/dy = -x * y**-2`` with ``integer_pow``, not ``-x / (y*y)``, whose nested derivatives
square the denominator again at every order and overflow float32 by the 6th. Where a derivative
is not classical:

* ``max``/``min``: ties split the tangent (and the cotangent) 1/2 - 1/2 (``balanced_eq``);
* ``clamp(lo, x, hi)``: x gets ``dx`` strictly inside ``(lo, hi)``, a bound gets its tangent only
  when strictly active (so at ``x == lo`` every tangent is dropped, as in jax);
* ``pow(x, y)``: ``d/dx = y x^(y-1)`` (masked to 0 at ``y == 0`` only for integer ``y``),
  ``d/dy = log(x) x^y`` with ``log(0)`` replaced by 0.

Complex numbers follow jax's convention: a rule is the transpose of its (complex-linear) JVP
with no conjugate, so holomorphic rules read as for real numbers (``ct * f'(z)``); the
non-holomorphic ``real``/``imag``/``conj``/``complex`` transpose to ``ct + 0i``, ``-i ct``,
``conj ct`` and ``(re ct, -im ct)``: for a real ``L`` of ``z = x + iy`` the cotangent of ``z`` is
``dL/dx - i dL/dy`` (jax.grad's value; torch's is its conjugate). Functions of one argument
(exp, log, sin, ...): ``elementary.py``; special functions: ``special.py``; primitives with a
zero derivative: ``zero_derivative.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.extend.core.primitives as P
import jax.numpy as jnp
from jax import lax
from jax._src.lax.lax import optimization_barrier_p

from jaxparadigm.autodiff.registry import register_jvp, register_vjp
from jaxparadigm.autodiff.rules.tangents import (
    add_tangents,
    bilinear_rule,
    instantiate,
    linear_rule,
    partials_rule,
)
from jaxparadigm.autodiff.unbroadcast import unbroadcast

__all__ = ["balanced_eq", "unbroadcast"]


@register_vjp(P.add_p, P.add_jaxvals_p)
def _add_vjp(ct, x, y, **params):
    return unbroadcast(ct, x), unbroadcast(ct, y)


@register_vjp(P.sub_p)
def _sub_vjp(ct, x, y, **params):
    return unbroadcast(ct, x), unbroadcast(-ct, y)


def _additive_rule(prim, sign_y: float):
    """x + y (sign_y = 1) or x - y (sign_y = -1): d out = dx + sign_y dy."""

    def rule(primals, tangents, **params):
        tx, ty = tangents
        ty = ty if ty is None or sign_y > 0 else -ty
        return prim.bind(*primals, **params), add_tangents(tx, ty)

    return rule


register_jvp(P.add_p)(_additive_rule(P.add_p, 1.0))
register_jvp(P.add_jaxvals_p)(_additive_rule(P.add_jaxvals_p, 1.0))
register_jvp(P.sub_p)(_additive_rule(P.sub_p, -1.0))


@register_vjp(P.mul_p)
def _mul_vjp(ct, x, y, **params):
    return unbroadcast(ct * y, x), unbroadcast(ct * x, y)


register_jvp(P.mul_p)(bilinear_rule(P.mul_p))


@register_vjp(P.div_p)
def _div_vjp(ct, x, y, **params):
    """d(x/y) = dx / y - x dy y**-2, with ``integer_pow(y, -2)`` as jax writes it.

    Repeated differentiation then stays polynomial in y (``/ (y * y)`` would square y at every
    order and overflow float32 by the 6th derivative of 1/x at x = 4: jax's
    testHigherOrderGradientOfReciprocal).
    """
    return unbroadcast(ct / y, x), unbroadcast(-ct * x * lax.integer_pow(y, -2), y)


@register_vjp(P.neg_p)
def _neg_vjp(ct, x, **params):
    return (-ct,)


# "copy_p": copy_p's legacy name (older jax), kept as an alias.
@register_vjp(P.copy_p, "copy_p", P.reduce_precision_p)
def _identity_vjp(ct, x, **params):
    return (ct,)


for _p in (P.neg_p, P.copy_p, P.reduce_precision_p, P.sharding_constraint_p, P.device_put_p):
    register_jvp(_p)(linear_rule(_p))


@register_vjp(optimization_barrier_p, P.device_put_p)
def _optimization_barrier_vjp(cts, *xs, **params):
    """An identity on each of its operands (a barrier, a device placement): cotangents pass
    through unchanged."""
    return tuple(cts)


@register_vjp(P.sharding_constraint_p)
def _sharding_constraint_vjp(ct, x, **params):
    """A layout annotation: the value is unchanged, so is its cotangent."""
    return (ct,)


@register_jvp(optimization_barrier_p)
def _optimization_barrier_jvp(primals, tangents, **params):
    """The barrier only orders computation: tangents pass through unchanged."""
    return list(optimization_barrier_p.bind(*primals, **params)), list(tangents)


@register_vjp(P.pow_p)
def _pow_vjp(ct, x, y, **params):
    """d/dx x**y = y x**(y-1); d/dy x**y = log(x) x**y, as jax's ``pow`` JVP (our oracle).

    For d/dx the base is replaced by 1 where ``x == 0 and y == 0``, so ``grad(pow)(0.0, 0.0)`` is
    ``0 * 1**-1 = 0`` where jax gives ``0 * 0**-1 = nan``: our one deliberate difference
    (pinned by ``test_pow_zero_to_the_zero_differs_from_jax``). The mask is on the base, not on
    the value: ``y * x**(y-1)`` keeps its y-derivative ``x**(y-1) = 1/x`` at y == 0 (the mixed
    second derivative jax's ``testPowSecondDerivative`` checks). An integer ``y`` gets no
    cotangent and ``y * x**(y-1)`` is 0 where ``y == 0`` (jax's integer-exponent rule).
    For d/dy, log(x) is replaced by 0 where x == 0, exactly as jax does: 0 for y >= 0,
    ``0 * inf = nan`` for y < 0. (PyTorch masks only ``x == 0 & y >= 0`` and gives -inf there;
    the PyTorch-style tape follows that, see ``tape.formulas.pow_backward``.)
    """
    dtype = jnp.result_type(x, y)
    yf = jnp.asarray(y).astype(dtype)
    if jnp.issubdtype(jnp.result_type(y), jnp.integer):
        safe_y = jnp.where(yf == 0, jnp.ones_like(yf), yf)
        dx = jnp.where(yf == 0, jnp.zeros_like(ct), ct * safe_y * jnp.power(x, safe_y - 1))
        return unbroadcast(dx, x), None
    safe_base = jnp.where((x == 0) & (yf == 0), jnp.ones_like(x), x)
    dx = ct * yf * jnp.power(safe_base, yf - 1)
    safe_x = jnp.where(x == 0, jnp.ones_like(x), x)
    dy = ct * jnp.log(safe_x) * jnp.power(x, yf)
    return unbroadcast(dx, x), unbroadcast(dy, y)


def _pow_dx(t, x, y, out):
    if jnp.issubdtype(jnp.result_type(y), jnp.integer):
        yf = jnp.asarray(y).astype(jnp.result_type(x))
        safe = jnp.where(y == 0, jnp.ones_like(yf), yf)
        jac = jnp.where(y == 0, jnp.zeros_like(yf), safe * jnp.power(x, safe - 1.0))
    else:
        jac = y * jnp.power(x, y - 1.0)
    return t * jac


def _pow_dy(t, x, y, out):
    safe_x = jnp.where(x == 0, jnp.ones_like(x), x)
    return t * jnp.log(safe_x) * out


register_jvp(P.pow_p)(partials_rule(P.pow_p, _pow_dx, _pow_dy))


def balanced_eq(x: jax.Array, z: jax.Array, y: jax.Array) -> jax.Array:
    """1 where x attains z, halved where y attains it too (jax's tie convention)."""
    dtype = jnp.result_type(z)
    return jnp.where(x == z, 1.0, 0.0).astype(dtype) / jnp.where(y == z, 2.0, 1.0).astype(dtype)


def _select_max_min(ct, x, y, x_wins):
    """Cotangent split of max/min: the winner gets ct, ties split it 1/2 - 1/2 (as jax does)."""
    tie = (x == y).astype(ct.dtype)
    wx = x_wins.astype(ct.dtype) + 0.5 * tie
    wy = 1.0 - wx
    return unbroadcast(ct * wx, x), unbroadcast(ct * wy, y)


@register_vjp(P.max_p)
def _max_vjp(ct, x, y, **params):
    return _select_max_min(ct, x, y, x > y)


@register_vjp(P.min_p)
def _min_vjp(ct, x, y, **params):
    return _select_max_min(ct, x, y, x < y)


@register_vjp(P.clamp_p)
def _clamp_vjp(ct, lo, x, hi, **params):
    """clamp(lo, x, hi), jax's convention (strict inequalities, so a tie passes no cotangent):
    x gets ct where lo < x < hi, lo where lo > x (and lo < hi), hi where hi < x."""
    z = jnp.zeros_like(ct)
    return (
        unbroadcast(jnp.where((lo > x) & (lo < hi), ct, z), lo),
        unbroadcast(jnp.where((x > lo) & (x < hi), ct, z), x),
        unbroadcast(jnp.where(hi < x, ct, z), hi),
    )


_PARTIALS: dict[Any, tuple[Callable[..., Any], ...]] = {
    P.div_p: (lambda t, x, y, o: t / y, lambda t, x, y, o: (-t * x) * lax.integer_pow(y, -2)),
    P.max_p: (
        lambda t, x, y, o: t * balanced_eq(x, o, y),
        lambda t, x, y, o: t * balanced_eq(y, o, x),
    ),
    P.min_p: (
        lambda t, x, y, o: t * balanced_eq(x, o, y),
        lambda t, x, y, o: t * balanced_eq(y, o, x),
    ),
    P.clamp_p: (
        lambda t, lo, x, hi, o: jnp.where((lo > x) & (lo < hi), t, jnp.zeros_like(o)),
        lambda t, lo, x, hi, o: jnp.where((x > lo) & (x < hi), t, jnp.zeros_like(o)),
        lambda t, lo, x, hi, o: jnp.where(hi < x, t, jnp.zeros_like(o)),
    ),
}
for _p, _ds in _PARTIALS.items():
    register_jvp(_p)(partials_rule(_p, *_ds))


@register_vjp(P.select_n_p)
def _select_n_vjp(ct, which, *cases, **params):
    """``select_n(which, *cases)``: case i receives ct where ``which == i``; ``which`` gets none."""
    zeros = jnp.zeros_like(ct)
    if jnp.shape(which) != ct.shape:
        which = jnp.broadcast_to(which, ct.shape)
    out: list[jax.Array | None] = [None]
    for i, case in enumerate(cases):
        picked = [zeros] * len(cases)
        picked[i] = ct
        out.append(unbroadcast(lax.select_n(which, *picked), case))
    return tuple(out)


@register_jvp(P.select_n_p)
def _select_n_jvp(primals, tangents, **params):
    """``select_n(which, *cases)``: the tangent is the same selection among the cases' tangents."""
    which, *cases = primals
    out = P.select_n_p.bind(which, *cases, **params)
    case_t = tangents[1:]
    if all(t is None for t in case_t):
        return out, None
    return out, P.select_n_p.bind(
        which, *(instantiate(t, c) for t, c in zip(case_t, cases, strict=True))
    )


@register_vjp(P.convert_element_type_p)
def _convert_element_type_vjp(ct, x, **params):
    dtype = jnp.result_type(x)
    if not jnp.issubdtype(dtype, jnp.inexact):
        return (None,)
    if jnp.iscomplexobj(ct) and not jnp.issubdtype(dtype, jnp.complexfloating):
        ct = jnp.real(ct)  # real -> complex: the transpose keeps the real part (as jax)
    return (ct.astype(dtype),)


@register_jvp(P.convert_element_type_p)
def _convert_element_type_jvp(primals, tangents, *, new_dtype, weak_type, sharding):
    """Linear into a float dtype; a zero tangent into an integer/bool dtype."""
    (x,), (t,) = primals, tangents
    out = P.convert_element_type_p.bind(
        x, new_dtype=new_dtype, weak_type=weak_type, sharding=sharding
    )
    if not jnp.issubdtype(new_dtype, jnp.inexact):
        return out, None
    return out, P.convert_element_type_p.bind(
        t, new_dtype=new_dtype, weak_type=weak_type, sharding=sharding
    )


def _complex_of(re, im):
    """``re + i im`` for a real ``re`` and ``im`` (a real-valued cotangent and zeros)."""
    return lax.complex(re, im)


@register_vjp(P.real_p)
def _real_vjp(ct, x, **params):
    """``re`` is linear; its transpose in jax's convention is ``ct -> ct + 0i``."""
    return (_complex_of(ct, jnp.zeros_like(ct)),)


@register_vjp(P.imag_p)
def _imag_vjp(ct, x, **params):
    """``im(z)``: the transpose is ``ct -> -i ct`` (jax: ``complex(0, -ct)``), so that a real
    loss's cotangent is ``dL/dx - i dL/dy``."""
    return (_complex_of(jnp.zeros_like(ct), -ct),)


@register_vjp(P.complex_p)
def _complex_vjp(ct, x, y, **params):
    """``complex(x, y) = x + i y``: the transpose of ``(dx, dy) -> dx + i dy`` is
    ``ct -> (re ct, -im ct)`` (jax's ``complex_p`` transpose)."""
    return unbroadcast(jnp.real(ct), x), unbroadcast(-jnp.imag(ct), y)


@register_vjp(P.conj_p)
def _conj_vjp(ct, x, *, input_dtype, **params):
    """``conj`` is its own transpose, ``ct -> conj(ct)``; on a real input (jnp.conj of a float
    under a complex output) the cotangent is ``re ct``, as jax's ``_conj_transpose_rule``."""
    if jnp.issubdtype(input_dtype, jnp.complexfloating):
        return (jnp.conj(ct),)
    return (jnp.real(ct),)


for _p in (P.real_p, P.imag_p, P.conj_p, P.complex_p):
    register_jvp(_p)(linear_rule(_p))
