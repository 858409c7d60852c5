"""``jax.custom_jvp`` rules honoured by our engine in both modes; ``custom_vjp`` in forward mode.

Forward mode calls the function's own JVP rule; reverse mode transposes that rule (linearize +
transpose), so ``grad(relu)(0) == 0`` and softplus's Hessian at 0 is 1/4, as in jax. Several
cases port ``CustomJVPTest`` from jax's ``tests/custom_api_test.py`` (named in each docstring),
with our ``jvp``/``grad``/``jacfwd``/``hessian`` in place of jax's.
"""

from functools import partial

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxparadigm.autodiff import func, grad, jacfwd, jvp


@jax.custom_jvp
def sin_rule_2cos(x):
    return jnp.sin(x)


@sin_rule_2cos.defjvp
def _sin_rule_2cos_jvp(primals, tangents):
    (x,), (g,) = primals, tangents
    return sin_rule_2cos(x), 2 * jnp.cos(x) * g


def test_relu_derivative_at_zero_is_the_rule_not_the_body():
    """Issue #12: grad(relu)(0) was 1/2 (the body's max split); jax and torch give 0."""
    assert float(grad(jax.nn.relu)(0.0)) == 0.0
    assert float(jvp(jax.nn.relu, (0.0,), (1.0,))[1]) == 0.0
    x = jnp.array([-1.0, 0.0, 2.0])
    chex.assert_trees_all_equal(func.jacrev(jax.nn.relu)(x), jax.jacrev(jax.nn.relu)(x))
    chex.assert_trees_all_equal(jacfwd(jax.nn.relu)(x), jax.jacfwd(jax.nn.relu)(x))


def test_softplus_hessian_at_zero_is_a_quarter():
    """Issue #12: was 0.0; softplus'' = sigmoid (1 - sigmoid) = 1/4 at 0."""
    assert float(func.hessian(jax.nn.softplus)(0.0)) == pytest.approx(0.25, abs=1e-7)
    x = jnp.linspace(-3.0, 3.0, 4)
    f = lambda x: jnp.sum(jax.nn.softplus(x) * jnp.cos(x))
    np.testing.assert_allclose(func.hessian(f)(x), jax.hessian(f)(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "fn",
    [jax.nn.gelu, jnp.sinc]
    + [
        pytest.param(f, marks=pytest.mark.slow)
        for f in (jax.nn.silu, jax.nn.elu, jax.nn.log_sigmoid, jnp.logaddexp2)
    ],
)
def test_library_custom_jvp_functions_second_order(fn):
    x = jnp.linspace(-2.0, 2.0, 5)
    f = lambda x: jnp.sum(fn(x, 0.5) if fn is jnp.logaddexp2 else fn(x)) ** 2
    np.testing.assert_allclose(func.hessian(f)(x), jax.hessian(f)(x), rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(jacfwd(jacfwd(f))(x), jax.hessian(f)(x), rtol=2e-5, atol=1e-5)


def test_basic():
    """custom_api_test.py CustomJVPTest.test_basic: every mode uses the rule (2 cos), not cos."""
    x = 3.0
    out, t = jvp(sin_rule_2cos, (x,), (1.0,))
    np.testing.assert_allclose((out, t), (np.sin(x), 2 * np.cos(x)), rtol=1e-6)
    np.testing.assert_allclose(grad(sin_rule_2cos)(x), 2 * np.cos(x), rtol=1e-6)
    # second order differentiates the rule's program: d/dx 2 cos x = -2 sin x
    np.testing.assert_allclose(func.hessian(sin_rule_2cos)(x), -2 * np.sin(x), rtol=1e-5)
    np.testing.assert_allclose(jacfwd(jacfwd(sin_rule_2cos))(x), -2 * np.sin(x), rtol=1e-5)


def test_python_control_flow():
    """custom_api_test.py CustomJVPTest.test_python_control_flow: branches on the value, in f and
    in its rule, run define-by-run on the concrete values (``tape.define_by_run``)."""

    @jax.custom_jvp
    def f(x):
        return jnp.sin(x) if x > 0 else jnp.cos(x)

    f.defjvp(lambda p, t: (f(p[0]), (2 if p[0] > 0 else 3) * t[0]))
    chex.assert_trees_all_close(jvp(f, (2.0,), (1.0,)), (jnp.sin(2.0), 2.0))


def test_invariance():
    """custom_api_test.py CustomJVPTest.test_invariance: jvp of a jvp sees the rule."""

    @jax.custom_jvp
    def f(x):
        return jnp.cos(2 * x) / 2.0

    f.defjvp(lambda primals, tangents: (f(primals[0]), 3 * tangents[0]))
    f2 = lambda x: jvp(f, (x,), (x,))[0]
    f3 = lambda x: jvp(f2, (x,), (x,))[0]
    chex.assert_trees_all_close(jvp(f, (1.0,), (1.0,)), jvp(f2, (1.0,), (1.0,)))
    chex.assert_trees_all_close(jvp(f, (1.0,), (1.0,)), jvp(f3, (1.0,), (1.0,)))


def test_vmap_and_jit():
    """custom_api_test.py CustomJVPTest.test_vmap / test_jit: vmap and jit around our jvp."""
    x = jnp.arange(3.0)
    expected = (jnp.sin(x), 2 * jnp.cos(x) * x)
    chex.assert_trees_all_close(jax.vmap(lambda x: jvp(sin_rule_2cos, (x,), (x,)))(x), expected)
    chex.assert_trees_all_close(jvp(jax.vmap(sin_rule_2cos), (x,), (x,)), expected)
    chex.assert_trees_all_close(jax.jit(lambda x: jvp(sin_rule_2cos, (x,), (x,)))(x), expected)
    chex.assert_trees_all_close(jvp(jax.jit(sin_rule_2cos), (x,), (x,)), expected)


def test_pytrees():
    """custom_api_test.py CustomJVPTest.test_pytrees."""

    @jax.custom_jvp
    def f(x):
        return {"b": jnp.sin(x["a"])}

    f.defjvp(lambda p, t: (f(p[0]), {"b": 2 * jnp.cos(p[0]["a"]) * t[0]["a"]}))
    x = {"a": 3.0}
    out, t = jvp(f, (x,), (x,))
    np.testing.assert_allclose(out["b"], np.sin(3.0), rtol=1e-6)
    np.testing.assert_allclose(t["b"], 2 * np.cos(3.0) * 3.0, rtol=1e-6)


def test_kwargs_and_nondiff_argnums():
    """custom_api_test.py CustomJVPTest.test_kwargs and test_nondiff_argnums."""

    @jax.custom_jvp
    def my_fun(x, y, c=1.0):
        return c * (x + y)

    my_fun.defjvp(lambda p, t: (my_fun(*p), t[2]))
    f = lambda x, y: jnp.square(my_fun(x, y, c=2.0)).sum()
    _, t = jvp(f, (10.0, 5.0), (1.0, 1.0))
    assert float(t) == 0.0  # the rule returns the (zero) tangent of the constant c

    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    app.defjvp(lambda f, p, t: (app(f, p[0]), 3 * t[0]))
    chex.assert_trees_all_close(jvp(lambda x: app(lambda y: 2 * y, x), (1.0,), (1.0,)), (2.0, 3.0))
    assert float(grad(lambda x: app(lambda y: 2 * y, x))(1.0)) == 3.0


def test_custom_jvps_first_rule_is_none():
    """custom_api_test.py CustomJVPTest.test_custom_jvps_first_rule_is_none."""

    @jax.custom_jvp
    def f(x, y):
        return x**2 * y

    f.defjvps(None, lambda y_dot, out, x, y: x**2 * y_dot)
    assert float(grad(f, 1)(2.0, 3.0)) == 4.0
    assert float(jvp(f, (2.0, 3.0), (1.0, 1.0))[1]) == 4.0  # x's tangent is dropped by the rule


def test_symbolic_zero_custom_jvp():
    """custom_api_test.py CustomJVPTest.test_symbolic_zero_custom_jvp (no vmap/jit variant)."""
    seen = {}

    def f(static_scalar, static_array, dyn_scalar, dyn_array):
        return static_scalar + dyn_scalar, static_array + dyn_array

    f = jax.custom_jvp(f)

    @partial(f.defjvp, symbolic_zeros=True)
    def f_jvp(primals, tangents):
        seen["types"] = [type(t).__name__ for t in tangents[:2]]
        return f(*primals), (primals[0] + 90, tangents[3] + 91)

    g = lambda s, a: f(1.0, jnp.array([2.0, 3.0]), s, a)
    (o1, o2), (t1, t2) = jvp(g, (4.0, jnp.array([5.0, 6.0])), (7.0, jnp.array([8.0, 9.0])))
    assert seen["types"] == ["SymbolicZero", "SymbolicZero"]
    np.testing.assert_allclose([o1, t1], [5.0, 91.0])
    np.testing.assert_allclose(t2, [99.0, 100.0])


def test_linear_in_scan_forward():
    """custom_api_test.py CustomJVPTest.test_linear_in_scan, forward mode (jacfwd for grad)."""

    @jax.custom_jvp
    def f(x):
        return -x

    f.defjvp(lambda p, t: (f(p[0]), f(t[0])))
    foo = lambda x: lax.scan(lambda c, _: (f(c), None), x, None, length=1)[0]
    assert float(jacfwd(foo)(3.0)) == -1.0


def test_closed_over_value_gets_the_body_derivative():
    """Deliberate difference: a custom_jvp rule only covers the explicit arguments. For a value the
    function closes over, jax 0.10 silently drops the derivative (0); we add the body's."""

    def f(x, y):
        g = jax.custom_jvp(lambda a: a * y)
        g.defjvp(lambda p, t: (p[0] * 3.0, 10.0 * t[0]))  # rule: d/da = 10 (body: y = 3)
        return g(x)

    assert float(jax.jvp(f, (2.0, 3.0), (0.0, 1.0))[1]) == 0.0  # jax drops d/dy
    # d/dx: the rule's 10; d/dy: the body's x = 2 (y is closed over)
    assert float(jvp(f, (2.0, 3.0), (1.0, 0.0))[1]) == 10.0
    assert float(jvp(f, (2.0, 3.0), (0.0, 1.0))[1]) == 2.0
    assert float(grad(f, 1)(2.0, 3.0)) == 2.0
    assert float(grad(f, 0)(2.0, 3.0)) == 10.0


@jax.custom_vjp
def clipped_sin(x):
    return jnp.sin(x)


clipped_sin.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, g: (jnp.clip(2 * c * g, -1, 1),))


def test_custom_vjp_forward_mode_differentiates_fwd():
    """Deliberate difference (custom_api_test.py CustomVJPTest.test_jvp_error): jax raises
    TypeError for jvp of a custom_vjp function; we differentiate its fwd (here sin: cos)."""
    with pytest.raises(TypeError, match="custom_vjp"):
        jax.jvp(clipped_sin, (3.0,), (1.0,))
    np.testing.assert_allclose(jvp(clipped_sin, (3.0,), (1.0,))[1], np.cos(3.0), rtol=1e-6)


def test_hessian_of_custom_vjp_matches_jax():
    """Forward over reverse through a custom_vjp: jax differentiates fwd + bwd, so do we."""
    f = lambda x: jnp.sum(clipped_sin(x) ** 2 * x)
    x = jnp.array([0.1, 0.4, -0.3])
    np.testing.assert_allclose(func.hessian(f)(x), jax.hessian(f)(x), rtol=1e-5, atol=1e-6)
