"""Proof that our transforms run on our engine: jax's own AD entry points are never called (C3.2).

Every public AD function of jax (``jax.jvp``, ``jax.linearize``, ``jax.vjp``, ``jax.grad``,
``jax.value_and_grad``, ``jax.jacfwd``, ``jax.jacrev``, ``jax.hessian``; also their
``jax._src.api`` originals) is replaced by a function that fails, and so are jax's internal
JVP tracer and transpose pass (``ad.JVPTrace.process_primitive``, ``ad.backward_pass``), which
every jax AD path goes through. Our ``grad`` (eager and under ``jax.jit``), ``vjp``, ``jvp``,
``jacfwd``, ``jacrev``, ``hessian``, ``hvp`` then still run -- on programs with custom_jvp (relu, softplus), control flow and jit -- and equal
values computed by jax before the patch.
"""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax._src import api as jax_api
from jax._src.interpreters import ad as jax_ad

from jaxparadigm.autodiff import func

PATCHED = ("jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian")


def f(x):
    h = jax.nn.softplus(x) * jnp.tanh(x) + jax.nn.relu(x - 0.2)
    h = jax.jit(lambda a: a * jnp.sin(a))(h)
    return jnp.sum(h**2)


def f_loop(x):
    """Control flow (forward mode only here: the loops' VJP rules live in reverse mode)."""
    h = lax.fori_loop(0, 2, lambda i, c: c * jnp.cos(c), f(x) * x)
    return lax.cond(h.sum() > 0, jnp.sin, jnp.cos, h)


X = jnp.array([0.3, -0.5, 1.1])
V = jnp.array([1.0, -2.0, 0.5])


def _results(t):
    """The transforms of namespace ``t`` (ours: ``func``; jax's: ``JAX``) on our programs."""
    softsin = lambda x: jnp.sum(jax.nn.softplus(x) * jnp.sin(x))
    return {
        "grad": t.grad(f)(X),
        "jvp": t.jvp(f_loop, (X,), (V,)),
        "jacfwd": t.jacfwd(f_loop)(X),
        "jacrev": t.jacrev(lambda x: jnp.sin(x) * jax.nn.softplus(x))(X),
        "hessian": t.hessian(softsin)(X),
        "hvp": t.hvp(lambda x: jnp.sum(jax.nn.softplus(x) ** 3), (X,), (V,)),
        "vjp": t.vjp(lambda x: jnp.sin(x) * jax.nn.softplus(x), X)[1](V),
        "grad under jit": jax.jit(t.grad(f))(X),
    }


JAX = SimpleNamespace(
    grad=jax.grad,
    vjp=jax.vjp,
    jvp=jax.jvp,
    jacfwd=jax.jacfwd,
    jacrev=jax.jacrev,
    hessian=jax.hessian,
    hvp=lambda f, p, v: jax.jvp(jax.grad(f), p, v)[1],
)


def test_no_jax_autodiff_is_called(monkeypatch):
    expected = _results(JAX)
    calls = []

    def forbid(name):
        def fail(*args, **kwargs):
            calls.append(name)
            raise AssertionError(f"jax AD entry point {name} was called")

        return fail

    for name in PATCHED:
        monkeypatch.setattr(jax, name, forbid(f"jax.{name}"))
        monkeypatch.setattr(jax_api, name, forbid(f"jax._src.api.{name}"))
    monkeypatch.setattr(jax_ad.JVPTrace, "process_primitive", forbid("ad.JVPTrace"))
    monkeypatch.setattr(jax_ad, "backward_pass", forbid("ad.backward_pass"))
    with pytest.raises(AssertionError, match="jax.grad"):
        jax.grad(f)(X)  # the patch is live
    calls.clear()
    ours = _results(func)
    assert calls == []
    for key, value in expected.items():
        for a, b in zip(
            jax.tree_util.tree_leaves(ours[key]), jax.tree_util.tree_leaves(value), strict=True
        ):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6, err_msg=key)
