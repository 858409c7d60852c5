"""Forward mode through control flow, calls and remat, against ``jax.jvp`` (C3.2).

Cases from the shapes ``lax_control_flow_test.py`` exercises: cond/switch (tangents through the
taken branch only), scan (forward and reverse, closed-over consts, a carry that only becomes
active inside the loop), fori_loop, while_loop (forward mode works), checkpoint, and host callbacks
(a clear error).
"""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from jax import lax

from jaxparadigm.autodiff import func, jvp
from tests.autodiff.jvp_checks import check_fwd

X = jnp.array([0.3, -0.7, 1.2], jnp.float32)


def _active_late(x):
    """The carry's first slot starts as a constant and only picks up x inside the body."""

    def body(c, a):
        k, s = c
        return (k * a, s + k), k

    (k, s), ys = lax.scan(body, (1.0, 0.0), x)
    return k + s + ys.sum()


CASES = {
    "cond_true": lambda x: lax.cond(x.sum() > 0, lambda a: jnp.sin(a) * 2, lambda a: a**2, x),
    "cond_false": lambda x: lax.cond(x.sum() < 0, lambda a: jnp.sin(a) * 2, lambda a: a**2, x),
    "cond_constant_branch": lambda x: lax.cond(x[0] > 0, lambda a: jnp.ones(3), lambda a: a, x),
    "switch": lambda x: lax.switch(2, [lambda a: a, lambda a: 2 * a, jnp.exp], x),
    "switch_clamped_index": lambda x: lax.switch(7, [lambda a: a, jnp.sin], x),
    "scan": lambda x: lax.scan(lambda c, a: (c * a + jnp.sin(c), c * 2), 1.0, x),
    "scan_reverse": lambda x: lax.scan(lambda c, a: (c * a, c + a), x[0], x, reverse=True),
    "scan_closed_over": lambda x: lax.scan(lambda c, a: (c + x.sum() * a, c), 0.0, jnp.arange(3.0)),
    "scan_active_late": _active_late,
    "scan_unrolled": lambda x: lax.scan(lambda c, a: (c * jnp.cos(a), c), 1.0, x, unroll=2)[0],
    "fori_loop": lambda x: lax.fori_loop(0, 4, lambda i, c: c * jnp.cos(c) + i, x),
    "while_loop": lambda x: lax.while_loop(
        lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * jnp.sin(c[1]) + x), (0, x)
    )[1],
    "checkpoint": lambda x: jax.checkpoint(lambda a: jnp.sin(jnp.sin(a)))(x),
    "checkpoint_policy": lambda x: jax.checkpoint(
        lambda a: jnp.sin(a) @ jnp.cos(a), policy=jax.checkpoint_policies.nothing_saveable
    )(x),
    "scan_of_cond": lambda x: lax.scan(
        lambda c, a: (lax.cond(a > 0, lambda: c * a, lambda: c - a), c), 1.0, x
    )[0],
    "jit_of_while": jax.jit(
        lambda x: lax.while_loop(lambda c: jnp.sum(c) < 10.0, lambda c: c * 1.5 + 0.1, x**2)
    ),
}


class ControlFlowJVPTest(parameterized.TestCase):
    @parameterized.parameters(*sorted(CASES))
    def test_matches_jax_second_order(self, name):
        check_fwd(CASES[name], (X,), order=2, numeric_tol=None)

    @parameterized.parameters("cond_true", "scan", "while_loop", "checkpoint")
    def test_under_jit(self, name):
        f = CASES[name]
        t = jnp.array([1.0, 2.0, -1.0])
        ours = jax.jit(lambda x, t: jvp(f, (x,), (t,)))(X, t)
        chex.assert_trees_all_close(ours, jax.jvp(f, (X,), (t,)), rtol=1e-5, atol=1e-6)

    def test_only_taken_branch_matters(self):
        """A nan in the untaken branch's derivative does not leak (select, not blend)."""
        f = lambda x: lax.cond(x > 0, jnp.sqrt, lambda a: a, x)
        _, t = jvp(f, (-1.0,), (1.0,))
        self.assertEqual(float(t), 1.0)

    def test_jacfwd_of_scan_and_jacfwd_of_jacfwd(self):
        f = CASES["scan_of_cond"]
        chex.assert_trees_all_close(func.jacfwd(f)(X), jax.jacfwd(f)(X), rtol=1e-5)
        g = lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * c, x).sum()
        chex.assert_trees_all_close(
            func.jacfwd(func.jacfwd(g))(X), jax.jacfwd(jax.jacfwd(g))(X), rtol=1e-5, atol=1e-6
        )


def test_pure_callback_is_a_clear_error():
    f = lambda x: jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    with pytest.raises(NotImplementedError, match="pure_callback.*custom_jvp"):
        jvp(f, (X,), (X,))


def test_io_callback_is_a_clear_error():
    from jax.experimental import io_callback

    f = lambda x: io_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    with pytest.raises(NotImplementedError, match="io_callback"):
        jvp(f, (X,), (X,))


def test_debug_print_runs_on_primals(capfd):
    def f(x):
        jax.debug.print("x0={x}", x=x[0])
        return jnp.sin(x)

    out, t = jvp(f, (X,), (jnp.ones(3),))
    jax.effects_barrier()
    np.testing.assert_allclose(t, jnp.cos(X), rtol=1e-6)
    assert "x0=0.3" in capfd.readouterr().out


def test_integer_loop_counter_has_no_tangent():
    f = lambda x: lax.fori_loop(0, 3, lambda i, c: (c[0] + 1, c[1] * 2.0), (0, x))
    (n, y), (tn, ty) = jvp(f, (X,), (jnp.ones(3),))
    assert int(n) == 3 and tn.dtype == jax.dtypes.float0
    np.testing.assert_allclose(ty, 8.0 * jnp.ones(3))
