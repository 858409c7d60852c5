"""VJP rules for elementwise primitives (claim C3.2).

Each rule is ``rule(ct, *primals, **params) -> tuple of cotangents`` (``None`` = zero) and is
written with differentiable ``jnp``/``lax`` ops so that a backward pass can itself be
differentiated (claim C3.3). A jaxpr may combine a rank-0 literal with an array
(``mul 0.5:f32[] x``), so binary rules reduce the cotangent back to each operand's shape.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

from jaxparadigm.autodiff.complex_refusal import COMPLEX_REFUSED
from jaxparadigm.autodiff.registry import register_vjp
from jaxparadigm.autodiff.unbroadcast import unbroadcast

__all__ = ["unbroadcast"]


def _zero_rule(ct, *primals, **params):
    """Piecewise-constant or gradient-blocking ops: every cotangent is zero."""
    del ct, params
    return (None,) * len(primals)


for _name in (
    "stop_gradient",
    "sign",
    "floor",
    "ceil",
    "round",
    "is_finite",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "and",
    "or",
    "not",
    "xor",
    "argmax",
    "argmin",
    "nextafter",
):
    register_vjp(_name)(_zero_rule)


@register_vjp("add", "add_any")
def _add_vjp(ct, x, y, **params):
    return unbroadcast(ct, x), unbroadcast(ct, y)


@register_vjp("sub")
def _sub_vjp(ct, x, y, **params):
    return unbroadcast(ct, x), unbroadcast(-ct, y)


@register_vjp("mul")
def _mul_vjp(ct, x, y, **params):
    return unbroadcast(ct * y, x), unbroadcast(ct * x, y)


@register_vjp("div")
def _div_vjp(ct, x, y, **params):
    """d(x/y) = dx / y - x dy y**-2, with ``integer_pow(y, -2)`` as jax writes it: repeated
    differentiation then stays polynomial in y (``/ (y * y)`` would square y at every order and
    overflow float32 by the 6th derivative of 1/x at x = 4: jax's testHigherOrderGradientOfReciprocal)."""
    return unbroadcast(ct / y, x), unbroadcast(-ct * x * lax.integer_pow(y, -2), y)


@register_vjp("neg")
def _neg_vjp(ct, x, **params):
    return (-ct,)


@register_vjp("copy", "copy_p", "reduce_precision")
def _identity_vjp(ct, x, **params):
    return (ct,)


@register_vjp("optimization_barrier", "device_put")
def _optimization_barrier_vjp(cts, *xs, **params):
    """An identity on each of its operands (a barrier, a device placement): cotangents pass
    through unchanged."""
    return tuple(cts)


@register_vjp("sharding_constraint")
def _sharding_constraint_vjp(ct, x, **params):
    """A layout annotation: the value is unchanged, so is its cotangent."""
    return (ct,)


@register_vjp("exp")
def _exp_vjp(ct, x, **params):
    return (ct * jnp.exp(x),)


@register_vjp("exp2")
def _exp2_vjp(ct, x, **params):
    return (ct * jnp.exp2(x) * math.log(2.0),)


@register_vjp("expm1")
def _expm1_vjp(ct, x, **params):
    return (ct * (jnp.expm1(x) + 1.0),)


@register_vjp("log")
def _log_vjp(ct, x, **params):
    return (ct / x,)


@register_vjp("log1p")
def _log1p_vjp(ct, x, **params):
    return (ct / (1.0 + x),)


@register_vjp("sin")
def _sin_vjp(ct, x, **params):
    return (ct * jnp.cos(x),)


@register_vjp("cos")
def _cos_vjp(ct, x, **params):
    return (-ct * jnp.sin(x),)


@register_vjp("tan")
def _tan_vjp(ct, x, **params):
    t = jnp.tan(x)
    return (ct * (1.0 + t * t),)


@register_vjp("tanh")
def _tanh_vjp(ct, x, **params):
    t = jnp.tanh(x)
    return (ct * (1.0 - t * t),)


@register_vjp("logistic")
def _logistic_vjp(ct, x, **params):
    s = lax.logistic(x)
    return (ct * s * (1.0 - s),)


@register_vjp("erf")
def _erf_vjp(ct, x, **params):
    return (ct * (2.0 / math.sqrt(math.pi)) * jnp.exp(-x * x),)


@register_vjp("erfc")
def _erfc_vjp(ct, x, **params):
    return (ct * (-2.0 / math.sqrt(math.pi)) * jnp.exp(-x * x),)


@register_vjp("sqrt")
def _sqrt_vjp(ct, x, **params):
    return (ct * 0.5 / jnp.sqrt(x),)


@register_vjp("rsqrt")
def _rsqrt_vjp(ct, x, **params):
    return (ct * -0.5 * lax.rsqrt(x) / x,)


@register_vjp("cbrt")
def _cbrt_vjp(ct, x, **params):
    c = jnp.cbrt(x)
    return (ct / (3.0 * c * c),)


@register_vjp("abs")
def _abs_vjp(ct, x, **params):
    """d|x|/dx = 1 for x >= 0, -1 for x < 0: jax's convention, so grad(abs)(0.0) == 1.0.

    (PyTorch's ``sign(x)`` gives 0 at x == 0; the PyTorch-style tape has no ``abs``.)
    """
    return (jnp.where(x >= 0, ct, -ct),)


@register_vjp("square")
def _square_vjp(ct, x, **params):
    return (ct * 2.0 * x,)


@register_vjp("integer_pow")
def _integer_pow_vjp(ct, x, *, y, **params):
    """d/dx x**n = n x**(n-1)."""
    if y == 0:
        return (None,)
    d = x if y == 2 else (jnp.ones_like(x) if y == 1 else lax.integer_pow(x, y - 1))
    return (ct * (y * d),)


@register_vjp("pow")
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


def _select_max_min(ct, x, y, x_wins):
    """Cotangent split of max/min: the winner gets ct, ties split it 1/2 - 1/2 (as jax does)."""
    tie = (x == y).astype(ct.dtype)
    wx = x_wins.astype(ct.dtype) + 0.5 * tie
    wy = 1.0 - wx
    return unbroadcast(ct * wx, x), unbroadcast(ct * wy, y)


@register_vjp("max")
def _max_vjp(ct, x, y, **params):
    return _select_max_min(ct, x, y, x > y)


@register_vjp("min")
def _min_vjp(ct, x, y, **params):
    return _select_max_min(ct, x, y, x < y)


@register_vjp("clamp")
def _clamp_vjp(ct, lo, x, hi, **params):
    """clamp(lo, x, hi), jax's convention (strict inequalities, so a tie passes no cotangent):
    x gets ct where lo < x < hi, lo where lo > x (and lo < hi), hi where hi < x."""
    z = jnp.zeros_like(ct)
    return (
        unbroadcast(jnp.where((lo > x) & (lo < hi), ct, z), lo),
        unbroadcast(jnp.where((x > lo) & (x < hi), ct, z), x),
        unbroadcast(jnp.where(hi < x, ct, z), hi),
    )


@register_vjp("select_n")
def _select_n_vjp(ct, which, *cases, **params):
    """select_n(which, *cases): case i receives ct where ``which == i``; ``which`` gets none."""
    zeros = jnp.zeros_like(ct)
    if jnp.shape(which) != ct.shape:
        which = jnp.broadcast_to(which, ct.shape)
    out: list[jax.Array | None] = [None]
    for i, case in enumerate(cases):
        picked = [zeros] * len(cases)
        picked[i] = ct
        out.append(unbroadcast(lax.select_n(which, *picked), case))
    return tuple(out)


@register_vjp("convert_element_type")
def _convert_element_type_vjp(ct, x, **params):
    dtype = jnp.result_type(x)
    if not jnp.issubdtype(dtype, jnp.inexact):
        return (None,)
    return (ct.astype(dtype),)


@register_vjp("real", "imag", "conj", "complex")
def _complex_refused_vjp(ct, *primals, **params):
    """Complex numbers are refused (``complex_refusal``): a clear error, never a dropped part."""
    raise TypeError(
        "backward: a cotangent reaches a complex-number primitive (real/imag/conj/complex); "
        + COMPLEX_REFUSED
    )
