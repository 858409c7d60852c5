"""Reductions and pooling at their boundaries (issue 39): inputs drawn from a tiny set of values,
so windows and axes hold ties (two or more equal maxima), zeros (one zero, two zeros: the product's
derivative changes form between them) and the padding value itself, against jax's own VJP and JVP.

The earlier tests drew distinct integers (``rand_unique_int``): a rule that sends a tied window's
cotangent to every maximum, or to the last one, passed them. jax is the oracle (exact ties have
no finite-difference check). Generated with hypothesis; each case names the boundary it aims at.
"""

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax

from jaxparadigm.autodiff import forward_mode, vjp

# Values with ties and zeros; -inf/inf are the max/min pools' padding values.
TIE_VALUES = st.sampled_from([-1.0, 0.0, 0.0, 1.0, 1.0, 2.0])


def _array(draw, shape):
    flat = draw(st.lists(TIE_VALUES, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    return np.asarray(flat, np.float32).reshape(shape)


def _same_vjp_and_jvp(f, x, seed):
    rng = np.random.default_rng(seed)
    out, pull = vjp(f, x)
    ref_out, ref_pull = jax.vjp(f, x)
    np.testing.assert_array_equal(out, ref_out)
    ct = jnp.asarray(rng.standard_normal(np.shape(ref_out)), jnp.float32)
    np.testing.assert_allclose(pull(ct)[0], ref_pull(ct)[0], rtol=1e-6, atol=1e-6)
    t = jnp.asarray(rng.standard_normal(x.shape), jnp.float32)
    _, tan = forward_mode.jvp(f, (x,), (t,))
    _, ref_tan = jax.jvp(f, (x,), (t,))
    np.testing.assert_allclose(tan, ref_tan, rtol=1e-6, atol=1e-6)


@st.composite
def pools(draw):
    rank = draw(st.integers(1, 2))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    dims = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    strides = tuple(draw(st.integers(1, 2)) for _ in range(rank))
    padding = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(rank))
    wdil = (1,) * rank  # jax's max-pool VJP refuses window dilation: no oracle for it
    padded = [s + lo + hi for s, (lo, hi) in zip(shape, padding, strict=True)]
    if any(d > p for d, p in zip(dims, padded, strict=True)):
        dims = (1,) * rank  # a window larger than the padded input has no output
    return _array(draw, shape), dims, strides, padding, wdil


@given(case=pools(), kind=st.sampled_from(["max", "min"]), seed=st.integers(0, 3))
@settings(max_examples=25, deadline=None)
def test_pooling_with_tied_windows_and_padding(case, kind, seed):
    """Boundary: tied maxima in a window, windows that hold only padding, strides that skip
    rows, windows as wide as the padded input."""
    x, dims, strides, padding, wdil = case
    init, op = (-np.inf, lax.max) if kind == "max" else (np.inf, lax.min)

    def f(x):
        return lax.reduce_window(x, np.float32(init), op, dims, strides, padding, None, wdil)

    _same_vjp_and_jvp(f, x, seed)


@given(
    shape=st.sampled_from([(5,), (2, 3), (3, 1, 4)]),
    op=st.sampled_from(["max", "min", "prod", "argmax", "argmin"]),
    seed=st.integers(0, 3),
    data=st.data(),
)
@settings(max_examples=30, deadline=None)
def test_reductions_with_ties_and_zeros(shape, op, seed, data):
    """Boundary: several equal maxima along the axis (the cotangent is shared among them, as
    jax shares it), and zero, one or two zeros in a product."""
    x = _array(data.draw, shape)
    axis = data.draw(st.integers(0, len(shape) - 1))
    fns = {
        "max": lambda x: jnp.max(x, axis=axis),
        "min": lambda x: jnp.min(x, axis=axis),
        "prod": lambda x: jnp.prod(x, axis=axis),
        "argmax": lambda x: x * jnp.argmax(x, axis=axis, keepdims=True),
        "argmin": lambda x: x * jnp.argmin(x, axis=axis, keepdims=True),
    }
    _same_vjp_and_jvp(fns[op], x, seed)


def test_a_product_with_one_zero_and_with_two_zeros():
    """Boundary, named: one zero (its derivative is the product of the others) and two zeros
    (every derivative is zero)."""
    for x in ([2.0, 0.0, 3.0], [0.0, 0.0, 3.0], [0.0, 5.0, 0.0, 0.0], [4.0]):
        _same_vjp_and_jvp(lambda v: jnp.prod(v), np.asarray(x, np.float32), 0)
