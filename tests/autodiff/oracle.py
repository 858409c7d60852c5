"""Reverse-mode oracle checks: our ``vjp`` against ``jax.vjp``, at first and higher order.

``check_rev(f, args, order)`` compares ``vjp(f, *args)[1](ct)`` with jax's for a random cotangent;
at order 2 it differentiates that pullback again (ours over ours vs jax over jax), and so on.
This is the reverse-mode half of jax's ``check_grads(f, args, order, modes=["rev"])``, with jax
itself instead of finite differences as the oracle.
"""

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.autodiff import vjp


def _like(tree, rng):
    """A random cotangent with the structure, shapes and dtypes of ``tree``'s float leaves."""

    def one(x):
        x = jnp.asarray(x)
        return jnp.asarray(rng.standard_normal(x.shape), x.dtype)

    return jax.tree_util.tree_map(one, tree)


def _assert_close(ours, ref, rtol, atol, what):
    lo, lr = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(ref)
    assert len(lo) == len(lr), f"{what}: {len(lo)} leaves vs jax's {len(lr)}"
    for a, b in zip(lo, lr, strict=True):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        assert a.shape == b.shape, f"{what}: shape {a.shape} vs jax's {b.shape}"
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=what)


def check_rev(f, args, order=2, rtol=1e-5, atol=1e-5, seed=0, jit=False):
    """Assert that our reverse mode of ``f`` matches jax's up to ``order`` (nested pullbacks)."""
    rng = np.random.default_rng(seed)
    ours_f, ref_f = f, f
    for k in range(1, order + 1):
        ct = _like(ref_f(*args), rng)
        ours_f = lambda *a, g=ours_f, ct=ct: vjp(g, *a)[1](ct)
        ref_f = lambda *a, g=ref_f, ct=ct: jax.vjp(g, *a)[1](ct)
        run = jax.jit(ours_f) if jit else ours_f
        _assert_close(run(*args), ref_f(*args), rtol, atol, f"order {k}")
