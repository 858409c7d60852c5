"""Port of jax's ``custom_vjp`` tests under our reverse mode: jax-ml/jax tests/custom_api_test.py.

(``custom_vjp`` tests moved from tests/api_test.py to tests/custom_api_test.py upstream.) Each test
names the upstream test (``CustomVJPTest.<name>``) it ports: the same ``jax.custom_vjp``
functions, differentiated by ``jaxparadigm.autodiff.grad``/``value_and_grad``/``vjp`` (which must
call the user's ``fwd`` and ``bwd``), with upstream's expected values. ``allow_int`` tests are not
ported (our ``grad`` refuses integer inputs).
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxparadigm.autodiff import grad, value_and_grad, vjp


def _sin_with_rule(scale=2.0):
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    f.defvjp(lambda x: (f(x), jnp.cos(x)), lambda cos_x, g: (scale * cos_x * g,))
    return f


def close(a, b):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6, atol=1e-7)


def test_basic():
    """CustomVJPTest.test_basic."""
    f = _sin_with_rule()
    x = 3.0
    close(f(x), jnp.sin(x))
    close(grad(f)(x), 2 * jnp.cos(x))
    close(value_and_grad(f)(x), (jnp.sin(x), 2 * jnp.cos(x)))


def test_invariance():
    """CustomVJPTest.test_invariance."""

    @jax.custom_vjp
    def f(x):
        return jnp.cos(2 * x) / 2.0

    f.defvjp(lambda x: (f(x), x), lambda x, g: (g * 3,))
    f2 = lambda x: value_and_grad(f)(x)[0]
    f3 = lambda x: value_and_grad(f2)(x)[0]
    x = 1.0
    close(f(x), f2(x))
    close(f(x), f3(x))
    close(grad(f)(x), grad(f2)(x))
    close(grad(f)(x), grad(f3)(x))


def test_python_control_flow_bwd():
    """CustomVJPTest.test_python_control_flow_bwd (control flow in fwd/bwd on the residual:
    the residual is traced, so the branch is taken with lax.cond here)."""

    @jax.custom_vjp
    def f(x):
        return lax.cond(x > 0, jnp.sin, jnp.cos, x)

    f.defvjp(
        lambda x: (f(x), x),
        lambda x, g: (lax.cond(x > 0, lambda: 2 * g, lambda: 3 * g),),
    )
    close(value_and_grad(f)(2.0), (jnp.sin(2.0), 2.0))
    close(value_and_grad(f)(-2.0), (jnp.cos(-2.0), 3.0))


def test_vmap():
    """CustomVJPTest.test_vmap (the grad parts)."""
    f = _sin_with_rule()
    x, xx = jnp.arange(3.0), jnp.arange(6.0).reshape(2, 3)
    close(jax.vmap(grad(f))(x), 2 * jnp.cos(x))
    close(jax.vmap(value_and_grad(f))(x), (jnp.sin(x), 2 * jnp.cos(x)))
    close(jax.vmap(jax.vmap(grad(f)))(xx), 2 * jnp.cos(xx))
    close(grad(lambda x: jax.vmap(f)(x).sum())(x), 2 * jnp.cos(x))
    close(grad(lambda x: jax.vmap(jax.vmap(f))(x).sum())(xx), 2 * jnp.cos(xx))
    close(jax.vmap(grad(lambda x: jax.vmap(f)(x).sum()))(xx), 2 * jnp.cos(xx))


def test_jit():
    """CustomVJPTest.test_jit."""
    f = _sin_with_rule()
    close(jax.jit(grad(f))(3.0), 2 * jnp.cos(3.0))
    close(grad(jax.jit(f))(3.0), 2 * jnp.cos(3.0))


def test_pytrees():
    """CustomVJPTest.test_pytrees."""

    @jax.custom_vjp
    def f(x):
        return {"b": jnp.sin(x["a"])}

    f.defvjp(
        lambda x: (f(x), {"r": jnp.cos(x["a"])}),
        lambda res, g: ({"a": 2 * res["r"] * g["b"]},),
    )
    x = {"a": 3.0}
    close(grad(lambda x: f(x)["b"])(x), {"a": 2 * jnp.cos(x["a"])})


def test_kwargs():
    """CustomVJPTest.test_kwargs (jax issue #1938)."""

    @jax.custom_vjp
    def my_fun(x, y, c=1.0):
        return c * (x + y)

    my_fun.defvjp(lambda x, y, c=1.0: (my_fun(c, y, c), None), lambda _, g: (g, g, g))
    f = lambda x, y: jnp.square(my_fun(x, y, c=2.0)).sum()
    close(grad(f)(10.0, 5.0), jax.grad(f)(10.0, 5.0))


def test_initial_style():
    """CustomVJPTest.test_initial_style: a custom_vjp inside a scan, first and second order."""
    f = _sin_with_rule()
    foo = lambda x: lax.scan(lambda c, _: (f(c), None), x, None, length=1)[0]
    close(grad(foo)(3.0), 2.0 * jnp.cos(3.0))
    close(grad(grad(foo))(3.0), -2.0 * jnp.sin(3.0))


def test_initial_style_vmap():
    """CustomVJPTest.test_initial_style_vmap."""

    @jax.custom_vjp
    def f(x):
        assert jnp.ndim(x) == 0
        return 3 * x

    f.defvjp(lambda x: (f(x), jnp.cos(x)), lambda cos_x, g: (2 * cos_x * g,))
    foo = lambda x: lax.scan(lambda c, _: (f(c), None), x, None, length=1)[0]
    close(grad(lambda x: jax.vmap(foo)(x).sum())(jnp.arange(3.0)), 2.0 * jnp.cos(jnp.arange(3.0)))


def test_nondiff_argnums():
    """CustomVJPTest.test_nondiff_argnums."""

    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    app.defvjp(lambda f, x: (app(f, x), jnp.cos(x)), lambda f, cos_x, g: (cos_x * g,))
    close(value_and_grad(lambda x: app(lambda y: 2 * y, x))(1.0), (2.0, jnp.cos(1.0)))


def test_nondiff_argnames():
    """CustomVJPTest.test_nondiff_argnames."""

    @partial(jax.custom_vjp, nondiff_argnames=("f",))
    def app(f, x):
        return f(x)

    app.defvjp(lambda f, x: (app(f, x), jnp.cos(x)), lambda f, cos_x, g: (cos_x * g,))
    close(value_and_grad(lambda x: app(lambda y: 2 * y, x))(1.0), (2.0, jnp.cos(1.0)))


def test_nondiff_argnums_unhashable():
    """CustomVJPTest.test_nondiff_argnums_unhashable."""

    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(lst, x):
        return lst[0] * jnp.sin(x)

    f.defvjp(lambda lst, x: (f(lst, x), jnp.cos(x)), lambda lst, cos_x, g: (lst[0] * cos_x * g,))
    lst = [2.0]
    close(grad(f, argnums=1)(lst, 3.0), 2.0 * jnp.cos(3.0))
    close(jax.jit(lambda x: grad(f, argnums=1)(lst, x))(3.0), 2.0 * jnp.cos(3.0))
    close(jax.vmap(grad(lambda x: f(lst, x)))(jnp.arange(3.0)), 2.0 * jnp.cos(jnp.arange(3.0)))


def test_nondiff_argnums_argnames():
    """CustomVJPTest.test_nondiff_argnums_argnames."""

    @partial(jax.custom_vjp, nondiff_argnums=(0,), nondiff_argnames=("g",))
    def app(f, g, x):
        return f(x) + g(x)

    app.defvjp(lambda f, g, x: (app(f, g, x), jnp.cos(x)), lambda f, g, cos_x, v: (cos_x * v,))
    f = g = lambda x: 2 * x
    close(value_and_grad(lambda x: app(f, g, x))(1.0), (4.0, jnp.cos(1.0)))


def test_clip_gradient():
    """CustomVJPTest.test_clip_gradient (jax issue #2784)."""

    @jax.custom_vjp
    def _clip_gradient(lo, hi, x):
        return x

    _clip_gradient.defvjp(
        lambda lo, hi, x: (x, (lo, hi)),
        lambda res, g: (None, None, jnp.clip(g, res[0], res[1])),
    )
    clip_gradient = lambda x: _clip_gradient(-0.1, x + 0.1, x)
    close(grad(clip_gradient)(0.1), jnp.array(0.2))


def test_nestable_vjp():
    """CustomVJPTest.test_nestable_vjp (jax issue #3667): our vjp inside fwd, its pullback as
    the residual."""
    f = lambda x: x**2

    @jax.custom_vjp
    def g(x):
        return f(x)

    g.defvjp(lambda x: vjp(f, x), lambda f_vjp, y_bar: f_vjp(y_bar))
    _, g_vjp = vjp(g, 1.0)
    (y,) = g_vjp(1.0)
    close(y, 2.0)

    @jax.jit
    def z(x):
        _, g_vjp = vjp(g, x)
        return g_vjp

    (y,) = z(1.0)(3.0)
    close(y, 6.0)


def _closes_over(capture_in):
    def f(y):
        @jax.custom_vjp
        def h(x):
            return 2.0 * jnp.sin(x)

        if capture_in == "bwd":
            h.defvjp(lambda x: (h(x), ()), lambda _, g: (2.0 * jnp.cos(y) * g,))
        else:
            h.defvjp(lambda x: (h(x), y), lambda y, g: (2.0 * jnp.cos(y) * g,))
        return grad(h)(1.0)

    return f


def test_bwd_closes_over_tracer():
    """CustomVJPTest.test_bwd_closes_over_tracer / test_fwd_closes_over_tracer."""
    for where in ("bwd", "fwd"):
        f = _closes_over(where)
        close(jax.jit(f)(2.0), 2.0 * jnp.cos(2.0))
        close(jax.vmap(f)(jnp.arange(3.0)), 2.0 * jnp.cos(jnp.arange(3.0)))
        close(jax.jit(jax.vmap(f))(jnp.arange(3.0)), 2.0 * jnp.cos(jnp.arange(3.0)))
        close(jax.vmap(jax.jit(f))(jnp.arange(3.0)), 2.0 * jnp.cos(jnp.arange(3.0)))
        close(grad(f)(4.0), -2.0 * jnp.sin(4.0))


def test_remat():
    """CustomVJPTest.test_remat."""
    f = _sin_with_rule()
    g = jax.remat(lambda x: f(f(x)))
    close(grad(g)(2.0), 4.0 * jax.grad(lambda x: jnp.sin(jnp.sin(x)))(2.0))


def test_remat_pytree_arg():
    """CustomVJPTest.test_remat_pytree_arg."""

    @jax.custom_vjp
    def f(xy):
        return xy["a"] * xy["b"]

    f.defvjp(lambda xy: (f(xy), xy), lambda xy, g: ({"a": g * xy["b"], "b": g * xy["a"]},))
    g = jax.remat(lambda xy: jnp.sin(f(xy)))
    close(grad(g)({"a": 2.0, "b": 3.0}), {"a": np.cos(6.0) * 3.0, "b": np.cos(6.0) * 2.0})


def test_remat_nondiff_argnums():
    """CustomVJPTest.test_remat_nondiff_argnums."""

    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(k, x):
        return jnp.sin(k * x)

    f.defvjp(lambda k, x: (f(k, x), jnp.cos(k * x)), lambda k, cos_kx, g: (k * cos_kx * g,))
    g = jax.remat(lambda x: f(2.0, x) * 3.0)
    close(grad(g)(0.5), 3.0 * 2.0 * np.cos(2.0 * 0.5))


def test_symbolic_zeros_nondiff_argnums():
    """CustomVJPTest.test_symbolic_zeros_nondiff_argnums."""

    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(k, x):
        return k * x

    def f_fwd(k, x):
        assert isinstance(x.perturbed, bool)
        return f(k, x.value), None

    f.defvjp(f_fwd, lambda k, _, g: (k * g,), symbolic_zeros=True)
    close(grad(lambda x: f(2.0, x))(3.0), 2.0)


def test_remat_higher_order():
    """CustomVJPTest.test_remat_higher_order."""
    f = _sin_with_rule()
    g = lambda x: f(f(x))
    close(grad(grad(jax.remat(g)))(2.0), jax.grad(jax.grad(g))(2.0))
    close(grad(jax.remat(grad(g)))(2.0), jax.grad(jax.grad(g))(2.0))
    close(grad(grad(grad(jax.remat(g))))(2.0), jax.grad(jax.grad(jax.grad(g)))(2.0))


def test_bwd_nones():
    """CustomVJPTest.test_bwd_nones / test_bwd_nones_vmap / test_bwd_nones_pytree."""

    @jax.custom_vjp
    def f(x, y):
        return x * jnp.sin(y)

    f.defvjp(lambda x, y: (f(x, y), jnp.cos(y)), lambda cos, g: (None, 2 * cos * g))
    close(grad(lambda x: f(x, x))(3.0), 2 * jnp.cos(3.0))
    close(grad(lambda x: jax.vmap(f)(x, x).sum())(jnp.arange(3.0)), 2 * jnp.cos(jnp.arange(3.0)))

    @jax.custom_vjp
    def h(xs, y):
        return xs[0] * xs[1] * jnp.sin(y)

    h.defvjp(lambda xs, y: (h(xs, y), jnp.cos(y)), lambda cos, g: (None, 2 * cos * g))
    close(grad(lambda x: h((x, x), x))(3.0), 2 * jnp.cos(3.0))


def test_custom_vjp_closure_4521():
    """CustomVJPTest.test_custom_vjp_closure_4521: a custom_vjp with no output under our vjp."""

    @jax.custom_vjp
    def g(x, y):
        return None

    def g_bwd(residuals, z_bar):
        raise AssertionError("bwd must not run")

    g.defvjp(lambda x, y: (None, y), g_bwd)

    def f(xs, y):
        jax.vmap(g, in_axes=(0, None), out_axes=None)(xs, y)

    def scan_body(xs, _):
        _, vjp_f = vjp(f, xs, jnp.zeros(1))
        vjp_f(None)
        return xs, None

    lax.scan(scan_body, jnp.ones(5), None, 10)


def test_float0_bwd_none():
    """CustomVJPTest.test_float0_bwd_none."""

    @jax.custom_vjp
    def f(i, x):
        return jnp.sin(x)

    f.defvjp(lambda i, x: (f(i, x), jnp.cos(x)), lambda cos_x, g: (None, 2 * cos_x * g))
    close(grad(f, 1)(jnp.array([1, 2]), 3.0), 2 * jnp.cos(3.0))


def test_custom_gradient():
    """CustomVJPTest.test_custom_gradient / _2 / _3 / _can_return_singleton_value_in_vjp."""

    @jax.custom_gradient
    def f(x):
        return x**2, lambda g: (g * x,)

    close(grad(f)(3.0), 3.0)
    close(grad(grad(f))(3.0), 1.0)

    @jax.custom_gradient
    def f2(x, y):
        return x * y, lambda g: (y, x)

    close(grad(f2, argnums=(0, 1))(3.0, 4.0), (4.0, 3.0))

    @jax.custom_gradient
    def f3(x):
        return jnp.sum(jnp.sin(x)), lambda g: (jnp.cos(x) * jnp.arange(3.0, 6.0),)

    close(grad(f3)(jnp.arange(3.0)), jnp.cos(jnp.arange(3.0)) * jnp.arange(3.0, 6.0))

    @jax.custom_gradient
    def f4(x):
        return x**2, lambda g: g * x

    close(grad(f4)(3.0), 3.0)
    close(grad(grad(f4))(3.0), 1.0)


def _cos_after_rule():
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def _cos_after(fn, x, *args):
        return jnp.cos(fn(x, *args))

    def fwd(fn, x, *args):
        return _cos_after(fn, x, *args), (x, args)

    def rev(fn, res, g):
        x, args = res
        return (17.0 * x, *[42.0 * a for a in args])

    _cos_after.defvjp(fwd, rev)

    def cos_after(fn, x):
        converted_fn, aux_args = jax.closure_convert(fn, x)
        assert len(aux_args) <= 1
        return _cos_after(converted_fn, x, *aux_args)

    return cos_after


def test_closure_convert():
    """CustomVJPTest.test_closure_convert."""
    cos_after = _cos_after_rule()
    dist = lambda c, x: jnp.sum((x - c) ** 2.0)
    solve = lambda c, x: cos_after(lambda x: dist(c, x), x)
    c, x = 2.0 * jnp.ones(2), jnp.ones(2)
    close(solve(c, x), jnp.cos(dist(c, x)))
    g_c, g_x = grad(solve, argnums=(0, 1))(c, x)
    close(g_c, 42.0 * c)
    close(g_x, 17.0 * x)


def test_closure_convert_mixed_consts():
    """CustomVJPTest.test_closure_convert_mixed_consts (jax issue #6415)."""
    cos_after = _cos_after_rule()
    dist = lambda c, s, x: jnp.sum(s * (x - c) ** 2.0)
    solve = lambda c, s, x: cos_after(lambda x: dist(c, s, x), x)
    c, s, x = 2.0 * jnp.ones(2), 3.0 * jnp.ones(2), jnp.ones(2)
    g_c, g_x = grad(solve, argnums=(0, 2))(c, s, x)
    close(g_c, 42.0 * c)
    close(g_x, 17.0 * x)


def test_float0_cotangents_automatically_handled():
    """CustomVJPTest.test_float0_cotangents_automatically_handled."""

    @jax.custom_vjp
    def f(x, y):
        return x

    f.defvjp(lambda x, y: (x, None), lambda _, zbar: (0.0, 1))
    out = jax.jit(lambda x: vjp(f, 0.0, x)[1](1.0))(1)
    close(out[0], 0.0)


def test_run_rules_more_than_once():
    """CustomVJPTest.test_run_rules_more_than_once (jax issue #16614)."""

    @jax.custom_vjp
    def f(x, y):
        return x + y

    def f_fwd(x, y):
        return x.value + y.value, (None if y.perturbed else [])

    f.defvjp(f_fwd, lambda res, ct: (ct, ct), symbolic_zeros=True)

    def body(x_y, _):
        x, y = x_y
        return (f(x, y), x), None

    g = grad(lambda x: lax.scan(body, (x, 1.0), xs=None, length=2)[0][0])
    close(g(1.0), jax.grad(lambda x: lax.scan(body, (x, 1.0), xs=None, length=2)[0][0])(1.0))


def test_symbolic_zeros_remat():
    """CustomVJPTest.test_symbolic_zeros_remat."""

    @jax.custom_vjp
    def f(x):
        return x

    f.defvjp(lambda x: (f(x.value), None), lambda _, g: (g,), symbolic_zeros=True)
    close(grad(jax.remat(lambda x: f(f(x))))(3.0), 1.0)


def test_nones_representing_zeros_in_subtrees_returned_by_bwd():
    """CustomVJPTest.test_nones_representing_zeros_in_subtrees_returned_by_bwd (#8356) and
    test_pytree_nones_returned_by_bwd."""

    @jax.custom_vjp
    def f(x):
        return x[0]

    f.defvjp(lambda x: (f(x), None), lambda _, z_bar: ((z_bar, (None, None)),))
    close(grad(f)((1.0, (2.0, 3.0))), (1.0, (0.0, 0.0)))
    g = grad(f)((1.0, (2.0, None)))
    assert g[1][1] is None and float(g[0]) == 1.0


def test_bwd_rule_can_produce_list_or_tuple():
    """CustomVJPTest.test_bwd_rule_can_produce_list_or_tuple."""

    @jax.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (f(x, y), (x, y)), lambda xy, g: [g * xy[1], xy[0] * g])
    close(grad(f)(1.0, 2.0), 2.0)
