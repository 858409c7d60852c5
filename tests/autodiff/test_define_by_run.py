"""Python control flow on values (issue 36 item 5, ``tape/define_by_run.py``): outside jit a
function that branches on (or converts) the value of a differentiated argument is differentiated
define-by-run on the concrete values, with jax's answers (and torch.func's where torch is
installed); under jit one ``ValueControlFlowError`` names the function and the line and suggests
``jnp.where`` / ``lax.cond``."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxparadigm.autodiff import func, jvp
from jaxparadigm.autodiff.graph import Graph, flat_trace
from jaxparadigm.autodiff.tape.control_flow_error import ValueControlFlowError
from jaxparadigm.autodiff.tape.define_by_run import EagerGraph


def piecewise(w):
    return w**2 if w > 0 else -w


def loop_until(x):
    """A while loop whose trip count depends on the value, and an if inside it."""
    y, steps = x, 0
    while jnp.sum(y) < 10.0:
        y = y * 1.5 + jnp.sin(y) if steps % 2 == 0 else y * y + 1.0
        steps += 1
    return jnp.sum(y * x)


@pytest.mark.parametrize("w", [2.0, -3.0, 0.5])
def test_issue_example_equals_jax(w):
    assert float(func.grad(piecewise)(w)) == pytest.approx(float(jax.grad(piecewise)(w)), rel=1e-6)


def test_issue_example_equals_torch_func():
    torch = pytest.importorskip("torch")
    for w in (2.0, -3.0):
        ref = torch.func.grad(piecewise)(torch.tensor(w))
        assert float(func.grad(piecewise)(w)) == pytest.approx(float(ref), rel=1e-6)


def test_branch_follows_the_value_on_every_call():
    """The recording is never cached: same shapes, different values, different branches."""
    g = func.grad(piecewise)
    assert [float(g(w)) for w in (2.0, -3.0, 4.0, -1.0)] == [4.0, -1.0, 8.0, -1.0]


def test_loops_and_ifs_on_values_all_transforms():
    x = jnp.array([0.7, 1.3, 0.4])
    ref_g = jax.grad(loop_until)(x)
    np.testing.assert_allclose(func.grad(loop_until)(x), ref_g, rtol=1e-5)
    g, v = func.grad_and_value(loop_until)(x)
    np.testing.assert_allclose(g, ref_g, rtol=1e-5)
    assert float(v) == pytest.approx(float(loop_until(x)), rel=1e-6)
    out, pullback = func.vjp(loop_until, x)
    np.testing.assert_allclose(pullback(jnp.float32(2.0))[0], 2 * ref_g, rtol=1e-5)
    t = jnp.array([1.0, -0.5, 2.0])
    np.testing.assert_allclose(jvp(loop_until, (x,), (t,))[1], jnp.vdot(ref_g, t), rtol=1e-5)
    np.testing.assert_allclose(func.jacrev(loop_until)(x), ref_g, rtol=1e-5)
    np.testing.assert_allclose(func.jacfwd(loop_until)(x), ref_g, rtol=1e-5)
    np.testing.assert_allclose(func.hessian(loop_until)(x), jax.hessian(loop_until)(x), rtol=1e-4)


def test_argnums_and_has_aux():
    def f(a, b, scale):
        if jnp.sum(a) > jnp.sum(b):
            out = jnp.sum(a * b) * scale
        else:
            out = jnp.sum(jnp.exp(a) - b) * scale
        return out, {"branch": jnp.sum(a) > jnp.sum(b)}

    a, b = jnp.array([1.0, 2.0]), jnp.array([0.5, -1.0])
    for x, y in ((a, b), (b, a)):
        g, aux = func.grad(f, argnums=(1, 0), has_aux=True)(x, y, 3.0)
        ref, ref_aux = jax.grad(f, argnums=(1, 0), has_aux=True)(x, y, 3.0)
        for u, r in zip(g, ref, strict=True):
            np.testing.assert_allclose(u, r, rtol=1e-6)
        assert bool(aux["branch"]) == bool(ref_aux["branch"])


def test_custom_rules_inside_a_branching_function():
    """custom_jvp (jax.nn.relu: derivative 0 at 0 by its rule) and custom_vjp recorded as such."""

    @jax.custom_vjp
    def clip_grad(x):
        return x

    clip_grad.defvjp(lambda x: (x, None), lambda _, ct: (jnp.clip(ct, -0.1, 0.1),))

    def f(x):
        h = jax.nn.relu(x) if x[0] >= 0 else jnp.tanh(x)
        return jnp.sum(clip_grad(h) * 3.0 + h)

    for x in (jnp.array([0.0, 1.0, -2.0]), jnp.array([-1.0, 0.5, 0.0])):
        np.testing.assert_allclose(func.grad(f)(x), jax.grad(f)(x), rtol=1e-6)


def test_only_a_branching_function_runs_define_by_run():
    graph = flat_trace(lambda w: jnp.sin(w) * w, (2.0,))[0]
    assert isinstance(graph, Graph)
    assert isinstance(flat_trace(piecewise, (2.0,))[0], EagerGraph)


def test_under_jit_one_error_names_the_function_and_line():
    with pytest.raises(ValueControlFlowError) as info:
        jax.jit(func.grad(piecewise))(2.0)
    msg = str(info.value)
    line = piecewise.__code__.co_firstlineno
    assert re.search(rf"`piecewise` \(.*test_define_by_run.py:{line}\)", msg)
    assert f"test_define_by_run.py:{line + 1}: return w**2 if w > 0 else -w" in msg
    assert "jnp.where" in msg and "lax.cond" in msg
    # a ConcretizationTypeError, as jax raises for the same function under jit
    assert isinstance(info.value, jax.errors.ConcretizationTypeError)
    with pytest.raises(ValueControlFlowError, match="piecewise"):
        jax.vmap(func.grad(piecewise))(jnp.array([1.0, -1.0]))
    with pytest.raises(ValueControlFlowError, match="piecewise"):
        jax.jit(lambda w: jvp(piecewise, (w,), (1.0,)))(2.0)


def test_under_jit_the_suggested_spellings_work():
    where = lambda w: jnp.where(w > 0, w**2, -w)
    cond = lambda w: lax.cond(w > 0, lambda v: v**2, lambda v: -v, w)
    for f in (where, cond):
        for w in (2.0, -3.0):
            assert float(jax.jit(func.grad(f))(w)) == float(jax.grad(piecewise)(w))


CONVERSIONS = {
    "int": int,
    "bool": bool,
    "item": lambda v: v.item(),
    "float": float,
    "complex": lambda v: complex(v).real,
}


@pytest.mark.parametrize("name", list(CONVERSIONS))
def test_python_scalar_conversions_are_the_value_as_a_constant(name):
    """``int``, ``bool``, ``.item()``, ``float``, ``complex`` of a differentiated value are that
    value as a Python constant, in every transform (``float``/``complex`` raised jax's
    ``ConcretizationTypeError`` where the other three worked). The oracle: jax's derivative of the
    same function with the constant computed from the value outside any trace."""
    conv = CONVERSIONS[name]
    x = jnp.float32(2.5)

    def f(x, c):
        return jnp.sin(x) * c * x

    constant = conv(x)  # jax, no tracing
    assert isinstance(constant, (int, bool, float))
    want = {
        "grad": jax.grad(f)(x, constant),
        "jacfwd": jax.jacfwd(f)(x, constant),
        "hessian": jax.hessian(f)(x, constant),
    }
    for transform, expected in want.items():
        got = getattr(func, transform)(lambda x: f(x, conv(x)))(x)
        np.testing.assert_allclose(got, expected, rtol=1e-6, err_msg=f"{name}: {transform}")
    assert float(func.grad(lambda x: f(x, conv(x)))(x)) != 0.0


def test_float_of_a_value_under_jit_is_the_one_control_flow_error():
    with pytest.raises(ValueControlFlowError):
        jax.jit(func.grad(lambda x: x * float(x)))(jnp.float32(2.5))
