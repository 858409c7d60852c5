"""Special-function, remainder, cumulative and scatter-combiner ops for generated programs (issue 23).

Each op maps ``h`` into its primitive's smooth domain first, so a drawn program never sits on a
pole, a branch cut or a kink whatever ``h`` holds:

* ``asin``/``acos``/``erf_inv`` on ``0.9 tanh(h)`` (inside (-1, 1)); ``tan`` on ``1.2 tanh(h)``
  (inside (-pi/2, pi/2)); ``lgamma``/``digamma`` on ``softplus(h) + 0.5`` (> 0, away from the
  poles at 0, -1, ...); ``cbrt`` on ``tanh(h) - 1.5`` (< -0.5: cbrt' is infinite at 0);
  ``bessel_i0e``/``bessel_i1e`` on ``+-(softplus(h) + 0.2)`` (|x| in their exp(-|x|) has a kink
  at 0);
* ``fmod``/``remainder`` (the ``rem`` primitive) on ``x = +-(1.5 + 0.25 tanh(h))`` and
  ``y = 1 + 0.1 tanh(o)``: ``x / y`` stays in (1.13, 1.95) (or its negative), so trunc / floor of
  it is constant and the op is smooth in both operands;
* ``gammainc``/``gammaincc`` on ``x = softplus(h) + 0.2`` (> 0) with a constant ``a``;
  ``betainc`` on ``x = 0.1 + 0.8 sigmoid(h)`` (inside (0, 1)); ``polygamma(2, .)`` and
  ``zeta(3, .)`` on ``softplus(h) + 0.5`` / ``+ 1`` (> 0);
* FFT compositions (``fft_filter``, ``rfft_lowpass``): real -> complex -> real, linear, shape
  kept (a 2-D ``fft2`` after a transpose hit an XLA CPU ``fft_thunk`` layout RET_CHECK in jax
  itself, so it is not drawn);
* scatters with ``mul``/``max``/``min`` combiners write at distinct indices (``unique_indices``,
  which jax's scatter-mul derivative requires) updates ``0.5 h[other] + 0.05 c`` that tie with
  the value they meet only on a set of measure zero (never at 0 after relu, nor at a clip bound).

Tables in ``program_generator``'s formats: ``SPECIAL_UNARY`` (``h -> h'``), ``SPECIAL_BINARY``
(``(h, o) -> h'``), ``SPECIAL_STRUCTURAL`` (``name -> (minimum rank, (h, c) -> h')``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy import special as jsp

__all__ = ["SPECIAL_BINARY", "SPECIAL_STRUCTURAL", "SPECIAL_UNARY"]


def _positive(h, shift):
    return jax.nn.softplus(h) + shift


SPECIAL_UNARY = {
    "asin": lambda h: jnp.arcsin(0.9 * jnp.tanh(h)),
    "acos": lambda h: jnp.arccos(0.9 * jnp.tanh(h)),
    "cosh": jnp.cosh,
    "tan": lambda h: jnp.tan(1.2 * jnp.tanh(h)),
    "lgamma": lambda h: lax.lgamma(_positive(h, 0.5)),
    "digamma": lambda h: lax.digamma(_positive(h, 0.5)),
    "erf_inv": lambda h: lax.erf_inv(0.9 * jnp.tanh(h)),
    "cbrt": lambda h: jnp.cbrt(jnp.tanh(h) - 1.5),
    "bessel_i0e": lambda h: lax.bessel_i0e(_positive(h, 0.2)),
    "bessel_i1e": lambda h: lax.bessel_i1e(-_positive(h, 0.2)),
    # issue 36: the incomplete gamma / beta functions in x (their a/b derivatives end at first
    # order in jax: igamma_grad_a has no rule, betainc none in a, b), polygamma, Hurwitz zeta
    "gammainc": lambda h: jsp.gammainc(1.7, _positive(h, 0.2)),
    "gammaincc": lambda h: jsp.gammaincc(0.8, _positive(h, 0.3)),
    "betainc": lambda h: jsp.betainc(1.5, 2.5, 0.1 + 0.8 * jax.nn.sigmoid(h)),
    "polygamma": lambda h: lax.polygamma(2.0, _positive(h, 0.5)),
    "zeta": lambda h: jsp.zeta(3.0, _positive(h, 1.0)),
}


def _divisor(o):
    return 1.0 + 0.1 * jnp.tanh(o)


SPECIAL_BINARY = {
    "fmod": lambda h, o: jnp.fmod(1.5 + 0.25 * jnp.tanh(h), _divisor(o)),
    "remainder": lambda h, o: jnp.remainder(-1.5 - 0.25 * jnp.tanh(h), _divisor(o)),
}


def _ends(n: int) -> np.ndarray:
    """Distinct indices into an axis of length ``n``: the last and the first (or just 0)."""
    return np.array([n - 1, 0] if n > 1 else [0])


def _scatter_last(h, c, combine):
    """``combine`` (mul/max) of ``0.5 h[..., [0, n-1]] + 0.05 c`` into ``h[..., [n-1, 0]]``."""
    idx = _ends(h.shape[-1])
    updates = 0.5 * h[..., idx[::-1]] + 0.05 * c
    return combine(h.at[..., idx], updates)


def _scatter_min_rows(h, c):
    """``min`` of rows ``0.5 h[[0, m-1]] + 0.05 c`` into rows ``h[[m-1, 0]]`` (axis 0)."""
    idx = _ends(h.shape[0])
    return h.at[idx].min(0.5 * h[idx[::-1]] + 0.05 * c, unique_indices=True)


SPECIAL_STRUCTURAL = {
    "cummin": (1, lambda h, c: lax.cummin(h, axis=h.ndim - 1, reverse=True)),
    "cumlogsumexp": (1, lambda h, c: lax.cumlogsumexp(h, axis=0)),
    "scatter_mul": (
        1,
        lambda h, c: _scatter_last(h, c, lambda at, u: at.multiply(u, unique_indices=True)),
    ),
    "scatter_max": (
        1,
        lambda h, c: _scatter_last(h, c, lambda at, u: at.max(u, unique_indices=True)),
    ),
    "scatter_min": (1, _scatter_min_rows),
    # issue 36: FFTs inside real-valued compositions (real in, real out, shape kept); these carry
    # complex intermediates, refused until the engine differentiates complex values
    "fft_filter": (1, lambda h, c: jnp.real(jnp.fft.ifft(jnp.fft.fft(h) * (1.0 + 0.5j)))),
    "rfft_lowpass": (
        1,
        lambda h, c: jnp.fft.irfft(
            jnp.fft.rfft(h) / (1.0 + jnp.arange(h.shape[-1] // 2 + 1)), n=h.shape[-1]
        ),
    ),
}
