"""Port of jax's forward-mode API tests onto our engine (C3.2, C3.3).

From ``tests/api_test.py`` (class ``APITest``) and ``tests/lax_control_flow_test.py`` (class
``LaxControlFlowTest``): each test names its upstream test. ``api.jvp``/``jacfwd``/``jacrev``/
``hessian`` are replaced by ours (``forward_mode.jvp`` keeps JAX's conventions and messages).
Adaptations are stated where they occur (complex inputs differentiate as upstream's, with
``holomorphic=``), and reverse-mode halves through loops are reverse mode's port.
"""

import itertools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxparadigm.autodiff import func, jacfwd, jvp
from tests.autodiff.jvp_checks import check_fwd

jacrev, hessian = func.jacrev, func.hessian
float0 = jax.dtypes.float0
R = np.random.default_rng(0)


def close(a, b, tol=1e-5):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


def test_jacobian():
    """api_test.py APITest.test_jacobian."""
    A, x = R.standard_normal((4, 3)).astype(np.float32), R.standard_normal(3).astype(np.float32)
    f = lambda x: jnp.dot(A, x)
    close(jacfwd(f)(x), A)
    close(jacrev(f)(x), A)
    f = lambda x: jnp.tanh(jnp.dot(A, x))
    close(jacfwd(f)(x), jacrev(f)(x))


def test_hessian():
    """api_test.py APITest.test_hessian."""
    A, x = R.standard_normal((4, 4)).astype(np.float32), R.standard_normal(4).astype(np.float32)
    f = lambda x: jnp.dot(x, jnp.dot(A, x))
    close(hessian(f)(x), A + A.T, 1e-4)


def test_hessian_holomorphic():
    """api_test.py APITest.test_hessian_holomorphic: ``x @ x`` of complex x, holomorphic=True."""
    x = jnp.ones(4, jnp.complex64)
    f = lambda x: jnp.dot(x, x)
    close(hessian(f, holomorphic=True)(x), 2 * jnp.eye(4, dtype=jnp.complex64))
    close(hessian(f, holomorphic=True)(x), jax.hessian(f, holomorphic=True)(x))
    with pytest.raises(TypeError, match="complex"):
        hessian(f)(x)


@pytest.mark.parametrize("jacfun", [jacfwd, jacrev], ids=["jacfwd", "jacrev"])
def test_jacobian_on_pytrees(jacfun):
    """api_test.py APITest.test_jacobian_on_pytrees (Python-float inputs and outputs included)."""
    close(jacfun(lambda x, y: (x, y))(0.0, 1.0), (1.0, 0.0))
    close(jacfun(lambda x, y: (x, y), 1)(0.0, 1.0), (0.0, 1.0))
    close(jacfun(lambda x, y: (x, y), (0, 1))(0.0, 1.0), ((1.0, 0.0), (0.0, 1.0)))
    close(jacfun(lambda x: x[:2])((1.0, 2.0, 3.0)), ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)))
    x, y = jnp.asarray(R.standard_normal(2)), jnp.asarray(R.standard_normal(3))
    ans = jacfun(lambda x, y: {"x": x, "xy": jnp.outer(x, y)})(x, y)
    expected = {"x": np.eye(2), "xy": np.kron(np.eye(2), y[:, None]).reshape(2, 3, 2)}
    close(ans, expected)


def test_hessian_on_pytrees():
    """api_test.py APITest.test_hessian_on_pytrees."""
    ans = hessian(lambda x: jnp.array(x) ** 2)((1.0, 2.0))
    expected = (
        (np.array([2.0, 0.0]), np.array([0.0, 0.0])),
        (np.array([0.0, 0.0]), np.array([0.0, 2.0])),
    )
    close(ans, expected)


def test_issue1372():
    """api_test.py APITest.test_issue1372: every fwd/rev nesting has the right block shape."""
    quad = lambda x: jnp.dot(x, x)
    f = lambda x, u: quad(x) + quad(u)
    x, u = jnp.ones(5), jnp.ones(2)
    rev, fwd = jacrev, jacfwd
    for outer, inner in [(rev, rev), (rev, fwd), (fwd, rev), (fwd, fwd)]:
        assert outer(inner(f, 0), 0)(x, u).shape == (5, 5)
        assert outer(inner(f, 1), 1)(x, u).shape == (2, 2)
        assert outer(inner(f, 1), 0)(x, u).shape == (2, 5)
        assert outer(inner(f, 0), 1)(x, u).shape == (5, 2)


def test_jacfwd_and_aux_basic():
    """api_test.py APITest.test_jacfwd_and_aux_basic."""
    jac, aux = jacfwd(lambda x: (x**3, [x**2]), has_aux=True)(3.0)
    close(jac, jacfwd(lambda x: x**3)(3.0))
    close(aux, [9.0])


def test_jacfwd_and_aux_nested():
    """api_test.py APITest.test_jacfwd_and_aux_nested."""

    def f(x):
        jac, aux = jacfwd(lambda x: (x**3, [x**3]), has_aux=True)(x)
        return aux[0]

    f2 = lambda x: x**3
    assert jacfwd(f)(4.0) == jacfwd(f2)(4.0)
    assert jax.jit(jacfwd(f))(4.0) == jacfwd(f2)(4.0)
    assert jax.jit(jacfwd(jax.jit(f)))(4.0) == jacfwd(f2)(4.0)

    def g(x):
        jac, aux = jacfwd(lambda x: (x**3, [x**3]), has_aux=True)(x)
        return aux[0] * jnp.sin(x)

    g2 = lambda x: x**3 * jnp.sin(x)
    close(jacfwd(g)(4.0), jacfwd(g2)(4.0))
    close(jax.jit(jacfwd(jax.jit(g)))(4.0), jacfwd(g2)(4.0))


def test_jvp_and_aux_basic():
    """api_test.py APITest.test_jvp_and_aux_basic."""
    primals, tangents, aux = jvp(lambda x: (x**3, [x**2]), (3.0,), (4.0,), has_aux=True)
    expected = jvp(lambda x: x**3, (3.0,), (4.0,))
    close((primals, tangents), expected)
    close(aux, [9.0])


def test_jvp_mismatched_arguments():
    """api_test.py APITest.test_jvp_mismatched_arguments (same error types and messages)."""
    msg = "primal and tangent arguments to jvp must have the same tree structure"
    with pytest.raises(TypeError, match=msg):
        jvp(lambda x, y: x * y, (np.float32(2),), ())
    with pytest.raises(TypeError, match=msg):
        jvp(lambda x, y: x * y, (np.float32(2),), [np.float32(2)])
    with pytest.raises(TypeError, match="primal and tangent arguments to jvp do not match."):
        jvp(lambda x: -x, (np.float16(2),), (np.float32(4),))
    fun = lambda x: x + 1
    shape_msg = "jvp called with different primal and tangent shapes"
    for p, t in [
        (jnp.array([1.0, 2.0, 3.0]), jnp.array([1.0, 2.0, 3.0, 4.0])),
        (jnp.float32(10.0), jnp.array([1.0, 2.0, 3.0], dtype=jnp.float32)),
        (jnp.array([1.0, 2.0, 3.0], dtype=jnp.float32), jnp.float32(20.0)),
        (jnp.array([1.0, 2.0, 3.0]), 20.0),
    ]:
        with pytest.raises(ValueError, match=shape_msg):
            jvp(fun, (p,), (t,))


def test_jvp_non_tuple_arguments():
    """api_test.py APITest.test_jvp_non_tuple_arguments."""
    f = lambda x, y: x + y
    msg = "primal and tangent arguments to jvp must be tuples or lists; found {} and {}."
    with pytest.raises(TypeError, match=msg.format("float", "tuple")):
        jvp(f, 0.0, (1.0,))
    with pytest.raises(TypeError, match=msg.format("tuple", "ndarray")):
        jvp(f, (0.0,), np.array([1.0, 2.0]))


def test_jvp_jit_cached():
    """api_test.py APITest.test_jvp_jit_cached."""

    def fn(x):
        inner = lambda y: y * x
        return jax.jit(inner)(4.0) + jax.jit(inner)(5.0)

    close(jvp(fn, (5.0,), (1.0,)), (45.0, 9.0))


def test_heterogeneous_jacfwd():
    """api_test.py APITest.test_heterogeneous_jacfwd: each block has the output's dtype."""
    a = (np.array([2.0], dtype=np.float16), np.array([3.0], dtype=np.float32))
    actual = jacfwd(lambda t: (t[0], t[1], t[0] + t[1]))(a)
    desired = (
        (np.array(1.0, np.float16), np.array(0.0, np.float16)),
        (np.array(0.0, np.float32), np.array(1.0, np.float32)),
        (np.array(1.0, np.float32), np.array(1.0, np.float32)),
    )
    for got, want in zip(
        jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(desired), strict=True
    ):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got).reshape(()), want)


def test_complex_input_jacfwd_raises_error():
    """api_test.py APITest.test_complex_input_jacfwd_raises_error and test_jacfwd_of_complex_errors
    (jax's message: complex inputs need holomorphic=True)."""
    with pytest.raises(TypeError):
        jacfwd(jnp.sin)(1 + 2j)
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs .* but got complex"):
        jacfwd(lambda x: x**2)(3.0 + 1j)
    close(jacfwd(jnp.sin, holomorphic=True)(1 + 2j), jnp.cos(1 + 2j))


def test_jacfwd_of_int_errors():
    """jax's jacfwd message for integer inputs ("requires real-valued inputs")."""
    with pytest.raises(TypeError, match=r"jacfwd requires real-valued inputs"):
        jacfwd(lambda x: x * 2)(3)


@pytest.mark.parametrize("jit", [False, True])
def test_jvp_of_int(jit):
    """api_test.py APITest.test_jvp_of_int_identity / test_jvp_of_int_add / test_jit_jvp_of_int."""
    tangents = (np.zeros(shape=(), dtype=float0),)
    wrap = jax.jit if jit else (lambda f: f)
    _, out = jvp(wrap(lambda x: x), (1,), tangents)
    assert out == np.zeros(shape=(), dtype=float0) and out.dtype == float0
    _, out = jvp(wrap(lambda x: x + 1), (2,), tangents)
    assert out.dtype == float0


def test_jvp_of_convert_element_type():
    """api_test.py APITest.test_jvp_of_convert_element_type."""
    primal, tangent = jvp(lambda x: x.astype(np.int32) + 1, (2.0,), (1.0,))
    assert int(primal) == 3
    assert tangent.dtype == float0 and tangent.shape == ()


def test_jvp_asarray_returns_array():
    """api_test.py APITest.test_jvp_asarray_returns_array."""
    p, t = jvp(jnp.asarray, (1.0,), (2.0,))
    assert isinstance(p, jax.Array) and isinstance(t, jax.Array)


@pytest.mark.parametrize("remat", [lambda f: f, jax.checkpoint], ids=["plain", "remat"])
@pytest.mark.parametrize("which", ["scan", "cond"])
def test_const_in_jvp_scan_and_cond(remat, which):
    """api_test.py RematTest.test_const_in_jvp_scan / test_const_in_jvp_cond (jacfwd for grad)."""

    @jax.custom_jvp
    def f(x):
        return x * jnp.arange(3.0)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (xdot,) = primals, tangents
        return f(x), xdot * jnp.arange(3.0)

    @remat
    def g(x):
        if which == "scan":
            y, _ = lax.scan(lambda c, _: (f(c), None), x, None, length=1)
        else:
            y = lax.cond(x.sum() > 0, f, lambda x: x, x)
        return y.sum()

    close(jacfwd(g)(jnp.arange(3.0)), jax.jacfwd(g)(jnp.arange(3.0)))


@pytest.mark.parametrize("x", [3.14, 2.72])
def test_cond_jvp(x):
    """lax_control_flow_test.py testCondJVP and testCondJVP2."""

    def fun(x):
        def false_fun(x):
            y = 2 * x
            return y, 2 * y

        return lax.cond(x < 3, lambda x: (x, x), false_fun, x)

    fun_ref = lambda x: (x, x) if x < 3 else (2 * x, 4 * x)
    close(jvp(fun, (x,), (x,)), jax.jvp(fun_ref, (x,), (x,)))
    check_fwd(fun, (np.float32(x),), 2)
    fun2 = lambda x: lax.cond(x < 3, lambda _: 2.0, lambda x: 2.0 * x, x)
    close(jvp(fun2, (x,), (x,)), jax.jvp(lambda x: 2.0 if x < 3 else 2.0 * x, (x,), (x,)))


def test_switch_jvp():
    """lax_control_flow_test.py testSwitchJVP."""
    branches = [lambda x: (x, x), lambda x: (2 * x, 4 * x), lambda x: (x, -x)]

    def fun(x):
        return lax.switch(lax.convert_element_type(x // 1, np.int32), branches, x)

    def fun_ref(x):
        idx = x // 1
        return branches[0 if idx <= 0 else 1 if idx == 1 else 2](x)

    for x in [-0.7, 0.7, 1.7, 2.7, 3.7]:
        close(jvp(fun, (x,), (x,)), jax.jvp(fun_ref, (x,), (x,)))
    check_fwd(fun, (np.float32(1.7),), 2)  # upstream checks every x at order 2


@pytest.mark.parametrize(
    "jit_scan,jit_f",
    [
        (False, False),
        *(pytest.param(a, b, marks=pytest.mark.slow) for a, b in [(0, 1), (1, 0), (1, 1)]),
    ],
)
def test_scan_jvp(jit_scan, jit_f):
    """lax_control_flow_test.py testScanJVP (reference: a Python loop)."""
    d = R.standard_normal(2).astype(np.float32)

    def f(c, a):
        b = jnp.cos(jnp.sum(jnp.sin(a)) + jnp.sum(jnp.cos(c)) + jnp.sum(d))
        return jnp.sin(c * b), b

    if jit_f:
        f = jax.jit(f)
    scan = jax.jit(lax.scan, static_argnums=(0,)) if jit_scan else lax.scan

    def scan_reference(f, c, as_):
        ys = []
        for a in as_:
            c, y = f(c, a)
            ys.append(y)
        return c, jnp.stack(ys)

    as_ = R.standard_normal((5, 3)).astype(np.float32)
    c = R.standard_normal(4).astype(np.float32)
    ans = jvp(lambda c, as_: scan(f, c, as_), (c, as_), (c, as_))
    expected = jax.jvp(lambda c, as_: scan_reference(f, c, as_), (c, as_), (c, as_))
    close(ans, expected, 1e-4)
    check_fwd(partial(scan, f), (c, as_), 2, tol=1e-4, numeric_tol=2e-1)


@pytest.mark.parametrize(
    "jit_loop,jit_body,jit_cond",
    [
        pytest.param(*v, marks=() if v in {(0, 0, 0), (1, 1, 1)} else pytest.mark.slow)
        for v in itertools.product((0, 1), repeat=3)
    ],
)
def test_while_jvp(jit_loop, jit_body, jit_cond):
    """lax_control_flow_test.py testWhileJVP."""
    cond = lambda x: x[0, 2] <= 8
    body = lambda x: x * x
    cond = jax.jit(cond) if jit_cond else cond
    body = jax.jit(body) if jit_body else body
    loop = partial(lax.while_loop, cond, body)
    loop = jax.jit(loop) if jit_loop else loop

    def loop_ref(x):
        while cond(x):
            x = body(x)
        return x

    x = jnp.arange(9.0).reshape((3, 3))
    close(jvp(loop, (x,), (x,)), jax.jvp(loop_ref, (x,), (x,)))
    check_fwd(loop, (x,), 2, numeric_tol=None)


def test_while_jvp_via_fori_loop():
    """lax_control_flow_test.py testWhileJVPViaForiLoop."""
    f = lambda x: lax.fori_loop(0, 3, lambda i, x: x * 2, x)
    close(jvp(f, (2.0,), (1.0,)), (16.0, 8.0))
    check_fwd(f, (np.float32(2.0),), 2)
    f = lambda x: lax.fori_loop(0, 3, lambda i, x: x * (i + 1), x)
    close(jvp(f, (2.0,), (1.0,)), (12.0, 6.0))
    check_fwd(f, (np.float32(2.0),), 2)


def test_while_jvp_with_growing_nonzero_tangents():
    """lax_control_flow_test.py testWhileJVPWithGrowingNonzeroTangents: y, z start inactive."""
    y, z = R.standard_normal(2).astype(np.float32), R.standard_normal(2).astype(np.float32)

    def body(state):
        i, x, _, _ = state
        y = x * x
        return i + 1, x, y, y * y

    def loop(x):
        return lax.while_loop(lambda s: s[0] < 2, body, (0, x, y, z))[1:]

    def loop_ref(x):
        s = (0, x, y, z)
        while s[0] < 2:
            s = body(s)
        return s[1:]

    x = R.standard_normal(2).astype(np.float32)
    close(jvp(loop, (x,), (x,)), jax.jvp(loop_ref, (x,), (x,)))
