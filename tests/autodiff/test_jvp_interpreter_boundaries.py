"""The JVP interpreter's own checks at their boundaries (issue 39): a rule's tangent of rank 0,
of an operand's shape with size-1 dimensions (implicit broadcasting), of the output's shape, of
another shape (an error naming the rule), of another dtype (cast to the primal's), dead
equations skipped, and an open jaxpr given to ``eval_jvp_closed``.

The rules under test are registered on primitives made here (``jax.extend.core.Primitive``), so
each boundary is hit on purpose. Each case killed one-line mutants of
``autodiff/jvp_interpreter.py`` that the earlier tests let through
(``make mutation MODULE=autodiff.jvp_interpreter``).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.core import Primitive

from jaxparadigm.autodiff import forward_mode
from jaxparadigm.autodiff.jvp_interpreter import eval_jvp_closed, is_float
from jaxparadigm.autodiff.registry import register_jvp, unregister_jvp

# A broadcasting add: f32[a, b] + f32[1, b] (or f32[]) -> f32[a, b]; its JVP rule returns what
# the test asks for, to hit each branch of the interpreter's tangent check.
badd_p = Primitive("jaxparadigm_test_broadcast_add")
badd_p.def_impl(lambda x, y: jnp.add(x, y))
badd_p.def_abstract_eval(
    lambda x, y: jax.core.ShapedArray(jnp.broadcast_shapes(x.shape, y.shape), x.dtype)
)
RETURN = {}


def _badd_jvp(primals, tangents):
    x, y = primals
    out = badd_p.bind(x, y)
    return out, RETURN["tangent"](*primals, *tangents)


@pytest.fixture(autouse=True, scope="module")
def _registered():
    """The rule exists only while this module's tests run (the registry's coverage test, which
    may run in the same process, lists every registered rule)."""
    register_jvp(badd_p)(_badd_jvp)
    yield
    unregister_jvp(badd_p)


def _jvp(x, y, ty):
    return forward_mode.jvp(lambda y: badd_p.bind(x, y), (y,), (ty,))


X = jnp.arange(6.0, dtype=jnp.float32).reshape(3, 2)


@pytest.mark.parametrize(
    "y, ty",
    [
        (jnp.float32(1.0), jnp.float32(2.0)),  # rank 0: broadcast
        (jnp.ones((1, 2), jnp.float32), jnp.asarray([[2.0, -1.0]], jnp.float32)),  # size-1 dim
        (jnp.ones((3, 2), jnp.float32), jnp.full((3, 2), 0.5, jnp.float32)),  # same shape
    ],
)
def test_a_tangent_in_an_operands_broadcastable_shape_is_broadcast(y, ty):
    RETURN["tangent"] = lambda x, y, tx, ty: ty  # d(x + y) = dy, in y's own shape
    out, tan = _jvp(X, y, ty)
    assert tan.shape == (3, 2) and tan.dtype == jnp.float32
    np.testing.assert_array_equal(tan, jnp.broadcast_to(ty, (3, 2)))
    np.testing.assert_array_equal(out, X + y)


@pytest.mark.parametrize(
    "bad",
    [
        jnp.ones((2,), jnp.float32),  # rank 1, not an operand's shape
        jnp.ones((2, 2), jnp.float32),  # same rank, a dimension neither 1 nor the output's
        jnp.ones((3, 2, 1), jnp.float32),  # another rank
    ],
)
def test_a_tangent_of_another_shape_is_an_error_naming_the_rule(bad):
    RETURN["tangent"] = lambda x, y, tx, ty: bad
    with pytest.raises(ValueError) as err:
        _jvp(X, jnp.ones((1, 2), jnp.float32), jnp.ones((1, 2), jnp.float32))
    assert str(err.value) == (
        f"JVP rule for 'jaxparadigm_test_broadcast_add' returned a tangent of shape "
        f"{tuple(bad.shape)} for an output of shape (3, 2)"
    )


def test_a_tangent_of_another_dtype_is_cast_to_the_primals():
    RETURN["tangent"] = lambda x, y, tx, ty: ty.astype(jnp.float32)
    x = X.astype(jnp.bfloat16)
    y = jnp.ones((3, 2), jnp.bfloat16)
    _, tan = _jvp(x, y, jnp.full((3, 2), 0.25, jnp.bfloat16))
    assert tan.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(tan, np.float32), np.full((3, 2), 0.25, np.float32))


def test_dead_equations_are_not_differentiated():
    """An equation whose result is never used does not run its JVP rule (a rule that would
    raise there is never called)."""

    def refuse(x, y, tx, ty):
        raise AssertionError("the JVP rule of a dead equation ran")

    RETURN["tangent"] = refuse

    def f(y):
        badd_p.bind(X, y)  # dead
        return y * 3.0

    _, tan = forward_mode.jvp(f, (jnp.ones((1, 2), jnp.float32),), (jnp.ones((1, 2)),))
    np.testing.assert_array_equal(tan, jnp.full((1, 2), 3.0))


def test_eval_jvp_closed_takes_an_open_jaxpr_too():
    closed = jax.make_jaxpr(lambda x: jnp.sin(x) * x)(jnp.float32(0.5))
    x, t = jnp.float32(0.5), jnp.float32(2.0)
    outs, tans = eval_jvp_closed(closed.jaxpr, [x], [t])
    ref_out, ref_tan = jax.jvp(lambda x: jnp.sin(x) * x, (x,), (t,))
    np.testing.assert_allclose(outs[0], ref_out)
    np.testing.assert_allclose(tans[0], ref_tan, rtol=1e-6)


@pytest.mark.parametrize(
    "value, expected",
    [
        (jnp.float32, True),
        (jnp.dtype("bfloat16"), True),
        (jnp.complex64, True),
        (jnp.int32, False),
        (jax.core.ShapedArray((2,), jnp.float16), True),
        (jax.core.ShapedArray((), jnp.int8), False),
        (jnp.ones(2, jnp.bool_), False),
    ],
)
def test_is_float_reads_dtypes_avals_and_arrays(value, expected):
    assert is_float(value) is expected
