"""Issue 12, section 1: silent wrong results, each pinned against jax.grad / jax.jacrev as oracle.

Where we deliberately differ from jax (pow(0, 0)) a test pins the difference.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxparadigm.autodiff import func, grad, value_and_grad, vjp

RNG = np.random.default_rng(0)


def _rand(*shape):
    return jnp.asarray(RNG.standard_normal(shape), jnp.float32)


@pytest.mark.parametrize(
    "shape,new_sizes,dimensions",
    [
        ((2, 3), (6,), (1, 0)),
        ((2, 3, 4), (4, 6), (2, 0, 1)),
        ((2, 3, 4), (6, 4), (1, 0, 2)),
        ((2, 3, 4), (24,), (1, 2, 0)),
        ((2, 3), (3, 2), None),
    ],
)
def test_reshape_with_dimensions_transposes_the_gradient(shape, new_sizes, dimensions):
    x = _rand(*shape)
    w = _rand(*new_sizes)
    f = lambda x: jnp.sum(lax.reshape(x, new_sizes, dimensions) * w)
    np.testing.assert_array_equal(grad(f)(x), jax.grad(f)(x))


@pytest.mark.parametrize("start", [-8, -6, -5, -1, 0, 3, 4, 9])
def test_dynamic_slice_out_of_range_starts_use_the_clamped_start(start):
    """-8 on a dim of 5 is wrapped to -3 by lax and then clamped to 0 by XLA: row 0, not row 2."""
    x = _rand(5, 3)
    w = _rand(2, 3)
    f = lambda x: jnp.sum(lax.dynamic_slice(x, (start, 0), (2, 3)) * w)
    np.testing.assert_array_equal(grad(f)(x), jax.grad(f)(x))
    g = jax.jit(grad(lambda x, i: f_traced(x, i, w)))(x, jnp.int32(start))
    np.testing.assert_array_equal(g, jax.grad(lambda x: f_traced(x, start, w))(x))


def f_traced(x, i, w):
    return jnp.sum(lax.dynamic_slice(x, (i, 0), (2, 3)) * w)


@pytest.mark.parametrize("start", [-8, -3, -1, 0, 4, 7])
def test_dynamic_update_slice_out_of_range_starts(start):
    x, u, w = _rand(5, 3), _rand(2, 3), _rand(5, 3)
    f = lambda x, u: jnp.sum(lax.dynamic_update_slice(x, u, (start, 0)) ** 2 * w)
    ours = grad(f, argnums=(0, 1))(x, u)
    ref = jax.grad(f, argnums=(0, 1))(x, u)
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_dynamic_index_value_and_grad_upstream_10984():
    """Port of jax tests/lax_autodiff_test.py::testDynamicSliceValueAndGrad (issue #10984)."""
    x = _rand(5, 5)
    f = lambda x: lax.dynamic_index_in_dim(x, -8, 0).sum()
    value, g = value_and_grad(f)(x)
    np.testing.assert_allclose(value, f(x), rtol=1e-6)
    np.testing.assert_array_equal(g, jax.grad(f)(x))


def test_pow_mixed_second_derivative_at_y_zero():
    """Port of jax testPowSecondDerivative: d2/dxdy x**y at (4, 0) is 1/x = 0.25."""
    ours = func.jacrev(func.jacrev(lax.pow, (0, 1)), (0, 1))(4.0, 0.0)
    ref = jax.jacrev(jax.jacrev(lax.pow, (0, 1)), (0, 1))(4.0, 0.0)
    np.testing.assert_allclose(np.array(ours), np.array(ref), rtol=1e-6)
    np.testing.assert_allclose(ours[0][1], 0.25, rtol=1e-6)
    np.testing.assert_allclose(ours[1][1], np.log(4.0) ** 2, rtol=1e-6)


@pytest.mark.parametrize("x,y", [(3.0, 0.0), (0.0, 2.0), (2.0, -1.5), (0.5, 3.0), (-2.0, 2.0)])
def test_pow_first_and_second_derivatives_match_jax(x, y):
    for order in (1, 2):
        ours, ref = lax.pow, lax.pow
        for _ in range(order):
            ours, ref = func.jacrev(ours, (0, 1)), jax.jacrev(ref, (0, 1))
        o, r = np.array(ours(x, y)), np.array(ref(x, y))
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-6)


def test_pow_zero_to_the_zero_differs_from_jax():
    """Deliberate difference: d/dx x**y at x = y = 0 is 0 here; jax gives nan (its TODO)."""
    assert float(grad(lax.pow)(0.0, 0.0)) == 0.0
    assert np.isnan(jax.grad(lax.pow)(0.0, 0.0))
    # the integer-exponent path agrees with jax (testPowIntPowerAtZero)
    assert float(grad(lambda x, n: x**n)(0.0, 0)) == float(jax.grad(lambda x, n: x**n)(0.0, 0))


def test_abs_at_zero_matches_jax():
    x = jnp.array([-1.5, 0.0, -0.0, 2.0])
    f = lambda x: jnp.sum(jnp.abs(x) * jnp.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(grad(f)(x), jax.grad(f)(x))
    assert float(grad(jnp.abs)(0.0)) == float(jax.grad(jnp.abs)(0.0)) == 1.0


def test_clamp_ties_match_jax():
    lo, hi = jnp.array([0.0, 0.0, 0.0, 1.0]), jnp.array([1.0, 1.0, 1.0, 1.0])
    x = jnp.array([0.0, 1.0, 0.5, 1.0])
    f = lambda lo, x, hi: jnp.sum(lax.clamp(lo, x, hi) * jnp.arange(1.0, 5.0))
    ours = grad(f, argnums=(0, 1, 2))(lo, x, hi)
    ref = jax.grad(f, argnums=(0, 1, 2))(lo, x, hi)
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_array_equal(a, b)


class TestComplexEqualsJax:
    """Complex numbers differentiate as jax does (issue 36; these were refusals before)."""

    def test_complex_input_to_grad(self):
        f = lambda a, z: jnp.abs(z) ** 2 * a
        args = (1.0, jnp.complex64(1 + 2j))
        ours, ref = grad(f, argnums=(0, 1))(*args), jax.grad(f, argnums=(0, 1))(*args)
        for a, b in zip(ours, ref, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6)
            assert jnp.result_type(a) == jnp.result_type(b)
        np.testing.assert_allclose(ours[1], 2 - 4j)  # dL/dx - i dL/dy = 2x - 2iy = 2 conj(z)

    def test_complex_primal_and_output_of_vjp(self):
        cases = [
            (lambda z: jnp.real(z), jnp.complex64(1j), jnp.float32(1.5)),
            (lambda x: x * 1j, 1.0, jnp.complex64(0.5 - 2j)),
            (lambda z: jnp.conj(z) * z * 1j, jnp.complex64(1 - 1j), jnp.complex64(0.5 - 2j)),
        ]
        for f, x, ct in cases:
            out, pull = vjp(f, x)
            ref_out, ref_pull = jax.vjp(f, x)
            np.testing.assert_allclose(out, ref_out)
            np.testing.assert_allclose(pull(ct)[0], ref_pull(ct)[0], rtol=1e-6)
        with pytest.raises(TypeError, match="jacrev requires real-valued outputs.*complex64"):
            func.jacrev(lambda x: x * 1j)(1.0)

    def test_complex_intermediate(self):
        for f in (
            lambda x: jnp.real(jnp.exp(1j * x)),
            lambda x: jnp.abs(jnp.exp(1j * x) * x),
        ):
            np.testing.assert_allclose(grad(f)(1.0), jax.grad(f)(1.0), rtol=1e-6)


@pytest.mark.parametrize(
    "f,args",
    [
        (lambda x, y: (x, y), (1.0, 2.0)),
        (lambda x: x[:2], ((1.0, 2.0, 3.0),)),
        (lambda x: {"a": x, "b": 2.0 * x}, (3.0,)),
    ],
)
def test_jacrev_of_python_float_outputs(f, args):
    ours = func.jacrev(f)(*args)
    ref = jax.jacrev(f)(*args)
    assert jax.tree_util.tree_structure(ours) == jax.tree_util.tree_structure(ref)
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(ref), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "ct",
    [
        jnp.ones(3, jnp.float16),
        jnp.ones(3, jnp.bfloat16),
        jnp.ones(3, jnp.int32),
        jnp.ones(4, jnp.float32),
        jnp.ones((), jnp.float32),
    ],
)
def test_vjp_rejects_a_cotangent_of_the_wrong_type_as_jax_does(ct):
    f = lambda x: x * 2.0
    _, ours = vjp(f, jnp.ones(3))
    _, ref = jax.vjp(f, jnp.ones(3))
    with pytest.raises(ValueError):
        ref(ct)
    with pytest.raises(ValueError, match=r"cotangent 0 has type .*expected float32\[3\]"):
        ours(ct)


def test_vjp_accepts_weak_typed_cotangents():
    _, ours = vjp(lambda x: x * 2.0, 1.0)
    assert float(ours(2.0)[0]) == 4.0
    assert float(ours(jnp.float32(2.0))[0]) == 4.0
