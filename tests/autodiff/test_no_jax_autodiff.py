"""Proof that our transforms run on our engine: jax's own AD entry points are never called (C3.2).

Every public AD function of jax (``jax.jvp``, ``jax.linearize``, ``jax.vjp``, ``jax.grad``,
``jax.value_and_grad``, ``jax.jacfwd``, ``jax.jacrev``, ``jax.hessian``; also their
``jax._src.api`` originals) is replaced by a function that fails, and so are jax's internal
JVP tracer and transpose pass (``ad.JVPTrace.process_primitive``, ``ad.backward_pass``), which
every jax AD path goes through. Our ``grad``, ``jvp``, ``jacfwd``, ``jacrev``, ``hessian``, ``hvp``
then still run -- on programs with custom_jvp (relu, softplus), control flow and jit -- and equal
values computed by jax before the patch.
"""

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


def _ours():
    return {
        "grad": func.grad(f)(X),
        "jvp": func.jvp(f_loop, (X,), (V,)),
        "jacfwd": func.jacfwd(f_loop)(X),
        "jacrev": func.jacrev(lambda x: jnp.sin(x) * jax.nn.softplus(x))(X),
        "hessian": func.hessian(lambda x: jnp.sum(jax.nn.softplus(x) * jnp.sin(x)))(X),
        "hvp": func.hvp(lambda x: jnp.sum(jax.nn.softplus(x) ** 3), (X,), (V,)),
    }


def _jax():
    return {
        "grad": jax.grad(f)(X),
        "jvp": jax.jvp(f_loop, (X,), (V,)),
        "jacfwd": jax.jacfwd(f_loop)(X),
        "jacrev": jax.jacrev(lambda x: jnp.sin(x) * jax.nn.softplus(x))(X),
        "hessian": jax.hessian(lambda x: jnp.sum(jax.nn.softplus(x) * jnp.sin(x)))(X),
        "hvp": jax.jvp(jax.grad(lambda x: jnp.sum(jax.nn.softplus(x) ** 3)), (X,), (V,))[1],
    }


def test_no_jax_autodiff_is_called(monkeypatch):
    expected = _jax()
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
    ours = _ours()
    assert calls == []
    for key, value in expected.items():
        for a, b in zip(
            jax.tree_util.tree_leaves(ours[key]), jax.tree_util.tree_leaves(value), strict=True
        ):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6, err_msg=key)
