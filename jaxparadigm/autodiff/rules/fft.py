"""Rules for ``fft`` (fft/ifft/rfft/irfft, n-d over the trailing ``len(fft_lengths)`` axes) (C3.2).

Every FFT is linear, so its JVP is the same FFT of the tangent, ``d fft(x) = fft(dx)``, and its
VJP is the linear *transpose* (jax's ``_fft_transpose_rule`` in ``jax/_src/lax/fft.py``; jax's
complex convention: a cotangent ``ct`` of a complex output pulls back without conjugating the
map)::

    FFT:   F^T ct = fft(ct)            (the DFT matrix is symmetric)
    IFFT:  (F^-1)^T ct = ifft(ct)
    RFFT:  x real (N = prod fft_lengths), y = rfft(x) keeps the n // 2 + 1 non-negative
           frequencies of the last axis; its transpose is N * irfft(conj(ct) / mask), with
           mask = 1 at DC (and at Nyquist when n is even), 2 elsewhere (the dropped half).
    IRFFT: y real; transpose = conj(mask * rfft(ct) / N).

All are written with ``lax`` ops, so the backward program is itself differentiable (C3.3).
"""

from __future__ import annotations

import math

import jax.extend.core.primitives as P
import jax.numpy as jnp
from jax import lax

from jaxparadigm.autodiff.registry import register_jvp, register_vjp
from jaxparadigm.autodiff.rules.tangents import linear_rule

__all__: list[str] = []


def _hermitian_mask(m: int, n: int, dtype) -> jnp.ndarray:
    """Weights of the ``m = n // 2 + 1`` kept frequencies: 1 at DC and even-n Nyquist, else 2."""
    k = jnp.arange(m)
    single = (k == 0) | ((n % 2 == 0) & (k == m - 1))
    return jnp.where(single, 1.0, 2.0).astype(dtype)


def fft_transpose(ct, fft_type, fft_lengths):
    """The transpose of ``fft(., fft_type, fft_lengths)`` applied to ``ct`` (jax's rule)."""
    fft_lengths = tuple(fft_lengths)
    n_total = math.prod(fft_lengths)
    if fft_type == lax.FftType.RFFT:
        mask = _hermitian_mask(ct.shape[-1], fft_lengths[-1], ct.dtype)
        return n_total * lax.fft(lax.conj(ct) / mask, lax.FftType.IRFFT, fft_lengths)
    if fft_type == lax.FftType.IRFFT:
        y = lax.fft(ct, lax.FftType.RFFT, fft_lengths)
        mask = _hermitian_mask(y.shape[-1], fft_lengths[-1], y.dtype)
        return lax.conj(mask * y / n_total)
    return lax.fft(ct, fft_type, fft_lengths)


@register_vjp(P.fft_p)
def _fft_vjp(ct, x, *, fft_type, fft_lengths):
    return (fft_transpose(ct, fft_type, fft_lengths),)


register_jvp(P.fft_p)(linear_rule(P.fft_p))
