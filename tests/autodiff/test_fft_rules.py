"""The ``fft`` rules (``rules/fft.py``, issue 36 item 4): fft/ifft/rfft/irfft over 1-3 trailing axes,
even and odd lengths.

The rules are checked on their own against jax (``jax.vjp``/``jax.jvp`` of ``lax.fft`` at the same
complex cotangents and tangents, float64), through real-valued functions of real inputs (the
cotangent of the complex intermediate taken from jax's own pullback of the real head, then our
rule, against ``jax.grad`` and central differences, EPS 1e-4), and at order 2 (the rule's program
transposed again gives the forward FFT); whole programs go through the engine's ``grad`` (complex
intermediates carry complex cotangents, issue 36 items 1-3) at orders 1 and 2.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxparadigm.autodiff.registry import get_jvp, get_vjp
from tests.autodiff.grad_checks import check_grads

FFT, IFFT, RFFT, IRFFT = lax.FftType.FFT, lax.FftType.IFFT, lax.FftType.RFFT, lax.FftType.IRFFT

# (fft_type, operand shape, fft_lengths): 1-d, 2-d and 3-d, even and odd last lengths, a batch axis
CASES = [
    (FFT, (2, 6), (6,)),
    (IFFT, (3, 5), (3, 5)),
    (FFT, (2, 3, 4), (2, 3, 4)),
    (RFFT, (2, 6), (6,)),
    (RFFT, (7,), (7,)),
    (RFFT, (2, 3, 5), (3, 5)),
    (IRFFT, (2, 4), (6,)),
    (IRFFT, (5,), (9,)),
    (IRFFT, (3, 3), (3, 4)),
]
IDS = [f"{t.name}-{s}-{n}" for t, s, n in CASES]


def _operand(fft_type, shape, rng):
    x = rng.standard_normal(shape)
    if fft_type != RFFT:
        x = x + 1j * rng.standard_normal(shape)
    return jnp.asarray(x)


def _random_like(y, rng):
    c = rng.standard_normal(y.shape)
    if jnp.iscomplexobj(y):
        c = c + 1j * rng.standard_normal(y.shape)
    return jnp.asarray(c, y.dtype)


@pytest.mark.parametrize("fft_type,shape,lengths", CASES, ids=IDS)
def test_fft_vjp_and_jvp_rules_equal_jax(fft_type, shape, lengths):
    rng = np.random.default_rng(0)
    with jax.enable_x64(True):
        x = _operand(fft_type, shape, rng)
        f = lambda x: lax.fft(x, fft_type, lengths)
        y, pullback = jax.vjp(f, x)
        ct = _random_like(y, rng)
        (ours,) = get_vjp("fft")(ct, x, fft_type=fft_type, fft_lengths=lengths)
        (ref,) = pullback(ct)
        assert ours.dtype == ref.dtype and ours.shape == ref.shape
        np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-10)
        t = _random_like(x, rng)
        out, tan = get_jvp("fft")((x,), (t,), fft_type=fft_type, fft_lengths=lengths)
        ref_out, ref_tan = jax.jvp(f, (x,), (t,))
        np.testing.assert_allclose(out, ref_out, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(tan, ref_tan, rtol=1e-10, atol=1e-10)
        # order 2: the rule is a linear program in ct; transposing it again is the forward map
        again = jax.vjp(
            lambda c: get_vjp("fft")(c, x, fft_type=fft_type, fft_lengths=lengths)[0], ct
        )
        ref_again = jax.vjp(lambda c: pullback(c)[0], ct)
        w = _random_like(x, rng)
        np.testing.assert_allclose(again[1](w)[0], ref_again[1](w)[0], rtol=1e-10, atol=1e-10)


def _chain_grad(head, fft_type, lengths, x):
    """grad of ``head(fft(x))`` (head real-valued): jax's cotangent of the complex value, then our
    rule for the fft."""
    y = lax.fft(x, fft_type, lengths)
    ct = jax.vjp(head, y)[1](jnp.ones((), jnp.float64))[0]
    return get_vjp("fft")(ct, x, fft_type=fft_type, fft_lengths=lengths)[0]


@pytest.mark.parametrize(
    "fft_type,shape,lengths", [(RFFT, (2, 6), (6,)), (RFFT, (7,), (7,)), (RFFT, (3, 5), (3, 5))]
)
def test_rfft_power_spectrum_gradient_matches_jax_and_finite_differences(fft_type, shape, lengths):
    """L(x) = sum |rfft(x)|^2: our rfft rule in the chain equals jax.grad and central differences."""
    rng = np.random.default_rng(1)
    with jax.enable_x64(True):
        x = jnp.asarray(rng.standard_normal(shape))
        head = lambda y: jnp.sum(jnp.abs(y) ** 2)
        loss = lambda x: head(lax.fft(x, fft_type, lengths))
        ours = _chain_grad(head, fft_type, lengths, x)
        np.testing.assert_allclose(ours, jax.grad(loss)(x), rtol=1e-10, atol=1e-10)
        t = jnp.asarray(rng.standard_normal(shape))
        fd = (loss(x + 1e-4 * t) - loss(x - 1e-4 * t)) / 2e-4
        np.testing.assert_allclose(jnp.vdot(ours, t), fd, rtol=1e-6)


def test_irfft_of_filtered_spectrum_gradient_matches_jax_and_finite_differences():
    """L(z) = sum(w * irfft(z)) over a complex spectrum seen through its real and imaginary parts."""
    rng = np.random.default_rng(2)
    with jax.enable_x64(True):
        re, im = jnp.asarray(rng.standard_normal((2, 4))), jnp.asarray(rng.standard_normal((2, 4)))
        w = jnp.asarray(rng.standard_normal((2, 6)))
        loss = lambda re, im: jnp.sum(w * lax.fft(lax.complex(re, im), IRFFT, (6,)))
        z = lax.complex(re, im)
        (ct_z,) = get_vjp("fft")(w, z, fft_type=IRFFT, fft_lengths=(6,))
        g_re, g_im = jax.vjp(lax.complex, re, im)[1](ct_z)
        ref_re, ref_im = jax.grad(loss, (0, 1))(re, im)
        np.testing.assert_allclose(g_re, ref_re, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(g_im, ref_im, rtol=1e-10, atol=1e-10)
        t_re, t_im = (
            jnp.asarray(rng.standard_normal((2, 4))),
            jnp.asarray(rng.standard_normal((2, 4))),
        )
        fd = (
            loss(re + 1e-4 * t_re, im + 1e-4 * t_im) - loss(re - 1e-4 * t_re, im - 1e-4 * t_im)
        ) / 2e-4
        np.testing.assert_allclose(jnp.vdot(g_re, t_re) + jnp.vdot(g_im, t_im), fd, rtol=1e-6)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: jnp.sum(jnp.abs(jnp.fft.rfft(x)) ** 2),
        lambda x: jnp.real(jnp.fft.ifft(jnp.fft.fft(x) * jnp.arange(1.0, 7.0))),
        lambda x: jnp.fft.irfft2(jnp.fft.rfft2(x) * 0.5j + 1.0, s=(2, 6)),
    ],
    ids=["power_spectrum", "filter", "rfft2_irfft2"],
)
def test_fft_programs_order_2(f):
    check_grads(f, (np.random.default_rng(3).standard_normal((2, 6)),), order=2)
