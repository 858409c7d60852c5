"""Issue 23: VJP and JVP rules for ``lax.linalg.tridiagonal_solve``, against jax and finite differences.

Ports JAX's ``tests/linalg_test.py`` ``LaxLinalgTest`` cases: ``test_tridiagonal_solve_grad``
(shapes (3,) and (3, 4), float32/float64, ``perturb_singular`` False/True; upstream runs
``check_grads(order=2)``, here our first- and second-order derivatives in all four arguments are
compared with jax's, and in float64 with a central finite difference), and, as derivative checks,
``test_tridiagonal_solve_endpoints`` (``dl[0]`` and ``du[-1]`` are never read, so they get zero
gradient) and ``test_tridiagonal_solve_2x2_singular`` (``perturb_singular`` reaches the solves of
the derivative: finite with it, nan without, as jax).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxparadigm.autodiff import func, registered_jvp_primitives, registered_primitives
from tests.autodiff.test_linalg_rules import _close, check, check_fd


def tri_args(shape, dtype, k_rhs=1, seed=0):
    """Upstream's draw: d = 1 + positive, dl/du/b normal (diagonal kept dominant here)."""
    rng = np.random.default_rng(seed)
    d = 3.0 + rng.uniform(0.0, 1.0, shape)
    dl, du = rng.standard_normal(shape), rng.standard_normal(shape)
    b = rng.standard_normal((*shape, k_rhs))
    return tuple(jnp.asarray(x, dtype) for x in (dl, d, du, b))


def solver(perturb_singular):
    return lambda dl, d, du, b: lax.linalg.tridiagonal_solve(
        dl, d, du, b, perturb_singular=perturb_singular
    )


GRAD_CASES = [
    pytest.param(shape, dtype, ps, marks=() if default else pytest.mark.slow)
    for shape, dtype, ps, default in [
        ((3,), "float32", False, True),
        ((3, 4), "float32", True, True),
        ((3,), "float64", True, False),
        ((3, 4), "float64", False, False),
        ((3,), "float32", True, False),
        ((3, 4), "float32", False, False),
    ]
]


@pytest.mark.parametrize("shape, dtype, perturb_singular", GRAD_CASES)
def test_tridiagonal_solve_grad_matches_jax(shape, dtype, perturb_singular):
    """linalg_test.py::LaxLinalgTest::test_tridiagonal_solve_grad, first and second order: our
    vjp/jvp in (dl, d, du, b) and our grad of our grad equal jax's."""
    with jax.enable_x64(dtype == "float64"):
        f = solver(perturb_singular)
        args = tri_args(shape, dtype, k_rhs=2)
        check(f, args, rtol=1e-4, atol=1e-5)
        nums = (0, 1, 2, 3)
        loss = lambda *a: jnp.sum(jnp.sin(f(*a)))
        gg = lambda grad: grad(lambda *a: sum(jnp.sum(g**2) for g in grad(loss, nums)(*a)), nums)
        both = jax.jit(lambda *a: (gg(func.grad)(*a), gg(jax.grad)(*a)))  # eager: 3x slower
        _close(*both(*args), 1e-3, 1e-4, "grad of grad")


@pytest.mark.parametrize("wrt", [0, *(pytest.param(i, marks=pytest.mark.slow) for i in (1, 2)), 3])
def test_tridiagonal_solve_against_central_finite_differences(wrt):
    """The oracle that is not jax: a float64 central difference of ``<w, X>`` in each argument."""
    args = tri_args((4,), "float32", k_rhs=2, seed=wrt + 1)  # check_fd casts to float64
    rest = args[:wrt] + args[wrt + 1 :]

    def f(x, *others):
        full = list(others)
        full.insert(wrt, x)
        return solver(False)(*full)

    check_fd(f, (args[wrt], *rest))


def test_tridiagonal_solve_endpoints_get_zero_gradient():
    """linalg_test.py::LaxLinalgTest::test_tridiagonal_solve_endpoints: the solve ignores dl[0]
    and du[-1], so our gradient there is zero (as jax's), and the rest is not."""
    dl, d, du, b = tri_args((5,), "float32", seed=3)
    loss = lambda dl, du: jnp.sum(jnp.sin(solver(False)(dl, d, du, b)))
    g_dl, g_du = func.grad(loss, (0, 1))(dl, du)
    assert float(g_dl[0]) == 0.0 and float(g_du[-1]) == 0.0
    assert np.all(np.asarray(g_dl[1:]) != 0) and np.all(np.asarray(g_du[:-1]) != 0)
    _close((g_dl, g_du), jax.grad(loss, (0, 1))(dl, du), 1e-5, 1e-6, "endpoints")
    t = jnp.zeros(5).at[0].set(1.0)
    assert (
        float(jnp.max(jnp.abs(func.jvp(lambda v: solver(False)(v, d, du, b), (dl,), (t,))[1]))) == 0
    )


@pytest.mark.parametrize("perturb_singular", [False, True])
def test_singular_perturbation_reaches_the_derivative(perturb_singular):
    """linalg_test.py::LaxLinalgTest::test_tridiagonal_solve_2x2_singular: A = [[1, 3], [1, 3]]
    is singular; with ``perturb_singular`` our jvp and grad are finite and equal jax's (the
    derivative's solves are perturbed too), without it they are nan like jax's."""
    dl, du = jnp.array([0.0, 1.0]), jnp.array([3.0, 0.0])
    d, b = jnp.array([1.0, 3.0]), jnp.array([[1.0], [4.0]])
    f = lambda d, b: solver(perturb_singular)(dl, d, du, b)
    ts = (jnp.ones(2), jnp.ones((2, 1)))
    ours = (func.jvp(f, (d, b), ts), func.grad(lambda *a: jnp.sum(f(*a)), (0, 1))(d, b))
    ref = (jax.jvp(f, (d, b), ts), jax.grad(lambda *a: jnp.sum(f(*a)), (0, 1))(d, b))
    leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(ours)]
    assert all(np.all(np.isfinite(x)) == perturb_singular for x in leaves)
    if perturb_singular:
        assert max(float(np.max(np.abs(x))) for x in leaves) > 1e6
        _close(ours, ref, 1e-4, 0.0, "perturbed")
    else:
        assert all(np.all(np.isnan(x)) for x in leaves)


def test_batched_and_vmapped_grad_match_jax():
    """Leading batch axes of the primitive itself, and jax.vmap of our grad (batching our rules)."""
    args = tri_args((2, 3), "float32", k_rhs=1, seed=5)
    loss = lambda *a: jnp.sum(jnp.tanh(solver(False)(*a)))
    nums = (0, 1, 2, 3)
    _close(jax.jit(func.grad(loss, nums))(*args), jax.grad(loss, nums)(*args), 1e-4, 1e-5, "jit")
    ours = jax.vmap(func.grad(loss, nums))(*args)
    _close(ours, jax.vmap(jax.grad(loss, nums))(*args), 1e-4, 1e-5, "vmap")


def test_tridiagonal_solve_rules_are_registered():
    assert "tridiagonal_solve" in registered_primitives()
    assert "tridiagonal_solve" in registered_jvp_primitives()
