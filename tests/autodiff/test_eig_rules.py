"""The ``eig`` rules (``rules/eig.py``, issue 36 item 4): eigenvalues, and right/left
eigenvectors with ``enable_eigvec_derivs=True`` as jax allows.

Checked on their own against ``jax.vjp``/``jax.jvp`` of ``lax.linalg.eig`` at the same complex
cotangents and tangents (float64, real and complex inputs, a batch), and through real-valued
functions of a real matrix (jax's cotangent of the complex eigen-outputs, then our rule) against
``jax.grad`` and central differences (EPS 1e-4). Whole programs through ``func.grad`` need the
engine to carry complex cotangents (issue 36 items 1-3); ``test_fft_rules`` gates those.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxparadigm.autodiff.registry import get_jvp, get_vjp

PARAMS = {
    "values": dict(compute_left_eigenvectors=False, compute_right_eigenvectors=False),
    "right": dict(compute_left_eigenvectors=False, compute_right_eigenvectors=True),
    "left_right": dict(compute_left_eigenvectors=True, compute_right_eigenvectors=True),
}


def _matrix(rng, shape, complex_):
    a = rng.standard_normal(shape)
    if complex_:
        a = a + 1j * rng.standard_normal(shape)
    return jnp.asarray(a)


def _like(y, rng):
    c = rng.standard_normal(y.shape) + 1j * rng.standard_normal(y.shape)
    return jnp.asarray(c, y.dtype)


def _eig_params(kind):
    return dict(PARAMS[kind], enable_eigvec_derivs=True, implementation=None)


@pytest.mark.parametrize("kind", list(PARAMS))
@pytest.mark.parametrize("shape,complex_", [((4, 4), False), ((2, 3, 3), False), ((3, 3), True)])
def test_eig_rules_equal_jax(kind, shape, complex_):
    rng = np.random.default_rng(len(shape) + 3 * complex_)
    params = _eig_params(kind)
    with jax.enable_x64(True):
        a = _matrix(rng, shape, complex_)
        f = lambda a: lax.linalg.eig(a, **PARAMS[kind], enable_eigvec_derivs=True)
        outs, pullback = jax.vjp(f, a)
        cts = [_like(o, rng) for o in outs]
        (ours,) = get_vjp("eig")(cts, a, **params)
        (ref,) = pullback(cts)
        assert ours.dtype == ref.dtype
        np.testing.assert_allclose(ours, ref, rtol=1e-8, atol=1e-8)
        da = _matrix(rng, shape, complex_)
        p_out, t_out = get_jvp("eig")((a,), (da,), **params)
        ref_p, ref_t = jax.jvp(f, (a,), (da,))
        for x, y in zip([*p_out, *t_out], [*ref_p, *ref_t], strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-8, atol=1e-8)


def test_eig_vjp_with_only_some_cotangents():
    """A zero (None) eigenvalue cotangent is the same as an explicit zero."""
    rng = np.random.default_rng(5)
    params = _eig_params("right")
    with jax.enable_x64(True):
        a = _matrix(rng, (3, 3), False)
        w, v = lax.linalg.eig(a, **PARAMS["right"], enable_eigvec_derivs=True)
        ct_v = _like(v, rng)
        none = get_vjp("eig")([None, ct_v], a, **params)[0]
        zero = get_vjp("eig")([jnp.zeros_like(w), ct_v], a, **params)[0]
        np.testing.assert_allclose(none, zero, rtol=1e-12, atol=1e-12)


def test_eigenvector_derivatives_need_opt_in_as_in_jax():
    a = jnp.asarray(np.random.default_rng(6).standard_normal((3, 3)), jnp.float32)
    params = dict(PARAMS["right"], enable_eigvec_derivs=False, implementation=None)
    w, v = lax.linalg.eig(a, **PARAMS["right"])
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        get_vjp("eig")([None, jnp.ones_like(v)], a, **params)
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        get_jvp("eig")((a,), (jnp.ones_like(a),), **params)
    # eigenvalues alone need no opt-in, in both modes
    assert get_vjp("eig")([jnp.ones_like(w), None], a, **params)[0].shape == (3, 3)


@pytest.mark.parametrize(
    "kind,head",
    [
        ("values", lambda w: jnp.sum(jnp.abs(w) ** 2 + jnp.real(w) * jnp.imag(w))),
        ("right", lambda w, v: jnp.sum(jnp.abs(v) ** 2 * jnp.arange(1.0, 5.0)) + jnp.sum(w.real)),
    ],
    ids=["eigvals", "eigvecs"],
)
def test_eig_chain_gradient_matches_jax_and_finite_differences(kind, head):
    rng = np.random.default_rng(7)
    params = _eig_params(kind)
    with jax.enable_x64(True):
        a = _matrix(rng, (4, 4), False)
        f = lambda a: lax.linalg.eig(a, **PARAMS[kind], enable_eigvec_derivs=True)
        loss = lambda a: head(*f(a))
        outs = f(a)
        cts = jax.vjp(head, *outs)[1](jnp.ones((), jnp.float64))
        (ours,) = get_vjp("eig")(list(cts), a, **params)
        np.testing.assert_allclose(ours, jax.grad(loss)(a), rtol=1e-8, atol=1e-8)
        t = _matrix(rng, (4, 4), False)
        fd = (loss(a + 1e-4 * t) - loss(a - 1e-4 * t)) / 2e-4
        np.testing.assert_allclose(jnp.vdot(ours, t), fd, rtol=1e-5)
