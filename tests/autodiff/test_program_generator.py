"""The generator's own promises (issue 23): ops stay off poles and kinks, matrices stay well
conditioned with distinct spectra, programs are deterministic per seed. Checked with jax and numpy
alone (the engine under test is not involved), on extreme inputs as well as ordinary ones."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.autodiff import program_matrix_ops as mo
from tests.autodiff.program_generator import STRUCTURAL, build, random_program
from tests.autodiff.program_special_ops import SPECIAL_BINARY, SPECIAL_UNARY

# h anywhere: saturating, zero (relu's output), tiny, clipped-looking values
GRID = jnp.array([-30.0, -3.0, -0.8, -1e-3, 0.0, 1e-3, 0.8, 3.0, 30.0], jnp.float32)


@pytest.mark.parametrize("name", sorted(SPECIAL_UNARY))
def test_special_unary_ops_are_smooth_everywhere(name):
    """First and second derivatives (jax's) of every special unary op are finite on the grid: the
    domain map keeps asin/acos/erf_inv inside (-1, 1), tan inside (-pi/2, pi/2), lgamma/digamma
    off their poles, cbrt and the exponentially scaled Bessel functions off their kink at 0."""
    op = SPECIAL_UNARY[name]
    d1 = jax.vmap(jax.grad(op))(GRID)
    d2 = jax.vmap(jax.grad(jax.grad(op)))(GRID)
    assert np.all(np.isfinite(op(GRID))) and np.all(np.isfinite(d1)) and np.all(np.isfinite(d2))


@pytest.mark.parametrize("name", sorted(SPECIAL_BINARY))
def test_rem_ops_stay_on_one_branch(name):
    """fmod/remainder: x / y keeps one integer part on the whole grid x grid (so the op is smooth
    in both operands): d/dy is the same constant everywhere (-1 for fmod, +2 for remainder)."""
    op = SPECIAL_BINARY[name]
    h, o = jnp.meshgrid(GRID, GRID)
    dh, do = jax.vmap(jax.grad(op, (0, 1)))(h.ravel(), o.ravel())
    d_div = 0.1 * (1 - jnp.tanh(o.ravel()) ** 2)  # dy/do
    quotient = -(do / jnp.where(d_div == 0, 1.0, d_div))[d_div > 1e-6]
    expected = {"fmod": 1.0, "remainder": -2.0}[name]  # trunc(x/y) resp. floor(x/y)
    np.testing.assert_allclose(quotient, expected, rtol=1e-3)
    assert np.all(np.isfinite(dh))


def _matrix_inputs():
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 4):
        for h in (rng.uniform(-1.2, 1.2, n), rng.choice([-30.0, 30.0], n), np.zeros(n)):
            for c in (0.3, 1.2):
                yield jnp.asarray(h, jnp.float64), c


def test_matrices_are_well_conditioned_with_distinct_spectra():
    """The bounds program_matrix_ops' docstring derives, on ordinary, saturating and zero ``h``:
    sigma_min(M) >= 0.4; eigh's and svd's inputs have values >= 0.4 apart; the sign-fixing
    diagonals (V, U, R) stay away from 0, so normalisation never flips under rounding."""
    with jax.enable_x64(True):
        for h, c in _matrix_inputs():
            m = np.asarray(mo._invertible(h, c))
            assert np.linalg.svd(m, compute_uv=False).min() >= 0.4 - 1e-9
            b = np.asarray(mo._base(h, c))
            w, v = np.linalg.eigh(np.asarray(mo._spread(h)) + 0.1 * (b + b.T))
            assert np.all(np.diff(w) >= 0.4) and np.all(np.abs(np.diag(v)) > 0.5)
            u, s, _ = np.linalg.svd(np.asarray(mo._spread(h, descending=True)) + 0.2 * b)
            assert np.all(-np.diff(s) >= 0.4) and np.all(np.abs(np.diag(u)) > 0.5)
            _, r = np.linalg.qr(m)
            assert np.all(np.abs(np.diag(r)) >= 0.4 - 1e-9)


@pytest.mark.parametrize("name", ["eigh", "svd", "qr"])
def test_sign_normalised_decompositions_ignore_column_signs(name):
    """The normalised outputs equal themselves recomputed from sign-flipped factors: what the
    program returns does not depend on LAPACK's sign choice."""
    h = jnp.array([0.7, -1.1, 0.4])
    flip = jnp.array([1.0, -1.0, -1.0])
    out = STRUCTURAL[name][1](h, 0.8)
    real_eigh, real_svd, real_qr = jnp.linalg.eigh, jnp.linalg.svd, jnp.linalg.qr
    flipped = {
        "eigh": lambda a, **k: (lambda w, v: (w, v * flip))(*real_eigh(a, **k)),
        "svd": lambda a, **k: (lambda u, s, vt: (u * flip, s, vt * flip[:, None]))(
            *real_svd(a, **k)
        ),
        "qr": lambda a, **k: (lambda q, r: (q * flip, r * flip[:, None]))(*real_qr(a, **k)),
    }[name]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jnp.linalg, name, flipped)
        again = STRUCTURAL[name][1](h, 0.8)
    np.testing.assert_allclose(again, out, rtol=1e-6, atol=1e-6)


def test_random_program_is_deterministic_and_draws_three_inputs():
    programs = [random_program(s) for s in range(40)]
    assert programs == [random_program(s) for s in range(40)]
    assert {len(p.arg_shapes) for p in programs} == {1, 2, 3}
    f, args = build(programs[0])
    f2, args2 = build(programs[0])
    np.testing.assert_array_equal(f(*args), f2(*args2))
