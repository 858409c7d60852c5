"""Rules for hyperbolic, inverse trigonometric and special functions, and ``rem`` (C3.2).

Each JVP rule is jax's own formula (``jax/_src/lax/lax.py``, ``special.py``), ``t * f'(x)``; each
VJP rule is the same formula read as a VJP (``ct * f'(x)``), written with differentiable ``lax`` ops
so it can be differentiated again (C3.3)::

    sinh' = cosh         cosh' = sinh          asin' = 1/sqrt(1 - x^2)   acos' = -1/sqrt(1 - x^2)
    atan' = 1/(1 + x^2)  asinh' = 1/sqrt(x^2 + 1)  acosh' = 1/sqrt(x^2 - 1)  atanh' = 1/((1+x)(1-x))
    atan2(x, y): d/dx = y/(x^2 + y^2), d/dy = -x/(x^2 + y^2)
    erf_inv' = sqrt(pi)/2 * exp(erf_inv(x)^2)       lgamma' = digamma    digamma' = polygamma(1, .)
    bessel_i0e' = i1e(x) - sign(x) i0e(x)
    bessel_i1e' = i0e(x) - i1e(x) (sign(x) + 1/x) (0.5 at 0)
    rem(x, y) = x - y trunc(x/y): d/dx = 1, d/dy = -trunc(x/y)"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax.extend.core.primitives as P
import jax.numpy as jnp
from jax import lax

from jaxparadigm.autodiff.registry import NoDerivative, register_jvp, register_vjp
from jaxparadigm.autodiff.rules.tangents import partials_rule, unary_rule
from jaxparadigm.autodiff.unbroadcast import unbroadcast

__all__: list[str] = []

_SQRT_PI = math.sqrt(math.pi)


@register_vjp(P.sinh_p)
def _sinh_vjp(ct, x, **params):
    return (ct * lax.cosh(x),)


@register_vjp(P.cosh_p)
def _cosh_vjp(ct, x, **params):
    return (ct * lax.sinh(x),)


@register_vjp(P.asin_p)
def _asin_vjp(ct, x, **params):
    return (ct * lax.rsqrt(1.0 - x * x),)


@register_vjp(P.acos_p)
def _acos_vjp(ct, x, **params):
    return (-ct * lax.rsqrt(1.0 - x * x),)


@register_vjp(P.atan_p)
def _atan_vjp(ct, x, **params):
    return (ct / (1.0 + x * x),)


@register_vjp(P.asinh_p)
def _asinh_vjp(ct, x, **params):
    return (ct * lax.rsqrt(x * x + 1.0),)


@register_vjp(P.acosh_p)
def _acosh_vjp(ct, x, **params):
    return (ct * lax.rsqrt(x * x - 1.0),)


@register_vjp(P.atanh_p)
def _atanh_vjp(ct, x, **params):
    return (ct / (1.0 + x) / (1.0 - x),)


@register_vjp(P.atan2_p)
def _atan2_vjp(ct, x, y, **params):
    """atan2(x, y) = angle of (y, x): d/dx = y / r^2, d/dy = -x / r^2."""
    r2 = x * x + y * y
    return unbroadcast(ct * y / r2, x), unbroadcast(-ct * x / r2, y)


@register_vjp(P.erf_inv_p)
def _erf_inv_vjp(ct, x, **params):
    y = lax.erf_inv(x)
    return (ct * (math.sqrt(math.pi) / 2.0) * jnp.exp(y * y),)


@register_vjp(P.lgamma_p)
def _lgamma_vjp(ct, x, **params):
    return (ct * lax.digamma(x),)


@register_vjp(P.digamma_p)
def _digamma_vjp(ct, x, **params):
    return (ct * lax.polygamma(jnp.ones_like(x), x),)


@register_vjp(P.polygamma_p)
def _polygamma_vjp(ct, m, x, **params):
    """d/dx polygamma(m, x) = polygamma(m + 1, x); none in the order m (jax refuses it too)."""
    return NoDerivative("m"), ct * lax.polygamma(m + 1.0, x)


@register_vjp(P.bessel_i0e_p)
def _bessel_i0e_vjp(ct, x, **params):
    return (ct * (lax.bessel_i1e(x) - jnp.sign(x) * lax.bessel_i0e(x)),)


@register_vjp(P.bessel_i1e_p)
def _bessel_i1e_vjp(ct, x, **params):
    """jax's form: the 1/x term is evaluated away from 0, the limit 0.5 used at ``|x| <= eps``."""
    eps = jnp.finfo(jnp.result_type(x)).eps
    not_tiny = jnp.abs(x) > eps
    safe_x = jnp.where(not_tiny, x, jnp.full_like(x, eps))
    y = lax.bessel_i1e(safe_x)
    d = lax.bessel_i0e(safe_x) - y * (jnp.sign(safe_x) + 1.0 / safe_x)
    return (ct * jnp.where(not_tiny, d, jnp.full_like(x, 0.5)),)


@register_vjp(P.rem_p)
def _rem_vjp(ct, x, y, **params):
    """rem(x, y) = x - y * trunc(x / y) (C's fmod)."""
    q = x / y
    return unbroadcast(ct, x), unbroadcast(-ct * jnp.sign(q) * jnp.floor(jnp.abs(q)), y)


_UNARY = {
    P.sinh_p: lambda t, x, y, **_: t * jnp.cosh(x),
    P.cosh_p: lambda t, x, y, **_: t * jnp.sinh(x),
    P.asin_p: lambda t, x, y, **_: t * lax.rsqrt(1.0 - x * x),
    P.acos_p: lambda t, x, y, **_: -t * lax.rsqrt(1.0 - x * x),
    P.atan_p: lambda t, x, y, **_: t / (1.0 + x * x),
    P.asinh_p: lambda t, x, y, **_: t * lax.rsqrt(x * x + 1.0),
    P.acosh_p: lambda t, x, y, **_: t * lax.rsqrt(x * x - 1.0),
    P.atanh_p: lambda t, x, y, **_: t / (1.0 + x) / (1.0 - x),
    P.erf_inv_p: lambda t, x, y, **_: t * (_SQRT_PI / 2.0) * jnp.exp(y * y),
    P.lgamma_p: lambda t, x, y, **_: t * lax.digamma(x),
    P.digamma_p: lambda t, x, y, **_: t * lax.polygamma(jnp.ones_like(x), x),
    P.bessel_i0e_p: lambda t, x, y, **_: t * (lax.bessel_i1e(x) - jnp.sign(x) * y),
}
for _p, _d in _UNARY.items():
    register_jvp(_p)(unary_rule(_p, _d))


@register_jvp(P.bessel_i1e_p)
def _bessel_i1e_jvp(primals, tangents, **params):
    """i1e' = i0e(x) - y (sign(x) + 1/x), and 1/2 at ``|x| <= eps`` (jax's safe form)."""
    (x,), (t,) = primals, tangents
    y = P.bessel_i1e_p.bind(x, **params)
    eps = jnp.finfo(jnp.result_type(x)).eps
    not_tiny = jnp.abs(x) > eps
    safe_x = jnp.where(not_tiny, x, eps)
    d = lax.bessel_i0e(safe_x) - y * (jnp.sign(safe_x) + 1.0 / safe_x)
    return y, t * jnp.where(not_tiny, d, 0.5)


_PARTIALS: dict[Any, tuple[Callable[..., Any] | NoDerivative, ...]] = {
    P.atan2_p: (
        lambda t, x, y, o: t * y / (x * x + y * y),
        lambda t, x, y, o: -t * x / (x * x + y * y),
    ),
    P.rem_p: (
        lambda t, x, y, o: jnp.broadcast_to(t, jnp.shape(o)),
        lambda t, x, y, o: -t * jnp.sign(x / y) * jnp.floor(jnp.abs(x / y)),
    ),
    P.polygamma_p: (NoDerivative("m"), lambda t, m, x, o: t * lax.polygamma(m + 1.0, x)),
}
for _p, _ds in _PARTIALS.items():
    register_jvp(_p)(partials_rule(_p, *_ds))
