"""Local derivative of each op the tape records (claim C3.1), and what each node saves (C2.2).

``backward(g, a, b, need_a, need_b) -> (grad_a | None, grad_b | None)``: only the gradients of
operands that require one are computed. The ``_SAVE`` tables say which operands a binary node must
keep for that, following PyTorch (a product keeps the other factor only when this one needs a
gradient).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxparadigm.autodiff.unbroadcast import unbroadcast

__all__ = [
    "DIV_SAVE",
    "NO_SAVE",
    "SAVE_BOTH",
    "SAVE_OTHER",
    "add_backward",
    "div_backward",
    "matmul_backward",
    "mul_backward",
    "pow_backward",
    "sub_backward",
]


# Which operands a binary node keeps, given which operands need a gradient (PyTorch keeps the
# other factor of a product only when this factor needs a gradient).
NO_SAVE = lambda need_a, need_b: (False, False)
SAVE_OTHER = lambda need_a, need_b: (need_b, need_a)
SAVE_BOTH = lambda need_a, need_b: (True, True)
DIV_SAVE = lambda need_a, need_b: (need_b, True)

# (gradient of a, gradient of b); None where that operand needs none.
Grads = tuple[jax.Array | None, jax.Array | None]


def add_backward(g: jax.Array, a: jax.Array, b: jax.Array, need_a: bool, need_b: bool) -> Grads:
    return (g if need_a else None), (g if need_b else None)


def sub_backward(g: jax.Array, a: jax.Array, b: jax.Array, need_a: bool, need_b: bool) -> Grads:
    return (g if need_a else None), (-g if need_b else None)


def mul_backward(g: jax.Array, a: jax.Array, b: jax.Array, need_a: bool, need_b: bool) -> Grads:
    return (g * b if need_a else None), (g * a if need_b else None)


def div_backward(g: jax.Array, a: jax.Array, b: jax.Array, need_a: bool, need_b: bool) -> Grads:
    return (g / b if need_a else None), (-g * a / (b * b) if need_b else None)


def pow_backward(g: jax.Array, a: jax.Array, b: jax.Array, need_a: bool, need_b: bool) -> Grads:
    """d/da a**b = b a**(b-1) (0 where b == 0); d/db a**b = log(a) a**b, as PyTorch computes it.

    PyTorch masks the exponent gradient to 0 only where ``a == 0 and b >= 0`` (there
    ``a**b`` is finite); at ``a == 0, b < 0`` it gives ``log(0) * inf = -inf``.
    """
    da = db = None
    if need_a:
        da = jnp.where(b == 0, jnp.zeros_like(g), g * b * jnp.power(a, b - 1))
    if need_b:
        mask = (a == 0) & (b >= 0)
        db = jnp.where(mask, jnp.zeros_like(g), g * jnp.log(a) * jnp.power(a, b))
    return da, db


def matmul_backward(
    g: jax.Array,
    a: jax.Array,
    b: jax.Array,
    need_a: bool,
    need_b: bool,
    a_shape: tuple[int, ...],
    b_shape: tuple[int, ...],
) -> Grads:
    """d(a@b): ga = g @ b^T, gb = a^T @ g, with 1-d operands promoted as numpy does."""
    a2_shape = (1, *a_shape) if len(a_shape) == 1 else a_shape
    b2_shape = (*b_shape, 1) if len(b_shape) == 1 else b_shape
    g2 = g
    if len(b_shape) == 1:
        g2 = jnp.expand_dims(g2, -1)
    if len(a_shape) == 1:
        g2 = jnp.expand_dims(g2, -2)
    ga = gb = None
    if need_a:
        b2 = jnp.reshape(b, b2_shape)
        ga = jnp.reshape(
            unbroadcast(g2 @ jnp.swapaxes(b2, -1, -2), jax.ShapeDtypeStruct(a2_shape, g.dtype)),
            a_shape,
        )
    if need_b:
        a2 = jnp.reshape(a, a2_shape)
        gb = jnp.reshape(
            unbroadcast(jnp.swapaxes(a2, -1, -2) @ g2, jax.ShapeDtypeStruct(b2_shape, g.dtype)),
            b_shape,
        )
    return ga, gb
