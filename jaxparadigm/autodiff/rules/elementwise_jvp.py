"""JVP rules for elementwise primitives (claim C3.2, forward mode).

Each entry states ``d out = f'(x) dx`` (one partial per operand for n-ary primitives), in the same
algebraic form as ``jax._src.lax`` (our oracle): e.g. ``d(x/y)/dy = -x * y**-2`` with
``integer_pow``, not ``-x / (y*y)``, whose nested derivatives square the denominator again at
every order and overflow float32 by the 6th. Where a derivative is not classical:

* ``abs``: ``d|x| = dx`` where ``x >= 0`` else ``-dx`` (so +1 at 0, as jax's JVP does); for a
  complex intermediate ``d|z| = re(conj(z) dz) / |z|``;
* ``max``/``min``: ties split the tangent 1/2 - 1/2 (``balanced_eq``);
* ``clamp(lo, x, hi)``: x gets ``dx`` strictly inside ``(lo, hi)``, a bound gets its tangent only
  when strictly active (so at ``x == lo`` every tangent is dropped, as in jax);
* ``pow(x, y)``: ``d/dx = y x^(y-1)`` (masked to 0 at ``y == 0`` only for integer ``y``),
  ``d/dy = log(x) x^y`` with ``log(0)`` replaced by 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.extend.core.primitives as P
import jax.numpy as jnp
from jax import lax

from jaxparadigm.autodiff.registry import register_jvp
from jaxparadigm.autodiff.rules.tangents import (
    add_tangents,
    bilinear_rule,
    instantiate,
    linear_rule,
    partials_rule,
    unary_rule,
    zero_rule,
)

__all__ = ["balanced_eq"]

for _p in (
    P.sign_p,
    P.floor_p,
    P.ceil_p,
    P.round_p,
    P.is_finite_p,
    P.eq_p,
    P.ne_p,
    P.lt_p,
    P.le_p,
    P.gt_p,
    P.ge_p,
    P.eq_to_p,
    P.le_to_p,
    P.lt_to_p,
    P.and_p,
    P.or_p,
    P.not_p,
    P.xor_p,
    P.nextafter_p,
    P.stop_gradient_p,
    P.shift_left_p,
    P.shift_right_arithmetic_p,
    P.shift_right_logical_p,
    P.population_count_p,
    P.clz_p,
    P.bitcast_convert_type_p,
    P.iota_p,
):
    register_jvp(_p.name)(zero_rule(_p))

for _p in (P.neg_p, P.copy_p, P.reduce_precision_p, P.real_p, P.imag_p, P.conj_p, P.complex_p):
    register_jvp(_p.name)(linear_rule(_p))

_SQRT_PI = math.sqrt(math.pi)

_UNARY = {
    P.exp_p: lambda t, x, y, **_: t * y,
    P.exp2_p: lambda t, x, y, **_: t * y * math.log(2.0),
    P.expm1_p: lambda t, x, y, **_: t * (y + 1.0),
    P.log_p: lambda t, x, y, **_: t / x,
    P.log1p_p: lambda t, x, y, **_: t / (x + 1.0),
    P.sin_p: lambda t, x, y, **_: t * jnp.cos(x),
    P.cos_p: lambda t, x, y, **_: -t * jnp.sin(x),
    P.tan_p: lambda t, x, y, **_: t * (1.0 + y * y),
    P.asin_p: lambda t, x, y, **_: t * lax.rsqrt(1.0 - x * x),
    P.acos_p: lambda t, x, y, **_: -t * lax.rsqrt(1.0 - x * x),
    P.atan_p: lambda t, x, y, **_: t / (1.0 + x * x),
    P.sinh_p: lambda t, x, y, **_: t * jnp.cosh(x),
    P.cosh_p: lambda t, x, y, **_: t * jnp.sinh(x),
    P.asinh_p: lambda t, x, y, **_: t * lax.rsqrt(x * x + 1.0),
    P.acosh_p: lambda t, x, y, **_: t * lax.rsqrt(x * x - 1.0),
    P.atanh_p: lambda t, x, y, **_: t / (1.0 + x) / (1.0 - x),
    P.tanh_p: lambda t, x, y, **_: (t + t * y) * (1.0 - y),
    P.logistic_p: lambda t, x, y, **_: t * y * (1.0 - y),
    P.sqrt_p: lambda t, x, y, **_: t * 0.5 / y,
    P.rsqrt_p: lambda t, x, y, **_: t * -0.5 * y / x,
    P.cbrt_p: lambda t, x, y, **_: t * ((1.0 / 3.0) * lax.integer_pow(y, -2)),
    P.square_p: lambda t, x, y, **_: t * 2.0 * x,
    P.erf_p: lambda t, x, y, **_: t * (2.0 / _SQRT_PI) * jnp.exp(-x * x),
    P.erfc_p: lambda t, x, y, **_: t * (-2.0 / _SQRT_PI) * jnp.exp(-x * x),
    P.erf_inv_p: lambda t, x, y, **_: t * (_SQRT_PI / 2.0) * jnp.exp(y * y),
    P.lgamma_p: lambda t, x, y, **_: t * lax.digamma(x),
    P.digamma_p: lambda t, x, y, **_: t * lax.polygamma(jnp.ones_like(x), x),
    P.bessel_i0e_p: lambda t, x, y, **_: t * (lax.bessel_i1e(x) - jnp.sign(x) * y),
}
for _p, _d in _UNARY.items():
    register_jvp(_p.name)(unary_rule(_p, _d))


@register_jvp(P.abs_p.name)
def _abs_jvp(primals, tangents, **params):
    """Real x: ``select(x >= 0, t, -t)`` (+1 at 0, as jax). Complex z (an intermediate value):
    ``d|z| = re(conj(z) t) / |z|`` (0/0 -> 0 at z = 0, jax's ``_replace_zero``)."""
    (x,), (t,) = primals, tangents
    y = P.abs_p.bind(x, **params)
    if not jnp.iscomplexobj(x):
        return y, lax.select(x >= 0, t, -t)
    safe = jnp.where(y == 0, jnp.ones_like(y), y)
    return y, jnp.real(jnp.conj(x) * t) / safe


@register_jvp(P.bessel_i1e_p.name)
def _bessel_i1e_jvp(primals, tangents, **params):
    """i1e' = i0e(x) - y (sign(x) + 1/x), and 1/2 at |x| <= eps (jax's safe form)."""
    (x,), (t,) = primals, tangents
    y = P.bessel_i1e_p.bind(x, **params)
    eps = jnp.finfo(jnp.result_type(x)).eps
    not_tiny = jnp.abs(x) > eps
    safe_x = jnp.where(not_tiny, x, eps)
    d = lax.bessel_i0e(safe_x) - y * (jnp.sign(safe_x) + 1.0 / safe_x)
    return y, t * jnp.where(not_tiny, d, 0.5)


@register_jvp(P.integer_pow_p.name)
def _integer_pow_jvp(primals, tangents, *, y):
    """d x^n = n x^(n-1) dx (0 for n == 0)."""
    (x,), (t,) = primals, tangents
    out = P.integer_pow_p.bind(x, y=y)
    if y == 0:
        return out, None
    if y == 1:
        return out, t
    d = x if y == 2 else lax.integer_pow(x, y - 1)
    return out, t * (y * d)


@register_jvp(P.convert_element_type_p.name)
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


def _additive_rule(prim, sign_y: float):
    """x + y (sign_y = 1) or x - y (sign_y = -1): d out = dx + sign_y dy."""

    def rule(primals, tangents, **params):
        tx, ty = tangents
        ty = ty if ty is None or sign_y > 0 else -ty
        return prim.bind(*primals, **params), add_tangents(tx, ty)

    return rule


register_jvp(P.add_p.name)(_additive_rule(P.add_p, 1.0))
register_jvp(P.add_jaxvals_p.name)(_additive_rule(P.add_jaxvals_p, 1.0))
register_jvp(P.sub_p.name)(_additive_rule(P.sub_p, -1.0))
register_jvp(P.mul_p.name)(bilinear_rule(P.mul_p))


def balanced_eq(x: jax.Array, z: jax.Array, y: jax.Array) -> jax.Array:
    """1 where x attains z, halved where y attains it too (jax's tie convention)."""
    dtype = jnp.result_type(z)
    return jnp.where(x == z, 1.0, 0.0).astype(dtype) / jnp.where(y == z, 2.0, 1.0).astype(dtype)


_PARTIALS: dict[Any, tuple[Callable[..., Any] | None, ...]] = {
    P.div_p: (lambda t, x, y, o: t / y, lambda t, x, y, o: (-t * x) * lax.integer_pow(y, -2)),
    P.atan2_p: (
        lambda t, x, y, o: t * y / (x * x + y * y),
        lambda t, x, y, o: -t * x / (x * x + y * y),
    ),
    P.rem_p: (
        lambda t, x, y, o: jnp.broadcast_to(t, jnp.shape(o)),
        lambda t, x, y, o: -t * jnp.sign(x / y) * jnp.floor(jnp.abs(x / y)),
    ),
    P.max_p: (
        lambda t, x, y, o: t * balanced_eq(x, o, y),
        lambda t, x, y, o: t * balanced_eq(y, o, x),
    ),
    P.min_p: (
        lambda t, x, y, o: t * balanced_eq(x, o, y),
        lambda t, x, y, o: t * balanced_eq(y, o, x),
    ),
    P.polygamma_p: (None, lambda t, m, x, o: t * lax.polygamma(m + 1.0, x)),
    P.clamp_p: (
        lambda t, lo, x, hi, o: jnp.where((lo > x) & (lo < hi), t, jnp.zeros_like(o)),
        lambda t, lo, x, hi, o: jnp.where((x > lo) & (x < hi), t, jnp.zeros_like(o)),
        lambda t, lo, x, hi, o: jnp.where(hi < x, t, jnp.zeros_like(o)),
    ),
}
for _p, _ds in _PARTIALS.items():
    register_jvp(_p.name)(partials_rule(_p, *_ds))


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


register_jvp(P.pow_p.name)(partials_rule(P.pow_p, _pow_dx, _pow_dy))


@register_jvp(P.select_n_p.name)
def _select_n_jvp(primals, tangents, **params):
    """select_n(which, *cases): the tangent is the same selection among the cases' tangents."""
    which, *cases = primals
    out = P.select_n_p.bind(which, *cases, **params)
    case_t = tangents[1:]
    if all(t is None for t in case_t):
        return out, None
    return out, P.select_n_p.bind(
        which, *(instantiate(t, c) for t, c in zip(case_t, cases, strict=True))
    )
