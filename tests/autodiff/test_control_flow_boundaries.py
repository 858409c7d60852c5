"""cond/switch and scan at their boundaries (issue 39): the first and the last branch, an index
past either end (``lax.switch`` clamps it), a branch that ignores an operand of a narrow float
dtype (its cotangent is a zero of that dtype), an integer operand (no cotangent), and a scan whose
carry only becomes differentiable after a step. jax's own VJP and JVP are the oracle.

Each case killed one-line mutants of ``autodiff/rules/control_flow.py`` that the earlier tests
let through (``make mutation MODULE=autodiff.rules.control_flow``).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxparadigm.autodiff import jvp, vjp

BRANCHES = [
    lambda x, h, n: (jnp.sin(x) * 2.0, h * 0),  # h unused but for a zero
    lambda x, h, n: (x * x + n.astype(x.dtype), h * 3),
    lambda x, h, n: (jnp.cos(x) - x, h),
]


def _switched(index, x, h, n):
    out, hh = lax.switch(index, BRANCHES, x, h, n)
    return out, hh


@pytest.mark.parametrize("index", [-3, -1, 0, 1, 2, 3, 7])
def test_switch_vjp_and_jvp_at_every_index_and_past_either_end(index):
    """Boundary: index 0 and the last branch, and indices past either end (clamped)."""
    x = jnp.asarray([0.5, -1.25, 2.0], jnp.float32)
    h = jnp.asarray([1.5, -0.5], jnp.bfloat16)
    n = jnp.asarray([1, 2, 3], jnp.int32)
    f = lambda x, h: _switched(jnp.int32(index), x, h, n)
    out, pull = vjp(f, x, h)
    ref_out, ref_pull = jax.vjp(f, x, h)
    cts = (jnp.asarray([1.0, -2.0, 0.5], jnp.float32), jnp.asarray([2.0, 1.0], jnp.bfloat16))
    ours, ref = pull(cts), ref_pull(cts)
    for a, b in zip((*out, *ours), (*ref_out, *ref), strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(np.asarray(a, np.float32), np.asarray(b, np.float32), rtol=1e-6)
    tx, th = jnp.ones(3, jnp.float32), jnp.full(2, 0.5, jnp.bfloat16)
    _, tan = jvp(f, (x, h), (tx, th))
    _, ref_tan = jax.jvp(f, (x, h), (tx, th))
    for a, b in zip(tan, ref_tan, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(np.asarray(a, np.float32), np.asarray(b, np.float32), rtol=1e-6)


@pytest.mark.parametrize("pred", [False, True])
def test_cond_with_an_unused_narrow_float_operand_gives_its_zero(pred):
    """Boundary: the taken branch does not read ``h`` (float16): its cotangent is a float16
    zero array, as jax's, not a float32 one or None."""
    h = jnp.asarray([1.0, 2.0], jnp.float16)

    def f(x, h):
        return lax.cond(pred, lambda x, h: x * 2.0, lambda x, h: x + h.sum().astype(x.dtype), x, h)

    x = jnp.asarray(3.0, jnp.float32)
    g = vjp(f, x, h)[1](jnp.float32(1.0))
    r = jax.vjp(f, x, h)[1](jnp.float32(1.0))
    assert g[1].dtype == r[1].dtype == jnp.float16
    np.testing.assert_array_equal(np.asarray(g[1]), np.asarray(r[1]))
    np.testing.assert_array_equal(np.asarray(g[0]), np.asarray(r[0]))


def test_a_scan_carry_that_becomes_differentiable_after_one_step():
    """Boundary: the second carry starts as a constant (no tangent) and takes one from the first
    carry at step 1: the JVP must iterate the carries' tangents to their fixed point."""

    def f(x):
        def body(carry, _):
            a, b, c = carry
            return (a * 1.5, b + a, c + b), None

        (a, b, c), _ = lax.scan(body, (x, jnp.float32(0.0), jnp.float32(0.0)), None, length=4)
        return c

    x = jnp.float32(0.75)
    np.testing.assert_allclose(jvp(f, (x,), (jnp.float32(1.0),))[1], jax.jvp(f, (x,), (1.0,))[1])
    np.testing.assert_allclose(vjp(f, x)[1](jnp.float32(1.0))[0], jax.grad(f)(x), rtol=1e-6)
