"""Complex autodiff equals jax's (issue 36 item 1; claims C3.2, C3.3).

Oracle: ``jax.grad``/``jax.vjp``/``jax.jvp``/``jax.jacfwd``/``jax.jacrev``/``jax.hessian`` on the
same functions, in complex64 and complex128 (x64 switched on inside the test). Three kinds:

* real losses ``L(z)`` of complex inputs: ``grad`` returns jax's ``dL/dx - i dL/dy``, through every
  rule that accepts complex values (conj/real/imag/abs/angle, elementary functions, pow,
  dot_general, reductions, cumulative ops, indexing, sort, the linear-algebra decompositions);
* holomorphic ``f``: ``holomorphic=True`` on grad/jacfwd/jacrev/hessian gives ``df/dz``;
* ``vjp``/``jvp`` on C->C, R->C and C->R maps with complex cotangents/tangents.
"""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax

from jaxparadigm.autodiff import func, grad, jvp, value_and_grad, vjp

R = np.random.default_rng(36)
N = 3


def _c(shape, dtype):
    return (R.standard_normal(shape) + 1j * R.standard_normal(shape)).astype(dtype)


_W = _c((N, N), np.complex128)


def _loss(x):
    """A real loss that sees real and imaginary parts with different weights."""
    w = jnp.asarray(_W[: x.shape[0], : x.shape[-1]], x.dtype)
    return jnp.real(jnp.sum(x * w)) + 0.1 * jnp.sum(jnp.abs(x) ** 2)


def _herm(a):
    return (a + jnp.conj(a).T) / 2 + N * jnp.eye(N, dtype=a.dtype)


REAL_LOSSES = {
    "abs2": lambda a: jnp.sum(jnp.abs(a) ** 2),
    "real_imag_conj": lambda a: jnp.sum(jnp.real(a) * jnp.imag(a)) + _loss(jnp.conj(a) * a),
    "complex_of_parts": lambda a: _loss(lax.complex(jnp.imag(a), jnp.real(a) ** 2)),
    "angle": lambda a: jnp.sum(jnp.angle(a) * jnp.arange(N)),
    "exp_log": lambda a: _loss(jnp.exp(a / 2) * jnp.log(a)),
    "trig": lambda a: _loss(jnp.sin(a) + jnp.cos(a) * jnp.tan(a / 3) + jnp.tanh(a)),
    "expm1_log1p": lambda a: _loss(jnp.expm1(a) * jnp.log1p(a)),
    "sqrt_rsqrt": lambda a: _loss(jnp.sqrt(a) + lax.rsqrt(a)),
    "pow": lambda a: _loss(a ** (1.5 - 0.5j) + a**3 + a**-2),
    "div": lambda a: _loss(1.0 / (a + 2) + a / (a * a + 3)),
    "matmul": lambda a: _loss(a @ a.T @ jnp.conj(a)),
    "einsum_vdot": lambda a: (
        _loss(jnp.einsum("ij,jk->ik", a, jnp.conj(a).T)) + jnp.abs(jnp.vdot(a, a))
    ),
    "prod_sum": lambda a: jnp.real(jnp.prod(a)) + jnp.imag(jnp.sum(a, axis=0)).sum(),
    "cumulative": lambda a: _loss(jnp.cumprod(a, axis=1) + jnp.cumsum(a, axis=0) ** 2),
    "max_abs": lambda a: jnp.max(jnp.abs(a)),
    "norm": lambda a: jnp.linalg.norm(a),
    "slices": lambda a: _loss(
        jnp.concatenate([a[:2], jnp.flip(a, 0), jnp.pad(a, 1)[1:4, 1:4]])[:3]
    ),
    "gather_scatter": lambda a: _loss(a[jnp.array([0, 2, 2])].at[1].add(a[0] * 2j)),
    "where": lambda a: _loss(jnp.where(jnp.abs(a) > 1, a, a * a)),
    "sort_complex": lambda a: _loss(jnp.sort_complex(a.ravel()).reshape(N, N)),
    "logsumexp": lambda a: jnp.real(jax.scipy.special.logsumexp(a)),
    "var": lambda a: jnp.var(a) + jnp.real(jnp.mean(a)),
    "cast_real": lambda a: _loss(jnp.real(a).astype(a.dtype) * a),
    "cholesky": lambda a: _loss(jnp.linalg.cholesky(_herm(a))),
    "triangular_solve": lambda a: _loss(
        jax.scipy.linalg.solve_triangular(jnp.tril(a) + 3 * jnp.eye(N), a.T, lower=True, trans="C")
    ),
    "solve_inv_det": lambda a: (
        _loss(jnp.linalg.solve(a, jnp.linalg.inv(a + 3))) + jnp.abs(jnp.linalg.det(a))
    ),
    "lu": lambda a: _loss(jax.scipy.linalg.lu(a)[1]) + _loss(jax.scipy.linalg.lu(a)[2]),
    "qr": lambda a: _loss(jnp.linalg.qr(a)[0]) + _loss(jnp.linalg.qr(a)[1]),
    "eigh": lambda a: (
        jnp.sum(jnp.linalg.eigh(_herm(a))[0] * jnp.arange(N))
        + jnp.sum(jnp.abs(jnp.linalg.eigh(_herm(a))[1]) ** 2 * jnp.arange(N)[:, None])
    ),
    "svd": lambda a: (
        jnp.sum(jnp.linalg.svd(a, compute_uv=False) * jnp.arange(N))
        + jnp.sum(jnp.abs(jnp.linalg.svd(a)[0]) ** 2 * jnp.arange(N)[:, None])
    ),
}

# float32 accumulates more rounding through a decomposition than through an elementwise op
_TOL = {np.complex64: 2e-3, np.complex128: 1e-9}


def _close(ours, ref, dtype):
    chex.assert_trees_all_close(ours, ref, rtol=_TOL[dtype], atol=_TOL[dtype])
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(ref), strict=True):
        assert jnp.result_type(a) == jnp.result_type(b)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=["c64", "c128"])
@pytest.mark.parametrize("name", sorted(REAL_LOSSES))
def test_grad_of_real_loss_equals_jax(name, dtype):
    f = REAL_LOSSES[name]
    with jax.enable_x64(dtype == np.complex128):
        z = jnp.asarray(_c((N, N), dtype))
        _close(grad(f)(z), jax.grad(f)(z), dtype)


HOLOMORPHIC = {
    "poly": lambda z: jnp.sum(z**3 - 2j * z**2 + z),
    "exp_sin": lambda z: jnp.sum(jnp.exp(z) * jnp.sin(z)),
    "log_div": lambda z: jnp.sum(jnp.log(z + 3) / (z * z + 2)),
    "matmul": lambda z: jnp.sum(z @ z @ z.T),
}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=["c64", "c128"])
@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_holomorphic_transforms_equal_jax(name, dtype):
    f = HOLOMORPHIC[name]
    g = lambda v: f(v[None] * jnp.ones((N, 1), v.dtype))  # C^N -> C, holomorphic
    vector = lambda v: g(v) * v  # C^N -> C^N, for the Jacobians
    with jax.enable_x64(dtype == np.complex128):
        z = jnp.asarray(_c((N, N), dtype))
        _close(grad(f, holomorphic=True)(z), jax.grad(f, holomorphic=True)(z), dtype)
        _close(
            value_and_grad(f, holomorphic=True)(z),
            jax.value_and_grad(f, holomorphic=True)(z),
            dtype,
        )
        v = z[0]
        for ours, ref in [(func.jacfwd, jax.jacfwd), (func.jacrev, jax.jacrev)]:
            _close(ours(vector, holomorphic=True)(v), ref(vector, holomorphic=True)(v), dtype)
        _close(func.hessian(g, holomorphic=True)(v), jax.hessian(g, holomorphic=True)(v), dtype)


def test_holomorphic_derivative_is_df_dz():
    """d/dz z^2 = 2z exactly; d/dz exp = exp: the values, not only agreement with jax."""
    z = jnp.complex64(1 + 2j)
    np.testing.assert_allclose(grad(lambda z: z * z, holomorphic=True)(z), 2 * z)
    np.testing.assert_allclose(grad(jnp.exp, holomorphic=True)(z), jnp.exp(z), rtol=1e-6)


def _ct(out):
    def one(o):
        o = jnp.asarray(o)
        re = R.standard_normal(o.shape)
        im = R.standard_normal(o.shape) if jnp.iscomplexobj(o) else 0.0
        return jnp.asarray(re + 1j * im if jnp.iscomplexobj(o) else re, o.dtype)

    return jax.tree.map(one, out)


MAPS = {
    "C->C conj exp abs": (lambda z: jnp.conj(z) * jnp.exp(z) + jnp.abs(z), "c"),
    "C->C qr": (lambda z: jnp.linalg.qr(z), "c"),
    "C->C svd": (lambda z: jnp.linalg.svd(z), "c"),
    "C->R eigh": (lambda z: jnp.linalg.eigh(_herm(z))[0], "c"),
    "C->R abs angle": (lambda z: (jnp.abs(z), jnp.angle(z)), "c"),
    "C->C control flow": (
        lambda z: (
            lax.fori_loop(0, 3, lambda i, v: jnp.sin(v) * z + 0.1, z)
            + lax.cond(jnp.real(z[0, 0]) > 0, jnp.conj, jnp.exp, z)
            + lax.scan(lambda c, x: (c * x + 1, jnp.conj(c)), z[0], z)[1]
        ),
        "c",
    ),
    "R->C": (lambda x: (jnp.exp(1j * x) * x, lax.complex(x, x**2)), "r"),
    "R->C fft-free dft": (
        lambda x: jnp.exp(-2j * jnp.pi * jnp.arange(N)[:, None] * x / N) @ x,
        "r",
    ),
}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=["c64", "c128"])
@pytest.mark.parametrize("name", sorted(MAPS))
def test_vjp_and_jvp_equal_jax(name, dtype):
    f, kind = MAPS[name]
    with jax.enable_x64(dtype == np.complex128):
        real = np.float32 if dtype == np.complex64 else np.float64
        x = jnp.asarray(
            _c((N, N), dtype) if kind == "c" else R.standard_normal((N, N)).astype(real)
        )
        t = jnp.asarray(
            _c((N, N), dtype) if kind == "c" else R.standard_normal((N, N)).astype(real)
        )
        out, pull = vjp(f, x)
        ref_out, ref_pull = jax.vjp(f, x)
        _close(out, ref_out, dtype)
        ct = _ct(ref_out)
        _close(pull(ct), ref_pull(ct), dtype)
        _close(jvp(f, (x,), (t,)), jax.jvp(f, (x,), (t,)), dtype)


def test_grad_of_grad_through_complex_values():
    """Second order (C3.3): the backward of a complex program is itself differentiated."""
    inner = lambda w: jnp.sum(jnp.abs(w) ** 2 * jnp.real(w) + jnp.imag(jnp.exp(w)))
    outer = lambda z: jnp.real(jnp.sum(grad(inner)(z) * jnp.conj(z)))
    outer_ref = lambda z: jnp.real(jnp.sum(jax.grad(inner)(z) * jnp.conj(z)))
    z = jnp.asarray(_c((N,), np.complex64))
    _close(grad(outer)(z), jax.grad(outer_ref)(z), np.complex64)
    h = lambda x: jnp.sum(jnp.abs(jnp.exp(1j * x) * x + x**2 * 1j))
    x = jnp.array([0.3, -1.2, 2.0], jnp.float32)
    _close(func.hessian(h)(x), jax.hessian(h)(x), np.complex64)


class JitVariantsTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    def test_complex_grad_under_jit(self):
        f = REAL_LOSSES["qr"]
        z = jnp.asarray(_c((N, N), np.complex64))
        got = self.variant(grad(f))(z)
        _close(got, jax.grad(f)(z), np.complex64)


@settings(max_examples=25, deadline=None)
@given(
    st.complex_numbers(min_magnitude=0.2, max_magnitude=3.0, allow_nan=False, allow_infinity=False),
    st.sampled_from(["abs2", "angle", "exp_log", "trig", "pow", "sqrt_rsqrt"]),
)
def test_grad_matches_jax_at_drawn_points(z, name):
    f = lambda s: REAL_LOSSES[name](s * jnp.ones((N, N), s.dtype))
    z = jnp.complex64(z)
    np.testing.assert_allclose(grad(f)(z), jax.grad(f)(z), rtol=2e-3, atol=2e-4)


class TestErrorsAreJaxs:
    """jax's TypeErrors (its wording) where holomorphic= is violated."""

    def test_holomorphic_needs_complex_inputs(self):
        with pytest.raises(
            TypeError, match="grad with holomorphic=True requires inputs with complex"
        ):
            grad(jnp.sin, holomorphic=True)(1.0)
        with pytest.raises(TypeError, match="jacfwd with holomorphic=True requires inputs"):
            func.jacfwd(jnp.sin, holomorphic=True)(jnp.ones(2))
        with pytest.raises(TypeError, match="jacrev with holomorphic=True requires inputs"):
            func.jacrev(jnp.sin, holomorphic=True)(jnp.ones(2))

    def test_holomorphic_needs_complex_outputs(self):
        z = jnp.complex64(1 + 1j)
        with pytest.raises(TypeError, match="grad with holomorphic=True requires outputs"):
            grad(jnp.abs, holomorphic=True)(z)
        with pytest.raises(TypeError, match="jacfwd with holomorphic=True requires outputs"):
            func.jacfwd(jnp.abs, holomorphic=True)(z)
        with pytest.raises(TypeError, match="jacrev with holomorphic=True requires outputs"):
            func.jacrev(jnp.abs, holomorphic=True)(z)

    def test_complex_output_without_holomorphic(self):
        with pytest.raises(TypeError, match="grad requires real-valued outputs.*holomorphic=True"):
            grad(jnp.exp)(jnp.complex64(1j))
        with pytest.raises(TypeError, match="jacfwd requires real-valued inputs.*complex64"):
            func.jacfwd(jnp.exp)(jnp.complex64(1j))
        # jax.jacrev takes complex inputs of a real output (conjugate convention), so do we
        f = lambda z: jnp.abs(z) ** 2
        z = jnp.array([1 + 2j, 3j], jnp.complex64)
        _close(func.jacrev(f)(z), jax.jacrev(f)(z), np.complex64)
