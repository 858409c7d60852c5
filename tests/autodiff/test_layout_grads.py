"""Gradients of layout-changing ops that a swapped axis would get wrong (issue 17 survivors).

A permutation that is its own inverse ((1, 0), (2, 1, 0)) cannot tell ``perm`` from
``argsort(perm)``; (1, 2, 0) can. Broadcasting along a middle or a leading axis with sizes all
distinct makes an ``unbroadcast`` that sums the wrong axis fail on shape or value.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxparadigm.autodiff import get_vjp, grad, tape
from jaxparadigm.autodiff.unbroadcast import unbroadcast

R = np.random.default_rng(3)


def _rand(*shape):
    return jnp.asarray(R.standard_normal(shape), jnp.float32)


@pytest.mark.parametrize("perm", [(1, 2, 0), (2, 0, 1), (0, 2, 1), (3, 1, 0, 2)])
def test_transpose_with_a_non_self_inverse_permutation(perm):
    shape = (2, 3, 4, 5)[: len(perm)]
    x = _rand(*shape)
    w = _rand(*(shape[p] for p in perm))
    f = lambda x: jnp.sum(lax.transpose(x, perm) * w)
    g = grad(f)(x)
    assert g.shape == shape
    np.testing.assert_array_equal(g, jax.grad(f)(x))


@pytest.mark.parametrize(
    "a_shape,b_shape",
    [
        ((2, 3, 4), (2, 1, 4)),  # middle axis broadcast
        ((2, 3, 4), (1, 3, 4)),  # leading axis broadcast (size 1)
        ((2, 3, 4), (3, 4)),  # leading axis added
        ((2, 3, 4), (3, 1)),  # added leading axis and a unit trailing one
        ((5, 2, 3, 4), (5, 1, 3, 1)),
    ],
)
def test_broadcast_along_middle_and_leading_axes(a_shape, b_shape):
    a, b = _rand(*a_shape), _rand(*b_shape)
    w = _rand(*a_shape)
    f = lambda a, b: jnp.sum((a * b + b) * w)
    ga, gb = grad(f, argnums=(0, 1))(a, b)
    ra, rb = jax.grad(f, argnums=(0, 1))(a, b)
    assert gb.shape == b_shape
    np.testing.assert_allclose(ga, ra, rtol=1e-6)
    np.testing.assert_allclose(gb, rb, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "a_shape,b_shape", [((2, 3, 4), (2, 1, 4)), ((2, 3, 4), (1, 3, 1)), ((3, 1), (1, 4))]
)
def test_lax_level_broadcast_reaches_the_binary_rules(a_shape, b_shape):
    """lax ops broadcast size-1 dims themselves (``mul a:f32[2,3,4] b:f32[2,1,4]``), so the
    binary VJP rules' ``unbroadcast`` is what reduces the cotangent."""
    a, b = _rand(*a_shape), _rand(*b_shape)
    out_shape = np.broadcast_shapes(a_shape, b_shape)
    w = _rand(*out_shape)
    f = lambda a, b: jnp.sum((lax.mul(a, b) + lax.atan2(b, a)) * w)
    ours = grad(f, argnums=(0, 1))(a, b)
    ref = jax.grad(f, argnums=(0, 1))(a, b)
    for o, r, shape in zip(ours, ref, (a_shape, b_shape), strict=True):
        assert o.shape == shape
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-6)


BROADCASTS = [
    ((2, 3, 4), (2, 1, 4)),
    ((2, 3, 4), (1, 3, 4)),
    ((2, 3, 4), (3, 4)),
    ((2, 3, 4), (3, 1)),
    ((5, 2, 3, 4), (5, 1, 3, 1)),
    ((5, 2, 3, 4), (2, 1, 4)),
]


@pytest.mark.parametrize("a_shape,b_shape", BROADCASTS)
def test_tape_unbroadcasts_middle_and_leading_axes(a_shape, b_shape):
    """The define-by-run tape broadcasts in its own ops and reduces with ``unbroadcast``."""
    a, b, w = _rand(*a_shape), _rand(*b_shape), _rand(*a_shape)
    ga, gb = tape.grad(lambda a, b: ((a * b + b) * tape.Var(w)).sum(), argnums=(0, 1))(a, b)
    ra, rb = jax.grad(lambda a, b: jnp.sum((a * b + b) * w), argnums=(0, 1))(a, b)
    assert gb.shape == b_shape
    np.testing.assert_allclose(ga, ra, rtol=1e-6)
    np.testing.assert_allclose(gb, rb, rtol=1e-5, atol=1e-6)


def _numpy_unbroadcast(ct, shape):
    """Independent reference: sum the added leading axes, then every axis where shape is 1."""
    ct = np.asarray(ct, np.float64)
    ct = ct.sum(axis=tuple(range(ct.ndim - len(shape))))
    for axis, d in enumerate(shape):
        if d == 1:
            ct = ct.sum(axis=axis, keepdims=True)
    return ct


@pytest.mark.parametrize("ct_shape,like_shape", BROADCASTS)
def test_unbroadcast_against_an_independent_reference(ct_shape, like_shape):
    ct = _rand(*ct_shape)
    got = unbroadcast(ct, jnp.zeros(like_shape, jnp.float32))
    assert got.shape == like_shape and got.dtype == jnp.float32
    np.testing.assert_allclose(got, _numpy_unbroadcast(ct, like_shape), rtol=1e-5, atol=1e-6)
    # the graph engine's binary rules use it for operands of different rank (e.g. a literal)
    dx, dy = get_vjp("mul")(ct, jnp.ones(ct_shape), jnp.full(like_shape, 2.0))
    np.testing.assert_allclose(dy, _numpy_unbroadcast(ct, like_shape), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, 2.0 * ct, rtol=1e-6)
