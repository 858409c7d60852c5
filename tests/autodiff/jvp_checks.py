"""Forward-mode checks shared by the JVP tests: our ``jvp`` against ``jax.jvp`` and finite
differences, recursively for higher orders (the shape of ``jax.test_util.check_grads``)."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.autodiff import forward_mode

# Forward-mode checks are in float32 (x64 off in tests/conftest.py); finite differences in f32
# are coarse, so the numerical check uses a loose tolerance and the jax oracle a tight one.
ORACLE_TOL = 2e-5
NUMERIC_TOL = 5e-2


def _inexact(x) -> bool:
    return jnp.issubdtype(jnp.result_type(x), jnp.inexact)


def random_tangents(args, seed=0):
    """A tangent per arg: standard normal for float leaves, float0 zeros for integer leaves."""
    rng = np.random.default_rng(seed)

    def one(x):
        if _inexact(x):
            return jnp.asarray(rng.standard_normal(np.shape(x)), jnp.result_type(x))
        return np.zeros(np.shape(x), jax.dtypes.float0)

    return jax.tree_util.tree_map(one, tuple(args))


def numerical_jvp(f, args, tangents, eps):
    """Central difference ``(f(x + eps t) - f(x - eps t)) / 2 eps`` (integer leaves fixed)."""
    shift = lambda s: jax.tree_util.tree_map(
        lambda x, t: x + s * eps * t if _inexact(x) else x, tuple(args), tangents
    )
    plus, minus = f(*shift(1.0)), f(*shift(-1.0))
    return jax.tree_util.tree_map(lambda a, b: (a - b) / (2 * eps), plus, minus)


def assert_close(actual, expected, tol, what=""):
    la, lb = jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)
    assert len(la) == len(lb), f"{what}: {len(la)} leaves vs {len(lb)}"
    for a, b in zip(la, lb, strict=True):
        if np.result_type(b) == jax.dtypes.float0:
            assert np.result_type(a) == jax.dtypes.float0, what
            continue
        np.testing.assert_allclose(
            np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol, atol=tol, err_msg=what
        )


def check_fwd(f, args, order=1, *, tol=ORACLE_TOL, numeric_tol=NUMERIC_TOL, eps=1e-2, seed=0):
    """Our ``jvp`` of ``f`` equals ``jax.jvp`` (tight) and finite differences (loose), up to ``order``.

    Order k > 1 checks ``g(x) = our_jvp(f, x, t)[1]`` again: forward over our own forward mode.
    ``numeric_tol=None`` skips the finite-difference check (non-smooth points, integer outputs).
    """
    args = tuple(args)
    tangents = random_tangents(args, seed)
    out, tan = forward_mode.jvp(f, args, tangents)
    ref_out, ref_tan = jax.jvp(f, args, tangents)
    assert_close(out, ref_out, tol, "primal output")
    assert_close(tan, ref_tan, tol, "tangent vs jax.jvp")
    if numeric_tol is not None:
        float_out = [x for x in jax.tree_util.tree_leaves(ref_tan) if _inexact(x)]
        if float_out:
            num = numerical_jvp(f, args, tangents, eps)
            keep = lambda tree: [x for x in jax.tree_util.tree_leaves(tree) if _inexact(x)]
            # finite differences are undefined where the output is infinite (e.g. -inf padding)
            ours, fd = keep(tan), keep(num)
            ours = [jnp.where(jnp.isfinite(b), a, 0) for a, b in zip(ours, fd, strict=True)]
            fd = [jnp.where(jnp.isfinite(b), b, 0) for b in fd]
            assert_close(ours, fd, numeric_tol, "tangent vs finite differences")
    if order > 1:
        g = lambda *xs: forward_mode.jvp(f, xs, tangents)[1]
        check_fwd(g, args, order - 1, tol=tol, numeric_tol=numeric_tol, eps=eps, seed=seed + 1)
