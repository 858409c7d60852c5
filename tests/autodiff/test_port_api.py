"""Port of jax's own grad / vjp / jacrev / remat tests: jax-ml/jax tests/api_test.py.

Each test names the upstream test (``APITest.<name>`` / ``RematTest.<name>``) it ports, with
``jax.grad``/``value_and_grad``/``vjp``/``jacrev`` replaced by ours and the upstream expected
values kept. Where we deliberately differ the test says so and pins our behaviour:

* error messages are ours (the exception types are jax's);
* ``grad`` traces ``f`` into a graph before running it (define-then-run); where ``f`` uses the
  value of a traced argument (``x.item()``) it falls back to define-by-run on the concrete
  values and answers as ``jax.grad`` does (issue 36 item 5);
* complex values differentiate as in jax (``holomorphic=``); integer inputs to ``grad`` are
  refused (no ``allow_int``); ``vjp`` returns float0 zeros for integer primals, as jax does.
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import dtypes, lax

from jaxparadigm.autodiff import func, grad, value_and_grad, vjp

jacrev = func.jacrev
R = np.random.default_rng(0)


def test_grad_item():
    """APITest.test_grad_item: ``.item()`` on the value; our grad runs f define-by-run here."""

    def f(x):
        return x**2 if x.astype(bool).item() else x

    assert float(jax.grad(f)(2.0)) == 4.0
    assert float(grad(f)(2.0)) == 4.0
    assert float(grad(f)(0.0)) == float(jax.grad(f)(0.0)) == 1.0


def test_grad_argnums():
    """APITest.test_grad_argnums."""

    def f(x, y, z, flag=False):
        assert flag
        return 1.0 * x + 2.0 * y + 3.0 * z

    assert grad(f)(1.0, 1.0, 1.0, flag=True) == 1.0
    assert grad(f, argnums=1)(1.0, 1.0, 1.0, flag=True) == 2.0
    assert grad(f, argnums=(2, 0))(1.0, 1.0, 1.0, flag=True) == (3.0, 1.0)


def test_value_and_grad_argnums():
    """APITest.test_value_and_grad_argnums."""

    def f(x, y, z, flag=False):
        assert flag
        return 1.0 * x + 2.0 * y + 3.0 * z

    y = f(1.0, 1.0, 1.0, flag=True)
    assert value_and_grad(f)(1.0, 1.0, 1.0, flag=True) == (y, 1.0)
    assert value_and_grad(f, argnums=1)(1.0, 1.0, 1.0, flag=True) == (y, 2.0)
    assert value_and_grad(f, argnums=(2, 0))(1.0, 1.0, 1.0, flag=True) == (y, (3.0, 1.0))


def test_grad_of_jit():
    """APITest.test_grad_of_jit: the jitted function is traced once."""
    side = []

    @jax.jit
    def f(x):
        side.append(None)
        return x * x

    assert grad(f)(1.0) == 2.0
    assert len(side) == 1
    assert grad(f)(2.0) == 4.0
    assert len(side) == 1


def test_jit_of_grad():
    """APITest.test_jit_of_grad."""
    side = []

    @jax.jit
    def f(x):
        side.append(None)
        return x * x

    g = jax.jit(grad(f))
    assert g(1.0) == 2.0
    assert len(side) == 1
    assert g(2.0) == 4.0
    assert len(side) == 1


def test_ad_weak_types():
    """APITest.test_ad_weak_types (grad; our jacrev's basis vectors are strongly typed)."""
    assert grad(lambda x: x)(1.0).weak_type
    assert jax.grad(lambda x: x)(1.0).weak_type


@pytest.mark.parametrize(
    "f,x",
    [
        (lambda x: (x, x), 1.0),  # test_grad_tuple_output
        (lambda x: (), np.zeros(3)),  # test_grad_unit_output
        (lambda x: x, np.zeros(3)),  # test_grad_nonscalar_output
    ],
)
def test_grad_nonscalar_outputs_raise_type_error(f, x):
    """APITest.test_grad_tuple_output / test_grad_unit_output / test_grad_nonscalar_output."""
    with pytest.raises(TypeError, match="scalar output"):
        grad(f)(x)


def test_grad_bad_input():
    """APITest.test_grad_bad_input / test_grad_object_array_error: TypeError."""
    with pytest.raises(TypeError):
        grad(lambda x: x)("foo")
    with pytest.raises(TypeError):
        grad(lambda x: x)(np.array([1, 2, 3], dtype=object))


def test_jacobian():
    """APITest.test_jacobian (reverse mode)."""
    A, x = R.standard_normal((4, 3)), R.standard_normal(3)
    np.testing.assert_allclose(jacrev(lambda x: jnp.dot(A, x))(x), A, rtol=1e-5)
    f = lambda x: jnp.tanh(jnp.dot(A, x))
    np.testing.assert_allclose(jacrev(f)(x), jax.jacfwd(f)(x), rtol=1e-5, atol=1e-6)


def test_jacobian_on_pytrees():
    """APITest.test_jacobian_on_pytrees (jacrev)."""
    assert jacrev(lambda x, y: (x, y))(0.0, 1.0) == (1.0, 0.0)
    assert jacrev(lambda x, y: (x, y), 1)(0.0, 1.0) == (0.0, 1.0)
    assert jacrev(lambda x, y: (x, y), (0, 1))(0.0, 1.0) == ((1.0, 0.0), (0.0, 1.0))
    ans = jacrev(lambda x: x[:2])((1.0, 2.0, 3.0))
    assert ans == ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0))
    x, y = jnp.array(R.standard_normal(2)), jnp.array(R.standard_normal(3))
    ans = jacrev(lambda x, y: {"x": x, "xy": jnp.outer(x, y)})(x, y)
    np.testing.assert_allclose(ans["x"], np.eye(2))
    np.testing.assert_allclose(
        ans["xy"], np.kron(np.eye(2), y[:, None]).reshape(2, 3, 2), rtol=1e-6
    )


def test_issue1372():
    """APITest.test_issue1372 (the reverse-over-reverse entries)."""
    quad = lambda x: jnp.dot(x, x)
    f = lambda x, u: quad(x) + quad(u)
    x, u = jnp.ones(5), jnp.ones(2)
    assert jacrev(jacrev(f, 0), 0)(x, u).shape == (5, 5)
    assert jacrev(jacrev(f, 1), 1)(x, u).shape == (2, 2)
    assert jacrev(jacrev(f, 1), 0)(x, u).shape == (2, 5)
    assert jacrev(jacrev(f, 0), 1)(x, u).shape == (5, 2)
    np.testing.assert_allclose(jacrev(jacrev(f, 0), 0)(x, u), 2 * np.eye(5))


def test_grad_and_aux_basic():
    """APITest.test_grad_and_aux_basic."""
    g, aux = grad(lambda x: (x**3, [x**2]), has_aux=True)(3.0)
    np.testing.assert_allclose(g, grad(lambda x: x**3)(3.0))
    np.testing.assert_allclose(aux, [9.0])


def test_grad_and_aux_error():
    """APITest.test_grad_and_aux_error (our message names the pair)."""
    for f in (lambda x: (1, 2, 3), lambda x: x, lambda x: (x,)):
        with pytest.raises(TypeError, match="has_aux=True requires .* pair"):
            grad(f, has_aux=True)(1.0)


def test_grad_and_aux_nested():
    """APITest.test_grad_and_aux_nested."""

    def f(x):
        g, aux = grad(lambda x: (x**3, [x**3]), has_aux=True)(x)
        return aux[0]

    f2 = lambda x: x**3
    assert grad(f)(4.0) == jax.grad(f2)(4.0)
    assert jax.jit(grad(f))(4.0) == jax.grad(f2)(4.0)
    assert jax.jit(grad(jax.jit(f)))(4.0) == jax.grad(f2)(4.0)

    def f(x):
        g, aux = grad(lambda x: (x**3, [x**3]), has_aux=True)(x)
        return aux[0] * jnp.sin(x)

    f2 = lambda x: x**3 * jnp.sin(x)
    np.testing.assert_allclose(grad(f)(4.0), jax.grad(f2)(4.0), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(grad(f))(4.0), jax.grad(f2)(4.0), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(grad(jax.jit(f)))(4.0), jax.grad(f2)(4.0), rtol=1e-6)


def test_grad_and_aux_constant():
    """APITest.test_grad_and_aux_constant."""
    g, aux = grad(lambda x: (x**3, [4.0]), has_aux=True)(4.0)
    assert g == jax.grad(lambda x: x**3)(4.0)
    assert aux == [4.0]
    g, aux = grad(lambda x: (x**3, [x**2, 4.0]), has_aux=True)(4.0)
    assert aux == [4.0**2, 4.0]


def test_grad_and_aux_no_tracers():
    """APITest.test_grad_and_aux_no_tracers (jax issue #1950)."""
    _, aux = grad(lambda x: (x**2, dict(identity=x, p1=x + 1)), has_aux=True)(3.0)
    assert isinstance(aux, dict)
    for val in aux.values():
        assert not isinstance(val, jax.core.Tracer)


def test_jacrev_and_aux_basic():
    """APITest.test_jacrev_and_aux_basic."""
    jac, aux = jacrev(lambda x: (x**3, [x**2]), has_aux=True)(3.0)
    np.testing.assert_allclose(jac, jacrev(lambda x: x**3)(3.0))
    np.testing.assert_allclose(aux, [9.0])


def test_jacrev_and_aux_nested():
    """APITest.test_jacrev_and_aux_nested."""

    def f(x):
        jac, aux = jacrev(lambda x: (x**3, [x**3]), has_aux=True)(x)
        return aux[0]

    f2 = lambda x: x**3
    assert jacrev(f)(4.0) == jax.jacrev(f2)(4.0)
    assert jax.jit(jacrev(f))(4.0) == jax.jacrev(f2)(4.0)
    assert jax.jit(jacrev(jax.jit(f)))(4.0) == jax.jacrev(f2)(4.0)

    def f(x):
        jac, aux = jacrev(lambda x: (x**3, [x**3]), has_aux=True)(x)
        return aux[0] * jnp.sin(x)

    f2 = lambda x: x**3 * jnp.sin(x)
    np.testing.assert_allclose(jacrev(f)(4.0), jax.jacrev(f2)(4.0), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(jacrev(f))(4.0), jax.jacrev(f2)(4.0), rtol=1e-6)


def test_vjp_mismatched_arguments():
    """APITest.test_vjp_mismatched_arguments: ValueError for structure and type."""
    _, pullback = vjp(lambda x, y: x * y, np.float32(3), np.float32(4))
    with pytest.raises(ValueError, match="structure"):
        pullback((np.float32(7), np.float32(100)))
    with pytest.raises(ValueError, match="type"):
        pullback(np.float16(42))


def test_vjp_bad_cotangent_shape():
    """APITest.test_vjp_bad_cotangent_shape."""
    x, y = np.ones((2, 5), np.float32), np.ones((5, 3), np.float32)
    _, pullback = vjp(jnp.matmul, x, y)
    with pytest.raises(ValueError, match="type"):
        pullback(np.ones((2, 4), dtype=np.float32))


def test_vjp_too_many_args():
    """APITest.test_vjp_too_many_args / test_vjp_multiple_arguments_error_message."""
    _, pullback = vjp(lambda x: (x, x), 1.0)
    with pytest.raises(TypeError):
        pullback(1.0, 1.0)


def test_complex_inputs_and_outputs_raise_type_error():
    """APITest.test_complex_grad_raises_error / test_complex_output_jacrev_raises_error /
    test_grad_complex_result_errors (jax's TypeError: a complex output needs holomorphic=True)."""
    with pytest.raises(TypeError, match="grad requires real-valued outputs"):
        grad(lambda x: jnp.sin(x))(1 + 2j)
    with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
        jacrev(lambda x: jnp.sin(x))(1 + 2j)
    with pytest.raises(TypeError, match="grad requires real-valued outputs"):
        grad(lambda x: x**2 + 1j)(3.0)


def test_heterogeneous_jacrev():
    """APITest.test_heterogeneous_jacrev (jax issues #7157, #7780)."""
    x, y = np.array([2.0], dtype=np.float16), np.array([3.0], dtype=np.float32)
    with jax.numpy_dtype_promotion("standard"):
        actual = jacrev(lambda tup: (tup[0], tup[1], tup[0] + tup[1]))((x, y))
    desired = (
        (np.array(1.0, np.float16), np.array(0.0, np.float32)),
        (np.array(0.0, np.float16), np.array(1.0, np.float32)),
        (np.array(1.0, np.float16), np.array(1.0, np.float32)),
    )
    for row_a, row_d in zip(actual, desired, strict=True):
        for a, d in zip(row_a, row_d, strict=True):
            assert a.dtype == d.dtype
            np.testing.assert_array_equal(np.reshape(a, ()), d)


def test_grad_of_int_errors():
    """APITest.test_grad_of_int_errors."""
    with pytest.raises(TypeError, match="int32"):
        grad(lambda x: x**2)(3)


def test_vjp_of_int_index():
    """APITest.test_vjp_of_int_index."""
    primal, fn_vjp = vjp(lambda x, i: x[i], np.ones(2) * 2, 1)
    tangent_x, tangent_i = fn_vjp(1.0)
    assert primal == 2.0
    np.testing.assert_allclose(tangent_x, [0.0, 1.0])
    assert tangent_i.dtype == dtypes.float0 and tangent_i.shape == ()


def test_vjp_of_int_shapes():
    """APITest.test_vjp_of_int_shapes."""
    _, fn_vjp = vjp(lambda x: lax.reshape(x, (2, 2)), np.ones((4, 1), dtype=int))
    (tangent,) = fn_vjp(np.zeros((2, 2), dtypes.float0))
    assert tangent.dtype == dtypes.float0 and tangent.shape == (4, 1)


def test_jit_vjp_of_int():
    """APITest.test_jit_vjp_of_int."""
    primal, fn_vjp = vjp(lambda x, y: x + y, 2, 1)
    tangent_x, tangent_i = jax.jit(fn_vjp)(np.zeros((), dtypes.float0))
    assert primal == 3
    assert tangent_x.dtype == tangent_i.dtype == dtypes.float0


def test_vjp_of_int_fulllike():
    """APITest.test_vjp_of_int_fulllike."""
    out, fn_vjp = vjp(lax.full_like, jnp.zeros((2, 2)), 1)
    np.testing.assert_allclose(out, jnp.ones((2, 2)))
    tangent_x, tangent_y = fn_vjp(out)
    np.testing.assert_allclose(tangent_x, jnp.zeros((2, 2)))
    assert tangent_y.dtype == dtypes.float0


def test_grad_of_bool_vjp3():
    """APITest.test_grad_of_bool_vjp3."""
    cond = lambda pred: lax.cond(pred, lambda _: 1.0, lambda _: 2.0, 1.0)
    value, f_vjp = vjp(cond, True)
    (grd,) = f_vjp(1.0)
    assert value == 1.0
    assert grd.dtype == dtypes.float0


def test_vjp_fun_jit():
    """APITest.test_vjp_fun_jit: the pullback goes into and out of jitted functions."""
    f = lambda x: 2.0 * x

    @partial(jax.jit, static_argnums=0)
    def linearize_vjp(f, x):
        _, vjp_fun = vjp(f, x)
        return vjp_fun

    linearized = linearize_vjp(f, 1.0)
    assert jax.jit(lambda f, x: f(x))(linearized, 3.0) == (6.0,)


def test_grad_negative_argnums():
    """APITest.test_grad_negative_argnums."""
    f = lambda x, y: x.sum() * y.sum()
    x, y = jnp.asarray(R.standard_normal((16, 16))), jnp.asarray(R.standard_normal((16, 16)))
    np.testing.assert_allclose(grad(f, argnums=-1)(x, y), jax.grad(f, argnums=-1)(x, y), rtol=1e-5)


def test_grad_does_not_unflatten_tree_with_none():
    """APITest.test_grad_does_not_unflatten_tree_with_none (jax issue #7546)."""

    class CustomNode(list):
        pass

    def unflatten(unused_aux_data, children):
        assert children[0] is not None
        return CustomNode(children)

    jax.tree_util.register_pytree_node(CustomNode, lambda x: (x, None), unflatten)
    grad(lambda x: x[0])(CustomNode([0.0]))


# -- RematTest ----------------------------------------------------------------------------------
REMATS = [
    pytest.param(jax.remat, id="remat"),
    pytest.param(partial(jax.remat, policy=lambda *_, **__: False), id="policy"),
    pytest.param(partial(jax.checkpoint, policy=lambda *_, **__: False), id="new"),
]


@pytest.mark.parametrize("remat", REMATS)
def test_remat_higher_order_autodiff(remat):
    """RematTest.test_remat_higher_order_autodiff."""
    f = lambda x: lax.cos(lax.sin(x))
    np.testing.assert_allclose(grad(grad(remat(f)))(3.0), jax.grad(jax.grad(f))(3.0), rtol=1e-6)


@pytest.mark.parametrize(
    "f", [lambda x: jnp.sin(jnp.sin(x)), lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x)]
)
def test_remat_higher_order_ad_preserves_remat_primitive(f):
    """RematTest.test_remat_higher_order_ad_preserves_remat_primitive (values; our second-order
    program keeps the recomputation inside the first backward's graph, not a remat primitive)."""
    g = jax.remat(f)
    np.testing.assert_allclose(grad(grad(g))(0.3), jax.grad(jax.grad(f))(0.3), rtol=1e-6)


@pytest.mark.parametrize("remat", [jax.remat, jax.checkpoint], ids=["remat", "new"])
def test_remat_scan(remat):
    """RematTest.test_remat_scan: values, and the reverse scan recomputes cos (the remat)."""
    to_scan = lambda c, x: (jnp.sin(c), None)
    f_noremat = lambda x: lax.scan(to_scan, x, np.arange(3.0))[0]
    f_yesremat = lambda x: lax.scan(remat(to_scan), x, np.arange(3.0))[0]
    np.testing.assert_allclose(f_yesremat(4.0), f_noremat(4.0), rtol=1e-6)
    np.testing.assert_allclose(grad(f_yesremat)(4.0), jax.grad(f_noremat)(4.0), rtol=1e-6)
    jaxpr = jax.make_jaxpr(vjp(f_yesremat, 4.0)[1])(1.0)
    scans = [e for e in jaxpr.eqns if e.primitive.name == "scan"]
    assert " cos " in str(scans[-1].params["jaxpr"])


@pytest.mark.parametrize("remat", REMATS)
def test_remat_binomial_checkpointing(remat):
    """RematTest.test_remat_binomial_checkpointing."""

    def binom_checkpoint(funs):
        if len(funs) == 1:
            return funs[0]
        f1 = binom_checkpoint(funs[: len(funs) // 2])
        f2 = binom_checkpoint(funs[len(funs) // 2 :])
        return remat(lambda x: f1(f2(x)))

    f1 = binom_checkpoint([jnp.sin, jnp.sin, jnp.sin, jnp.sin])
    f2 = lambda x: jnp.sin(jnp.sin(jnp.sin(jnp.sin(x))))
    np.testing.assert_allclose(grad(f1)(4.0), jax.grad(f2)(4.0), rtol=1e-6)


@pytest.mark.parametrize("remat", [jax.remat, jax.checkpoint], ids=["remat", "new"])
def test_remat_symbolic_zeros(remat):
    """RematTest.test_remat_symbolic_zeros (jax issue #1907): doesn't crash, equals jax."""
    _, split = jax.random.split(jax.random.key(0))
    r_init = jax.random.uniform(split, (5, 3), minval=0.0, maxval=5.0, dtype=jnp.float32)

    def func(d0):
        def move(r, i):
            return r + 0.001 * (d0 * r), jnp.array([0.0])

        r, _ = lax.scan(remat(move), r_init, jnp.arange(2))
        return r[0, 0]

    np.testing.assert_allclose(grad(func)(5.0), jax.grad(func)(5.0), rtol=1e-6)


@pytest.mark.parametrize("remat", REMATS)
def test_remat_jit3(remat):
    """RematTest.test_remat_jit3 (jax issue #2180)."""

    def f(w, x):
        a = jnp.dot(x, w)
        b = jnp.einsum("btd,bTd->btT", a, a)
        c = jnp.einsum("btT,btd->btd", b, a)
        return jnp.sum(c)

    w, x = jnp.ones([1, 1]), jnp.ones([1, 1, 1])
    np.testing.assert_allclose(grad(remat(f))(w, x), jax.grad(f)(w, x))

    mul = jax.jit(lambda a, b: a * b)
    g = remat(lambda w, x: mul(mul(w, x), mul(w, x)))
    assert float(grad(g)(1.0, 1.0)) == float(jax.grad(g)(1.0, 1.0)) == 2.0


@pytest.mark.parametrize("remat", [jax.remat, jax.checkpoint], ids=["remat", "new"])
def test_remat_scan2(remat):
    """RematTest.test_remat_scan2 (jax issue #1963)."""

    def scan_bug(x0):
        f = lambda x, _: (x + 1, None)
        scanned_f = lambda x, _: (lax.scan(f, x, xs=None, length=1)[0], None)
        x, _ = remat(scanned_f)(x0, None)
        return x

    assert float(grad(scan_bug)(1.0)) == 1.0


@pytest.mark.parametrize("remat", [jax.remat, jax.checkpoint], ids=["remat", "new"])
def test_remat_nontrivial_env(remat):
    """RematTest.test_remat_nontrivial_env (jax issue #2030), differentiated."""

    @remat
    def foo(state, dt=0.5, c=1):
        u, u_t = state
        return (u, u_t + c**2 * u * dt)

    def loss(u0, target, steps=3, dt=0.5**0.5, c=1):
        (uf, _), _ = lax.scan(
            lambda s, _: (foo(s, dt, c), _), (u0, jnp.zeros_like(u0)), None, steps
        )
        return ((uf - target) ** 2).mean()

    u0, target = jnp.ones((4, 4)), jnp.zeros((4, 4))
    np.testing.assert_allclose(grad(loss)(u0, target), jax.grad(loss)(u0, target), rtol=1e-6)
