"""Issue 12, s.2 (last bullet): under our engine ``Function`` uses the residuals its forward saved.

The forward computation runs once, in the forward sweep (our ``custom_vjp_call`` forward rule
evaluates ``fwd`` and keeps its residuals); the backward sweep evaluates only ``backward`` on
``ctx.saved_tensors`` -- the forward is never re-run to recreate them (claim C2.2). jax traces the
Python ``forward`` once and replays its jaxpr, so re-runs are observed at run time, through a
``jax.debug.callback`` inside ``forward``, and in the traced program (``tanh`` equations).
"""

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.autodiff import Function, grad, vjp

RUNS: list[str] = []


class LoggedTanh(Function):
    """tanh saving its output; each run of the forward computation is logged at run time."""

    @staticmethod
    def forward(ctx, x):
        jax.debug.callback(lambda: RUNS.append("forward"))
        y = jnp.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        jax.debug.callback(lambda: RUNS.append("backward"))
        (y,) = ctx.saved_tensors
        return g * (1 - y * y)


def _count(name, closed):
    jaxpr = closed.jaxpr
    n = sum(e.primitive.name == name for e in jaxpr.eqns)
    for e in jaxpr.eqns:
        for sub in e.params.values():
            if hasattr(sub, "jaxpr") and hasattr(sub, "consts"):
                n += _count(name, sub)
    return n


def test_backward_does_not_rerun_forward():
    x = jnp.array([0.1, -0.4, 2.0])
    RUNS.clear()
    out, pullback = vjp(lambda x: LoggedTanh.apply(x) * 2.0, x)
    jax.effects_barrier()
    assert RUNS == ["forward"]
    for _ in range(3):  # each pullback call runs backward only
        (g,) = pullback(jnp.ones(3))
    jax.effects_barrier()
    assert RUNS == ["forward"] + ["backward"] * 3
    np.testing.assert_allclose(g, 2 * (1 - jnp.tanh(x) ** 2), rtol=1e-6)


def test_the_gradient_program_computes_tanh_once():
    f = lambda x: jnp.sum(LoggedTanh.apply(x) ** 2)
    closed = jax.make_jaxpr(grad(f))(jnp.ones(3))
    assert _count("tanh", closed) == 1


def test_jitted_grad_matches_jax():
    x = jnp.linspace(-1.0, 1.0, 4)
    f = lambda x: jnp.sum(LoggedTanh.apply(x) ** 2)
    RUNS.clear()
    g = jax.jit(grad(f))(x)
    jax.effects_barrier()
    assert sorted(RUNS) == ["backward", "forward"]
    np.testing.assert_allclose(g, jax.grad(f)(x), rtol=1e-6)
