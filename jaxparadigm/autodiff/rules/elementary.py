"""Rules for the elementary functions of one argument: exp, log, trigonometric, tanh, logistic,
erf, roots, powers and ``abs`` (claim C3.2).

Reverse mode: ``rule(ct, x) = (ct * f'(x),)``; forward mode: ``d out = f'(x) dx``
(``tangents.unary_rule``, where ``f'`` may use the output ``y``), in jax's algebraic form:

    exp' = y   exp2' = y log 2   expm1' = y + 1   log' = 1/x   log1p' = 1/(1 + x)
    sin' = cos   cos' = -sin   tan' = 1 + tan^2   tanh' = 1 - tanh^2   logistic' = s (1 - s)
    erf' = 2/sqrt(pi) exp(-x^2)   erfc' = -erf'   sqrt' = 1/(2 y)   rsqrt' = -y/(2 x)
    cbrt' = 1/(3 y^2)   square' = 2x   integer_pow(x, n)' = n x^(n-1) (0 for n == 0)

``abs``: ``d|x| = dx`` where ``x >= 0`` else ``-dx`` (so +1 at 0, as jax); for a complex
value ``d|z| = re(conj(z) dz) / |z|`` and, transposed, ``ct_z = ct conj(z) / |z|`` (jax's rule;
``|z|`` replaced by 1 where it is 0). Holomorphic functions need nothing more for complex values:
jax's cotangent convention is the plain transpose, ``ct * f'(z)``.
"""

from __future__ import annotations

import math

import jax.extend.core.primitives as P
import jax.numpy as jnp
from jax import lax

from jaxparadigm.autodiff.registry import register_jvp, register_vjp
from jaxparadigm.autodiff.rules.tangents import unary_rule

__all__: list[str] = []

_SQRT_PI = math.sqrt(math.pi)


@register_vjp(P.exp_p)
def _exp_vjp(ct, x, **params):
    return (ct * jnp.exp(x),)


@register_vjp(P.exp2_p)
def _exp2_vjp(ct, x, **params):
    return (ct * jnp.exp2(x) * math.log(2.0),)


@register_vjp(P.expm1_p)
def _expm1_vjp(ct, x, **params):
    return (ct * (jnp.expm1(x) + 1.0),)


@register_vjp(P.log_p)
def _log_vjp(ct, x, **params):
    return (ct / x,)


@register_vjp(P.log1p_p)
def _log1p_vjp(ct, x, **params):
    return (ct / (1.0 + x),)


@register_vjp(P.sin_p)
def _sin_vjp(ct, x, **params):
    return (ct * jnp.cos(x),)


@register_vjp(P.cos_p)
def _cos_vjp(ct, x, **params):
    return (-ct * jnp.sin(x),)


@register_vjp(P.tan_p)
def _tan_vjp(ct, x, **params):
    t = jnp.tan(x)
    return (ct * (1.0 + t * t),)


@register_vjp(P.tanh_p)
def _tanh_vjp(ct, x, **params):
    t = jnp.tanh(x)
    return (ct * (1.0 - t * t),)


@register_vjp(P.logistic_p)
def _logistic_vjp(ct, x, **params):
    s = lax.logistic(x)
    return (ct * s * (1.0 - s),)


@register_vjp(P.erf_p)
def _erf_vjp(ct, x, **params):
    return (ct * (2.0 / math.sqrt(math.pi)) * jnp.exp(-x * x),)


@register_vjp(P.erfc_p)
def _erfc_vjp(ct, x, **params):
    return (ct * (-2.0 / math.sqrt(math.pi)) * jnp.exp(-x * x),)


@register_vjp(P.sqrt_p)
def _sqrt_vjp(ct, x, **params):
    return (ct * 0.5 / jnp.sqrt(x),)


@register_vjp(P.rsqrt_p)
def _rsqrt_vjp(ct, x, **params):
    return (ct * -0.5 * lax.rsqrt(x) / x,)


@register_vjp(P.cbrt_p)
def _cbrt_vjp(ct, x, **params):
    """``ct / 3 * y^-2`` as jax writes it: ``integer_pow(y, -2)`` is 0 at +-inf and its own
    derivative ``-2 y^-3`` stays finite there, so the second derivative is -+0 (not NaN)."""
    return (ct * ((1.0 / 3.0) * lax.integer_pow(jnp.cbrt(x), -2)),)


@register_vjp(P.square_p)
def _square_vjp(ct, x, **params):
    return (ct * 2.0 * x,)


_UNARY = {
    P.exp_p: lambda t, x, y, **_: t * y,
    P.exp2_p: lambda t, x, y, **_: t * y * math.log(2.0),
    P.expm1_p: lambda t, x, y, **_: t * (y + 1.0),
    P.log_p: lambda t, x, y, **_: t / x,
    P.log1p_p: lambda t, x, y, **_: t / (x + 1.0),
    P.sin_p: lambda t, x, y, **_: t * jnp.cos(x),
    P.cos_p: lambda t, x, y, **_: -t * jnp.sin(x),
    P.tan_p: lambda t, x, y, **_: t * (1.0 + y * y),
    P.tanh_p: lambda t, x, y, **_: (t + t * y) * (1.0 - y),
    P.logistic_p: lambda t, x, y, **_: t * y * (1.0 - y),
    P.sqrt_p: lambda t, x, y, **_: t * 0.5 / y,
    P.rsqrt_p: lambda t, x, y, **_: t * -0.5 * y / x,
    P.cbrt_p: lambda t, x, y, **_: t * ((1.0 / 3.0) * lax.integer_pow(y, -2)),
    P.square_p: lambda t, x, y, **_: t * 2.0 * x,
    P.erf_p: lambda t, x, y, **_: t * (2.0 / _SQRT_PI) * jnp.exp(-x * x),
    P.erfc_p: lambda t, x, y, **_: t * (-2.0 / _SQRT_PI) * jnp.exp(-x * x),
}
for _p, _d in _UNARY.items():
    register_jvp(_p)(unary_rule(_p, _d))


@register_vjp(P.abs_p)
def _abs_vjp(ct, x, **params):
    """d|x|/dx = 1 for x >= 0, -1 for x < 0: jax's convention, so grad(abs)(0.0) == 1.0.

    (PyTorch's ``sign(x)`` gives 0 at x == 0; the PyTorch-style tape has no ``abs``.)
    """
    if jnp.iscomplexobj(x):
        # the transpose of t -> re(conj(z) t) / |z| is ct -> ct conj(z) / |z| (0 at z = 0)
        y = jnp.abs(x)
        safe = jnp.where(y == 0, jnp.ones_like(y), y)
        return (ct * (jnp.conj(x) / safe),)
    return (jnp.where(x >= 0, ct, -ct),)


@register_jvp(P.abs_p)
def _abs_jvp(primals, tangents, **params):
    """Real x: ``select(x >= 0, t, -t)`` (+1 at 0, as jax). Complex z (an intermediate value):
    ``d|z| = re(conj(z) t) / |z|`` (0/0 -> 0 at z = 0, jax's ``_replace_zero``)."""
    (x,), (t,) = primals, tangents
    y = P.abs_p.bind(x, **params)
    if not jnp.iscomplexobj(x):
        return y, lax.select(x >= 0, t, -t)
    safe = jnp.where(y == 0, jnp.ones_like(y), y)
    return y, jnp.real(jnp.conj(x) * t) / safe


@register_vjp(P.integer_pow_p)
def _integer_pow_vjp(ct, x, *, y, **params):
    """d/dx x**n = n x**(n-1)."""
    if y == 0:
        return (None,)
    d = x if y == 2 else (jnp.ones_like(x) if y == 1 else lax.integer_pow(x, y - 1))
    return (ct * (y * d),)


@register_jvp(P.integer_pow_p)
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
