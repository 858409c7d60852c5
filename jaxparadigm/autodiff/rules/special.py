"""VJP rules for hyperbolic, inverse trigonometric and special functions, and ``rem`` (C3.2).

Each rule is jax's own JVP formula (``jax/_src/lax/lax.py``, ``special.py``) read as a VJP
(``ct * f'(x)``), written with differentiable ``lax`` ops so it can be differentiated again (C3.3):

    sinh' = cosh         cosh' = sinh          asin' = 1/sqrt(1 - x^2)   acos' = -1/sqrt(1 - x^2)
    atan' = 1/(1 + x^2)  asinh' = 1/sqrt(x^2 + 1)  acosh' = 1/sqrt(x^2 - 1)  atanh' = 1/((1+x)(1-x))
    atan2(x, y): d/dx = y/(x^2 + y^2), d/dy = -x/(x^2 + y^2)
    erf_inv' = sqrt(pi)/2 * exp(erf_inv(x)^2)       lgamma' = digamma    digamma' = polygamma(1, .)
    bessel_i0e' = i1e(x) - sign(x) i0e(x)      bessel_i1e' = i0e(x) - i1e(x) (sign(x) + 1/x) (0.5 at 0)
    rem(x, y) = x - y trunc(x/y): d/dx = 1, d/dy = -trunc(x/y)
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from jax import lax

from jaxparadigm.autodiff.registry import register_vjp
from jaxparadigm.autodiff.unbroadcast import unbroadcast

__all__: list[str] = []


@register_vjp("sinh")
def _sinh_vjp(ct, x, **params):
    return (ct * lax.cosh(x),)


@register_vjp("cosh")
def _cosh_vjp(ct, x, **params):
    return (ct * lax.sinh(x),)


@register_vjp("asin")
def _asin_vjp(ct, x, **params):
    return (ct * lax.rsqrt(1.0 - x * x),)


@register_vjp("acos")
def _acos_vjp(ct, x, **params):
    return (-ct * lax.rsqrt(1.0 - x * x),)


@register_vjp("atan")
def _atan_vjp(ct, x, **params):
    return (ct / (1.0 + x * x),)


@register_vjp("asinh")
def _asinh_vjp(ct, x, **params):
    return (ct * lax.rsqrt(x * x + 1.0),)


@register_vjp("acosh")
def _acosh_vjp(ct, x, **params):
    return (ct * lax.rsqrt(x * x - 1.0),)


@register_vjp("atanh")
def _atanh_vjp(ct, x, **params):
    return (ct / (1.0 + x) / (1.0 - x),)


@register_vjp("atan2")
def _atan2_vjp(ct, x, y, **params):
    """atan2(x, y) = angle of (y, x): d/dx = y / r^2, d/dy = -x / r^2."""
    r2 = x * x + y * y
    return unbroadcast(ct * y / r2, x), unbroadcast(-ct * x / r2, y)


@register_vjp("erf_inv")
def _erf_inv_vjp(ct, x, **params):
    y = lax.erf_inv(x)
    return (ct * (math.sqrt(math.pi) / 2.0) * jnp.exp(y * y),)


@register_vjp("lgamma")
def _lgamma_vjp(ct, x, **params):
    return (ct * lax.digamma(x),)


@register_vjp("digamma")
def _digamma_vjp(ct, x, **params):
    return (ct * lax.polygamma(jnp.ones_like(x), x),)


@register_vjp("polygamma")
def _polygamma_vjp(ct, m, x, **params):
    """d/dx polygamma(m, x) = polygamma(m + 1, x); the order m gets none."""
    return None, ct * lax.polygamma(m + 1.0, x)


@register_vjp("bessel_i0e")
def _bessel_i0e_vjp(ct, x, **params):
    return (ct * (lax.bessel_i1e(x) - jnp.sign(x) * lax.bessel_i0e(x)),)


@register_vjp("bessel_i1e")
def _bessel_i1e_vjp(ct, x, **params):
    """jax's form: the 1/x term is evaluated away from 0 and the limit 0.5 is used at |x| <= eps."""
    eps = jnp.finfo(jnp.result_type(x)).eps
    not_tiny = jnp.abs(x) > eps
    safe_x = jnp.where(not_tiny, x, jnp.full_like(x, eps))
    y = lax.bessel_i1e(safe_x)
    d = lax.bessel_i0e(safe_x) - y * (jnp.sign(safe_x) + 1.0 / safe_x)
    return (ct * jnp.where(not_tiny, d, jnp.full_like(x, 0.5)),)


@register_vjp("rem")
def _rem_vjp(ct, x, y, **params):
    """rem(x, y) = x - y * trunc(x / y) (C's fmod)."""
    q = x / y
    return unbroadcast(ct, x), unbroadcast(-ct * jnp.sign(q) * jnp.floor(jnp.abs(q)), y)
