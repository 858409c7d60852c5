"""``check_grads`` for our engine: jax's semantics (both modes, every order up to ``order``,
central differences with EPS 1e-4) plus jax itself as a second, tight oracle (issue 36 item 4).

``check_grads(f, args, order)`` runs in float64 (``jax.enable_x64``). At each order, with a random
tangent ``t`` (every float argument perturbed at once, as jax's ``check_jvp``/``check_vjp``) and a
random cotangent ``w``:

    fwd:  <w, our_jvp(f)(x; t)>      ==  <w, (f(x + EPS t) - f(x - EPS t)) / (2 EPS)>
    rev:  <our_vjp(f)(x; w), t>      ==  the same central difference
    and our jvp / vjp equal jax.jvp / jax.vjp of the same function at the same t / w.

Order k + 1 repeats this on ``x -> our_vjp(f)(x; w)`` (ours over ours; jax's over jax's for the
oracle), as jax's ``check_grads`` recurses on ``f_vjp``. ``args_fixed`` holds positions that are
not differentiated (passed unchanged, e.g. an integer order).
"""

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.autodiff import func

EPS = 1e-4
_tl = jax.tree_util.tree_leaves


def _rand_like(tree, rng):
    return jax.tree_util.tree_map(
        lambda x: jnp.asarray(rng.standard_normal(jnp.shape(x)), jnp.result_type(x)), tree
    )


def _vdot(a, b) -> float:
    return float(
        sum(jnp.vdot(jnp.asarray(x), jnp.asarray(y)) for x, y in zip(_tl(a), _tl(b), strict=True))
    )


def _close(a, b, rtol, atol, what):
    for x, y in zip(_tl(a), _tl(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol, err_msg=what)


def check_grads(f, args, order=2, *, eps=EPS, rtol=1e-5, atol=1e-6, fd_tol=2e-4, seed=0):
    """Assert our forward and reverse mode of ``f`` at ``args`` match finite differences and jax,
    for every order up to ``order``. ``f`` takes and returns real float arrays."""
    with jax.enable_x64(True):
        args = tuple(jnp.asarray(a, jnp.float64) for a in args)
        _check(f, f, args, order, eps, rtol, atol, fd_tol, np.random.default_rng(seed), 1)


def _check(ours_f, ref_f, args, order, eps, rtol, atol, fd_tol, rng, k):
    t = _rand_like(args, rng)
    w = _rand_like(ref_f(*args), rng)
    plus = ref_f(*(a + eps * dt for a, dt in zip(args, t, strict=True)))
    minus = ref_f(*(a - eps * dt for a, dt in zip(args, t, strict=True)))
    fd = _vdot(w, jax.tree_util.tree_map(lambda p, m: (p - m) / (2 * eps), plus, minus))
    # forward mode
    out, tan = func.jvp(ours_f, args, t)
    ref_out, ref_tan = jax.jvp(ref_f, args, t)
    _close(out, ref_out, rtol, atol, f"order {k}: primal output vs jax")
    _close(tan, ref_tan, rtol, atol, f"order {k}: jvp vs jax.jvp")
    scale = max(1.0, abs(fd))
    assert abs(_vdot(w, tan) - fd) <= fd_tol * scale, (k, "fwd vs fd", _vdot(w, tan), fd)
    # reverse mode
    cts = func.vjp(ours_f, *args)[1](w)
    ref_cts = jax.vjp(ref_f, *args)[1](w)
    _close(cts, ref_cts, rtol, atol, f"order {k}: vjp vs jax.vjp")
    assert abs(_vdot(cts, t) - fd) <= fd_tol * scale, (k, "rev vs fd", _vdot(cts, t), fd)
    if k < order:
        ours_next = lambda *xs: func.vjp(ours_f, *xs)[1](w)
        ref_next = lambda *xs: jax.vjp(ref_f, *xs)[1](w)
        _check(ours_next, ref_next, args, order, eps, rtol, atol, fd_tol, rng, k + 1)
